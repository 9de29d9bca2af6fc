"""`manage.py tap` in front of the real clusters (3.9.1; 4.4.0 and 3.5.2 for the fence): confluent-kafka and
kafka-clients talk to the tap's bootstrap list, the tap reports what it saw on SIGTERM. Topics, transactional ids and
groups are named `tap-<hex>-...`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.kafka.conftest import ROOT, broker_control_for, require_bootstrap
from tests.kafkatopics import create_topic, drop_topics

pytestmark = pytest.mark.kafka

WAIT_S = 120  # a cap for a busy machine, never a measure


class TapProcess:
    def __init__(self, upstream: str, report: Path) -> None:
        self.report_path = report
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "tap", "--upstream", upstream, "--report", str(report)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()  # the bootstrap list is the last (and only) line
        assert line, f"the tap printed nothing (exit {self.proc.poll()})"
        self.bootstrap = line

    def now(self, ready) -> dict:
        """The report as it is now, once `ready(report)` (SIGUSR1 asks the tap to write it)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            self.proc.send_signal(signal.SIGUSR1)
            time.sleep(0.2)
            try:
                report = json.loads(self.report_path.read_text())
            except (OSError, ValueError):
                report = None
            if report is not None and ready(report):
                return report
            assert time.monotonic() < deadline, "the tap's report never showed what was waited for"

    def stop(self) -> dict:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=WAIT_S)
        assert self.proc.returncode == 0, f"the tap exited {self.proc.returncode}"
        return json.loads(self.report_path.read_text())


@pytest.fixture
def prefix():
    return f"tap-{uuid.uuid4().hex[:8]}-"


def make_topic(bootstrap: str, name: str, partitions: int = 3) -> str:
    return create_topic(AdminClient({"bootstrap.servers": bootstrap}), name, partitions, bootstrap=bootstrap)


@pytest.fixture
def tap(tmp_path, prefix):
    taps: list[TapProcess] = []
    kafkas: set[str] = set()

    def start(kafka: str = "3.9") -> TapProcess:
        kafkas.add(kafka)
        t = TapProcess(require_bootstrap(kafka), tmp_path / f"report-{len(taps)}.json")
        taps.append(t)
        return t

    yield start
    for t in taps:
        if t.proc.poll() is None:
            t.proc.kill()
            t.proc.wait()
    for kafka in sorted(kafkas):
        drop_topics(AdminClient({"bootstrap.servers": require_bootstrap(kafka)}), prefix)


def client_ids_of(findings_part: dict | list) -> set[str]:
    clients = findings_part if isinstance(findings_part, list) else [findings_part]
    return {c["client_id"] for c in clients if c}


@pytest.mark.parametrize("kafka", ["3.9", "4", pytest.param("3.5", marks=pytest.mark.kafka35)])
def test_it_names_both_connections_and_the_fence_when_two_producers_share_a_transactional_id(tap, prefix, kafka):
    t = tap(kafka)
    topic = make_topic(require_bootstrap(kafka), prefix + "orders")
    txn = prefix + "order-pay"
    first = Producer({"bootstrap.servers": t.bootstrap, "transactional.id": txn, "client.id": prefix + "payment"})
    first.init_transactions(WAIT_S)
    first.begin_transaction()
    first.produce(topic, key=b"k", value=b"paid")
    first.flush(WAIT_S)  # its partition is in the transaction: the transaction is open on the coordinator
    second = Producer({"bootstrap.servers": t.bootstrap, "transactional.id": txn, "client.id": prefix + "monitor"})
    second.init_transactions(WAIT_S)  # bumps the epoch: the first one's open transaction is aborted
    with pytest.raises(KafkaException):
        first.commit_transaction(WAIT_S)
    second.begin_transaction()
    second.produce(topic, key=b"k", value=b"checked")
    second.commit_transaction(WAIT_S)
    report = t.stop()

    (fence,) = [f for f in report["findings"] if f["finding"] == "fence" and f["transactional_id"] == txn]
    assert fence["fencing"]["client"]["client_id"] == prefix + "monitor"
    assert client_ids_of(fence["fenced"]["clients"]) == {prefix + "payment"}
    assert fence["next_error"]["error"] in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
    assert fence["next_error"]["connection"] in fence["fenced"]["connections"]
    (shared,) = [f for f in report["findings"] if f["finding"] == "shared_transactional_id"]
    named = [client_ids_of(i["connections"]) for i in shared["instances"]]
    assert named == [{prefix + "payment"}, {prefix + "monitor"}]
    assert shared["hosts"] == ["127.0.0.1"]
    instances = report["transactional_ids"][txn]
    assert [i["epoch"] for i in instances] == sorted(i["epoch"] for i in instances)
    conns = {c["connection"]: c for c in report["connections"]}
    fencing = conns[fence["fencing"]["connection"]]
    assert fencing["software"]["name"] == "confluent-kafka-python"
    assert any(e["api"] == "InitProducerId" and e["error"] is None for e in fencing["events"])
    assert any(p["transactional_id"] == txn for p in fencing["producer"])


