"""Thin views: validate a form, call one `session` function, answer. Commands answer 204 (the screen changes through
the websocket, for every viewer alike) or a 4xx whose body is the sentence to show."""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from playground import broadcast, forms, library, limits, panels, session
from playground.i18n import normalize

log = logging.getLogger(__name__)


def _client(request: HttpRequest) -> str:
    return session.client_key(request.META.get("REMOTE_ADDR"))


def problem(message: str, status: int = 400) -> HttpResponse:
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def command(view: Callable[..., Any]) -> Callable[..., HttpResponse]:
    """POST only; turns bad input and limits into a 4xx with the message; success is 204 (or what the view says)."""

    @require_POST
    @functools.wraps(view)
    def wrapper(request: HttpRequest, sid: str) -> HttpResponse:
        try:
            result = view(request, sid)
        except session.CommandError as exc:
            return problem(str(exc), exc.status)
        except limits.LimitExceeded as exc:
            return problem(str(exc), 429 if exc.name == "sessions_per_minute" else 422)
        except forms.forms.ValidationError as exc:
            return problem("; ".join(exc.messages))
        return result if isinstance(result, HttpResponse) else HttpResponse(status=204)

    return wrapper


def _valid(form: forms.Form) -> forms.Form:
    if not form.is_valid():
        raise session.CommandError(form.message())
    return form


# ------------------------------------------------------------------------------------------------------ pages
def _gallery(request: HttpRequest, error: str = "", status: int = 200, chosen: str = "") -> HttpResponse:
    # The backend choice is offered only when the server names a cluster (nothing a user types is an address).
    return render(request, "playground/gallery.html",
                  {"entries": library.entries(), "kafka": session.kafka_configured(), "error": error, "chosen": chosen},
                  status=status)


@require_GET
def gallery(request: HttpRequest) -> HttpResponse:
    return _gallery(request)


@require_POST
def new_session(request: HttpRequest) -> HttpResponse:
    form = forms.NewSessionForm(request.POST)
    if not form.is_valid():
        return problem(form.message())
    d = form.cleaned_data
    if d.get("backend") == "kafka" and not session.kafka_configured():
        return problem(_("This server has no Kafka cluster configured (KAFKA_BOOTSTRAP_SERVERS): choose the simulator."), 400)
    scenario, source = None, ""
    if d.get("scenario"):
        entry = library.find(d["scenario"])
        if entry is None:
            return problem(_("No scenario %(id)s in the library.") % {"id": d["scenario"]}, 404)
        scenario, source = entry.scenario, entry.scenario.source
    try:
        row = session.create(scenario, source=source, backend=d.get("backend") or getattr(settings, "PLAYGROUND_DEFAULT_BACKEND", "sim"), seed=d.get("seed"), client=_client(request))
    except limits.LimitExceeded as exc:
        return problem(str(exc), 429)
    except session.CommandError as exc:
        if exc.status == 503:
            # The cluster did not answer: the gallery again, with the sentence, and the same button to retry.
            if request.headers.get("HX-Request"):
                return problem(str(exc), 503)
            return _gallery(request, str(exc), 503, d.get("backend") or "")
        return problem(str(exc), exc.status)
    return redirect("session", sid=row.id)


@require_GET
def session_page(request: HttpRequest, sid: str) -> HttpResponse:
    try:
        live = session.load(sid)
    except session.CommandError as exc:
        if exc.status == 404:
            raise Http404(_("No such session.")) from None
        return problem(str(exc), exc.status)
    ctx = panels.contexts(live, broadcast.view_of(live))
    return render(
        request,
        "playground/session.html",
        {"live": live, "p": ctx, "sid": sid, "u": broadcast.urls(sid), "lang": normalize(get_language()), "topics": ctx["producers"]["topics"],
         "consumers": ctx["producers"]["consumers"], "limits": {k: limits.limit(k) for k in limits.DEFAULTS}},
    )


@require_GET
def session_log(request: HttpRequest, sid: str) -> HttpResponse:
    """The command log as JSON: what the session is, in full (also handy to file a bug)."""
    try:
        live = session.load(sid)
    except session.CommandError:
        raise Http404(_("No such session.")) from None
    return JsonResponse({"id": sid, "scenario": live.scenario.id if live.scenario else None, "backend": live.backend_name,
                         "seed": live.seed, "version": live.version, "commands": live.commands})


@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok", content_type="text/plain")


# --------------------------------------------------------------------------------------------------- commands
@command
def action(request: HttpRequest, sid: str) -> None:
    session.apply_step(sid, _valid(forms.ActionForm(request.POST)).step())


@command
def produce(request: HttpRequest, sid: str) -> None:
    session.apply_step(sid, _valid(forms.ProduceForm(request.POST)).step())


@command
def clock(request: HttpRequest, sid: str) -> None:
    session.apply_step(sid, _valid(forms.ClockForm(request.POST)).step())


@command
def broker(request: HttpRequest, sid: str) -> None:
    session.apply_step(sid, _valid(forms.BrokerForm(request.POST)).step())


@command
def add_producer(request: HttpRequest, sid: str) -> None:
    d = _valid(forms.AddProducerForm(request.POST)).cleaned_data
    session.add_producer(sid, d["mode"], d.get("transactional_id") or None)


@command
def add_consumer(request: HttpRequest, sid: str) -> None:
    d = _valid(forms.AddConsumerForm(request.POST)).cleaned_data
    session.add_consumer(sid, d["isolation"], d.get("group") or None)


@command
def step(request: HttpRequest, sid: str) -> None:
    session.step(sid)


@command
def back(request: HttpRequest, sid: str) -> None:
    session.back(sid)


@command
def reset(request: HttpRequest, sid: str) -> None:
    session.reset(sid)


@command
def pause(request: HttpRequest, sid: str) -> None:
    session.set_running(sid, False)


@command
def rerun(request: HttpRequest, sid: str) -> None:
    """A real-cluster session that is not live here: its log re-run on fresh topics (only when the user asks)."""
    session.rerun(sid)


@command
def end(request: HttpRequest, sid: str) -> None:
    """A real-cluster session ends: its backend closed, its topics deleted; the log stays."""
    session.end(sid)


@require_POST
async def run(request: HttpRequest, sid: str) -> HttpResponse:
    """Applies the remaining steps one by one in this process's event loop ("pause" stops it, from any process)."""
    from channels.db import database_sync_to_async

    try:
        await database_sync_to_async(session.set_running)(sid, True)
    except session.CommandError as exc:
        return problem(str(exc), exc.status)
    except limits.LimitExceeded as exc:
        return problem(str(exc), 422)
    session.ensure_runner(sid)
    return HttpResponse(status=204)
