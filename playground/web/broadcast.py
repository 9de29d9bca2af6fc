"""Render once, send to everyone: the panels as HTML fragments (htmx out-of-band swaps) for a session's group.

After a command, the process that applied it renders the panels whose data changed since the last frame (whichever
process sent it: fanout.py keeps its digests where every process finds them), once in each language the session's
pages are open in right now, and sends one message to the group "session-<id>"; every websocket consumer of that
session, in any process, forwards the text for its viewer's language as it is (a page whose language the message
lacks, because it opened meanwhile, gets a snapshot). Nobody watching: nothing is rendered. A new viewer gets a full
snapshot from its own process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import marshal
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any, cast

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext as _

from playground.scenario.i18n import LANGS
from playground.web import board, fanout, logpanels, panels

log = logging.getLogger(__name__)

MESSAGE_TYPE = "session.update"

# Between the fragments of an update or a snapshot (a panel, a card, a strip, the version): where a websocket may
# cut it into frames of at most `frame_bytes` (frames()). Never sent to a page.
SEP = "\x1e"


def frames(text: str, limit_bytes: int) -> list[str]:
    """An update or a snapshot as the frames a websocket sends: its fragments in order, as many in each frame as
    fit in `limit_bytes` (UTF-8). A fragment larger than that on its own is left out, with a notice instead (the
    page, loaded again over HTTP, shows it)."""
    out: list[str] = []
    frame: list[str] = []
    size = 0
    for part in text.split(SEP):
        n = len(part.encode("utf-8"))
        if n > limit_bytes:
            log.warning("a fragment of %d bytes is over the %d-byte frame: left out of the live update", n, limit_bytes)
            part = (
                '<div id="ws-notice" hx-swap-oob="true" class="notice error">'
                + escape(_("Part of this update is too large to show live: reload the page to see it."))
                + "</div>"
            )
            n = len(part.encode("utf-8"))
        if frame and size + n > limit_bytes:
            out.append("".join(frame))
            frame, size = [], 0
        frame.append(part)
        size += n
    if frame:
        out.append("".join(frame))
    return out


def view_of(live: Any) -> dict[str, Any]:
    """The backend's view; when a real cluster cannot be observed right now, a view of the session's actors only,
    with the problem named (the page still renders, and says so)."""
    from playground.engine.backend import BackendError
    from playground.session import external, listener, sqltime

    try:
        with listener.reading(live):
            # the applications connected to the session's listener show beside its own actors
            return external.view(live, sqltime.view(live, logpanels.LOG_WINDOW), listener.listening(live))
    except BackendError as exc:
        from playground.session import DetachedBackend

        log.warning("session %s: cannot observe the backend: %s", live.session_id, exc)
        detail = str(exc) if settings.DEBUG else ""
        return DetachedBackend(live.cluster, live.actors, backend_name=live.backend_name, problem=detail or "-").view()


def contexts_of(live: Any, head: Any = None) -> dict[str, dict[str, Any]]:
    """Every panel's context: the view and what the panels read of the session besides (its clients' history, its
    log's window), as of one moment however its listener feeds it meanwhile."""
    from playground.session import listener

    with listener.reading(live):
        return panels.contexts(live, view_of(live), head=head)


def _digest(ctx: Mapping[str, Any]) -> str:
    """A context's fingerprint, the same in every process for the same context built the same way. marshal (format
    2: no references, interned or not the same) is four times quicker than JSON; a context holding what it cannot
    write falls back to JSON."""
    try:
        data = marshal.dumps(cast(Any, ctx), 2)
    except ValueError:
        data = json.dumps(ctx, sort_keys=True, default=repr).encode()
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def urls(sid: str) -> dict[str, str]:
    """The command endpoints of a session (reversed once per session and script prefix, not once per render: twenty
    reverse() calls were a tenth of an update's rendering)."""
    from django.urls import get_script_prefix

    return _urls(sid, get_script_prefix())


@functools.lru_cache(maxsize=1024)
def _urls(sid: str, _prefix: str) -> dict[str, str]:
    from django.urls import reverse

    from playground.web.commands import COMMANDS

    return {name.replace("-", "_"): reverse(name, kwargs={"sid": sid}) for name in (*COMMANDS, "fork")}


def render(
    name: str,
    ctx: Mapping[str, Any],
    lang: str,
    sid: str,
    oob: bool = True,
    u: Mapping[str, str] | None = None,
    drives: bool = False,
) -> str:
    with translation.override(lang):
        return render_to_string(
            f"playground/panels/{name}.html",
            {"p": ctx, "lang": lang, "sid": sid, "oob": oob, "u": u or urls(sid), "drives": drives},
        )


# The panels rendered apart for whoever drives the session: the connect panel shows its bootstrap address to them
# alone (anything pointed at it writes into the session's log); the others are the same for every viewer.
FOR_DRIVERS = ("connect",)


def version_tag(live: Any, base: int | None = None) -> str:
    """The version the frame brings the page to, and (for a frame of differences) the version it assumes the page
    shows: a page that missed a frame (Redis was down, or came back before it resubscribed) sees the gap and asks
    for a snapshot."""
    based = f' data-base="{base}"' if base is not None else ""
    return f'<span id="state-version" data-version="{live.version}"{based} hx-swap-oob="true"></span>'


