"""The anomaly checker: over a session's (or a scenario run's) whole history, every place where what the
application was told, what Kafka holds, what consumers got and what the database says do not fit together.
In the style of Jepsen's checkers: each finding names the rule it breaks, the steps and records involved, and
Elle's anomaly name where one applies.

Rules:
- `lost-write` (lost update): the application was told a send succeeded (produce() returned ok, awaited or not),
  and read_committed will never deliver it: its record was aborted or never landed (a record of a transaction
  still open at the end is not counted: it may yet commit).
  Sends of a transaction the application aborted itself are not counted: it knows.
- `failed-write-visible`: a send the application was told failed, or a send of a transaction it aborted itself
  (also one delivered late by the network, `net.late_write`), yet its record was committed.
- `duplicate`: a consumer got the same record twice (redelivered after a crash or a seek), or the same value from
  two records (the producer wrote it twice and both were committed). Consumers that feed a producer (`from:`,
  `send_offsets_to_transaction`) are a transform's input, re-read on recovery by design: their output is checked.
- `aborted-read` (G1a): a read_committed consumer got a record of an aborted transaction.
- `undecided-read` (G1b): a read_committed consumer got a record at or past the last stable offset of the moment
  it read: data of a transaction not decided yet (it overtook the LSO).
- `divergence`: the scenario's reconciliation query shows a row with a failed check (the database and Kafka
  disagree: an order paid and never delivered, stock deducted and the order never sent).

The last three must never happen on a correct cluster: they check the simulator (and a real cluster) too.
Pure: no Django; the history is plain data (`History`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from playground.engine.backend import Backend
from playground.engine.spec import Step
from playground.scenario.model import Scenario

OK = "ok"
RULES = ("lost-write", "failed-write-visible", "duplicate", "aborted-read", "undecided-read", "divergence")
ELLE = {"lost-write": "lost update", "aborted-read": "G1a", "undecided-read": "G1b"}


@dataclass(frozen=True)
class Finding:
    rule: str
    text: str  # what happened, in a sentence naming values, offsets and outcomes
    steps: tuple[int, ...] = ()  # positions in the log (a session) or step indexes (a scenario run)
    records: tuple[str, ...] = ()  # "orders-0@3"

    @property
    def anomaly(self) -> str | None:
        return ELLE.get(self.rule)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "anomaly": self.anomaly,
            "text": self.text,
            "steps": list(self.steps),
            "records": list(self.records),
        }

    def __str__(self) -> str:
        where = f" (steps {', '.join(str(s) for s in self.steps)})" if self.steps else ""
        name = f" [{self.anomaly}]" if self.anomaly else ""
        return f"{self.rule}{name}{where}: {self.text}"


class Reads(TypedDict, total=False):
    """What a poll returned, kept with its step (absent: not a poll, or it returned nothing)."""

    read: list[list[Any]]  # [[tp, offset], ...]: lists, as a session's stored log gives them back
    lso: dict[str, int]  # tp -> last stable offset when the poll returned (when the backend can tell)


class HistoryStep(TypedDict):
    """One step of a history: a command of a session's log or a step of a scenario run, with its outcome and, for
    a poll, its Reads (None, or absent: nothing read)."""

    n: int  # position in the session's log, or the scenario step's index
    actor: str
    action: str
    args: Mapping[str, Any]
    outcome: str
    read: NotRequired[list[list[Any]] | None]
    lso: NotRequired[dict[str, int] | None]


@dataclass
class History:
    """What happened, as any backend can tell it.

    steps: HistoryStep dicts, in the order they ran
    logs: {tp: [{"offset", "value", "key", "producer_id", "transactional", "control"}]} in offset order
    isolation: {consumer: "read_committed" | "read_uncommitted"}
    reconcile: the reconciliation query's {"columns", "rows"}, or None
    """

    steps: Sequence[HistoryStep]
    logs: Mapping[str, list[Mapping[str, Any]]]
    isolation: Mapping[str, str]
    reconcile: Mapping[str, Any] | None = None
    fates: dict[tuple[str, int], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.fates = fates_of(self.logs)


def reads(backend: Backend, step: Step) -> Reads:
    """What a poll step returned ({"read": [[partition, offset], ...]}) and the last stable offsets of those
    partitions as it returned ({"lso": {...}}, when the backend can tell): kept with the step, for the checker."""
    if step.action != "poll":
        return {}
    got = backend.polled(step.actor)
    if not got:
        return {}
    stable = backend.stable_offsets()
    out: Reads = {"read": [[tp, offset] for tp, offset in got]}
    if stable:
        out["lso"] = {tp: stable[tp] for tp in sorted({tp for tp, _o in got}) if tp in stable}
    return out


def fates_of(logs: Mapping[str, list[Mapping[str, Any]]]) -> dict[tuple[str, int], str]:
    """Each data record's fate, from the log alone: a transactional record is decided by its producer's next
    marker on the partition (COMMIT: committed, ABORT: aborted; none yet: open); a plain record is plain."""
    out: dict[tuple[str, int], str] = {}
    for tp, log in logs.items():
        waiting: dict[Any, list[int]] = defaultdict(list)
        for e in log:
            if e.get("control"):
                fate = "committed" if e["control"] == "COMMIT" else "aborted"
                for offset in waiting.pop(e.get("producer_id", e.get("producer")), []):
                    out[(tp, offset)] = fate
            elif e.get("transactional"):
                waiting[e.get("producer_id", e.get("producer"))].append(e["offset"])
            else:
                out[(tp, e["offset"])] = "plain"
        for offsets in waiting.values():
            for offset in offsets:
                out[(tp, offset)] = "open"
    return out


def _topic(tp: str) -> str:
    return tp.rpartition("-")[0]


def check(history: History) -> list[Finding]:
    return [*_writes(history), *_reads(history), *_divergence(history)]


# ---------------------------------------------------------------------------------------------------- writes
def _sends(history: History) -> tuple[list[HistoryStep], list[HistoryStep], list[HistoryStep], dict[int, str]]:
    """(sends the application was told succeeded, sends it was told failed, sends of transactions it aborted itself,
    and for a send in a transaction the outcome its commit returned). An aborted transaction's sends are not
    believed (the application knows), nor are the sends of a producer that crashed before its transaction ended
    (nobody is left to believe anything). A `net.late_write` is a send of the transaction its `of:` record was sent
    in, delivered late: aborted with it when the application aborted that transaction."""
    told_ok: list[HistoryStep] = []
    told_failed: list[HistoryStep] = []
    open_sends: dict[str, list[HistoryStep]] = defaultdict(list)
    commit_of: dict[int, str] = {}
    dropped: set[int] = set()
    aborted: list[HistoryStep] = []
    sent: dict[tuple[str, str], HistoryStep] = {}  # (actor, value) -> that send
    for s in history.steps:
        actor, action, args = s["actor"], s["action"], s["args"] or {}
        if action == "begin_transaction":
            open_sends[actor] = []
        elif action == "produce" and "value" in args:
            (told_ok if s.get("outcome") == OK else told_failed).append(s)
            open_sends[actor].append(s)
            sent[(actor, str(args["value"]))] = s
        elif action == "abort_transaction" and s.get("outcome") == OK:
            for x in open_sends.pop(actor, []):
                dropped.add(x["n"])
                if x.get("outcome") == OK:
                    aborted.append(x)
        elif action == "crash":
            dropped |= {x["n"] for x in open_sends.pop(actor, [])}
        elif action == "commit_transaction":
            for x in open_sends.pop(actor, []):
                commit_of[x["n"]] = s.get("outcome", OK)
        elif action in ("restart", "close"):
            open_sends.pop(actor, None)
        elif actor == "net" and action == "late_write":
            earlier = sent.get((str(args.get("actor")), str(args.get("of"))))
            if earlier is not None and earlier in aborted:
                aborted.append(
                    {
                        **s,
                        "actor": args["actor"],
                        "args": {"topic": earlier["args"]["topic"], "value": args.get("value")},
                    }
                )
    return [s for s in told_ok if s["n"] not in dropped], told_failed, aborted, commit_of


def _records_by_value(history: History) -> dict[tuple[str, str], list[tuple[str, int]]]:
    out: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    for tp, log in history.logs.items():
        for e in log:
            if not e.get("control"):
                out[(_topic(tp), str(e.get("value")))].append((tp, e["offset"]))
    return out


def _writes(history: History) -> Iterable[Finding]:
    told_ok, told_failed, aborted, commit_of = _sends(history)
    records = _records_by_value(history)
    visible = {
        key: [r for r in recs if history.fates.get(r) in ("committed", "plain")] for key, recs in records.items()
    }
    believed: dict[tuple[str, str], list[HistoryStep]] = defaultdict(list)
    for s in told_ok:
        believed[(s["args"]["topic"], str(s["args"]["value"]))].append(s)
    for (topic, value), sends in believed.items():
        # A record of a transaction still open is not lost yet: its producer may still commit it (scenario 06's
        # hanging transaction). The undecided-read rule covers reading it early.
        undecided = [r for r in records.get((topic, value), []) if history.fates.get(r) == "open"]
        lost = len(sends) - len(visible.get((topic, value), [])) - len(undecided)
        if lost <= 0:
            continue
        others = [r for r in records.get((topic, value), []) if history.fates.get(r) not in ("committed", "plain")]
        where = (
            ", ".join(f"{tp}@{o} ({history.fates.get((tp, o))})" for tp, o in others) or "it is in no partition's log"
        )
        commits = sorted({commit_of[s["n"]] for s in sends if s["n"] in commit_of and commit_of[s["n"]] != OK})
        later = f"; its transaction's commit_transaction then returned {', '.join(commits)}" if commits else ""
        yield Finding(
            "lost-write",
            f"{sends[-1]['actor']} was told its send of {value!r} to {topic} succeeded (produce() "
            f"returned ok), but read_committed does not deliver it: {where}{later}",
            tuple(s["n"] for s in sends),
            tuple(f"{tp}@{o}" for tp, o in others),
        )
    accounted = {key: len(sends) for key, sends in believed.items()}
    for s in [*told_failed, *aborted]:
        key = (s["args"]["topic"], str(s["args"]["value"]))
        extra = len(visible.get(key, [])) - accounted.get(key, 0)
        if extra > 0:
            recs = visible[key][-extra:]
            accounted[key] = accounted.get(key, 0) + 1
            why = (
                f"was told its send of {key[1]!r} failed ({s['outcome']})"
                if s in told_failed
                else f"aborted the transaction its send of {key[1]!r} belonged to"
            )
            yield Finding(
                "failed-write-visible",
                f"{s['actor']} {why}, yet it was committed at {', '.join(f'{tp}@{o}' for tp, o in recs)}",
                (s["n"],),
                tuple(f"{tp}@{o}" for tp, o in recs),
            )


# ----------------------------------------------------------------------------------------------------- reads
def _reads(history: History) -> Iterable[Finding]:
    values = {
        (tp, e["offset"]): e.get("value") for tp, log in history.logs.items() for e in log if not e.get("control")
    }
    got: dict[str, list[tuple[int, str, int]]] = defaultdict(list)  # consumer -> (step, tp, offset)
    for s in history.steps:
        for tp, offset in s.get("read") or ():
            got[s["actor"]].append((s["n"], tp, offset))
            if history.isolation.get(s["actor"], "read_committed") != "read_committed":
                continue
            fate = history.fates.get((tp, offset))
            if fate == "aborted":
                yield Finding(
                    "aborted-read",
                    f"{s['actor']} (read_committed) got {values.get((tp, offset))!r} at "
                    f"{tp}@{offset}, a record of an aborted transaction",
                    (s["n"],),
                    (f"{tp}@{offset}",),
                )
            lso = (s.get("lso") or {}).get(tp)
            if lso is not None and offset >= lso:
                yield Finding(
                    "undecided-read",
                    f"{s['actor']} (read_committed) got {tp}@{offset} while the last "
                    f"stable offset was {lso}: data of an undecided transaction",
                    (s["n"],),
                    (f"{tp}@{offset}",),
                )
    feeders = {str((s.get("args") or {}).get("from")) for s in history.steps if (s.get("args") or {}).get("from")}
    feeders |= {
        str((s.get("args") or {}).get("consumer"))
        for s in history.steps
        if s.get("action") == "send_offsets_to_transaction"
    }
    for consumer, reads in got.items():
        if consumer in feeders:
            # A transform's input: re-reading after a crash is how it recovers; what must not repeat is its output,
            # which the consumers reading that output show.
            continue
        by_record = defaultdict(list)
        by_value = defaultdict(set)
        for n, tp, offset in reads:
            by_record[(tp, offset)].append(n)
            by_value[(_topic(tp), str(values.get((tp, offset))))].add((tp, offset))
        for (tp, offset), steps in by_record.items():
            if len(steps) > 1:
                yield Finding(
                    "duplicate",
                    f"{consumer} got {values.get((tp, offset))!r} at {tp}@{offset} {len(steps)} times "
                    "(redelivered: its position went back, after a crash or a seek)",
                    tuple(steps),
                    (f"{tp}@{offset}",),
                )
        for (topic, value), recs in by_value.items():
            if len(recs) > 1:
                steps = sorted({n for n, tp, o in reads if (tp, o) in recs})
                yield Finding(
                    "duplicate",
                    f"{consumer} got {value!r} from {len(recs)} records of {topic} "
                    f"({', '.join(f'{tp}@{o}' for tp, o in sorted(recs))}): it was written and committed more than once",
                    tuple(steps),
                    tuple(f"{tp}@{o}" for tp, o in sorted(recs)),
                )


# -------------------------------------------------------------------------------------------------- database
def _divergence(history: History) -> Iterable[Finding]:
    rec = history.reconcile
    if not rec or not rec.get("rows"):
        return
    columns, rows = rec["columns"], rec["rows"]
    checks = rec.get("checks")
    if checks is None:  # a result without the database's own reading: every all-0/1 column is a check
        checks = [i for i in range(len(columns)) if all(r[i] in (0, 1) for r in rows)]
    for r in rows:
        failed = [columns[i] for i in checks if r[i] == 0]
        if failed:
            ident = ", ".join(f"{c}={v}" for c, v in zip(columns, r) if columns.index(c) not in checks)
            yield Finding(
                "divergence",
                f"the reconciliation's row {ident or r} fails {', '.join(failed)}: the database and Kafka disagree",
            )


def history_of_run(scenario: Scenario, record: Sequence[HistoryStep], observation: Mapping[str, Any]) -> History:
    """A `scenario run`'s history: the steps it recorded, the observation's logs and database."""
    logs = {tp: p["log"] for tp, p in observation["partitions"].items()}
    isolation = {n: a.isolation_level for n, a in scenario.actors.items() if a.kind == "consumer"}
    return History(list(record), logs, isolation, (observation.get("database") or {}).get("reconcile"))


def summary(findings: Iterable[Finding]) -> dict[str, int]:
    return dict(Counter(f.rule for f in findings))
