"""Static membership (KIP-345) of the simulator's own consumers: a restart within the session timeout takes the old
member's place without a rebalance, a second instance of an id fences the first (its heartbeat is answered
FENCED_INSTANCE_ID: librdkafka's fatal error), a static member leaves no LeaveGroup on close, and one that stops
polling stops heartbeating and is removed when its session times out."""

from __future__ import annotations

from playground.engine.spec import ActorSpec, ClusterSpec, Profile, Step, TopicSpec
from playground.sim.driver import SimBackend

SESSION_MS = 45_000
LIBRDKAFKA = Profile("3.9", "librdkafka")


def _backend(*consumers: tuple[str, str | None], profile: Profile = LIBRDKAFKA) -> SimBackend:
    """A producer `shop` and consumers of group `billing` (name, group.instance.id or None) over orders (2
    partitions)."""
    actors = {"shop": ActorSpec("shop", "producer", {"enable.idempotence": True})}
    for name, instance in consumers:
        config = {"group.id": "billing", "isolation.level": "read_committed"}
        if instance is not None:
            config["group.instance.id"] = instance
        actors[name] = ActorSpec(name, "consumer", config, ("orders",))
    return SimBackend(ClusterSpec(brokers=3, topics=(TopicSpec("orders", 2),), config={}), actors, profile=profile)


def _do(backend: SimBackend, label: str, **args) -> str:
    actor, _, action = label.partition(".")
    return backend.apply(Step(actor, action, args))


def _produce(backend: SimBackend, partition: int, value: str) -> None:
    assert _do(backend, "shop.produce", topic="orders", partition=partition, value=value) == "ok"


def _received(backend: SimBackend, name: str) -> dict[str, list[str]]:
    return {tp: [v for _o, v in recs] for tp, recs in backend.consumers[name].received.items() if recs}


def _group(backend: SimBackend):
    return backend.cluster.groups.groups["billing"]


def test_it_gives_a_restarted_static_member_its_place_at_once_and_the_other_member_reads_on():
    b = _backend(("a", "billing-a"), ("b", "billing-b"))
    _produce(b, 0, "o-1")
    _produce(b, 1, "o-2")
    _do(b, "a.poll")
    assert _do(b, "a.commit") == "ok"
    _do(b, "b.poll")  # b joins: the group waits for a, which learns it from its next heartbeat
    _do(b, "clock.advance", ms=3_000)
    _do(b, "a.poll")  # a rejoins and keeps orders-0, b has orders-1
    generation = _group(b).generation
    assert _received(b, "a") == {"orders-0": ["o-1"], "orders-1": ["o-2"]}
    _do(b, "a.crash")
    _produce(b, 0, "o-3")
    _produce(b, 1, "o-4")
    _do(b, "a.restart")
    assert _do(b, "a.poll") == "ok"
    _do(b, "b.poll")
    assert _group(b).generation == generation, "no rebalance: the same generation"
    assert _received(b, "a") == {"orders-0": ["o-1", "o-3"], "orders-1": ["o-2"]}
    assert _received(b, "b") == {"orders-1": ["o-4"]}, "b read on, its partition never taken away"
    assert b.group_generation("a") == b.group_generation("b") == generation


def test_it_makes_a_restarted_dynamic_member_wait_for_the_old_ones_session_to_end():
    b = _backend(("a", None))
    _produce(b, 0, "o-1")
    _do(b, "a.poll")
    _do(b, "a.commit")
    _do(b, "a.crash")
    _do(b, "a.restart")
    _produce(b, 0, "o-2")
    _do(b, "a.poll")
    assert _received(b, "a") == {"orders-0": ["o-1"]}, "the group still waits for the crashed member"
    _do(b, "clock.advance", ms=SESSION_MS + 1000)
    _do(b, "a.poll")
    assert _received(b, "a") == {"orders-0": ["o-1", "o-2"]}, "its assignment was lost: from the committed offset"
    assert _group(b).generation == 2


def test_a_second_instance_of_an_id_takes_the_place_and_the_first_is_fenced_by_its_next_heartbeat():
    b = _backend(("a", "billing-a"), ("twin", "billing-a"))
    _produce(b, 0, "o-1")
    _do(b, "a.poll")
    _do(b, "twin.poll")
    assert _received(b, "twin") == {"orders-0": ["o-1"]}, "the newer one reads from the committed offsets"
    assert b.consumers["a"].client.fatal_error is None, "not yet: the older one learns it from a heartbeat"
    _do(b, "clock.advance", ms=3_500)
    fatal = b.consumers["a"].client.fatal_error
    assert fatal is not None and fatal.name() == "FENCED_INSTANCE_ID" and fatal.fatal()
    errors = [e for e in b.events if e.kind == "client.error" and e.actor == "a"]
    assert [(e.op, e.error, e.fatal) for e in errors] == [("heartbeat", "FENCED_INSTANCE_ID", True)]
    assert _do(b, "a.commit") == "_FATAL"
    assert _do(b, "a.poll") == "ok" and _received(b, "a") == {"orders-0": ["o-1"]}
    assert _do(b, "twin.commit") == "ok"


