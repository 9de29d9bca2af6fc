from playground.sim.cluster import Cluster


def reply_box():
    box = {}
    return box, (lambda err=None, **res: box.update(error=err, **res))


def test_it_places_a_group_on_the_leader_of_its_offsets_partition():
    c = Cluster(3, {}, {"orders": 3})
    g = c.groups
    assert g.offsets_partition("copier") == f"__consumer_offsets-{g.partition_for('copier')}"
    assert g.coordinator_of("copier") == c.leader_of(g.offsets_partition("copier"))


def test_it_assigns_partitions_by_range_and_rebalances_when_a_member_leaves():
    c = Cluster(3, {}, {"orders": 3})
    g = c.groups
    broker = g.coordinator_of("grp")
    a, reply_a = reply_box()
    b, reply_b = reply_box()
    c.handle_join_group(broker, "grp", "a", ("orders",), reply_a)
    c.handle_join_group(broker, "grp", "b", ("orders",), reply_b)
    c.handle_rejoin_group(broker, "grp", a["member_id"], reply_box()[1])  # a's next poll
    gen, parts_a = g.assignment("grp", a["member_id"])
    assert parts_a == ("orders-0", "orders-1")
    assert g.assignment("grp", b["member_id"]) == (gen, ("orders-2",))
    c.handle_leave_group("grp", a["member_id"])
    assert g.assignment("grp", b["member_id"]) == (gen, ("orders-2",)), "b reads on until it rejoins"
    c.handle_rejoin_group(broker, "grp", b["member_id"], reply_box()[1])
    assert g.assignment("grp", b["member_id"]) == (gen + 1, ("orders-0", "orders-1", "orders-2"))


def test_it_keeps_the_generation_until_every_member_has_rejoined_and_accepts_its_offsets_meanwhile():
    """Kafka's eager rebalance: a join moves a Stable group to PreparingRebalance; the old members keep their
    partitions, in the old generation, until each rejoins from its poll, and a TxnOffsetCommit of that generation
    is accepted meanwhile (KIP-447 checks the generation, which has not moved yet); the joiner waits."""
    c = Cluster(3, {}, {"orders": 2})
    g = c.groups
    broker = g.coordinator_of("grp")
    a, reply_a = reply_box()
    c.handle_join_group(broker, "grp", "a", ("orders",), reply_a)
    gen, _ = g.assignment("grp", a["member_id"])
    b, reply_b = reply_box()
    c.handle_join_group(broker, "grp", "b", ("orders",), reply_b)
    assert g.groups["grp"].state == "PreparingRebalance"
    assert g.assignment("grp", a["member_id"]) == (gen, ("orders-0", "orders-1"))
    assert g.assignment("grp", b["member_id"]) is None, "the joiner waits for the others"
    assert g.rejoin_needed("grp", a["member_id"]) and not g.rejoin_needed("grp", b["member_id"])
    box, reply = reply_box()
    c.handle_txn_offset_commit(broker, "grp", 7, 0, gen, a["member_id"], {"orders-0": 5}, reply)
    assert box["error"] is None
    c.handle_rejoin_group(broker, "grp", a["member_id"], reply_box()[1])
    assert g.assignment("grp", a["member_id"]) == (gen + 1, ("orders-0",))
    assert g.assignment("grp", b["member_id"]) == (gen + 1, ("orders-1",))
    box, reply = reply_box()
    c.handle_txn_offset_commit(broker, "grp", 7, 0, gen, a["member_id"], {"orders-0": 6}, reply)
    assert box["error"] == "ILLEGAL_GENERATION", "once it completes, the old generation is a zombie's"


def test_it_answers_unstable_offset_commit_while_transactional_offsets_are_pending():
    c = Cluster(3, {}, {"orders": 1})
    g = c.groups
    broker = g.coordinator_of("grp")
    box, reply = reply_box()
    c.handle_txn_offset_commit(broker, "grp", 7, 0, -1, "", {"orders-0": 5}, reply)
    assert box["error"] is None
    box, reply = reply_box()
    c.handle_offset_fetch(broker, "grp", ("orders-0",), True, reply)
    assert box["error"] == "UNSTABLE_OFFSET_COMMIT"
    box, reply = reply_box()
    c.handle_offset_fetch(broker, "grp", ("orders-0",), False, reply)
    assert box["offsets"] == {"orders-0": None}
    g.on_marker(g.offsets_partition("grp"), 7, "COMMIT")
    assert g.committed("grp") == {"orders-0": 5}


