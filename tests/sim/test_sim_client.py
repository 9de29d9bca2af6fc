import pytest

from playground.sim.client import Consumer, Producer, TopicPartition
from playground.sim.cluster import Cluster
from playground.sim.errors import KafkaException


@pytest.fixture
def cluster():
    return Cluster(3, {}, {"orders": 3}, seed=3)


def producer(cluster, name="A", **conf):
    return Producer(conf, cluster=cluster, name=name)


def consumer(cluster, name, isolation="read_committed", **conf):
    c = Consumer({"isolation.level": isolation, "auto.offset.reset": "earliest", **conf}, cluster=cluster, name=name)
    if "group.id" not in conf:
        c.assign([TopicPartition("orders", p) for p in range(3)])
    return c


def drain(c):
    out = []
    while True:
        got = c.consume(100, timeout=1)
        if not got:
            return [m.value() for m in out]
        out.extend(got)


def error_of(fn, *args, **kwargs):
    with pytest.raises(KafkaException) as info:
        fn(*args, **kwargs)
    return info.value.args[0]


def test_it_refuses_produce_outside_a_transaction_with_state(cluster):
    p = producer(cluster, **{"transactional.id": "t"})
    assert error_of(p.produce, "orders", "x").name() == "_STATE"
    p.init_transactions()
    assert error_of(p.produce, "orders", "x").name() == "_STATE"


def test_it_commits_and_read_committed_sees_it_after_the_markers(cluster):
    p = producer(cluster, **{"transactional.id": "t"})
    p.init_transactions()
    p.begin_transaction()
    for i in range(3):
        p.produce("orders", f"v{i}", partition=i)
    p.commit_transaction()
    assert p.state == "READY"
    rc = consumer(cluster, "rc")
    assert sorted(drain(rc)) == ["v0", "v1", "v2"]


