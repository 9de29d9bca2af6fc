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
    gen, parts_a = g.assignment("grp", a["member_id"])
    assert parts_a == ("orders-0", "orders-1")
    assert g.assignment("grp", b["member_id"]) == (gen, ("orders-2",))
    c.handle_leave_group("grp", a["member_id"])
    assert g.assignment("grp", b["member_id"]) == (gen + 1, ("orders-0", "orders-1", "orders-2"))


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
