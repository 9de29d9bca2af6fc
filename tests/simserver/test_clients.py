"""Real clients against `manage.py simcluster`: confluent-kafka (librdkafka 2.16), kafka-clients 3.9.1 and 4.4.0 through
Kafka's own console tools and kafka-transactions, raw sockets for what no client sends. Waits are for a condition,
with generous caps."""

from __future__ import annotations

import secrets
import shlex
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from playground.protocol import messages
from playground.protocol.framing import MAX_REQUEST_BYTES

ROOT = Path(__file__).resolve().parents[2]
JARS = {"3.9": ROOT / "tools" / "kafka" / ".jars", "4": ROOT / "tools" / "kafka" / ".jars-4.4.0"}
CONSOLE_PRODUCER = {"3.9": "kafka.tools.ConsoleProducer", "4": "org.apache.kafka.tools.ConsoleProducer"}
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
QUIET = {"logger": __import__("logging").getLogger("simserver-tests")}


def _topic(admin: AdminClient, partitions: int = 1) -> str:
    name = f"t-{secrets.token_hex(4)}"
    for future in admin.create_topics([NewTopic(name, partitions, 3)]).values():
        future.result(20)
    return name


def _read(bootstrap: str, topic: str, partitions: int, committed: bool, want: int, cap_s: float = 30) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{secrets.token_hex(3)}",
            "isolation.level": "read_committed" if committed else "read_uncommitted",
            "enable.auto.commit": False,
            **QUIET,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[bytes] = []
    deadline = time.monotonic() + cap_s
    try:
        while len(got) < want and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                got.append(msg.value())
        # nothing more arrives that should not: one more short poll after the wanted count
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                got.append(msg.value())
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_a_transactional_producer_commits_and_aborts_and_read_committed_sees_only_what_was_committed(simcluster, codec):
    admin = AdminClient({"bootstrap.servers": simcluster.bootstrap, **QUIET})
    topic = _topic(admin, partitions=2)
    producer = Producer(
        {
            "bootstrap.servers": simcluster.bootstrap,
            "transactional.id": f"tx-{secrets.token_hex(4)}",
            "compression.codec": codec,
            **QUIET,
        }
    )
    producer.init_transactions(30)
    for txn, commit in (("a", True), ("b", False), ("c", True)):
        producer.begin_transaction()
        for i in range(4):
            producer.produce(topic, value=f"{txn}{i}".encode() * 20, partition=i % 2)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    committed = sorted(_read(simcluster.bootstrap, topic, 2, True, want=8))
    assert committed == sorted(f"{t}{i}".encode() * 20 for t in "ac" for i in range(4))
    everything = _read(simcluster.bootstrap, topic, 2, False, want=12)
    assert len(everything) == 12


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(simcluster39):
    bootstrap = simcluster39.bootstrap
    topic = _topic(AdminClient({"bootstrap.servers": bootstrap, **QUIET}))
    txid = f"shared-{secrets.token_hex(4)}"
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, **QUIET})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, b"zombie")
    zombie.flush(30)
    fresh = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, **QUIET})
    fresh.init_transactions(30)
    with pytest.raises(KafkaException) as caught:
        zombie.commit_transaction(30)
    assert caught.value.args[0].code() == KafkaError._FENCED
    fresh.begin_transaction()
    fresh.produce(topic, b"fresh")
    fresh.commit_transaction(30)
    assert _read(bootstrap, topic, 1, True, want=1) == [b"fresh"]


