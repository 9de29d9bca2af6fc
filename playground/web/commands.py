"""Every command a viewer can send a session, in one table, behind one door: the HTTP views and the websocket
consumer both call `execute`, which checks the drive capability before anything else (design.md, principle 7),
then validates the input with the command's form and calls one session function."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from playground import session
from playground.session import capability, store
from playground.web import forms


@dataclass(frozen=True)
class Command:
    name: str
    run: Callable[[str, Any], Any]  # (session id, the valid form or None)
    form: type[forms.Form] | None = None
    starts_runner: bool = False  # "run": the caller starts the runner in its event loop


def _add_producer(sid: str, f: forms.Form) -> Any:
    return session.add_producer(sid, f.cleaned_data["mode"], f.cleaned_data.get("transactional_id") or None)


def _add_consumer(sid: str, f: forms.Form) -> Any:
    return session.add_consumer(sid, f.cleaned_data["isolation"], f.cleaned_data.get("group") or None)


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
        Command("run", lambda sid, f: session.set_running(sid, True), starts_runner=True),
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
        # A real-cluster session that is not live here: its log re-run on fresh topics (only when the user asks).
        Command("rerun", lambda sid, f: session.rerun(sid)),
        # A real-cluster session ends: its backend closed, its topics deleted; the log stays.
        Command("end", lambda sid, f: session.end(sid)),
    )
}


def watch_only_message() -> str:
    return _(
        "This is a watch-only link: everything is shown live, but only the holder of the drive link can change "
        "this session. Fork it to get a copy of your own."
    )


def authorize(sid: str, key: str | None) -> None:
    """403 unless `key` is the session's drive capability (404 for no such session)."""
    if not capability.matches(key, store.read(sid).drive_key):
        raise session.CommandError(watch_only_message(), status=403)


def execute(name: str, sid: str, data: Mapping[str, Any], key: str | None) -> Command:
    command = COMMANDS.get(name)
    if command is None:
        raise session.CommandError(_("Unknown command %(c)s.") % {"c": str(name)[:40]}, status=404)
    authorize(sid, key)
    form = None
    if command.form is not None:
        form = command.form(data)
        if not form.is_valid():
            raise session.CommandError(form.message())
    command.run(sid, form)
    return command
