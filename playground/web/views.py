"""Thin views: validate a form, call one `session` (or `commands`) function, answer. Commands answer 204 (the screen
changes through the websocket, for every viewer alike) or a 4xx whose body is the sentence to show."""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.translation import get_language, gettext_noop
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET, require_POST

from playground import session
from playground.engine.spec import DEFAULT_PROFILE, KAFKA_RELEASES, Profile
from playground.models import ScenarioText, Session
from playground.scenario import ScenarioError, check_text, library, parsed, pick
from playground.scenario.exercise import is_exercise, reveal
from playground.scenario.i18n import normalize
from playground.session import capability, compare, export, limits, listener, logwindow, store
from playground.session.backends import java_worker_waiting, not_configured
from playground.session.export import as_scenario
from playground.web import apppanels, broadcast, commands, forms, lists, pagecache, panels
from playground.web.http import Refusal, answers_problems, client, problem, refuses_with, valid
from playground.web.panelparts import asked_about, unfenced
from playground.web.roomviews import room_context

log = logging.getLogger(__name__)


def _key(request: HttpRequest, sid: str) -> str | None:
    return capability.from_cookies(request.COOKIES, sid)


def _drive(response: HttpResponse, request: HttpRequest, row: Any) -> HttpResponse:
    """Hand the new session's drive capability to this browser (HttpOnly: page scripts never see it)."""
    secret = getattr(row, "drive_secret", None)
    if secret:
        response.set_cookie(
            capability.cookie_name(row.id),
            secret,
            max_age=capability.COOKIE_MAX_AGE_S,
            httponly=True,
            samesite="Lax",
            secure=request.is_secure(),
        )
    return response


def _to_session(request: HttpRequest, row: Any, anchor: str = "") -> HttpResponse:
    url = reverse("session", kwargs={"sid": row.id}) + anchor
    if request.headers.get("HX-Request"):
        response = HttpResponse(status=204, headers={"HX-Redirect": url})
    else:
        response = redirect(url)
    return _drive(response, request, row)


def _backend_choice(request_backend: str | None, profile: Profile = DEFAULT_PROFILE) -> str:
    default: str = getattr(settings, "PLAYGROUND_DEFAULT_BACKEND", "sim")
    backend = request_backend or default
    if backend == "kafka" and not session.kafka_configured(profile):
        raise session.CommandError(_("%(problem)s Choose the simulator.") % {"problem": not_configured(profile)})
    return backend


def _profile_choice(request: HttpRequest, base: Profile) -> Profile:
    """The Play form's profile over `base` (the scenario's own); a value outside the allowed set is a 400 naming
    the field."""
    return valid(forms.ProfileForm(request.POST)).profile(base)


# ------------------------------------------------------------------------------------------------------ pages
# The gallery's groups, in order: a scenario goes in the first whose tags it has (the last takes the rest).
GALLERY_GROUPS: tuple[tuple[str, frozenset[str]], ...] = (
    ("exercises", frozenset({"exercise"})),
    ("kafka-4", frozenset({"kafka-4", "transaction-protocol-v2", "kafka-3.5"})),
    ("database", frozenset({"database"})),
    ("exactly-once", frozenset({"exactly-once"})),
    ("fencing", frozenset({"fencing", "zombie", "epoch"})),
    ("basics", frozenset()),
)


def gallery_groups(entries: list[Any]) -> list[dict[str, Any]]:
    """The library's entries grouped for the gallery (a file that does not load goes with the basics)."""
    titles = {
        "basics": _("Basics: commit, abort, the LSO, timeouts"),
        "fencing": _("Fencing and shared transactional ids"),
        "exactly-once": _("Exactly-once: consume, transform, produce"),
        "database": _("A database beside Kafka"),
        "kafka-4": _("Kafka releases: 3.5 before KIP-890, 4 with transaction protocol 2"),
        "exercises": _("Exercises: predict, then step"),
    }
    grouped: dict[str, list[Any]] = {key: [] for key, _tags in GALLERY_GROUPS}
    for e in entries:
        tags = set(e.scenario.tags) if e.scenario is not None else set()
        key = next(k for k, want in GALLERY_GROUPS if not want or tags & want)
        grouped[key].append(e)
    order = ["basics", "fencing", "exactly-once", "database", "kafka-4", "exercises"]
    return [{"key": k, "title": titles[k], "entries": grouped[k]} for k in order if grouped[k]]


