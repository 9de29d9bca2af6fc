"""The transaction coordinator and the partition leaders of a Kafka 4.x cluster (transaction.version=2, KIP-890 part
2), each test following a case of Kafka's own tests: TransactionCoordinatorTest (core/src/test/scala/unit/kafka/
coordinator/transaction/), TransactionsTest (core/src/test/scala/integration/kafka/api/). EndTxn v5 is a TV2
client's; v4 and older a TV1 client's (librdkafka sends v1, kafka-clients 3.9 v4)."""

import pytest

from playground.sim.cluster import Cluster
from playground.sim.coordinator import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    SHORT_MAX,
    TRANSITIONS,
    TRANSITIONS_4,
    IllegalStateError,
    TransactionMetadata,
    transitions_for,
)

V2, V1 = 5, 4  # EndTxn versions: TV2 from v5


def call(cluster, handler, *args, **kwargs):
    """A coordinator handler on the transactional id's coordinator, run until it answers."""
    tc = cluster.txn_coordinator
    box = {}
    broker = tc.coordinator_of(args[0])
    handler(broker, *args, lambda err=None, **res: box.update(error=err, **res), **kwargs)
    cluster.scheduler.run_until(lambda: "error" in box, cluster.now_ms + 1000)
    return box


def produce(cluster, tp, txid, pid, epoch, value="v", seq=None, version=12):
    """A transactional Produce to the partition's leader, run until it answers."""
    box = {}
    log = cluster.log(tp)
    entry = log.producers.get(pid)
    if seq is None:
        seq = 0 if entry is None or entry.epoch != epoch else entry.last_seq + 1
    cluster.handle_produce(
        cluster.leader_of(tp),
        tp,
        txid,
        pid,
        epoch,
        seq,
        True,
        (value,),
        None,
        -1,
        lambda err=None, **res: box.update(error=err, **res),
        version=version,
    )
    cluster.scheduler.run_until(lambda: "error" in box, cluster.now_ms + 1000)
    return box["error"]


def end_txn(cluster, txid, pid, epoch, commit, version=V2):
    return call(cluster, cluster.handle_end_txn, txid, pid, epoch, commit, version=version)


def init(cluster, txid="t", expected=None, version=6):
    return call(cluster, cluster.handle_init_producer_id, txid, 60000, expected, version=version)


@pytest.fixture
def cluster():
    return Cluster(3, {}, {"orders": 3}, seed=1, kafka="4")


def controls(cluster, tp):
    return [(b.control, b.producer_id, b.epoch) for b in cluster.log(tp).batches if b.control]


def test_it_draws_prepare_abort_from_empty_and_complete_states_only_in_kafka_4s_table():
    # TransactionState.java (4.x) vs TransactionMetadata.scala (3.9): the TV2 empty abort
    assert TRANSITIONS_4[PREPARE_ABORT] == {ONGOING, "PrepareEpochFence", EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}
    assert TRANSITIONS[PREPARE_ABORT] == {ONGOING, "PrepareEpochFence"}
    assert {k: v for k, v in TRANSITIONS_4.items() if k != PREPARE_ABORT} == {
        k: v for k, v in TRANSITIONS.items() if k != PREPARE_ABORT
    }
    assert transitions_for("4") is TRANSITIONS_4 and transitions_for("3.9") is TRANSITIONS
    with pytest.raises(IllegalStateError):
        TransactionMetadata("t", 1, 0, 60000, EMPTY).prepare_abort_or_commit(PREPARE_ABORT, 0, client_tv=2)
    assert (
        TransactionMetadata("t", 1, 0, 60000, EMPTY, kafka="4")
        .prepare_abort_or_commit(PREPARE_ABORT, 0, client_tv=2)
        .producer_epoch
        == 1
    )


