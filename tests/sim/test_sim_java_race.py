"""Issue 31 item 6: the race between the application's AddOffsetsToTxn and the Sender's AddPartitionsToTxn in
kafka-clients (javaclient.py, send_offsets_to_transaction's `first`), both endings. A producer fenced between two
transactions sends to a partition new in its next one and calls sendOffsetsToTransaction at once; which of the two
requests TransactionManager's pendingRequests holds first decides what the application sees (TransactionManager.java
nextRequest / enqueueRequest / transitionToFatalError, Sender.java runOnce, TransactionalRequestResult.await)."""

import pytest

from playground.sim.client import GroupMetadata, TopicPartition
from playground.sim.cluster import Cluster
from playground.sim.javaclient import FATAL_ERROR, JavaException, JavaProducer


def fenced_between_transactions(kafka="3.9", **conf):
    """A (transactional.id t) initialized, then fenced by B; A begins a transaction and sends to orders-0 without
    waiting: its AddPartitionsToTxn is not queued yet."""
    cluster = Cluster(3, {}, {"orders": 3, "incoming": 1}, seed=5, kafka=kafka)
    a = JavaProducer({"transactional.id": "t", **conf}, cluster=cluster, name="A", release=kafka)
    b = JavaProducer({"transactional.id": "t"}, cluster=cluster, name="B", release=kafka)
    a.init_transactions()
    b.init_transactions()
    a.begin_transaction()
    future = a.send("orders", "a-1", partition=0)
    return cluster, a, future


def requests(cluster, actor):
    return [e.rpc for e in cluster.events if e.kind == "rpc" and e.direction == "request" and e.src == actor]


def answers(cluster, actor):
    return [
        (e.rpc, e.error) for e in cluster.events if e.kind == "rpc" and e.direction == "response" and e.dst == actor
    ]


def send_offsets(a, first=None):
    offsets, group = [TopicPartition("incoming", 0, 3)], GroupMetadata("g")
    with pytest.raises(JavaException) as info:
        if first is None:
            a.send_offsets_to_transaction(offsets, group)
        else:
            a.send_offsets_to_transaction(offsets, group, first=first)
    return info.value


def test_it_throws_the_fence_from_send_offsets_at_once_when_add_offsets_is_queued_first():
    cluster, a, future = fenced_between_transactions()
    started_ms = cluster.now_ms
    exc = send_offsets(a)  # the default: the listener thread queued AddOffsetsToTxn before the Sender's round
    assert exc.name == "ProducerFencedException" and exc.wire == "PRODUCER_FENCED"
    assert cluster.now_ms - started_ms < 100  # one round trip, not max.block.ms
    assert a.state == FATAL_ERROR
    # the AddPartitionsToTxn queued behind it is never sent: a fatal Sender sends nothing more
    cluster.settle()
    assert requests(cluster, "A")[-1] == "AddOffsetsToTxn" and "AddPartitionsToTxn" not in requests(cluster, "A")
    assert future.done and future.exception.name == "ProducerFencedException"


def test_it_blocks_max_block_ms_and_throws_timeout_exception_when_add_partitions_is_queued_first():
    cluster, a, future = fenced_between_transactions()
    started_ms = cluster.now_ms
    exc = send_offsets(a, first="AddPartitionsToTxn")
    assert exc.name == "TimeoutException"
    assert exc.message == "Timeout expired after 60000ms while awaiting AddOffsetsToTxn"
    assert cluster.now_ms - started_ms == 60_000
    # AddPartitionsToTxn took the fence; the AddOffsetsToTxn queued behind it was never sent
    assert answers(cluster, "A")[-1] == ("AddPartitionsToTxn", "PRODUCER_FENCED")
    assert "AddOffsetsToTxn" not in requests(cluster, "A")
    assert a.state == FATAL_ERROR and a.fenced
    assert future.done and future.exception.name == "ProducerFencedException"  # maybeAbortBatches


def test_it_never_fails_the_queued_add_offsets_handler_however_long_the_application_waits():
    cluster, a, _future = fenced_between_transactions(**{"max.block.ms": 5_000})
    started_ms = cluster.now_ms
    assert send_offsets(a, first="AddPartitionsToTxn").message.startswith("Timeout expired after 5000ms")
    assert cluster.now_ms - started_ms == 5_000
    cluster.advance(600_000)
    queued = [h.name for _p, _s, h in a._requests]
    assert queued == ["AddOffsetsToTxn"] and not a._requests[0][2].result.done
    assert "AddOffsetsToTxn" not in requests(cluster, "A")


def test_it_refuses_the_rollback_with_the_fence_after_the_timeout():
    # KafkaProducer.abortTransaction -> beginAbort: not ABORTABLE_ERROR, so maybeFailWithError throws a new
    # ProducerFencedException ("has been fenced by another producer with the same transactionalId"); nothing is sent
    cluster, a, _future = fenced_between_transactions()
    send_offsets(a, first="AddPartitionsToTxn")
    sent = len(requests(cluster, "A"))
    with pytest.raises(JavaException) as info:
        a.abort_transaction()
    assert info.value.name == "ProducerFencedException"
    assert "has been fenced by another producer with the same transactionalId" in info.value.message
    assert len(requests(cluster, "A")) == sent


def test_it_throws_the_fence_from_send_offsets_when_the_fence_came_back_before_the_call():
    # what a real cluster shows when the application's calls are a round trip apart (the fidelity suite's steps):
    # the AddPartitionsToTxn answer has made the producer fatal already, and sendOffsetsToTransaction's
    # maybeFailWithError throws at once, whichever request would have been queued first
    for first in ("AddOffsetsToTxn", "AddPartitionsToTxn"):
        cluster, a, _future = fenced_between_transactions()
        cluster.advance(1_000)
        started_ms = cluster.now_ms
        exc = send_offsets(a, first=first)
        assert exc.name == "ProducerFencedException" and cluster.now_ms == started_ms
        assert "has been fenced by another producer" in exc.message


def test_it_has_no_race_to_choose_under_transaction_protocol_2():
    # kafka-clients 4.x on Kafka 4: no AddPartitionsToTxn, no AddOffsetsToTxn (TxnOffsetCommit straight away)
    for first in ("AddOffsetsToTxn", "AddPartitionsToTxn"):
        cluster, a, _future = fenced_between_transactions(kafka="4")
        exc = send_offsets(a, first=first)
        assert exc.name == "ProducerFencedException"
        assert not {"AddPartitionsToTxn", "AddOffsetsToTxn"} & set(requests(cluster, "A"))
