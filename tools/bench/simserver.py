"""The simulated cluster over the Kafka protocol (`manage.py simcluster`), measured:

    [KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:19092] .venv/bin/python tools/bench/simserver.py [--transactions N] [--records M]

1. Start-up: from launching `manage.py simcluster --nodes 1 --port 0` to its listener accepting a connection (the
   bootstrap line printed and a TCP connect answered), median of 3 launches (aim: under 1 s).
2. Transactions: the same confluent-kafka code (init_transactions once, then N transactions of 1 record and N of 10
   records, each flushed and committed) against a 1-node simcluster and against the real 1-node Kafka named by
   KAFKA_BOOTSTRAP_SERVERS (`make bench` starts one), one run each: milliseconds per transaction and how many times
   faster the simulated cluster is (aim: at least 3x), and the floor the client sets itself: the same code against
   librdkafka's in-process mock cluster, which answers without a network or a model. Without KAFKA_BOOTSTRAP_SERVERS
   only the simcluster and the floor run.
3. Memory: the simcluster's resident set (VmRSS) after M records (default 1,000,000: 100-byte values, 3-byte keys,
   an idempotent producer, no compression) are held in its log (aim: under 200 MiB), and before any, for comparison.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

QUIET = {"logger": __import__("logging").getLogger("bench")}


class SimCluster:
    def __init__(self, *config: str) -> None:
        args = [sys.executable, "manage.py", "simcluster", "--kafka", "3.9", "--nodes", "1", "--port", "0"]
        for item in config:
            args += ["--config", item]
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(self.proc.stdout.readline() for _ in range(2)))
        reader.start()
        reader.join(120)
        if len(lines) < 2:
            self.stop()
            raise SystemExit("simcluster did not start")
        self.bootstrap = lines[1].strip()
        host, _, port = self.bootstrap.rpartition(":")
        socket.create_connection((host, int(port)), timeout=10).close()
        self.startup_s = time.monotonic() - self.t0

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def create_topic(bootstrap: str, partitions: int = 1) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})  # kept until the futures are done
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)
    return name


def transactions(bootstrap: str | None, count: int, records: int) -> float:
    """Milliseconds per transaction of `records` records each (the producer's set-up not counted). No bootstrap:
    librdkafka's own mock cluster in the client's process (test.mock.num.brokers), which answers at once: the floor
    the client itself sets."""
    conf: dict = {"transactional.id": f"bench-{uuid.uuid4().hex[:8]}", "linger.ms": 5, **QUIET}
    if bootstrap is None:
        topic = "bench"
        conf["test.mock.num.brokers"] = 1
    else:
        topic = create_topic(bootstrap)
        conf["bootstrap.servers"] = bootstrap
    producer = Producer(conf)
    producer.init_transactions(30)
    t0 = time.perf_counter()
    for i in range(count):
        producer.begin_transaction()
        for j in range(records):
            producer.produce(topic, value=f"value-{i}-{j}".encode())
        producer.flush(30)
        producer.commit_transaction(30)
    elapsed = time.perf_counter() - t0
    producer.flush(30)
    return elapsed / count * 1000


def fill(bootstrap: str, total: int) -> None:
    topic = create_topic(bootstrap, partitions=3)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 50,
            "batch.num.messages": 10000,
            **QUIET,
        }
    )
    noise = uuid.uuid4().hex * 3  # values that do not compress to nothing: 100 bytes, a different one each time
    for i in range(total):
        value = f"{i:010d}{noise[i % 90 :][:90]}".encode()
        while True:
            try:
                producer.produce(topic, value=value, key=str(i % 1000).encode())
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    producer.flush(300)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", **QUIET})
    held = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(3))
    consumer.close()
    if held != total:
        raise SystemExit(f"the simcluster holds {held} records, not {total}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transactions", type=int, default=200)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()

    startups = []
    for _ in range(3):
        cluster = SimCluster()
        startups.append(cluster.startup_s)
        cluster.stop()
    print(
        f"start-up to accepting connections: median {statistics.median(startups) * 1000:.0f} ms "
        f"(of {', '.join(f'{s * 1000:.0f}' for s in startups)} ms)"
    )

    cluster = SimCluster()
    real = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    try:
        for records in (1, 10):
            sim_ms = transactions(cluster.bootstrap, args.transactions, records)
            line = f"transactions of {records:>2} record(s), {args.transactions} each: simcluster {sim_ms:.2f} ms/txn"
            if real:
                real_ms = transactions(real, args.transactions, records)
                line += f", Kafka {real_ms:.2f} ms/txn: {real_ms / sim_ms:.1f}x faster"
            else:
                line += " (no KAFKA_BOOTSTRAP_SERVERS: the real broker is not measured)"
            line += f"; the client's floor (librdkafka's in-process mock) {transactions(None, args.transactions, records):.2f}"
            print(line, flush=True)
    finally:
        cluster.stop()

    cluster = SimCluster()
    try:
        before = cluster.rss_mib()
        t0 = time.monotonic()
        fill(cluster.bootstrap, args.records)
        print(
            f"memory: {cluster.rss_mib():.0f} MiB resident with {args.records:,} records held "
            f"({before:.0f} MiB before any; filled in {time.monotonic() - t0:.0f} s)"
        )
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
