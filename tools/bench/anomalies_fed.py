"""What the session's anomaly checker costs per command as a session grows (issue 17): the checker is fed each
command as a session feeds it (session/history.py: the log entries past the offsets it read, then the step) and
asked for its findings, as the anomaly panel does after every command.

    .venv/bin/python tools/bench/anomalies_fed.py [--commands 10000] [--samples 60] [--panel] [--json]

The workload is tools/bench/sharing.py's CYCLE on the simulator: begin / produce v0-v2 to orders partitions 0-2 /
commit / a read_committed poll, over and over. Only the checker's CPU (time.process_time) is counted, not the
simulator's: the mean per command over `samples` commands from 10, 1,000 and 10,000, and the ratio of 10,000 to 10.
--panel: the same session as a free-play session (session/live.py) and what building the anomalies panel costs
(web/apppanels.anomalies: the session's checker caught up with its log, and the findings it lists).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, ClusterSpec, Step, TopicSpec  # noqa: E402
from playground.scenario.anomalies import Checker, HistoryStep, reads  # noqa: E402
from playground.sim.driver import SimBackend  # noqa: E402

CYCLE = (
    [("A", "begin_transaction", {})]
    + [("A", "produce", {"topic": "orders", "partition": p, "value": f"v{p}"}) for p in range(3)]
    + [("A", "commit_transaction", {}), ("rc", "poll", {})]
)
LEVELS = (10, 1_000, 10_000)


def run(total: int, samples: int) -> dict[str, float]:
    actors = {
        "A": ActorSpec("A", PRODUCER, {"transactional.id": "t"}),
        "rc": ActorSpec("rc", CONSUMER, {"isolation.level": "read_committed", "group.id": "g"}, ("orders",)),
    }
    backend = SimBackend(ClusterSpec(topics=(TopicSpec("orders", 3),)), actors, keep_events=False)
    checker = Checker({"rc": "read_committed"})
    plan = [("A", "init_transactions", {})]
    measured = {level: 0.0 for level in LEVELS if level <= total}
    n = 0
    while n < total + samples:
        actor, action, args = plan.pop() if plan else CYCLE[(n - 1) % len(CYCLE)]
        step = Step(actor, action, dict(args))
        outcome = backend.apply(step)
        s: HistoryStep = {"n": n, "actor": actor, "action": action, "args": dict(args), "outcome": outcome}
        s.update(reads(backend, step))  # type: ignore[typeddict-item]
        entries = backend.log_entries(checker.next_offset)
        t0 = time.process_time()
        for tp, log in entries.items():
            checker.add_log(tp, log)
        checker.add_step(s)
        checker.findings()
        spent = time.process_time() - t0
        n += 1
        for level in measured:
            if level <= n < level + samples:
                measured[level] += spent
    return {str(level): round(cpu * 1000 / samples, 3) for level, cpu in measured.items()}


def run_panel(total: int, samples: int) -> dict[str, float]:
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings")
    django.setup()
    from playground.session.backends import build
    from playground.session.live import Live, actor_to_entry, free_play_actors, free_play_cluster, run_entry
    from playground.web.apppanels import anomalies

    cluster, actors = free_play_cluster(), free_play_actors()
    live = Live("bench", "sim", 0, None, cluster, dict(actors), build("sim", cluster, actors, 0))
    for entry in (
        {"add": actor_to_entry(ActorSpec("A", PRODUCER, {"transactional.id": "t"}))},
        {"step": Step("A", "init_transactions", {}).to_dict()},
    ):
        live.record(run_entry(live, entry))
    measured = {level: 0.0 for level in LEVELS if level <= total}
    n = 2  # commands so far
    while n < total + samples:
        actor, action, args = CYCLE[(n - 2) % len(CYCLE)]
        live.record(run_entry(live, {"step": Step(actor, action, dict(args)).to_dict()}))
        n += 1
        view = live.backend.view(1)
        t0 = time.process_time()
        anomalies(live, view)
        spent = time.process_time() - t0
        for level in measured:
            if level <= n < level + samples:
                measured[level] += spent
    return {str(level): round(cpu * 1000 / samples, 3) for level, cpu in measured.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--panel", action="store_true", help="the anomalies panel of a free-play session")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = (run_panel if args.panel else run)(args.commands, args.samples)
    what = "the anomalies panel's" if args.panel else "checker"
    top = str(max(int(k) for k in out))
    ratio = round(out[top] / out["10"], 2) if out["10"] else None
    if args.json:
        print(json.dumps({"cpu_ms_per_command": out, "ratio": ratio, "panel": args.panel}, indent=2))
        return 0
    for level, ms in out.items():
        print(f"  at {int(level):>6,} commands: {ms:.3f} ms of {what} CPU per command")
    print(f"  {top} / 10: {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
