"""The kafka-clients model (playground/sim/javaclient.py), each test following a case of Kafka's own tests:
TransactionManagerTest (clients/src/test/java/.../producer/internals/), TransactionsTest (core/src/test/scala/
integration/kafka/api/), or the order of the checks in KafkaProducer.java / TransactionManager.java (the audit:
which check comes first decides the exception the application sees)."""

import pytest

from playground.sim.client import Consumer, GroupMetadata, TopicPartition
from playground.sim.cluster import Cluster
from playground.sim.javaclient import (
    ABORTABLE_ERROR,
    FATAL_ERROR,
    READY,
    UNINITIALIZED,
    JavaException,
    JavaProducer,
    murmur2,
)


def cluster_of(kafka):
    return Cluster(3, {}, {"orders": 3, "incoming": 1}, seed=5, kafka=kafka)


@pytest.fixture(params=["3.9", "4"])
def kafka(request):
    return request.param


@pytest.fixture
def cluster(kafka):
    return cluster_of(kafka)


def producer(cluster, name="A", **conf):
    conf.setdefault("transactional.id", "t")
    return JavaProducer(conf, cluster=cluster, name=name, release=cluster.kafka)


def raises(fn, *args, **kwargs):
    with pytest.raises(JavaException) as info:
        fn(*args, **kwargs)
    return info.value


def send_get(p, value, partition=0, topic="orders"):
    return p.get(p.send(topic, value, partition=partition))


def log_of(cluster, tp):
    return [(batch.control or batch.values[j], batch.epoch) for _, batch, j in cluster.log(tp).entries()]


def rpcs(cluster, actor):
    return [e.rpc for e in cluster.events if e.kind == "rpc" and e.direction == "request" and e.src == actor]


def test_it_runs_a_transaction_with_the_request_versions_of_its_release(cluster, kafka):
    # TransactionsTest.testBasicTransactions; TV2 (4.x) sends neither AddPartitionsToTxn nor AddOffsetsToTxn
    p = producer(cluster)
    p.init_transactions()
    assert p.state == READY
    p.begin_transaction()
    send_get(p, "x", 0)
    send_get(p, "y", 1)
    p.commit_transaction()
    assert p.state == READY
    sent = rpcs(cluster, "A")
    if kafka == "4":
        assert "AddPartitionsToTxn" not in sent and sent.count("Produce") == 2
        versions = {e.rpc: e.detail.split(",")[0] for e in cluster.events if e.kind == "rpc" and e.src == "A"}
        assert versions["EndTxn"] == "v5" and versions["Produce"] == "v12"
    else:
        assert sent.count("AddPartitionsToTxn") >= 1
        versions = {e.rpc: e.detail.split(",")[0] for e in cluster.events if e.kind == "rpc" and e.src == "A"}
        assert versions["EndTxn"] == "v4" and versions["AddPartitionsToTxn"] == "v3" and versions["Produce"] == "v11"


def test_it_takes_the_epoch_of_the_next_transaction_from_the_end_txn_answer_under_v2():
    # TransactionManagerTest.testEpochUpdateAfterBumpFromEndTxnResponseInV2
    cluster = cluster_of("4")
    p = producer(cluster)
    p.init_transactions()
    for expected_epoch in (1, 2, 3):
        p.begin_transaction()
        send_get(p, f"v{expected_epoch}")
        p.commit_transaction() if expected_epoch != 2 else p.abort_transaction()
        assert p.epoch == expected_epoch
    cluster.settle()
    assert log_of(cluster, "orders-0") == [("v1", 0), ("COMMIT", 1), ("v2", 1), ("ABORT", 2), ("v3", 2), ("COMMIT", 3)]