def _gallery(
    request: HttpRequest, error: str = "", status: int = 200, chosen: str = "", waiting: dict[str, Any] | None = None
) -> HttpResponse:
    # The backend choice is offered only when the server names a cluster (nothing a user types is an address).
    entries = library.entries()
    return render(
        request,
        "playground/gallery.html",
        {
            "entries": entries,
            "groups": gallery_groups(list(entries)),
            "kafka": session.kafka_configured(),
            "error": error,
            "chosen": chosen,
            "default_profile": DEFAULT_PROFILE,
            "waiting": waiting,
            "listen": listener.enabled(),
            # the releases the simulator models, for the footer: every one of them, as the profiles name them
            "releases": " / ".join(KAFKA_RELEASES.values()),
        },
        status=status,
    )


@require_GET
def gallery(request: HttpRequest) -> HttpResponse:
    return _gallery(request)


@require_POST
def new_session(request: HttpRequest) -> HttpResponse:
    form = forms.NewSessionForm(request.POST)
    if not form.is_valid():
        return problem(form.message())
    d = form.cleaned_data
    scenario, source = None, ""
    if d.get("scenario"):
        scenario = library.get(d["scenario"])
        if scenario is None:
            return problem(_("No scenario %(id)s in the library.") % {"id": d["scenario"]}, 404)
        source = scenario.source
    profile = form.profile(scenario.profile if scenario is not None else DEFAULT_PROFILE)
    try:
        backend = _backend_choice(d.get("backend"), profile)
        building = java_worker_waiting(profile.release) if backend == "kafka" and profile.client == "java" else None
        if building:
            # Not an error: the Java client's worker is built once, in the background; the page asks again until
            # the build is done, and the session starts then.
            fields = [(k, v) for k, v in request.POST.items() if k != "csrfmiddlewaretoken"]
            return _gallery(request, status=202, chosen=backend, waiting={"sentence": building, "fields": fields})
        row = session.create(
            scenario,
            source=source,
            backend=backend,
            seed=d.get("seed"),
            client=client(request),
            profile=profile,
        )
    except limits.LimitExceeded as exc:
        return problem(str(exc), exc.status)
    except session.CommandError as exc:
        if exc.status == 503 and not request.headers.get("HX-Request"):
            # The cluster did not answer: the gallery again, with the sentence, and the same button to retry.
            return _gallery(request, str(exc), 503, d.get("backend") or "")
        return problem(str(exc), exc.status)
    if d.get("listen"):
        # "Connect your own app" from the gallery: the creator holds the drive capability, so it may listen
        try:
            listener.start(row.id, client(request))
        except (limits.LimitExceeded, session.CommandError) as exc:
            # the session is made; its page offers to connect again and says why not if it still cannot
            log.info("session %s: no listener: %s", row.id, exc)
        return _to_session(request, row, anchor="#connect")
    return _to_session(request, row)


def _at(request: HttpRequest) -> int | None:
    raw = request.GET.get("at")
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:  # str.isdigit() also takes "²", which int() refuses
        raise session.CommandError(_("at= is a step number: 0 for the start, up to the session's length."))
    return int(raw)


