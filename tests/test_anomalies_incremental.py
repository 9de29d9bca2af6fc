"""The session's anomaly checker is incremental (issue 17): fed a long randomized session command by command, it finds
exactly what the checker that judges each key and consumer from all their records finds (the checker as it was, kept
here as the reference), in the same order and words; and the work it does per command does not grow with the
session (counted in lines of the checker run, not in time)."""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from playground.scenario import anomalies
from playground.scenario.anomalies import JAVA, LISTED_MAX, Checker, Finding, History, HistoryStep, _capped, _record

Record = tuple[str, int]


class Reference(Checker):
    """Each judgment worked out from all of the key's records or the consumer's reads, as before issue 17."""

    def _all_records(self, key: Any) -> list[Record]:
        return list(self._keys[key].records) if key in self._keys else []

    def _old_visible(self, key: Any) -> list[Record]:
        return [r for r in self._all_records(key) if self.fates.get(r) in ("committed", "plain")]

    def _old_where(self, key: Any) -> tuple[list[list[str]], int]:
        visible = self._old_visible(key)
        return _capped([[_record(*r), self.fates.get(r, "")] for r in self._all_records(key) if r not in visible])

    def _judge_key(self, key: Any) -> None:
        topic, value = key
        out: list[Finding] = []
        records = self._all_records(key)
        visible = self._old_visible(key)
        undecided = [r for r in records if self.fates.get(r) == "open"]
        sends = self._believed.get(key, [])
        if sends and len(sends) - len(visible) - len(undecided) > 0:
            last = sends[-1]
            where, more = self._old_where(key)
            params = {"actor": last["actor"], "value": repr(value), "topic": topic, "said": self._said(last)}
            out.append(
                Finding(
                    "lost-write",
                    "lost",
                    {**params, "where": where, "where_more": more},
                    tuple(s["n"] for s in sends),
                    tuple(r for r, _fate in where),
                )
            )
        accounted = len(sends)
        for s, kind in [
            *((x, "told") for x in self._told_failed.get(key, ())),
            *((x, "aborted") for x in self._aborted.get(key, ())),
        ]:
            extra = len(visible) - accounted
            if extra <= 0:
                break
            recs, more = _capped([_record(*r) for r in visible[-extra:]])
            accounted += 1
            p: dict[str, Any] = {"actor": s["actor"], "value": repr(value), "records": recs, "records_more": more}
            if kind == "told":
                p["outcome"] = s["outcome"]
            kind_ = "told_failed_visible" if kind == "told" else "aborted_visible"
            out.append(Finding("failed-write-visible", kind_, p, (s["n"],), tuple(recs)))
        if out:
            self._by_key[key] = out
        else:
            self._by_key.pop(key, None)

    def _undelivered_told(self, key: Any) -> int | None:
        if any(self.fates.get(r) == "open" for r in self._all_records(key)):
            return None
        spare = max(0, len(self._old_visible(key)) - len(self._believed.get(key, ())))
        return max(0, len(self._told_by_key.get(key, ())) - spare)

    def _judge_told(self, told: Any) -> None:
        lost: list[HistoryStep] = []
        where: list[list[str]] = []
        for x in told.sends:
            key = (str(x["args"]["topic"]), str(x["args"]["value"]))
            undelivered = self._undelivered_told(key)
            if undelivered is None:
                self._by_told.pop(told.ident, None)
                return
            mine = [i for i, (ident, y) in enumerate(self._told_by_key[key]) if ident == told.ident and y is x]
            if mine and mine[0] < undelivered:
                lost.append(x)
                for r in self._all_records(key):
                    entry = [_record(*r), self.fates.get(r, "")]
                    if self.fates.get(r) not in ("committed", "plain") and entry not in where:
                        where.append(entry)
        if not lost:
            self._by_told.pop(told.ident, None)
            return
        values, values_more = _capped([repr(str(x["args"]["value"])) for x in lost])
        shown, more = _capped(where)
        self._by_told[told.ident] = Finding(
            "aborted-told",
            "aborted_told",
            {
                "actor": told.actor,
                "values": values,
                "values_more": values_more,
                "topics": sorted({str(x["args"]["topic"]) for x in lost}),
                "k": told.step + 1,
                "op": told.op,  # with its client's suffix already (a connected client names its own library)
                "outcome": told.outcome,
                "where": shown,
                "where_more": more,
            },
            (*(x["n"] for x in lost), told.step),
            tuple(r for r, _fate in shown),
        )

    def _judge_duplicates(self, consumer: str) -> None:
        if consumer in self._feeders:
            self._dups.pop(consumer, None)
            return
        out: list[Finding] = []
        for (tp, offset), steps in self._got[consumer].items():
            if len(steps) > 1:
                p = {"actor": consumer, "value": repr(self.values.get((tp, offset))), "record": _record(tp, offset)}
                out.append(
                    Finding("duplicate", "redelivered", {**p, "times": len(steps)}, tuple(steps), (p["record"],))
                )
        for (topic, value), d in self._doubled[consumer].items():
            recs = d.records
            if len(recs) > 1:
                ordered = sorted(recs)
                steps = sorted({n for r in ordered for n in self._got[consumer][r]})
                names, more = _capped([_record(*r) for r in ordered])
                p = {"actor": consumer, "value": repr(value), "count": len(recs), "topic": topic}
                out.append(
                    Finding(
                        "duplicate",
                        "written_twice",
                        {**p, "records": names, "records_more": more},
                        tuple(steps[:LISTED_MAX]),
                        tuple(names),
                    )
                )
        if out:
            self._dups[consumer] = out
        else:
            self._dups.pop(consumer, None)