def test_it_sees_a_consumer_group_join_sync_heartbeat_commit_and_leave(tap, prefix):
    t = tap()
    topic = make_topic(require_bootstrap(), prefix + "events", partitions=2)
    producer = Producer({"bootstrap.servers": t.bootstrap})
    for i in range(20):
        producer.produce(topic, value=f"e{i}".encode(), partition=i % 2)
    producer.flush(WAIT_S)
    group = prefix + "readers"
    consumer = Consumer(
        {"bootstrap.servers": t.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
         "enable.auto.commit": False, "client.id": prefix + "reader", "heartbeat.interval.ms": 500}
    )  # fmt: skip
    consumer.subscribe([topic])
    seen = []
    deadline = time.monotonic() + WAIT_S
    while len(seen) < 20 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            seen.append(msg.value())
    assert len(seen) == 20
    consumer.commit(asynchronous=False)
    time.sleep(1.5)  # a heartbeat or two (heartbeat.interval.ms 500)
    consumer.close()  # LeaveGroup
    report = t.stop()

    with_group = [c for c in report["connections"] if group in c["groups"]]
    assert with_group, "no connection took part in the group"
    events = [e for c in with_group for e in c["events"] if e.get("group_id") == group]
    apis = {e["api"] for e in events}
    assert {"JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "LeaveGroup"} <= apis
    joined = [e for e in events if e["api"] == "JoinGroup" and e["error"] is None]
    assert joined and all(c["client_id"] == prefix + "reader" for c in with_group)
    assert any(e["api"] == "OffsetCommit" and e["error"] is None and e["partitions"] == 2 for e in events)


def read_all(bootstrap: str, topic: str, partitions: int, count: int) -> list[tuple]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
         "auto.offset.reset": "earliest", "isolation.level": "read_committed", "fetch.max.bytes": 4 * 1024 * 1024}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = []
    deadline = time.monotonic() + WAIT_S
    while len(out) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            out.append((msg.partition(), msg.offset(), msg.key(), msg.value(), msg.headers(), msg.timestamp()))
    consumer.close()
    return sorted(out)


def test_it_carries_records_both_ways_as_a_direct_connection_sees_them(tap, prefix):
    t = tap()
    direct = require_bootstrap()
    topic = make_topic(direct, prefix + "mirror", partitions=3)
    through = Producer({"bootstrap.servers": t.bootstrap, "transactional.id": prefix + "mirror",
                        "compression.type": "zstd", "linger.ms": 5})  # fmt: skip
    through.init_transactions(WAIT_S)
    through.begin_transaction()
    big = os.urandom(700_000)  # several of the tap's chunks, never kept whole
    for i in range(60):
        value = big if i % 20 == 0 else f"value-{i}".encode() * (i + 1)
        through.produce(topic, key=f"k{i}".encode(), value=value, headers=[("n", str(i).encode())])
    through.commit_transaction(WAIT_S)
    plain = Producer({"bootstrap.servers": direct, "compression.type": "lz4"})
    for i in range(40):
        plain.produce(topic, key=f"d{i}".encode(), value=os.urandom(i * 1000))
    plain.flush(WAIT_S)

    seen_through = read_all(t.bootstrap, topic, 3, 100)
    seen_direct = read_all(direct, topic, 3, 100)
    report = t.stop()
    assert len(seen_direct) == 100
    assert seen_through == seen_direct
    produced = [e for c in report["connections"] for e in c["events"] if e["api"] == "Produce"]
    assert produced and all(e["transactional_id"] == prefix + "mirror" and e["error"] is None for e in produced)


