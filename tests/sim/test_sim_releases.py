"""How the simulator's Kafka releases and kafka-clients releases differ (issue 20): Kafka 3.5 beside 3.9 and 4.x,
kafka-clients 3.5 beside 3.9 and 4.4, and any client against any cluster. Each test names the Kafka source that
makes the difference (the tags 3.5.2 and 3.9 of apache/kafka)."""

from __future__ import annotations

import pytest

from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, ClusterSpec, Profile, Step, TopicSpec
from playground.sim import latewrite
from playground.sim.apiversions import BROKER_MAX, JAVA_CLIENT_MAX
from playground.sim.cluster import Cluster
from playground.sim.driver import SimBackend
from playground.sim.java_base import API_VERSIONS, INITIALIZING
from playground.sim.javaclient import ABORTABLE_ERROR, FATAL_ERROR, READY, JavaException, JavaProducer

TXID = "payment-writer"


def backend(profile: Profile, **config) -> SimBackend:
    spec = ClusterSpec(brokers=3, config=config, topics=(TopicSpec("payments", 2),))
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


def produce(value: str, partition: int = 0) -> tuple[str, dict]:
    return ("pay.produce", {"topic": "payments", "partition": partition, "value": value})


def late(value: str) -> tuple[str, dict]:
    return ("net.late_write", {"actor": "pay", "of": "a-1", "value": value})


ABORTED_TXN = ("pay.init_transactions", "pay.begin_transaction", produce("a-1"), "pay.abort_transaction")


def marks(b: SimBackend, tp: str = "payments-0") -> tuple[int, int]:
    part = b.observe()["partitions"][tp]
    return part["high_watermark"], part["last_stable_offset"]


# -- the produce path: KIP-890 part 1's verification ----------------------------------------------------------------
@pytest.mark.parametrize("client", ["librdkafka", "java"])
def test_it_appends_a_late_write_after_the_abort_on_kafka_3_5_and_the_lso_stays_behind_it(client):
    # 3.5.2 has no transaction verification: UnifiedLog.append -> ProducerStateManager starts a transaction at the
    # batch's offset (ProducerAppendInfo.appendDataBatch, currentTxnFirstOffset) whatever the coordinator knows
    b = backend(Profile("3.5", client))
    assert run(b, *ABORTED_TXN, late("a-2")) == ["ok"] * 5
    assert marks(b) == (3, 2)  # [a-1, ABORT, a-2]: a-2 opened a transaction nothing will end
    run(b, "rc.poll")
    assert b.observe()["consumers"]["rc"]["payments-0"] == []
    b.apply(Step("clock", "advance", {"ms": 3_600_000}))  # the coordinator's timeout scan does not know it
    assert marks(b) == (3, 2)


@pytest.mark.parametrize(
    ("profile", "refused"),
    [
        (Profile("3.9", "librdkafka"), "INVALID_TXN_STATE"),
        (Profile("3.9", "java"), "TRANSACTION_ABORTABLE"),
        (Profile("3.9", "java", "3.5"), "INVALID_TXN_STATE"),  # kafka-clients 3.5 speaks Produce v9 < 11
        (Profile("4", "java", "3.9"), "TRANSACTION_ABORTABLE"),  # classic protocol: verify-only, Produce v11
    ],
)
def test_it_refuses_the_same_late_write_on_kafka_3_9_and_4_with_the_error_its_produce_version_reads(profile, refused):
    # ReplicaManager.maybeStartTransactionVerificationForPartitions (3.6+); AddPartitionsToTxnManager turns
    # TRANSACTION_ABORTABLE into INVALID_TXN_STATE for Produce versions before 11
    b = backend(profile)
    assert run(b, *ABORTED_TXN, late("a-2")) == ["ok"] * 4 + [refused]
    assert marks(b) == (2, 2)