def reference_check(history: History) -> list[Finding]:
    checker = Reference(history.isolation, history.client)
    for tp, log in history.logs.items():
        checker.add_log(tp, log)
    for s in history.steps:
        checker.add_step(s)
    checker.set_reconcile(history.reconcile)
    return checker.findings()


# ------------------------------------------------------------------------------------------- a random session
PARTITIONS = ("orders-0", "orders-1", "orders-2", "out-0")
PRODUCERS = ("A", "B", "C")
CONSUMERS = {"rc": "read_committed", "rc2": "read_committed", "ru": "read_uncommitted", "feed": "read_committed"}
ERRORS = ("PRODUCER_FENCED", "_TIMED_OUT", "INVALID_TXN_STATE")


class Session:
    """A random history as a session hands it to the checker: steps, and the log entries each one wrote. Not a
    faithful Kafka: the checker takes any history, and odd ones (a failed commit that committed anyway, a poll of a
    record not in the log yet) are where judgments go wrong."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.logs: dict[str, list[dict[str, Any]]] = {tp: [] for tp in PARTITIONS}
        self.open: dict[str, set[str]] = {}  # producer -> partitions of its open transaction
        self.hanging: dict[str, set[str]] = {}  # of producers that crashed: aborted later, at a timeout
        self.steps: list[HistoryStep] = []
        self.pids = {p: i + 1 for i, p in enumerate(PRODUCERS)}

    def _append(self, tp: str, entry: dict[str, Any]) -> None:
        self.logs[tp].append({"offset": len(self.logs[tp]), **entry})

    def _marker(self, producer: str, kind: str, txns: dict[str, set[str]] | None = None) -> None:
        for tp in sorted((self.open if txns is None else txns).pop(producer, set())):
            self._append(tp, {"control": kind, "producer_id": self.pids[producer]})

    def step(self) -> HistoryStep:
        rng, n = self.rng, len(self.steps)
        roll = rng.random()
        actor = rng.choice(PRODUCERS)
        args: dict[str, Any] = {}
        outcome = "ok"
        extra: dict[str, Any] = {}
        if self.hanging and rng.random() < 0.05:
            self._marker(rng.choice(sorted(self.hanging)), "ABORT", self.hanging)
        if roll < 0.12:
            action = "begin_transaction"
            if actor not in self.open:
                self.open[actor] = set()
        elif roll < 0.45:
            action = "produce"
            tp = rng.choice(PARTITIONS)
            args = {"topic": tp.rpartition("-")[0], "value": f"v{rng.randrange(6)}"}
            if rng.random() < 0.1:
                args["from"] = "feed"
            if rng.random() < 0.15:
                outcome = rng.choice(ERRORS)
            transactional = actor in self.open
            # a failed produce may have landed anyway, one that returned ok may never land
            if rng.random() < (0.9 if outcome == "ok" else 0.3):
                entry = {"value": args["value"], "producer_id": self.pids[actor], "transactional": transactional}
                self._append(tp, entry)
                if transactional:
                    self.open[actor].add(tp)
        elif roll < 0.57:
            action = "commit_transaction"
            if rng.random() < 0.2:
                outcome = rng.choice(ERRORS)
            if outcome == "ok":
                fate: str | None = "COMMIT" if rng.random() < 0.9 else "ABORT"  # aborted by a fence behind its back
            else:
                fate = "COMMIT" if rng.random() < 0.2 else rng.choice(["ABORT", None])
            if fate is not None:
                self._marker(actor, fate)
        elif roll < 0.62:
            action = "abort_transaction"
            self._marker(actor, "ABORT")
        elif roll < 0.64:
            action = rng.choice(["crash", "restart", "close", "transaction_failed"])
            if rng.random() < 0.5:
                self._marker(actor, "ABORT")
            elif actor in self.open:
                self.hanging.setdefault(actor, set()).update(self.open.pop(actor))
        elif roll < 0.66:
            actor, action = "net", "late_write"
            args = {"actor": rng.choice(PRODUCERS), "of": f"v{rng.randrange(6)}", "value": f"v{rng.randrange(6)}"}
        elif roll < 0.67:
            action = "send_offsets_to_transaction"
            args = {"consumer": "feed"}
        else:
            actor, action = rng.choice(sorted(CONSUMERS)), "poll"
            got = []
            for _ in range(rng.randrange(4)):
                tp = rng.choice(PARTITIONS)
                # mostly the latest records, sometimes an old one again (a seek), sometimes one past the log
                end = len(self.logs[tp])
                offset = rng.choice([max(0, end - rng.randrange(1, 4)), rng.randrange(end + 1), end + 1])
                got.append([tp, offset])
            if got:
                extra["read"] = got
                if rng.random() < 0.7:
                    extra["lso"] = {tp: len(self.logs[tp]) - rng.randrange(3) for tp, _o in got}
        s: HistoryStep = {"n": n, "actor": actor, "action": action, "args": args, "outcome": outcome, **extra}
        self.steps.append(s)
        return s


def fed(checkers: list[Checker], session: Session, commands: int) -> Iterator[list[list[Finding]]]:
    """Feed the checkers as a session does: the log entries so far (sometimes late: a poll may read past them),
    then the step; their findings after each."""
    for _ in range(commands):
        s = session.step()
        if session.rng.random() < 0.9:
            for c in checkers:
                for tp, log in session.logs.items():
                    c.add_log(tp, log)
        for c in checkers:
            c.add_step(s)
        yield [c.findings() for c in checkers]


def test_it_finds_after_every_command_what_the_checker_judging_everything_again_finds():
    seen: set[str] = set()
    capped: set[str] = set()  # sentences that said "and N more"
    for seed in range(1, 5):
        session = Session(random.Random(seed))
        incremental, reference = Checker(CONSUMERS), Reference(CONSUMERS)
        for found, expected in fed([incremental, reference], session, 3000):
            assert found == expected, f"seed {seed}, step {session.steps[-1]}"
            seen |= {f.kind for f in found}
            capped |= {f.kind for f in found if any(v for k, v in f.params.items() if k.endswith("_more"))}
    # the sessions are busy enough to say every sentence about writes and reads, and to say "and N more"
    assert seen >= {
        "lost",
        "aborted_told",
        "told_failed_visible",
        "aborted_visible",
        "aborted_read",
        "undecided_read",
        "redelivered",
        "written_twice",
    }
    assert capped >= {"lost", "aborted_told", "written_twice"}


@pytest.mark.parametrize("seed", [5, 6])
def test_it_checks_a_whole_history_as_the_reference_does(seed):
    session = Session(random.Random(seed))
    for _ in range(2000):
        session.step()
    for client in ("librdkafka", JAVA):
        history = History(session.steps, session.logs, CONSUMERS, client=client)
        found = anomalies.check(history)
        assert found and found == reference_check(history)
        assert [f.text for f in found] == [f.text for f in reference_check(history)]


# ------------------------------------------------------------------------------------ work per command
def cycle_session(commands: int) -> Iterator[tuple[dict[str, list[dict[str, Any]]], HistoryStep]]:
    """tools/bench/sharing.py's CYCLE: begin, produce v0-v2 to orders partitions 0-2, commit, a read_committed poll;
    each command with the log entries it wrote."""
    ends = {f"orders-{p}": 0 for p in range(3)}
    for n in range(commands):
        logs: dict[str, list[dict[str, Any]]] = {}
        i = (n - 1) % 6
        args: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        if n == 0:
            action = "init_transactions"
        elif i == 0:
            action = "begin_transaction"
        elif i <= 3:
            action, tp = "produce", f"orders-{i - 1}"
            args = {"topic": "orders", "partition": str(i - 1), "value": f"v{i - 1}"}
            logs[tp] = [{"offset": ends[tp], "value": args["value"], "producer_id": 1, "transactional": True}]
            ends[tp] += 1
        elif i == 4:
            action = "commit_transaction"
            for tp in ends:
                logs[tp] = [{"offset": ends[tp], "control": "COMMIT", "producer_id": 1}]
                ends[tp] += 1
        else:
            action = "poll"
            extra = {"read": [[tp, end - 2] for tp, end in ends.items()], "lso": dict(ends)}
        actor = "rc" if action == "poll" else "A"
        yield logs, {"n": n, "actor": actor, "action": action, "args": args, "outcome": "ok", **extra}


def lines_run(checker: Checker, logs: dict[str, list[dict[str, Any]]], s: HistoryStep) -> int:
    """Lines of the checker run to feed it one command and ask for its findings (loop iterations count: a line run
    again is counted again)."""
    count = 0
    source = anomalies.__file__

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == source else None

    sys.settrace(calls)
    try:
        for tp, entries in logs.items():
            checker.add_log(tp, entries)
        checker.add_step(s)
        checker.findings()
    finally:
        sys.settrace(None)
    return count


def test_it_does_the_same_work_per_command_at_command_10_and_at_10000():
    checker = Checker({"rc": "read_committed"})
    window = 60  # ten cycles
    work: dict[int, int] = {10: 0, 1000: 0, 10_000 - window: 0}
    for logs, s in cycle_session(10_000):
        start = next((w for w in work if w <= s["n"] < w + window), None)
        if start is None:
            for tp, entries in logs.items():
                checker.add_log(tp, entries)
            checker.add_step(s)
            checker.findings()
        else:
            work[start] += lines_run(checker, logs, s)
    found = checker.findings()
    assert [f.kind for f in found] == ["written_twice"] * 3
    assert found[0].params["count"] == 1666 and found[0].params["records_more"] == 1666 - LISTED_MAX
    early, middle, late = work.values()
    assert late <= middle <= early * 1.3
