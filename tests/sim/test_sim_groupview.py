"""What the dashboard's consumer groups panel is given of the group coordinator (sim/groupview.py): members with
their assignment, committed offsets and the transactional ones still pending, and each rebalance with its cause:
a join, a leave, a session timeout, a static member taking its place again (no rebalance: the same generation)."""

from __future__ import annotations

import struct

from playground.engine.spec import ActorSpec, ClusterSpec, Profile, Step, TopicSpec
from playground.sim.driver import SimBackend
from playground.sim.groupview import assigned_partitions

SESSION_MS = 45_000


def _backend(*consumers: tuple[str, str | None]) -> SimBackend:
    actors = {
        "shop": ActorSpec("shop", "producer", {"enable.idempotence": True}),
        "copier": ActorSpec("copier", "producer", {"transactional.id": "copier-0"}),
    }
    for name, instance in consumers:
        config = {"group.id": "billing", "isolation.level": "read_committed"}
        if instance is not None:
            config["group.instance.id"] = instance
        actors[name] = ActorSpec(name, "consumer", config, ("orders",))
    cluster = ClusterSpec(brokers=3, topics=(TopicSpec("orders", 2), TopicSpec("out", 1)), config={})
    return SimBackend(cluster, actors, profile=Profile("3.9", "librdkafka"))


def _do(backend: SimBackend, label: str, **args) -> str:
    actor, _, action = label.partition(".")
    return backend.apply(Step(actor, action, args))


def _billing(backend: SimBackend) -> dict:
    return backend.view()["group_details"]["billing"]


def _causes(backend: SimBackend) -> list[tuple[int, list[tuple[str, str]]]]:
    return [
        (r["generation"], [(c["cause"], c["member"]) for c in r["causes"]]) for r in _billing(backend)["rebalances"]
    ]


def test_it_shows_members_their_partitions_and_each_rebalance_with_its_cause():
    b = _backend(("a", None), ("b", None))
    _do(b, "shop.produce", topic="orders", partition=0, value="o-1")
    _do(b, "a.poll")
    _do(b, "b.poll")
    _do(b, "a.poll")
    g = _billing(b)
    assert g["state"] == "Stable" and g["protocol"] == "range"
    assert sorted((m["client_id"], tuple(m["assignment"])) for m in g["members"]) == [
        ("a", ("orders-0",)),
        ("b", ("orders-1",)),
    ]
    _do(b, "b.crash")
    _do(b, "clock.advance", ms=SESSION_MS + 1000)
    _do(b, "a.crash")
    _do(b, "clock.advance", ms=SESSION_MS + 1000)
    assert _causes(b) == [
        (1, [("join", "a")]),
        (2, [("join", "b")]),
        # a, polling no more after b's session ended, never rejoined: one rebalance ends with both gone
        (3, [("session timeout", "b"), ("session timeout", "a")]),
    ]
    assert _billing(b)["state"] == "Empty" and _billing(b)["members"] == []


def test_it_tells_a_static_member_s_return_from_a_rebalance():
    b = _backend(("a", "billing-a"))
    _do(b, "a.poll")
    _do(b, "a.crash")
    _do(b, "a.restart")
    _do(b, "a.poll")
    assert _causes(b) == [(1, [("join", "a")]), (1, [("static rejoin", "a")])]  # generation 1 kept
    (member,) = _billing(b)["members"]
    assert member["instance_id"] == "billing-a" and member["assignment"] == ["orders-0", "orders-1"]


def test_it_shows_offsets_sent_in_a_transaction_as_pending_until_its_marker_then_committed():
    b = _backend(("a", None))
    _do(b, "shop.produce", topic="orders", partition=0, value="o-1")
    _do(b, "copier.init_transactions")
    _do(b, "a.poll")
    _do(b, "copier.begin_transaction")
    _do(b, "copier.produce", topic="out", partition=0, value="o-1")
    assert _do(b, "copier.send_offsets_to_transaction", consumer="a") == "ok"
    g = _billing(b)
    assert g["committed"] == {} and [p["offsets"] for p in g["pending"]] == [{"orders-0": 1}]
    assert _do(b, "copier.commit_transaction") == "ok"
    _do(b, "clock.advance", ms=100)  # the commit returned at PrepareCommit: its markers land after
    g = _billing(b)
    assert g["pending"] == [] and g["committed"] == {"orders-0": 1}


def _assignment(*topics: tuple[str, list[int]], version: int = 3) -> bytes:
    out = struct.pack(">hi", version, len(topics))
    for name, partitions in topics:
        out += struct.pack(">h", len(name)) + name.encode() + struct.pack(">i", len(partitions))
        out += b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)  # no user data


def test_it_reads_a_client_s_assignment_as_the_consumer_protocol_encodes_it_and_nothing_from_garbage():
    assert assigned_partitions(_assignment(("orders", [2, 0]), ("out", [0]))) == ["orders-0", "orders-2", "out-0"]
    assert assigned_partitions(b"") == [] and assigned_partitions(b"\x00\x03\x7f\xff\xff\xff") == []
    assert assigned_partitions(_assignment(("orders", [0]))[:-9]) == []  # cut inside the partitions


def test_it_lists_each_txn_offset_commit_s_kip_447_check_and_a_zombie_s_refusal():
    b = _backend(("a", None), ("b", None))
    _do(b, "shop.produce", topic="orders", partition=0, value="o-1")
    _do(b, "copier.init_transactions")
    _do(b, "a.poll")
    _do(b, "copier.begin_transaction")
    _do(b, "copier.produce", topic="out", partition=0, value="o-1")
    assert _do(b, "copier.send_offsets_to_transaction", consumer="a") == "ok"
    _do(b, "b.poll")  # b joins: the group prepares a rebalance, which a has not rejoined yet
    assert _do(b, "copier.send_offsets_to_transaction", consumer="a") == "ok", "generation 1 is still the group's"
    _do(b, "a.poll")  # a rejoins: generation 2
    cluster = b.cluster
    zombie = b.consumers["a"].client.member_id  # a's member id with its generation 1: a zombie's TxnOffsetCommit
    cluster.handle_txn_offset_commit(
        cluster.groups.coordinator_of("billing"), "billing", 0, 0, 1, zombie, {"orders-0": 1}, lambda *_, **__: None
    )
    first, second, third = _billing(b)["txn_checks"]
    assert (first["generation"], first["member"], first["checked"], first["error"]) == (1, "a", True, None)
    assert (second["generation"], second["error"]) == (1, None)
    assert third["generation"] == 1 and third["error"] == "ILLEGAL_GENERATION"
