"""The dashboard's figures: event-to-screen latency (p50/p95) measured in Chromium with 1 viewer and with 50 viewers
over Redis, and the first page's transferred bytes.

    .venv/bin/python tools/bench/web.py [--viewers 1,50] [--events 40] [--rate 2] [--processes 2]
                                        [--chromium-viewers 1] [--json]

Starts its own redis-server and two Daphne processes (loopback, free ports, one throw-away SQLite file, the Redis
channel layer; the driver sends commands to the first, viewers are spread over both, the Chromium page watches
through the second so every event it shows has crossed Redis),
drives a free-play session on the simulator over HTTP as the buttons do, and watches it. An event's latency runs
from the moment the driver sends the command (HTTP POST) to the moment the pushed fragments are in the viewer's
DOM (the tag carrying the session's version is swapped after the panels of the same message).

Of the N viewers, one is a Chromium page (/usr/bin/chromium, headless) and the others are websocket viewers that
record when each frame arrived: to the server they are what remote browsers are, while 50 Chromium renderers on
this machine's own 2 cores would measure the machine's CPU rather than the dashboard (`--chromium-viewers 0` does
that anyway). They run on one asyncio loop in a process of their own (tools/bench/viewers.py), not as threads
beside the driver, whose GIL they shared while it timed its POSTs. Aims (issue 3): p95 < 100 ms with 50 viewers on
a 2-core machine; first page < 150 KB.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import re
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playground.deploy import procs  # noqa: E402
from tools.bench.viewers import ViewerProcess  # noqa: E402

# the tag a frame ends with, naming the version it brings the page to (playground/web/broadcast.py's version_tag)
VERSION = r'id="state-version" data-version="(\d+)"'

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
    "--disable-backgrounding-occluded-windows",
]

# Runs in every viewer page: timestamps (epoch ms, sub-millisecond) of the moment each version's fragments are in
# the DOM (htmx swaps the version tag last, after the panels of the same message). Animation frames are not used:
# Chromium gives none to pages it does not paint, and 50 headless windows are not all painted.
OBSERVE = """() => {
  window.__seen = {};
  const el = () => document.getElementById('state-version');
  const note = () => {
    const v = el() && el().dataset.version;
    if (v && !(v in window.__seen)) window.__seen[v] = performance.timeOrigin + performance.now();
  };
  new MutationObserver(note).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-version']});
}"""


class Driver:
    """Sends commands the way the page's buttons do: form POSTs with Django's CSRF token."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), NoRedirect)
        self.opener.open(base + "/", timeout=20).read()
        self.token = next(c.value for c in self.jar if c.name == "csrftoken")

    def post(self, path: str, data: dict) -> tuple[int, dict]:
        req = urllib.request.Request(
            self.base + path,
            data=urllib.parse.urlencode(data).encode(),
            method="POST",
            headers={"X-CSRFToken": self.token, "Origin": self.base},
        )
        try:
            with self.opener.open(req, timeout=30) as r:
                r.read()
                return r.status, dict(r.headers)
        except urllib.error.HTTPError as e:
            body = e.read().decode(errors="replace")
            if e.code in (301, 302):
                return e.code, dict(e.headers)
            raise RuntimeError(f"POST {path} -> {e.code}: {body}") from None


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def first_page_bytes(browser, url: str) -> dict:
    """Bytes transferred (headers included, nothing cached) to show a session page and open its websocket."""
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = ctx.new_page()
    page.goto(url, wait_until="load")
    page.wait_for_selector("#ws-status[data-state=open]", timeout=20000)
    sizes = page.evaluate("""() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const res = performance.getEntriesByType('resource');
      return {document: nav.transferSize, resources: res.map(r => [r.name.replace(location.origin, ''), r.transferSize])};
    }""")
    ctx.close()
    total = sizes["document"] + sum(n for _, n in sizes["resources"])
    return {"total_bytes": total, "document_bytes": sizes["document"], "resources": sizes["resources"]}


