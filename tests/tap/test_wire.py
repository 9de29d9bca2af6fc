"""The tap's reading of frames, without sockets: a Produce request's producer from its head alone, and the answers
that name brokers written again with the tap's addresses, every other field as the broker wrote it."""

from __future__ import annotations

import pytest

from playground.protocol import messages, records
from playground.tap import wire


def produce_frame(version: int, *, transactional_id: str | None, transactional: bool, value_bytes: int = 10) -> bytes:
    batch = records.encode_batch(
        [records.Record(0, 1_700_000_000_000, b"k", b"v" * value_bytes)],
        producer_id=4242,
        producer_epoch=7,
        base_sequence=0,
        transactional=transactional,
    )
    topic = {"partition_data": [{"index": 2, "records": batch}]}
    topic |= {"topic_id": 0} if version >= 13 else {"name": "orders"}
    body = {"transactional_id": transactional_id, "acks": -1, "timeout": 30_000, "topic_data": [topic]}
    cls = messages.request_class(wire.PRODUCE, version)
    return messages.encode_request(wire.PRODUCE, version, 5, "client-a", messages.build(cls, body))


@pytest.mark.parametrize("version", [3, 8, 9, 11, 13])
def test_it_reads_a_transactional_produce_requests_producer_from_its_head_alone(version):
    payload = produce_frame(version, transactional_id="order-pay", transactional=True, value_bytes=50_000)
    head = wire.read_produce_head(payload[:4096])
    assert head == wire.ProduceHead("order-pay", -1, 4242, 7, True)


def test_it_reads_an_idempotent_produce_as_outside_any_transaction():
    head = wire.read_produce_head(produce_frame(9, transactional_id=None, transactional=False))
    assert head == wire.ProduceHead(None, -1, 4242, 7, False)


def test_it_leaves_the_producer_unknown_when_the_head_ends_before_the_batch_header():
    payload = produce_frame(9, transactional_id="x" * 200, transactional=True)
    head = wire.read_produce_head(payload[:230])
    assert head is None or head.producer_id is None


def metadata_answer(version: int) -> bytes:
    cls = messages.response_class(wire.METADATA, version)
    body = messages.build(
        cls,
        {
            "brokers": [
                {"node_id": 1, "host": "10.0.0.1", "port": 9092, "rack": "a"},
                {"node_id": 2, "host": "10.0.0.2", "port": 9092, "rack": None},
            ],
            "cluster_id": "abc",
            "controller_id": 2,
            "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "leader_id": 1, "replica_nodes": [1, 2],
                                                          "isr_nodes": [1, 2]}]}],
        },
    )  # fmt: skip
    return messages.encode_response(wire.METADATA, version, 9, body)


@pytest.mark.parametrize("version", [1, 9, 12])
def test_it_rewrites_metadata_brokers_to_its_listeners_and_keeps_every_other_field(version):
    payload = metadata_answer(version)
    _, body = messages.decode_response(wire.METADATA, version, payload)
    assert messages.encode_response(wire.METADATA, version, 9, wire.rewrite(body, lambda node: None)) == payload
    assert wire.brokers_named(body) == [(1, "10.0.0.1", 9092), (2, "10.0.0.2", 9092)]
    moved = wire.rewrite(body, lambda node: ("127.0.0.1", 40000 + node))
    assert [(b.node_id, b.host, b.port) for b in moved.brokers] == [(1, "127.0.0.1", 40001), (2, "127.0.0.1", 40002)]
    assert moved.topics == body.topics and moved.controller_id == body.controller_id


@pytest.mark.parametrize("version", [2, 4])
def test_it_rewrites_the_coordinator_of_find_coordinator_old_and_new(version):
    cls = messages.response_class(wire.FIND_COORDINATOR, version)
    data = (
        {"coordinators": [{"key": "g", "node_id": 3, "host": "10.0.0.3", "port": 9092}]}
        if version >= 4
        else {"node_id": 3, "host": "10.0.0.3", "port": 9092}
    )
    body = messages.build(cls, data)
    moved = wire.rewrite(body, lambda node: ("127.0.0.1", 41000 + node))
    coordinator = moved.coordinators[0] if version >= 4 else moved
    assert (coordinator.host, coordinator.port) == ("127.0.0.1", 41003)


def test_it_leaves_a_coordinator_not_found_as_the_broker_said_it():
    cls = messages.response_class(wire.FIND_COORDINATOR, 3)
    body = messages.build(cls, {"error_code": "COORDINATOR_NOT_AVAILABLE", "node_id": -1, "host": "", "port": -1})
    assert wire.brokers_named(body) == []
    assert wire.rewrite(body, lambda node: ("127.0.0.1", 1)) is body


def test_it_rewrites_describe_cluster_and_the_leader_a_produce_answer_names():
    cls = messages.response_class(wire.DESCRIBE_CLUSTER, 1)
    body = messages.build(cls, {"cluster_id": "c", "brokers": [{"broker_id": 2, "host": "h", "port": 1, "rack": None}]})
    assert wire.rewrite(body, lambda node: ("127.0.0.1", 5)).brokers[0].port == 5
    cls = messages.response_class(wire.PRODUCE, 10)
    body = messages.build(cls, {"node_endpoints": [{"node_id": 1, "host": "h", "port": 9, "rack": None}]})
    assert wire.node_endpoints_version(wire.PRODUCE, 10) and not wire.node_endpoints_version(wire.PRODUCE, 9)
    assert wire.rewrite(body, lambda node: ("127.0.0.1", 6)).node_endpoints[0].port == 6