def test_it_drops_pending_offsets_on_abort():
    c = Cluster(3, {}, {"orders": 1})
    g = c.groups
    _box, reply = reply_box()
    c.handle_txn_offset_commit(g.coordinator_of("grp"), "grp", 7, 0, -1, "", {"orders-0": 5}, reply)
    g.on_marker(g.offsets_partition("grp"), 7, "ABORT")
    assert g.committed("grp") == {} and g.groups["grp"].pending == {}


def test_it_rejects_requests_at_a_broker_that_is_not_the_group_coordinator():
    c = Cluster(3, {}, {"orders": 1})
    g = c.groups
    other = next(b for b in (1, 2, 3) if b != g.coordinator_of("grp"))
    box, reply = reply_box()
    c.handle_offset_commit(other, "grp", -1, "", {"orders-0": 1}, reply)
    assert box["error"] == "NOT_COORDINATOR"


def _classic_member(c: Cluster, session_timeout_ms: int) -> tuple[int, str, int]:
    """One member of the classic protocol (a client over the wire) in group grp, Stable: (coordinator, member id,
    generation)."""
    broker = c.groups.coordinator_of("grp")
    joined, reply = reply_box()
    c.handle_classic_join_group(
        broker, "grp", "", "app", "/10.0.0.1", session_timeout_ms, 30_000, "consumer", (("range", b""),), False, reply
    )
    c.advance(5_000)  # group.initial.rebalance.delay.ms
    assert joined["error"] is None, joined
    synced, reply = reply_box()
    c.handle_sync_group(broker, "grp", joined["generation_id"], joined["member_id"], "consumer", "range", {}, reply)
    c.advance(10)
    assert synced["error"] is None and c.groups.groups["grp"].state == "Stable", synced
    return broker, joined["member_id"], joined["generation_id"]


def test_a_member_s_offset_commit_keeps_its_session_as_a_heartbeat_does():
    """3.9's GroupCoordinator.doCommitOffsets and 4.x's OffsetMetadataManager.commitOffset move a classic member's
    session deadline on: committing every 8 s without a heartbeat, a member of a 10 s session stays."""
    c = Cluster(1, {}, {"orders": 1})
    broker, member, generation = _classic_member(c, session_timeout_ms=10_000)
    for i in range(4):
        c.advance(8_000)
        box, reply = reply_box()
        c.handle_offset_commit(broker, "grp", generation, member, {"orders-0": i}, reply)
        assert box["error"] is None, (i, box)
    assert member in c.groups.groups["grp"].members
    c.advance(10_500)  # no commit, no heartbeat: the session ends
    assert member not in c.groups.groups["grp"].members
    assert c.groups.groups["grp"].rebalances[-1][2] == (("session timeout", "app"),)


def test_a_transactional_offset_commit_does_not_keep_the_session():
    """handleTxnCommitOffsets moves no deadline (neither 3.9's nor 4.x's): only the member's heartbeats do."""
    c = Cluster(1, {}, {"orders": 1})
    broker, member, generation = _classic_member(c, session_timeout_ms=10_000)
    c.advance(8_000)
    box, reply = reply_box()
    c.handle_txn_offset_commit(broker, "grp", 7, 0, generation, member, {"orders-0": 1}, reply)
    c.advance(10)
    assert box["error"] is None, box
    c.advance(2_500)
    assert member not in c.groups.groups["grp"].members


def test_a_member_given_its_assignment_has_its_session_restarted():
    """propagateAssignment (3.9) restarts the session of every member whose SyncGroup it answers: the time the leader
    took to assign is not counted against them."""
    c = Cluster(1, {}, {"orders": 1})
    _broker, member, _generation = _classic_member(c, session_timeout_ms=10_000)
    synced_ms = c.now_ms - 10
    assert c.groups.groups["grp"].members[member].heartbeat_deadline_ms == synced_ms + 10_000


def test_it_answers_a_known_members_join_in_a_stable_group_without_a_rebalance():
    c = Cluster(3, {}, {"orders": 2})
    g = c.groups
    broker = g.coordinator_of("grp")
    a, reply_a = reply_box()
    c.handle_join_group(broker, "grp", "a", ("orders",), reply_a)
    before = g.assignment("grp", a["member_id"])
    box, reply = reply_box()
    c.handle_rejoin_group(broker, "grp", a["member_id"], reply)
    assert box["error"] is None and g.assignment("grp", a["member_id"]) == before == (1, ("orders-0", "orders-1"))
