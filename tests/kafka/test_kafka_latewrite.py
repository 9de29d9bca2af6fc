"""`net.late_write` on real brokers (playground/kafka/latewrite.py): a transactional Produce request of an earlier
transaction, sent as raw bytes to the partition leader. What Kafka 3.9.1 and 4.4.0 do with it, and that the
simulator (playground/sim/latewrite.py) says the same, profile by profile.

Needs both test clusters (KAFKA_BOOTSTRAP_SERVERS: Kafka 3.9, KAFKA4_BOOTSTRAP_SERVERS: Kafka 4.x)."""

from __future__ import annotations

import time

import pytest

from playground.kafka.backend import KafkaBackend
from playground.kafka.latewrite import late_sequence, leader_producer_state, send_late_write
from playground.kafka.wire import WireClient
from playground.scenario import load_scenario, run_scenario
from playground.scenario.model import PROFILES
from tests.kafka.conftest import ROOT, require_bootstrap
from tests.kafkatopics import listed_everywhere

pytestmark = pytest.mark.kafka

SCENARIO = ROOT / "scenarios" / "25-late-write-from-earlier-transaction.yaml"


def _normalised(o: dict) -> dict:
    return {
        "steps": [(s["step"], s["outcome"]) for s in o["steps"]],
        "logs": {
            tp: [(e.get("value") or e.get("control"), e.get("producer"), e["epoch"]) for e in p["log"]]
            for tp, p in o["partitions"].items()
        },
        "marks": {tp: (p["high_watermark"], p["last_stable_offset"]) for tp, p in o["partitions"].items()},
        "consumers": o["consumers"],
        "transactions": o["transactions"],
        "profile": o["profile"],
    }


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: f"{p.kafka}-{p.client}")
def test_it_gives_each_late_write_the_same_fate_on_the_real_cluster_as_on_the_simulator(profile):
    require_bootstrap(profile.kafka)
    scenario = load_scenario(SCENARIO).for_profile(profile)
    real = run_scenario(
        scenario, KafkaBackend(scenario.cluster, scenario.actors, seed=scenario.seed, profile=profile), profile=profile
    )
    sim = run_scenario(scenario, "sim", profile=profile)
    assert real["expect"]["failed"] == 0, real["expect"]["failures"]
    assert _normalised(real) == _normalised(sim)
    late = [s["outcome"] for s in real["steps"] if s["step"] == "net.late_write"]
    # between transactions: refused (KIP-890 part 1 on the classic protocol, the epoch bump under v2), never a hang;
    # inside the next transaction at the same epoch: taken (classic protocol), refused (v2)
    expected = {
        ("3.9", "librdkafka"): ["INVALID_TXN_STATE", "ok"],
        ("3.9", "java"): ["TRANSACTION_ABORTABLE", "ok"],
        ("4", "librdkafka"): ["INVALID_TXN_STATE", "ok"],
        ("4", "java"): ["INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_EPOCH"],
    }[(profile.kafka, profile.client)]
    assert late == expected


@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_it_answers_a_replay_of_a_sequence_already_written_as_a_duplicate_and_writes_nothing(kafka):
    """Why the step takes the next sequence: a request whose sequence the leader has already seen (one of the last
    5 batches of that producer and epoch) is answered with the first one's offset (ProducerStateEntry
    .findDuplicateBatch), whatever it holds, so it could never show the transaction checks."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = require_bootstrap(kafka)
    topic = f"pg-latewrite-{int(time.time() * 1000)}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    listed_everywhere(bootstrap, {topic})  # the wire client below asks any one broker for the partition's leader
    wire = WireClient(bootstrap)
    try:
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(topic, value=b"a-1", partition=0)
        p.flush(30)
        p.commit_transaction(30)
        p.begin_transaction()
        p.produce(topic, value=b"b-1", partition=0)
        p.flush(30)
        _fp, entries = wire.read_log(topic, 0)
        a1, b1 = entries[0], entries[2]
        assert (a1.value, b1.value, a1.sequence, b1.sequence) == (b"a-1", b"b-1", 0, 1)
        # the duplicate: sequence 1 again (b-1's), other bytes
        dup = send_late_write(
            wire,
            topic=topic,
            partition=0,
            transactional_id=topic,
            producer_id=a1.producer_id,
            epoch=a1.epoch,
            sequence=1,
            value=b"a-2",
            version=10,
        )
        assert (dup.error, dup.base_offset) == (None, b1.offset)
        # the step's rule: the next sequence the leader expects (DescribeProducers), appended in the open transaction
        seq = late_sequence(leader_producer_state(wire, topic, 0, a1.producer_id), a1.epoch, a1.sequence)
        assert seq == 2
        taken = send_late_write(
            wire,
            topic=topic,
            partition=0,
            transactional_id=topic,
            producer_id=a1.producer_id,
            epoch=a1.epoch,
            sequence=seq,
            value=b"a-3",
            version=10,
        )
        assert (taken.error, taken.base_offset) == (None, b1.offset + 1)
        p.abort_transaction(30)
        deadline = time.monotonic() + 10
        while True:  # the ABORT marker follows EndTxn's answer
            _fp, entries = wire.read_log(topic, 0)
            if len(entries) >= 5 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert [e.control or e.value.decode() for e in entries] == ["a-1", "COMMIT", "b-1", "a-3", "ABORT"]
    finally:
        wire.close()
        admin.delete_topics([topic])
