"""Static membership (KIP-345) over the wire: the classic group protocol's requests with a group.instance.id, first
against the protocol core (no sockets, virtual time: what each request is answered, as GroupCoordinator.scala and
4.x's GroupMetadataManager answer it), then confluent-kafka (librdkafka 2.16) consumers against `manage.py
simcluster`, as franz-go's programs found it missing: a LeaveGroup by instance id answered NONE and the other member
taking over at once, DescribeGroups naming the instance ids, a second instance of an id fenced."""

from __future__ import annotations

import secrets
import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from playground.protocol import messages
from tests.simserver.test_clients import QUIET, _topic
from tests.simserver.wire import Client, core_for

JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE_GROUPS, OFFSET_COMMIT, FIND_COORDINATOR = 11, 12, 13, 14, 15, 8, 10


# ------------------------------------------------------------------------------------------------ the core


def _join(client: Client, instance: str | None, member_id: str = "", version: int = 5) -> int:
    group = "g"
    return client.send(
        client.core.cluster.groups.coordinator_of(group),
        JOIN,
        version,
        {
            "group_id": group,
            "session_timeout": 30_000,
            "rebalance_timeout": 20_000,
            "member_id": member_id,
            "group_instance_id": instance,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"meta-" + client.client_id.encode()}],
            "reason": None,
        },
    )


def _answer(client: Client, correlation: int, cap_ms: int = 60_000):
    deadline = client.core.now_ms + cap_ms
    while correlation not in client.answers and client.core.now_ms < deadline:
        client.advance(10)
    return client.answers.pop(correlation)


def _coord(client: Client) -> int:
    return client.core.cluster.groups.coordinator_of("g")


def _beat(client: Client, member_id: str, generation: int, instance: str | None) -> str:
    body = {"group_id": "g", "generation_id": generation, "member_id": member_id, "group_instance_id": instance}
    return client.call(_coord(client), HEARTBEAT, 3, body).error_code.name


def _sync(client: Client, member_id: str, generation: int, instance: str | None, assignments=()):
    body = {
        "group_id": "g",
        "generation_id": generation,
        "member_id": member_id,
        "group_instance_id": instance,
        "assignments": [{"member_id": m, "assignment": a} for m, a in assignments],
    }
    return client.send(_coord(client), SYNC, 3, body)


def _stable_pair(core) -> tuple[Client, Client, str, str]:
    """a (instance ia) and b (instance ib) in group g, generation 2, Stable, a the leader: a gets b"A", b b"B"."""
    a, b = Client(core, "a"), Client(core, "b", first_conn=50)
    first = _answer(a, _join(a, "ia"))
    assert first.error_code.name == "none", "a static member joins without MEMBER_ID_REQUIRED"
    a_id = first.member_id
    assert a_id.startswith("ia-")
    _answer(a, _sync(a, a_id, 1, "ia", [(a_id, b"A")]))
    b_pending = _join(b, "ib")
    assert _beat(a, a_id, 1, "ia") == "rebalance_in_progress"
    a_join = _answer(a, _join(a, "ia", a_id))
    b_join = _answer(b, b_pending)
    b_id = b_join.member_id
    assert a_join.generation_id == b_join.generation_id == 2 and a_join.leader == a_id
    assert sorted((m.member_id, m.group_instance_id) for m in a_join.members) == [(a_id, "ia"), (b_id, "ib")]
    b_sync = _sync(b, b_id, 2, "ib")
    _answer(a, _sync(a, a_id, 2, "ia", [(a_id, b"A"), (b_id, b"B")]))
    assert _answer(b, b_sync).assignment == b"B"
    assert core.cluster.groups.groups["g"].state == "Stable"
    return a, b, a_id, b_id


