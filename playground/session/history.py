"""A session's history for the anomaly checker (playground/scenario/anomalies.py): its log's steps with their outcomes
and what each poll returned, the partitions' logs as the backend holds them, and the database.

The checker is kept with the session as this process holds it (`Live.anomalies`) and fed only what it has not seen
(the commands since, the log entries past the offsets it read), so the anomaly panel costs the same after command 10
and after 10,000. A Live rebuilt from a checkpoint (going back) starts a checker of its own; a moment up to
MOMENT_CHECKED_MAX goes on from the checker its checkpoint froze (fed with exactly the commands before it), so that
scrubbing there does not read the whole history again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from playground.engine.spec import CONSUMER
from playground.scenario.anomalies import Checker, Finding, HistoryStep
from playground.session import external, sqltime
from playground.session.live import Live, is_command, step_from_entry

# A moment (an earlier step, built anew) past this step is not checked: its checker would read the whole history.
MOMENT_CHECKED_MAX = 2000


@dataclass
class Fed:
    """A checker, and how far into the session's log it has read."""

    checker: Checker
    entries: int = 0  # log entries read
    commands: int = 0  # of those, commands: the next command's position (its step number is this + 1)


def _step(entry: Mapping[str, Any], n: int) -> HistoryStep | None:
    if "step" not in entry:
        return None
    step = step_from_entry(entry["step"])
    if step.is_note:
        return None
    return {
        "n": n,
        "actor": step.actor,
        "action": step.action,
        "args": dict(step.args),
        "outcome": entry.get("outcome", "ok"),
        "read": entry.get("read"),
        "lso": entry.get("lso"),
    }


def checker_of(live: Live, view: Mapping[str, Any] | None = None) -> Checker:
    """The session's checker, caught up with its log (`view`: the backend's view, when the caller has one: its
    database's reconciliation is read from it)."""
    if external.history_ops(live.backend):
        return _checker_with_clients(live, view)
    checker = _fed(live).checker
    _reconcile(live, checker, view)
    return checker


def _fed(live: Live) -> Fed:
    """The session's own checker, fed with its log so far (not with applications' operations)."""
    fed = live.anomalies
    if not isinstance(fed, Fed):
        fed = live.anomalies = Fed(Checker(client=live.profile.client, pipelines=live.pipelines))
    checker = fed.checker
    checker.isolation = {n: a.isolation_level for n, a in live.actors.items() if a.kind == CONSUMER}
    # the logs first (also between commands: a real cluster's markers land when they land), so that a poll's
    # records are in them before the poll is read
    for tp, entries in live.backend.log_entries(checker.next_offset).items():
        checker.add_log(tp, entries)
    if fed.entries < live.length:
        for entry in live.commands[fed.entries :]:
            if not is_command(entry):
                continue
            step = _step(entry, fed.commands)
            fed.commands += 1
            if step is not None:
                checker.add_step(step)
        fed.entries = live.length
    return fed


def frozen_checker(live: Live, freeze: Callable[[Any], bytes]) -> bytes | None:
    """For a checkpoint of `live` (taken at its current length): its checker fed with exactly the log so far, frozen,
    when a moment may go on from it (a step up to MOMENT_CHECKED_MAX; no applications connected, whose operations
    are read whole each time)."""
    if live.step_count > MOMENT_CHECKED_MAX or external.history_ops(live.backend):
        return None
    return freeze(_fed(live))


def _checker_with_clients(live: Live, view: Mapping[str, Any] | None) -> Checker:
    """A session that applications connected to (session/external.py) is read whole each time: an external client's
    operation learns its outcome from an answer that comes later, so it cannot be fed once and forgotten as the
    session's own commands are. Their operations are numbered by the step of the log entry they came in."""
    checker = Checker(client=live.profile.client, pipelines=live.pipelines)
    checker.isolation = {n: a.isolation_level for n, a in live.actors.items() if a.kind == CONSUMER}
    checker.isolation.update(external.isolation_levels(live.backend))
    for tp, entries in live.backend.log_entries({}).items():
        checker.add_log(tp, entries)
    steps: list[HistoryStep] = []
    for position, entry in enumerate(live.commands):
        step = _step(entry, live.step_of(position) - 1) if is_command(entry) else None
        if step is not None:
            steps.append(step)
    for op in external.history_ops(live.backend):
        steps.append({**op, "n": max(0, live.step_of(int(op["n"])) - 1)})  # type: ignore[typeddict-item]
    for step in sorted(steps, key=lambda s: s["n"]):
        checker.add_step(step)
    _reconcile(live, checker, view)
    return checker


def _reconcile(live: Live, checker: Checker, view: Mapping[str, Any] | None) -> None:
    if view is None:
        view = sqltime.view(live, 1)
    checker.set_reconcile((view.get("database") or {}).get("reconcile"))


def findings(live: Live, view: Mapping[str, Any] | None = None) -> list[Finding]:
    return checker_of(live, view).findings()
