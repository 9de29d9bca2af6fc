"""The inspector's figures ("watch your own cluster"), against the real cluster of KAFKA_BOOTSTRAP_SERVERS (`make bench`
starts a 1-node one):

* what watching costs the cluster: the requests per second and bytes fetched per second of one watched selection of
  30 partitions (one subscription per server process, however many viewers) while a transactional producer writes
  2,000 records/s into them;
* the findings with the grouping on: before measuring, two instances of one service fence each other `--fences` times
  (24) on the watched topic, so each poll reports that many shared-id findings folded into one group;
* the page's event-to-screen latency: from a record's produce() to its cell in Chromium's DOM (the inspector's poll,
  the render, the websocket, htmx's swap), on a partition watched along with the 30 loaded ones.

Both at INSPECTOR_POLL_INTERVAL_S = 5 (the default) and 1.

    .venv/bin/python tools/bench/inspector.py [--seconds 30] [--probes 8] [--rate 2000] [--partitions 30]
                                              [--intervals 5,1] [--json]

The cost is measured in this process on the inspector itself (get_inspector().subscribe, exactly what a server
process does for a selection): requests counted by its read-only client, bytes as received on its sockets, and the
records' bytes of its Fetch answers. The latency is measured on a Daphne server of its own with a headless Chromium
(/usr/bin/chromium) that entered the key and watches the selection; each probe is a transaction of one record on a
quiet partition (a loaded partition's window holds only its newest records: at 67 records/s a probe would leave the
window between two polls 5 s apart). The writer is a separate process, so that it does not share this one's GIL.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# tools/bench/ holds a kafka.py of its own: it must not shadow kafka-python's `kafka` package (wire.py imports it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling",
]

# A transactional writer of another application: `rate` records/s (transactions of whatever is due, about 10 a
# second, catching up when a commit was slow), spread over every partition; prints how many it wrote once a second.
WRITER = r"""
import sys, time
from confluent_kafka import Producer
bootstrap, topic, txid, rate, partitions = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, "linger.ms": 5})
p.init_transactions(30)
n, t0, last = 0, time.monotonic(), 0.0
while True:
    due = min(int(rate * (time.monotonic() - t0)) - n, rate)
    if due <= 0:
        time.sleep(0.02)
        continue
    p.begin_transaction()
    for _ in range(due):
        p.produce(topic, f"load-{n}".encode(), partition=n % partitions)
        n += 1
    p.commit_transaction(30)
    now = time.monotonic()
    if now - last >= 1:
        print(n, now - t0, flush=True)
        last = now
    time.sleep(0.1)
"""

# In the page: when each probe's cell first appears (epoch ms), whatever its fate (open, then committed); and for
# each update, when the inspector read the cluster (the status section's data-read-at), when the frame arrived and
# when htmx had swapped it in.
OBSERVE = """(tp) => {
  const now = () => performance.timeOrigin + performance.now();
  window.__seen = {}; window.__frames = []; let arrived = null;
  const look = () => {
    const section = document.querySelector(`section.ipart[data-tp="${tp}"]`);
    if (!section) return;
    for (const cell of section.querySelectorAll('.cell')) {
      const v = cell.textContent;
      if (v.startsWith('probe') && !(v in window.__seen)) window.__seen[v] = now();
    }
  };
  new MutationObserver(look).observe(document.body, {subtree: true, childList: true});
  document.body.addEventListener('htmx:wsBeforeMessage', () => { arrived = now(); });
  document.body.addEventListener('htmx:wsAfterMessage', () => {
    const status = document.getElementById('insp-status');
    window.__frames.push({read: +(status && status.dataset.readAt || 0), arrived: arrived, swapped: now()});
  });
  look();
}"""


def setup_django(key: str, prefix: str) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="playground.settings",
        INSPECTOR_KEY=key,
        INSPECTOR_TOPICS=f"{prefix}*",
        INSPECTOR_TRANSACTIONAL_IDS=f"{prefix}*",
    )
    import django

    django.setup()


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, n) for t, n in topics.items()]).values():
        f.result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=5).topics
        if all(
            t in md and len(md[t].partitions) == n and all(p.leader >= 0 for p in md[t].partitions.values())
            for t, n in topics.items()
        ):
            return
        time.sleep(0.2)
    raise RuntimeError("the bench's topics have no leaders")


def delete_topics(bootstrap: str, prefix: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)]
    for f in admin.delete_topics(topics, operation_timeout=10).values() if topics else []:
        try:
            f.result(timeout=15)
        except Exception:
            pass


class Counters:
    """Bytes the inspector's client receives (every response), and the record bytes of its Fetch answers."""

    def __init__(self) -> None:
        from playground.inspector.client import ReadOnlyWire
        from playground.kafka import wire

        self.received = 0
        self.fetched = 0
        recv, fetch = wire._Connection._recv_exactly, ReadOnlyWire.fetch
        counters = self

        def counted_recv(conn, n, deadline):
            data = recv(conn, n, deadline)
            counters.received += len(data)
            return data

        def counted_fetch(client, *args, **kwargs):
            fp = fetch(client, *args, **kwargs)
            counters.fetched += len(fp.records or b"")
            return fp

        wire._Connection._recv_exactly = counted_recv
        ReadOnlyWire.fetch = counted_fetch


