"""The librdkafka model's transactional calls, audited against src/rdkafka_txnmgr.c (librdkafka 2.16) one API at a
time: the order of each call's checks (arguments, transactional configuration and conflicting calls in
rd_kafka_txn_curr_api_begin, the fatal error, the state in the call's op handler, no-op conditions) decides which
error the application sees when several apply. Each test names the C function whose order it records."""

import pytest

from playground.sim.client import GroupMetadata, Producer, TopicPartition
from playground.sim.cluster import Cluster
from playground.sim.errors import KafkaException


@pytest.fixture
def cluster():
    return Cluster(3, {}, {"orders": 3}, seed=9)


def txn(cluster, name="A", txid="t"):
    return Producer({"transactional.id": txid}, cluster=cluster, name=name)


def error_of(fn, *args, **kwargs):
    with pytest.raises(KafkaException) as info:
        fn(*args, **kwargs)
    return info.value.error


def with_call_in_progress(p):
    """A timed-out init_transactions: its API call stays current (resumable), so other calls conflict."""
    err = error_of(p.init_transactions, 0.0001)
    assert err.name() == "_TIMED_OUT" and err.retriable()


def fence(cluster, p):
    """Another instance with the same transactional.id fences p's open transaction; p's commit makes it fatal."""
    p.begin_transaction()
    p.produce("orders", "x", partition=0)
    p.flush()
    txn(cluster, "B").init_transactions()
    assert error_of(p.commit_transaction).name() == "_FENCED"


def test_init_transactions_checks_transactional_then_conflict_then_state(cluster):
    # rd_kafka_init_transactions: timeout cap, rd_kafka_txn_curr_api_begin (rd_kafka_ensure_transactional, then the
    # conflicting call), then rd_kafka_txn_op_init_transactions (INIT, WAIT_PID, READY_NOT_ACKED)
    plain = Producer({}, cluster=cluster, name="P")
    assert error_of(plain.init_transactions).name() == "_NOT_CONFIGURED"
    p = txn(cluster)
    p.init_transactions()
    assert error_of(p.init_transactions).name() == "_STATE"
    fence(cluster, p)
    err = error_of(p.init_transactions)
    assert err.name() == "_FENCED" and err.fatal()  # the fatal error, as rd_kafka_txn_require_states0 returns it


def test_init_transactions_resumes_after_a_timeout(cluster):
    # rd_kafka_init_transactions: "init_transactions() will continue to operate in the background if the timeout
    # expires, and the application may call init_transactions() again to resume"
    p = txn(cluster)
    with_call_in_progress(p)
    p.init_transactions()
    assert p.state == "READY"


def test_begin_transaction_checks_transactional_then_conflict_then_state(cluster):
    # rd_kafka_begin_transaction: rd_kafka_txn_curr_api_begin, then rd_kafka_txn_op_begin_transaction (READY)
    plain = Producer({}, cluster=cluster, name="P")
    assert error_of(plain.begin_transaction).name() == "_NOT_CONFIGURED"
    p = txn(cluster)
    with_call_in_progress(p)
    assert error_of(p.begin_transaction).name() == "_CONFLICT"
    p.init_transactions()
    p.begin_transaction()
    assert error_of(p.begin_transaction).name() == "_STATE"


def test_begin_transaction_returns_the_abortable_error_with_txn_requires_abort(cluster):
    # rd_kafka_txn_require_states0: "For fatal and abortable states return the last transactional error"
    p = txn(cluster)
    p.init_transactions()
    p.begin_transaction()
    p._set_abortable("INVALID_TXN_STATE", "test")
    err = error_of(p.begin_transaction)
    assert (err.name(), err.txn_requires_abort(), err.fatal()) == ("INVALID_TXN_STATE", True, False)


def test_send_offsets_checks_arguments_then_api_then_nothing_valid_then_state(cluster):
    # rd_kafka_send_offsets_to_transaction: the arguments (_INVALID_ARG), rd_kafka_txn_curr_api_begin
    # (_NOT_CONFIGURED, _CONFLICT), then "No valid offsets, e.g., nothing was consumed, this is not an error, do
    # nothing" BEFORE rd_kafka_txn_op_send_offsets_to_transaction checks IN_TRANSACTION. The simulator used to look at
    # the state first; a real cluster showed librdkafka's order.
    plain = Producer({}, cluster=cluster, name="P")
    assert error_of(plain.send_offsets_to_transaction, [], None).name() == "_INVALID_ARG"
    assert error_of(plain.send_offsets_to_transaction, [], GroupMetadata("g")).name() == "_NOT_CONFIGURED"
    p = txn(cluster)
    nothing = [TopicPartition("orders", 0, -1001)]
    with_call_in_progress(p)
    assert error_of(p.send_offsets_to_transaction, nothing, GroupMetadata("g")).name() == "_CONFLICT"
    p.init_transactions()
    p.send_offsets_to_transaction(nothing, GroupMetadata("g"))  # READY, nothing valid: success
    assert (
        error_of(p.send_offsets_to_transaction, [TopicPartition("orders", 0, 3)], GroupMetadata("g")).name() == "_STATE"
    )
    fence(cluster, p)
    p.send_offsets_to_transaction(nothing, GroupMetadata("g"))  # even after a fatal error
    err = error_of(p.send_offsets_to_transaction, [TopicPartition("orders", 0, 3)], GroupMetadata("g"))
    assert err.name() == "_FENCED" and err.fatal()


