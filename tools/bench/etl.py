"""Where clients wait: franz-go's own ETL tests and a bulk transactional pipeline, against the simulated cluster and
against a real 1-node Kafka 3.9.1, in one run (issue 32):

    KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:19092 .venv/bin/python tools/bench/etl.py [--records 50000,200000] [--rounds 1]

(`make bench` starts the 1-node Kafka 3.9 and runs this.) The simulated side is a 1-node `manage.py simcluster
--kafka 3.9` with the broker settings tools/kafka gives its clusters (tools/simcluster.sh: no initial rebalance
delay, the abort scan every second, 3 partitions by default).

1. franz-go v1.22.3's `TestTxnEtl` (a transactional consume-transform-produce chain through groups) and
   `TestGroupETL` (the same through plain groups), pinned in tools/conformance/go.mod, each run alone (`go test
   -run '^Name$'`, so the two do not share the machine) with KGO_TEST_RECORDS at each count and KGO_TEST_RF=1. The
   targets alternate (Kafka, simulator, Kafka, ...) so a busy machine weighs on both alike. Printed: each run's
   seconds as go test reports them, the medians, and simulator / Kafka (the aim: at most 1).
2. A bulk transactional produce and a read_committed consume through confluent-kafka, the same code on both: 20
   transactions of 5,000 records (100-byte values, 3 partitions), then one consumer reading them all. Printed:
   records/s of each phase on both and simulator / Kafka (above 1: the simulator is faster).

Per transaction latency is tools/bench/simserver.py's (make bench prints it just before).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "bench"))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from simserver import SimCluster  # noqa: E402

QUIET = {"logger": __import__("logging").getLogger("bench")}
CONFORMANCE = ROOT / "tools" / "conformance"
TESTS = ("TestTxnEtl", "TestGroupETL")
# tools/simcluster.sh's settings, the ones tools/kafka writes into the real brokers' server.properties
SIM_CONFIG = (
    "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
    "transaction.remove.expired.transaction.cleanup.interval.ms=1000",
    "auto.create.topics.enable=false",
    "num.partitions=3",
    "group.initial.rebalance.delay.ms=0",
)
GO_TIMEOUT_S = 1800


def go_test(name: str, seeds: str, records: int) -> float:
    """Seconds go test reports for one of franz-go's tests against `seeds`; a failed run ends the bench, since its
    time would say nothing."""
    env = {
        **os.environ,
        "KGO_SEEDS": seeds,
        "KGO_TEST_RECORDS": str(records),
        "KGO_TEST_RF": "1",
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-mod=readonly",
    }
    out = subprocess.run(
        ["go", "test", "-json", "-count=1", "-run", f"^{name}$", "github.com/twmb/franz-go/pkg/kgo"],
        cwd=CONFORMANCE,
        env=env,
        capture_output=True,
        text=True,
        timeout=GO_TIMEOUT_S,
    ).stdout
    for line in out.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("Test") == name and event.get("Action") in ("pass", "fail"):
            if event["Action"] == "fail":
                raise SystemExit(f"{name} failed against {seeds}")
            return float(event["Elapsed"])
    raise SystemExit(f"{name} against {seeds}: go test printed no result")


def franz_go(kafka: str, sim: str, counts: list[int], rounds: int) -> None:
    for records in counts:
        for name in TESTS:
            times: dict[str, list[float]] = {"kafka": [], "sim": []}
            for _ in range(rounds):
                times["kafka"].append(go_test(name, kafka, records))
                times["sim"].append(go_test(name, sim, records))
            k, s = statistics.median(times["kafka"]), statistics.median(times["sim"])
            runs = "; ".join(f"{t}: {', '.join(f'{x:.1f}' for x in v)} s" for t, v in times.items())
            print(
                f"{name:<13} {records:>7,} records  Kafka {k:6.1f} s  simulator {s:6.1f} s  sim/Kafka {s / k:.2f}"
                f"  ({runs})"
            )


def topic(bootstrap: str) -> str:
    name = f"bench-etl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    for future in admin.create_topics([NewTopic(name, 3, 1)]).values():
        future.result(30)
    return name


def bulk(bootstrap: str, transactions: int, per_txn: int) -> tuple[float, float]:
    """Records/s of a transactional produce (flushed and committed per transaction) and of one read_committed
    consumer reading them all back."""
    name = topic(bootstrap)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}", "linger.ms": 5, **QUIET}
    )
    producer.init_transactions(30)
    noise = uuid.uuid4().hex * 3  # values that do not compress to nothing
    t0 = time.perf_counter()
    for t in range(transactions):
        producer.begin_transaction()
        for i in range(per_txn):
            value = f"{t:05d}{i:05d}{noise[i % 90 :][:90]}".encode()
            while True:
                try:
                    producer.produce(name, value=value, key=str(i % 100).encode())
                    break
                except BufferError:
                    producer.poll(0.01)
        producer.commit_transaction(60)
    produced_s = time.perf_counter() - t0
    total = transactions * per_txn
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **QUIET,
        }
    )
    consumer.assign([TopicPartition(name, p, 0) for p in range(3)])
    seen = 0
    t0 = time.perf_counter()
    deadline = t0 + 300
    while seen < total and time.perf_counter() < deadline:
        for message in consumer.consume(10000, 1.0):
            if message.error() is None:
                seen += 1
    consumed_s = time.perf_counter() - t0
    consumer.close()
    if seen != total:
        raise SystemExit(f"read_committed read {seen} of {total} records from {bootstrap}")
    return total / produced_s, total / consumed_s


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", default="50000,200000", help="franz-go's KGO_TEST_RECORDS, comma-separated")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--transactions", type=int, default=20)
    parser.add_argument("--per-transaction", type=int, default=5000)
    args = parser.parse_args()
    kafka = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not kafka:
        raise SystemExit("KAFKA_BOOTSTRAP_SERVERS names no 1-node Kafka 3.9 (make bench starts one)")
    sim = SimCluster(*SIM_CONFIG)
    try:
        if shutil.which("go") is None:
            print("franz-go's ETL tests: left out, no Go on PATH (make conformance says which Go it needs)")
        else:
            franz_go(kafka, sim.bootstrap, [int(n) for n in args.records.split(",")], args.rounds)
        rates = {
            t: bulk(b, args.transactions, args.per_transaction) for t, b in (("kafka", kafka), ("sim", sim.bootstrap))
        }
        for i, phase in enumerate(("transactional produce", "read_committed consume")):
            k, s = rates["kafka"][i], rates["sim"][i]
            print(
                f"{phase:<23} {args.transactions * args.per_transaction:,} records  Kafka {k:9,.0f}/s"
                f"  simulator {s:9,.0f}/s  sim/Kafka {s / k:.2f}"
            )
    finally:
        sim.stop()


if __name__ == "__main__":
    main()
