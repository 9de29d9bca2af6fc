"""Watch your own cluster: the inspector's pages and its websocket. Thin, like views.py: a form or a selection, one
`inspector` call, an answer. The logic (capability, selection, sections, live updates, the scenario) lives in
playground/inspector (web.py, hub.py, toscenario.py).

Every route but the key form answers 403 without the inspector's capability (INSPECTOR_KEY, kept by the browser
in an HttpOnly cookie); the websocket closes before accepting (the handshake gets 403). With the inspector off
(no INSPECTOR_KEY, or no KAFKA_BOOTSTRAP_SERVERS) the page says why, with 503.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from django import forms as djforms
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop as N_
from django.views.decorators.http import require_GET, require_POST

from playground.inspector import InspectorError, RefusedError, get_inspector
from playground.inspector.toscenario import scenario_text
from playground.scenario.i18n import normalize
from playground.session import limits
from playground.web import forms, tappage
from playground.web import inspectpage as web
from playground.web.consumers import Consumer, _language
from playground.web.http import client, problem
from playground.web.inspecthub import HUB
from playground.web.views import _editor


class KeyForm(forms.Form):
    key = djforms.CharField(max_length=1024, strip=False)
    next = djforms.CharField(max_length=4096, required=False)


class FromForm(forms.Form):
    """A partition's "read from offset" input (GET): merged into the selection's `from`."""

    from_tp = djforms.RegexField(r"^[A-Za-z0-9._-]{1,249}:[0-9]{1,6}$")
    from_offset = djforms.IntegerField(min_value=0, required=False)


# ------------------------------------------------------------------------------------------------ the gate


def _off(request: HttpRequest, reason: str, cluster: bool = False) -> HttpResponse:
    return render(request, "playground/inspect/off.html", {"reason": reason, "cluster": cluster}, status=503)


def _ask_key(request: HttpRequest, error: str = "", status: int = 403) -> HttpResponse:
    # where to go once the key is right: the page asked for (a GET), or what the form carried (a wrong key)
    nxt = request.POST.get("next", "")[:4096] if request.method == "POST" else request.GET.urlencode()
    return render(request, "playground/inspect/key.html", {"error": error, "next": nxt}, status=status)


def capability_required(page: bool = False) -> Callable:
    """Off: 503 saying why. No capability: 403 (the key form, for the page). Refused by the allow-lists: 403 with
    the sentence; the cluster unreadable: 503 with the sentence; a malformed selection: 400."""

    def wrap(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def gated(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            reason = web.off_reason()
            if reason:
                return (
                    _off(request, reason)
                    if page
                    else problem(_("The inspector is off: %(why)s") % {"why": reason}, 503)
                )
            if not web.authorized(request.COOKIES.get(web.COOKIE)):
                return (
                    _ask_key(request)
                    if page
                    else problem(_("The inspector needs its key: open /inspect/ and enter it."), 403)
                )
            try:
                return view(request, *args, **kwargs)
            except RefusedError as exc:
                return problem(str(exc), 403)
            except web.SelectionError as exc:
                return problem(str(exc), 400)
            except InspectorError as exc:  # the cluster cannot be read right now
                return _off(request, str(exc), cluster=True) if page else problem(str(exc), 503)

        return gated

    return wrap


def _selection(request: HttpRequest) -> web.Selection:
    return web.Selection.from_query(dict(request.GET.lists())).check()


# ------------------------------------------------------------------------------------------------ pages


@require_GET
@capability_required(page=True)
def page(request: HttpRequest) -> HttpResponse:
    """The picker (nothing chosen yet, or ?pick=1), or the live view of a selection."""
    if "from_tp" in request.GET:
        return _with_from(request)
    sel = _selection(request)
    insp = get_inspector()
    lang = normalize(get_language())
    if sel.empty or request.GET.get("pick"):
        return render(request, "playground/inspect/picker.html", {"p": web.picker(insp, sel), "sel": sel, "lang": lang})
    if sel.txids and not sel.topics:
        return _with_their_topics(insp, sel) or _watch(request, insp, sel, lang)
    return _watch(request, insp, sel, lang)


def _watch(request: HttpRequest, insp: Any, sel: web.Selection, lang: str) -> HttpResponse:
    report = insp.inspect(**sel.inspect_kwargs())
    rendered = web.render_all(web.contexts(report, sel), sel, lang, oob_sections=False)
    return render(
        request,
        "playground/inspect/watch.html",
        {
            "r": rendered.sections,
            "sel": sel,
            "lang": lang,
            "bootstrap": insp.settings.bootstrap,
            "summary": sel.summary(),
        },
    )


def _with_their_topics(insp: Any, sel: web.Selection) -> HttpResponse | None:
    """Ids alone are shown with the topics they wrote to, at an address that says so."""
    topics = web.topics_written(insp.inspect(transactional_ids=list(sel.txids)), insp.settings.topic_allowed)
    return redirect(reverse("inspect") + "?" + web.Selection(tuple(topics), (), sel.txids).query()) if topics else None


def _with_from(request: HttpRequest) -> HttpResponse:
    form = FromForm(request.GET)
    if not form.is_valid():
        return problem(form.message())
    topic, partition = form.cleaned_data["from_tp"].rsplit(":", 1)
    sel = web.Selection.from_query({k: v for k, v in request.GET.lists() if not k.startswith("from_")})
    offset = form.cleaned_data["from_offset"]
    froms = [f for f in sel.from_offsets if (f[0], f[1]) != (topic, int(partition))]
    if offset is not None:
        froms.append((topic, int(partition), offset))
    return redirect(reverse("inspect") + "?" + sel.query(**{"from": sorted(froms)}))


@require_GET
@capability_required(page=True)
def tap(request: HttpRequest) -> HttpResponse:
    """The tap's live page: its last report (tappage.py), polled again every few seconds by the fragment below."""
    return render(request, "playground/inspect/tap.html", _tap_context(request))