def fence_storm(bootstrap: str, topic: str, txid: str, fences: int) -> None:
    """Two instances of one service fencing each other mid-transaction `fences` times (the issue's incident): the
    watched selection then holds that many shared-id findings, which the report and the page fold into a group."""
    from confluent_kafka import KafkaException, Producer

    def instance():
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(topic, b"pay", partition=0)
        p.flush(20)
        return p

    current = instance()
    for _ in range(fences):
        other = instance()  # fences `current`'s open transaction
        try:
            current.commit_transaction(10)
        except KafkaException:
            pass
        current = other
    current.commit_transaction(20)


def cost(topic: str, txids: list[str], interval: float, seconds: float, counters: Counters) -> dict:
    """One subscription to the 30 partitions (and the storm's id) for `seconds`: requests/s, bytes/s, time per
    inspection, and the findings and groups it reports."""
    from playground.inspector import forget_inspectors, get_inspector

    forget_inspectors()
    insp = get_inspector(poll_interval_s=interval)
    reports: list[dict] = []
    sub = insp.subscribe(reports.append, [topic], txids)
    while not reports:
        time.sleep(0.05)  # the first read (the __transaction_state lookback, Metadata) is not the steady state
    sent0, recv0, fetch0, n0, t0 = (
        sum(insp.requests_sent().values()),
        counters.received,
        counters.fetched,
        len(reports),
        time.monotonic(),
    )
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    sent, by_api = sum(insp.requests_sent().values()) - sent0, dict(insp.requests_sent())
    polls = reports[n0:]
    sub.close()
    errors = [r["error"] for r in polls if "error" in r]
    good = [r for r in polls if "error" not in r]
    return {
        "interval_s": interval,
        "seconds": round(elapsed, 1),
        "polls": len(polls),
        "errors": errors[:3],
        "partitions": len(good[-1]["partitions"]) if good else 0,
        "requests_per_s": round(sent / elapsed, 1),
        "requests_per_poll": round(sent / max(1, len(polls)), 1),
        "bytes_received_per_s": round((counters.received - recv0) / elapsed),
        "record_bytes_fetched_per_s": round((counters.fetched - fetch0) / elapsed),
        "inspection_ms_p50": statistics.median([r["elapsed_ms"] for r in good]) if good else None,
        "findings": len(good[-1]["findings"]) if good else 0,
        "groups": len(good[-1]["groups"]) if good else 0,
        # what the grouping itself costs per poll (detectors.group_findings on the last report's findings)
        "grouping_ms": _grouping_ms(good[-1]["findings"]) if good else None,
        "requests_by_api_total": by_api,
    }


def _grouping_ms(findings: list[dict]) -> float:
    from playground.inspector.detectors import group_findings

    t0 = time.perf_counter()
    for _ in range(100):
        group_findings(findings)
    return round((time.perf_counter() - t0) * 1000 / 100, 3)


