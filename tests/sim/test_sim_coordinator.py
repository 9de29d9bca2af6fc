import pytest

from playground.sim.cluster import Cluster
from playground.sim.coordinator import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    STATE_IDS,
    TRANSITIONS,
    IllegalStateError,
    TransactionMetadata,
    java_string_hash,
    partition_for,
    record_bytes,
)


def test_it_places_transactional_ids_with_javas_string_hash():
    assert partition_for("my-txn") == 45
    assert partition_for("transactional-id-1") == 41
    assert partition_for("app-0") == 4
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322  # "hello".hashCode() in Java
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE: abs() gives 0
    assert partition_for("polygenelubricants") == 0


def test_it_has_exactly_kafkas_transition_table():
    assert TRANSITIONS[EMPTY] == {EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}
    assert TRANSITIONS[ONGOING] == {ONGOING, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}
    assert TRANSITIONS[PREPARE_COMMIT] == {ONGOING}
    assert TRANSITIONS[PREPARE_ABORT] == {ONGOING, "PrepareEpochFence"}
    assert TRANSITIONS[COMPLETE_COMMIT] == {PREPARE_COMMIT}
    assert TRANSITIONS[COMPLETE_ABORT] == {PREPARE_ABORT}
    assert TRANSITIONS["Dead"] == {EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}
    assert TRANSITIONS["PrepareEpochFence"] == {ONGOING}
    assert STATE_IDS["PrepareEpochFence"] == 7 and STATE_IDS["Dead"] == 6


def test_it_refuses_a_transition_the_table_does_not_allow():
    md = TransactionMetadata("t", 1, 0, 60000, EMPTY)
    with pytest.raises(IllegalStateError):
        md.prepare_abort_or_commit(PREPARE_COMMIT, 0)


def test_it_sizes_transaction_state_records_from_the_v0_layout():
    empty = record_bytes("order-pay", frozenset())
    one = record_bytes("order-pay", frozenset({"orders-0"}))
    two = record_bytes("order-pay", frozenset({"orders-0", "orders-1"}))
    assert one - empty == 2 + len("orders") + 4 + 4
    assert two - one == 4
    assert record_bytes("order-pay", None) < empty  # tombstone: key only


def call(cluster, handler, *args):
    """Call a coordinator handler on the right broker and run the clock until it answers."""
    tc = cluster.txn_coordinator
    box = {}
    broker = tc.coordinator_of(args[0]) if args and isinstance(args[0], str) else None
    handler(broker, *args, lambda err=None, **res: box.update(error=err, **res))
    cluster.scheduler.run_until(lambda: "error" in box, cluster.now_ms + 1000)
    return box


@pytest.fixture
def cluster():
    return Cluster(3, {}, {"orders": 3}, seed=1)


def test_it_gives_a_new_transactional_id_epoch_0_and_bumps_it_on_every_init(cluster):
    tc = cluster.txn_coordinator
    first = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)
    again = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)
    assert first["error"] is None and first["producer_epoch"] == 0
    assert again["producer_id"] == first["producer_id"] and again["producer_epoch"] == 1
    assert tc.metadata("t").state == EMPTY


def test_it_refuses_a_timeout_above_transaction_max_timeout_ms(cluster):
    assert call(cluster, cluster.handle_init_producer_id, "t", 900_001, None)["error"] == "INVALID_TRANSACTION_TIMEOUT"


def test_it_fences_an_ongoing_transaction_and_answers_concurrent_transactions(cluster):
    tc = cluster.txn_coordinator
    pid = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["producer_id"]
    assert call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0"}))["error"] is None
    fenced = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)
    assert fenced["error"] == "CONCURRENT_TRANSACTIONS"
    cluster.settle()
    md = tc.metadata("t")
    assert (md.state, md.producer_epoch) == (COMPLETE_ABORT, 1)
    assert [b.control for b in cluster.log("orders-0").batches] == ["ABORT"]
    retry = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)
    assert (retry["error"], retry["producer_epoch"]) == (None, 2)
    assert call(cluster, cluster.handle_end_txn, "t", pid, 0, True)["error"] == "PRODUCER_FENCED"
    assert (
        call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-1"}))["error"] == "PRODUCER_FENCED"
    )


