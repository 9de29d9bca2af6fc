"""The tap's observer fed decoded requests and answers, without sockets: two producers sharing a transactional.id,
the fence and the error the fenced one got next, a producer restarting (no finding), KIP-360's re-initialisation (the
same instance), a topic written inside and outside transactions, groups, and its bounds."""

from __future__ import annotations

from typing import Any

from playground.protocol import messages
from playground.tap import wire
from playground.tap.observer import Observer

T0 = 1_700_000_000_000


class Feed:
    """Plays requests and answers at the observer as the proxy hands them over."""

    def __init__(self, **bounds: Any) -> None:
        self.observer = Observer(**bounds)
        self.now_ms = T0

    def open(self, conn: int, host: str = "10.1.1.1", port: int = 50000, broker: int = 1) -> None:
        self.observer.opened(conn, self.now_ms, broker, host, port)

    def exchange(self, conn: int, api_key: int, version: int, request: dict, response: dict | None, client_id=None):
        self.now_ms += 10
        req = messages.build(messages.request_class(api_key, version), request)
        resp = None if response is None else messages.build(messages.response_class(api_key, version), response)
        self.observer.exchange(conn, self.now_ms, api_key, version, client_id, req, resp)

    def init(self, conn: int, txn: str, pid: int, epoch: int, error: str | None = None, own=(-1, -1)) -> None:
        self.exchange(
            conn, wire.INIT_PRODUCER_ID, 4,
            {"transactional_id": txn, "transaction_timeout": 60_000, "producer_id": own[0], "producer_epoch": own[1]},
            {"error_code": error, "producer_id": pid, "producer_epoch": epoch},
        )  # fmt: skip

    def add_partitions(self, conn: int, txn: str, pid: int, epoch: int, error: str | None = None) -> None:
        self.exchange(
            conn, wire.ADD_PARTITIONS_TO_TXN, 3,
            {"v3_and_below_transactional_id": txn, "v3_and_below_producer_id": pid,
             "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": "orders", "partitions": [0]}]},
            {"results_by_topic_v3_and_below": [{"name": "orders", "results_by_partition": [
                {"partition_index": 0, "partition_error_code": error}]}]},
        )  # fmt: skip

    def end(self, conn: int, txn: str, pid: int, epoch: int, error: str | None = None) -> None:
        self.exchange(
            conn, wire.END_TXN, 3,
            {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": True},
            {"error_code": error},
        )  # fmt: skip

    def produce(self, conn: int, txn: str | None, pid: int, epoch: int, topic="orders", error=None) -> None:
        self.now_ms += 10
        head = wire.ProduceHead(txn, -1, pid, epoch, txn is not None)
        cls = messages.response_class(wire.PRODUCE, 9)
        resp = messages.build(
            cls, {"responses": [{"name": topic, "partition_responses": [{"index": 0, "error_code": error}]}]}
        )
        self.observer.exchange(conn, self.now_ms, wire.PRODUCE, 9, None, head, resp)


def findings(feed: Feed, kind: str) -> list[dict]:
    return [f for f in feed.observer.findings() if f["finding"] == kind]


def test_it_names_the_fencing_connection_the_fenced_one_and_the_error_it_got_next():
    feed = Feed()
    feed.open(1, "10.0.0.5", 41000)  # the payment service: coordinator connection
    feed.open(2, "10.0.0.5", 41001)  # its connection to the partition leader
    feed.open(3, "10.0.0.9", 52000)  # the monitoring component
    feed.init(1, "order-pay", 1000, 0)
    feed.add_partitions(1, "order-pay", 1000, 0)
    feed.produce(2, "order-pay", 1000, 0)
    feed.init(3, "order-pay", 1000, 1)
    feed.end(1, "order-pay", 1000, 0, error="PRODUCER_FENCED")

    (fence,) = findings(feed, "fence")
    assert fence["fencing"]["connection"] == 3 and fence["fencing"]["client"]["client"] == "10.0.0.9:52000"
    assert fence["fenced"]["connections"] == [1, 2] and fence["fenced"]["epoch"] == 0
    assert fence["fenced"]["transaction_open_since_ms"] is not None
    assert fence["next_error"] == {"connection": 1, "api": "EndTxn", "error": "PRODUCER_FENCED",
                                   "at_ms": feed.now_ms}  # fmt: skip
    (shared,) = findings(feed, "shared_transactional_id")
    assert shared["hosts"] == ["10.0.0.5", "10.0.0.9"]
    assert [[c["connection"] for c in i["connections"]] for i in shared["instances"]] == [[1, 2], [3]]


def test_it_does_not_call_a_restart_after_a_finished_transaction_a_finding():
    feed = Feed()
    feed.open(1)
    feed.open(2)
    feed.init(1, "order-pay", 1000, 0)
    feed.add_partitions(1, "order-pay", 1000, 0)
    feed.end(1, "order-pay", 1000, 0)
    feed.observer.closed(1, feed.now_ms)
    feed.init(2, "order-pay", 1000, 1)  # the same service started again
    assert feed.observer.findings() == []
    assert [i["epoch"] for i in feed.observer.report()["transactional_ids"]["order-pay"]] == [0, 1]


def test_it_counts_an_old_instance_that_sends_after_the_new_one_started_as_sharing():
    feed = Feed()
    feed.open(1)
    feed.open(2)
    feed.init(1, "order-pay", 1000, 0)
    feed.init(2, "order-pay", 1000, 1)  # no transaction was open: no fence
    feed.add_partitions(1, "order-pay", 1000, 0, error="INVALID_PRODUCER_EPOCH")
    assert findings(feed, "fence") == []
    (shared,) = findings(feed, "shared_transactional_id")
    assert [i["init_connection"] for i in shared["instances"]] == [1, 2]


def test_it_keeps_one_instance_through_a_kip_360_reinitialisation():
    feed = Feed()
    feed.open(1)
    feed.init(1, "order-pay", 1000, 0)
    feed.add_partitions(1, "order-pay", 1000, 0)
    feed.init(1, "order-pay", 1000, 1, own=(1000, 0))  # after an abortable error, the producer bumps its own epoch
    feed.add_partitions(1, "order-pay", 1000, 1)
    assert feed.observer.findings() == []
    (instance,) = feed.observer.report()["transactional_ids"]["order-pay"]
    assert (instance["producer_id"], instance["epoch"]) == (1000, 1)
    (conn,) = feed.observer.report()["connections"]
    assert [(p["epoch"], p["via"]) for p in conn["producer"]] == [(0, "InitProducerId"), (1, "InitProducerId")]


def test_it_finds_a_topic_written_inside_transactions_and_outside_them_elsewhere():
    feed = Feed()
    feed.open(1)
    feed.open(2, "10.0.0.7", 40000)
    feed.init(1, "order-pay", 1000, 0)
    feed.produce(1, "order-pay", 1000, 0, topic="payments")
    feed.produce(2, None, 2000, 0, topic="payments")  # an idempotent producer writes the same topic
    feed.produce(2, None, 2000, 0, topic="audit")
    (outside,) = findings(feed, "outside_transaction")
    assert outside["topic"] == "payments"
    assert outside["outside"][0]["client"]["client"] == "10.0.0.7:40000"
    assert [i["instance"] for i in outside["inside"]] == [1]


def test_it_records_client_software_and_group_membership():
    feed = Feed()
    feed.open(1)
    feed.exchange(1, wire.API_VERSIONS, 3, {"client_software_name": "apache-kafka-java",
                                            "client_software_version": "3.9.1"}, {}, client_id="billing")  # fmt: skip
    feed.exchange(
        1, wire.JOIN_GROUP, 5, {"group_id": "g", "member_id": "", "protocol_type": "consumer"},
        {"error_code": "MEMBER_ID_REQUIRED", "member_id": "m-1"},
    )  # fmt: skip
    feed.exchange(
        1, wire.JOIN_GROUP, 5, {"group_id": "g", "member_id": "m-1"}, {"generation_id": 3, "member_id": "m-1"}
    )
    feed.exchange(1, wire.HEARTBEAT, 4, {"group_id": "g", "generation_id": 3, "member_id": "m-1"}, {})
    (conn,) = feed.observer.report()["connections"]
    assert conn["client_id"] == "billing"
    assert conn["software"] == {"name": "apache-kafka-java", "version": "3.9.1"}
    assert conn["groups"]["g"]["member_id"] == "m-1" and conn["groups"]["g"]["generation"] == 3
    assert [(e["api"], e["error"]) for e in conn["events"]] == [
        ("JoinGroup", "MEMBER_ID_REQUIRED"), ("JoinGroup", None), ("Heartbeat", None)
    ]  # fmt: skip


def test_it_keeps_the_last_events_of_a_connection_and_forgets_the_oldest_closed_connections():
    feed = Feed(max_events=5, max_closed_connections=2)
    feed.open(1)
    for generation in range(12):
        feed.exchange(1, wire.HEARTBEAT, 4, {"group_id": "g", "generation_id": generation, "member_id": "m"}, {})
    (conn,) = feed.observer.report()["connections"]
    assert [e["generation"] for e in conn["events"]] == [7, 8, 9, 10, 11]
    assert conn["events_dropped"] == 7 and conn["requests"] == {"Heartbeat": 12}
    for c in range(2, 7):
        feed.open(c)
        feed.observer.closed(c, feed.now_ms)
    assert [c["connection"] for c in feed.observer.report()["connections"]] == [1, 5, 6]
