"""A connected consume-transform-produce loop written as steps (session/polls.py): each send names the consumer that
polled its partitions, and each poll takes the records fetched below the offsets that consumer's next send sends,
the rest at its first poll after it."""

from __future__ import annotations

from playground.session.polls import plan


def _poll(actor: str, *offsets: int, tp: str = "orders-0") -> dict:
    return {"action": "poll", "actor": actor, "read": [[tp, o] for o in offsets]}


def _send(producer: str, offset: int, group: str = "billing", tp: str = "orders-0") -> dict:
    return {
        "action": "send_offsets_to_transaction",
        "actor": producer,
        "args": {"group": group, "offsets": {tp: offset}},
    }


NAMES = {"rdkafka": "reader", "rdkafka#2": "reader-2", "app": "app", "app#2": "app-2"}
GROUPS = {"rdkafka": "billing", "rdkafka#2": "billing"}
FIRST = {"billing": "reader"}


def test_a_poll_takes_what_the_application_was_given_before_its_send_and_the_rest_after():
    ops = [
        _poll("rdkafka", 0, 1, 2, 3, 4),  # fetched five, the application was given three before it sent
        _send("app", 3),
        _poll("rdkafka", 5),  # fetched one more: 3, 4 and 5 were given before the next send
        _send("app", 6),
    ]
    senders, takes = plan(ops, NAMES, GROUPS, FIRST)
    assert senders == {1: "reader", 3: "reader"}
    assert takes == {0: 3, 2: 3}


def test_each_send_names_the_instance_that_polled_its_partitions_and_a_consumer_without_sends_takes_all():
    ops = [
        _poll("rdkafka", 0, 1),
        _poll("rdkafka#2", 0, 1, 2, tp="orders-1"),
        _send("app#2", 2, tp="orders-1"),
        _send("app", 2),
    ]
    senders, takes = plan(ops, NAMES, GROUPS, FIRST)
    assert senders == {2: "reader-2", 3: "reader"}
    assert takes == {0: 2, 1: 2}
    # a send whose partitions nobody of its group polled names the group's first consumer
    assert plan([_send("app", 9, tp="orders-2")], NAMES, GROUPS, FIRST)[0] == {0: "reader"}
    assert plan([_poll("rdkafka", 0, 1, 2)], NAMES, GROUPS, FIRST)[1] == {0: 3}