def test_it_bumps_the_epoch_at_every_end_txn_and_writes_the_markers_with_the_bumped_one(cluster):
    # shouldAppendPrepareCommitToLogOnEndTxnWhenStatusIsOngoingAndResultIsCommit (TV_2), TransactionMetadata
    # .prepareAbortOrCommit: epoch + 1, lastProducerEpoch = epoch; the answer carries what the client goes on with
    tc = cluster.txn_coordinator
    pid = init(cluster)["producer_id"]
    assert produce(cluster, "orders-0", "t", pid, 0) is None
    answer = end_txn(cluster, "t", pid, 0, True)
    assert (answer["error"], answer["producer_id"], answer["producer_epoch"]) == (None, pid, 1)
    cluster.settle()
    md = tc.metadata("t")
    assert (md.state, md.producer_epoch, md.last_producer_epoch) == (COMPLETE_COMMIT, 1, 0)
    assert controls(cluster, "orders-0") == [("COMMIT", pid, 1)]
    # the next transaction runs at epoch 1; its abort bumps again
    assert produce(cluster, "orders-0", "t", pid, 1) is None
    assert end_txn(cluster, "t", pid, 1, False)["producer_epoch"] == 2
    cluster.settle()
    assert controls(cluster, "orders-0") == [("COMMIT", pid, 1), ("ABORT", pid, 2)]


def test_it_keeps_the_epoch_for_a_v1_client_on_the_same_4x_cluster(cluster):
    # shouldAppendPrepareCommitToLogOnEndTxnWhenStatusIsOngoingAndResultIsCommit (TV_0): endTransactionWithTV1
    tc = cluster.txn_coordinator
    pid = init(cluster, version=4)["producer_id"]
    assert (
        call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0"}), version=0)["error"] is None
    )
    answer = end_txn(cluster, "t", pid, 0, True, version=1)
    assert answer["error"] is None and "producer_epoch" not in answer
    cluster.settle()
    assert tc.metadata("t").producer_epoch == 0
    assert controls(cluster, "orders-0") == [("COMMIT", pid, 0)]


@pytest.mark.parametrize("is_retry", [False, True])
def test_it_tells_a_v2_retry_of_a_commit_from_the_next_commit_by_its_epoch(cluster, is_retry):
    # testEndTxnWhenStatusIsCompleteCommitAndResultIsCommitInV2: in CompleteCommit at epoch e, a commit at e - 1 is
    # the retry (NONE, nothing written), a commit at e is the next EndTxn of an empty transaction (INVALID_TXN_STATE)
    tc = cluster.txn_coordinator
    pid = init(cluster)["producer_id"]
    produce(cluster, "orders-0", "t", pid, 0)
    end_txn(cluster, "t", pid, 0, True)
    cluster.settle()
    written = tc.records_written
    answer = end_txn(cluster, "t", pid, 0 if is_retry else 1, True)
    if is_retry:
        assert (answer["error"], answer["producer_epoch"]) == (None, 1)
    else:
        assert answer["error"] == "INVALID_TXN_STATE"
    assert tc.records_written == written


def test_it_lets_a_v2_client_abort_when_nothing_was_added_and_fences_a_stale_one(cluster):
    # TestEndTxnRequestWhenEmptyTransactionStateForAbortInV2 (current: bump, the update time as start time; retry:
    # PRODUCER_FENCED) and TestEndTxnRequestWhenEmptyTransactionStateForAbortInV1 (INVALID_TXN_STATE)
    tc = cluster.txn_coordinator
    pid = init(cluster)["producer_id"]
    init(cluster)  # epoch 1, Empty
    assert end_txn(cluster, "t", pid, 1, False, version=V1)["error"] == "INVALID_TXN_STATE"
    assert end_txn(cluster, "t", pid, 0, False)["error"] == "PRODUCER_FENCED"
    answer = end_txn(cluster, "t", pid, 1, False)
    assert (answer["error"], answer["producer_epoch"]) == (None, 2)
    cluster.settle()
    md = tc.metadata("t")
    assert (md.state, md.producer_epoch, md.partitions) == (COMPLETE_ABORT, 2, set())
    assert md.txn_start_ms >= 0