def test_it_closes_a_connection_whose_request_is_over_socket_request_max_bytes_and_serves_on(tap):
    import socket

    t = tap()
    host, port = t.bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=WAIT_S) as s:
        s.sendall((200 * 1024 * 1024).to_bytes(4, "big") + b"\x00\x03\x00\x09")
        assert s.recv(1) == b""  # closed, as the broker closes it
    admin = AdminClient({"bootstrap.servers": t.bootstrap})
    assert len(admin.list_topics(timeout=30).brokers) == 3
    t.stop()


def test_it_runs_the_tap_bench_and_reports_every_kind_both_ways():
    done = subprocess.run(
        [sys.executable, "tools/bench/tap.py", "--requests", "5", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT_S * 3,
        env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": require_bootstrap()},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    r = json.loads(done.stdout)
    assert r["requests_per_kind"] == 5 and r["tap_cpu_ms_per_1000_requests"] >= 0
    for kind in ("ApiVersions", "Metadata", "Produce 1 KiB", "Produce 256 KiB"):
        assert r[kind]["p50"]["direct_ms"] > 0 and r[kind]["p99"]["tap_ms"] > 0


def broker_control() -> str:
    control = broker_control_for(require_bootstrap())
    if not control:
        pytest.fail("no broker control for this cluster: set KAFKA_BROKER_CONTROL (or run it from tools/kafka)")
    return control


def transaction(producer: Producer, topic: str, n: int) -> None:
    """Transaction n: one record to each of the topic's three partitions, committed."""
    producer.begin_transaction()
    for p in range(3):
        producer.produce(topic, value=f"t{n}-p{p}".encode(), partition=p)
    producer.commit_transaction(WAIT_S)


def all_back_then_the_third(t: TapProcess, producer: Producer, topic: str) -> None:
    """Once the restarted broker is back through the tap, transaction 3; then all three read back."""
    deadline = time.monotonic() + WAIT_S
    while len(AdminClient({"bootstrap.servers": t.bootstrap}).list_topics(timeout=30).brokers) < 3:
        assert time.monotonic() < deadline, "the restarted broker never came back through the tap"
        time.sleep(0.5)
    transaction(producer, topic, 3)
    assert sorted(v.decode() for *_x, v, _h, _t in read_all(t.bootstrap, topic, 3, 9)) == sorted(
        f"t{n}-p{p}" for n in (1, 2, 3) for p in range(3)
    )


def test_it_carries_transactions_on_through_a_broker_stopped_and_started(tap, prefix):
    """The leader of a partition stops: the broker closes its connections, the tap closes the clients' connections to
    that broker's listener, and the producer's next transaction goes, through the tap's rewritten Metadata, to the
    new leaders; when the broker is back, so is its listener."""
    from playground.kafka.brokers import run_broker_control

    control, direct = broker_control(), require_bootstrap()
    t = tap()
    topic = make_topic(direct, prefix + "moving", partitions=3)
    admin = AdminClient({"bootstrap.servers": direct})
    leader = admin.list_topics(topic, timeout=30).topics[topic].partitions[0].leader
    producer = Producer({"bootstrap.servers": t.bootstrap, "transactional.id": prefix + "mover",
                         "client.id": prefix + "mover"})  # fmt: skip
    producer.init_transactions(WAIT_S)
    transaction(producer, topic, 1)
    stopped_at_ms = time.time() * 1000
    run_broker_control(control, ROOT, "stop", leader, "stop the leader")
    try:
        transaction(producer, topic, 2)  # the partitions it led have other leaders now: found through the tap
        assert admin.list_topics(topic, timeout=30).topics[topic].partitions[0].leader != leader
    finally:
        restarted_at_ms = time.time() * 1000
        run_broker_control(control, ROOT, "start", leader, "start it again")
    all_back_then_the_third(t, producer, topic)
    report = t.stop()
    to_leader = [c for c in report["connections"] if c["broker"] == leader and c["opened_ms"] < stopped_at_ms]
    assert to_leader, "no client connection went to the stopped broker's listener before it stopped"
    # closed when their broker went away, before it was started again (not at the tap's stop)
    assert all(c["closed_ms"] is not None and c["closed_ms"] < restarted_at_ms for c in to_leader)
    ends = [e for c in report["connections"] for e in c["events"] if e["api"] == "EndTxn"]
    assert [e["error"] for e in ends] == [None, None, None]


def test_it_carries_a_transaction_on_through_its_coordinators_failover(tap, prefix):
    """The broker the transactional id's coordinator is on stops: its __transaction_state partition gets a new
    leader, the producer finds the new coordinator through the tap's rewritten FindCoordinator and commits there. The
    tap sees one producer instance on two coordinators' connections: no shared transactional id, no fence."""
    from playground.kafka.brokers import run_broker_control

    control = broker_control()
    t = tap()
    topic = make_topic(require_bootstrap(), prefix + "coordinated", partitions=3)
    txn = prefix + "failover"
    producer = Producer({"bootstrap.servers": t.bootstrap, "transactional.id": txn, "client.id": prefix + "payer"})

    def ends(report: dict) -> list[tuple[int, str | None]]:
        """(broker, error) of each EndTxn, in the order they were answered."""
        found = [(e["at_ms"], c["broker"], e["error"]) for c in report["connections"] for e in c["events"]
                 if e["api"] == "EndTxn"]  # fmt: skip
        return [(broker, error) for _at, broker, error in sorted(found)]

    producer.init_transactions(WAIT_S)
    transaction(producer, topic, 1)
    ((coordinator, error),) = ends(t.now(lambda r: ends(r)))
    assert error is None
    run_broker_control(control, ROOT, "stop", coordinator, "stop the coordinator")
    try:
        transaction(producer, topic, 2)
        moved = [b for b, e in ends(t.now(lambda r: len([e for _b, e in ends(r) if e is None]) == 2)) if e is None]
        assert moved[1] != coordinator, "the second commit went to the stopped broker's listener"
    finally:
        run_broker_control(control, ROOT, "start", coordinator, "start it again")
    all_back_then_the_third(t, producer, topic)
    report = t.stop()
    assert [e for _b, e in ends(report) if e is None] == [None, None, None]
    assert {e for _b, e in ends(report)} <= {None, "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
                                             "COORDINATOR_LOAD_IN_PROGRESS", "CONCURRENT_TRANSACTIONS"}  # fmt: skip
    (instances,) = report["transactional_ids"].values()
    assert len(instances) == 1, instances
    assert not [f for f in report["findings"] if f["finding"] in ("shared_transactional_id", "fence")]


def kafka_tool(*argv: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["bash", str(ROOT / "tools" / "kafka" / "kafka.sh"), *argv],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=WAIT_S * 2,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_it_serves_kafka_clients_console_tools_and_kafka_transactions_through_it(tap, prefix):
    t = tap()
    topic = make_topic(require_bootstrap(), prefix + "console", partitions=1)
    txn = prefix + "tool-pay"
    producer = Producer({"bootstrap.servers": t.bootstrap, "transactional.id": txn})
    producer.init_transactions(WAIT_S)
    producer.begin_transaction()
    producer.produce(topic, value=b"first")
    producer.commit_transaction(WAIT_S)
    kafka_tool("run-class", "kafka.tools.ConsoleProducer", "--bootstrap-server", t.bootstrap, "--topic", topic,
               stdin="a\nb\n")  # fmt: skip
    read = kafka_tool("run-class", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
                      t.bootstrap, "--topic", topic, "--from-beginning", "--max-messages", "3")  # fmt: skip
    assert read.split() == ["first", "a", "b"]
    described = kafka_tool("transactions", "--bootstrap-server", t.bootstrap, "describe", "--transactional-id", txn)
    assert txn in described and "CompleteCommit" in described
    report = t.stop()
    java = {c["client_id"] for c in report["connections"] if (c["software"] or {}).get("name") == "apache-kafka-java"}
    assert {"console-producer", "console-consumer"} <= java


@pytest.fixture
def recording_tap(prefix):
    """A tap in this process (on a loop of its own) in front of Kafka 3.9.1, recording a session into the test
    database; `run` runs a coroutine on its loop. The session's topics are created as the clients name them (the
    shared cluster's other topics are not the session's)."""
    import asyncio
    import threading

    from playground.session.taprecord import TapRecording
    from playground.tap.proxy import Tap

    direct = require_bootstrap()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coro):
        return asyncio.run_coroutine_threadsafe(coro, loop).result(WAIT_S)

    tap = Tap(direct)
    run(tap.start())
    recording = TapRecording(upstream=direct, listener=("127.0.0.1", min(tap.ports.values())), topics={})
    recording.start()
    tap.recorder = recording
    yield direct, tap, recording, run
    run(tap.close())
    recording.stop()
    loop.call_soon_threadsafe(loop.stop)
    thread.join(WAIT_S)
    drop_topics(AdminClient({"bootstrap.servers": direct}), prefix)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("client", ["librdkafka", "java"])
def test_it_records_a_fence_on_kafka_as_a_session_whose_replay_shows_what_the_cluster_showed(
    prefix, recording_tap, client
):
    """Two producers of one client library (confluent-kafka, or kafka-clients 3.9.1 in the Java worker) share a
    transactional.id through the tap in front of Kafka 3.9.1, which records them as a session (in this process: the
    session lives in the test database); the session replayed from its stored log has each partition's records at the
    cluster's offsets, its markers where the cluster has its gaps, what read_committed reads there, and the fenced
    producer's error."""
    direct, tap, recording, run = recording_tap
    topic = make_topic(direct, prefix + "orders", partitions=2)
    _record_a_fence(direct, topic, prefix + "order-pay", prefix, tap, run, recording, client)


@pytest.mark.django_db(transaction=True)
def test_it_records_a_consumer_group_on_kafka_whose_commits_replay_under_the_simulators_member_ids(
    prefix, recording_tap
):
    from playground import session
    from playground.session import external
    from playground.session.cache import CACHE

    direct, tap, recording, run = recording_tap
    topic = make_topic(direct, prefix + "events", partitions=2)
    plain = Producer({"bootstrap.servers": tap.bootstrap})
    for i in range(6):
        plain.produce(topic, value=f"e{i}".encode(), partition=i % 2)
    assert plain.flush(WAIT_S) == 0
    group = prefix + "readers"
    consumer = Consumer({"bootstrap.servers": tap.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "client.id": prefix + "reader"})  # fmt: skip
    consumer.subscribe([topic])
    seen = []
    deadline = time.monotonic() + WAIT_S
    while len(seen) < 6 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            seen.append(msg.value())
    consumer.commit(asynchronous=False)
    upstream = {f"{tp.topic}-{tp.partition}": tp.offset for tp in consumer.committed(
        [TopicPartition(topic, p) for p in range(2)], timeout=WAIT_S)}  # fmt: skip
    consumer.close()
    run(tap.close())
    recording.stop()
    assert len(seen) == 6 and upstream == {f"{topic}-0": 3, f"{topic}-1": 3}
    assert any(a != b for a, b in recording.translation.members.items())  # Kafka's member ids are not the simulator's
    CACHE.evict(recording.sid)
    live = session.load(recording.sid)
    assert external.inner_backend(live.backend).cluster.groups.committed(group) == upstream


class JavaProducer:
    """kafka-clients 3.9.1 in the Java worker (playground/kafka/java/Worker.java), answering the calls the recording
    tests make of a confluent-kafka Producer; a Kafka exception is raised as KafkaException naming its class."""

    def __init__(self, conf: dict) -> None:
        from playground.kafka.java_worker import JavaActorProcess

        self.proc = JavaActorProcess(conf["client.id"], "producer", {**conf, "max.block.ms": 30000}, release="3.9.1")

    def _call(self, op: str, **args) -> None:
        msg = self.proc.call(op, timeout_s=WAIT_S / 2, **args)
        assert msg["ok"], msg
        if msg["result"]["outcome"] != "ok":
            raise KafkaException(msg["result"]["outcome"])

    def init_transactions(self, _timeout_s: float) -> None:
        self._call("init_transactions")

    def begin_transaction(self) -> None:
        self._call("begin_transaction")

    def produce(self, topic: str, value: bytes, partition: int) -> None:
        self._call("produce", topic=topic, partition=partition, key=None, value=value.decode(), wait=False)

    def flush(self, _timeout_s: float) -> int:
        self._call("flush")
        return 0

    def commit_transaction(self, _timeout_s: float) -> None:
        self._call("commit_transaction")

    def close(self) -> None:
        self.proc.kill()


PRODUCERS = {"librdkafka": Producer, "java": JavaProducer}
SOFTWARE = {"librdkafka": "confluent-kafka-python", "java": "apache-kafka-java"}


def _record_a_fence(direct: str, topic: str, txn: str, prefix: str, tap, run, recording, client: str) -> None:
    from playground import session
    from playground.session import external
    from playground.session.cache import CACHE
    from playground.sim import observation

    make = PRODUCERS[client]
    made = []
    try:
        pay = make({"bootstrap.servers": tap.bootstrap, "transactional.id": txn, "client.id": prefix + "payment"})
        made.append(pay)
        pay.init_transactions(WAIT_S)
        pay.begin_transaction()
        for i in range(3):
            pay.produce(topic, value=f"o-{i}".encode(), partition=0)
        pay.commit_transaction(WAIT_S)
        pay.begin_transaction()
        pay.produce(topic, value=b"zombie", partition=1)
        pay.flush(WAIT_S)
        monitor = make({"bootstrap.servers": tap.bootstrap, "transactional.id": txn, "client.id": prefix + "monitor"})
        made.append(monitor)
        monitor.init_transactions(WAIT_S)
        monitor.begin_transaction()
        monitor.produce(topic, value=b"m-1", partition=1)
        monitor.commit_transaction(WAIT_S)
        with pytest.raises(KafkaException):
            pay.commit_transaction(WAIT_S)
        monitor.flush(WAIT_S)
        del pay, monitor  # a confluent-kafka producer goes with its last reference
    finally:
        for producer in made:
            if isinstance(producer, JavaProducer):  # a JVM to stop
                producer.close()
        made.clear()
        run(tap.close())
    assert recording.stop()["state"] == "stopped"
    report = tap.report()
    sid = recording.sid

    # the cluster: every record at its offset (read_uncommitted), what read_committed reads, the end offsets
    def read(isolation: str) -> dict[int, list[tuple[int, bytes]]]:
        consumer = Consumer({"bootstrap.servers": direct, "group.id": prefix + isolation, "isolation.level": isolation,
                             "enable.auto.commit": False})  # fmt: skip
        consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
        out: dict[int, list[tuple[int, bytes]]] = {0: [], 1: []}
        deadline = time.monotonic() + WAIT_S
        want = {"read_uncommitted": 5, "read_committed": 4}[isolation]
        while sum(map(len, out.values())) < want and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                out[msg.partition()].append((msg.offset(), msg.value()))
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(2)}
        consumer.close()
        return {**out, "ends": ends}  # type: ignore[dict-item]

    uncommitted, committed = read("read_uncommitted"), read("read_committed")

    CACHE.evict(sid)
    live = session.load(sid)
    cluster = external.inner_backend(live.backend).cluster
    for p in range(2):
        log = observation.partition(cluster, f"{topic}-{p}")
        records = [(e["offset"], e["value"].encode()) for e in log["log"] if "control" not in e]
        assert records == uncommitted[p]
        assert log["log_end_offset"] == uncommitted["ends"][p]
        markers = {e["offset"]: e["control"] for e in log["log"] if "control" in e}
        fates = _fates(log["log"])
        assert [(o, v) for o, v in records if fates[o] == "COMMIT"] == committed[p]
        assert set(markers) == set(range(uncommitted["ends"][p])) - {o for o, _ in records}
    snap = observation.transactions(cluster)[txn]
    assert snap["state"] in ("CompleteCommit", "Empty")
    (fence,) = [f for f in report["findings"] if f["finding"] == "fence"]
    outcomes = [c.get("outcome") for c in live.commands if "ext" in c]
    assert fence["next_error"]["error"] in outcomes
    # EndTxn v4 (kafka-clients 3.9) is answered PRODUCER_FENCED, librdkafka's older EndTxn INVALID_PRODUCER_EPOCH
    assert fence["next_error"]["error"] == {"librdkafka": "INVALID_PRODUCER_EPOCH", "java": "PRODUCER_FENCED"}[client]
    fencing = {c["connection"]: c for c in report["connections"]}[fence["fencing"]["connection"]]
    assert fencing["software"]["name"] == SOFTWARE[client]


def _fates(log: list[dict]) -> dict[int, str]:
    """Each data record's transaction's end, by the marker its producer id wrote next (COMMIT or ABORT)."""
    out: dict[int, str] = {}
    open_: dict[int, list[int]] = {}
    for e in log:
        if "control" in e:
            for offset in open_.pop(e["producer_id"], []):
                out[offset] = e["control"]
        else:
            open_.setdefault(e["producer_id"], []).append(e["offset"])
    return out


@pytest.mark.django_db(transaction=True)
def test_it_records_a_java_consumers_incremental_fetches_so_that_its_replay_is_given_what_kafka_gave(
    prefix, recording_tap
):
    """kafka-clients fetches in an incremental fetch session (KIP-227): once its session holds both partitions, a
    Fetch names only those whose offset changed. Records that arrive on the other one reach it all the same; the
    recording replays each Fetch as a full fetch of the session, so the replayed consumer is given them too."""
    from playground import session
    from playground.kafka.java_worker import JavaActorProcess
    from playground.session import external
    from playground.session.cache import CACHE

    direct, tap, recording, run = recording_tap
    topic = make_topic(direct, prefix + "events", partitions=2)
    plain = Producer({"bootstrap.servers": tap.bootstrap})
    plain.produce(topic, value=b"a-0", partition=0)
    assert plain.flush(WAIT_S) == 0
    conf = {"bootstrap.servers": tap.bootstrap, "client.id": prefix + "reader", "group.id": prefix + "readers",
            "auto.offset.reset": "earliest", "enable.auto.commit": False}  # fmt: skip
    reader = JavaActorProcess(prefix + "reader", "consumer", conf, release="3.9.1")
    try:
        reader.wait_ready()

        def call(op: str, **args) -> dict:
            msg = reader.call(op, timeout_s=WAIT_S / 2, **args)
            assert msg["ok"] and msg["result"]["outcome"] == "ok", msg
            return msg["result"]

        call("assign", partitions=[[topic, 0], [topic, 1]], from_committed=False)
        got = [r["value"] for r in call("poll", max=None)["records"]]
        for i in range(3):  # partition 1's offset never changes before these arrive: unnamed in the Fetch
            plain.produce(topic, value=f"b-{i}".encode(), partition=1)
            assert plain.flush(WAIT_S) == 0
            got += [r["value"] for r in call("poll", max=None)["records"]]
        assert got == ["a-0", "b-0", "b-1", "b-2"]
    finally:
        reader.kill()
    run(tap.close())
    recording.stop()
    CACHE.evict(recording.sid)
    clients = external.core_of(session.load(recording.sid).backend).clients
    (mine,) = [c for c in clients.consumers().values() if c["external"]["client_id"] == prefix + "reader"]
    received = {tp: [r["offset"] for r in recs] for tp, recs in mine["received"].items()}
    assert received == {f"{topic}-0": [0], f"{topic}-1": [0, 1, 2]}
