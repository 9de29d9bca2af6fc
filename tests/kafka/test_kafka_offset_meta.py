"""A committed offset's leader epoch and metadata as real brokers keep and answer them, next to the simulated
cluster of the same release (tests/simserver/offsetmeta.py: plain and transactional commits, metadata over
`offset.metadata.max.bytes`; plain commits beside a transaction's), with the same topic names, as Kafka 3.5's answers depend on them (KAFKA-16371:
playground/sim/groupoffsets.py, playground/sim/scalahash.py)."""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from playground.sim.scalahash import java_string_hash, scala_order, topic_partition_hash
from tests.kafka.conftest import require_bootstrap
from tests.simserver import offsetmeta, versions

pytestmark = pytest.mark.kafka
JARS_35 = Path(__file__).resolve().parents[2] / "tools" / "kafka" / ".jars-3.5.2"


def _both(kafka: str, topic: str, exchange: Callable = offsetmeta.exchange) -> tuple[dict, dict]:
    real = versions.SocketTarget(require_bootstrap(kafka))
    try:
        theirs = exchange(real, topic)
    finally:
        real.close()
    simulated = versions.CoreTarget(kafka, brokers=3)
    ours = exchange(simulated, topic)
    assert list(simulated.core.failures) == []
    return theirs, ours


@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_the_real_release_keeps_and_answers_what_each_commit_carried_as_the_simulator_does(kafka):
    theirs, ours = _both(kafka, f"offset-meta-{kafka.replace('.', '')}-{time.time_ns()}")
    assert ours == theirs
    assert theirs["fetched after v8"][0] == (0, 5, 3, "read up to 5", "none")  # what the simulator once left out


@pytest.mark.parametrize("kafka", ["3.9", "4", pytest.param("3.5", marks=pytest.mark.kafka35)])
def test_the_record_written_last_wins_at_the_commit_marker_as_in_the_simulator(kafka):
    theirs, ours = _both(kafka, f"offset-mixed-{kafka.replace('.', '')}-{time.time_ns()}", offsetmeta.mixed)
    assert ours == theirs
    assert theirs["fetched after the transaction"][0][1] == 20  # what the simulator once answered 11 for


@pytest.mark.parametrize("kafka", ["3.9", "4", pytest.param("3.5", marks=pytest.mark.kafka35)])
def test_an_offset_delete_takes_the_pending_transactional_offset_too_as_in_the_simulator(kafka):
    topic = f"offset-deleted-{kafka.replace('.', '')}-{time.time_ns()}"
    theirs, ours = _both(kafka, topic, offsetmeta.deleted_while_pending)
    assert ours == theirs
    assert theirs["fetched after the transaction"][0][1] == -1  # what the simulator once answered 11 for


@pytest.mark.parametrize("kafka", ["3.9", "4", pytest.param("3.5", marks=pytest.mark.kafka35)])
def test_a_commit_is_checked_in_kafkas_order_with_kafkas_errors_as_in_the_simulator(kafka):
    topic = f"offset-checks-{kafka.replace('.', '')}-{time.time_ns()}"
    theirs, ours = _both(kafka, topic, lambda target, name: offsetmeta.checks(target, name, kafka))
    assert ours == theirs
    # what the simulator once answered otherwise: 3.9 and 4 verify a TV1 transaction first
    assert theirs["txn, not added, generation 7"] == [
        (0, "unknown_member_id" if kafka == "3.5" else "invalid_txn_state")
    ]


@pytest.mark.kafka35
@pytest.mark.parametrize("walked_first", [0, 1])
def test_kafka_35_completes_a_transactions_offsets_up_to_the_never_written_one_as_the_simulator_does(walked_first):
    topic = offsetmeta.topic_walked_first(f"offset-meta-35-{time.time_ns()}", walked_first)
    theirs, ours = _both("3.5", topic)
    assert ours == theirs
    # what tells the two apart: partition 0's offset from the transaction, or the one from before it
    assert theirs["fetched after the transaction"][0][1] == (11 if walked_first == 0 else 6)
    assert theirs["fetched stable after v8"][1][-1] == "unstable_offset_commit"


@pytest.mark.kafka35
def test_the_walk_is_the_order_scala_2_13_iterates_kafka_35s_maps_in():
    # scala-library and kafka-clients as Kafka 3.5.2's broker runs them (tools/kafka.sh fetched them), asked through
    # jshell: the order of a mutable.HashMap of TopicPartitions, and of a mutable.HashSet of group ids
    rng = random.Random(35)
    cases = [(f"t{rng.getrandbits(40):x}-{n}", n) for n in (2, 3, 5, 11, 12, 13, 30)]
    groups = [f"group-{rng.getrandbits(32)}" for _ in range(14)]
    script = ["import org.apache.kafka.common.TopicPartition;"]
    for topic, n in cases:
        script.append(
            f"{{ var m = new scala.collection.mutable.HashMap<TopicPartition, Object>(); for (int p = 0; p < {n}; p++)"
            f' m.update(new TopicPartition("{topic}", p), p); var it = m.keysIterator(); var sb = new StringBuilder();'
            ' while (it.hasNext()) sb.append(" ").append(((TopicPartition) it.next()).partition());'
            ' System.out.println("order:" + sb); }'
        )
    names = ", ".join(f'"{g}"' for g in groups)
    script.append(
        f"{{ var s = new scala.collection.mutable.HashSet<String>(); for (String g : new String[]{{{names}}}) s.add(g);"
        ' var it = s.iterator(); var sb = new StringBuilder(); while (it.hasNext()) sb.append(" ").append(it.next());'
        ' System.out.println("order:" + sb); }'
    )
    script.append("/exit")
    jars = [*JARS_35.glob("kafka-clients-3.5.2.jar"), *JARS_35.glob("scala-library-2.13.*.jar")]
    assert len(jars) == 2, f"Kafka 3.5.2's jars not in {JARS_35}: `bash tools/kafka/kafka.sh fetch --version 3.5`"
    run = subprocess.run(
        ["jshell", "--class-path", ":".join(map(str, jars)), "-"],
        input="\n".join(script),
        capture_output=True,
        text=True,
        timeout=300,
    )
    printed = [line.removeprefix("order:").split() for line in run.stdout.splitlines() if line.startswith("order:")]
    expected = [
        [tp.rpartition("-")[2] for tp in scala_order([f"{t}-{p}" for p in range(n)], topic_partition_hash)]
        for t, n in cases
    ]
    expected.append(scala_order(groups, java_string_hash))
    assert printed == expected, run.stderr