def test_it_lets_a_restarted_static_member_take_its_old_place_and_assignment_without_a_rebalance():
    core = core_for("3.9", topics={"orders": 2}, **{"group.initial.rebalance.delay.ms": 0})
    a, b, a_id, b_id = _stable_pair(core)
    restarted = Client(core, "a", first_conn=100)
    answer = _answer(restarted, _join(restarted, "ia"))
    new_id = answer.member_id
    # the current generation at once; the old leader id, so that the new member (the leader now) does not assign
    assert (answer.error_code.name, answer.generation_id, answer.leader, list(answer.members)) == ("none", 2, a_id, [])
    assert new_id != a_id and new_id.startswith("ia-")
    assert _answer(restarted, _sync(restarted, new_id, 2, "ia")).assignment == b"A"
    group = core.cluster.groups.groups["g"]
    assert (group.generation, group.state, sorted(group.members)) == (2, "Stable", sorted([new_id, b_id]))
    assert _beat(b, b_id, 2, "ib") == "none", "the other member was not asked to rejoin"
    # the old instance, still running, is fenced wherever it names its instance id
    assert _beat(a, a_id, 2, "ia") == "fenced_instance_id"
    assert _answer(a, _sync(a, a_id, 2, "ia")).error_code.name == "fenced_instance_id"
    assert _answer(a, _join(a, "ia", a_id)).error_code.name == "fenced_instance_id"
    commit = a.call(
        _coord(a),
        OFFSET_COMMIT,
        7,
        {
            "group_id": "g",
            "generation_id_or_member_epoch": 2,
            "member_id": a_id,
            "group_instance_id": "ia",
            "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 5}]}],
        },
    )
    assert commit.topics[0].partitions[0].error_code.name == "fenced_instance_id"
    assert _beat(a, a_id, 2, None) == "unknown_member_id", "without its instance id it is an unknown member"


def test_it_tells_a_restarted_static_leader_from_joingroup_v9_that_it_leads_and_may_skip_the_assignment():
    core = core_for("3.9", topics={"orders": 2}, **{"group.initial.rebalance.delay.ms": 0})
    _a, _b, _a_id, b_id = _stable_pair(core)
    restarted = Client(core, "a", first_conn=100)
    answer = _answer(restarted, _join(restarted, "ia", version=9))
    assert (answer.generation_id, answer.leader, answer.skip_assignment) == (2, answer.member_id, True)
    assert sorted((m.member_id, m.group_instance_id) for m in answer.members) == sorted(
        [(answer.member_id, "ia"), (b_id, "ib")]
    )


def test_it_fences_an_older_instance_still_waiting_in_its_joingroup():
    core = core_for("3.9", topics={"orders": 2}, **{"group.initial.rebalance.delay.ms": 0})
    a, b, a_id, b_id = _stable_pair(core)
    c = Client(core, "c", first_conn=150)
    c_pending = _join(c, None)  # a dynamic member: MEMBER_ID_REQUIRED first
    c_id = _answer(c, c_pending).member_id
    c_pending = _join(c, None, c_id)  # the group rebalances; a rejoins and waits for b
    a_pending = _join(a, "ia", a_id)
    assert a_pending not in a.answers
    restarted = Client(core, "a", first_conn=200)
    new_pending = _join(restarted, "ia")
    assert _answer(a, a_pending).error_code.name == "fenced_instance_id"
    b_pending = _join(b, "ib", b_id)
    generations = {_answer(x, p).generation_id for x, p in ((restarted, new_pending), (b, b_pending), (c, c_pending))}
    assert generations == {3}


def test_it_removes_a_static_member_by_its_instance_id_alone_and_answers_each_member():
    core = core_for("3.9", topics={"orders": 2}, **{"group.initial.rebalance.delay.ms": 0})
    a, _b, a_id, b_id = _stable_pair(core)
    admin = Client(core, "admin", first_conn=300)
    answer = admin.call(
        _coord(admin),
        LEAVE,
        3,
        {
            "group_id": "g",
            "members": [
                {"member_id": "", "group_instance_id": "ib"},
                {"member_id": "", "group_instance_id": "nobody"},
                {"member_id": "stale", "group_instance_id": "ia"},
            ],
        },
    )
    assert answer.error_code.name == "none"
    assert [(m.member_id, m.group_instance_id, m.error_code.name) for m in answer.members] == [
        ("", "ib", "none"),
        ("", "nobody", "unknown_member_id"),
        ("stale", "ia", "fenced_instance_id"),
    ]
    group = core.cluster.groups.groups["g"]
    assert list(group.members) == [a_id] and "ib" not in group.static_members
    assert _beat(a, a_id, 2, "ia") == "rebalance_in_progress", "the member that stays rebalances at once"
    assert _answer(a, _join(a, "ia", a_id)).generation_id == 3
    assert b_id not in group.members