def test_it_raises_producer_fenced_exception_on_commit_after_a_newer_instance_started(cluster):
    # TransactionsTest.testFencingOnCommit; TransactionManagerTest
    # .testInvalidProducerEpochConvertToProducerFencedInEndTxn: EndTxn v4/v5 gets PRODUCER_FENCED (90) where
    # librdkafka's v1 gets INVALID_PRODUCER_EPOCH (47)
    a, b = producer(cluster, "A"), producer(cluster, "B")
    a.init_transactions()
    a.begin_transaction()
    send_get(a, "a-1")
    b.init_transactions()
    exc = raises(a.commit_transaction)
    assert (exc.name, exc.wire) == ("ProducerFencedException", "PRODUCER_FENCED")
    assert a.state == FATAL_ERROR and a.fenced
    # a fatal error is re-raised by every later call (maybeFailWithError)
    assert raises(a.begin_transaction).name == "ProducerFencedException"


def test_it_fails_the_future_of_a_fenced_send_with_invalid_producer_epoch_exception(cluster):
    # TransactionsTest.testFencingOnSend: the partition has the newer epoch's ABORT marker; KIP-588: abortable
    a, b = producer(cluster, "A"), producer(cluster, "B")
    a.init_transactions()
    a.begin_transaction()
    send_get(a, "a-1")
    b.init_transactions()
    exc = raises(send_get, a, "a-2")
    assert (exc.name, exc.wire) == ("InvalidProducerEpochException", "INVALID_PRODUCER_EPOCH")
    assert a.state == ABORTABLE_ERROR
    # commitTransaction re-raises it; the abort that follows meets the fence at the coordinator
    assert raises(a.commit_transaction).name == "InvalidProducerEpochException"
    assert raises(a.abort_transaction).name == "ProducerFencedException"


def test_it_fences_a_send_to_a_new_partition_as_its_protocol_does(cluster, kafka):
    # TransactionsTest.testFencingOnAddPartitions: TV1 AddPartitionsToTxn -> ProducerFencedException (fatal);
    # TV2 the leader's add -> INVALID_PRODUCER_EPOCH -> InvalidProducerEpochException ("In kraft mode,
    # transactionV2 is used")
    a, b = producer(cluster, "A"), producer(cluster, "B")
    a.init_transactions()
    b.init_transactions()
    a.begin_transaction()
    exc = raises(send_get, a, "a-1", 2)
    if kafka == "4":
        assert exc.name == "InvalidProducerEpochException" and a.state == ABORTABLE_ERROR
    else:
        assert exc.name == "ProducerFencedException" and a.state == FATAL_ERROR


def test_it_raises_producer_fenced_exception_from_send_offsets_to_transaction(cluster, kafka):
    # TransactionsTest.testFencingOnSendOffsets (TV1: AddOffsetsToTxn; TV2: TxnOffsetCommit, fenced by the
    # coordinator through the group coordinator's add: INVALID_PRODUCER_EPOCH -> ProducerFencedException)
    a, b = producer(cluster, "A"), producer(cluster, "B")
    a.init_transactions()
    a.begin_transaction()
    send_get(a, "a-1")
    b.init_transactions()
    exc = raises(a.send_offsets_to_transaction, [TopicPartition("incoming", 0, 110)], GroupMetadata("g"))
    assert exc.name == "ProducerFencedException" and a.state == FATAL_ERROR


def test_it_commits_the_offsets_with_the_transaction_under_each_protocol(cluster, kafka):
    # TransactionsTest.testSendOffsetsWithGroupMetadata; TV2: no AddOffsetsToTxn, TxnOffsetCommit v5
    p = producer(cluster)
    p.init_transactions()
    p.begin_transaction()
    send_get(p, "x")
    p.send_offsets_to_transaction([TopicPartition("incoming", 0, 7)], GroupMetadata("g"))
    p.commit_transaction()
    cluster.settle()
    assert cluster.groups.committed("g") == {"incoming-0": 7}
    assert ("AddOffsetsToTxn" in rpcs(cluster, "A")) == (kafka == "3.9")