def test_it_refuses_a_v2_commit_of_an_empty_transaction(cluster):
    # TestEndTxnRequestWhenEmptyTransactionStateForCommitInV2
    pid = init(cluster)["producer_id"]
    assert end_txn(cluster, "t", pid, 0, True)["error"] == "INVALID_TXN_STATE"


def test_it_waits_for_the_previous_completion_instead_of_self_fencing(cluster):
    # KAFKA-18464 (the pending check before the epoch check in TV2 endTransaction) and
    # shouldReturnInvalidTxnRequestOnEndTxnV2IfNotEndTxnV2Retry: the client starts the next transaction at the bumped
    # epoch while the markers of the previous one are still being written
    tc = cluster.txn_coordinator
    pid = init(cluster)["producer_id"]
    produce(cluster, "orders-0", "t", pid, 0)
    assert end_txn(cluster, "t", pid, 0, True)["producer_epoch"] == 1
    md = tc.metadata("t")
    assert (md.state, md.pending_state) == (PREPARE_COMMIT, COMPLETE_COMMIT)
    assert end_txn(cluster, "t", pid, 1, False)["error"] == "CONCURRENT_TRANSACTIONS"
    assert (
        call(cluster, cluster.handle_add_partitions, "t", pid, 1, frozenset({"orders-1"}), client_tv=2)["error"]
        == "CONCURRENT_TRANSACTIONS"
    )
    cluster.settle()
    assert end_txn(cluster, "t", pid, 1, False)["error"] is None  # now an empty abort


def test_it_checks_the_pending_transition_before_the_producer_id_on_add_partitions_in_4x():
    # shouldReturnConcurrentTxnOnAddPartitionsIfEndTxnV2EpochOverflowAndNotComplete (KAFKA-18660): the producer may
    # already use the new producer id of a completion still pending; 3.9 checks the producer id first
    for kafka, expected in (("4", "CONCURRENT_TRANSACTIONS"), ("3.9", "INVALID_PRODUCER_ID_MAPPING")):
        cluster = Cluster(3, {}, {"orders": 3}, seed=1, kafka=kafka)
        tc = cluster.txn_coordinator
        pid = init(cluster)["producer_id"]
        tc.metadata("t").pending_state = COMPLETE_COMMIT
        assert (
            call(cluster, cluster.handle_add_partitions, "t", pid + 500, 0, frozenset({"orders-0"}))["error"]
            == expected
        ), kafka


def test_it_hands_over_a_new_producer_id_when_a_v2_end_txn_exhausts_the_epoch(cluster):
    # shouldGenerateNewProducerIdIfEpochsExhaustedV2: at 32766 the EndTxn bumps to 32767 (the markers' epoch only) and
    # the answer is a new producer id at epoch 0 (KAFKA-18660: newPreSendMetadata's id and epoch)
    tc = cluster.txn_coordinator
    pid = init(cluster)["producer_id"]
    tc.metadata("t").producer_epoch = SHORT_MAX - 1
    assert produce(cluster, "orders-0", "t", pid, SHORT_MAX - 1) is None
    answer = end_txn(cluster, "t", pid, SHORT_MAX - 1, True)
    assert answer["error"] is None and answer["producer_id"] != pid and answer["producer_epoch"] == 0
    new_pid = answer["producer_id"]
    cluster.settle()
    assert controls(cluster, "orders-0") == [("COMMIT", pid, SHORT_MAX)]
    md = tc.metadata("t")
    assert (md.state, md.producer_id, md.producer_epoch, md.previous_producer_id) == (COMPLETE_COMMIT, new_pid, 0, pid)
    # shouldReturnOkOnEndTxnV2IfEndTxnV2RetryEpochOverflow: the old id's retry is recognised and gets the new id
    retry = end_txn(cluster, "t", pid, SHORT_MAX - 1, True)
    assert (retry["error"], retry["producer_id"], retry["producer_epoch"]) == (None, new_pid, 0)
    # and the new producer id carries on at epoch 0
    assert produce(cluster, "orders-1", "t", new_pid, 0) is None


