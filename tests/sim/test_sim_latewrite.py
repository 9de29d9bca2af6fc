"""`net.late_write` on the simulator (playground/sim/latewrite.py): a Produce request of an earlier transaction,
delivered late to the partition leader, whose checks decide its fate. Every expectation here was measured on real
brokers (Kafka 3.9.1 and 4.4.0, tests/kafka/test_kafka_latewrite.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from playground.engine.backend import BackendError
from playground.engine.spec import CONSUMER, DEFAULT_PROFILE, PRODUCER, ActorSpec, ClusterSpec, Profile, Step, TopicSpec
from playground.scenario import parse_scenario, run_scenario
from playground.scenario.model import ScenarioError
from playground.sim import latewrite
from playground.sim.driver import SimBackend

TXID = "payment-writer"


def backend(profile: Profile = DEFAULT_PROFILE) -> SimBackend:
    spec = ClusterSpec(brokers=3, config={}, topics=(TopicSpec("payments", 1),))
    actors = {
        "pay": ActorSpec("pay", PRODUCER, {"transactional.id": TXID}),
        "rc": ActorSpec("rc", CONSUMER, {"isolation.level": "read_committed"}, ("payments",)),
    }
    return SimBackend(spec, actors, profile=profile)


def run(b: SimBackend, *steps) -> list[str]:
    out = []
    for step in steps:
        label, args = (step, {}) if isinstance(step, str) else step
        actor, action = label.split(".")
        out.append(b.apply(Step(actor, action, args)))
    return out


def produce(value: str) -> tuple[str, dict]:
    return ("pay.produce", {"topic": "payments", "partition": 0, "value": value})


def late(value: str, of: str = "a-1") -> tuple[str, dict]:
    return ("net.late_write", {"actor": "pay", "of": of, "value": value})


def log_of(b: SimBackend) -> list:
    return [(e.get("value") or e.get("control"), e["epoch"]) for e in b.observe()["partitions"]["payments-0"]["log"]]


FIRST_TXN = ("pay.init_transactions", "pay.begin_transaction", produce("a-1"))


@pytest.mark.parametrize(
    "profile, refused",
    [
        (Profile("3.9", "librdkafka"), "INVALID_TXN_STATE"),  # Produce v10: TRANSACTION_ABORTABLE translated
        (Profile("3.9", "java"), "TRANSACTION_ABORTABLE"),  # Produce v11 (genericError): as it is
        (Profile("4", "librdkafka"), "INVALID_TXN_STATE"),  # classic protocol on 4.x: same verification
        (Profile("4", "java"), "INVALID_PRODUCER_EPOCH"),  # TV2: the abort bumped the epoch
    ],
)
def test_it_refuses_a_late_write_that_arrives_between_transactions(profile, refused):
    b = backend(profile)
    outcomes = run(b, *FIRST_TXN, "pay.abort_transaction", late("a-2"))
    assert outcomes[-1] == refused
    obs = b.observe()
    assert [e.get("value") or e.get("control") for e in obs["partitions"]["payments-0"]["log"]] == ["a-1", "ABORT"]
    marks = obs["partitions"]["payments-0"]
    assert marks["last_stable_offset"] == marks["high_watermark"] == 2  # no hanging transaction


@pytest.mark.parametrize("profile", [Profile("3.9", "librdkafka"), Profile("3.9", "java"), Profile("4", "librdkafka")])
def test_it_lets_a_late_write_join_the_next_transaction_at_the_same_epoch(profile):
    b = backend(profile)
    outcomes = run(
        b,
        *FIRST_TXN,
        "pay.abort_transaction",
        "pay.begin_transaction",
        produce("b-1"),
        late("a-3"),
        "pay.commit_transaction",
        "rc.poll",
    )
    assert outcomes[-3] == "ok"
    assert log_of(b) == [("a-1", 0), ("ABORT", 0), ("b-1", 0), ("a-3", 0), ("COMMIT", 0)]
    assert b.observe()["consumers"]["rc"]["payments-0"] == ["b-1", "a-3"]


def test_it_refuses_a_late_write_of_an_earlier_epoch_under_transaction_protocol_v2():
    b = backend(Profile("4", "java"))
    outcomes = run(
        b,
        *FIRST_TXN,
        "pay.commit_transaction",
        "pay.begin_transaction",
        produce("b-1"),
        late("a-2"),
        "pay.commit_transaction",
        "rc.poll",
    )
    assert outcomes[-3] == "INVALID_PRODUCER_EPOCH"
    assert log_of(b) == [("a-1", 0), ("COMMIT", 1), ("b-1", 1), ("COMMIT", 2)]
    assert b.observe()["consumers"]["rc"]["payments-0"] == ["a-1", "b-1"]


def test_it_sends_the_next_sequence_the_leader_expects_and_the_producer_id_and_epoch_of_the_earlier_record():
    b = backend()
    run(b, *FIRST_TXN, "pay.commit_transaction", "pay.begin_transaction", produce("b-1"))
    error, info = latewrite.deliver(b.cluster, transactional_id=TXID, of="a-1", value="a-2", version=10, actor="pay")
    assert error is None
    batch = b.cluster.log("payments-0").batches[-1]
    assert (batch.values, batch.producer_id, batch.epoch, batch.base_sequence, batch.transactional) == (
        ("a-2",),
        info["producer_id"],
        0,
        2,
        True,
    )
    assert info["sequence"] == 2 and info["base_offset"] == batch.base_offset


def test_it_takes_the_sequence_after_the_earlier_record_when_the_leader_holds_another_epoch():
    assert latewrite.late_sequence(leader_epoch=1, leader_last_seq=-1, epoch=0, earlier_seq=0) == 1
    assert latewrite.late_sequence(leader_epoch=0, leader_last_seq=4, epoch=0, earlier_seq=0) == 5
    assert latewrite.late_sequence(leader_epoch=None, leader_last_seq=-1, epoch=0, earlier_seq=3) == 4


def test_it_waits_for_the_markers_of_the_transaction_that_just_ended():
    # abort_transaction returns once PrepareAbort is written, before the markers: the late write arrives after them
    b = backend()
    outcomes = run(b, *FIRST_TXN, "pay.abort_transaction", late("a-2"))
    assert outcomes[-1] == "INVALID_TXN_STATE"  # not NOT_ENOUGH_REPLICAS (CONCURRENT_TRANSACTIONS translated)


def test_it_shows_the_late_request_in_the_timeline_as_the_networks():
    b = backend()
    run(b, *FIRST_TXN, "pay.abort_transaction", late("a-2"))
    rpcs = [e for e in b.cluster.timeline if e.rpc == "Produce" and "late write" in (e.src + e.dst)]
    assert [r.direction for r in rpcs] == ["request", "response"]
    assert rpcs[1].error == "INVALID_TXN_STATE"


def test_it_is_an_error_when_the_earlier_record_is_not_in_the_log():
    b = backend()
    run(b, *FIRST_TXN)
    with pytest.raises(BackendError, match="no record 'zz'"):
        b.apply(Step("net", "late_write", {"actor": "pay", "of": "zz", "value": "x"}))


SCENARIO = """
format: 1
id: lw
title: lw
cluster: {topics: {t: {partitions: 1}}}
actors:
  P: {producer: {transactional.id: p}}
  Q: {producer: {}}