def _java(kafka: str, main: str, *args: str, stdin: str = "", timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["java", "-cp", f"{JARS[kafka]}/*", main, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=ROOT,
    )


@pytest.mark.kafka
@pytest.mark.parametrize(("kafka", "codecs"), [("3.9", ("snappy", "lz4")), ("4", ("zstd", "gzip"))])
def test_kafkas_console_tools_write_every_codec_and_both_clients_read_it(kafka, codecs, request):
    cluster = request.getfixturevalue("simcluster39" if kafka == "3.9" else "simcluster4")
    topic = _topic(AdminClient({"bootstrap.servers": cluster.bootstrap, **QUIET}))
    lines = []
    for codec in codecs:
        batch = [f"{codec}-{i}" for i in range(3)]
        lines += batch
        out = _java(
            kafka,
            CONSOLE_PRODUCER[kafka],
            "--bootstrap-server",
            cluster.bootstrap,
            "--topic",
            topic,
            "--producer-property",
            f"compression.type={codec}",
            stdin="\n".join(batch) + "\n",
        )
        assert out.returncode == 0, out.stderr[-2000:]
    out = _java(
        kafka,
        CONSOLE_CONSUMER,
        "--bootstrap-server",
        cluster.bootstrap,
        "--topic",
        topic,
        "--partition",
        "0",
        "--offset",
        "earliest",
        "--isolation-level",
        "read_committed",
        "--max-messages",
        str(len(lines)),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == lines
    assert _read(cluster.bootstrap, topic, 1, True, want=len(lines)) == [line.encode() for line in lines]


@pytest.mark.kafka
def test_kafka_transactions_finds_and_aborts_a_hanging_transaction(simcluster39, tmp_path):
    bootstrap = simcluster39.bootstrap
    topic = _topic(AdminClient({"bootstrap.servers": bootstrap, **QUIET}))
    txid = f"hanging-{secrets.token_hex(4)}"
    script = tmp_path / "hang.py"
    script.write_text(
        "import os, sys\n"
        "from confluent_kafka import Producer\n"
        f"p = Producer({{'bootstrap.servers': {bootstrap!r}, 'transactional.id': {txid!r},"
        " 'transaction.timeout.ms': 900000})\n"
        "p.init_transactions(30); p.begin_transaction()\n"
        f"p.produce({topic!r}, b'stuck', partition=0); p.flush(30)\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, str(script)], check=True, timeout=120)

    def tx(*args: str) -> str:
        out = _java("3.9", TRANSACTIONS, "--bootstrap-server", bootstrap, *args)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout

    described = tx("describe", "--transactional-id", txid)
    assert "Ongoing" in described and f"{topic}-0" in described
    producers = tx("describe-producers", "--topic", topic, "--partition", "0").splitlines()
    assert producers[1].split()[-1] == "0"  # CurrentTransactionStartOffset
    tx("abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    producers = tx("describe-producers", "--topic", topic, "--partition", "0").splitlines()
    assert producers[1].split()[-1] == "None"
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "lso", "isolation.level": "read_committed", **QUIET}
    )
    _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)
    consumer.close()
    assert high == 2  # the record and the ABORT marker: the LSO no longer waits for the dead producer


def test_the_broker_control_template_stops_and_starts_one_broker(simcluster39):
    cluster = simcluster39
    port = cluster.ports[1]

    def control(action: str) -> None:
        argv = [part.format(action=action, broker=2) for part in shlex.split(cluster.control)]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert out.returncode == 0, out.stderr

    def listed() -> set[int]:
        return set(AdminClient({"bootstrap.servers": cluster.bootstrap, **QUIET}).list_topics(timeout=20).brokers)

    control("stop")
    try:
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        assert listed() == {1, 3}
    finally:
        control("start")
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert listed() == {1, 2, 3}


def test_consumers_of_a_group_share_the_partitions_and_read_each_record_once(simcluster):
    bootstrap = simcluster.bootstrap
    topic = _topic(AdminClient({"bootstrap.servers": bootstrap, **QUIET}), partitions=4)
    producer = Producer({"bootstrap.servers": bootstrap, **QUIET})
    for i in range(40):
        producer.produce(topic, f"m{i}".encode(), partition=i % 4)
    producer.flush(30)
    group = f"g-{secrets.token_hex(3)}"
    consumers = [
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": f"member-{n}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **QUIET,
            }
        )
        for n in range(2)
    ]
    got: list[bytes] = []
    try:
        for c in consumers:
            c.subscribe([topic])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for c in consumers:
                msg = c.poll(0.1)
                if msg is not None and not msg.error():
                    got.append(msg.value())
                    c.commit(msg, asynchronous=False)
            assignments = [sorted(tp.partition for tp in c.assignment()) for c in consumers]
            if len(got) == 40 and sorted(p for a in assignments for p in a) == [0, 1, 2, 3] and all(assignments):
                break
        assert sorted(got) == sorted(f"m{i}".encode() for i in range(40))
        assert sorted(p for a in assignments for p in a) == [0, 1, 2, 3] and all(assignments)
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})  # kept: its futures die with it
        described = admin.describe_consumer_groups([group])[group].result(20)
        assert sorted(m.client_id for m in described.members) == ["member-0", "member-1"]
    finally:
        for c in consumers:
            c.close()


@pytest.mark.kafka
@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_kafkas_console_consumer_reads_in_a_group_of_its_own(kafka, request):
    cluster = request.getfixturevalue("simcluster39" if kafka == "3.9" else "simcluster4")
    topic = _topic(AdminClient({"bootstrap.servers": cluster.bootstrap, **QUIET}), partitions=2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, **QUIET})
    for i in range(6):
        producer.produce(topic, f"r{i}".encode(), partition=i % 2)
    producer.flush(30)
    out = _java(
        kafka,
        CONSOLE_CONSUMER,
        "--bootstrap-server",
        cluster.bootstrap,
        "--topic",
        topic,
        "--group",
        f"console-{secrets.token_hex(3)}",
        "--from-beginning",
        "--max-messages",
        "6",
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert sorted(out.stdout.split()) == [f"r{i}" for i in range(6)]


# ------------------------------------------------------------------------------------------------ bad input


def _closed_by_server(sock: socket.socket, cap_s: float = 20) -> bool:
    sock.settimeout(cap_s)
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True


def _api_versions_answer(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        body = messages.build(
            messages.request_class(18, 3), {"client_software_name": "t", "client_software_version": "1"}
        )
        payload = messages.encode_request(18, 3, 5, "probe", body)
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        data = sock.recv(size, socket.MSG_WAITALL)
        _correlation, answer = messages.decode_response(18, 3, data)
        return int(answer.error_code.value)


@pytest.mark.parametrize(
    "sent",
    [
        struct.pack(">i", MAX_REQUEST_BYTES + 1),  # over socket.request.max.bytes: closed before a byte of body
        struct.pack(">i", -1),
        struct.pack(">i", 2) + b"\x00\x00",  # too short for a header
        struct.pack(">i", 8) + struct.pack(">hhi", 999, 0, 1),  # an API no broker has
        struct.pack(">i", 8) + struct.pack(">hhi", 0, 1, 1),  # Produce v1: not served
        struct.pack(">i", 12) + struct.pack(">hhi", 3, 12, 1) + b"\xff\xff\xff\xff",  # a header cut short
    ],
    ids=["too-large", "negative-size", "no-header", "unknown-api", "old-version", "truncated-header"],
)
def test_bad_input_closes_that_connection_and_the_server_serves_on(simcluster39, sent):
    port = simcluster39.ports[0]
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(sent)
        assert _closed_by_server(sock)
    assert _api_versions_answer(port) == 0


def test_a_client_gone_mid_request_leaves_the_server_serving(simcluster39):
    port = simcluster39.ports[0]
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(struct.pack(">i", 1000) + b"\x00\x03\x00\x0c")  # a frame that never ends
    assert _api_versions_answer(port) == 0
    assert simcluster39.proc.poll() is None