def test_it_bumps_the_epoch_once_when_init_producer_id_fences_an_ongoing_v2_transaction(cluster):
    # KAFKA-19367 (shouldNotCauseEpochOverflowWhenInitPidDuringOngoingTxnV2): the fence's bump is the abort's own;
    # the new producer's retried InitProducerId gets e + 2, as in TV1
    tc = cluster.txn_coordinator
    pid = init(cluster)["producer_id"]
    produce(cluster, "orders-0", "t", pid, 0)
    assert init(cluster)["error"] == "CONCURRENT_TRANSACTIONS"
    cluster.settle()
    assert controls(cluster, "orders-0") == [("ABORT", pid, 1)]
    assert (tc.metadata("t").state, tc.metadata("t").producer_epoch) == (COMPLETE_ABORT, 1)
    assert init(cluster)["producer_epoch"] == 2


def test_it_does_not_overflow_when_fencing_an_ongoing_transaction_at_32766(cluster):
    # shouldNotCauseEpochOverflowWhenInitPidDuringOngoingTxnV2 (PrepareAbort at Short.MaxValue, not negative) and
    # KAFKA-20090 (testRecoveryFromEpochOverflow): the fence at an exhausted epoch also rotates the producer id
    tc = cluster.txn_coordinator
    pid = init(cluster)["producer_id"]
    tc.metadata("t").producer_epoch = SHORT_MAX - 1
    produce(cluster, "orders-0", "t", pid, SHORT_MAX - 1)
    assert init(cluster)["error"] == "CONCURRENT_TRANSACTIONS"
    assert (tc.metadata("t").state, tc.metadata("t").producer_epoch) == (PREPARE_ABORT, SHORT_MAX)
    cluster.settle()
    assert controls(cluster, "orders-0") == [("ABORT", pid, SHORT_MAX)]
    md = tc.metadata("t")
    assert md.state == COMPLETE_ABORT and md.producer_id != pid and md.producer_epoch == 0
    again = init(cluster)
    assert again["error"] is None and again["producer_id"] == md.producer_id


def test_it_aborts_a_timed_out_transaction_with_one_bump_on_a_4x_cluster_whatever_the_client(cluster):
    # shouldAbortExpiredTransactionsInOngoingStateAndBumpEpoch / shouldHandleTimeoutAtEpochOverflowBoundaryCorrectlyTV2:
    # the timeout abort runs with the server's transaction.version (2), bumping once
    tc = cluster.txn_coordinator
    pid = call(cluster, cluster.handle_init_producer_id, "t", 15000, None, version=4)["producer_id"]
    call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0"}), version=0)
    cluster.advance(21_000)
    cluster.settle()
    md = tc.metadata("t")
    assert (md.state, md.producer_epoch, md.client_tv) == (COMPLETE_ABORT, 1, 2)
    assert controls(cluster, "orders-0") == [("ABORT", pid, 1)]
    # the TV1 client's late EndTxn is fenced (47 for its old version)
    assert end_txn(cluster, "t", pid, 0, False, version=1)["error"] == "INVALID_PRODUCER_EPOCH"


