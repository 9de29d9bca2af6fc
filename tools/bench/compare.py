"""What a compare page costs the server (issue 30, item 4): CPU per anonymous GET of /sc/<id>/compare/, the first
one for a profile pair and the ones after it, in the process that computed it and in another one.

    .venv/bin/python tools/bench/compare.py [--pairs 3] [--cached 20] [--json]

Starts two Daphne processes on one throw-away SQLite file (loopback, the in-memory channel layer), shares two
scenarios through the editor's "save and share" as a user would, and GETs their compare pages:
- "as shipped": scenarios/21-db-incident-in-full.yaml (a database beside Kafka and its reconciliation query) with
  seven steps more (three app.sql statements, two audit records, two polls): 44 steps;
- "costly reconcile": the same 44 steps with its reconciliation query made to run until the statement limit
  (db_statement_ms, 200 ms) once Kafka holds a record, the scenario the issue measured (33.7 s per GET).
For each, `--pairs` profile pairs (a first GET each: nothing cached for that pair), then `--cached` GETs at other
steps (?at=) of the first pair in the same process, and as many in the other process. The CPU is the serving
process's (user + system, /proc, 10 ms ticks), read around each GET; the cached figures are a mean over the GETs.
Every GET comes from one client (loopback), whose SQL budget for the minute (db_ms_per_minute) the costly pairs
share: the page says when it stopped a comparison.
A third scenario of 2,000 steps (a transaction and a poll, over and over) shows what one GET of the longest
scenario the format allows costs.

The script reaches the server only over HTTP, so the same file measures an older checkout: copy it into that
checkout's tools/bench/ and run it there.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playground.deploy import procs  # noqa: E402
from tools.bench.sharing import cpu_ms  # noqa: E402
from tools.bench.web import Driver  # noqa: E402

PAIRS = [("3.9-librdkafka", "4-java"), ("3.9-java", "4-java"), ("4-librdkafka", "4-java"), ("3.5-java", "3.9-java")]
EXTRA_STEPS = """  - app.sql: "SELECT count(*) FROM orders WHERE status = 'paid'"
  - app.sql: "UPDATE inventory SET stock = stock WHERE sku = 'sku-1'"
  - app.sql: "SELECT sum(qty) FROM stock_moves"
  - audit.produce: {topic: order-audit, partition: 0, value: audit-106}
  - audit.produce: {topic: order-audit, partition: 0, value: audit-107}
  - inventory.poll
  - inventory.poll