def test_it_refuses_a_second_init_transactions(cluster):
    # TransactionsTest.testConsecutivelyRunInitTransactions
    p = producer(cluster)
    p.init_transactions()
    assert raises(p.init_transactions).name == "IllegalStateException"


def test_it_keeps_the_state_after_an_invalid_call_on_the_application_thread(cluster):
    # TransactionManagerTest.testForegroundInvalidStateTransitionIsRecoverable
    p = producer(cluster)
    assert raises(p.abort_transaction).name == "IllegalStateException"
    assert p.state == UNINITIALIZED
    p.init_transactions()
    p.begin_transaction()
    send_get(p, "x")
    p.commit_transaction()


def test_it_poisons_the_manager_when_the_sender_meets_an_invalid_transition(cluster):
    # TransactionManagerTest.testBackgroundInvalidStateTransitionIsFatal: a record sent outside a transaction stays in
    # the accumulator (it was appended before the check), expires after delivery.timeout.ms, and its failure, met
    # on the Sender thread in READY, cannot become an abortable error: FATAL_ERROR with IllegalStateException
    p = producer(cluster, **{"delivery.timeout.ms": 1000})
    p.init_transactions()
    assert raises(p.send, "orders", "stray", partition=0).name == "IllegalStateException"
    cluster.advance(1500)
    assert p.state == FATAL_ERROR and p.last_error.name == "IllegalStateException"
    exc = raises(p.begin_transaction)
    assert exc.name == "IllegalStateException" and "previous invalid state transition" in exc.message


def test_it_sends_a_record_refused_outside_a_transaction_with_the_next_one_on_its_partition(cluster):
    # KafkaProducer.doSend: the record is appended to the accumulator before maybeAddPartition throws
    # (KAFKA-13782); the Sender drains a partition once a transaction holds it
    p = producer(cluster)
    assert raises(p.send, "orders", "too-early", partition=0).name == "IllegalStateException"
    p.init_transactions()
    assert raises(p.send, "orders", "no-txn", partition=0).name == "IllegalStateException"
    p.begin_transaction()
    send_get(p, "in-txn")
    p.commit_transaction()
    cluster.settle()
    assert [v for v, _ in log_of(cluster, "orders-0")] == ["too-early", "no-txn", "in-txn", "COMMIT"]


def test_it_fails_an_abandoned_record_when_the_transaction_aborts(cluster):
    # Sender.maybeSendAndPollTransactionalRequest: aborting fails the undrained batches (TransactionAbortedException)
    p = producer(cluster)
    p.init_transactions()
    stray = None
    try:
        p.send("orders", "stray", partition=1)
    except JavaException:
        stray = p._accumulator["orders-1"][0]
    p.begin_transaction()
    send_get(p, "x", 0)
    p.abort_transaction()
    assert stray.done and stray.exception.name == "TransactionAbortedException"
    assert cluster.log("orders-1").batches == []


def test_it_holds_the_end_txn_until_every_batch_is_done(cluster):
    # TransactionManagerTest.testEndTxnNotSentIfIncompleteBatches
    p = producer(cluster, **{"linger.ms": 50})
    p.init_transactions()
    p.begin_transaction()
    p.send("orders", "x", partition=0)
    p.commit_transaction()  # the commit does not wait for linger (RecordAccumulator.ready: transactionCompleting)
    events = [e for e in cluster.events if e.kind == "rpc" and e.src == "A" and e.direction == "request"]
    assert [e.rpc for e in events][-2:] == ["Produce", "EndTxn"]