def test_it_answers_end_txn_before_the_markers_are_written(cluster):
    tc = cluster.txn_coordinator
    pid = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["producer_id"]
    call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0", "orders-1"}))
    assert call(cluster, cluster.handle_end_txn, "t", pid, 0, True)["error"] is None
    assert tc.metadata("t").state == PREPARE_COMMIT
    assert cluster.log("orders-0").batches == []
    cluster.settle()
    assert tc.metadata("t").state == COMPLETE_COMMIT
    assert [b.control for b in cluster.log("orders-1").batches] == ["COMMIT"]


def test_it_answers_end_txn_as_kafka_does_in_every_state(cluster):
    tc = cluster.txn_coordinator
    pid = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["producer_id"]
    assert call(cluster, cluster.handle_end_txn, "t", pid, 0, True)["error"] == "INVALID_TXN_STATE"  # Empty
    assert call(cluster, cluster.handle_end_txn, "t", pid + 1, 0, True)["error"] == "INVALID_PRODUCER_ID_MAPPING"
    call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0"}))
    assert call(cluster, cluster.handle_end_txn, "t", pid, 1, True)["error"] == "PRODUCER_FENCED"
    assert call(cluster, cluster.handle_end_txn, "t", pid, 0, True)["error"] is None
    assert call(cluster, cluster.handle_end_txn, "t", pid, 0, True)["error"] == "CONCURRENT_TRANSACTIONS"
    # while the markers are written the completion is already pending (sendTxnMarkersCallback prepares it before
    # addTxnMarkersToSend), and the pending check comes before the state's: an abort waits too
    assert tc.metadata("t").pending_state == COMPLETE_COMMIT
    assert call(cluster, cluster.handle_end_txn, "t", pid, 0, False)["error"] == "CONCURRENT_TRANSACTIONS"
    cluster.settle()
    assert call(cluster, cluster.handle_end_txn, "t", pid, 0, True)["error"] is None  # a retry after success
    assert call(cluster, cluster.handle_end_txn, "t", pid, 0, False)["error"] == "INVALID_TXN_STATE"


def test_it_writes_nothing_when_the_partitions_are_already_in_the_transaction(cluster):
    tc = cluster.txn_coordinator
    pid = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["producer_id"]
    call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0"}))
    written = tc.records_written
    assert call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0"}))["error"] is None
    assert tc.records_written == written


def test_it_aborts_a_transaction_older_than_its_timeout_on_the_10_second_scan(cluster):
    tc = cluster.txn_coordinator
    pid = call(cluster, cluster.handle_init_producer_id, "t", 15000, None)["producer_id"]
    call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0"}))
    cluster.advance(19_000)  # start ~5 ms + 15 s is not < 10 s; at the 20 s scan it is
    assert tc.metadata("t").state == ONGOING
    cluster.advance(1_100)
    cluster.settle()
    md = tc.metadata("t")
    assert (md.state, md.producer_epoch) == (COMPLETE_ABORT, 1)


def test_it_expires_an_idle_transactional_id_and_then_gives_it_a_new_producer_id(cluster):
    tc = cluster.txn_coordinator
    pid = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["producer_id"]
    cluster.advance(7 * 24 * 3600 * 1000 + 3600 * 1000)
    assert tc.metadata("t") is None
    assert (
        call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0"}))["error"]
        == "INVALID_PRODUCER_ID_MAPPING"
    )
    again = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)
    assert again["producer_id"] != pid and again["producer_epoch"] == 0


def test_it_rotates_the_producer_id_when_the_epoch_is_exhausted(cluster):
    tc = cluster.txn_coordinator
    pid = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["producer_id"]
    tc.metadata("t").producer_epoch = 32766
    rotated = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)
    assert rotated["producer_id"] != pid and rotated["producer_epoch"] == 0