def test_it_skips_the_verification_on_3_9_when_the_broker_setting_is_off():
    # ReplicaManager (3.9): "Skip verification if the request is not transactional or transaction verification is
    # disabled"; UnifiedLog.batchMissingRequiredVerification reads the same setting
    b = backend(Profile("3.9", "java"), **{"transaction.partition.verification.enable": False})
    assert run(b, *ABORTED_TXN, late("a-2")) == ["ok"] * 5
    assert marks(b) == (3, 2)


def test_it_still_adds_the_partition_for_a_v2_client_on_4_with_the_setting_off():
    # 4.x ReplicaManager.maybeSendPartitionsToTransactionCoordinator skips only `!supportsEpochBump &&
    # !transactionPartitionVerificationEnable`: a TV2 Produce still has the coordinator add the partition, and the
    # late batch of the aborted transaction carries the epoch before the abort's bump
    b = backend(Profile("4", "java"), **{"transaction.partition.verification.enable": False})
    steps = (*ABORTED_TXN, "pay.begin_transaction", produce("b-1"), late("a-2"))
    assert run(b, *steps) == ["ok"] * 6 + ["INVALID_PRODUCER_EPOCH"]
    sent = [e for e in b.events if e.kind == "rpc" and e.rpc == "AddPartitionsToTxn" and e.direction == "request"]
    assert sent and all("verifyOnly=false" in e.detail for e in sent)


def test_it_skips_the_verification_of_a_v1_client_on_4_with_the_setting_off():
    b = backend(Profile("4", "java", "3.9"), **{"transaction.partition.verification.enable": False})
    assert run(b, *ABORTED_TXN, late("a-2")) == ["ok"] * 5
    assert marks(b) == (3, 2)


# -- request versions --------------------------------------------------------------------------------------------
def versions_sent(cluster: Cluster, actor: str) -> dict[str, str]:
    return {e.rpc: e.detail.split(",")[0] for e in cluster.events if e.kind == "rpc" and e.src == actor}


def transaction(kafka: str, release: str) -> Cluster:
    cluster = Cluster(3, {}, {"orders": 1}, seed=1, kafka=kafka)
    p = JavaProducer({"transactional.id": "t"}, cluster=cluster, name="A", release=release)
    p.init_transactions()
    p.begin_transaction()
    p.get(p.send("orders", "x", partition=0))
    p.commit_transaction()
    return cluster


@pytest.mark.parametrize(
    ("kafka", "release", "produce", "end_txn", "init"),
    [
        ("3.5", "3.5", "v9", "v3", "v4"),  # ProduceRequest.json 3.5.2: 0-9; EndTxn 0-3; InitProducerId 0-4
        ("3.5", "3.9", "v9", "v3", "v4"),  # a 3.9 client goes down to what a 3.5 broker speaks
        ("3.5", "4", "v9", "v3", "v4"),
        ("3.9", "3.5", "v9", "v3", "v4"),  # a 3.5 client never sends more than its own schemas
        ("3.9", "4", "v11", "v4", "v5"),  # no transaction.version on 3.9: the 4.x client stays classic
        ("4", "3.9", "v11", "v4", "v5"),
        ("4", "3.5", "v9", "v3", "v4"),
    ],
)
def test_it_sends_the_lower_of_the_client_and_the_broker_versions(kafka, release, produce, end_txn, init):
    sent = versions_sent(transaction(kafka, release), "A")
    assert (sent["Produce"], sent["EndTxn"], sent["InitProducerId"]) == (produce, end_txn, init)
    assert "AddPartitionsToTxn" in sent  # the classic protocol in every pair but 4 with 4


def test_it_keeps_the_versions_pinned_for_its_own_release_as_far_as_the_brokers_advertise_them():
    for release in ("3.5", "3.9", "4"):
        p = JavaProducer({"transactional.id": "t"}, cluster=Cluster(1, {}, {}, kafka=release), release=release)
        pinned = dict(API_VERSIONS[release])
        if release == "4":
            # kafka-clients 4.4 knows InitProducerId v6 (KIP-939); a 4.4.0 broker advertises v5 at most
            assert pinned["InitProducerId"] == 6
            pinned["InitProducerId"] = 5
        assert p.versions == pinned
    # and no pair's versions exceed either side's
    for kafka in BROKER_MAX:
        for release in JAVA_CLIENT_MAX:
            p = JavaProducer({"transactional.id": "t"}, cluster=Cluster(1, {}, {}, kafka=kafka), release=release)
            assert all(v <= BROKER_MAX[kafka][api] for api, v in p.versions.items())


