"""A committed offset's leader epoch and metadata, kept and answered as Kafka keeps them (tests/simserver/offsetmeta.py
says what is asked; tests/kafka/test_kafka_offset_meta.py asks real brokers the same)."""

from __future__ import annotations

import pytest

from playground.sim.effects import Answer
from playground.sim.groups import TxnOffsetWrite
from playground.simserver.bounds import Bounds
from tests.simserver import offsetmeta, versions

TOO_LONG_NOW = (1, 9, 0, offsetmeta.TOO_LONG, "none")  # partition 1 after its second commit
UNSTABLE = "unstable_offset_commit"


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_it_answers_the_epoch_and_metadata_each_commit_carried(kafka):
    target = versions.CoreTarget(kafka)
    out = offsetmeta.exchange(target, "meta")
    assert list(target.core.failures) == []
    assert out["commit v8"] == [(0, "none"), (1, "offset_metadata_too_large")]
    assert out["fetched after v8"] == [(0, 5, 3, "read up to 5", "none"), (1, -1, -1, "", "none")]
    # a commit without an epoch and with null metadata leaves neither of the first commit's behind
    assert out["commit v5"] == [(0, "none")]
    assert out["commit v8 again"] == [(1, "none")]  # 2,049 characters: under the bound, whatever its bytes
    assert out["fetched after v5"] == [(0, 6, -1, "", "none"), TOO_LONG_NOW]


@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_it_forgets_a_partition_whose_metadata_was_too_large(kafka):
    out = offsetmeta.exchange(versions.CoreTarget(kafka), "meta")
    assert out["fetched stable after v8"] == [(0, 5, 3, "read up to 5", "none"), (1, -1, -1, "", "none")]
    assert out["fetched stable in the transaction"] == [(0, -1, -1, "", UNSTABLE), TOO_LONG_NOW]


def test_it_keeps_a_too_large_partition_pending_on_kafka_35_until_the_partition_is_committed_again():
    # KAFKA-16371: a read_committed consumer asking for partition 1 is told to wait until the next commit of it
    out = offsetmeta.exchange(versions.CoreTarget("3.5"), "meta")
    assert out["fetched stable after v8"] == [(0, 5, 3, "read up to 5", "none"), (1, -1, -1, "", UNSTABLE)]
    # until an OffsetDelete of the partition (or a commit of it that is written)
    assert out["offset delete"] == ["none", (1, "none")]
    assert out["fetched stable after the delete"] == [(0, 5, 3, "read up to 5", "none"), (1, -1, -1, "", "none")]
    assert out["fetched after v5"] == [(0, 6, -1, "", "none"), TOO_LONG_NOW]
    assert out["fetched stable in the transaction"] == [(0, -1, -1, "", UNSTABLE), (1, -1, -1, "", UNSTABLE)]


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_it_keeps_a_transactions_offsets_with_their_epoch_and_metadata_until_its_commit(kafka):
    # on Kafka 3.5, a topic whose partition 0 is walked first: its offset is completed before the walk stops
    out = offsetmeta.exchange(versions.CoreTarget(kafka), offsetmeta.topic_walked_first("meta", 0))
    assert out["add offsets"] == ["none"]
    assert out["txn commit"] == [(0, "none"), (1, "offset_metadata_too_large")]
    assert out["end txn"] == ["none"]
    assert out["fetched after the transaction"] == [(0, 11, 4, "in a transaction", "none"), TOO_LONG_NOW]


def test_it_loses_a_transactions_offsets_on_kafka_35_when_the_never_written_one_is_walked_first():
    out = offsetmeta.exchange(versions.CoreTarget("3.5"), offsetmeta.topic_walked_first("meta", 1))
    assert out["end txn"] == ["none"]
    # neither pending nor committed: partition 0 still has the offset from before the transaction
    assert out["fetched after the transaction"] == [(0, 6, -1, "", "none"), TOO_LONG_NOW]
    out = offsetmeta.exchange(versions.CoreTarget("3.9"), offsetmeta.topic_walked_first("meta", 1))
    assert out["fetched after the transaction"] == [(0, 11, 4, "in a transaction", "none"), TOO_LONG_NOW]


