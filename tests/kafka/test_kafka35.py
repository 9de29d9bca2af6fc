"""Kafka 3.5 on a real cluster (issue 20): what a late write leaves there, found as `kafka-transactions.sh
find-hanging` finds it (the inspector) and ended as its `abort` ends it (the step broker.abort_transaction). Marked
kafka35: tools/test.sh runs these on a 3.5 cluster started once the 3.9 and 4.x ones are stopped."""

from __future__ import annotations

import time

import pytest

from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, ClusterSpec, Profile, Step, TopicSpec
from playground.inspector import forget_inspectors, get_inspector
from playground.kafka.backend import KafkaBackend
from tests.kafka.conftest import require_bootstrap

pytestmark = [pytest.mark.kafka, pytest.mark.kafka35]

WAIT_S = 30.0  # a cap, never a duration the test relies on


@pytest.mark.parametrize("client", ["java", "librdkafka"])
def test_it_finds_the_hanging_transaction_a_late_write_leaves_on_kafka_3_5_and_aborts_it(client, settings):
    bootstrap = require_bootstrap("3.5")
    cluster = ClusterSpec(brokers=1, topics=(TopicSpec("payments", 1),))
    actors = {
        "pay": ActorSpec("pay", PRODUCER, {"transactional.id": "payment-writer"}),
        "rc": ActorSpec("rc", CONSUMER, {"isolation.level": "read_committed"}, ("payments",)),
    }
    b = KafkaBackend(cluster, actors, profile=Profile("3.5", client), settings={"bootstrap": bootstrap})
    try:
        steps = [
            Step("pay", "init_transactions"),
            Step("pay", "begin_transaction"),
            Step("pay", "produce", {"topic": "payments", "partition": 0, "value": "a-1"}),
            Step("pay", "abort_transaction"),
            Step("net", "late_write", {"actor": "pay", "of": "a-1", "value": "a-2"}),
        ]
        assert [b.apply(s) for s in steps] == ["ok"] * 5  # Kafka 3.5.2 appends it: no verification before 3.6
        part = b.observe()["partitions"]["payments-0"]
        assert (part["high_watermark"], part["last_stable_offset"]) == (3, 2)
        topic = b.prefix + "payments"
        forget_inspectors()
        insp = get_inspector(
            bootstrap=bootstrap,
            topics=[f"{b.prefix}*"],
            transactional_ids=[f"{b.prefix}*"],
            max_transaction_timeout_ms=500,
        )
        deadline = time.monotonic() + WAIT_S
        found: list = []
        while not found and time.monotonic() < deadline:
            found = insp.find_hanging([topic])
            time.sleep(0.2)
        [h] = found
        # hanging by find-hanging's own definition: the coordinator has no transaction of it holding the partition
        assert h["verdict"] == "hanging" and h["current_txn_start_offset"] == 2
        assert h["command_start_offset"].endswith(f"abort --topic {topic} --partition 0 --start-offset 2")
        assert b.apply(Step("broker", "abort_transaction", {"partition": "payments-0"})) == "ok"
        part = b.observe()["partitions"]["payments-0"]
        assert (part["high_watermark"], part["last_stable_offset"]) == (4, 4)
        assert insp.find_hanging([topic]) == []
    finally:
        forget_inspectors()
        b.close()