def test_it_sends_librdkafkas_late_write_as_produce_v9_to_a_3_5_broker():
    assert latewrite.LIBRDKAFKA_PRODUCE_VERSION == 10
    b = backend(Profile("3.5", "librdkafka"))
    run(b, *ABORTED_TXN, late("a-2"))
    late_rpc = next(e for e in b.events if e.kind == "rpc" and e.rpc == "Produce" and e.src.startswith("network"))
    assert late_rpc.detail.startswith("v9")


# -- kafka-clients 3.5's transaction manager ----------------------------------------------------------------------
def producer(kafka: str, release: str, **conf) -> tuple[Cluster, JavaProducer]:
    cluster = Cluster(3, {}, {"orders": 1}, seed=5, kafka=kafka)
    conf.setdefault("transactional.id", "t")
    return cluster, JavaProducer(conf, cluster=cluster, name="A", release=release)


@pytest.mark.parametrize(("release", "state"), [("3.5", READY), ("3.9", FATAL_ERROR)])
def test_it_poisons_the_manager_on_the_sender_thread_only_from_3_6(release, state):
    # TransactionManager.transitionTo: shouldPoisonStateOnInvalidTransition came with KAFKA-14831 (3.6). A record
    # refused outside a transaction stays in the accumulator and expires in READY; 3.5's Sender logs the invalid
    # transition ("Uncaught error in kafka producer I/O thread") and the producer goes on
    cluster, p = producer("3.9", release, **{"delivery.timeout.ms": 1000})
    p.init_transactions()
    with pytest.raises(JavaException):
        p.send("orders", "stray", partition=0)
    cluster.advance(1500)
    assert p.state == state
    if release == "3.5":
        p.begin_transaction()
        p.get(p.send("orders", "next", partition=0))
        p.commit_transaction()
        assert p.state == READY


@pytest.mark.parametrize(("release", "state"), [("3.5", INITIALIZING), ("3.9", ABORTABLE_ERROR)])
def test_it_enters_abortable_error_from_initializing_only_from_3_6(release, state):
    # State.isTransitionValid: ABORTABLE_ERROR's sources gained INITIALIZING after 3.5.2
    _cluster, p = producer("3.9", release)
    p._set_state(INITIALIZING)
    p.maybe_transition_to_error_state(JavaException("TimeoutException", "expired"))
    assert p.state == state


@pytest.mark.parametrize(("release", "name"), [("3.5", "KafkaException"), ("3.9", "InvalidTxnStateException")])
def test_it_wraps_an_add_partitions_invalid_txn_state_in_kafka_exception_before_3_6(release, name):
    # AddPartitionsToTxnHandler: `fatalError(new KafkaException(error.exception()))` until KAFKA-14278
    _cluster, p = producer("3.9", release)
    p.init_transactions()
    p.begin_transaction()
    p.new_partitions.add("orders-0")
    handler = p._add_partitions_handler()
    handler.on_response("INVALID_TXN_STATE", {})
    assert p.state == FATAL_ERROR and p.last_error.name == name


@pytest.mark.parametrize(
    ("release", "name"), [("3.5", "InvalidProducerEpochException"), ("3.9", "ProducerFencedException")]
)
def test_it_passes_a_txn_offset_commits_invalid_producer_epoch_on_as_it_is_before_3_6(release, name):
    # TxnOffsetCommitHandler: 3.5's isFatalException -> fatalError(error.exception()); KAFKA-14278 made it
    # ProducerFencedException, as the other handlers do
    from playground.sim.clientbase import GroupMetadata
    from playground.sim.java_base import TxnResult

    _cluster, p = producer("3.9", release)
    p.init_transactions()
    p.begin_transaction()
    handler = p._txn_offset_commit_handler(TxnResult("TxnOffsetCommit"), {"orders-0": 1}, GroupMetadata("g", 1, "m"))
    handler.on_response("INVALID_PRODUCER_EPOCH", {})
    assert p.state == FATAL_ERROR and p.last_error.name == name


