"""Running a scenario on a backend and building the contract's observation (`scenario run --json`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from playground.engine.backend import OK, Backend, ProfileError
from playground.engine.spec import DEFAULT_PROFILE, PRODUCER, Profile, Step
from playground.scenario.anomalies import HistoryStep, reads
from playground.scenario.engines import make_backend
from playground.scenario.model import FORMAT, Scenario, outcome_matches, profile_problems

# --------------------------------------------------------------------------------------------------------------
# Running


def run_scenario(
    scenario: Scenario,
    backend: str | Backend = "sim",
    seed: int | None = None,
    on_step: Callable[[Step, str], None] | None = None,
    on_event: Callable[[Any], None] | None = None,
    record: list[HistoryStep] | None = None,
    profile: Profile | None = None,
) -> dict[str, Any]:
    """Apply every step on a fresh backend, then observe and check: the contract's `--json` observation.

    `backend` is "sim" or "kafka" (or an already built Backend, which is closed afterwards all the same), built
    for `profile` (default: the scenario's own); steps' outcomes and the `expect:` block are checked as stated for
    that profile (Scenario.for_profile).
    `on_step(step, outcome)` is called after each step, notes included. `record`, when given, receives each
    step with its outcome and what a poll returned (the anomaly checker's history; not part of the observation).
    """
    seed = scenario.seed if seed is None else seed
    if profile is not None:  # outcomes stated per profile are checked as this profile states them
        scenario = scenario.for_profile(profile)
    if record is None and scenario.expect and "anomalies" in scenario.expect:
        record = []  # the anomalies it expects are checked over this run's history
    if isinstance(backend, str):
        problems = profile_problems(scenario.cluster, scenario.actors, scenario.profile)
        if problems:  # what the release or the client refuses of the scenario's settings
            raise ProfileError(f"{scenario.profile.label} cannot run {scenario.id}: " + "; ".join(problems))
        backend = make_backend(
            backend, scenario.cluster, scenario.actors, seed=seed, on_event=on_event, profile=scenario.profile
        )
    if scenario.database is not None and not hasattr(backend, "db"):
        from playground.scenario.database import with_database

        backend = with_database(backend, scenario.database)
    steps, failures = [], []
    producers = sorted(name for name, a in scenario.actors.items() if a.kind == PRODUCER)
    static_members = {name for name, a in scenario.actors.items() if a.config.get("group.instance.id")}
    # steps whose outcomes are given per profile without naming this one (a profile added since the file was
    # written): not checked, and the observation says so
    unchecked = [
        f"steps[{s.index}] {s.label} (line {s.line}): no outcome stated for {scenario.profile.key}"
        for s in scenario.steps
        if s.expect is None and s.index in scenario.step_expects
    ]
    hold = getattr(backend, "hold_before_races", None)
    if callable(hold):
        hold(scenario.steps)  # the real backend's Java workers: a race the scenario decides (kafka/backend.py)
    try:
        for step in scenario.steps:
            outcome = backend.apply(step)
            if on_step is not None:
                on_step(step, outcome)
            if record is not None and not step.is_note:
                record.append(
                    {
                        "n": step.index,
                        "actor": step.actor,
                        "action": step.action,
                        "args": dict(step.args),
                        "outcome": outcome,
                        **reads(backend, step),
                    }
                )
            if step.is_note:
                continue
            entry: dict[str, Any] = {"index": step.index, "step": step.label, "outcome": outcome}
            message = backend.outcome_message() if outcome != OK else None
            if message:  # additions (issue 20): the exception's message, the producer's client state after the step
                entry["message"] = message
            state = backend.client_state(step.actor) if step.actor in producers and outcome != OK else None
            if state is not None:
                entry["state"] = state
            if step.actor in static_members and step.action == "poll" and outcome == OK:
                # an addition (issue 31): the generation a static member polled in, where a rebalance would show
                entry["generation"] = backend.group_generation(step.actor)
            steps.append(entry)
            if step.expect is not None and not any(outcome_matches(e, outcome, message) for e in step.expect):
                seen = f"{outcome} ({message})" if message and any(": " in e for e in step.expect) else outcome
                failures.append(
                    f"steps[{step.index}] {step.label} (line {step.line}): expected {' or '.join(step.expect)}, observed {seen}"
                )
        raw = backend.observe()
        states = {name: backend.client_state(name) for name in producers}
        calls = backend.callbacks()
    finally:
        backend.close()
    observation = build_observation(
        scenario.id, getattr(backend, "name", str(backend)), seed, steps, raw, profile=observed_profile(backend)
    )
    if any(v is not None for v in states.values()):  # an addition (issue 20): each producer's client state at the end
        observation["producers"] = {name: {"state": v} for name, v in states.items() if v is not None}
    if calls or any(s.args.get("callback") for s in scenario.steps):  # an addition (issue 20), when asked for
        observation["callbacks"] = calls
    if "database" in raw:  # an addition to the contract's observation, only for scenarios with a database
        observation["database"] = {"tables": raw["database"]["tables"], "reconcile": raw["database"]["reconcile"]}
    if scenario.expect and "anomalies" in scenario.expect:
        from playground.scenario.anomalies import check, history_of_run

        # which rules the history breaks (not how often: timing may change a count, never the story)
        observation["anomalies"] = sorted({f.rule for f in check(history_of_run(scenario, record or [], observation))})
    passed, block_failures = check_expectations(scenario, observation)
    observation["expect"] = {
        "passed": passed,
        "failed": len(failures) + len(block_failures),
        "failures": failures + block_failures,
    }
    if unchecked:  # an addition to the contract's observation, only when there are any
        observation["expect"]["unchecked"] = unchecked
    return observation


def observed_profile(backend: Any) -> dict[str, Any]:
    """The observation's `profile`: the backend's Kafka version (and its exact release), its client, and the
    `transaction.version` its cluster has finalized: as the real cluster reports it (`backend.transaction_version`),
    or as the simulator models it (spec.Profile.finalized_transaction_version)."""
    profile = getattr(backend, "profile", None) or DEFAULT_PROFILE
    reported = getattr(backend, "transaction_version", None)
    observed = {
        "kafka": profile.kafka,
        "release": profile.release,
        "client": profile.client,
        "transaction_version": profile.finalized_transaction_version if reported is None else reported,
    }
    if not profile.own_client:  # a Java client of another release than the cluster's (issue 20): which one
        observed["client_release"] = profile.client_version
    return observed


def build_observation(
    scenario_id: str,
    backend: str,
    seed: int,
    steps: list[dict[str, Any]],
    raw: Mapping[str, Any],
    profile: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The contract's observation from a backend's raw `observe()` (everything but `expect`), with the backend's
    profile (observed_profile) when given.

    Producer ids become P1, P2, ... in order of first appearance: partitions in (topic, partition) order, each
    log in offset order, then transactions by transactional id. A real cluster and the simulator allocate
    different numbers; the order in which producers appear is what both share. -1 (no producer id: a record
    from a non-idempotent producer) stays null.
    """
    names: dict[int, str] = {}

    def producer(pid: Any) -> str | None:
        if pid is None or pid == -1:
            return None
        if pid not in names:
            names[pid] = f"P{len(names) + 1}"
        return names[pid]

    partitions = {}
    for tp in sorted(raw.get("partitions", {}), key=_tp_order):
        part = raw["partitions"][tp]
        log = []
        for entry in part.get("log", []):
            if entry.get("control"):
                log.append(
                    {
                        "offset": entry["offset"],
                        "control": entry["control"],
                        "producer": producer(entry.get("producer_id")),
                        "epoch": entry.get("epoch"),
                    }
                )
            else:
                out = {"offset": entry["offset"]}
                if entry.get("key") is not None:
                    out["key"] = entry["key"]
                out.update(
                    value=entry.get("value"),
                    producer=producer(entry.get("producer_id")),
                    epoch=entry.get("epoch"),
                    transactional=bool(entry.get("transactional")),
                )
                log.append(out)
        partitions[tp] = {
            "log": log,
            "high_watermark": part.get("high_watermark"),
            "last_stable_offset": part.get("last_stable_offset"),
        }
    transactions = {}
    for txid in sorted(raw.get("transactions", {})):
        txn = raw["transactions"][txid]
        transactions[txid] = {
            "state": txn.get("state"),
            "producer": producer(txn.get("producer_id")),
            "epoch": txn.get("epoch"),
        }
    consumers = {
        name: {tp: list(values) for tp, values in sorted(per.items(), key=lambda kv: _tp_order(kv[0]))}
        for name, per in sorted(raw.get("consumers", {}).items())
    }
    groups = {
        group: dict(sorted(per.items(), key=lambda kv: _tp_order(kv[0])))
        for group, per in sorted(raw.get("groups", {}).items())
    }
    out = {
        "format": FORMAT,
        "scenario": scenario_id,
        "backend": backend,
        "seed": seed,
        "steps": steps,
        "partitions": partitions,
        "consumers": consumers,
        "transactions": transactions,
        "groups": groups,
    }
    if profile is not None:  # an addition to the contract's observation (docs/scenario-format.md, "Profiles")
        out["profile"] = dict(profile)
    return out


def _tp_order(tp: str) -> tuple[str, int]:
    topic, _, number = tp.rpartition("-")
    return (topic, int(number)) if number.isdigit() else (tp, -1)


@dataclass(frozen=True)
class Check:
    """One check of an `expect:` (or `goal:`) block: `key` is "consumers.rc.orders-0", "logs.orders-0", ..."""

    key: str
    wanted: Any
    seen: Any
    line: int

    @property
    def ok(self) -> bool:
        return bool(self.wanted == self.seen)

    def failure(self, section: str = "expect") -> str:
        return f"{section}.{self.key} (line {self.line}): expected {_show(self.wanted)}, observed {_show(self.seen)}"


@dataclass(frozen=True)
class CallbackCheck(Check):
    """A record's callback invocations: one outcome per invocation, in order; an expected `NAME: text` also needs
    the text in that invocation's message."""

    calls: Sequence[Mapping[str, Any]] = ()

    @property
    def ok(self) -> bool:
        return len(self.wanted) == len(self.calls) and all(
            outcome_matches(w, c["outcome"], c.get("message")) for w, c in zip(self.wanted, self.calls)
        )


def checks(expect: Mapping[str, Any] | None, lines: Mapping[str, int], observation: Mapping[str, Any]) -> list[Check]:
    """Every check of a block against an observation: one per consumer and partition, per log, per partition's
    watermarks, per transactional id, per group and partition."""
    expect = expect or {}
    out = []
    for name, per in expect.get("consumers", {}).items():
        for tp, values in per.items():
            key = f"consumers.{name}.{tp}"
            out.append(Check(key, values, observation["consumers"].get(name, {}).get(tp, []), lines.get(key, 0)))
    for tp, entries in expect.get("logs", {}).items():
        log = observation["partitions"].get(tp, {}).get("log", [])
        out.append(
            Check(
                f"logs.{tp}",
                entries,
                [e["control"] if "control" in e else e["value"] for e in log],
                lines.get(f"logs.{tp}", 0),
            )
        )
    for tp, marks in expect.get("watermarks", {}).items():
        part = observation["partitions"].get(tp, {})
        out.append(Check(f"watermarks.{tp}", marks, {k: part.get(k) for k in marks}, lines.get(f"watermarks.{tp}", 0)))
    for txid, want in expect.get("transactions", {}).items():
        txn = observation["transactions"].get(txid)
        seen: dict[str, Any] | str | None
        if want is None:  # `ID: null`: the coordinator must not know this id (extension)
            seen = {k: txn.get(k) for k in ("state", "epoch")} if txn else None
        else:
            seen = {k: txn.get(k) for k in want} if txn else "no such transactional id at the coordinator"
        out.append(Check(f"transactions.{txid}", want, seen, lines.get(f"transactions.{txid}", 0)))
    for group, per in expect.get("groups", {}).items():
        for tp, offset in per.items():
            key = f"groups.{group}.{tp}"
            out.append(Check(key, offset, observation["groups"].get(group, {}).get(tp), lines.get(key, 0)))
    if "anomalies" in expect:
        out.append(Check("anomalies", expect["anomalies"], observation.get("anomalies", []), lines.get("anomalies", 0)))
    for name, want in expect.get("producers", {}).items():
        state = observation.get("producers", {}).get(name, {}).get("state")
        out.append(Check(f"producers.{name}", want, {"state": state}, lines.get(f"producers.{name}", 0)))
    for name, per in expect.get("callbacks", {}).items():
        for value, wanted in per.items():
            key = f"callbacks.{name}.{value}"
            calls = [c for c in observation.get("callbacks", []) if c["actor"] == name and c["value"] == value]
            out.append(CallbackCheck(key, wanted, [c["outcome"] for c in calls], lines.get(key, 0), calls))
    return out


def check_expectations(scenario: Scenario, observation: Mapping[str, Any]) -> tuple[int, list[str]]:
    """Check the `expect:` block against an observation: (checks that held, failure messages). Each failure says
    where it is written, what was expected and what was observed."""
    results = checks(scenario.expect, scenario.expect_lines, observation)
    return sum(c.ok for c in results), [c.failure() for c in results if not c.ok]


def _show(value: Any) -> str:
    """Compact, YAML-like: [a, b], {state: Empty, epoch: 2}, null."""
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    return str(value)
