"""Benchmark of the embedded simulated cluster (playground/sim).

    .venv/bin/python tools/bench/sim.py [--transactions N] [--preload RECORDS]

Prints:
1. transactions/s and records/s for N transactions (default 1,000) of 10 records on each of 3 partitions
   (30 records per transaction), through the client facade: begin, produce, commit (EndTxn, markers) included;
2. the same with 1,000,000 records already in the logs (committed and aborted transactions, so the abort index
   is populated too), and the ratio of the two per-transaction costs (flat = close to 1.0);
3. a read_committed consumer reading the new records in both cases (fetch by offset: flat too);
4. memory per million records held in the logs (tracemalloc).

Time is measured here, outside the simulator (which itself only knows virtual time), as CPU time of this
process (time.process_time), so that other load on the machine does not skew the figures; wall-clock time is
printed alongside.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from playground.sim.client import Consumer, Producer, TopicPartition
from playground.sim.cluster import Cluster
from playground.sim.log import ABORT, COMMIT

PARTITIONS = 3
RECORDS_PER_PARTITION = 10


def new_cluster() -> Cluster:
    return Cluster(3, {}, {"bench": PARTITIONS}, seed=0, keep_events=False)


def preload(cluster: Cluster, records: int, batch: int = 100) -> None:
    """Fill the logs directly (as replicated history): transactions of `batch` records, one in ten aborted,
    with a plain batch now and then."""
    producer_id = 900_000
    written = 0
    n = 0
    while written < records:
        for p in range(PARTITIONS):
            log = cluster.log(f"bench-{p}")
            values = tuple(f"pre-{written + i}" for i in range(batch))
            if n % 7 == 6:
                log.append(-1, -1, -1, False, values)
            else:
                log.append(
                    producer_id,
                    0,
                    log.producers[producer_id].last_seq + 1 if producer_id in log.producers else 0,
                    True,
                    values,
                )
                log.append_marker(producer_id, 0, ABORT if n % 10 == 9 else COMMIT, 0)
            log.advance_high_watermark(log.log_end_offset)
            written += batch
        n += 1


def run_transactions(cluster: Cluster, transactions: int) -> float:
    producer = Producer({"transactional.id": "bench", "linger.ms": 5}, cluster=cluster, name="bench")
    producer.init_transactions()
    start, wall = time.process_time(), time.perf_counter()
    for t in range(transactions):
        producer.begin_transaction()
        for p in range(PARTITIONS):
            for i in range(RECORDS_PER_PARTITION):
                producer.produce("bench", f"t{t}-{i}", partition=p)
        producer.commit_transaction()
    elapsed, wall = time.process_time() - start, time.perf_counter() - wall
    cluster.settle()
    print(f"  (wall clock {wall:.2f} s, CPU {elapsed:.2f} s)")
    return elapsed


def read_new(cluster: Cluster, start_offsets: dict[int, int], expected: int) -> float:
    consumer = Consumer({"isolation.level": "read_committed"}, cluster=cluster, name="reader")
    consumer.assign([TopicPartition("bench", p, start_offsets[p]) for p in range(PARTITIONS)])
    got = 0
    start = time.process_time()
    while got < expected:
        batch = consumer.consume(500, timeout=1)
        if not batch:
            break
        got += len(batch)
    elapsed = time.process_time() - start
    assert got == expected, (got, expected)
    return elapsed


def bench(transactions: int, preload_records: int) -> tuple[float, float]:
    cluster = new_cluster()
    if preload_records:
        preload(cluster, preload_records)
    before = {p: cluster.log(f"bench-{p}").log_end_offset for p in range(PARTITIONS)}
    # Python's cyclic GC rescans every live container on full collections; move the preloaded history out of
    # its way (gc.freeze) so the figures measure the simulator, not the collector. Done for both runs alike.
    gc.collect()
    gc.freeze()
    elapsed = run_transactions(cluster, transactions)
    records = transactions * PARTITIONS * RECORDS_PER_PARTITION
    read_s = read_new(cluster, before, records)
    gc.unfreeze()
    label = f"with {preload_records:,} records already in the logs" if preload_records else "on empty logs"
    print(f"{transactions:,} transactions x {RECORDS_PER_PARTITION} records x {PARTITIONS} partitions {label}:")
    print(
        f"  {transactions / elapsed:10,.0f} transactions/s   {records / elapsed:12,.0f} records/s   "
        f"({elapsed * 1e6 / transactions:,.0f} us per transaction)"
    )
    print(f"  read_committed consumer over the new records: {records / read_s:12,.0f} records/s")
    return elapsed / transactions, read_s / records


def memory_per_million(records: int = 1_000_000) -> float:
    gc.collect()
    tracemalloc.start()
    cluster = new_cluster()
    base = tracemalloc.get_traced_memory()[0]
    preload(cluster, records)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    per_million = used * 1_000_000 / records
    print(
        f"memory: {per_million / 2**20:,.1f} MiB per million records in the logs "
        f"({used / records:,.0f} bytes per record, values like 'pre-123456' included)"
    )
    return per_million


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transactions", type=int, default=1000)
    parser.add_argument("--preload", type=int, default=1_000_000)
    args = parser.parse_args()
    empty_txn, empty_read = bench(args.transactions, 0)
    full_txn, full_read = bench(args.transactions, args.preload)
    print(
        f"per-transaction cost ratio (full / empty logs): {full_txn / empty_txn:.2f}   "
        f"per-record read cost ratio: {full_read / empty_read:.2f}"
    )
    memory_per_million(args.preload)


if __name__ == "__main__":
    main()