def run_case(
    browser, servers: list[procs.Proc], viewers: int, events: int, rate: float, in_chromium: int | None = None
) -> dict:
    """`viewers` in all; `in_chromium` of them (default: 1) are Chromium pages, the others socket viewers. The
    driver talks to the first server; viewers are spread over all of them, Chromium pages from the last."""
    in_chromium = viewers if in_chromium is None else min(in_chromium, viewers)
    server = servers[0]
    driver = Driver(server.url)
    _status, headers = driver.post("/new/", {"scenario": ""})
    sid = re.search(r"/s/([^/]+)/", headers["Location"]).group(1)
    driver.post(f"/s/{sid}/add-producer/", {"mode": "plain"})
    contexts, pages = [], []
    for i in range(in_chromium):
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        page = ctx.new_page()
        page.goto(f"{servers[-1 - i % len(servers)].url}/s/{sid}/", wait_until="load")
        contexts.append(ctx)
        pages.append(page)
    for page in pages:
        page.wait_for_selector("#ws-status[data-state=open]", timeout=60000)
        page.evaluate(OBSERVE)
    sockets = (
        ViewerProcess([s.url for s in servers], sid, viewers - in_chromium, VERSION) if viewers > in_chromium else None
    )
    time.sleep(1.0)
    sent: dict[str, float] = {}
    posts: list[float] = []
    gap = 1.0 / rate
    start_version = int(pages[0].locator("#state-version").get_attribute("data-version"))
    for i in range(events):
        t0 = time.time() * 1000.0
        driver.post(f"/s/{sid}/produce/", {"actor": "A", "topic": "orders", "partition": str(i % 3), "value": f"e-{i}"})
        posts.append(time.time() * 1000.0 - t0)
        sent[str(start_version + i + 1)] = t0
        time.sleep(max(0.0, gap - (time.time() * 1000.0 - t0) / 1000.0))
    last = str(start_version + events)
    deadline = time.monotonic() + 60
    late = 0
    for page in pages:
        try:
            page.wait_for_function(
                f"() => window.__seen && ('{last}' in window.__seen)",
                timeout=max(1000, (deadline - time.monotonic()) * 1000),
            )
        except Exception:
            late += 1
    latencies, transport = [], []
    missing = 0
    for page in pages:
        seen = page.evaluate("() => window.__seen")
        for version, t0 in sent.items():
            if version in seen:
                latencies.append(seen[version] - t0)
            else:
                missing += 1  # a later version arrived first (fine: it carries the same panels)
    time.sleep(0.5)
    for seen_by_socket in sockets.stop() if sockets else []:
        for version, t0 in sent.items():
            if version in seen_by_socket:
                transport.append(seen_by_socket[version] - t0)
            else:
                missing += 1
    for ctx in contexts:
        ctx.close()
    return {
        "viewers": viewers,
        "viewers_in_chromium": in_chromium,
        "daphne_processes": len(servers),
        "socket_latency_ms_p50": round(percentile(transport, 0.50), 1) if transport else None,
        "socket_latency_ms_p95": round(percentile(transport, 0.95), 1) if transport else None,
        "events": events,
        "rate_per_s": rate,
        "samples": len(latencies),
        "viewers_not_caught_up_after_60s": late,
        "coalesced": missing,
        "latency_ms_p50": round(percentile(latencies, 0.50), 1),
        "latency_ms_p95": round(percentile(latencies, 0.95), 1),
        "latency_ms_max": round(max(latencies), 1) if latencies else None,
        "latency_ms_mean": round(statistics.fmean(latencies), 1) if latencies else None,
        "post_ms_p50": round(percentile(posts, 0.50), 1),
        "post_ms_p95": round(percentile(posts, 0.95), 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--viewers", default="1,50", help="comma-separated viewer counts (default 1,50)")
    ap.add_argument("--events", type=int, default=40)
    ap.add_argument(
        "--rate", type=float, default=2.0, help='events per second (default 2: a trainer clicking, or "run")'
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument(
        "--processes",
        type=int,
        default=2,
        help="Daphne processes sharing Redis and the database (default 2, viewers spread over them as a "
        "load balancer would; the driver talks to the first, the Chromium page to the last)",
    )
    ap.add_argument(
        "--chromium-viewers",
        type=int,
        default=1,
        help="how many of the viewers are Chromium pages (default 1: the others are websocket viewers, "
        "as remote browsers are to the server); 0 = all of them",
    )
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    results: dict = {"cases": []}
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        work = Path(tmp)
        redis = procs.start_redis(work / "redis")
        env = procs.django_env(work / "bench.sqlite3", redis.extra["url"], DJANGO_DEBUG="0")
        procs.migrate(env)
        servers = [procs.start_daphne(env, work) for _ in range(max(1, args.processes))]
        server = servers[0]
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    driver = Driver(server.url)
                    _status, headers = driver.post("/new/", {"scenario": "zombie-fencing"})
                    results["first_page"] = first_page_bytes(browser, server.url + headers["Location"])
                    for n in [int(v) for v in args.viewers.split(",") if v.strip()]:
                        results["cases"].append(
                            run_case(browser, servers, n, args.events, args.rate, args.chromium_viewers or None)
                        )
                finally:
                    browser.close()
        finally:
            for s in servers:
                s.stop()
            redis.stop()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        fp = results["first_page"]
        print(
            f"first page (scenario session, nothing cached): {fp['total_bytes'] / 1024:.1f} KB transferred "
            f"({fp['document_bytes'] / 1024:.1f} KB document)"
        )
        for c in results["cases"]:
            print(
                f"event-to-screen, {c['viewers']:>3} viewer(s) over Redis ({c['viewers_in_chromium']} in Chromium, "
                f"{c['daphne_processes']} Daphne process(es)), "
                f"{c['events']} events at {c['rate_per_s']}/s: p50 {c['latency_ms_p50']} ms, p95 {c['latency_ms_p95']} ms, "
                f"max {c['latency_ms_max']} ms ({c['samples']} samples; the POST itself: p50 {c['post_ms_p50']} ms)"
            )
            if c["socket_latency_ms_p50"] is not None:
                print(
                    f"    the other {c['viewers'] - c['viewers_in_chromium']} viewers (websockets): frame received "
                    f"p50 {c['socket_latency_ms_p50']} ms, p95 {c['socket_latency_ms_p95']} ms"
                )
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    if load and not args.json:
        print(f"(load average during the run: {' '.join(load)} on {__import__('os').cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