def test_it_keeps_a_static_member_that_did_not_rejoin_until_it_misses_the_generations_syncgroup():
    core = core_for("3.9", topics={"orders": 2}, **{"group.initial.rebalance.delay.ms": 0})
    a, _b, a_id, b_id = _stable_pair(core)
    c = Client(core, "c", first_conn=150)
    c_id = _answer(c, _join(c, None)).member_id
    c_pending = _join(c, None, c_id)
    a_pending = _join(a, "ia", a_id)
    # b stays silent (its 30 s session outlasts the 20 s rebalance timeout): the join completes with b in it, for
    # the leader to assign to, where a dynamic member would have been dropped
    a_join = _answer(a, a_pending)
    assert a_join.generation_id == 3
    assert sorted((m.group_instance_id or "") for m in a_join.members) == ["", "ia", "ib"]
    assert _answer(c, c_pending).generation_id == 3
    assert b_id in core.cluster.groups.groups["g"].members
    c_sync = _sync(c, c_id, 3, None)
    _answer(a, _sync(a, a_id, 3, "ia", [(a_id, b"A"), (b_id, b"B"), (c_id, b"C")]))
    assert _answer(c, c_sync).assignment == b"C"
    # b never sends the generation's SyncGroup: after the rebalance timeout it is removed and the others rebalance
    for _ in range(22):
        a.advance(1000)
        beat = _beat(a, a_id, 3, "ia")
        _beat(c, c_id, 3, None)
    assert beat == "rebalance_in_progress"
    assert b_id not in core.cluster.groups.groups["g"].members
    assert "ib" not in core.cluster.groups.groups["g"].static_members


def test_it_describes_each_member_with_its_instance_id():
    core = core_for("3.9", topics={"orders": 2}, **{"group.initial.rebalance.delay.ms": 0})
    a, _b, a_id, b_id = _stable_pair(core)
    described = a.call(_coord(a), DESCRIBE_GROUPS, 4, {"groups": ["g"], "include_authorized_operations": False})
    members = {(m.member_id, m.group_instance_id) for m in described.groups[0].members}
    assert members == {(a_id, "ia"), (b_id, "ib")}


# -------------------------------------------------------------------------------- confluent-kafka clients


def _consumer(bootstrap: str, group: str, instance: str, **extra) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.instance.id": instance,
            "client.id": instance,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 30_000,
            **extra,
            **QUIET,
        }
    )


def _poll_until(consumers: list[Consumer], done, cap_s: float = 60) -> list:
    """Poll every consumer (as their applications would, side by side) until `done(seen)`, `seen` being the
    messages and errors polled so far; returns them."""
    seen: list = []
    deadline = time.monotonic() + cap_s
    while time.monotonic() < deadline and not done(seen):
        for c in consumers:
            msg = c.poll(0.1)
            if msg is not None:
                seen.append(msg)
    return seen


def _partitions(consumer: Consumer) -> list[int]:
    return sorted(tp.partition for tp in consumer.assignment())


