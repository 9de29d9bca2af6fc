"""Connect your own app (issue 16), measured as the web bench measures a command (tools/bench/web.py): event-to-screen
for a request of an external client, p50/p95 with 1 viewer and with 50.

    .venv/bin/python tools/bench/connect.py [--viewers 1,50] [--events 40] [--rate 2] [--processes 2] [--json]

Starts its own redis-server and two Daphne processes (loopback, free ports, one throw-away SQLite file, the Redis
channel layer), opens a free-play session with "Connect your own app" on the first (its listener lives there), and
points a confluent-kafka producer at the address it answers (idempotent, linger.ms 0: each produce() is a Produce
request at once). An event's latency runs from the moment the client hands the record to librdkafka to the moment
the record's value is in the viewer's DOM (the partition log's cell): the request crosses loopback to the listener,
the simulator appends it, the listener cuts it into the session's log and stores it, the first Daphne renders the
changed panels once and publishes them through Redis, the viewer's Daphne forwards them, htmx swaps them in.

As in the web bench, of the N viewers one is a Chromium page (watching through the last Daphne, so every event
crosses Redis) and the others websocket viewers that record when a frame carrying the value arrived.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "bench"))

from viewers import ViewerProcess  # noqa: E402
from web import CHROMIUM, CHROMIUM_ARGS, Driver, percentile  # noqa: E402

from playground.deploy import procs  # noqa: E402

# a value the bench produces, as a partition's cell shows it
VALUE = r">(ev-\d+)<"

# Runs in the viewer page: when each value first shows in the partition logs (epoch ms, sub-millisecond).
OBSERVE = """() => {
  window.__seen = {};
  const note = () => {
    const logs = document.getElementById('p-logs');
    if (!logs) return;
    const now = performance.timeOrigin + performance.now();
    for (const cell of logs.querySelectorAll('.cell')) {
      const v = cell.textContent;
      if (v.startsWith('ev-') && !(v in window.__seen)) window.__seen[v] = now;
    }
  };
  new MutationObserver(note).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def run_case(browser, servers: list[procs.Proc], viewers: int, events: int, rate: float) -> dict:
    from confluent_kafka import Producer

    driver = Driver(servers[0].url)
    _status, headers = driver.post("/new/", {"scenario": "", "listen": "1"})
    sid = re.search(r"/s/([^/#]+)/", headers["Location"]).group(1)
    with driver.opener.open(f"{servers[0].url}/s/{sid}/listen/", timeout=20) as r:
        bootstrap = json.loads(r.read())["bootstrap_servers"]
    assert bootstrap, "the session does not listen"
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "bench-client",
            "enable.idempotence": True,
            "linger.ms": 0,
            "logger": logging.getLogger("bench"),
        }
    )
    producer.produce("orders", value=b"warm-up", partition=0)  # connections, metadata, InitProducerId
    producer.flush(30)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(f"{servers[-1].url}/s/{sid}/", wait_until="load")
    page.wait_for_selector("#ws-status[data-state=open]", timeout=60000)
    page.evaluate(OBSERVE)
    sockets = ViewerProcess([s.url for s in servers], sid, viewers - 1, VALUE) if viewers > 1 else None
    time.sleep(1.0)
    sent: dict[str, float] = {}
    gap = 1.0 / rate
    for i in range(events):
        value = f"ev-{i}"
        t0 = time.time() * 1000.0
        producer.produce("orders", value=value.encode(), partition=i % 3)
        producer.poll(0)
        sent[value] = t0
        time.sleep(max(0.0, gap - (time.time() * 1000.0 - t0) / 1000.0))
    producer.flush(30)
    late = 0
    try:
        page.wait_for_function(f"() => window.__seen && ('ev-{events - 1}' in window.__seen)", timeout=60000)
    except Exception:
        late = 1
    seen = page.evaluate("() => window.__seen")
    latencies = [seen[v] - t0 for v, t0 in sent.items() if v in seen]
    if __import__("os").environ.get("BENCH_DEBUG"):
        print("latencies", [round(x) for x in latencies], file=sys.stderr)
    time.sleep(0.5)
    transport = [
        theirs[v] - t0 for theirs in (sockets.stop() if sockets else []) for v, t0 in sent.items() if v in theirs
    ]
    ctx.close()
    with driver.opener.open(f"{servers[0].url}/s/{sid}/log.json", timeout=20) as r:
        log = json.loads(r.read())
    rows = [c for c in log["commands"] if "ext" in c]
    return {
        "viewers": viewers,
        "viewers_in_chromium": 1,
        "daphne_processes": len(servers),
        "events": events,
        "rate_per_s": rate,
        "samples": len(latencies),
        "not_caught_up_after_60s": late,
        "latency_ms_p50": round(percentile(latencies, 0.50), 1),
        "latency_ms_p95": round(percentile(latencies, 0.95), 1),
        "latency_ms_max": round(max(latencies), 1) if latencies else None,
        "socket_latency_ms_p50": round(percentile(transport, 0.50), 1) if transport else None,
        "socket_latency_ms_p95": round(percentile(transport, 0.95), 1) if transport else None,
        "log_rows": len(rows),
        "log_row_bytes_mean": round(sum(len(json.dumps(r["ext"])) for r in rows) / max(1, len(rows))),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--viewers", default="1,50")
    ap.add_argument("--events", type=int, default=40)
    ap.add_argument("--rate", type=float, default=2.0, help="requests per second (default 2)")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    results: dict = {"cases": []}
    with tempfile.TemporaryDirectory(prefix="bench-connect-") as tmp:
        work = Path(tmp)
        redis = procs.start_redis(work / "redis")
        env = procs.django_env(work / "bench.sqlite3", redis.extra["url"], DJANGO_DEBUG="0", PLAYGROUND_LISTEN="1")
        procs.migrate(env)
        servers = [procs.start_daphne(env, work) for _ in range(max(1, args.processes))]
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    for n in [int(v) for v in args.viewers.split(",") if v.strip()]:
                        results["cases"].append(run_case(browser, servers, n, args.events, args.rate))
                finally:
                    browser.close()
        finally:
            for s in servers:
                s.stop()
            redis.stop()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for c in results["cases"]:
            print(
                f"external client's Produce -> panel in Chromium, {c['viewers']:>3} viewer(s) over Redis "
                f"({c['daphne_processes']} Daphne processes), {c['events']} requests at {c['rate_per_s']}/s: "
                f"p50 {c['latency_ms_p50']} ms, p95 {c['latency_ms_p95']} ms, max {c['latency_ms_max']} ms "
                f"({c['samples']} samples; {c['log_rows']} log rows, {c['log_row_bytes_mean']} bytes each on average)"
            )
            if c["socket_latency_ms_p50"] is not None:
                print(
                    f"    the other {c['viewers'] - 1} viewers (websockets): frame received "
                    f"p50 {c['socket_latency_ms_p50']} ms, p95 {c['socket_latency_ms_p95']} ms"
                )
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    if load and not args.json:
        print(f"(load average during the run: {' '.join(load)} on {__import__('os').cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