def test_it_adds_the_partition_through_the_leader_for_a_v2_produce(cluster):
    # KIP-890 part 2: no client AddPartitionsToTxn; the leader's AddPartitionsToTxn v5 (verifyOnly=false) writes
    # Ongoing, then the batch is appended; a second batch to the same partition asks nobody
    tc = cluster.txn_coordinator
    pid = init(cluster)["producer_id"]
    assert produce(cluster, "orders-1", "t", pid, 0, "a") is None
    md = tc.metadata("t")
    assert (md.state, md.partitions, md.client_tv) == (ONGOING, {"orders-1"}, 2)
    adds = [e for e in cluster.events if e.kind == "rpc" and e.rpc == "AddPartitionsToTxn"]
    coordinator = f"coordinator(b{tc.coordinator_of('t')})"
    assert [(e.direction, e.src, e.dst) for e in adds] == [
        ("request", "leader orders-1(b2)", coordinator),
        ("response", coordinator, "leader orders-1(b2)"),
    ]
    assert produce(cluster, "orders-1", "t", pid, 0, "b") is None
    assert len([e for e in cluster.events if e.kind == "rpc" and e.rpc == "AddPartitionsToTxn"]) == 2


def test_it_refuses_a_late_batch_of_an_earlier_transaction_under_v2(cluster):
    # TransactionsTest.testFencingOnAddPartitions (kraft, TV2: InvalidProducerEpochException) and KAFKA-18042: a
    # batch written with the epoch of a transaction that has ended meets the bumped epoch, at the partition (it has
    # the marker) or at the coordinator (the partition was not in that transaction)
    pid = init(cluster)["producer_id"]
    produce(cluster, "orders-0", "t", pid, 0)
    end_txn(cluster, "t", pid, 0, True)
    cluster.settle()
    assert produce(cluster, "orders-1", "t", pid, 1) is None  # the next transaction, epoch 1
    assert produce(cluster, "orders-0", "t", pid, 0, "late", seq=1) == "INVALID_PRODUCER_EPOCH"
    assert produce(cluster, "orders-2", "t", pid, 0, "late", seq=0) == "INVALID_PRODUCER_EPOCH"
    assert [b.values for b in cluster.log("orders-2").batches] == []


def test_it_lets_a_late_batch_land_in_the_next_transaction_under_v1():
    # the hole KIP-890 part 2 closes: with the classic protocol the epoch does not move, so once the next
    # transaction added the partition, the part-1 verification lets the earlier transaction's batch join it
    cluster = Cluster(3, {}, {"orders": 3}, seed=1)
    tc = cluster.txn_coordinator
    pid = init(cluster, version=4)["producer_id"]
    call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-0"}), version=0)
    end_txn(cluster, "t", pid, 0, True, version=1)
    cluster.settle()
    call(cluster, cluster.handle_add_partitions, "t", pid, 0, frozenset({"orders-2"}), version=0)
    assert produce(cluster, "orders-2", "t", pid, 0, "late", seq=0, version=10) is None
    assert tc.metadata("t").state == ONGOING and "orders-2" in tc.metadata("t").partitions


def test_it_reads_a_failed_verification_as_transaction_abortable_from_produce_v11(cluster):
    # testVerifyPartitionHandling / KafkaApis.handleProduceRequest: Produce > v10 asks for genericError, so
    # TRANSACTION_ABORTABLE goes out as it is; librdkafka's v10 gets INVALID_TXN_STATE
    cluster = Cluster(3, {}, {"orders": 3}, seed=1)
    pid = init(cluster, version=5)["producer_id"]
    assert produce(cluster, "orders-0", "t", pid, 0, version=11) == "TRANSACTION_ABORTABLE"
    assert produce(cluster, "orders-0", "t", pid, 0, version=10) == "INVALID_TXN_STATE"


def test_it_answers_the_v2_leader_with_invalid_producer_epoch_for_a_fenced_producer(cluster):
    # AddPartitionsToTxnManager: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH ("Producers expect to handle
    # INVALID_PRODUCER_EPOCH in this scenario"); an unknown transactional id stays INVALID_PRODUCER_ID_MAPPING
    pid = init(cluster)["producer_id"]
    init(cluster)
    assert produce(cluster, "orders-0", "t", pid, 0) == "INVALID_PRODUCER_EPOCH"
    assert produce(cluster, "orders-1", "nobody", 999, 0) == "INVALID_PRODUCER_ID_MAPPING"