@require_GET
@xframe_options_sameorigin  # the workshop board's spotlight and follow-me frame it; nothing else of ours is framed
def session_page(request: HttpRequest, sid: str) -> HttpResponse:
    try:
        at = _at(request)
        head = session.load(sid)
        live = session.moment(sid, at) if at is not None else head
    except session.CommandError as exc:
        if exc.status == 404 and not session.exists(sid):
            raise Http404(_("No such session.")) from None
        return problem(str(exc), exc.status)
    ctx = broadcast.contexts_of(live, head=head)
    key = _key(request, sid)
    drives = capability.matches(key, session.drive_key(sid))
    watch_link = request.build_absolute_uri(reverse("session", kwargs={"sid": sid}))
    run_step_ms, run_speeds = session.run_speeds()
    return pagecache.render(
        request,
        "playground/session.html",
        {
            "live": live,
            "head": head,
            "p": ctx,
            "sid": sid,
            "u": broadcast.urls(sid),
            "lang": normalize(get_language()),
            "topics": ctx["producers"]["topics"],
            "consumers": ctx["producers"]["consumers"],
            "limits": {k: limits.limit(k) for k in limits.DEFAULTS},
            "at": at,
            "length": head.step_count,
            "drives": drives,
            "watch_link": watch_link,
            "drive_link": f"{watch_link}#drive={key}" if drives else "",
            "kafka": session.kafka_configured(),
            "room": room_context(head, request),
            "present": request.GET.get("present") == "1",
            "embed": request.GET.get("embed") == "1",  # the follow-me panel's frame: laid out to open on the logs
            "run_step_ms": run_step_ms,
            "run_speeds": run_speeds,
            # a session of a scenario links back to the text it was started from (the editor opens a draft of it)
            "edit_link": f"{reverse('editor')}?source={sid}" if head.scenario is not None else "",
            # an exercise's comparison shows every outcome: offered once no question is open
            "compares": reveal(head).open_question is None,
        },
        sid=sid,
        key=key if drives and key else "",
    )


@require_GET
def session_log(request: HttpRequest, sid: str) -> HttpResponse:
    """The command log as JSON, a page at a time (?from=&limit=; `next` and `previous` link the neighbours): what the
    session is, in full (also handy to file a bug). ?entry=i&part=in: the packed frames of an entry too large for a
    page, as text."""
    try:
        live = session.load(sid)
    except session.CommandError:
        raise Http404(_("No such session.")) from None
    try:
        window = valid(forms.WindowForm(request.GET)).cleaned_data
        entry = _index(request.GET.get("entry"))
        external_from = _index(request.GET.get("external_from")) or 0
    except session.CommandError as exc:
        return problem(str(exc), exc.status)
    if entry is not None:
        packed = export.packed_inputs(live, entry)
        if packed is None or request.GET.get("part") != "in":
            raise Http404(_("No such entry."))
        return HttpResponse(packed, content_type="text/plain; charset=utf-8")
    base = reverse("session-log", kwargs={"sid": sid})

    def href(**query: Any) -> str:
        return f"{base}?{urlencode(query)}"

    page = export.log_page(
        live,
        window.get("start") or 0,
        window.get("limit") or export.LOG_PAGE,
        limits.limit("log_page_bytes"),
        href,
        external_from,
    )
    # an exercise's open question holds back what the log would tell of its client (panelparts.unfenced)
    asked = asked_about(live)
    page["commands"] = [unfenced(entry, asked) for entry in page["commands"]]
    return JsonResponse(
        {
            "id": sid,
            "scenario": live.scenario.id if live.scenario else None,
            "backend": live.backend_name,
            "profile": live.profile.to_dict(),
            "seed": live.seed,
            "version": live.version,
            "origin": live.origin,
            **page,
        },
        json_dumps_params={"ensure_ascii": False},
    )


def _index(raw: str | None) -> int | None:
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:
        raise session.CommandError(_("%(v)s is not an index: a whole number from 0.") % {"v": raw[:20]})
    return int(raw)


@require_GET
@answers_problems
def session_cell(request: HttpRequest, sid: str) -> HttpResponse:
    """One cell of the database panel in full (the panel cuts long ones): ?table=NAME (empty: the reconciliation)
    &row=i&col=j, at the head or at ?at=k. Watching is enough, as for the page."""
    form = valid(forms.CellForm(request.GET))
    at = _at(request)
    live = session.moment(sid, at) if at is not None else session.load(sid)
    d = form.cleaned_data
    try:
        value = apppanels.cell(broadcast.view_of(live), d.get("table") or apppanels.RECONCILE_TABLE, d["row"], d["col"])
    except (KeyError, IndexError, TypeError):
        raise Http404(_("No such cell.")) from None
    text = value.hex() if isinstance(value, (bytes, bytearray)) else "NULL" if value is None else str(value)
    return HttpResponse(text, content_type="text/plain; charset=utf-8")


