"""The simulator's behaviour, pinned: every run's full event stream, observation and view, written to a directory, so
that a refactoring of playground/sim can be shown to change nothing, byte for byte.

    .venv/bin/python tools/sim_golden.py write DIR     # the dump of this checkout
    .venv/bin/python tools/sim_golden.py check DIR     # the dump again, compared file by file with DIR

Runs:
- every scenario in scenarios/ under each profile (Kafka 3.5 / 3.9 / 4 x librdkafka / kafka-clients 3.5, 3.9, 4.4), as
  playground/scenario/run.py runs them (the scenario's seed, its database beside the backend when it has one);
- seeded random walks (the command mix of tests/sim/test_sim_properties.py: two producers sharing a transactional
  id, one with its own, a plain one, consumers of both isolation levels and a group consumer, send_offsets, clock
  advances, broker stops and starts) under each profile and two cluster configurations (Kafka's defaults, and one
  with instant coordinator loads, slow markers and short timeouts), so that paths no library scenario takes are
  pinned too.

Each run is one file: every event's repr (seq and time_ms included) in order, then each step's outcome, the
observation (scenario runs: run_scenario's, expectations included; walks: observe()) and the view at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playground.engine.backend import BackendError  # noqa: E402
from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, ClusterSpec, Profile, Step, TopicSpec  # noqa: E402
from playground.engine.spec import PROFILES as ALL_PROFILES  # noqa: E402
from playground.scenario import load_scenario, run_scenario  # noqa: E402
from playground.sim.driver import SimBackend  # noqa: E402

# every profile: the four of issue 9 first (their files' names are what they were), then those of issue 20
CLASSIC = (Profile("3.9", "librdkafka"), Profile("3.9", "java"), Profile("4", "librdkafka"), Profile("4", "java"))
PROFILES = CLASSIC + tuple(p for p in ALL_PROFILES if p not in CLASSIC)
WALKS = 10
WALK_STEPS = 100
WALK_CONFIGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "fast": {
        "sim.coordinator.load.ms": 0,
        "sim.marker.retry.backoff.ms": 7,
        "sim.broker.2.latency.ms": 3,
        "sim.broker.3.replication.latency.ms": 4,
        "transaction.timeout.ms": 15_000,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1_000,
        "transactional.id.expiration.ms": 60_000,
        "transaction.remove.expired.transaction.cleanup.interval.ms": 5_000,
        "session.timeout.ms": 10_000,
        "transaction.state.log.num.partitions": 5,
        "offsets.topic.num.partitions": 3,
    },
}
WALK_ACTORS = {
    "A": ActorSpec("A", PRODUCER, {"transactional.id": "shared"}),
    "B": ActorSpec("B", PRODUCER, {"transactional.id": "shared"}),
    "C": ActorSpec("C", PRODUCER, {"transactional.id": "own", "transaction.timeout.ms": 20000}),
    "P": ActorSpec("P", PRODUCER, {}),
    "rc": ActorSpec("rc", CONSUMER, {"isolation.level": "read_committed"}, ("orders", "audit")),
    "ru": ActorSpec("ru", CONSUMER, {"isolation.level": "read_uncommitted"}, ("orders", "audit")),
    "g": ActorSpec("g", CONSUMER, {"group.id": "grp", "isolation.level": "read_committed"}, ("orders",)),
}
SENSIBLE: dict[str, Any] = {
    "INIT": "init_transactions",
    "WAIT_PID": "init_transactions",
    "READY": "begin_transaction",
    "ABORTABLE_ERROR": "abort_transaction",
    "FATAL_ERROR": "restart",
    "IN_TRANSACTION": ["produce"] * 12
    + ["commit_transaction"] * 4
    + ["abort_transaction"] * 3
    + ["send_offsets_to_transaction"],
    "UNINITIALIZED": "init_transactions",
    "INITIALIZING": "init_transactions",
    "COMMITTING_TRANSACTION": "commit_transaction",
    "ABORTING_TRANSACTION": "abort_transaction",
}
ANY_PRODUCER_ACTION = [
    "init_transactions",
    "begin_transaction",
    "produce",
    "produce",
    "produce",
    "commit_transaction",
    "abort_transaction",
    "flush",
    "send_offsets_to_transaction",
    "crash",
    "restart",
    "close",
]


def _key(profile: Profile) -> str:
    return profile.key


def _dump(events: list[Any], outcomes: list[str], observation: Any, view: Any) -> str:
    lines = [repr(e) for e in events]
    lines.append("== outcomes")
    lines.extend(outcomes)
    lines.append("== observation")
    lines.append(json.dumps(observation, indent=1, default=repr))
    lines.append("== view")
    lines.append(json.dumps(view, indent=1, default=repr))
    return "\n".join(lines) + "\n"


def _collect(outcomes: list[str]) -> Any:
    return lambda step, outcome: outcomes.append(outcome)


def scenario_runs() -> Iterator[tuple[str, str]]:
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        scenario = load_scenario(path)
        for profile in PROFILES:
            backend = SimBackend(scenario.cluster, scenario.actors, seed=scenario.seed, profile=profile)
            captured: dict[str, Any] = {}
            close = backend.close

            def close_after_view(
                backend: SimBackend = backend, close: Any = close, captured: dict[str, Any] = captured
            ) -> None:
                captured["view"] = backend.view()
                close()

            backend.close = close_after_view  # type: ignore[method-assign]
            outcomes: list[str] = []
            observation = run_scenario(scenario, backend=backend, profile=profile, on_step=_collect(outcomes))
            yield (
                f"scenario-{path.stem}-{_key(profile)}",
                _dump(backend.events, outcomes, observation, captured["view"]),
            )


def _walk_step(rng: random.Random, backend: SimBackend) -> Step | None:
    kind = rng.choice(["producer"] * 10 + ["consumer"] * 5 + ["advance"] * 2 + ["broker"] * 2)
    if kind == "producer":
        actor = rng.choice(["A", "B", "C", "P"])
        client = backend.producers[actor].client
        action = rng.choice(ANY_PRODUCER_ACTION)
        sensible = rng.random() < 0.75
        if client is None or not client.alive:
            action = "restart"
        elif actor == "P":
            action = "produce" if sensible else rng.choice(["produce", "flush", "crash", "close"])
        elif sensible:
            choice = SENSIBLE.get(client.state, action)
            action = rng.choice(choice) if isinstance(choice, list) else choice
        if action == "produce":
            partition = rng.randrange(4)
            topic, part = ("audit", 0) if partition == 3 else ("orders", partition)
            args: dict[str, Any] = {
                "topic": topic,
                "partition": part,
                "value": f"{actor}-{rng.randrange(10_000)}",
                "await": rng.random() < 0.7,
            }
        elif action == "send_offsets_to_transaction":
            args = {"consumer": "g"}
        else:
            args = {}
        return Step(actor, action, args)
    if kind == "consumer":
        actor = rng.choice(["rc", "ru", "g", "g"])
        action = rng.choice(["poll"] * 4 + ["commit", "crash", "seek_to_committed"])
        client = backend.consumers[actor].client
        if client is None or not client.alive:
            action = "restart"
        if actor != "g" and action == "commit":
            action = "poll"
        return Step(actor, action)
    if kind == "advance":
        return Step("clock", "advance", {"ms": rng.choice([1, 10, 600, 5_000, 21_000, 46_000, 75_000])})
    broker = 1 + rng.randrange(3)
    up = backend.cluster.brokers[broker].up
    if up and sum(s.up for s in backend.cluster.brokers.values()) == 1:
        return None
    return Step("broker", "stop" if up else "start", {"broker": broker})


def walk_runs() -> Iterator[tuple[str, str]]:
    for config_name, config in WALK_CONFIGS.items():
        for profile in PROFILES:
            for walk in range(WALKS):
                seed = 1000 * walk + 7
                rng = random.Random(seed)
                spec = ClusterSpec(brokers=3, config=config, topics=(TopicSpec("orders", 3), TopicSpec("audit", 1)))
                backend = SimBackend(spec, WALK_ACTORS, seed=seed, profile=profile)
                outcomes: list[str] = []
                for _ in range(WALK_STEPS):
                    step = _walk_step(rng, backend)
                    if step is None:
                        continue
                    try:
                        outcomes.append(f"{step.label} {dict(step.args)} -> {backend.apply(step)}")
                    except BackendError as e:
                        outcomes.append(f"{step.label} {dict(step.args)} -> BackendError {e}")
                observation = backend.observe()
                view = backend.view()
                yield f"walk-{config_name}-{_key(profile)}-{walk}", _dump(backend.events, outcomes, observation, view)


def write(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    count = 0
    for runs in (scenario_runs(), walk_runs()):
        for name, text in runs:
            (directory / f"{name}.txt").write_text(text)
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("write", "check"))
    parser.add_argument("directory", type=Path)
    args = parser.parse_args()
    if args.mode == "write":
        count = write(args.directory)
        print(f"{count} runs written to {args.directory}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        count = write(Path(tmp))
        golden = {p.name for p in args.directory.glob("*.txt")}
        fresh = {p.name for p in Path(tmp).glob("*.txt")}
        differ = sorted(n for n in golden & fresh if (args.directory / n).read_bytes() != (Path(tmp) / n).read_bytes())
        missing, extra = sorted(golden - fresh), sorted(fresh - golden)
        scenarios = sum(1 for n in golden & fresh if n.startswith("scenario-"))
        print(f"{count} runs compared ({scenarios} scenario runs, {count - scenarios} walks): {len(differ)} differ")
        for n in differ + [f"missing: {n}" for n in missing] + [f"new: {n}" for n in extra]:
            print(f"  {n}")
        if differ or missing or extra:
            sys.exit(1)


if __name__ == "__main__":
    main()
