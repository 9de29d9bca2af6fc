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


OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE_GROUPS, ADD_OFFSETS, TXN_OFFSET_COMMIT, METADATA = 8, 9, 15, 25, 28, 3


def offset_fetch(client: Client, group: str) -> None:
    broker = client.core.cluster.groups.coordinator_of(group)
    client.call(broker, OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}], "require_stable": True})


def test_it_names_every_library_and_version_connected_with_the_kinds_of_client_using_each():
    core = tracked()
    java_producer, java_admin = Client(core, "producer-pay-0", first_conn=1), Client(core, "adminclient-1", 20)
    python_consumer, bootstrap_only = Client(core, "rdkafka", first_conn=40), Client(core, "probe", first_conn=60)
    for broker in (1, 2, 3):  # a client asks ApiVersions on every connection it opens
        for client in (java_producer, java_admin):
            hello(client, broker, "apache-kafka-java", "3.9.1")
        hello(python_consumer, broker)
    hello(bootstrap_only, 1, "librdkafka", "2.6.0")  # a connection that asked nothing else: nobody's yet
    init(java_producer, "pay")
    java_admin.call(1, DESCRIBE_GROUPS, 5, {"groups": ["g"], "include_authorized_operations": False})
    python_consumer.call(core.cluster.leader_of("orders-0"), 1, 11, fetch_body("orders", 0, 0))
    software = core.clients.software(core.conns.values())
    assert [(s["library"], s["version"], s["kinds"]) for s in software] == [
        ("apache-kafka-java", "3.9.1", {"producer": 1, "admin": 1}),
        ("confluent-kafka-python", "2.16.1", {"consumer": 1}),
        ("librdkafka", "2.6.0", {}),
    ]
    assert software[2]["unclaimed"] == 1


def test_an_admin_client_asking_a_groups_offsets_is_an_admin_client_and_an_assigned_consumer_stays_a_consumer():
    core = tracked()
    admin = Client(core, "adminclient-1", first_conn=1)
    offset_fetch(admin, "payments")  # KafkaAdminClient.listConsumerGroupOffsets: an OffsetFetch, nothing else
    admin.call(1, METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    assert core.clients.consumers() == {}
    assert [a["name"] for a in core.clients.admins()] == ["adminclient-1"]
    # a consumer that assign()s its partitions asks its committed offsets before its first Fetch: the same client.id's
    # Fetch makes it the consumer it was
    consumer = Client(core, "reader", first_conn=30)
    offset_fetch(consumer, "payments")
    assert [a["name"] for a in core.clients.admins()] == ["adminclient-1", "reader"]
    leader = core.cluster.leader_of("orders-0")
    consumer.call(leader, 1, 11, fetch_body("orders", 0, 0))
    assert [a["name"] for a in core.clients.admins()] == ["adminclient-1"]
    assert core.clients.consumers()["reader"]["group_id"] == "payments"
    # an admin client's admin request settles it: its later offsets request does not make it a consumer
    admin.call(1, DESCRIBE_GROUPS, 5, {"groups": ["payments"], "include_authorized_operations": False})
    offset_fetch(admin, "payments")
    assert "adminclient-1" not in core.clients.consumers()


def test_a_producers_offsets_sent_in_its_transaction_begin_it_and_are_kept_with_their_partitions():
    core = tracked()
    app = Client(core, "producer-pay-0")
    pid, epoch = init(app, "pay")
    group_coordinator = core.cluster.groups.coordinator_of("payments")
    txn = {"transactional_id": "pay", "producer_id": pid, "producer_epoch": epoch, "group_id": "payments"}
    app.call(core.cluster.txn_coordinator.coordinator_of("pay"), ADD_OFFSETS, 3, txn)
    offsets = [{"partition_index": p, "committed_offset": o, "committed_metadata": ""} for p, o in ((0, 7), (1, 3))]
    body = {**txn, "topics": [{"name": "orders", "partitions": offsets}]}
    app.call(group_coordinator, TXN_OFFSET_COMMIT, 3, {**body, "generation_id": -1, "member_id": ""})
    # the offsets went first (librdkafka sends them while its records' AddPartitionsToTxn waits): they began it
    assert [o["action"] for o in core.clients.ops] == [
        "init_transactions",
        "begin_transaction",
        "send_offsets_to_transaction",
    ]
    (sent,) = [o for o in core.clients.ops if o["action"] == "send_offsets_to_transaction"]
    assert sent["args"] == {"group": "payments", "offsets": {"orders-0": 7, "orders-1": 3}}
    assert sent["outcome"] == "ok"