"""
# Runs until the statement limit stops it once Kafka holds a record (count(*) of kafka_records > 0); cheap before,
# so that the editor's check of the query (over empty Kafka tables) passes.
SPIN = (
    "      WHERE o.status = 'paid'\n"
    "        AND (SELECT count(*) FROM (WITH RECURSIVE spin(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM spin\n"
    "             WHERE i < 1000000000 * (SELECT count(*) FROM kafka_records)) SELECT i FROM spin)) > 0\n"
)


def incident(costly: bool, suffix: str) -> str:
    """Scenario 21 with seven more steps (44 in all), its expectations left out (they describe the 37-step file)."""
    text = (ROOT / "scenarios" / "21-db-incident-in-full.yaml").read_text()
    text = text.split("\nexpect:", 1)[0].rstrip("\n") + "\n" + EXTRA_STEPS
    text = text.replace("id: db-incident-in-full", f"id: db-incident-{suffix}")
    if costly:
        assert "      WHERE o.status = 'paid'\n" in text
        text = text.replace("      WHERE o.status = 'paid'\n", SPIN)
    return text


def long_scenario(steps: int) -> str:
    body = ["  - A.init_transactions"]
    cycle = [
        "  - A.begin_transaction",
        "  - A.produce: {topic: orders, partition: 0, value: v}",
        "  - A.commit_transaction",
        "  - rc.poll",
    ]
    while len(body) < steps:
        body.extend(cycle)
    return (
        "format: 1\nid: long-run\ntitle: 2,000 steps\ncluster:\n  topics:\n    orders: {partitions: 1}\n"
        "actors:\n  A: {producer: {transactional.id: t}}\n"
        "  rc: {consumer: {group.id: g, isolation.level: read_committed, topics: [orders]}}\n"
        "steps:\n" + "\n".join(body[:steps]) + "\n"
    )


def share(driver: Driver, text: str) -> str:
    status, headers = driver.post("/editor/save/", {"text": text})
    assert status == 302, status
    return re.search(r"/sc/([^/]+)/", headers["Location"]).group(1)


def get(server: procs.Proc, path: str) -> tuple[float, float, int, str]:
    """CPU (ms) of the serving process, wall time (ms), status and body of one GET."""
    before = cpu_ms(server.proc.pid)
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(server.url + path, timeout=600) as r:
            status, body = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read().decode(errors="replace")
    wall = (time.perf_counter() - t0) * 1000
    time.sleep(0.05)  # the response is written before the process's last ticks are counted
    return cpu_ms(server.proc.pid) - before, wall, status, body


def measure(servers: list[procs.Proc], text_id: str, pairs: int, cached: int) -> dict:
    first, first_wall, notes, lengths = [], [], [], []
    for a, b in PAIRS[:pairs]:
        cpu, wall, status, body = get(servers[0], f"/sc/{text_id}/compare/?a={a}&b={b}")
        assert status == 200, (status, body[:300])
        first.append(cpu)
        first_wall.append(wall)
        lengths.append(int(re.search(r'data-length="(\d+)"', body).group(1)))
        stopped = re.search(r'class="notice cmp-limit"[^>]*>([^<]*)', body)
        notes.append(html.unescape(stopped.group(1).strip()) if stopped else "")
    a, b = PAIRS[0]
    length = lengths[0]
    out = {
        "steps_compared": lengths,
        "notes": notes,
        "first_cpu_ms": [round(v) for v in first],
        "first_wall_ms": [round(v) for v in first_wall],
    }
    for name, server in (("cached_same_process", servers[0]), ("cached_other_process", servers[1])):
        cpus, walls = [], []
        for i in range(cached):
            cpu, wall, status, _body = get(server, f"/sc/{text_id}/compare/?a={a}&b={b}&at={(i * 7) % (length + 1)}")
            assert status == 200, status
            cpus.append(cpu)
            walls.append(wall)
        out[name] = {
            "cpu_ms_mean": round(statistics.fmean(cpus), 1),
            "cpu_ms_max": round(max(cpus), 1),
            "wall_ms_p50": round(statistics.median(walls), 1),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--cached", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        env = procs.django_env(Path(tmp) / "bench.sqlite3")
        procs.migrate(env)
        servers = [procs.start_daphne(env, Path(tmp)), procs.start_daphne(env, Path(tmp))]
        try:
            driver = Driver(servers[0].url)
            result = {
                "as shipped, 44 steps": measure(servers, share(driver, incident(False, "44")), args.pairs, args.cached),
                "costly reconcile, 44 steps": measure(
                    servers, share(driver, incident(True, "costly")), args.pairs, args.cached
                ),
                "2,000 steps": measure(servers, share(driver, long_scenario(2000)), 1, 5),
            }
        finally:
            for server in servers:
                server.stop()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for name, r in result.items():
        print(f"{name}:")
        for i, (a, b) in enumerate(PAIRS[: len(r["first_cpu_ms"])]):
            print(
                f"  first GET, {a} vs {b}: CPU {r['first_cpu_ms'][i]} ms, wall {r['first_wall_ms'][i]} ms, "
                f"{r['steps_compared'][i]} steps compared{': ' + r['notes'][i] if r['notes'][i] else ''}"
            )
        for where in ("cached_same_process", "cached_other_process"):
            s = r[where]
            print(
                f"  then, {where.replace('_', ' ')}: CPU mean {s['cpu_ms_mean']} ms (max {s['cpu_ms_max']}), "
                f"wall p50 {s['wall_ms_p50']} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
