"""Which ending of the race between AddOffsetsToTxn and AddPartitionsToTxn a connected kafka-clients application took
(issue 31 item 6; simserver/clients.py's race_endings), told from its requests: fenced on AddOffsetsToTxn (its
sendOffsetsToTransaction threw ProducerFencedException at once) or on AddPartitionsToTxn (the AddOffsetsToTxn queued
behind it was never sent: the call blocked max.block.ms). Driven through the pure core, as kafka-clients 3.9.1 sends
the requests (AddPartitionsToTxn v3, AddOffsetsToTxn v4)."""

from __future__ import annotations

from tests.simserver.test_actors import ADD_OFFSETS, hello, tracked
from tests.simserver.test_core import add_partitions, init
from tests.simserver.wire import Client


def fenced_instance(software: str = "apache-kafka-java") -> tuple[object, Client, int, int]:
    """payments-0's first instance, initialized, then fenced by a second instance's InitProducerId."""
    core = tracked()
    first, second = (
        Client(core, "producer-payments-0", first_conn=1),
        Client(core, "producer-payments-0", first_conn=50),
    )
    for client in (first, second):
        for broker in (1, 2, 3):
            hello(client, broker, software, "3.9.1")
    pid, epoch = init(first, "payments-0")
    init(second, "payments-0")
    return core, first, pid, epoch


def add_offsets(client: Client, pid: int, epoch: int):
    body = {"transactional_id": "payments-0", "producer_id": pid, "producer_epoch": epoch, "group_id": "payments"}
    return client.call(client.core.cluster.txn_coordinator.coordinator_of("payments-0"), ADD_OFFSETS, 4, body)


def test_a_fence_answered_to_add_offsets_is_the_ending_that_throws_at_once():
    core, first, pid, epoch = fenced_instance()
    core.clients.position = 4
    assert add_offsets(first, pid, epoch).error_code.name == "producer_fenced"
    (ending,) = core.clients.race_endings()
    assert ending["actor"] == "producer-payments-0" and ending["transactional_id"] == "payments-0"
    assert ending["ending"] == "offsets_first" and ending["request"] == "AddOffsetsToTxn" and ending["n"] == 4


def test_a_fence_answered_to_add_partitions_is_the_ending_that_blocks_and_rolls_back():
    core, first, pid, epoch = fenced_instance()
    core.clients.position = 6
    answer = add_partitions(first, "payments-0", pid, epoch, [("orders", 1)], version=3)
    assert answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code.name == (
        "producer_fenced"
    )
    (ending,) = core.clients.race_endings()
    assert (ending["ending"], ending["request"], ending["n"]) == ("partitions_first", "AddPartitionsToTxn", 6)


def test_the_first_fence_of_an_instance_decides_and_a_later_one_does_not_change_it():
    core, first, pid, epoch = fenced_instance()
    add_partitions(first, "payments-0", pid, epoch, [("orders", 1)], version=3)
    add_offsets(first, pid, epoch)  # a client would not send it after the fatal error; if it did, still the first
    assert [e["ending"] for e in core.clients.race_endings()] == ["partitions_first"]


def test_librdkafka_and_an_unfenced_instance_take_no_ending():
    core, first, pid, epoch = fenced_instance(software="confluent-kafka-python")
    add_offsets(first, pid, epoch)
    assert core.clients.race_endings() == []
    core, first, pid, epoch = fenced_instance()
    assert core.clients.race_endings() == []