@require_GET
@capability_required()
def tap_live(request: HttpRequest) -> HttpResponse:
    return render(request, "playground/inspect/_tap.html", _tap_context(request))


def _tap_context(request: HttpRequest) -> dict[str, Any]:
    report, name, taps = tappage.choose(request.GET.get("tap", "")[:200])
    return {
        "t": tappage.context(report) if report is not None else None,
        "why": tappage.unavailable(tappage.report_path()),
        "tap": name,
        "taps": taps,
    }


@require_POST
def key(request: HttpRequest) -> HttpResponse:
    """The key, posted once: compared in constant time; right, the browser gets the capability cookie."""
    reason = web.off_reason()
    if reason:
        return _off(request, reason)
    form = KeyForm(request.POST)
    if not form.is_valid() or not web.key_matches(form.cleaned_data["key"]):
        try:
            web.wrong_key(client(request), str(form.data.get("key", ""))[:256])
        except limits.LimitExceeded as exc:
            return _ask_key(request, str(exc), 429)
        return _ask_key(request, _("That is not this server's INSPECTOR_KEY."))
    nxt = form.cleaned_data.get("next") or ""
    response = redirect(reverse("inspect") + (f"?{nxt}" if nxt and not nxt.startswith(("/", "\\")) else ""))
    response.set_cookie(
        web.COOKIE,
        web.cookie_value(),
        max_age=web.COOKIE_MAX_AGE_S,
        httponly=True,
        samesite="Lax",
        secure=request.is_secure(),
    )
    return response


@require_POST
def forget(request: HttpRequest) -> HttpResponse:
    response = redirect("inspect")
    response.delete_cookie(web.COOKIE, samesite="Lax")
    return response


@require_GET
@capability_required()
def report_json(request: HttpRequest) -> HttpResponse:
    """The selection's report as JSON (what `manage.py inspect --json` prints)."""
    return JsonResponse(
        get_inspector().inspect(**_selection(request).inspect_kwargs()), json_dumps_params={"default": str}
    )


@require_GET
@capability_required()
def scenario(request: HttpRequest) -> HttpResponse:
    """ "Make a scenario of this": the selection's stretch as a scenario file, opened in the editor (or ?download=1)."""
    text = scenario_text(get_inspector().inspect(**_selection(request).inspect_kwargs()))
    if request.GET.get("download"):
        response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="observed.yaml"'
        return response
    return _editor(request, text, origin="what the inspector saw")


# ------------------------------------------------------------------------------------------------ websocket


class InspectConsumer(Consumer):
    """ws/inspect/?<selection>: joins the selection's group and the hub, then accepts, then sends the sections its
    group was sent last; afterwards it forwards the fragments each poll brings, in its viewer's language."""

    async def connect(self) -> None:
        self.sel = None
        headers = dict(self.scope.get("headers") or [])
        jar = SimpleCookie()
        try:
            jar.load(headers.get(b"cookie", b"").decode("latin-1"))
        except Exception:
            pass
        cookie = jar[web.COOKIE].value if web.COOKIE in jar else None
        if not web.authorized(cookie):
            await self.close(code=4403)  # before accept: the handshake is answered 403
            return
        try:
            sel = web.Selection.from_query(parse_qs((self.scope.get("query_string") or b"").decode("latin-1"))).check()
        except RefusedError:
            await self.close(code=4403)
            return
        except web.SelectionError:
            await self.close(code=4400)
            return
        if sel.empty:
            await self.close(code=4400)
            return
        self.lang = _language(self.scope)
        self.group = HUB.group(sel)
        await self.channel_layer.group_add(self.group, self.channel_name)
        loop = asyncio.get_running_loop()
        try:
            snapshot = await sync_to_async(HUB.join, thread_sensitive=False)(sel, self.channel_name, self.lang, loop)
        except InspectorError:  # the inspector cannot be made for these settings (the page says why)
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.close(code=4503)
            return
        self.sel = sel
        await self.accept()
        if snapshot:
            await self.send(text_data=snapshot)

    async def disconnect(self, code: int) -> None:
        if self.sel is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await sync_to_async(HUB.leave, thread_sensitive=False)(self.sel, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data and len(text_data) <= 4096 and text_data.replace(" ", "") == '{"type":"ping"}':
            await self.send(text_data='<span id="ws-pong" hx-swap-oob="true"></span>')
        else:
            await self.send(text_data=self.said(N_("This socket only listens: send nothing but ping.")))

    # ---- group messages: one handler per type
    async def inspect_update(self, event: dict) -> None:
        html = event.get("html") or {}
        text = html.get(self.lang) or next(iter(html.values()), "")
        if text:
            await self.send(text_data=text)
