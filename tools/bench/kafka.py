"""The simulator against the real broker, per profile, and the incident write-up's open question measured on the real
broker.

    KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:19092 [KAFKA4_BOOTSTRAP_SERVERS=127.0.0.1:19592] \
        .venv/bin/python tools/bench/kafka.py [--transactions N] [--orders M]

(`make bench` starts a 1-node cluster of Kafka 3.9 and one of Kafka 4.x from tools/kafka and runs this.)

1. The same transactional workload under each profile (Kafka 3.9 and 4.x, librdkafka and the Java client), on the
   simulator and on the real cluster of that profile's version, in one run: N transactions (default 200) of 10
   records on each of 3 partitions, every record awaited (flush) before the commit. librdkafka: written once against
   confluent-kafka's Producer API, run on the simulator's client facade (playground.sim.client.Producer, which
   mirrors that API) and on confluent_kafka.Producer. Java: the same calls of KafkaProducer (beginTransaction, send,
   flush, commitTransaction) on the simulator's model (playground.sim.javaclient.JavaProducer, on a simulated 4.x
   cluster with transaction protocol v2 for Kafka 4) and in a JVM running kafka-clients of the cluster's release
   (tools/bench/TxnBench.java: the loop runs inside the JVM, so no worker pipe is timed). Printed per profile:
   wall-clock time per transaction on each, their ratio (the simulator should be at least 100x faster), and the real
   commit latency p50/p95 (EndTxn until PrepareCommit is durable; the markers come after). A profile whose cluster
   is not named in the environment is left out, with a line saying so.

2. A static transactional.id against one per order (the open question of the incident write-up): M orders
   (default 100), one record each, on the real broker.
     static       one producer, one transactional.id, one InitProducerId, one transaction per order
     static-x10   the same, ten orders per transaction
     per-order    a new producer per order with transactional.id order-<n>: create, init, one transaction, close
   Printed per mode: InitProducerId calls and init_transactions() latency p50/p95 (a fresh client's call includes
   FindCoordinator and connecting to the coordinator), `__transaction_state` records and bytes per message (read
   back from the log and decoded; bytes are whole record batches as stored), markers per message (control records
   in the data partition), and throughput (orders/s, end to end, client creation included).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

# This file is called kafka.py: its own directory must not shadow kafka-python's `kafka` package.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parents[1]))

from confluent_kafka import Producer as KafkaProducer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from playground.engine.spec import Profile  # noqa: E402
from playground.kafka.clusters import SETTINGS  # noqa: E402
from playground.kafka.java_worker import ensure_built, java_binary  # noqa: E402
from playground.kafka.wire import (  # noqa: E402
    WireClient,
    decode_txn_key,
    transaction_state_partition,
)
from playground.sim.client import Producer as SimProducer  # noqa: E402
from playground.sim.cluster import Cluster  # noqa: E402
from playground.sim.javaclient import JavaProducer as SimJavaProducer  # noqa: E402

PARTITIONS = 3
RECORDS_PER_PARTITION = 10
PROFILES = (Profile("3.9", "librdkafka"), Profile("4", "librdkafka"), Profile("3.9", "java"), Profile("4", "java"))
TXN_BENCH = _HERE / "TxnBench.java"


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def workload(
    producer: Any, topic: str, transactions: int, partitions: int = PARTITIONS, records: int = RECORDS_PER_PARTITION
) -> tuple[list[float], list[float]]:
    """confluent-kafka's transactional API, used the same way on both: returns (seconds per transaction, seconds
    per commit_transaction)."""
    per_txn, commits = [], []
    for n in range(transactions):
        t0 = time.perf_counter()
        producer.begin_transaction()
        for p in range(partitions):
            for i in range(records):
                producer.produce(topic, value=f"txn{n}-p{p}-{i}".encode(), partition=p)
        producer.flush(30)
        t1 = time.perf_counter()
        producer.commit_transaction(30)
        t2 = time.perf_counter()
        per_txn.append(t2 - t0)
        commits.append(t2 - t1)
    return per_txn, commits


def java_workload(
    producer: SimJavaProducer,
    topic: str,
    transactions: int,
    partitions: int = PARTITIONS,
    records: int = RECORDS_PER_PARTITION,
) -> list[float]:
    """KafkaProducer's transactional API on the simulator's model, as TxnBench.java calls it on the real one."""
    per_txn = []
    for n in range(transactions):
        t0 = time.perf_counter()
        producer.begin_transaction()
        for p in range(partitions):
            for i in range(records):
                producer.send(topic, value=f"txn{n}-p{p}-{i}", partition=p)
        producer.flush()
        producer.commit_transaction()
        per_txn.append(time.perf_counter() - t0)
    return per_txn


def bench_sim(transactions: int, partitions: int, records: int, profile: Profile = PROFILES[0]) -> list[float]:
    cluster = Cluster(3, {}, {"bench": PARTITIONS}, seed=0, keep_events=False, kafka=profile.kafka)
    conf = {"transactional.id": "bench-txn", "client.id": "bench"}
    if profile.client == "java":
        producer = SimJavaProducer({**conf, "linger.ms": 5}, cluster=cluster, name="bench", release=profile.kafka)
        producer.init_transactions()
        java_workload(producer, "bench", 5, partitions, records)  # warm-up, as on the real side
        return java_workload(producer, "bench", transactions, partitions, records)
    producer = SimProducer(conf, cluster=cluster, name="bench")
    producer.init_transactions()
    workload(producer, "bench", 5, partitions, records)  # warm-up, as on the real side
    per_txn, _ = workload(producer, "bench", transactions, partitions, records)
    return per_txn


def admin_for(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(admin: AdminClient, name: str, partitions: int) -> None:
    # every broker a replica (up to 3): a 3-node test cluster's min.insync.replicas=2 refuses acks=all to fewer
    replicas = max(1, min(3, len(admin.list_topics(timeout=10).brokers)))
    admin.create_topics([NewTopic(name, partitions, replicas)], operation_timeout=10)[name].result(30)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=5).topics.get(name)
        if (
            md is not None
            and not md.error
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            return
        time.sleep(0.1)


def bench_real(
    bootstrap: str, topic: str, transactions: int, partitions: int, records: int, profile: Profile = PROFILES[0]
) -> tuple[list[float], list[float]]:
    txid = f"{topic}-txn-{profile.client}-{partitions}x{records}"
    if profile.client == "java":
        return bench_real_java(bootstrap, topic, txid, transactions, partitions, records, profile)
    producer = KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": txid, "linger.ms": 5})
    producer.init_transactions(30)
    workload(producer, topic, 5, partitions, records)  # warm-up: connections, coordinator lookup
    result = workload(producer, topic, transactions, partitions, records)
    producer.close()
    return result


def bench_real_java(
    bootstrap: str, topic: str, txid: str, transactions: int, partitions: int, records: int, profile: Profile
) -> tuple[list[float], list[float]]:
    """kafka-clients of the cluster's release (the Java worker's build, tools/java) runs TxnBench.java."""
    classpath = ensure_built(profile.release)
    out = subprocess.run(
        [
            java_binary(),
            "-XX:+UseSerialGC",
            "-cp",
            classpath,
            str(TXN_BENCH),
            bootstrap,
            topic,
            txid,
            str(transactions),
            str(partitions),
            str(records),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"TxnBench.java failed (exit {out.returncode}): {out.stderr[-1500:]}")
    result = json.loads(lines[-1])
    return result["per_txn"], result["commits"]


# ------------------------------------------------------------------------------------ static vs per order


def run_orders(bootstrap: str, topic: str, mode: str, orders: int, prefix: str) -> dict[str, Any]:
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 0}
    inits: list[float] = []
    txids: list[str] = []
    t0 = time.perf_counter()
    if mode in ("static", "static-x10"):
        per_txn = 1 if mode == "static" else 10
        txid = f"{prefix}{mode}"
        txids.append(txid)
        p = KafkaProducer({**conf, "transactional.id": txid})
        ti = time.perf_counter()
        p.init_transactions(30)
        inits.append(time.perf_counter() - ti)
        for start in range(0, orders, per_txn):
            p.begin_transaction()
            for n in range(start, min(orders, start + per_txn)):
                p.produce(topic, value=f"order-{n}".encode(), partition=0)
            p.flush(30)
            p.commit_transaction(30)
        p.close()
    elif mode == "per-order":
        for n in range(orders):
            txid = f"{prefix}order-{n}"
            txids.append(txid)
            p = KafkaProducer({**conf, "transactional.id": txid})
            ti = time.perf_counter()
            p.init_transactions(30)
            inits.append(time.perf_counter() - ti)
            p.begin_transaction()
            p.produce(topic, value=f"order-{n}".encode(), partition=0)
            p.flush(30)
            p.commit_transaction(30)
            p.close()
    else:
        raise ValueError(mode)
    elapsed = time.perf_counter() - t0
    return {"mode": mode, "orders": orders, "inits": inits, "txids": txids, "elapsed": elapsed}


def transaction_state_cost(wire: WireClient, txids: list[str], partitions: int) -> tuple[int, int]:
    """(records, bytes) that `__transaction_state` holds for these transactional ids: each coordinator write
    is a batch of its own; bytes are the batches' sizes as stored."""
    wanted = set(txids)
    records = size = 0
    for part in sorted({transaction_state_partition(t, partitions) for t in wanted}):
        _fp, entries = wire.read_log("__transaction_state", part)
        for e in entries:
            if e.control or e.key is None:
                continue
            try:
                tid = decode_txn_key(e.key)
            except Exception:
                continue
            if tid in wanted:
                records += 1
                size += e.batch_bytes
    return records, size