steps:
  - %s
"""


def test_it_reads_the_step_and_refuses_what_it_cannot_deliver():
    s = parse_scenario(SCENARIO % "net.late_write: {actor: P, of: a-1, value: a-2, expect: ok}")
    step = s.steps[0]
    assert (step.actor, step.action, dict(step.args), step.expect) == (
        "net",
        "late_write",
        {"actor": "P", "of": "a-1", "value": "a-2"},
        ("ok",),
    )
    for bad, message in [
        ("net.late_write: {actor: Q, of: a-1, value: a-2}", "transactional producer"),
        ("net.late_write: {actor: P, value: a-2}", "missing"),
        ("net.late_write: {actor: P, of: a-1, value: a-2, partition: 0}", "unknown argument 'partition'"),
        ("net.late_write", "missing"),
        ("net.hold: {actor: P}", "unknown action"),
    ]:
        with pytest.raises(ScenarioError, match=message):
            parse_scenario(SCENARIO % bad)


def test_it_round_trips_through_the_command_log_form():
    s = parse_scenario(SCENARIO % "net.late_write: {actor: P, of: a-1, value: a-2}")
    assert s.steps[0].to_dict() == {"net.late_write": {"actor": "P", "of": "a-1", "value": "a-2"}}


def test_it_is_deterministic():
    text = Path("scenarios/25-late-write-from-earlier-transaction.yaml").read_text()
    s = parse_scenario(text)
    assert run_scenario(s, "sim") == run_scenario(s, "sim")