@pytest.mark.parametrize(("release", "backoffs"), [("3.5", [100, 100, 100, 100]), ("3.9", [100, 200, 400, 800])])
def test_it_backs_off_retries_exponentially_only_from_3_7(release, backoffs):
    # KIP-580 (3.7): retry.backoff.ms doubling up to retry.backoff.max.ms; 3.5's Sender waits retry.backoff.ms
    _cluster, p = producer("3.9", release)
    assert [min(p.retry_backoff_ms * 2**n, p.retry_backoff_max_ms) for n in range(4)] == backoffs


# -- the operator's way out: kafka-transactions.sh abort ------------------------------------------------------------
def test_it_aborts_the_hanging_transaction_as_kafka_transactions_abort_does_and_the_lso_moves_on():
    # TransactionsCommand.AbortTransactionCommand (--start-offset): DescribeProducers, then Admin.abortTransaction
    # with the producer's id, epoch and coordinator epoch: WriteTxnMarkers(ABORT) to the leader
    b = backend(Profile("3.5", "java"))
    run(b, *ABORTED_TXN, late("a-2"))
    assert marks(b) == (3, 2)
    assert run(b, ("broker.abort_transaction", {"partition": "payments-0"})) == ["ok"]
    assert marks(b) == (4, 4)
    log = b.observe()["partitions"]["payments-0"]["log"]
    assert [e.get("value") or e.get("control") for e in log] == ["a-1", "ABORT", "a-2", "ABORT"]
    assert log[3]["epoch"] == log[2]["epoch"]  # the producer's own epoch, as DescribeProducers gave it
    run(b, "rc.poll")
    assert b.observe()["consumers"]["rc"]["payments-0"] == []  # read_committed is past it, and a-2 is aborted
    sent = [e for e in b.events if e.kind == "rpc" and e.rpc == "WriteTxnMarkers" and e.src.startswith("admin")]
    assert sent and "start offset 2" in sent[0].detail


def test_it_finds_no_transaction_to_abort_on_a_partition_without_one():
    b = backend(Profile("3.9", "java"))
    run(b, *ABORTED_TXN)
    assert run(b, ("broker.abort_transaction", {"partition": "payments-0"})) == ["INVALID_TXN_STATE"]
    assert marks(b) == (2, 2)


@pytest.mark.parametrize("release", ["3.5", "3.9", "4"])
def test_it_sends_a_record_joining_one_held_back_outside_a_transaction_at_the_senders_next_round(release):
    # KafkaProducer.doSend wakes the Sender only for a new or a full batch; the record refused outside a transaction
    # keeps its batch, so the next record joins it without a wakeup, and maybeAddPartition wakes nothing either. The
    # Sender's NetworkClient.poll sleeps at most request.timeout.ms: measured with kafka-clients 3.9.1 and 4.4.0 on a
    # 3.9.1 broker, the AddPartitionsToTxn goes out 30 s after the send (tests/kafka/test_java_client.py)
    cluster, p = producer("3.9", release)
    p.init_transactions()
    with pytest.raises(JavaException):
        p.send("orders", "early", partition=0)
    p.begin_transaction()
    sent_at = cluster.now_ms
    future = p.send("orders", "in-txn", partition=0)
    p.get(future)
    assert 30_000 <= cluster.now_ms - sent_at < 31_000
    add = next(e for e in cluster.events if e.kind == "rpc" and e.rpc == "AddPartitionsToTxn")
    assert add.time_ms - sent_at >= 30_000
    # a record that opens a batch of its own wakes the Sender at once
    p.commit_transaction()
    p.begin_transaction()
    started = cluster.now_ms
    p.get(p.send("orders", "next", partition=0))
    assert cluster.now_ms - started < 1_000
