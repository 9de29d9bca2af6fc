from playground.sim.cluster import Cluster


def test_it_spreads_leaders_over_the_brokers_predictably():
    c = Cluster(3, {}, {"orders": 4})
    assert [c.leader_of(f"orders-{p}") for p in range(4)] == [1, 2, 3, 1]
    assert c.partitions["orders-0"].replicas == (1, 2, 3)
    assert c.txn_coordinator.coordinator_of("my-txn") == 1  # __transaction_state-45: 45 % 3 = 0 -> broker 1


def test_it_moves_leadership_to_the_next_live_replica_and_not_back():
    c = Cluster(3, {}, {"orders": 1})
    c.stop_broker(1)
    assert c.leader_of("orders-0") == 2
    c.start_broker(1)
    assert c.leader_of("orders-0") == 2
    c.stop_broker(2)
    c.stop_broker(3)
    assert c.leader_of("orders-0") == 1


def test_it_leaves_a_partition_without_leader_when_all_replicas_are_down():
    c = Cluster(1, {}, {"orders": 1})
    c.stop_broker(1)
    assert c.leader_of("orders-0") is None
    c.start_broker(1)
    assert c.leader_of("orders-0") == 1


def test_it_answers_rpcs_after_the_configured_latency():
    c = Cluster(3, {"sim.latency.ms": 4, "sim.broker.2.latency.ms": 10}, {"orders": 1})
    got = []
    c.rpc(
        "Test",
        "client",
        2,
        "b2",
        "",
        lambda broker, reply: reply(None, value=1),
        lambda err, res: got.append((c.now_ms, err, res)),
    )
    c.settle()
    assert got == [(28, None, {"value": 1})]


def test_it_fails_requests_to_a_stopped_broker_with_a_transport_error():
    c = Cluster(3, {}, {"orders": 1})
    got = []
    c.stop_broker(3)
    c.rpc("Test", "client", 3, "b3", "", lambda broker, reply: reply(None), lambda err, res: got.append(err))
    c.settle()
    assert got == ["_TRANSPORT"]


def test_it_hands_out_producer_ids_from_blocks_of_1000_per_broker():
    c = Cluster(3, {}, {})
    ids = c.txn_coordinator.producer_ids
    assert [ids.generate(1), ids.generate(1), ids.generate(2)] == [0, 1, 1000]


def test_it_advances_the_clock_and_records_it():
    c = Cluster(3, {}, {})
    c.advance(1500)
    assert c.now_ms == 1500 and c.events[-1].kind == "clock"
