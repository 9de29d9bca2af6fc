"""The tap (`manage.py tap`) in front of a real Kafka, measured against the same requests going direct, in one run:

    KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:19092 .venv/bin/python tools/bench/tap.py [--requests N] [--json]

One client, one request in flight, over plain sockets (tools/bench/rawkafka.py's frames): N rounds, each sending one
request of each kind to the broker directly and the same through the tap, alternately, so both meet the same load.
Kinds: ApiVersions v3 (decoded and observed), Metadata v12 of one topic (decoded and rewritten with the tap's
addresses), Produce v9 acks=1 of one 1 KiB record (its head read, its answer decoded) and Produce of one 256 KiB
record (streamed through in chunks). Printed: per kind, the latency's p50 and p99 direct and through the tap and what
the tap adds; and the tap process's CPU (user + system, from /proc) per 1,000 requests through it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "bench"))

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from rawkafka import api_versions_frame, metadata_frame, request_frame, with_correlation  # noqa: E402

from playground.protocol import records  # noqa: E402

_SIZE = struct.Struct(">i")
PRODUCE = 0


def produce_frame(topic: str, value_bytes: int) -> bytes:
    batch = records.encode_batch([records.Record(0, int(time.time() * 1000), b"k", os.urandom(value_bytes))])
    data = {
        "transactional_id": None,
        "acks": 1,
        "timeout": 30_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    return request_frame(PRODUCE, 9, data, "bench-tap")


class Conn:
    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation = 0

    def round_trip_s(self, frame: bytes) -> float:
        self.correlation += 1
        out = with_correlation(frame, self.correlation)
        t0 = time.perf_counter()
        self.sock.sendall(out)
        size = _SIZE.unpack(self._read(4))[0]
        answer = self._read(size)
        elapsed = time.perf_counter() - t0
        assert _SIZE.unpack_from(answer)[0] == self.correlation & 0x7FFFFFFF, "an answer out of order"
        return elapsed

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return bytes(buf)


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1000, help="rounds (each sends every kind both ways)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    direct = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").split(",")[0].strip()
    if not direct:
        print("tap bench: KAFKA_BOOTSTRAP_SERVERS is not set (make bench starts a 1-node Kafka)", file=sys.stderr)
        return 2
    topic = f"bench-tap-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": direct})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(timeout=60)
    time.sleep(1)  # the leader is elected
    tap = subprocess.Popen(
        [sys.executable, "-m", "playground.tap", "--upstream", direct, "--listen", "127.0.0.1:0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert tap.stdout is not None
        through = tap.stdout.readline().strip().split(",")[0]  # a 1-node cluster: one listener
        kinds = {
            "ApiVersions": api_versions_frame("bench-tap"),
            "Metadata": metadata_frame("bench-tap", [topic]),
            "Produce 1 KiB": produce_frame(topic, 1024),
            "Produce 256 KiB": produce_frame(topic, 256 * 1024),
        }
        a, b = Conn(direct), Conn(through)
        for frame in kinds.values():  # warm both paths (metadata caches, the tap's first decode of each version)
            a.round_trip_s(frame), b.round_trip_s(frame)
        times: dict[str, dict[str, list[float]]] = {k: {"direct": [], "tap": []} for k in kinds}
        cpu0 = cpu_s(tap.pid)
        for _ in range(args.requests):
            for kind, frame in kinds.items():
                times[kind]["direct"].append(a.round_trip_s(frame))
                times[kind]["tap"].append(b.round_trip_s(frame))
        cpu_per_1000_s = (cpu_s(tap.pid) - cpu0) / (args.requests * len(kinds)) * 1000
    finally:
        tap.terminate()
        tap.wait(timeout=60)
        for done in admin.delete_topics([topic]).values():
            done.result(timeout=60)  # before the process exits with the request unsent
    result: dict = {"requests_per_kind": args.requests, "tap_cpu_ms_per_1000_requests": round(cpu_per_1000_s * 1000, 1)}
    for kind, t in times.items():
        row = {}
        for q, name in ((0.5, "p50"), (0.99, "p99")):
            d, p = pct(t["direct"], q) * 1000, pct(t["tap"], q) * 1000
            row[name] = {"direct_ms": round(d, 3), "tap_ms": round(p, 3), "added_ms": round(p - d, 3)}
        row["mean_added_ms"] = round((statistics.mean(t["tap"]) - statistics.mean(t["direct"])) * 1000, 3)
        result[kind] = row
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{args.requests} requests of each kind, one in flight, direct and through the tap alternately:")
    for kind in kinds:
        r = result[kind]
        print(
            f"  {kind:<16} p50 {r['p50']['direct_ms']:.3f} -> {r['p50']['tap_ms']:.3f} ms ({r['p50']['added_ms']:+.3f});"
            f"  p99 {r['p99']['direct_ms']:.3f} -> {r['p99']['tap_ms']:.3f} ms ({r['p99']['added_ms']:+.3f})"
        )
    print(f"  the tap's CPU: {result['tap_cpu_ms_per_1000_requests']} ms per 1,000 requests", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
