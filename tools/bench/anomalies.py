"""What the anomaly checker costs as a session grows: the dashboard runs it on every update up to
panels.ANOMALIES_LIVE_MAX commands (2,000), so its time at 2,000 is what each command pays at most.

    .venv/bin/python tools/bench/anomalies.py [--json]

The workload is a free-play one that keeps every rule busy: two producers sharing a transactional.id (fencing:
lost writes), a plain producer, commits and aborts, read_committed and read_uncommitted consumers polling and one
seeking back (duplicates). Each size is measured on its own history: the backend's view of the whole log, then
check(); p50 of 7 runs each.

Then a declared pipeline (`pipeline: {from: orders, to: payments}`) fed one transaction at a time as a session feeds
its checker (a consume-transform-produce round: poll, begin, produce, send the offsets, commit, the marker), with
findings() after each: the time of the last round and the p99 of all, at 1,000 and 10,000 transactions (its rules are
judged per key: a round costs the same at the first and the ten-thousandth).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, ClusterSpec, Step, TopicSpec  # noqa: E402
from playground.scenario.anomalies import Checker, History, check, reads  # noqa: E402
from playground.scenario.model import Pipeline  # noqa: E402
from playground.sim.driver import SimBackend  # noqa: E402

SIZES = (500, 1000, 2000, 10_000)
HISTORY_LOG_LIMIT = 100_000  # as playground/session/history.py reads a session's whole log
ROUND = [
    ("A", "begin_transaction", {}),
    ("A", "produce", {"topic": "orders", "partition": 0}),
    ("A", "produce", {"topic": "orders", "partition": 1}),
    ("A", "commit_transaction", {}),
    ("plain", "produce", {"topic": "orders", "partition": 0}),
    ("rc", "poll", {}),
    ("ru", "poll", {}),
    ("A", "begin_transaction", {}),
    ("A", "produce", {"topic": "orders", "partition": 1}),
    ("A", "abort_transaction", {}),
    ("rc", "poll", {}),
    ("rc", "seek_to_committed", {}),
    ("rc", "poll", {}),
    ("rc", "commit", {}),
]


def history(n: int) -> tuple[History, float]:
    actors = {
        "A": ActorSpec("A", PRODUCER, {"transactional.id": "shared"}),
        "B": ActorSpec("B", PRODUCER, {"transactional.id": "shared"}),
        "plain": ActorSpec("plain", PRODUCER, {}),
        "rc": ActorSpec("rc", CONSUMER, {"isolation.level": "read_committed", "group.id": "g"}, ("orders",)),
        "ru": ActorSpec("ru", CONSUMER, {"isolation.level": "read_uncommitted"}, ("orders",)),
    }
    backend = SimBackend(ClusterSpec(topics=(TopicSpec("orders", 2),)), actors, keep_events=False)
    steps = []
    for i in range(n):
        if i == 0:
            plan = [("A", "init_transactions", {})]
        elif i % 200 == 0:  # a second instance starts with the same id: the first is fenced mid-transaction, restarts
            plan = [
                ("A", "begin_transaction", {}),
                ("A", "produce", {"topic": "orders", "partition": 0}),
                ("B", "init_transactions", {}),
                ("B", "begin_transaction", {}),
                ("B", "produce", {"topic": "orders", "partition": 0}),
                ("B", "commit_transaction", {}),
                ("A", "commit_transaction", {}),
                ("A", "restart", {}),
                ("A", "init_transactions", {}),
            ]
        else:
            plan = [ROUND[i % len(ROUND)]]
        for actor, action, args in plan:
            args = dict(args)
            if action == "produce":
                args["value"] = f"{actor}-{i}"
            step = Step(actor, action, args)
            outcome = backend.apply(step)
            steps.append(
                {
                    "n": len(steps),
                    "actor": actor,
                    "action": action,
                    "args": args,
                    "outcome": outcome,
                    **reads(backend, step),
                }
            )
    t0 = time.perf_counter()
    view = backend.view(HISTORY_LOG_LIMIT)
    view_ms = (time.perf_counter() - t0) * 1000
    logs = {tp: p.get("log", []) for tp, p in view["partitions"].items()}
    return History(steps, logs, {"rc": "read_committed", "ru": "read_uncommitted"}), view_ms


PIPELINE_SIZES = (1000, 10_000)


def pipeline_rounds(n: int) -> dict[str, float]:
    """A checker with a declared pipeline fed `n` consume-transform-produce transactions, findings() after each."""
    checker = Checker({"in": "read_committed"}, pipelines=(Pipeline("orders", "payments", "key"),))
    times, step = [], 0
    for i in range(n):
        t0 = time.perf_counter()
        order = {"offset": i, "key": f"k{i}", "value": f"o{i}", "producer_id": 9, "transactional": False}
        checker.add_log("orders-0", [order])
        for actor, action, args, extra in (
            ("in", "poll", {}, {"read": [["orders-0", i]]}),
            ("out", "begin_transaction", {}, {}),
            ("out", "produce", {"topic": "payments", "value": f"p{i}"}, {}),
            ("out", "send_offsets_to_transaction", {"consumer": "in"}, {}),
            ("out", "commit_transaction", {}, {}),
        ):
            checker.add_step({"n": step, "actor": actor, "action": action, "args": args, "outcome": "ok", **extra})
            step += 1
        payment = {"offset": 2 * i, "key": f"k{i}", "value": f"p{i}", "producer_id": 1, "transactional": True}
        checker.add_log("payments-0", [payment, {"offset": 2 * i + 1, "control": "COMMIT", "producer_id": 1}])
        checker.findings()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"transactions": n, "max_ms": round(times[-1], 3), "p99_ms": round(times[int(0.99 * (n - 1))], 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = []
    for n in SIZES:
        h, view_ms = history(n)
        times, found = [], []
        for _ in range(7):
            t0 = time.perf_counter()
            found = check(h)
            times.append((time.perf_counter() - t0) * 1000)
        records = sum(len(log) for log in h.logs.values())
        out.append(
            {
                "commands": len(h.steps),
                "records": records,
                "findings": len(found),
                "view_ms": round(view_ms, 1),
                "check_ms_p50": round(statistics.median(times), 1),
            }
        )
    piped = [pipeline_rounds(n) for n in PIPELINE_SIZES]
    if args.json:
        print(json.dumps({"histories": out, "pipeline": piped}, indent=2))
        return 0
    for r in out:
        print(
            f"  {r['commands']:>6,} commands, {r['records']:>6,} records, {r['findings']:>4} findings: "
            f"check p50 {r['check_ms_p50']:.1f} ms, the whole log's view {r['view_ms']:.1f} ms"
        )
    print("  (the dashboard runs the checker on every update up to 2,000 commands)")
    for r in piped:
        print(
            f"  a declared pipeline, {r['transactions']:>6,} transactions fed one at a time: a round p99 "
            f"{r['p99_ms']:.3f} ms, the slowest {r['max_ms']:.3f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
