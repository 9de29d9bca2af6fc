"""The anomaly checker's rules, each on hand-made histories that have the anomaly and ones that do not; and every
library scenario checked: the incident's lost writes, the fix's none."""

from __future__ import annotations

import pytest

from playground.scenario import load_library, run_scenario
from playground.scenario.anomalies import History, check, fates_of, history_of_run
from tests.test_scenario_library import LIBRARY


def _log(*entries):
    return [dict(offset=i, **e) for i, e in enumerate(entries)]


def data(value, pid=1, transactional=True):
    return {"value": value, "producer_id": pid, "transactional": transactional}


def marker(kind, pid=1):
    return {"control": kind, "producer_id": pid}


def produce(n, value, actor="A", outcome="ok", topic="orders"):
    return {"n": n, "actor": actor, "action": "produce", "args": {"topic": topic, "value": value}, "outcome": outcome}


def step(n, actor, action, outcome="ok", **extra):
    return {"n": n, "actor": actor, "action": action, "args": {}, "outcome": outcome, **extra}


def rules(history):
    return sorted(f.rule for f in check(history))


def test_it_reads_fates_from_the_markers_alone():
    log = {
        "orders-0": _log(
            data("a"), data("p", pid=2, transactional=False), marker("ABORT"), data("b"), marker("COMMIT"), data("c")
        )
    }
    assert fates_of(log) == {
        ("orders-0", 0): "aborted",
        ("orders-0", 1): "plain",
        ("orders-0", 3): "committed",
        ("orders-0", 5): "open",
    }


def test_it_finds_a_write_the_app_was_told_succeeded_and_that_was_aborted_or_never_landed():
    steps = [
        step(0, "A", "begin_transaction"),
        produce(1, "a-1"),
        produce(2, "a-2"),
        step(3, "A", "commit_transaction", "_FENCED"),
    ]
    lost = History(steps, {"orders-0": _log(data("a-1"), marker("ABORT"))}, {})
    findings = check(lost)
    assert [f.rule for f in findings] == ["lost-write", "lost-write"] and findings[0].anomaly == "lost update"
    assert "orders-0@0 (aborted)" in findings[0].text and "_FENCED" in findings[0].text
    assert "in no partition's log" in findings[1].text and findings[1].steps == (2,)
    ok = History(
        [*steps[:3], step(3, "A", "commit_transaction")],
        {"orders-0": _log(data("a-1"), data("a-2"), marker("COMMIT"))},
        {},
    )
    assert check(ok) == []


def test_it_does_not_count_a_transaction_the_app_aborted_itself_or_a_producer_that_died():
    aborted = [step(0, "A", "begin_transaction"), produce(1, "a-1"), step(2, "A", "abort_transaction")]
    crashed = [step(0, "A", "begin_transaction"), produce(1, "a-1"), step(2, "A", "crash")]
    log = {"orders-0": _log(data("a-1"), marker("ABORT"))}
    assert check(History(aborted, log, {})) == [] and check(History(crashed, log, {})) == []


def test_it_finds_a_write_the_app_was_told_failed_that_became_visible():
    steps = [produce(0, "p-1", outcome="_MSG_TIMED_OUT")]
    visible = History(steps, {"orders-0": _log(data("p-1", transactional=False))}, {})
    assert rules(visible) == ["failed-write-visible"]
    assert rules(History(steps, {"orders-0": []}, {})) == []


