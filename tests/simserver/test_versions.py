"""Every version the simulated cluster advertises is answered: for each release, each API it serves and each version
in the release's range, a minimal valid request (tests/simserver/versions.py) gets an answer of that very version,
read whole, from a handler that did not fail; the only connections closed are those Kafka closes (Kafka 4's Produce
v0-2, advertised for librdkafka and refused, KAFKA-18659). tests/kafka/test_kafka_versions.py asks the real brokers
the same and compares the answers' error codes."""

from __future__ import annotations

import functools

import pytest

from playground.protocol import apiversions, messages
from tests.simserver import versions

# answers a broker gives these minimal requests whatever their version (a heartbeat of a member nobody knows, ...),
# and the UNSUPPORTED_VERSION of KRaft to OffsetCommit and OffsetFetch v0 (they used ZooKeeper)
EXPECTED = {
    "UNKNOWN_MEMBER_ID",
    "MEMBER_ID_REQUIRED",
    "GROUP_ID_NOT_FOUND",
    "INVALID_PARTITIONS",
}
KRAFT_HAS_NO_ZOOKEEPER = {(8, 0), (9, 0)}


@functools.cache
def _answers(kafka: str) -> tuple[list[versions.Answer], list[str]]:
    target = versions.CoreTarget(kafka)
    answers = versions.exchange(target, kafka)
    return answers, list(target.core.failures)


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_it_answers_every_version_it_advertises_with_an_answer_of_that_version(kafka):
    answers, failures = _answers(kafka)
    assert failures == []
    asked = {(a.api_key, a.version) for a in answers}
    table = apiversions.advertised(kafka, versions.HANDLERS)
    assert asked == {(key, v) for key, (lo, hi) in table.items() for v in range(lo, hi + 1)}
    refused = {(key, v) for key, (lo, hi) in apiversions.REFUSED[kafka].items() for v in range(lo, hi + 1)}
    for answer in answers:
        key = (answer.api_key, answer.version)
        if key in refused:
            assert answer.body == versions.CLOSED, key
            continue
        assert answer.body != versions.CLOSED, key
        assert type(answer.body) is messages.response_class(*key), key  # (ApiVersions v5 answers with v4's body)
        unexpected = {e.upper() for e in answer.errors} - EXPECTED
        if key in KRAFT_HAS_NO_ZOOKEEPER:
            assert unexpected == {"UNSUPPORTED_VERSION"}, key
        else:
            assert unexpected == set(), (key, answer.body)


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_it_serves_the_apis_the_clients_of_issue_32_use(kafka):
    served = apiversions.advertised(kafka, versions.HANDLERS)
    for name, key in {"CreatePartitions": 37, "DeleteRecords": 21, "IncrementalAlterConfigs": 44}.items():
        assert served[key] == apiversions.API_KEYS[kafka][key], name
    assert served[47] == apiversions.API_KEYS[kafka][47]  # OffsetDelete
    assert served[60] == apiversions.API_KEYS[kafka][60]  # DescribeCluster


def _produce_too_old(advertised: dict[int, tuple[int, int]], client_max: int) -> bool:
    """franz-go's errBrokerTooOld for a Produce: the broker's lowest version is above what the client may send."""
    return advertised[0][0] > client_max


@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_it_leaves_franz_gos_broker_too_old_check_nothing_to_fail_as_the_real_release_does(kafka):
    # TestIssueProduceBrokerTooOldFailsRecords pins Produce low and skips unless the broker's minimum is above it:
    # Kafka 3.9.1 and 4.4.0 both advertise Produce from v0, and so does the simulated cluster of each now
    advertised = apiversions.advertised(kafka, versions.HANDLERS)
    assert advertised[0] == apiversions.API_KEYS[kafka][0]
    assert not _produce_too_old(advertised, client_max=2)
    assert not _produce_too_old(dict(apiversions.API_KEYS[kafka]), client_max=2)


@pytest.mark.parametrize(("kafka", "errors"), [("3.5", ["concurrent_transactions"]), ("3.9", []), ("4", [])])
def test_it_keeps_an_abort_on_a_one_replica_topic_below_min_isr_waiting_on_kafka_3_5_only(kafka, errors):
    """The exchange's transaction holds a partition of a one-replica topic on three brokers with min.insync.replicas
    2, as the real clusters: Kafka 3.5 refuses its ABORT marker (NOT_ENOUGH_REPLICAS, retried), so the second
    EndTxn is still told CONCURRENT_TRANSACTIONS a minute later; from 3.7 the min ISR is the replica count, 1."""
    answers = {
        (a.api_key, a.version): a.errors for a in versions.exchange(versions.CoreTarget(kafka, brokers=3), kafka)
    }
    assert answers[(26, 0)] == []
    assert answers[(26, 1)] == errors
