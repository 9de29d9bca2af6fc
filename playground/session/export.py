"""A session written out as a scenario file (the editor's "Save this session as a scenario")."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, ClusterSpec, TopicSpec
from playground.scenario.run import build_observation
from playground.scenario.writer import title_from, write
from playground.session import external
from playground.session.backends import live_only
from playground.session.live import Live
from playground.session.replay import load, restore


def _final_observation(live: Live) -> dict[str, Any] | None:
    """What the session ended with, for the file's `expect:` block: observed on a copy (observing lets the
    simulator's time run to quiescence, which must not happen to the session itself). None for a real cluster:
    its state is not replayed here, and the steps' outcomes already say what it answered."""
    if live_only(live.backend_name) or live.detached:
        return None
    copy = restore(live, live.length, as_moment=True)
    try:
        raw = copy.backend.observe()
    finally:
        copy.backend.close()
    return build_observation(live.scenario.id if live.scenario else "free-play", live.backend_name, live.seed, [], raw)


def as_scenario(session_id: str) -> str:
    live = load(session_id)
    scenario = live.scenario
    base = scenario.id if scenario is not None else "free-play"
    comment = (
        f"Written from session {session_id} ({live.length} commands on the {live.backend_name} backend).\n"
        "Each step expects the outcome the session saw; fill in the empty notes."
    )
    actors, commands, cluster = list(live.actors.values()), live.commands, live.cluster
    observation = None
    if external.core_of(live.backend) is not None:
        actors, commands, cluster = transcribe(live)
        comment += (
            "\nApplications connected to the session's listener are written as actors of their own, their requests as"
            "\nthe steps they amount to (sends as fire-and-forget produce): a re-enactment by the scenario's client"
            "\nmodels, not a replay of their bytes (the session's own log replays those). No outcomes are expected of them."
        )
    else:
        observation = _final_observation(live)
    return write(
        scenario_id=f"{base}-session" if not base.endswith("-session") else base,
        title=title_from(dict(scenario.title) if scenario is not None else None),
        summary=dict(scenario.summary) if scenario is not None and scenario.summary else None,
        tags=scenario.tags if scenario is not None else (),
        seed=live.seed,
        cluster=cluster,
        actors=actors,
        commands=commands,
        observation=observation,
        comment=comment,
        database=scenario.database if scenario is not None else None,
        profile=live.profile,
    )


# Scenario files hold at most these (docs/scenario-format-extensions.md): a longer session is cut, and says so.
ACTORS_MAX, STEPS_MAX = 12, 2000
CLOCK_GAP_MS = 1000  # a pause of the clients at least this long becomes a clock.advance


def _actor_name(name: str, taken: set[str]) -> str:
    text = re.sub(r"[^A-Za-z0-9._-]", "-", name).strip("-._")[:40] or "app"
    if not text[0].isalnum():
        text = "a" + text[:39]
    out, n = text, 1
    while out in taken:
        n += 1
        out = f"{text[:36]}-{n}"
    taken.add(out)
    return out


def transcribe(live: Live) -> tuple[list[ActorSpec], list[dict[str, Any]], ClusterSpec]:
    """The session with its external clients written in the scenario format: each client an actor, each thing it did
    (init_transactions, begin_transaction, produce, commit_transaction, ..., a consumer's poll and commit) a step at
    its place in the log, a clock.advance where they paused; topics they made declared."""
    core = external.core_of(live.backend)
    assert core is not None and core.clients is not None
    actors = list(live.actors.values())
    taken = {a.name for a in actors}
    names: dict[str, str] = {}
    by_group: dict[str, str] = {}
    for a in core.clients.actors.values():
        if a.kind not in (PRODUCER, CONSUMER) or len(actors) >= ACTORS_MAX:
            continue
        name = names[a.name] = _actor_name(a.name, taken)
        config: dict[str, Any] = {}
        if a.client_id:
            config["client.id"] = a.client_id
        if a.kind == PRODUCER:
            if a.transactional_id:
                config["transactional.id"] = a.transactional_id
            actors.append(ActorSpec(name, PRODUCER, config))
        else:
            config["isolation.level"] = a.isolation or "read_uncommitted"
            if a.group_id:
                config["group.id"] = a.group_id
                by_group.setdefault(a.group_id, name)
            topics = tuple(sorted(a.topics & set(core.cluster.user_topics()))) or tuple(
                t.name for t in live.cluster.topics
            )
            actors.append(ActorSpec(name, CONSUMER, config, topics))
    ops: dict[int, list[dict[str, Any]]] = {}
    for op in core.clients.ops:
        ops.setdefault(int(op["n"]), []).append(op)
    commands: list[dict[str, Any]] = []
    last_ms: int | None = None
    for i, entry in enumerate(live.commands):
        if len(commands) >= STEPS_MAX - 2:
            commands.append({"step": {"note": {"en": "The session went on; the rest is in its log."}}, "outcome": "ok"})
            break
        if "step" in entry:
            if "vt" in entry:
                last_ms = _pause(commands, last_ms, int(entry["vt"]))
            commands.append(entry)
            continue
        for op in ops.get(i, []):
            step = _step_of(op, names, by_group)
            if step is None:
                continue
            last_ms = _pause(commands, last_ms, int(op["t"]))
            if op["outcome"] != "ok":
                commands.append({"step": {"note": {"en": f"{step[0]}: the broker answered {op['outcome']}"}}})
            commands.append({"step": {step[0]: step[1]} if step[1] else step[0], "outcome": None})
    declared = {t.name for t in live.cluster.topics}
    extra = tuple(
        TopicSpec(t, core.cluster.partition_count(t)) for t in core.cluster.user_topics() if t not in declared
    )
    cluster = replace(live.cluster, topics=live.cluster.topics + extra) if extra else live.cluster
    return actors, commands, cluster


def _pause(commands: list[dict[str, Any]], last_ms: int | None, at_ms: int) -> int:
    if last_ms is not None and at_ms - last_ms >= CLOCK_GAP_MS:
        commands.append({"step": {"clock.advance": {"ms": at_ms - last_ms}}, "outcome": None})
    return at_ms if last_ms is None else max(last_ms, at_ms)


def _step_of(op: dict[str, Any], names: dict[str, str], by_group: dict[str, str]) -> tuple[str, dict[str, Any]] | None:
    actor = names.get(op["actor"])
    if actor is None:
        return None
    action, args = op["action"], dict(op.get("args") or {})
    if action == "produce":
        if args.get("value") is None or isinstance(args.get("value"), bytes):
            return None
        out = {"topic": args["topic"], "partition": args["partition"], "value": args["value"], "await": False}
        if isinstance(args.get("key"), str):
            out["key"] = args["key"]
        return f"{actor}.produce", out
    if action == "send_offsets_to_transaction":
        consumer = by_group.get(str(args.get("group")))
        return (f"{actor}.{action}", {"consumer": consumer}) if consumer else None
    if action in (
        "init_transactions",
        "begin_transaction",
        "commit_transaction",
        "abort_transaction",
        "poll",
        "commit",
    ):
        return f"{actor}.{action}", {}
    return None