def test_it_finds_a_send_of_an_aborted_transaction_that_a_late_write_got_committed_but_not_one_sent_again():
    aborted = [
        step(0, "A", "begin_transaction"),
        produce(1, "a-1"),
        step(2, "A", "abort_transaction"),
        step(3, "A", "begin_transaction"),
        produce(4, "b-1"),
    ]
    late = {
        "n": 5,
        "actor": "net",
        "action": "late_write",
        "args": {"actor": "A", "of": "a-1", "value": "a-2"},
        "outcome": "ok",
    }
    log = {"orders-0": _log(data("a-1"), marker("ABORT"), data("b-1"), data("a-2"), marker("COMMIT"))}
    (finding,) = check(History([*aborted, late, step(6, "A", "commit_transaction")], log, {}))
    assert finding.rule == "failed-write-visible" and finding.steps == (5,) and finding.records == ("orders-0@3",)
    assert "A aborted the transaction its send of 'a-2' belonged to" in finding.text
    refused = {**late, "outcome": "INVALID_PRODUCER_EPOCH"}
    log_refused = {"orders-0": _log(data("a-1"), marker("ABORT"), data("b-1"), marker("COMMIT"))}
    assert check(History([*aborted, refused, step(6, "A", "commit_transaction")], log_refused, {})) == []
    # the application aborts, then sends the same value again and commits it: what it believes, no finding
    again = [*aborted[:3], step(3, "A", "begin_transaction"), produce(4, "a-1"), step(5, "A", "commit_transaction")]
    assert (
        check(History(again, {"orders-0": _log(data("a-1"), marker("ABORT"), data("a-1"), marker("COMMIT"))}, {})) == []
    )


def test_it_finds_aborted_and_undecided_reads_only_for_read_committed():
    log = {"orders-0": _log(data("a-1"), marker("ABORT"), data("b-1", pid=2))}
    reads = [
        step(0, "rc", "poll", read=[["orders-0", 0]]),
        step(1, "rc", "poll", read=[["orders-0", 2]], lso={"orders-0": 2}),
    ]
    history = History(reads, log, {"rc": "read_committed"})
    found = check(history)
    assert [(f.rule, f.anomaly) for f in found] == [("aborted-read", "G1a"), ("undecided-read", "G1b")]
    assert check(History(reads, log, {"rc": "read_uncommitted"})) == []
    assert (
        check(
            History([step(1, "rc", "poll", read=[["orders-0", 2]], lso={"orders-0": 3})], log, {"rc": "read_committed"})
        )
        == []
    )


def test_it_finds_duplicates_delivered_to_a_sink_but_not_a_transforms_input():
    log = {"out-0": _log(data("m-1", transactional=False), data("m-1", transactional=False))}
    redelivered = [
        step(0, "sink", "poll", read=[["out-0", 0]]),
        step(1, "sink", "seek_to_committed"),
        step(2, "sink", "poll", read=[["out-0", 0]]),
    ]
    assert rules(History(redelivered, log, {"sink": "read_committed"})) == ["duplicate"]
    twice = [step(0, "sink", "poll", read=[["out-0", 0], ["out-0", 1]])]
    (finding,) = check(History(twice, log, {"sink": "read_committed"}))
    assert "from 2 records" in finding.text
    transform = [
        *redelivered,
        {"n": 3, "actor": "P", "action": "produce", "args": {"topic": "x", "from": "sink"}, "outcome": "ok"},
    ]
    assert check(History(transform, log, {"sink": "read_committed"})) == []


def test_it_finds_the_database_and_kafka_disagreeing_in_the_reconciliation():
    rec = {"columns": ["id", "status", "audited", "delivered"], "rows": [[1, "paid", 1, 1], [2, "paid", 1, 0]]}
    (finding,) = check(History([], {}, {}, rec))
    assert finding.rule == "divergence" and "id=2" in finding.text and "delivered" in finding.text
    assert check(History([], {}, {}, {"columns": ["id", "delivered"], "rows": [[1, 1]]})) == []


@pytest.mark.parametrize("scenario", load_library(LIBRARY), ids=lambda s: s.id)
def test_it_finds_in_every_library_scenario_what_it_declares_and_nothing_else(scenario):
    record: list = []
    observation = run_scenario(scenario, "sim", record=record)
    found = check(history_of_run(scenario, record, observation))
    never = [f for f in found if f.rule in ("aborted-read", "undecided-read")]
    assert never == [], never  # a correct cluster (the simulator) never lets read_committed read these
    # Each scenario declares what its story shows (expect.anomalies); the others must come out clean.
    assert sorted({f.rule for f in found}) == (scenario.expect or {}).get("anomalies", []), [str(f) for f in found]