# ---------------------------------------------------------------------------------------------- the list pages
def _listed(request: HttpRequest, sid: str) -> tuple[Any, Any, dict[str, Any]]:
    """The session at the step asked (?at=k) for a list page, its view, and where the page starts."""
    window = valid(forms.WindowForm(request.GET)).cleaned_data
    at = _at(request)
    try:
        live = session.moment(sid, at) if at is not None else session.load(sid)
    except session.CommandError as exc:
        if exc.status == 404 and not session.exists(sid):
            raise Http404(_("No such session.")) from None
        raise
    return live, broadcast.view_of(live), window


def _list_page(request: HttpRequest, live: Any, template: str, what: str, p: dict[str, Any]) -> HttpResponse:
    return render(
        request,
        f"playground/lists/{template}.html",
        {
            "p": p,
            "sid": live.session_id,
            "at": live.moment,
            "what": what,
            "back": reverse("session", kwargs={"sid": live.session_id})
            + (f"?at={live.moment}" if live.moment is not None else ""),
            "lang": normalize(get_language()),
        },
    )


@require_GET
@answers_problems
def session_partition(request: HttpRequest, sid: str, tp: str) -> HttpResponse:
    """A page of one partition's log: ?from=OFFSET, or ?to=OFFSET (the page's last), else the newest offsets."""
    live, view, window = _listed(request, sid)
    try:
        p = lists.partition(live, view, tp, window.get("start"), window.get("to"))
    except logwindow.NoSuchPartition:
        raise Http404(_("No such partition.")) from None
    return _list_page(request, live, "partition", p["key"], p)


