"""Connected consumers across a rebalance (issue 31 item 4): two instances of an application sharing one client.id are
two consumers; after the second joins, each shows the positions of the partitions its SyncGroup answer gave it and
no other; "received" is what each application was given: the records the first had fetched ahead and never handed
out, which the group fetches again from the committed offset after the rebalance, count once, for whoever got them
then. An admin client with the same client.id stays an admin client. Real confluent-kafka clients against a
session's listener."""

from __future__ import annotations

from collections import Counter

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from playground import session
from playground.session import external, listener
from playground.web import broadcast

from .test_listener import (
    QUIET,
    Producer,
    _listeners,  # noqa: F401  (the fixture closes the test's listeners)
    listen,
    wait_for,
)

pytestmark = [pytest.mark.django_db(transaction=True)]

PER_PARTITION = 10
TOTAL = 3 * PER_PARTITION


def _instance(bootstrap: str) -> Consumer:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "billing",
            "client.id": "billing",  # both instances: as an application's instances usually are
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **QUIET,
        }
    )
    c.subscribe(["orders"])
    return c


def _take(c: Consumer, given: list[tuple[str, int]]) -> None:
    """One poll: a record the application is given, committed at once (what it was given is what it committed)."""
    m = c.poll(0.1)
    if m is not None and not m.error():
        given.append((f"{m.topic()}-{m.partition()}", m.offset()))
        c.commit(message=m, asynchronous=False)


def _seen(sid: str) -> tuple[dict, list[dict]]:
    live = session.load(sid)
    with listener.reading(live):  # as a render reads it, while the listener feeds the session
        return broadcast.view_of(live), external.history_ops(live.backend)


def test_it_shows_each_instance_its_own_partitions_and_what_its_application_was_given(client, sim_session):
    sid = sim_session.id
    bootstrap = listen(client, sid)
    feed = Producer({"bootstrap.servers": bootstrap, "client.id": "feed", **QUIET})
    for i in range(TOTAL):
        feed.produce("orders", value=f"o-{i}".encode(), partition=i % 3)
    assert feed.flush(20) == 0
    one = _instance(bootstrap)
    two = None
    given: dict[str, list[tuple[str, int]]] = {"billing": [], "billing#2": []}
    try:
        wait_for(lambda: _take(one, given["billing"]) or len(given["billing"]) >= 2, "the first instance given 2")
        # its client fetched every partition ahead: until a rebalance, all it fetched counts as received
        before = wait_for(
            lambda: (lambda c: c if c and c["received_total"] == TOTAL else None)(
                _seen(sid)[0]["consumers"].get("billing")
            ),
            "the first instance's client fetching everything",
        )
        assert sorted(before["positions"]) == ["orders-0", "orders-1", "orders-2"]
        two = _instance(bootstrap)

        def all_given() -> bool:
            _take(one, given["billing"])
            _take(two, given["billing#2"])
            return sum(len(g) for g in given.values()) >= TOTAL and bool(one.assignment() and two.assignment())

        wait_for(all_given, "both instances assigned, every record given once", cap_s=60)
        assert len({r for g in given.values() for r in g}) == TOTAL == sum(len(g) for g in given.values())
        assignment = {
            "billing": sorted(f"{p.topic}-{p.partition}" for p in one.assignment()),
            "billing#2": sorted(f"{p.topic}-{p.partition}" for p in two.assignment()),
        }
        admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "billing", **QUIET})
        request = [ConsumerGroupTopicPartitions("billing", [TopicPartition("orders", 0)])]
        listed = admin.list_consumer_group_offsets(request)["billing"].result(20)
        assert listed.topic_partitions[0].offset == PER_PARTITION

        def settled():
            view, ops = _seen(sid)
            shown = {
                n: c for n, c in view["consumers"].items() if (c.get("external") or {}).get("client_id") == "billing"
            }
            admins = [a for a in view["external"]["admins"] if a["client_id"] == "billing"]
            if set(shown) != set(given) or not admins:
                return None
            if any(shown[n]["received_total"] != len(given[n]) for n in given):
                return None
            return shown, ops, admins

        shown, ops, admins = wait_for(settled, "the page showing what each instance was given")
        page = client.get(f"/s/{sid}/").content.decode()
        panel = page[page.index('id="p-groups"') : page.index('id="h-db"')]
    finally:
        one.close()
        if two is not None:
            two.close()
    # the groups panel names each member as the session names its client, the partitions each owns beside them
    for name in given:
        assert f"<code>{name}</code>" in panel, panel
    for name, tps in assignment.items():
        assert all(f'<code>{tp}</code> <small class="muted">{name}</small>' in panel for tp in tps), panel
    # two consumers, one per instance, and the admin client apart from them
    assert [a["name"] for a in admins] == ["billing#3"]
    assert shown["billing"]["external"]["member_id"] != shown["billing#2"]["external"]["member_id"]
    for name in given:
        # positions follow the assignment: a partition that moved to the other instance is not shown any more
        assert sorted(shown[name]["positions"]) == assignment[name] == shown[name]["external"]["assignment"], name
        # received: what the application was given
        assert shown[name]["received_total"] == len(given[name]), (name, shown[name]["received_total"], given[name])
        kept = {(tp, r["offset"]) for tp, rows in shown[name]["received"].items() for r in rows}
        assert kept == set(given[name]), name
        # its polls read each record once: the refetch after the rebalance is not a second delivery
        reads = Counter((tp, o) for op in ops if op["actor"] == name for tp, o in op.get("read") or ())
        assert not [r for r, n in reads.items() if n > 1], name
