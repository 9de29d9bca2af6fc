"""The door of a session's listener (issue 30): what a Kafka client sends is bounded as a broker bounds it, with
Kafka's own errors, as a real client hears them (confluent-kafka here): a record over message.max.bytes, a topic of
100,000 partitions, a flood that the produce quota throttles and retention trims, the disk full, a client that takes
more than its share of a core. The bounds in force are in the log, so a replay bounds the same way."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from playground import session
from playground.session import external, listener

from .test_listener import (
    QUIET,
    _listeners,  # noqa: F401  (autouse: every test's listeners closed after it)
    listen,
    quiet,
    rows,
    wait_for,
)

pytestmark = [pytest.mark.django_db(transaction=True)]


def deliver(producer: Producer, topic: str, value: bytes, partition: int = 0) -> KafkaError | None:
    outcome: list[KafkaError | None] = []
    producer.produce(topic, value=value, partition=partition, on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(30)
    assert outcome, "the delivery report did not come"
    return outcome[0]


def test_the_listen_entry_records_the_bounds_a_replay_keeps(client, sim_session, settings):
    settings.PLAYGROUND_LIMITS = {"kafka_batch_bytes": 5000}
    listen(client, sim_session.id)
    (entry,) = [e for e in rows(sim_session.id) if external.LISTEN in e]
    config = entry[external.LISTEN]["config"]
    assert config["message.max.bytes"] == "5000"
    assert config["producer_byte_rate"] == str(float(256 * 1024))
    assert config["sim.policy.max.partitions"] == "128"


def test_a_record_over_the_batch_bound_is_refused_as_kafka_refuses_it(client, sim_session, settings):
    settings.PLAYGROUND_LIMITS = {"kafka_batch_bytes": 50_000}
    bootstrap = listen(client, sim_session.id)
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "big-records", **QUIET})
    err = deliver(producer, "orders", os.urandom(60_000))
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE  # MESSAGE_TOO_LARGE (10) on the wire
    assert deliver(producer, "orders", os.urandom(40_000)) is None


def test_a_topic_of_100000_partitions_is_refused_by_the_policy_with_its_reason(client, sim_session):
    bootstrap = listen(client, sim_session.id)
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    future = admin.create_topics([NewTopic("big", 100_000, 1)])["big"]
    with pytest.raises(Exception) as refused:
        future.result(30)
    err = refused.value.args[0]
    assert err.code() == KafkaError.POLICY_VIOLATION
    assert "100000 partitions" in err.str() and "64 per topic" in err.str()
    ok = admin.create_topics([NewTopic("fine", 4, 1)])["fine"]
    ok.result(30)
    assert session.load(sim_session.id).backend.cluster.partition_count("fine") == 4


def test_a_flood_is_throttled_retention_trims_it_and_the_disk_full_refuses_it(client, sim_session, settings):
    settings.PLAYGROUND_LIMITS = {
        "kafka_produce_bytes_per_s": 200_000,
        "kafka_segment_bytes": 1_100_000,  # a segment holds a batch of librdkafka's (batch.size 1,000,000)
        "kafka_retention_bytes": 1_100_000,
        "kafka_retained_bytes": 8_000_000,
    }
    sid = sim_session.id
    bootstrap = listen(client, sid)
    throttled: list[float] = []
    errors: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "flood",
            "linger.ms": 5,
            "queue.buffering.max.kbytes": 8192,  # what it keeps queued, and how long it keeps trying (flush ends)
            "message.timeout.ms": 10_000,
            "throttle_cb": lambda event: throttled.append(event.throttle_time),
            **QUIET,
        }
    )
    deadline = time.monotonic() + 6
    sent = 0
    while time.monotonic() < deadline:
        try:
            producer.produce(
                "orders",
                value=os.urandom(20_000),
                partition=sent % 3,
                on_delivery=lambda err, _msg: errors.append(err.name()) if err else None,
            )
            sent += 1
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.flush(60)
    assert throttled, "the produce quota never throttled the flood"
    quiet(sid)
    live = session.load(sid)
    core = external.core_of(live.backend)
    logs = [live.backend.cluster.log(f"orders-{p}") for p in range(3)]
    assert any(log.log_start_offset > 0 for log in logs)  # retention deleted old segments
    assert core.storage.retained_bytes <= 8_000_000
    view = live.backend.view(200)
    starts = {p["partition"]: p["log_start_offset"] for p in view["partitions"].values() if p["topic"] == "orders"}
    assert any(starts.values())  # the page reads where the log now starts
    # the same log, replayed from scratch, deletes the same segments
    quiet(sid)
    listener.stop(sid)
    before = [log.log_start_offset for log in logs]
    session.CACHE.evict(sid)
    again = session.load(sid)
    assert [again.backend.cluster.log(f"orders-{p}").log_start_offset for p in range(3)] == before


def test_a_full_disk_refuses_produce_with_the_reason(client, sim_session, settings):
    settings.PLAYGROUND_LIMITS = {"kafka_retained_bytes": 100_000, "kafka_retention_bytes": 10_000_000}
    bootstrap = listen(client, sim_session.id)
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "filler", "linger.ms": 0, **QUIET})
    outcomes = [deliver(producer, "orders", os.urandom(30_000)) for _ in range(6)]
    refused = [e for e in outcomes if e is not None]
    assert refused and refused[0].code() == KafkaError.POLICY_VIOLATION


def test_a_client_taking_more_than_its_share_of_a_core_is_muted(client, sim_session, settings, monkeypatch):
    settings.PLAYGROUND_LIMITS = {"kafka_request_cpu_percent": 1}
    throttles: list[int] = []
    original = listener.SessionListener._charge

    def charge(self, cpu_s):
        was = self.unthrottle
        original(self, cpu_s)
        if self.unthrottle is not None and self.unthrottle is not was:
            throttles.append(self.unthrottle.when() - asyncio.get_running_loop().time())

    monkeypatch.setattr(listener.SessionListener, "_charge", charge)
    bootstrap = listen(client, sim_session.id)
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    wait_for(lambda: (admin.list_topics(timeout=10), throttles)[1], "the request quota throttling the client")
    # at 1% of a core the unbounded throttle would be tens of seconds; Kafka's is one quota window at most
    assert max(throttles) <= 1.0


def test_the_request_quota_counts_the_time_writing_the_answers_too(client, sim_session, monkeypatch):
    from playground.simserver import server

    charged: list[float] = []
    original_charge, original_write = listener.SessionListener._charge, server.Connection.write

    def charge(self, cpu_s):
        charged.append(cpu_s)
        original_charge(self, cpu_s)

    def slow_write(self, data):
        spin_until = time.thread_time() + 0.05  # a network thread's time for one answer
        while time.thread_time() < spin_until:
            pass
        original_write(self, data)

    monkeypatch.setattr(listener.SessionListener, "_charge", charge)
    monkeypatch.setattr(server.Connection, "write", slow_write)
    admin = AdminClient({"bootstrap.servers": listen(client, sim_session.id), **QUIET})
    admin.list_topics(timeout=10)
    assert max(charged) >= 0.05  # Kafka's request quota records the network thread's time as well (KIP-124)


def test_a_client_reconnecting_in_a_loop_is_accepted_at_the_connection_creation_rate(client, sim_session, settings):
    import socket
    import struct

    from playground.protocol import messages

    settings.PLAYGROUND_LIMITS = {"kafka_connections_per_s": 1}
    host, port = listen(client, sim_session.id).split(",")[0].rsplit(":", 1)
    (entry,) = [e for e in rows(sim_session.id) if external.LISTEN in e]
    assert entry[external.LISTEN]["config"]["max.connection.creation.rate"] == "1.0"
    body = messages.build(messages.request_class(18, 3), {"client_software_name": "t", "client_software_version": "1"})
    payload = messages.encode_request(18, 3, 1, "reconnecting", body)
    started = time.monotonic()
    socks = [socket.create_connection((host, int(port)), timeout=30) for _ in range(13)]
    try:
        for sock in socks:
            sock.sendall(struct.pack(">i", len(payload)) + payload)
        answered_after_s = []
        for sock in socks:
            size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
            assert len(sock.recv(size, socket.MSG_WAITALL)) == size
            answered_after_s.append(time.monotonic() - started)
    finally:
        for sock in socks:
            sock.close()
    # ten in the least window measured (10 s) is the rate; past it the broker's acceptor waits before each connection
    assert answered_after_s[12] >= 2.5 and max(answered_after_s[:10]) < answered_after_s[12]


def test_a_listener_whose_process_died_leaves_the_session_to_others_once_its_heartbeat_is_stale(client, sim_session):
    import datetime

    from django.utils import timezone

    from playground.models import Session
    from playground.session.commands import Change, commit
    from playground.session.live import run_entry

    sid = sim_session.id
    elsewhere = {external.LISTEN: {"brokers": {"1": ["127.0.0.1", 1]}, "owner": "another-process", "wall_ms": 0}}
    commit(sid, lambda live: Change(append=[run_entry(live, elsewhere)]))
    Session.objects.filter(pk=sid).update(listener_at=timezone.now())
    session.CACHE.clear()
    refused = client.post(f"/s/{sid}/add-producer/", {"mode": "new"})
    assert refused.status_code == 409 and "another server process" in refused.content.decode()
    # that process was killed: its heartbeat stops, and after LISTENER_STALE_S the session is this process's to drive
    Session.objects.filter(pk=sid).update(listener_at=timezone.now() - datetime.timedelta(seconds=31))
    assert client.post(f"/s/{sid}/add-producer/", {"mode": "new"}).status_code in (200, 204)