def test_send_offsets_caps_its_timeout_to_the_transaction_timeout(cluster):
    # rd_kafka_txn_curr_api_begin(..., cap_timeout=rd_true): "Cap API timeout to remaining transaction timeout"
    p = Producer({"transactional.id": "t", "transaction.timeout.ms": 2000}, cluster=cluster, name="A")
    p.init_transactions()
    p.begin_transaction()
    for b in list(cluster.brokers):
        cluster.stop_broker(b)
    start = cluster.now_ms
    err = error_of(p.send_offsets_to_transaction, [TopicPartition("orders", 0, 3)], GroupMetadata("g"), 30)
    assert err.name() == "_TIMED_OUT" and cluster.now_ms - start <= 2000


def test_commit_checks_transactional_then_conflict_then_state(cluster):
    # rd_kafka_commit_transaction: rd_kafka_txn_curr_api_begin, then rd_kafka_txn_op_begin_commit (IN_TRANSACTION,
    # BEGIN_COMMIT, COMMITTING_TRANSACTION, COMMIT_NOT_ACKED; not resumable on error)
    plain = Producer({}, cluster=cluster, name="P")
    assert error_of(plain.commit_transaction).name() == "_NOT_CONFIGURED"
    p = txn(cluster)
    with_call_in_progress(p)
    assert error_of(p.commit_transaction).name() == "_CONFLICT"
    p.init_transactions()
    assert error_of(p.commit_transaction).name() == "_STATE"
    assert p._api is None  # the failed call is over: another API may be called


def test_commit_reports_failed_deliveries_before_it_skips_an_empty_transaction(cluster):
    # rd_kafka_txn_op_commit_transaction: the state, then txn_dr_fails (_INCONSISTENT, abortable), then
    # txn_req_cnt == 0 ("No partitions registered: not sending EndTxn")
    p = txn(cluster)
    p.init_transactions()
    p.begin_transaction()
    p.txn_dr_fails = 1
    err = error_of(p.commit_transaction)
    assert (err.name(), err.txn_requires_abort()) == ("_INCONSISTENT", True)
    assert p.state == "ABORTABLE_ERROR"
    p.abort_transaction()
    p.begin_transaction()
    p.commit_transaction()  # nothing registered: no EndTxn
    sent = [e.rpc for e in cluster.events if e.kind == "rpc" and e.src == "A" and e.direction == "request"]
    assert "EndTxn" not in sent


def test_abort_checks_transactional_then_conflict_then_state(cluster):
    # rd_kafka_abort_transaction: rd_kafka_txn_curr_api_begin, then rd_kafka_txn_op_begin_abort (IN_TRANSACTION,
    # BEGIN_ABORT, ABORTING_TRANSACTION, ABORTABLE_ERROR, ABORT_NOT_ACKED)
    plain = Producer({}, cluster=cluster, name="P")
    assert error_of(plain.abort_transaction).name() == "_NOT_CONFIGURED"
    p = txn(cluster)
    with_call_in_progress(p)
    assert error_of(p.abort_transaction).name() == "_CONFLICT"
    p.init_transactions()
    assert error_of(p.abort_transaction).name() == "_STATE"
    p.begin_transaction()
    p._set_abortable("INVALID_TXN_STATE", "test")
    p.abort_transaction()  # ABORTABLE_ERROR is where abort is meant to be called
    assert p.state == "READY"


def test_abort_of_a_fenced_producer_returns_the_fatal_error(cluster):
    # rd_kafka_txn_op_begin_abort -> rd_kafka_txn_require_states0: FATAL_ERROR returns the fatal error
    p = txn(cluster)
    p.init_transactions()
    fence(cluster, p)
    err = error_of(p.abort_transaction)
    assert err.name() == "_FENCED" and err.fatal()


def test_produce_checks_the_fatal_error_before_the_transaction_state(cluster):
    # rd_kafka_check_produce: rd_kafka_fatal_error_code first (_FATAL), then rd_kafka_txn_may_enq_msg (_STATE)
    p = txn(cluster)
    assert error_of(p.produce, "orders", "x", partition=0).name() == "_STATE"
    p.init_transactions()
    fence(cluster, p)
    assert p.state == "FATAL_ERROR"
    assert error_of(p.produce, "orders", "x", partition=0).name() == "_FATAL"