def test_it_bumps_the_epoch_after_an_abortable_error_under_v1_only(cluster, kafka):
    # TransactionManagerTest.testInvalidProducerEpochFromProduce / testBumpTransactionalEpochOnAbortableError: TV1
    # aborts with EndTxn then InitProducerId (KIP-360); TV2 needs no bump, the EndTxn answer carries the next epoch
    p = producer(cluster)
    p.init_transactions()
    p.begin_transaction()
    p.maybe_transition_to_error_state(JavaException("OutOfOrderSequenceException", wire="OUT_OF_ORDER_SEQUENCE_NUMBER"))
    assert p.state == ABORTABLE_ERROR
    exc = raises(p.commit_transaction)  # testDisallowCommitOnProduceFailure: a KafkaException wrapping the cause
    assert (exc.name, exc.cause.name) == ("KafkaException", "OutOfOrderSequenceException")
    before = rpcs(cluster, "A").count("InitProducerId")
    p.abort_transaction()
    assert p.state == READY
    assert rpcs(cluster, "A").count("InitProducerId") - before == (1 if kafka == "3.9" else 0)


def test_it_throws_kafka_exception_from_send_after_an_abortable_error(cluster):
    # TransactionManagerTest.testFailIfNotReadyForSendAfterAbortableError: maybeFailWithError wraps the cause in a
    # KafkaException, which is not an ApiException, so send() throws it
    p = producer(cluster)
    p.init_transactions()
    p.begin_transaction()
    p.maybe_transition_to_error_state(JavaException("TransactionAbortableException", wire="TRANSACTION_ABORTABLE"))
    exc = raises(p.send, "orders", "x", partition=0)
    assert exc.name == "KafkaException" and exc.cause.name == "TransactionAbortableException"


def test_it_fails_the_future_instead_of_throwing_for_a_fenced_producer(cluster):
    # KafkaProducer.doSend: ProducerFencedException is an ApiException: FutureFailure, not thrown; a fire-and-forget
    # send is a future nobody calls get() on
    a, b = producer(cluster, "A"), producer(cluster, "B")
    a.init_transactions()
    a.begin_transaction()
    send_get(a, "x")
    b.init_transactions()
    raises(a.commit_transaction)
    future = a.send("orders", "y", partition=0)  # no exception here
    assert future.done and future.exception.name == "ProducerFencedException"


def test_it_checks_send_offsets_to_transaction_in_kafka_producers_order(cluster):
    # KafkaProducer.sendOffsetsToTransaction: throwIfInvalidGroupMetadata, throwIfNoTransactionManager,
    # throwIfProducerClosed, then `if (!offsets.isEmpty())`: an empty map is a no-op before any state check; then
    # TransactionManager.sendOffsetsToTransaction: pending call, maybeFailWithError, IN_TRANSACTION
    p = producer(cluster)
    assert raises(p.send_offsets_to_transaction, [], None).name == "IllegalArgumentException"
    plain = producer(cluster, "P", **{"transactional.id": None})
    assert raises(plain.send_offsets_to_transaction, [], GroupMetadata("g")).name == "IllegalStateException"
    p.send_offsets_to_transaction([TopicPartition("incoming", 0, -1001)], GroupMetadata("g"))  # UNINITIALIZED: ok
    p.init_transactions()
    p.send_offsets_to_transaction([], GroupMetadata("g"))  # READY, nothing to send: ok
    exc = raises(p.send_offsets_to_transaction, [TopicPartition("incoming", 0, 3)], GroupMetadata("g"))
    assert exc.name == "IllegalStateException" and "not in progress" in exc.message
    p.begin_transaction()
    p.maybe_transition_to_error_state(JavaException("TransactionAbortableException"))
    p.send_offsets_to_transaction([], GroupMetadata("g"))  # still a no-op
    assert (
        raises(p.send_offsets_to_transaction, [TopicPartition("incoming", 0, 3)], GroupMetadata("g")).name
        == "KafkaException"
    )