def test_it_hides_aborted_records_from_read_committed_only(cluster):
    p = producer(cluster, **{"transactional.id": "t"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("orders", "gone", partition=0)
    p.flush()
    p.abort_transaction()
    assert drain(consumer(cluster, "rc")) == []
    assert drain(consumer(cluster, "ru", "read_uncommitted")) == ["gone"]


def test_it_makes_a_fenced_commit_fatal_with_fenced(cluster):
    a = producer(cluster, "A", **{"transactional.id": "t"})
    b = producer(cluster, "B", **{"transactional.id": "t"})
    a.init_transactions()
    a.begin_transaction()
    a.produce("orders", "a", partition=0)
    a.flush()
    b.init_transactions()
    err = error_of(a.commit_transaction)
    assert err.name() == "_FENCED" and err.fatal()
    assert error_of(a.produce, "orders", "again").name() == "_FATAL"
    assert (b.producer_id, b.epoch) == (a.producer_id, 2)


def test_it_reports_invalid_producer_epoch_for_a_zombies_send_and_turns_it_into_fenced(cluster):
    a = producer(cluster, "A", **{"transactional.id": "t"})
    a.init_transactions()
    a.begin_transaction()
    a.produce("orders", "a", partition=0)
    a.flush()
    producer(cluster, "B", **{"transactional.id": "t"}).init_transactions()
    reports = []
    a.produce("orders", "late", partition=0, on_delivery=lambda err, msg: reports.append(err))
    a.flush()
    assert reports[0].name() == "INVALID_PRODUCER_EPOCH"
    assert a.state == "FATAL_ERROR" and a.fatal_error == "_FENCED"


def test_it_fails_unawaited_sends_only_in_their_delivery_reports(cluster):
    a = producer(cluster, "A", **{"transactional.id": "t"})
    a.init_transactions()
    a.begin_transaction()
    producer(cluster, "B", **{"transactional.id": "t"}).init_transactions()
    a.produce("orders", "fire-and-forget", partition=1)  # no exception
    reports = []
    a.produce("orders", "x", partition=1, on_delivery=lambda err, msg: reports.append(err))
    assert a.flush() == 0
    assert reports and reports[0].name() == "_PURGE_QUEUE"
    assert error_of(a.commit_transaction).name() == "_FENCED"


def test_it_waits_for_init_while_the_old_transaction_is_aborted(cluster):
    a = producer(cluster, "A", **{"transactional.id": "t"})
    a.init_transactions()
    a.begin_transaction()
    a.produce("orders", "a", partition=0)
    a.flush()
    a.crash()
    b = producer(cluster, "B", **{"transactional.id": "t"})
    before = cluster.now_ms
    b.init_transactions()
    assert cluster.now_ms - before >= 500  # one CONCURRENT_TRANSACTIONS retry after 500 ms
    assert b.epoch == 2


def test_it_times_out_init_when_no_broker_answers(cluster):
    for broker in (1, 2, 3):
        cluster.stop_broker(broker)
    p = producer(cluster, **{"transactional.id": "t", "transaction.timeout.ms": 1000})
    err = error_of(p.init_transactions)
    assert err.name() == "_TIMED_OUT" and err.retriable()


def test_it_sends_no_end_txn_for_an_empty_transaction(cluster):
    p = producer(cluster, **{"transactional.id": "t"})
    p.init_transactions()
    p.begin_transaction()
    p.commit_transaction()
    assert not [e for e in cluster.events if e.kind == "rpc" and e.rpc == "EndTxn"]


def test_it_needs_an_abort_after_an_abortable_error(cluster):
    p = producer(cluster, **{"transactional.id": "t"})
    p.init_transactions()
    tc = cluster.txn_coordinator
    cluster.advance(7 * 24 * 3600 * 1000 + 3600 * 1000)  # the id expires while the producer idles
    p.begin_transaction()
    p.produce("orders", "x", partition=0)
    p.flush()
    err = error_of(p.commit_transaction)
    assert err.name() == "INVALID_PRODUCER_ID_MAPPING" and err.txn_requires_abort() and not err.fatal()
    old_pid = p.producer_id
    p.abort_transaction()
    assert p.state == "READY" and p.producer_id != old_pid and p.epoch == 0
    assert tc.metadata("t").producer_id == p.producer_id


def test_it_gives_an_idempotent_producer_its_own_producer_id_without_a_coordinator(cluster):
    p = producer(cluster, "plain", **{"enable.idempotence": True})
    p.produce("orders", "x", partition=0)
    assert p.flush() == 0
    batch = cluster.log("orders-0").batches[0]
    assert batch.producer_id == p.producer_id >= 0 and not batch.transactional


def test_it_writes_non_idempotent_records_with_producer_id_minus_one(cluster):
    p = producer(cluster, "plain")
    p.produce("orders", "x", partition=0)
    p.flush()
    assert cluster.log("orders-0").batches[0].producer_id == -1


def test_it_commits_consumer_offsets_inside_the_transaction(cluster):
    src = producer(cluster, "src")
    for i in range(3):
        src.produce("orders", f"m{i}", partition=0)
    src.flush()
    c = Consumer(
        {"group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": False}, cluster=cluster, name="cin"
    )
    c.subscribe(["orders"])
    assert len(c.consume(10, timeout=1)) == 3
    p = producer(cluster, **{"transactional.id": "t"})
    p.init_transactions()
    p.begin_transaction()
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata())
    assert cluster.groups.committed("g") == {}
    err = error_of(c.committed, [TopicPartition("orders", 0)], timeout=0.2)
    assert err.name() == "_TIMED_OUT"  # UNSTABLE_OFFSET_COMMIT while the offsets are pending
    p.commit_transaction()
    cluster.settle()
    assert c.committed([TopicPartition("orders", 0)])[0].offset == 3


def test_it_drops_transactional_offsets_on_abort(cluster):
    c = Consumer({"group.id": "g", "auto.offset.reset": "earliest"}, cluster=cluster, name="cin")
    c.subscribe(["orders"])
    c.consume(1, timeout=1)
    p = producer(cluster, **{"transactional.id": "t"})
    p.init_transactions()
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition("orders", 0, 5)], c.consumer_group_metadata())
    p.abort_transaction()
    cluster.settle()
    assert cluster.groups.committed("g") == {}


def test_it_rejects_offsets_from_a_stale_group_generation(cluster):
    c = Consumer({"group.id": "g"}, cluster=cluster, name="c1")
    c.subscribe(["orders"])
    c.consume(1, timeout=1)
    stale = c.consumer_group_metadata()
    c2 = Consumer({"group.id": "g"}, cluster=cluster, name="c2")
    c2.subscribe(["orders"])
    c2.consume(1, timeout=1)  # joins: the group waits for c1 to rejoin
    c.consume(1, timeout=1)  # c1 rejoins from its poll: generation 2
    p = producer(cluster, **{"transactional.id": "t"})
    p.init_transactions()
    p.begin_transaction()
    err = error_of(p.send_offsets_to_transaction, [TopicPartition("orders", 0, 1)], stale)
    assert err.name() == "ILLEGAL_GENERATION" and err.txn_requires_abort()


