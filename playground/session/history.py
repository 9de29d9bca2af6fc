"""A session's history for the anomaly checker (playground/scenario/anomalies.py): its log's steps with their outcomes and
what each poll returned, the partitions' whole logs as the backend holds them now, and the database."""

from __future__ import annotations

from playground.scenario.anomalies import Finding, History, HistoryStep, check
from playground.session import external
from playground.session.live import Live, step_from_entry

HISTORY_LOG_LIMIT = 100_000  # entries per partition: the whole log of any session a server keeps


def history_of(live: Live) -> History:
    steps: list[HistoryStep] = []
    for n, entry in enumerate(live.commands):
        if "step" not in entry:
            continue
        step = step_from_entry(entry["step"])
        if step.is_note:
            continue
        steps.append(
            {
                "n": n,
                "actor": step.actor,
                "action": step.action,
                "args": dict(step.args),
                "outcome": entry.get("outcome", "ok"),
                "read": entry.get("read"),
                "lso": entry.get("lso"),
            }
        )
    # what applications connected to the session's listener did, in the same terms (session/external.py)
    for op in external.history_ops(live.backend):
        steps.append(
            {
                "n": op["n"],
                "actor": op["actor"],
                "action": op["action"],
                "args": op["args"],
                "outcome": op["outcome"],
                "read": op.get("read"),
                "lso": op.get("lso"),
            }
        )
    steps.sort(key=lambda s: s["n"])
    view = live.backend.view(HISTORY_LOG_LIMIT)
    logs = {tp: p.get("log", []) for tp, p in view.get("partitions", {}).items()}
    isolation = {n: a.isolation_level for n, a in live.actors.items() if a.kind == "consumer"}
    isolation.update(external.isolation_levels(live.backend))
    return History(steps, logs, isolation, (view.get("database") or {}).get("reconcile"))


def findings(live: Live) -> list[Finding]:
    return check(history_of(live))