def test_it_checks_begin_commit_and_abort_in_transaction_managers_order(cluster):
    # beginTransaction: ensureTransactional, throwIfPendingState, maybeFailWithError, transitionTo(IN_TRANSACTION);
    # beginCommit: maybeFailWithError then the transition; beginAbort skips maybeFailWithError in ABORTABLE_ERROR
    p = producer(cluster)
    assert raises(p.begin_transaction).name == "IllegalStateException"  # UNINITIALIZED -> IN_TRANSACTION
    p.init_transactions()
    assert raises(p.commit_transaction).name == "IllegalStateException"  # READY -> COMMITTING
    p.begin_transaction()
    assert raises(p.begin_transaction).name == "IllegalStateException"
    p.maybe_transition_to_error_state(JavaException("InvalidProducerEpochException"))
    assert raises(p.begin_transaction).name == "InvalidProducerEpochException"  # the error before the state
    assert raises(p.commit_transaction).name == "InvalidProducerEpochException"
    p.abort_transaction()  # allowed from ABORTABLE_ERROR
    assert p.state == READY


def test_it_resumes_a_commit_that_timed_out_and_refuses_anything_else_meanwhile(cluster):
    # TransactionManagerTest.testRetryCommitTransactionAfterTimeout / testRetryAbortTransactionAfterCommitTimeout
    p = producer(cluster, **{"max.block.ms": 200})
    p.init_transactions()
    p.begin_transaction()
    send_get(p, "x")
    for b in cluster.brokers:
        cluster.stop_broker(b)
    exc = raises(p.commit_transaction)
    assert exc.name == "TimeoutException"
    assert raises(p.abort_transaction).name == "IllegalStateException"
    for b in cluster.brokers:
        cluster.start_broker(b)
    cluster.advance(100)
    p.commit_transaction()  # the same commit, resumed (handleCachedTransactionRequestResult)
    assert p.state == READY


def test_it_makes_an_unknown_producer_id_mapping_fatal_in_4x_and_abortable_in_39():
    # KAFKA-18019 (4.0: InvalidPidMappingException is fatal) vs 3.9's abortableErrorIfPossible (KIP-360)
    for kafka, state in (("3.9", ABORTABLE_ERROR), ("4", FATAL_ERROR)):
        cluster = Cluster(3, {"transactional.id.expiration.ms": 1000}, {"orders": 1}, seed=5, kafka=kafka)
        p = producer(cluster)
        p.init_transactions()
        cluster.advance(3_700_000)  # expired by the hourly scan
        p.begin_transaction()
        assert raises(send_get, p, "x").name == "InvalidPidMappingException"
        assert p.state == state, kafka


def test_it_aborts_an_open_transaction_on_close(cluster):
    # Sender.run: "Aborting incomplete transaction due to shutdown"
    p = producer(cluster)
    p.init_transactions()
    p.begin_transaction()
    send_get(p, "x")
    p.close()
    cluster.settle()
    assert [v for v, _ in log_of(cluster, "orders-0")] == ["x", "ABORT"]
    assert cluster.txn_coordinator.metadata("t").state == "CompleteAbort"


def test_it_gets_an_id_for_an_idempotent_producer_and_partitions_keys_with_murmur2(cluster):
    # bumpIdempotentEpochAndResetIdIfNeeded; BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % n
    p = JavaProducer({}, cluster=cluster, name="P", release=cluster.kafka)
    # UtilsTest.testMurmur2's vectors
    assert [murmur2(k) for k in (b"21", b"foobar", b"abc")] == [-973932308, -790332482, 479470107]
    assert send_get(p, "v", partition=None) >= 0
    assert p.state == READY and p.producer_id >= 0
    f = p.send("orders", "k", key="key-1")
    assert f.partition == (murmur2(b"key-1") & 0x7FFFFFFF) % 3


def test_it_is_read_by_the_consumer_model_both_clients_share(cluster):
    p = producer(cluster)
    p.init_transactions()
    p.begin_transaction()
    send_get(p, "x")
    p.commit_transaction()
    rc = Consumer({"isolation.level": "read_committed", "auto.offset.reset": "earliest"}, cluster=cluster, name="rc")
    rc.assign([TopicPartition("orders", 0)])
    assert [m.value() for m in rc.consume(10, timeout=1)] == ["x"]
