"""The clients of a core as actors (playground/simserver/clients.py): which requests belong to which instance, what
each was told, and the operations the anomaly checker reads, driven through the pure core without sockets."""

from __future__ import annotations

from playground.protocol import messages
from playground.sim.cluster import Cluster
from playground.simserver.apis import HANDLERS
from playground.simserver.core import ServerCore
from tests.simserver.test_core import FETCH, add_partitions, end_txn, init, produce
from tests.simserver.wire import Client, batch, fetch_body

API_VERSIONS = 18


def tracked(kafka: str = "3.9", reserved: tuple[str, ...] = ()) -> ServerCore:
    cluster = Cluster(brokers=3, topics={"orders": 2}, keep_events=False, kafka=kafka)
    endpoints = {b: ("127.0.0.1", 9000 + b) for b in cluster.broker_ids}
    return ServerCore(cluster, endpoints, start_ms=0, track_clients=True, reserved=reserved, handlers=HANDLERS)


def hello(client: Client, broker: int, software: str = "confluent-kafka-python", version: str = "2.16.1") -> None:
    client.call(broker, API_VERSIONS, 3, {"client_software_name": software, "client_software_version": version})


def test_two_instances_of_one_client_id_are_two_actors_and_the_zombie_keeps_its_requests():
    core = tracked()
    a, b = Client(core, "rdkafka", first_conn=1), Client(core, "rdkafka", first_conn=100)
    for client in (a, b):
        for broker in (1, 2, 3):
            hello(client, broker)
    pid, epoch = init(a, "pay")
    add_partitions(a, "pay", pid, epoch, [("orders", 0)])
    produce(a, ("orders", 0), batch([b"o-1"], pid=pid, epoch=epoch, seq=0, txn=True), "pay")
    pid_b, epoch_b = init(b, "pay")  # fences a
    answer = end_txn(a, "pay", pid, epoch, commit=True)
    assert answer.error_code.name in ("invalid_producer_epoch", "producer_fenced")
    producers = core.clients.producers()
    assert list(producers) == ["rdkafka", "rdkafka#2"]
    zombie, fencer = producers["rdkafka"], producers["rdkafka#2"]
    assert (zombie["producer_id"], zombie["epoch"], zombie["state"], zombie["fenced"]) == (pid, epoch, "FENCED", True)
    assert (fencer["producer_id"], fencer["epoch"], fencer["state"]) == (pid_b, epoch_b, "READY")
    assert zombie["last_error"] == {"op": "EndTxn", "error": answer.error_code.name.upper()}
    assert zombie["counters"] == {"app_sent_ok": 1, "landed": 1, "read_committed_received": 0}
    assert zombie["external"]["software"] == {"library": "confluent-kafka-python", "version": "2.16.1"}
    # the timeline names each instance's requests by its actor
    srcs = {e.src for e in core.cluster.timeline if e.rpc == "InitProducerId" and e.direction == "request"}
    assert srcs == {"rdkafka", "rdkafka#2"}


def test_the_operations_say_what_each_producer_did_and_was_told_at_the_log_position_given():
    core = tracked()
    a = Client(core, "payments")
    core.clients.position = 7
    pid, epoch = init(a, "pay")
    add_partitions(a, "pay", pid, epoch, [("orders", 1)])
    produce(a, ("orders", 1), batch([b"x", b"y"], pid=pid, epoch=epoch, seq=0, txn=True), "pay")
    core.clients.position = 8
    end_txn(a, "pay", pid, epoch, commit=False)
    ops = [(o["n"], o["action"], o["args"].get("value"), o["outcome"]) for o in core.clients.ops]
    assert ops == [
        (7, "init_transactions", None, "ok"),
        (7, "begin_transaction", None, "ok"),
        (7, "produce", "x", "ok"),
        (7, "produce", "y", "ok"),
        (8, "abort_transaction", None, "ok"),
    ]
    assert core.clients.producers()["payments"]["counters"]["read_committed_received"] == 0


def test_a_consumer_is_its_client_id_and_group_and_reads_what_a_fetch_returned():
    core = tracked()
    p = Client(core, "writer")
    produce(p, ("orders", 0), batch([b"a", b"b", b"c"]))
    c = Client(core, "reader", first_conn=50)
    leader = core.cluster.leader_of("orders-0")
    body = fetch_body("orders", 0, 0)
    c.call(leader, FETCH, 11, body)
    consumers = core.clients.consumers()
    assert list(consumers) == ["reader"]
    reader = consumers["reader"]
    assert reader["positions"] == {"orders-0": 3}
    assert reader["received_total"] == 3
    assert [r["offset"] for r in reader["received"]["orders-0"]] == [0, 1, 2]
    poll = [o for o in core.clients.ops if o["action"] == "poll"]
    assert poll and poll[0]["read"] == [["orders-0", 0], ["orders-0", 1], ["orders-0", 2]]


def test_names_stay_clear_of_the_sessions_own_actors_and_a_closed_connection_disconnects_its_actor():
    core = tracked(reserved=("A",))
    a = Client(core, "A")
    init(a, "tx")
    actors = core.clients.producers()
    assert list(actors) == ["A#2"] and actors["A#2"]["external"]["connected"]
    for conn in list(a.conns.values()):
        core.disconnect(core.now_ms, conn)
    assert core.clients.producers()["A#2"]["state"] == "DISCONNECTED"


def test_a_core_that_does_not_track_its_clients_labels_requests_by_client_id_as_before():
    cluster = Cluster(brokers=1, topics={"orders": 1}, keep_events=False)
    core = ServerCore(cluster, {1: ("127.0.0.1", 9001)}, handlers=HANDLERS)
    assert core.clients is None
    client = Client(core, "rdkafka")
    client.call(1, API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"})
    frame = messages.encode_request(3, 12, 99, "rdkafka", messages.build(messages.request_class(3, 12), {}))
    core.receive(core.now_ms, 1, client.conn(1), frame)
    assert core.take_output()