def test_it_refuses_metadata_past_the_brokers_own_bound_when_one_is_set():
    target = versions.CoreTarget("3.9")
    target.core.bounds = Bounds(offset_metadata_max_bytes=8)  # offset.metadata.max.bytes=8
    out = offsetmeta.exchange(target, "meta")
    assert out["commit v8"] == [(0, "offset_metadata_too_large"), (1, "offset_metadata_too_large")]
    assert out["fetched after v8"] == [(0, -1, -1, "", "none"), (1, -1, -1, "", "none")]


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_it_keeps_a_plain_commit_written_while_a_transactions_offsets_were_pending(kafka):
    out = offsetmeta.mixed(versions.CoreTarget(kafka), "mixed")
    assert out["txn commit"] == [(0, "none"), (1, "none")] and out["end txn"] == ["none"]
    # meanwhile, a read_uncommitted fetch sees the plain commits, a stable one is told to wait
    assert out["fetched in the transaction"] == [
        (0, 20, -1, "plain after", "none"),
        (1, 30, -1, "plain before", "none"),
    ]
    assert [p[-1] for p in out["fetched stable in the transaction"]] == [UNSTABLE, UNSTABLE]
    # the record written last wins: partition 0's plain commit came after the transaction's, partition 1's before
    assert out["fetched after the transaction"] == [
        (0, 20, -1, "plain after", "none"),
        (1, 31, -1, "transaction", "none"),
    ]


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_it_forgets_a_pending_transactional_offset_with_the_partitions_committed_one(kafka):
    out = offsetmeta.deleted_while_pending(versions.CoreTarget(kafka), "deleted")
    assert out["offset delete"] == ["none", (0, "none")]
    assert out["fetched stable after the delete"] == [(0, -1, -1, "", "none"), (1, -1, -1, "", UNSTABLE)]
    assert out["fetched after the transaction"] == [(0, -1, -1, "", "none"), (1, 12, -1, "transaction", "none")]


def test_it_verifies_a_tv1_transaction_before_it_checks_the_group_on_39_and_4():
    for kafka in ("3.9", "4"):
        out = offsetmeta.checks(versions.CoreTarget(kafka), "checked", kafka)
        assert out["txn v4, not added"] == [(0, "transaction_abortable")]
        assert out["txn, not added, generation 7"] == [(0, "invalid_txn_state")]  # not UNKNOWN_MEMBER_ID: asked first
        assert out["txn, fenced"] == [(0, "invalid_producer_epoch")]
        assert out["txn, producer id unknown"] == [(0, "invalid_producer_id_mapping")]


def test_it_takes_a_fenced_producers_offsets_on_35_which_has_no_verification():
    out = offsetmeta.checks(versions.CoreTarget("3.5"), "checked", "3.5")
    assert out["txn, not added, generation 7"] == [(0, "unknown_member_id")]
    assert out["txn, fenced"] == [(0, "none")] and out["txn, producer id unknown"] == [(0, "none")]


def test_it_refuses_a_generation_of_a_group_that_does_not_exist():
    for kafka, v9 in (("3.9", "illegal_generation"), ("4", "group_id_not_found")):
        out = offsetmeta.checks(versions.CoreTarget(kafka), "checked", kafka)
        assert out["plain, generation 7, no group"] == [(0, "illegal_generation")]
        assert out["plain v9, generation 7, no group"] == [(0, v9)]
        assert out["plain, generation 7, the group exists"] == [(0, "unknown_member_id")]
    # a transactional commit: 3.x makes the group, 4.x refuses
    assert offsetmeta.checks(versions.CoreTarget("3.9"), "c", "3.9")["txn, generation 7"] == [(0, "unknown_member_id")]
    assert offsetmeta.checks(versions.CoreTarget("4"), "c", "4")["txn, generation 7"] == [(0, "illegal_generation")]


def test_it_answers_a_verification_the_coordinator_could_not_give_as_a_commit_does():
    # CONCURRENT_TRANSACTIONS (the transaction still completing) goes out as it is, where a Produce gets
    # NOT_ENOUGH_REPLICAS; an unreachable transaction coordinator is COORDINATOR_NOT_AVAILABLE
    groups = versions.CoreTarget("3.9").core.cluster.groups
    answers: list = []
    write = TxnOffsetWrite("g", groups.offsets_partition("g"), 1, 0, {"t-0": 1}, lambda *_a, **_k: None)
    for error in ("CONCURRENT_TRANSACTIONS", "NOT_ENOUGH_REPLICAS", "INVALID_TXN_STATE"):
        [answer] = groups.offsets_partition_verified(write, error)
        assert isinstance(answer, Answer)
        answers.append(answer.error)
    assert answers == ["CONCURRENT_TRANSACTIONS", "COORDINATOR_NOT_AVAILABLE", "INVALID_TXN_STATE"]