def latency(bootstrap: str, key: str, prefix: str, load: str, probe: str, interval: float, probes: int) -> dict:
    """Event-to-screen: a probe record's produce() to its cell in Chromium, through a server of its own."""
    from confluent_kafka import Producer
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from playground.deploy import procs

    work = Path(tempfile.mkdtemp(prefix="bench-inspector-"))
    env = procs.django_env(
        work / "db.sqlite3",
        "",
        DJANGO_DEBUG="0",
        KAFKA_BOOTSTRAP_SERVERS=bootstrap,
        INSPECTOR_KEY=key,
        INSPECTOR_TOPICS=f"{prefix}*",
        INSPECTOR_TRANSACTIONAL_IDS=f"{prefix}*",
        INSPECTOR_POLL_INTERVAL_S=str(interval),
    )
    procs.migrate(env)
    server = procs.start_daphne(env, work)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{prefix}probe-{interval}", "linger.ms": 0})
    p.init_transactions(30)
    frames: list[int] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(len(payload))))
            page.goto(server.url + "/inspect/")
            page.fill("#inspect-key", key)
            page.click("#inspect-key-form button")
            page.goto(f"{server.url}/inspect/?topic={load}&topic={probe}&txid={prefix}payment")
            page.wait_for_selector('#ws-status[data-state="open"]', timeout=30_000)
            page.wait_for_function("() => document.querySelectorAll('section.ipart').length > 0", timeout=30_000)
            page.evaluate(OBSERVE, f"{probe}-0")
            time.sleep(interval + 1)  # steady state: the first updates are behind us
            frames.clear()
            page.evaluate("window.__frames = []")
            started = time.monotonic()
            sent: dict[str, float] = {}
            missed: list[str] = []
            for i in range(probes):
                time.sleep(random.uniform(0, interval))  # any phase of the poll
                name = f"probe{interval:g}-{i}"  # a name of this run's own (the probe topic keeps the others)
                p.begin_transaction()
                sent[name] = time.time() * 1000
                p.produce(probe, name.encode(), partition=0)
                p.commit_transaction(30)
                try:
                    page.wait_for_function(f"() => '{name}' in window.__seen", timeout=int((3 * interval + 20) * 1000))
                except PlaywrightTimeout:
                    missed.append(name)  # counted, not fatal: the figures say how many never reached the screen
            seen = page.evaluate("window.__seen")
            updates = page.evaluate("window.__frames")
            spent = time.monotonic() - started
            browser.close()
    finally:
        server.stop()
    ms = sorted(seen[n] - sent[n] for n in sent if n in seen) or [float("nan")]
    timed = [u for u in updates if u["read"] and u["arrived"]]
    return {
        "interval_s": interval,
        "probes": len(sent),
        "missed": len(missed),
        "p50_ms": round(statistics.median(ms)),
        "p95_ms": round(ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]),
        "max_ms": round(ms[-1]),
        "ws_frames": len(frames),
        "ws_bytes_per_frame": round(statistics.mean(frames)) if frames else 0,
        "ws_bytes_per_s": round(sum(frames) / spent),
        # where an update's time goes: the cluster read -> the frame in the browser (render, channel layer,
        # websocket) -> swapped into the DOM (htmx)
        "read_to_frame_ms_p50": round(statistics.median([u["arrived"] - u["read"] for u in timed])) if timed else None,
        "frame_to_dom_ms_p50": round(statistics.median([u["swapped"] - u["arrived"] for u in timed]))
        if timed
        else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30, help="how long the cost is measured at each interval")
    ap.add_argument("--probes", type=int, default=8, help="probe records per interval for the latency")
    ap.add_argument("--rate", type=int, default=2000, help="records/s the transactional writer produces")
    ap.add_argument("--partitions", type=int, default=30)
    ap.add_argument("--intervals", default="5,1", help="INSPECTOR_POLL_INTERVAL_S values to measure")
    ap.add_argument("--fences", type=int, default=24, help="shared-id fences before measuring (grouped findings)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if not bootstrap:
        print(
            "KAFKA_BOOTSTRAP_SERVERS is not set: the inspector's bench needs a real cluster (make bench starts one)",
            file=sys.stderr,
        )
        return 2
    prefix = f"bench-insp-{secrets.token_hex(3)}-"
    key = secrets.token_urlsafe(18)
    load, probe = f"{prefix}load", f"{prefix}probe"
    intervals = [float(x) for x in args.intervals.split(",") if x.strip()]
    setup_django(key, prefix)
    counters = Counters()
    create_topics(bootstrap, {load: args.partitions, probe: 1})
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, bootstrap, load, f"{prefix}writer", str(args.rate), str(args.partitions)],
        stdout=subprocess.PIPE,
        text=True,
    )
    written: list[tuple[int, float]] = []
    threading.Thread(
        target=lambda: [written.append(tuple(map(float, line.split()))) for line in writer.stdout], daemon=True
    ).start()
    out: dict = {"rate_asked": args.rate, "partitions": args.partitions}
    try:
        while len(written) < 2:
            if writer.poll() is not None:
                raise RuntimeError("the transactional writer exited")
            time.sleep(0.2)
        fence_storm(bootstrap, load, f"{prefix}payment", args.fences)
        out["cost"] = [cost(load, [f"{prefix}payment"], i, args.seconds, counters) for i in intervals]
        out["latency"] = [latency(bootstrap, key, prefix, load, probe, i, args.probes) for i in intervals]
        (n1, t1), (n2, t2) = written[1], written[-1]
        out["rate_written"] = round((n2 - n1) / max(0.001, t2 - t1))
    finally:
        writer.kill()
        writer.wait(10)
        delete_topics(bootstrap, prefix)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"inspector: watching {args.partitions} partitions while a transactional producer writes "
        f"{out['rate_written']} records/s (asked {args.rate}), one subscription"
    )
    for c in out["cost"]:
        print(
            f"  poll every {c['interval_s']:g} s: {c['requests_per_s']} requests/s ({c['requests_per_poll']} per poll over "
            f"{c['partitions']} partitions), {c['bytes_received_per_s'] / 1024:.1f} KiB/s received "
            f"({c['record_bytes_fetched_per_s'] / 1024:.1f} KiB/s of record batches), one inspection "
            f"{c['inspection_ms_p50']} ms (p50); {c['findings']} findings in {c['groups']} groups (grouping "
            f"{c['grouping_ms']} ms){'; errors: ' + '; '.join(c['errors']) if c['errors'] else ''}"
        )
    for lat in out["latency"]:
        print(
            f"  event-to-screen, poll every {lat['interval_s']:g} s: p50 {lat['p50_ms']} ms, p95 {lat['p95_ms']} ms, "
            f"max {lat['max_ms']} ms ({lat['probes']} probes, {lat['missed']} not on screen within 3 polls + 20 s); the page got {lat['ws_frames']} updates of "
            f"{lat['ws_bytes_per_frame'] / 1024:.0f} KiB ({lat['ws_bytes_per_s'] / 1024:.0f} KiB/s); cluster read -> frame "
            f"{lat['read_to_frame_ms_p50']} ms, frame -> DOM {lat['frame_to_dom_ms_p50']} ms (p50)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