def test_it_fences_to_the_last_epoch_and_then_rotates_when_a_transaction_is_open_at_exhaustion(cluster):
    tc = cluster.txn_coordinator
    pid = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["producer_id"]
    tc.metadata("t").producer_epoch = 32765
    call(cluster, cluster.handle_add_partitions, "t", pid, 32765, frozenset({"orders-0"}))
    assert call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["error"] == "CONCURRENT_TRANSACTIONS"
    cluster.settle()
    assert tc.metadata("t").producer_epoch == 32766
    rotated = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)
    assert rotated["producer_id"] != pid and rotated["producer_epoch"] == 0


def test_it_resumes_markers_on_a_new_coordinator_after_the_old_one_dies(cluster):
    tc = cluster.txn_coordinator
    pid = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["producer_id"]
    call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0", "orders-1"}))
    old = tc.coordinator_of("t")
    assert call(cluster, cluster.handle_end_txn, "t", pid, 0, True)["error"] is None
    cluster.stop_broker(old)  # before any marker landed
    cluster.settle()
    assert tc.coordinator_of("t") != old
    md = tc.metadata("t")
    assert md.state == COMPLETE_COMMIT
    assert all(any(b.control == "COMMIT" for b in cluster.log(tp).batches) for tp in ("orders-0", "orders-1"))


def test_it_counts_transaction_state_records_and_init_calls(cluster):
    pid = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["producer_id"]
    call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0"}))
    call(cluster, cluster.handle_end_txn, "t", pid, 0, True)
    cluster.settle()
    stats = cluster.stats()
    assert stats["init_producer_id_calls"] == 1
    assert stats["transaction_state_records"] == 4  # Empty, Ongoing, PrepareCommit, CompleteCommit
    assert stats["markers_written"] == 1


def test_it_answers_a_stale_epoch_with_invalid_producer_epoch_to_request_versions_before_kip_588(cluster):
    # KafkaApis (3.9): handleAddPartitionsToTxnRequest / handleAddOffsetsToTxnRequest / handleEndTxnRequest turn
    # PRODUCER_FENCED into INVALID_PRODUCER_EPOCH for version < 2, handleInitProducerIdRequest for version < 4
    pid = call(cluster, cluster.handle_init_producer_id, "t", 60000, None)["producer_id"]
    call(cluster, cluster.handle_init_producer_id, "t", 60000, None)  # epoch 1: epoch 0 is now stale
    stale = ("t", pid, 0)

    def add_parts(version):
        return call(
            cluster,
            lambda b, *a: cluster.handle_add_partitions(b, *a, version=version),
            *stale,
            frozenset({"orders-0"}),
        )["error"]

    def add_offsets(version):
        return call(cluster, lambda b, *a: cluster.handle_add_offsets(b, *a, version=version), *stale, "g")["error"]

    def end_txn(version):
        return call(cluster, lambda b, *a: cluster.handle_end_txn(b, *a, version=version), *stale, True)["error"]

    def bump(version):
        return call(
            cluster, lambda b, *a: cluster.handle_init_producer_id(b, *a, version=version), "t", 60000, (pid + 7, 0)
        )["error"]

    assert [add_parts(v) for v in (0, 1, 2, 3)] == ["INVALID_PRODUCER_EPOCH"] * 2 + ["PRODUCER_FENCED"] * 2
    assert [add_offsets(v) for v in (0, 1, 2, 4)] == ["INVALID_PRODUCER_EPOCH"] * 2 + ["PRODUCER_FENCED"] * 2
    assert [end_txn(v) for v in (0, 1, 2, 4)] == ["INVALID_PRODUCER_EPOCH"] * 2 + ["PRODUCER_FENCED"] * 2
    assert [bump(v) for v in (3, 4)] == ["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"]
    assert add_parts(None) == end_txn(None) == "PRODUCER_FENCED"  # no version named: the newest
    # other errors pass through untouched
    assert (
        call(cluster, lambda b, *a: cluster.handle_end_txn(b, *a, version=1), "t", pid + 1, 1, True)["error"]
        == "INVALID_PRODUCER_ID_MAPPING"
    )
