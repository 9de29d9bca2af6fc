"""A session's page rendered once for every viewer who gets the same page: the room's 40 attendees opening the
facilitator's session in their follow-me panel (the same session at the same version), and their own fresh sessions
of the same agenda item when the room moves on or joins (different sessions whose panels are alike).

A page is the same for two requests when everything it is rendered from is, once the parts that belong to one viewer
are set apart: the session's id, the drive capability, the attendee's name, the CSRF token and the CSP nonce. The
page is rendered with stand-ins for those (random letters that no escaping changes) and kept per process; each
request gets a copy with its own values put in. The key is a digest of every panel's context and of every other
value the template is given, so a page is reused only where a fresh rendering would give the same text.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.test.signals import setting_changed
from django.utils.html import escape
from django.utils.translation import get_language

PAGES_KEPT = 48  # pages of ~150 KB each: a room's items in two languages, plus the sessions followed

# Stand-ins: letters and digits only (escaping, URLs and JSON leave them as they are), new in every process.
_STAND_IN = secrets.token_hex(8)
SID, KEY, NAME, CSRF, NONCE = (f"pg{_STAND_IN}{part}" for part in ("sid", "key", "name", "csrf", "nonce"))

_pages: OrderedDict[str, str] = OrderedDict()
_lock = threading.Lock()


def clear(**_: Any) -> None:
    with _lock:
        _pages.clear()


# A page is rendered from settings too (static files' names, limits): a test that changes them starts afresh.
setting_changed.connect(clear, dispatch_uid="pagecache-clear")


def _fingerprint(value: Any, sid: str, key: str) -> bytes:
    """The value's bytes with the session's id and drive capability set apart (two fresh sessions of one item differ
    only in them)."""
    try:
        data = marshal.dumps(value, 2)
    except ValueError:
        data = json.dumps(value, sort_keys=True, default=repr).encode()
    data = data.replace(sid.encode(), SID.encode())
    return data.replace(key.encode(), KEY.encode()) if key else data


def _key(template: str, context: Mapping[str, Any], sid: str, key: str, request: HttpRequest) -> str | None:
    """A digest of everything the page is rendered from (None: something in it this module cannot fingerprint; the
    page is rendered for this request alone)."""
    h = hashlib.blake2b(digest_size=16)
    parts: list[Any] = [
        template,
        get_language(),
        request.get_host(),
        request.is_secure(),
        request.get_full_path(),
    ]
    for name in sorted(context):
        value = context[name]
        if name in ("live", "head"):
            scenario = value.scenario
            # what session.html reads off the session itself (the panels' contexts cover the rest)
            value = (
                (scenario.id, dict(scenario.title)) if scenario is not None else None,
                value.backend_name,
                value.profile.to_dict(),
                value.version,
                value.length,
                value.step_count,
            )
        elif name == "room" and value is not None:
            room = value["room"]
            value = (room.pk, room.code, room.title, room.follow, {k: v for k, v in value.items() if k != "room"})
        elif not isinstance(value, (str, int, float, bool, type(None), dict, list, tuple)):
            return None
        parts.append((name, value))
    try:
        h.update(_fingerprint(parts, sid, key))
    except (TypeError, ValueError):
        return None
    return h.hexdigest()


def render(request: HttpRequest, template: str, context: dict[str, Any], *, sid: str, key: str = "") -> HttpResponse:
    """The page for this request: from the pages kept, or rendered now (and kept). `key`: the drive capability the
    page shows in its drive link ("" when it shows none)."""
    context = dict(context)
    room: dict[str, Any] | None = context.get("room")
    name = room.get("name") if room else None
    if room and name:
        context["room"] = {**room, "name": NAME}
        p = context.get("p")
        if p and p.get("exercise", {}).get("who") == name:
            context["p"] = {**p, "exercise": {**p["exercise"], "who": NAME}}
    digest = _key(template, context, sid, key, request)
    with _lock:
        page = _pages.get(digest) if digest else None
        if page is not None:
            _pages.move_to_end(digest)  # type: ignore[arg-type]
    if page is None:
        csrf = get_token(request)
        nonce = getattr(request, "csp_nonce", "")
        context["csrf_token"] = csrf  # the one token of this rendering, to set it apart below
        text = render_to_string(template, context, request)
        page = text.replace(sid, SID).replace(csrf, CSRF)
        if nonce:
            page = page.replace(nonce, NONCE)
        if key:
            page = page.replace(key, KEY)
        if digest:
            with _lock:
                _pages[digest] = page
                while len(_pages) > PAGES_KEPT:
                    _pages.popitem(last=False)
    text = page.replace(SID, sid).replace(CSRF, get_token(request)).replace(KEY, key)
    text = text.replace(NONCE, getattr(request, "csp_nonce", ""))
    if name:
        text = text.replace(NAME, escape(name))
    return HttpResponse(text)