def markers_and_data(wire: WireClient, topic: str) -> tuple[int, int]:
    _fp, entries = wire.read_log(topic, 0)
    markers = sum(1 for e in entries if e.control)
    return markers, len(entries) - markers


def wait_complete(wire: WireClient, txids: list[str], timeout_s: float = 30) -> None:
    """CompleteCommit written for every id (commit returns before it): then the log holds everything."""
    deadline = time.monotonic() + timeout_s
    pending = list(txids)
    while pending and time.monotonic() < deadline:
        states = wire.describe_transactions(pending[:50])
        pending = [
            t for t in pending if states.get(t, {}).get("state") not in ("CompleteCommit", "CompleteAbort", "Empty")
        ]
        if pending:
            time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transactions", type=int, default=200)
    ap.add_argument("--orders", type=int, default=100)
    ap.add_argument("--profiles-only", action="store_true", help="only the per-profile simulator vs real workload")
    args = ap.parse_args(argv)
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if not bootstrap:
        print(
            "KAFKA_BOOTSTRAP_SERVERS is not set (make bench starts a broker; by hand: "
            "bash tools/kafka/kafka.sh start --nodes 1)",
            file=sys.stderr,
        )
        return 2
    admin = admin_for(bootstrap)
    prefix = f"pg-bench-{uuid.uuid4().hex[:8]}-"
    topics = [f"{prefix}workload", f"{prefix}static", f"{prefix}static-x10", f"{prefix}per-order"]
    wire = WireClient(bootstrap, timeout_s=10)
    # each profile's Kafka version -> (bootstrap, the workload topic there); 4.x only when the environment names it
    clusters = {"3.9": (bootstrap, topics[0])}
    bootstrap4 = os.environ.get(SETTINGS["4"][0], "").strip()
    admin4 = admin_for(bootstrap4) if bootstrap4 else None
    try:
        create_topic(admin, topics[0], PARTITIONS)
        for t in topics[1:]:
            create_topic(admin, t, 1)
        if admin4 is not None:
            create_topic(admin4, topics[0], PARTITIONS)
            clusters["4"] = (bootstrap4, topics[0])

        n = args.transactions
        print(
            f"-- the same transactional workload, {n} transactions, per profile: simulator vs the real cluster of "
            f"that Kafka version, wall-clock per transaction, measured in this run --"
        )
        print(
            f"{'profile':<26} {'records per txn':<16} {'simulator ms':>12} {'real ms':>9} {'ratio mean':>10} "
            f"{'ratio p50':>9} {'real commit p50 ms':>18} {'p95 ms':>7}"
        )
        for profile in PROFILES:
            where = clusters.get(profile.kafka)
            if where is None:
                print(f"{profile.label:<26} (left out: {SETTINGS[profile.kafka][0]} is not set)")
                continue
            for partitions, records in ((PARTITIONS, RECORDS_PER_PARTITION), (1, 1)):
                sim = bench_sim(n, partitions, records, profile)
                real, commits = bench_real(where[0], where[1], n, partitions, records, profile)
                ratio = statistics.mean(real) / statistics.mean(sim)
                ratio50 = pct(real, 50) / pct(sim, 50)
                label = f"{partitions} x {records} ({partitions * records})"
                print(
                    f"{profile.label:<26} {label:<16} {statistics.mean(sim) * 1000:>12.3f} "
                    f"{statistics.mean(real) * 1000:>9.2f} {ratio:>9.1f}x {ratio50:>8.1f}x "
                    f"{pct(commits, 50) * 1000:>18.2f} {pct(commits, 95) * 1000:>7.2f}",
                    flush=True,
                )
        print(
            "(target: the simulator at least 100x faster per transaction; real commit latency = commit_transaction()"
            " / commitTransaction(), which returns once PrepareCommit is durable)"
        )
        if args.profiles_only:
            return 0

        m = args.orders
        print(f"\n-- static transactional.id vs one per order: {m} orders, one record each (real broker) --")
        meta = wire.metadata(["__transaction_state"])
        ts_parts = sum(1 for (t, _p) in meta.partitions if t == "__transaction_state") or 50
        print(
            f"{'mode':<11} {'InitProducerId':>14} {'init p50 ms':>11} {'init p95 ms':>11} {'txn-state rec/msg':>17} "
            f"{'bytes/msg':>9} {'markers/msg':>11} {'orders/s':>9}"
        )
        for mode, topic in (("static", topics[1]), ("static-x10", topics[2]), ("per-order", topics[3])):
            r = run_orders(bootstrap, topic, mode, m, prefix)
            wait_complete(wire, r["txids"])
            recs, size = transaction_state_cost(wire, r["txids"], ts_parts)
            markers, data = markers_and_data(wire, topic)
            print(
                f"{mode:<11} {len(r['inits']):>14} {pct(r['inits'], 50) * 1000:>11.1f} {pct(r['inits'], 95) * 1000:>11.1f} "
                f"{recs / data:>17.2f} {size / data:>9.1f} {markers / data:>11.2f} {m / r['elapsed']:>9.1f}"
            )
        print(
            "(per-order also leaves one transactional id per order at the coordinator: each is held in memory and "
            "gets a tombstone in __transaction_state when transactional.id.expiration.ms, 7 days, passes)"
        )
    finally:
        wire.close()
        for a, names in ((admin, topics), (admin4, topics[:1])):
            if a is None:
                continue
            try:
                for f in a.delete_topics(names, operation_timeout=10).values():
                    try:
                        f.result(15)
                    except Exception:
                        pass
            except Exception:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