def test_it_keeps_a_crashed_group_member_until_its_session_times_out(cluster):
    c = Consumer({"group.id": "g", "auto.offset.reset": "earliest"}, cluster=cluster, name="c1")
    c.subscribe(["orders"])
    c.consume(1, timeout=1)
    c.crash()
    c2 = Consumer({"group.id": "g", "auto.offset.reset": "earliest"}, cluster=cluster, name="c1")
    c2.subscribe(["orders"])
    c2.consume(1, timeout=1)
    assert c2.assignment() == []
    cluster.advance(45_000)
    c2.consume(1, timeout=1)
    assert len(c2.assignment()) == 3


def _wire(cluster, rpc, actor):
    """(detail, error) of every response `actor` got for `rpc`."""
    return [
        (e.detail, e.error) for e in cluster.timeline if e.rpc == rpc and e.direction == "response" and e.dst == actor
    ]


def test_it_speaks_librdkafkas_request_versions_and_gets_47_for_a_fenced_end_txn(cluster):
    a = producer(cluster, "A", **{"transactional.id": "t"})
    a.init_transactions()
    a.begin_transaction()
    a.produce("orders", "a", partition=0)
    a.flush()
    producer(cluster, "B", **{"transactional.id": "t"}).init_transactions()
    err = error_of(a.commit_transaction)
    assert err.name() == "_FENCED" and err.fatal()
    assert _wire(cluster, "EndTxn", "A") == [("v1", "INVALID_PRODUCER_EPOCH")]  # EndTxn v1: 47, not 90
    assert [d for d, _ in _wire(cluster, "AddPartitionsToTxn", "A")] == ["v0"]
    assert [d.split(",")[0] for d, _ in _wire(cluster, "InitProducerId", "A")] == ["v4"]
    assert a.state == "FATAL_ERROR"
    again = error_of(a.abort_transaction)
    assert again.name() == "_FENCED" and again.fatal()


def test_it_makes_a_fenced_send_offsets_to_transaction_fatal(cluster):
    # measured on Kafka 3.9.1 with confluent-kafka 2.16.1: AddOffsetsToTxn v0 is answered INVALID_PRODUCER_EPOCH,
    # which librdkafka's rd_kafka_txn_handle_AddOffsetsToTxn makes fatal (normalised to _FENCED)
    c = Consumer({"group.id": "g", "auto.offset.reset": "earliest"}, cluster=cluster, name="cin")
    c.subscribe(["orders"])
    c.consume(1, timeout=1)
    a = producer(cluster, "A", **{"transactional.id": "t"})
    a.init_transactions()
    a.begin_transaction()
    a.produce("orders", "a", partition=1)
    a.flush()
    producer(cluster, "B", **{"transactional.id": "t"}).init_transactions()
    err = error_of(a.send_offsets_to_transaction, [TopicPartition("orders", 0, 1)], c.consumer_group_metadata())
    assert err.name() == "_FENCED" and err.fatal() and not err.txn_requires_abort()
    assert a.state == "FATAL_ERROR" and a.fatal_error == "_FENCED"
    assert _wire(cluster, "AddOffsetsToTxn", "A") == [("v0", "INVALID_PRODUCER_EPOCH")]
    commit = error_of(a.commit_transaction)
    assert commit.name() == "_FENCED" and commit.fatal()
    cluster.settle()
    assert cluster.groups.committed("g") == {}


def test_it_sends_end_txn_on_abort_after_a_failed_add_partitions_to_txn(cluster):
    # rd_kafka_txn_handle_AddPartitionsToTxn counts a failed request back into txn_req_cnt, so the abort that
    # follows INVALID_PRODUCER_ID_MAPPING sends EndTxn (answered INVALID_PRODUCER_ID_MAPPING, then the epoch bump)
    p = producer(cluster, **{"transactional.id": "t"})
    p.init_transactions()
    cluster.advance(7 * 24 * 3600 * 1000 + 3600 * 1000)
    p.begin_transaction()
    p.produce("orders", "x", partition=0)
    p.flush()
    assert p.state == "ABORTABLE_ERROR" and p.txn_req_cnt == 1
    p.abort_transaction()
    assert _wire(cluster, "EndTxn", "A") == [("v1", "INVALID_PRODUCER_ID_MAPPING")]
    assert p.state == "READY" and p.epoch == 0