def test_a_commit_of_the_older_instance_before_its_heartbeat_is_answered_fenced_instance_id():
    b = _backend(("a", "billing-a"), ("twin", "billing-a"))
    _produce(b, 0, "o-1")
    _do(b, "a.poll")
    _do(b, "twin.poll")
    assert _do(b, "a.commit") == "FENCED_INSTANCE_ID"
    assert b.consumers["a"].client.fatal_error is not None, "librdkafka makes it fatal (rd_kafka_handle_OffsetCommit)"
    assert _do(b, "a.commit") == "_FATAL"


def test_the_java_client_names_the_fence_as_kafka_clients_throws_it():
    java = Profile("3.9", "java")
    b = _backend(("a", "billing-a"), ("twin", "billing-a"), profile=java)
    _produce(b, 0, "o-1")
    _do(b, "a.poll")
    _do(b, "twin.poll")
    assert _do(b, "a.commit") == "FencedInstanceIdException"  # answered FENCED_INSTANCE_ID
    b = _backend(("a", "billing-a"), ("twin", "billing-a"), profile=java)
    _produce(b, 0, "o-1")
    _do(b, "a.poll")
    _do(b, "twin.poll")
    _do(b, "clock.advance", ms=3_500)
    # the heartbeat reset the member: commitSync fails before sending, poll throws what the heartbeat was told
    assert _do(b, "a.commit") == "CommitFailedException"
    assert _do(b, "a.poll") == "FencedInstanceIdException"


def test_a_static_member_closing_sends_no_leavegroup_and_stays_until_its_session_times_out():
    b = _backend(("a", "billing-a"), ("b", "billing-b"))
    _do(b, "a.poll")
    _do(b, "b.poll")
    _do(b, "a.poll")
    members = set(_group(b).members)
    b.consumers["a"].client.close()
    assert not [e for e in b.events if e.kind == "rpc" and e.rpc == "LeaveGroup"]
    assert set(_group(b).members) == members, "its place is kept for its next instance"
    _do(b, "clock.advance", ms=SESSION_MS + 1000)
    assert len(_group(b).members) == 1 and "billing-a" not in _group(b).static_members


def test_a_static_member_that_stops_polling_stops_heartbeating_and_rejoins_at_its_next_poll():
    b = _backend(("a", "billing-a"))
    _produce(b, 0, "o-1")
    _do(b, "a.poll")
    _do(b, "a.commit")
    generation = _group(b).generation
    # max.poll.interval.ms (300 s) without a poll, then its session (45 s): removed, as a silent member is
    _do(b, "clock.advance", ms=300_000 + SESSION_MS + 10_000)
    assert _group(b).members == {}
    beats = [e.time_ms for e in b.events if e.kind == "rpc" and e.rpc == "Heartbeat" and e.direction == "request"]
    assert beats and beats[-1] <= 303_000 + 3_000, "heartbeats stop once max.poll.interval.ms has passed"
    _produce(b, 0, "o-2")
    _do(b, "a.poll")
    # as Kafka counts them: the generation that left the group empty, then the one it joins
    assert _group(b).generation == generation + 2
    assert _received(b, "a") == {"orders-0": ["o-1", "o-2"]}, "its assignment was lost: from the committed offset"


def test_it_lets_a_member_read_on_in_its_generation_until_a_heartbeat_tells_it_of_the_rebalance():
    b = _backend(("a", "billing-a"), ("b", "billing-b"))
    _produce(b, 0, "o-1")
    _do(b, "a.poll")
    generation = _group(b).generation
    _do(b, "b.poll")  # b joins and waits
    _produce(b, 1, "o-2")
    _do(b, "a.poll")  # no heartbeat since: a fetches both partitions, in its generation
    assert _received(b, "a") == {"orders-0": ["o-1"], "orders-1": ["o-2"]} and _received(b, "b") == {}
    assert (_group(b).state, _group(b).generation) == ("PreparingRebalance", generation)
    _do(b, "clock.advance", ms=3_000)  # a's heartbeat is answered REBALANCE_IN_PROGRESS
    _produce(b, 1, "o-3")
    _do(b, "a.poll")  # a rejoins, the last member to: the next generation
    _do(b, "b.poll")
    assert (_group(b).state, _group(b).generation) == ("Stable", generation + 1)
    assert _received(b, "b") == {"orders-1": ["o-2", "o-3"]}, "nothing committed: b starts at the earliest offset"
    assert b.group_generation("a") == b.group_generation("b") == generation + 1