def _leave_by_instance(bootstrap: str, group: str, instances: list[str]):
    """What Admin.removeMembersFromConsumerGroup sends (confluent-kafka has no such call): FindCoordinator, then
    LeaveGroup v3 naming members by group.instance.id alone."""

    def call(host: str, port: int, api_key: int, version: int, body: dict):
        with socket.create_connection((host, port), timeout=20) as sock:
            payload = messages.encode_request(
                api_key, version, 7, "admin", messages.build(messages.request_class(api_key, version), body)
            )
            sock.sendall(struct.pack(">i", len(payload)) + payload)
            size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
            return messages.decode_response(api_key, version, sock.recv(size, socket.MSG_WAITALL))[1]

    host, _, port = bootstrap.split(",")[0].rpartition(":")
    found = call(host, int(port), FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
    members = [{"member_id": "", "group_instance_id": i} for i in instances]
    return call(found.host, found.port, LEAVE, 3, {"group_id": group, "members": members})


def test_a_leavegroup_by_instance_id_is_answered_none_and_the_other_member_takes_over_at_once(simcluster):
    bootstrap = simcluster.bootstrap
    topic = _topic(AdminClient({"bootstrap.servers": bootstrap, **QUIET}), partitions=2)
    group = f"g-{secrets.token_hex(3)}"
    first, second = _consumer(bootstrap, group, "static-1"), _consumer(bootstrap, group, "static-2")
    try:
        for c in (first, second):
            c.subscribe([topic])
        _poll_until([first, second], lambda _: len(_partitions(first)) == len(_partitions(second)) == 1)
        assert sorted(_partitions(first) + _partitions(second)) == [0, 1]
        first.close()  # a static member leaves no LeaveGroup behind: its session (30 s) would run on
        answer = _leave_by_instance(bootstrap, group, ["static-1"])
        assert answer.error_code.name == "none"
        assert [(m.group_instance_id, m.error_code.name) for m in answer.members] == [("static-1", "none")]
        started = time.monotonic()
        _poll_until([second], lambda _: _partitions(second) == [0, 1])
        took = time.monotonic() - started
        assert _partitions(second) == [0, 1]
        assert took < 15, f"the other member took over after {took:.1f} s, as if it waited for the 30 s session"
    finally:
        second.close()


def test_describe_consumer_groups_lists_each_members_instance_id(simcluster):
    bootstrap = simcluster.bootstrap
    topic = _topic(AdminClient({"bootstrap.servers": bootstrap, **QUIET}), partitions=2)
    group = f"g-{secrets.token_hex(3)}"
    consumers = [_consumer(bootstrap, group, f"describe-{n}") for n in range(2)]
    try:
        for c in consumers:
            c.subscribe([topic])
        _poll_until(consumers, lambda _: all(len(_partitions(c)) == 1 for c in consumers))
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        described = admin.describe_consumer_groups([group])[group].result(20)
        assert sorted((m.client_id, m.group_instance_id) for m in described.members) == [
            ("describe-0", "describe-0"),
            ("describe-1", "describe-1"),
        ]
    finally:
        for c in consumers:
            c.close()


def test_a_second_consumer_with_the_same_instance_id_fences_the_first(simcluster):
    bootstrap = simcluster.bootstrap
    topic = _topic(AdminClient({"bootstrap.servers": bootstrap, **QUIET}), partitions=1)
    producer = Producer({"bootstrap.servers": bootstrap, **QUIET})
    producer.produce(topic, b"r0", partition=0)
    producer.flush(30)
    group = f"g-{secrets.token_hex(3)}"
    older, newer = _consumer(bootstrap, group, "twin"), _consumer(bootstrap, group, "twin")
    try:
        older.subscribe([topic])
        got = _poll_until([older], lambda seen: any(m.error() is None for m in seen))
        assert [m.value() for m in got if m.error() is None] == [b"r0"]
        newer.subscribe([topic])
        _poll_until([newer], lambda _: _partitions(newer) == [0])
        assert _partitions(newer) == [0], "the newer instance takes the instance id's place and its partition"
        # the older one learns it from its next heartbeat's FENCED_INSTANCE_ID: librdkafka raises a fatal error,
        # which its poll serves as a _FATAL error event
        seen = _poll_until([older], lambda seen: any(m.error() and m.error().code() == KafkaError._FATAL for m in seen))
        fatal = [m.error() for m in seen if m.error() and m.error().code() == KafkaError._FATAL]
        assert fatal and "fenced by other consumer with same group.instance.id" in fatal[0].str()
        with pytest.raises(KafkaException) as raised:
            older.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        assert raised.value.args[0].code() == KafkaError._FATAL
    finally:
        newer.close()
        older.close()
