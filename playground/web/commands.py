"""Every command a viewer can send a session, in one table, behind one door: the HTTP views and the websocket
consumer both call `execute`, which checks the drive capability before anything else (design.md, principle 7),
then validates the input with the command's form and calls one session function."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from playground import session
from playground.session import capability, limits, listener, store
from playground.web import forms


@dataclass(frozen=True)
class Command:
    name: str
    run: Callable[..., Any]  # (session id, the valid form or None[, the client's key when `per_client`])
    form: type[forms.Form] | None = None
    starts_runner: bool = False  # "run": the caller starts the runner in its event loop
    per_client: bool = False  # counted against the client (a listener): run gets the client's key too


def _add_producer(sid: str, f: forms.Form) -> Any:
    return session.add_producer(sid, f.cleaned_data["mode"], f.cleaned_data.get("transactional_id") or None)


def _add_consumer(sid: str, f: forms.Form) -> Any:
    return session.add_consumer(sid, f.cleaned_data["isolation"], f.cleaned_data.get("group") or None)


def _run(sid: str, f: forms.Form) -> Any:
    live = session.set_running(sid, True)
    if f.cleaned_data.get("ms"):
        session.set_speed(sid, f.cleaned_data["ms"])  # also while it runs already: the speed control changed
    return live


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("action", lambda sid, f: session.apply_step(sid, f.step()), forms.ActionForm),
        Command("produce", lambda sid, f: session.apply_step(sid, f.step()), forms.ProduceForm),
        Command("clock", lambda sid, f: session.apply_step(sid, f.step()), forms.ClockForm),
        Command("broker", lambda sid, f: session.apply_step(sid, f.step()), forms.BrokerForm),
        Command("add-producer", _add_producer, forms.AddProducerForm),
        Command("add-consumer", _add_consumer, forms.AddConsumerForm),
        Command("step", lambda sid, f: session.step(sid)),
        Command("back", lambda sid, f: session.back(sid)),
        Command("reset", lambda sid, f: session.reset(sid)),
        Command("run", _run, forms.RunForm, starts_runner=True),
        Command("pause", lambda sid, f: session.set_running(sid, False)),
        # the simulator's clock follows the user's pace (the wall time between commands), or not
        Command("pace", lambda sid, f: session.set_pace(sid, True)),
        Command("no-pace", lambda sid, f: session.set_pace(sid, False)),
        Command(
            "predict",
            lambda sid, f: session.predict(sid, f.cleaned_data["n"], f.cleaned_data["choice"]),
            forms.PredictForm,
        ),
        Command("hint", lambda sid, f: session.hint(sid)),
        # the anomaly checker judges the session as a pipeline: inputs of one topic, outputs in another
        Command("pipeline", lambda sid, f: session.set_pipelines(sid, f.stage()), forms.PipelineForm),
        # A real-cluster session that is not live here: its log re-run on fresh topics (only when the user asks).
        Command("rerun", lambda sid, f: session.rerun(sid)),
        # A real-cluster session ends: its backend closed, its topics deleted; the log stays.
        Command("end", lambda sid, f: session.end(sid)),
        # Connect your own app: the session's brokers served over the Kafka protocol (session/listener.py), or not.
        Command("listen", lambda sid, f, client: listener.start(sid, client), per_client=True),
        Command("unlisten", lambda sid, f: listener.stop(sid)),
    )
}


def watch_only_message() -> str:
    return _(
        "This is a watch-only link: everything is shown live, but only the holder of the drive link can change "
        "this session. Fork it to get a copy of your own."
    )


def authorize(sid: str, key: str | None) -> None:
    """403 unless `key` is the session's drive capability (404 for no such session)."""
    if not capability.matches(key, store.drive_key_of(sid)):
        raise session.CommandError(watch_only_message(), status=403)


def execute(name: str, sid: str, data: Mapping[str, Any], key: str | None, client: str = "") -> Command:
    command = COMMANDS.get(name)
    if command is None:
        raise session.CommandError(_("Unknown command %(c)s.") % {"c": str(name)[:40]}, status=404)
    authorize(sid, key)
    form = None
    if command.form is not None:
        form = command.form(data)
        if not form.is_valid():
            raise session.CommandError(form.message())
    if command.per_client:
        command.run(sid, form, client)
    else:
        command.run(sid, form)
    return command


@dataclass(frozen=True)
class Answer:
    """What a command is answered: 204 and nothing, or a 4xx and the sentence. `command` is the command carried out
    (None when it was refused, or when this is the first answer again: an Idempotency-Key seen before)."""

    status: int
    body: str = ""
    command: Command | None = None
    replayed: bool = False


IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
WAIT_FOR_FIRST_S = 10.0  # a retry that arrives while the first request is still being carried out waits this long


def answer(
    name: str,
    sid: str,
    data: Mapping[str, Any],
    key: str | None,
    idempotency_key: str | None = None,
    wait_s: float = WAIT_FOR_FIRST_S,
    client: str = "",
) -> Answer:
    """`execute`, answered: every refusal as its status and sentence. With an Idempotency-Key (the HTTP header, the
    websocket's "idempotency_key"), the same key within a session gets the first answer again and changes nothing:
    a POST whose answer was lost and is sent again is not a second command."""
    if idempotency_key is None:
        return _answer(name, sid, data, key, client)
    if not IDEMPOTENCY_KEY.match(idempotency_key):
        return Answer(400, _("Idempotency-Key: 1 to 64 letters, digits, '.', '_', ':' or '-'."))
    try:
        authorize(sid, key)  # a watcher's keys are never stored
    except session.CommandError as exc:
        return Answer(exc.status, str(exc))
    first = store.reserve_answer(sid, idempotency_key)
    if first is not None:
        return _first_answer(sid, idempotency_key, wait_s)
    try:
        done = _answer(name, sid, data, key, client)
    except BaseException:
        store.release_answer(sid, idempotency_key)
        raise
    store.keep_answer(sid, idempotency_key, done.status, done.body)
    return done


def _first_answer(sid: str, idempotency_key: str, wait_s: float) -> Answer:
    deadline = time.monotonic() + wait_s
    while True:
        stored = store.answer_of(sid, idempotency_key)
        if stored is None:  # the first request failed and let the key go: this one is the first now
            return Answer(409, _("The first request with this Idempotency-Key failed: send the command again."))
        if stored[0] != store.PENDING:
            return Answer(stored[0], stored[1], replayed=True)
        if time.monotonic() > deadline:
            return Answer(409, _("A request with this Idempotency-Key is still being carried out."))
        time.sleep(0.05)


def _answer(name: str, sid: str, data: Mapping[str, Any], key: str | None, client: str = "") -> Answer:
    try:
        return Answer(204, command=execute(name, sid, data, key, client))
    except session.CommandError as exc:
        return Answer(exc.status, str(exc))
    except limits.LimitExceeded as exc:
        return Answer(exc.status, str(exc))
    except forms.forms.ValidationError as exc:
        return Answer(400, "; ".join(exc.messages))
