"""Figures for sessions as rows, scrubbing and the editor (issue 7).

    .venv/bin/python tools/bench/sharing.py [--commands 10000] [--samples 60] [--json]

Starts one Daphne (loopback, a throw-away SQLite file, the in-memory channel layer) and drives a free-play session
on the simulator over HTTP as a new user would (begin / produce x3 / commit / poll, over and over), with one
websocket viewer watching. It prints:
- the command round trip (HTTP POST to its 204) at 10, 1,000 and 10,000 commands in the session, and the ratio of
  10,000 to 10 (aim <= 1.3);
- scrubbing to a random step at 10,000 commands: from the viewer's {"type": "at"} to the frame of that step
  (p50 / p95; aim p95 <= 50 ms);
- the editor's validation of a 300-line file: POST /editor/check/ to its JSON (p95; aim <= 100 ms);
- in this process, the simulator's checkpoints for the same session: how big, and what freezing and thawing one
  costs (the memory scrubbing and going back use).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playground.deploy import procs  # noqa: E402
from tests.wsviewer import ClientConnection, open_viewer  # noqa: E402
from tools.bench.web import Driver, percentile  # noqa: E402

CYCLE = (
    [("action", {"actor": "A", "action": "begin_transaction"})]
    + [("produce", {"actor": "A", "topic": "orders", "partition": str(p), "value": f"v{p}"}) for p in range(3)]
    + [("action", {"actor": "A", "action": "commit_transaction"}), ("action", {"actor": "rc", "action": "poll"})]
)
LEVELS = (10, 1_000, 10_000)


def _stats(values: list[float]) -> dict:
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 0.5), 2),
        "p95_ms": round(percentile(values, 0.95), 2),
        "mean_ms": round(statistics.fmean(values), 2),
    }


def _drain(ws: ClientConnection) -> None:
    """Read what the server pushed so far (the viewer keeps up, as a browser does)."""
    try:
        while True:
            ws.recv(timeout=0)  # a frame already received, else TimeoutError
    except TimeoutError:
        pass


def cpu_ms(pid: int) -> float:
    """The process's CPU time so far (user + system), in ms, from /proc (clock ticks)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def round_trips(server: procs.Proc, total: int, samples: int) -> tuple[str, dict, dict]:
    driver = Driver(server.url)
    _status, headers = driver.post("/new/", {"scenario": ""})
    sid = re.search(r"/s/([^/]+)/", headers["Location"]).group(1)
    driver.post(f"/s/{sid}/add-producer/", {"mode": "new"})
    driver.post(f"/s/{sid}/action/", {"actor": "A", "action": "init_transactions"})
    viewer = open_viewer(server.url, sid, timeout=60)
    viewer.recv(timeout=60)
    n, i = 2, 0
    measured: dict[int, list[float]] = {level: [] for level in LEVELS if level <= total}
    cpu: dict[int, float] = {}
    started = time.monotonic()
    while n < total + samples:
        name, data = CYCLE[i % len(CYCLE)]
        i += 1
        t0 = time.perf_counter()
        driver.post(f"/s/{sid}/{name}/", data)
        elapsed = (time.perf_counter() - t0) * 1000
        n += 1
        for level in measured:
            if n == level:
                cpu[level] = -cpu_ms(server.proc.pid)
            if level <= n < level + samples:
                measured[level].append(elapsed)
            if n == level + samples - 1:
                cpu[level] += cpu_ms(server.proc.pid)
        if n % 50 == 0:
            _drain(viewer)
        if n % 2000 == 0:
            print(f"  ... {n} commands ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    viewer.close()
    stats = {
        str(level): {**_stats(values), "server_cpu_ms": round(cpu[level] / (samples - 1), 2)}
        for level, values in measured.items()
    }
    top = str(max(measured))
    ratio = {
        "p50": round(stats[top]["p50_ms"] / stats["10"]["p50_ms"], 2),
        "mean": round(stats[top]["mean_ms"] / stats["10"]["mean_ms"], 2),
    }
    return sid, stats, ratio


def scrubs(server: procs.Proc, sid: str, length: int, samples: int) -> dict:
    viewer = open_viewer(server.url, sid, timeout=60)
    viewer.recv(timeout=60)
    rng = random.Random(7)
    times = []
    for _ in range(samples):
        k = rng.randrange(0, length)
        t0 = time.perf_counter()
        viewer.send(json.dumps({"type": "at", "step": k}))
        while True:
            frame = viewer.recv(timeout=60)
            if f'id="ws-moment" hx-swap-oob="true" data-at="{k}"' in frame:
                break
        times.append((time.perf_counter() - t0) * 1000)
    viewer.close()
    return _stats(times)


def checks(server: procs.Proc, samples: int) -> dict:
    text = three_hundred_lines()
    driver = Driver(server.url)
    times = []
    for i in range(samples):
        body = text.replace("value: extra-0}", f"value: extra-0-{i}}}")  # a keystroke: never the same text twice
        t0 = time.perf_counter()
        status, _headers = driver.post("/editor/check/", {"text": body})
        times.append((time.perf_counter() - t0) * 1000)
        assert status == 200
    return {"lines": text.count("\n"), **_stats(times)}


def three_hundred_lines() -> str:
    base = (ROOT / "scenarios" / "03-shared-id-incident.yaml").read_text()
    head, tail = base.split("\nexpect:", 1)
    extra, k = [], 0
    while base.count("\n") + len(extra) < 300:
        extra += [
            "  - pay.begin_transaction",
            f"  - pay.produce: {{topic: order-created, value: extra-{k}}}",
            "  - pay.abort_transaction",
        ]
        k += 1
    return head + "\n" + "\n".join(extra) + "\nexpect:" + tail


def checkpoints(total: int) -> dict:
    """The same session's simulator, frozen every 100 commands as the live cache does."""
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings")
    import django

    django.setup()
    from playground.engine.spec import PRODUCER, ActorSpec, Step
    from playground.session.cache import CHECKPOINT_EVERY, freeze, thaw
    from playground.session.live import free_play_actors, free_play_cluster
    from playground.sim.driver import SimBackend

    actors = free_play_actors()
    actors["A"] = ActorSpec("A", PRODUCER, {"transactional.id": "txn-1", "enable.idempotence": True})
    backend = SimBackend(free_play_cluster(), actors, keep_events=False)  # as a live session's (session/backends.py)
    backend.apply(Step("A", "init_transactions"))
    steps = [Step("A", "begin_transaction")] + [
        Step("A", "produce", {"topic": "orders", "partition": p, "value": f"v{p}"}) for p in range(3)
    ]
    steps += [Step("A", "commit_transaction"), Step("rc", "poll")]
    sizes, freezes, thaws, applies = [], [], [], []
    for n in range(1, total):
        t0 = time.perf_counter()
        backend.apply(steps[(n - 1) % len(steps)])
        applies.append((time.perf_counter() - t0) * 1000)
        if (n + 1) % CHECKPOINT_EVERY == 0:
            t0 = time.perf_counter()
            data = freeze(backend)
            freezes.append((time.perf_counter() - t0) * 1000)
            sizes.append(len(data))
            if len(sizes) % 10 == 0:
                t0 = time.perf_counter()
                thaw(data)
                thaws.append((time.perf_counter() - t0) * 1000)
    if sizes and not thaws:  # fewer than 10 checkpoints (--commands under 1,000): thaw the last one
        t0 = time.perf_counter()
        thaw(data)
        thaws.append((time.perf_counter() - t0) * 1000)
    return {
        "commands": total,
        "checkpoints": len(sizes),
        "total_mib": round(sum(sizes) / 2**20, 2),
        "last_kib": round(sizes[-1] / 1024, 1),
        "freeze_last_ms": round(freezes[-1], 1),
        "freeze_mean_ms": round(statistics.fmean(freezes), 1),
        "thaw_last_ms": round(thaws[-1], 1),
        "replay_per_command_ms": round(statistics.fmean(applies), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sharing-") as tmp:
        env = procs.django_env(Path(tmp) / "bench.sqlite3")
        procs.migrate(env)
        server = procs.start_daphne(env, Path(tmp))
        try:
            sid, trips, ratio = round_trips(server, args.commands, args.samples)
            scrub = scrubs(server, sid, args.commands, args.samples)
            check = checks(server, max(args.samples, 100))
        finally:
            server.stop()
    frozen = checkpoints(args.commands)
    result = {
        "round_trip": trips,
        "ratio_top_vs_10": ratio,
        "scrub": scrub,
        "editor_check": check,
        "checkpoints": frozen,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print("command round trip (POST -> 204, simulator, one viewer):")
    for level, s in trips.items():
        print(
            f"  at {int(level):>6,} commands: p50 {s['p50_ms']:.2f} ms  p95 {s['p95_ms']:.2f} ms  mean {s['mean_ms']:.2f} ms  "
            f"server CPU {s['server_cpu_ms']:.2f} ms per command (aim <= 10)  (n={s['n']})"
        )
    print(f"  ratio {max(trips, key=int)} vs 10: p50 {ratio['p50']}x, mean {ratio['mean']}x  (aim <= 1.3)")
    print(
        f"scrub to a random step at {args.commands:,} commands: p50 {scrub['p50_ms']:.1f} ms  p95 {scrub['p95_ms']:.1f} ms  (aim p95 <= 50 ms)"
    )
    print(
        f"editor check, {check['lines']}-line file: p50 {check['p50_ms']:.1f} ms  p95 {check['p95_ms']:.1f} ms  (aim p95 <= 100 ms)"
    )
    print(
        f"checkpoints of a {frozen['commands']:,}-command session: {frozen['checkpoints']} x, {frozen['total_mib']} MiB in all "
        f"(last {frozen['last_kib']} KiB); freeze last {frozen['freeze_last_ms']} ms (mean {frozen['freeze_mean_ms']}), "
        f"thaw last {frozen['thaw_last_ms']} ms; replay {frozen['replay_per_command_ms']} ms per command"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