@require_GET
@answers_problems
def session_record(request: HttpRequest, sid: str, tp: str, offset: int, part: str) -> HttpResponse:
    """A record's key or value in full (a page cuts them): text as UTF-8 text, bytes as they are (a download)."""
    if part not in ("key", "value"):
        raise Http404(_("No such part of a record."))
    live, _view, _window = _listed(request, sid)
    try:
        entry = logwindow.record(live, tp, offset)
    except logwindow.NoSuchPartition:
        entry = None
    if entry is None or entry.get(part) is None:
        raise Http404(_("No such record."))
    value = entry[part]
    if isinstance(value, (bytes, bytearray)):
        response = HttpResponse(bytes(value), content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{part}-{offset}.bin"'
        return response
    return HttpResponse(str(value), content_type="text/plain; charset=utf-8")


@require_GET
@answers_problems
def session_partitions(request: HttpRequest, sid: str) -> HttpResponse:
    live, view, window = _listed(request, sid)
    return _list_page(request, live, "partitions", "partitions", lists.partitions(live, view, window.get("start")))


@require_GET
@answers_problems
def session_clients(request: HttpRequest, sid: str) -> HttpResponse:
    live, view, window = _listed(request, sid)
    return _list_page(request, live, "clients", "clients", lists.clients(live, view, window.get("start")))


@require_GET
@answers_problems
def session_transactions(request: HttpRequest, sid: str) -> HttpResponse:
    live, view, window = _listed(request, sid)
    p = lists.transactions(live, view, window.get("start"))
    return _list_page(request, live, "transactions", "transactions", p)


@require_GET
@answers_problems
def session_timeline(request: HttpRequest, sid: str) -> HttpResponse:
    live, view, window = _listed(request, sid)
    p = lists.timeline(live, view, window.get("before"), pinned=bool(window.get("pinned")))
    return _list_page(request, live, "timeline", "timeline", p)


@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok", content_type="text/plain")


# --------------------------------------------------------------------------------------------------- commands
def _execute(request: HttpRequest, sid: str, name: str) -> tuple[HttpResponse, Any]:
    done = commands.answer(
        name,
        sid,
        request.POST,
        _key(request, sid),
        idempotency_key=request.headers.get("Idempotency-Key"),
        client=client(request),
    )
    response = HttpResponse(status=204) if done.status == 204 else problem(done.body, done.status)
    if done.replayed:
        response["Idempotent-Replayed"] = "true"  # the first request's answer: nothing was done again
    return response, done.command


@answers_problems
def listen(request: HttpRequest, sid: str) -> HttpResponse:
    """Connect your own app: GET answers the session's listener ({"bootstrap_servers": "host:port,...", "state": ...},
    the address to its driver only); POST starts it (behind the drive capability, counted against the client) and
    answers the same."""
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    if not session.exists(sid):
        raise Http404(_("No such session."))
    if request.method == "POST":
        response, _done = _execute(request, sid, "listen")
        if response.status_code != 204:
            return response
    state = listener.state(sid)
    if not capability.matches(_key(request, sid), session.drive_key(sid)):
        # the address to whoever drives the session alone: anything pointed at it writes into the session's log
        state["bootstrap_servers"] = ""
    return JsonResponse(state)


@require_POST
def command(request: HttpRequest, sid: str, name: str) -> HttpResponse:
    """Every session command (commands.COMMANDS) but "run", behind the drive capability. A sync view: Django's
    middleware is sync, and an async view would hop threads around each of them on every command."""
    return _execute(request, sid, name)[0]


@require_POST
async def run(request: HttpRequest, sid: str) -> HttpResponse:
    """ "run": the running flag set (behind the drive capability), then the remaining steps applied one by one in
    this process's event loop ("pause" stops it, from any process)."""
    # asgiref's sync_to_async, not Channels' database_sync_to_async: Django's ASGI handler already looks after
    # the request's database connections (and the test client keeps its transaction open across the call).
    response, done = await sync_to_async(_execute)(request, sid, "run")
    if done is not None:
        session.ensure_runner(sid)
    return response


@require_POST
@answers_problems
def claim(request: HttpRequest, sid: str) -> HttpResponse:
    """A drive link was opened (`/s/<id>/#drive=<secret>`): its page hands the secret over once, and gets it back as
    this browser's HttpOnly cookie."""
    key = valid(forms.ClaimForm(request.POST)).cleaned_data["key"]
    commands.authorize(sid, key)
    response = HttpResponse(status=204)
    response.set_cookie(
        capability.cookie_name(sid),
        key,
        max_age=capability.COOKIE_MAX_AGE_S,
        httponly=True,
        samesite="Lax",
        secure=request.is_secure(),
    )
    return response


@require_POST
@answers_problems
def fork(request: HttpRequest, sid: str) -> HttpResponse:
    """A new session from the first k commands of this one ("fork from here"); anyone who can watch may fork."""
    d = valid(forms.ForkForm(request.POST)).cleaned_data
    row = session.fork(sid, d["at"], backend=d.get("backend") or None, client=client(request))
    return _to_session(request, row)


# ----------------------------------------------------------------------------------------------- the editor
EXAMPLE_SUMMARY = gettext_noop("What this shows, in a sentence or two.")  # in the catalogue for example()
EXAMPLE = """format: 1
id: my-scenario
title: {en: My scenario, zh: 我的场景}
summary: SUMMARY
cluster:
  topics:
    orders: {partitions: 3}
actors:
  A:  {producer: {transactional.id: order-pay}}
  rc: {consumer: {isolation.level: read_committed, topics: [orders]}}
  ru: {consumer: {isolation.level: read_uncommitted, topics: [orders]}}
steps:
  - note: {en: "A opens a transaction and writes one record.", zh: "A 开启事务并写入一条记录。"}
  - A.init_transactions
  - A.begin_transaction
  - A.produce: {topic: orders, partition: 0, value: order-1}
  - rc.poll
  - ru.poll
  - A.commit_transaction: {expect: ok}
  - rc.poll
expect:
  consumers:
    rc: {orders-0: [order-1]}
""".replace("SUMMARY", EXAMPLE_SUMMARY)

_BOTH = re.compile(r'\{en: (?:"[^"]*"|[^,{}]*), zh: (?:"([^"]*)"|([^,{}]*))\}')


def example() -> str:
    """The starter text in the reader's language: English as EXAMPLE is; in Chinese every text is only the zh one
    (the format takes a plain string as well) and the summary is translated."""
    if get_language() == settings.LANGUAGE_CODE:
        return EXAMPLE
    text = _BOTH.sub(lambda m: m.group(1) or m.group(2), EXAMPLE)
    return text.replace(f"summary: {EXAMPLE_SUMMARY}", f"summary: {_(EXAMPLE_SUMMARY)}")


DRAFT_KEY = re.compile(r"[a-z]+:[\w.-]{1,64}|new")


def _editor(
    request: HttpRequest,
    text: str,
    *,
    errors: list[dict] | None = None,
    origin: str = "",
    status: int = 200,
    draft: str = "new",
) -> HttpResponse:
    """The editor page. `draft`: the key under which the browser keeps what is typed (static/js/editor.js): one per
    text opened; a page answering a POST shows the text posted, not an older draft."""
    posted = request.method == "POST"
    if posted:
        sent = request.POST.get("draft", "")
        draft = sent if DRAFT_KEY.fullmatch(sent) else "new"
    return render(
        request,
        "playground/editor.html",
        {
            "text": text,
            "errors": errors or [],
            "origin": origin,
            "kafka": session.kafka_configured(),
            "draft": draft,
            "posted": posted,
        },
        status=status,
    )


@require_GET
@answers_problems
def editor(request: HttpRequest) -> HttpResponse:
    """The editor, empty (an example), with a copy of a library scenario (?from=ID), of a shared one (?sc=ID), or a
    session written out as a scenario (?session=ID)."""
    if request.GET.get("from"):
        scenario = library.get(request.GET["from"])
        if scenario is None:
            raise Http404(_("No scenario %(id)s in the library.") % {"id": request.GET["from"]})
        return _editor(request, scenario.source, origin=scenario.id, draft=f"from:{scenario.id}")
    if request.GET.get("sc"):
        shared = ScenarioText.objects.filter(pk=request.GET["sc"][:32], shared=True).first()
        if shared is None:
            raise Http404(_("No such shared scenario."))
        return _editor(request, shared.text, origin=shared.scenario_id, draft=f"text:{shared.pk}")
    if request.GET.get("source"):  # "edit this scenario" of a session: the text it was started from
        row = Session.objects.filter(pk=request.GET["source"][:64]).select_related("source").first()
        if row is None or not row.scenario_source:
            raise Http404(_("This session was not started from a scenario text."))
        return _editor(request, row.scenario_source, origin=row.scenario_id, draft=f"text:{row.source_id}")
    if request.GET.get("session"):
        sid = request.GET["session"][:64]
        if not session.exists(sid):
            raise Http404(_("No such session."))
        return _editor(request, as_scenario(sid), origin=sid, draft=f"session:{sid}")
    return _editor(request, example())


def _checked(text: str) -> dict[str, Any]:
    scenario, errors = check_text(text)
    out: dict[str, Any] = {"ok": scenario is not None, "errors": [e.as_dict(_) for e in errors]}
    if scenario is not None:
        out["scenario"] = {
            "id": scenario.id,
            "title": dict(scenario.title),
            "steps": len(scenario.steps),
            "actors": list(scenario.actors),
            "expectations": len(scenario.expect_lines),
        }
    return out


def _posted_text(request: HttpRequest) -> str:
    return request.POST.get("text", "")[: 4 * 64 * 1024]


def _refused_problem(request: HttpRequest, refusal: Refusal) -> dict[str, Any]:
    """A refused request (badinput.py) as one of the editor's problems: on the line of the text's first NUL."""
    text = request.POST.get("text", "") if refusal.field == "text" else ""
    line = text.count("\n", 0, text.index("\x00")) + 1 if "\x00" in text else 0
    return {"line": line, "field": refusal.field, "message": refusal.message}


def _check_refused(request: HttpRequest, refusal: Refusal) -> HttpResponse:
    return JsonResponse({"ok": False, "errors": [_refused_problem(request, refusal)]}, status=400)


def _editor_refused(request: HttpRequest, refusal: Refusal) -> HttpResponse:
    """The editor again, the text as sent (a browser shows its NUL as U+FFFD) and the sentence."""
    return _editor(request, _posted_text(request), errors=[_refused_problem(request, refusal)], status=400)


@require_POST
@refuses_with(_check_refused)
def editor_check(request: HttpRequest) -> HttpResponse:
    """Validation as you type: every error of the text, with its line (JSON)."""
    form = forms.ScenarioTextForm(request.POST)
    if not form.is_valid():
        return JsonResponse(
            {"ok": False, "errors": [{"line": 0, "field": "text", "message": form.message()}]}, status=400
        )
    return JsonResponse(_checked(form.cleaned_data["text"]))


def _valid_text(request: HttpRequest) -> tuple[Any, str] | HttpResponse:
    form = forms.ScenarioTextForm(request.POST)
    if not form.is_valid():
        return _editor(
            request, _posted_text(request), errors=[{"line": 0, "field": "text", "message": form.message()}], status=400
        )
    text = form.cleaned_data["text"]
    scenario, errors = check_text(text)
    if scenario is None:
        return _editor(request, text, errors=[e.as_dict(_) for e in errors], status=400)
    return scenario, text


@require_POST
@refuses_with(_editor_refused)
@answers_problems
def editor_play(request: HttpRequest) -> HttpResponse:
    """A fresh session from the editor's text (nothing is shared by this), in the profile chosen beside it (by
    default the text's own)."""
    profile_form = valid(forms.ProfileForm(request.POST))
    checked = _valid_text(request)
    if isinstance(checked, HttpResponse):
        return checked
    scenario, text = checked
    profile = profile_form.profile(scenario.profile)
    row = session.create(
        scenario,
        source=text,
        backend=_backend_choice(request.POST.get("backend") or None, profile),
        client=client(request),
        profile=profile,
    )
    return _to_session(request, row)


@require_POST
@refuses_with(_editor_refused)
@answers_problems
def editor_save(request: HttpRequest) -> HttpResponse:
    """Store the text under its content address and go to its page: the same text gives the same link."""
    checked = _valid_text(request)
    if isinstance(checked, HttpResponse):
        return checked
    scenario, text = checked
    row = session.keep_text(text, scenario.id, client=client(request), shared=True)
    return redirect("shared", text_id=row.id)


# -------------------------------------------------------------------------------------------- shared scenarios
def _shared(text_id: str) -> tuple[ScenarioText, Any]:
    row = ScenarioText.objects.filter(pk=text_id[:32], shared=True).first()
    if row is None:
        raise Http404(_("No such shared scenario."))
    scenario, errors = check_text(row.text, f"{row.scenario_id}.yaml")
    if scenario is None:
        raise session.CommandError(_("This scenario no longer loads: %(e)s") % {"e": errors[0].said(_)}, status=422)
    return row, scenario


@require_GET
@answers_problems
def shared(request: HttpRequest, text_id: str) -> HttpResponse:
    row, scenario = _shared(text_id)
    lang = normalize(get_language())
    steps = [
        {
            "n": s.index,
            "note": pick(s.args.get("text"), lang) if s.is_note else "",
            "label": s.label,
            "args": panels.step_summary(s.label, s.args),
            "expect": list(s.expect or ()),
        }
        for s in scenario.steps
    ]
    return render(
        request,
        "playground/shared.html",
        {
            "row": row,
            "scenario": scenario,
            "steps": steps,
            "lang": lang,
            "kafka": session.kafka_configured(),
            "link": request.build_absolute_uri(reverse("shared", kwargs={"text_id": row.id})),
        },
    )


@require_POST
@answers_problems
def shared_play(request: HttpRequest, text_id: str) -> HttpResponse:
    row, scenario = _shared(text_id)
    profile = _profile_choice(request, scenario.profile)
    new = session.create(
        scenario,
        source=row.text,
        backend=_backend_choice(request.POST.get("backend") or None, profile),
        client=client(request),
        profile=profile,
    )
    return _to_session(request, new)


@require_GET
@answers_problems
def shared_download(request: HttpRequest, text_id: str) -> HttpResponse:
    row, _scenario = _shared(text_id)
    response = HttpResponse(row.text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{row.scenario_id or row.id}.yaml"'
    return response


@require_GET
@answers_problems
def session_scenario(request: HttpRequest, sid: str) -> HttpResponse:
    """A session written out as a scenario file (download); the editor opens the same with ?session=."""
    if not session.exists(sid):
        raise Http404(_("No such session."))
    response = HttpResponse(as_scenario(sid), content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="session-{sid[:8]}.yaml"'
    return response


# ---------------------------------------------------------------------------------------------------- compare
def _pair(request: HttpRequest, own: Profile) -> tuple[Profile, Profile]:
    """?a=&b=: side A defaults to the item's own profile, side B to the other one (compare.other_profile)."""
    a = compare.profile_from_text("a", request.GET.get("a"), own)
    b = compare.profile_from_text("b", request.GET.get("b"), compare.other_profile(a))
    if a == b:  # both sides would be the same run: nothing to compare
        raise compare.CompareError(
            _("a and b are both %(profile)s: choose two different profiles.") % {"profile": compare.profile_text(a)}
        )
    return a, b


def _compare_page(
    request: HttpRequest, c: compare.Comparison, base: dict[str, str], back: tuple[str, str]
) -> HttpResponse:
    """Step k of a comparison: the whole page, or only its body for htmx's stepping (the same URL either way)."""
    k = c.check_at(_at(request) or 0)
    lang = normalize(get_language())
    query = urlencode({**base, "a": compare.profile_text(c.a), "b": compare.profile_text(c.b)})
    template = "playground/compare_body.html" if request.headers.get("HX-Request") else "playground/compare.html"
    response = render(
        request,
        template,
        {
            "c": c,
            "k": k,
            "lang": lang,
            "url": f"{request.path}?{query}",
            "back": back,
            "base": base,
            "view": compare.step_view(c, k, lang),
        },
    )
    patch_vary_headers(response, ["HX-Request"])
    return response


@require_GET
@answers_problems
def compare_scenario(request: HttpRequest) -> HttpResponse:
    """A library scenario in two profiles: /compare/?scenario=ID&a=3.9-librdkafka&b=4-java&at=k."""
    scenario_id = request.GET.get("scenario", "")[:100]
    if not scenario_id:
        raise compare.CompareError(_("scenario: name a scenario of the library (?scenario=ID)."))
    scenario = library.get(scenario_id)
    if scenario is None:
        raise compare.CompareError(_("No scenario %(id)s in the library.") % {"id": scenario_id}, status=404)
    _not_an_exercise(scenario)
    a, b = _pair(request, scenario.profile)
    c = compare.of_scenario(scenario, a, b, scenario.source, client=client(request))
    return _compare_page(request, c, {"scenario": scenario.id}, (reverse("gallery"), _("All scenarios")))


def _not_an_exercise(scenario: Any) -> None:
    """A scenario's comparison runs every step in both profiles: an exercise's would answer all its questions."""
    if is_exercise(scenario):
        raise compare.CompareError(
            _(
                "An exercise is not compared from the start: play it, and compare its session once every question is answered."
            ),
            status=403,
        )


@require_GET
@answers_problems
def shared_compare(request: HttpRequest, text_id: str) -> HttpResponse:
    """A shared scenario (/sc/<id>/) in two profiles. Its text is parsed once per process (its id is its content's
    address), and the comparison is looked up before anything runs."""
    row = ScenarioText.objects.filter(pk=text_id[:32], shared=True).only("id", "scenario_id", "text").first()
    if row is None:
        raise compare.CompareError(_("No such shared scenario."), status=404)
    try:
        scenario = parsed(row.text, f"{row.scenario_id}.yaml")
    except ScenarioError as exc:
        raise compare.CompareError(_("This scenario no longer loads: %(e)s") % {"e": exc.said(_)}, status=422) from None
    _not_an_exercise(scenario)
    a, b = _pair(request, scenario.profile)
    c = compare.of_scenario(scenario, a, b, row.text, client=client(request))
    return _compare_page(request, c, {}, (reverse("shared", kwargs={"text_id": row.id}), _("the shared scenario")))


@require_GET
@answers_problems
def session_compare(request: HttpRequest, sid: str) -> HttpResponse:
    """A session's command log re-run in two profiles on the simulator. Watching is enough: nothing is changed, and
    the page carries no capability. The session is not replayed: its row names the comparison (its log's version),
    and only a comparison not yet kept reads the log's rows."""
    try:
        row = store.read(sid)
    except session.CommandError:
        raise compare.CompareError(_("No such session."), status=404) from None
    # an exercise's session is loaded to find its open question; any other comparison replays nothing
    try:
        exercise = bool(row.scenario_id) and is_exercise(parsed(row.scenario_source, f"{row.scenario_id}.yaml"))
    except ScenarioError:
        exercise = False  # the comparison says that its scenario no longer loads
    if exercise and reveal(session.load(sid)).open_question is not None:
        raise compare.CompareError(
            _("An exercise is compared once every one of its questions has been answered and its step has run."),
            status=403,
        )
    a, b = _pair(request, row.profile)
    c = compare.of_session(row, a, b, client=client(request))
    return _compare_page(request, c, {}, (reverse("session", kwargs={"sid": sid}), _("back to the session")))