def snapshot(live: Any, lang: str, head: Any = None, drives: bool = False) -> str:
    """Every panel, for one viewer's language (a new or reconnecting viewer), as whoever drives the session sees
    them or as a watcher does. For a moment (step k, scrubbing), `head` is the session itself: the slider's track
    shows the whole log, and the version is the head's."""
    contexts = contexts_of(live, head=head)
    u = urls(live.session_id)
    return SEP.join(
        [
            render(name, contexts[name], lang, live.session_id, u=u, drives=drives and name in FOR_DRIVERS)
            for name in panels.PANELS
        ]
        + [version_tag(head or live)]
    )


# Panels whose items (a producer's card, a partition's strip) are swapped one by one when only they changed.
ITEMS = {
    "producers": ("cards", "pc", "name"),
    "logs": ("strips", "strip", "key"),
    "consumers": ("tables", "cmp", "key"),
}


def _render_item(panel: str, item: Mapping[str, Any], ctx: Mapping[str, Any], lang: str, u: Mapping[str, str]) -> str:
    from playground.web.templatetags import playground as tags

    with translation.override(lang):
        if panel == "producers":
            return tags.producer_card(item, ctx, u, oob=True)
        if panel == "consumers":
            return tags.cmp_table(item, ctx, oob=True)
        return tags.strip(item, oob=True)


def _digests(contexts: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """A digest per panel and, for itemised panels, per item (the panel's digest then covers the rest of it)."""
    panel_digests, item_digests = {}, {}
    for name, ctx in contexts.items():
        if name in ITEMS:
            key, _prefix, ident = ITEMS[name]
            items = {str(i[ident]): _digest(i) for i in ctx[key]}
            frame = {k: v for k, v in ctx.items() if k != key}
            frame["_items"] = list(items)
            panel_digests[name], item_digests[name] = _digest(frame), items
        else:
            panel_digests[name] = _digest(ctx)
    return panel_digests, item_digests


def fragments(
    live: Any, langs: Iterable[str] = LANGS, contexts: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """What changed since this process last published this session, in each of `langs`: whole panels, or for
    producers and logs only the cards and strips that changed when nothing else in the panel did; apart, the
    slider's track when it changed (for viewers holding an earlier step); and when a panel FOR_DRIVERS changed, the
    same update as whoever drives the session sees it (empty otherwise: they get what everyone gets)."""
    contexts = contexts if contexts is not None else contexts_of(live)
    digests, items = _digests(contexts)
    previous = fanout.swap_frame(live.session_id, (live.version, digests, items))
    whole: list[str] = []
    parts: dict[str, list[Mapping[str, Any]]] = {}
    base = None
    if previous is not None and previous[0] == live.version - 1:
        base = previous[0]
        for n in panels.PANELS:
            if previous[1].get(n) != digests[n]:
                whole.append(n)
            elif n in ITEMS:
                old = previous[2].get(n, {})
                key, _prefix, ident = ITEMS[n]
                changed = [i for i in contexts[n][key] if old.get(str(i[ident])) != items[n][str(i[ident])]]
                if changed:
                    parts[n] = changed
    else:
        whole = list(panels.PANELS)
    out, scrub, drive = {}, {}, {}
    u = urls(live.session_id)
    apart = [i for i, name in enumerate(whole) if name in FOR_DRIVERS]
    for lang in langs:
        html = [render(name, contexts[name], lang, live.session_id, u=u) for name in whole]
        for name, changed in parts.items():
            html += [_render_item(name, item, contexts[name], lang, u) for item in changed]
        out[lang] = SEP.join([*html, version_tag(live, base)])
        # What a viewer looking at an earlier step gets: the slider's track, so the log's growth stays visible.
        scrub[lang] = html[whole.index("scrubber")] if "scrubber" in whole else ""
        if apart:
            theirs = list(html)
            for i in apart:
                theirs[i] = render(whole[i], contexts[whole[i]], lang, live.session_id, u=u, drives=True)
            drive[lang] = SEP.join([*theirs, version_tag(live, base)])
    return out, scrub, drive


def forget(session_id: str) -> None:
    fanout.forget(session_id)


def publish(live: Any, langs: Iterable[str] | None = None) -> None:
    """Send the changed panels to every viewer of the session (any process: through the channel layer), rendered
    in the languages its pages are open in now (when that cannot be known: `langs`, the languages they were ever
    opened in, else as the session's row says)."""
    from playground.session import group_name, store

    open_now = fanout.open_langs(live.session_id)
    if open_now is not None:
        langs = open_now
    elif langs is None:
        langs = store.viewer_langs(live.session_id)
    layer = get_channel_layer()
    if not langs or layer is None:
        # nobody watches: nothing to render, and the next frame is whole (no page holds this one)
        forget(live.session_id)
        if live.seat is not None:
            board.publish_seat(live, contexts_of(live))
        return
    contexts = contexts_of(live)
    html, scrub, drive = fragments(live, langs=langs, contexts=contexts)
    message = {"type": MESSAGE_TYPE, "version": live.version, "html": html, "scrub": scrub}
    if drive:
        message["drive"] = drive
    try:
        async_to_sync(layer.group_send)(group_name(live.session_id), message)
    except Exception:
        log.exception("session %s: publishing version %s failed", live.session_id, live.version)
        forget(live.session_id)  # nobody got it: the next update must not be a difference from it
    if live.seat is not None:
        board.publish_seat(live, contexts)  # the room's board: this attendee's card, after the attendee's own update
