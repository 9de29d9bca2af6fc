"""The anomaly checker's rules, each on hand-made histories that have the anomaly and ones that do not; and every
library scenario checked: the incident's lost writes, the fix's none."""

from __future__ import annotations

import pytest

from playground.scenario import load_library, run_scenario
from playground.scenario.anomalies import Checker, History, check, fates_of, history_of_run
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
        step(3, "A", "commit_transaction"),
        produce(4, "p-1", actor="P"),
    ]
    lost = History(steps, {"orders-0": _log(data("a-1"), marker("ABORT"))}, {})
    findings = check(lost)
    assert [f.rule for f in findings] == ["lost-write", "lost-write", "lost-write"]
    assert findings[0].anomaly == "lost update" and findings[0].steps == (1,)
    assert "orders-0@0 (aborted)" in findings[0].text
    assert "produce() returned ok, and commit_transaction() returned ok" in findings[0].text
    assert "in no partition's log" in findings[1].text and findings[1].steps == (2,)
    assert findings[2].steps == (4,) and "(produce() returned ok)" in findings[2].text  # a plain send: no commit
    ok = History(
        steps[:4],
        {"orders-0": _log(data("a-1"), data("a-2"), marker("COMMIT"))},
        {},
    )
    assert check(ok) == []


def test_it_says_a_write_the_app_was_told_failed_at_commit_or_at_produce_was_aborted_and_told_not_lost():
    fenced = [
        step(0, "A", "begin_transaction"),
        produce(1, "a-1"),
        produce(2, "a-2"),
        step(3, "A", "commit_transaction", "_FENCED"),
    ]
    (finding,) = check(History(fenced, {"orders-0": _log(data("a-1"), marker("ABORT"))}, {}))
    assert finding.rule == "aborted-told" and finding.notice and finding.anomaly is None
    assert finding.steps == (1, 2, 3)
    assert finding.text == (
        "A's sends of 'a-1', 'a-2' to orders were aborted, and the application was told at step 4 "
        "(commit_transaction() returned _FENCED): orders-0@0 (aborted)"
    )
    # told at a produce of the transaction: the first error is the step that told it
    told_at_produce = [*fenced[:2], produce(2, "a-2", outcome="_FENCED"), step(3, "A", "commit_transaction", "_FENCED")]
    (finding,) = check(History(told_at_produce, {"orders-0": _log(data("a-1"), marker("ABORT"))}, {}))
    assert finding.params["k"] == 3 and "produce() returned _FENCED" in finding.text


def test_it_judges_a_transaction_only_once_the_application_knows_how_it_ended():
    log = {"orders-0": _log(data("a-1"), marker("ABORT"))}  # fenced away before its producer commits
    still_open = [step(0, "A", "begin_transaction"), produce(1, "a-1")]
    assert check(History(still_open, log, {})) == []
    # a told transaction whose record is still open (not aborted yet) is not judged either
    told = [*still_open, step(2, "A", "commit_transaction", "_FENCED")]
    assert check(History(told, {"orders-0": _log(data("a-1"))}, {})) == []
    assert rules(History(told, log, {})) == ["aborted-told"]


def test_it_names_the_java_clients_calls_in_a_java_session():
    steps = [
        step(0, "A", "begin_transaction"),
        produce(1, "a-1"),
        {**produce(2, "a-2"), "args": {"topic": "orders", "value": "a-2", "await": False}},
        step(3, "A", "commit_transaction", "ProducerFencedException"),
        produce(4, "p-1", actor="P"),
    ]
    found = check(History(steps, {"orders-0": _log(data("a-1"), marker("ABORT"))}, {}, client="java"))
    assert [f.rule for f in found] == ["lost-write", "aborted-told"]
    assert "(send().get() returned)" in found[0].text and "produce()" not in found[0].text
    assert "commitTransaction() threw ProducerFencedException" in found[1].text


def test_it_finds_the_same_incrementally_as_over_the_whole_history_at_every_step():
    """The session's checker is fed command by command (and the logs as they grow): after each, what it finds is
    what a check of the history so far finds."""
    logs = {
        "orders-0": _log(
            data("a-1"), data("p-1", pid=2, transactional=False), marker("ABORT"), data("a-1"), marker("COMMIT")
        )
    }
    steps = [
        step(0, "A", "begin_transaction"),
        produce(1, "a-1"),
        produce(2, "p-1", actor="P"),
        step(3, "A", "commit_transaction", "_FENCED"),
        step(4, "rc", "poll", read=[["orders-0", 0], ["orders-0", 1]]),
        step(5, "A", "begin_transaction"),
        produce(6, "a-1"),
        step(7, "A", "commit_transaction"),
        step(8, "rc", "seek_to_committed"),
        step(9, "rc", "poll", read=[["orders-0", 1], ["orders-0", 3]]),
    ]
    log_at = [1, 2, 2, 3, 3, 3, 4, 5, 5, 5]  # how much of the log exists once each step ran
    checker = Checker({"rc": "read_committed"})
    for i, s in enumerate(steps):
        checker.add_log("orders-0", logs["orders-0"][: log_at[i]])
        checker.add_step(s)
        so_far = History(steps[: i + 1], {"orders-0": logs["orders-0"][: log_at[i]]}, {"rc": "read_committed"})
        assert checker.findings() == check(so_far), i
    assert {f.rule for f in checker.findings()} == {"aborted-told", "aborted-read", "duplicate"}


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


def test_it_matches_a_long_value_written_whole_to_the_log_with_its_short_stand_in_in_the_history():
    from playground.engine.values import identity

    long_a, long_b = "x" * 100_000 + "a", "x" * 100_000 + "b"  # the same start, the same length
    steps = [
        step(0, "A", "begin_transaction"),
        produce(1, identity(long_a)),  # what an application's history keeps
        produce(2, identity(long_b)),
        step(3, "A", "commit_transaction"),
    ]
    log = {"orders-0": _log(data(long_a), data(long_b), marker("COMMIT"))}
    assert rules(History(steps, log, {})) == []
    lost = {"orders-0": _log(data(long_a), marker("COMMIT"))}  # b never landed: lost, and named by its stand-in
    findings = check(History(steps, lost, {}))
    assert [f.rule for f in findings] == ["lost-write"] and "sha256" in findings[0].text
    assert identity(identity(long_a)) == identity(long_a) != identity(long_b)
