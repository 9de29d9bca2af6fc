"""A session written out as a scenario file ("Save this session as a scenario"): its cluster, its actors (those
added in free play declared from the start), its commands as steps with the outcomes it saw as `expect:`, an
`expect:` block with what it ended with when that is known, and empty notes where the author will want to say
something (at the start, and before every step that failed or fenced a producer).

The text is written by hand rather than dumped, so that it reads like the library's files; every value that YAML
could read as something other than text is quoted. What it writes parses back (tests check the round trip).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from playground.engine.spec import CONSUMER, DEFAULT_PROFILE, NOTE, ActorSpec, ClusterSpec, Profile
from playground.scenario.model import DEFAULT_LANG

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
# Words a YAML 1.1 reader (not ours: we read every plain scalar as text) would turn into something else.
_YAML_WORDS = {"y", "yes", "n", "no", "true", "false", "on", "off", "null", "~"}
LOG_EXPECT_MAX = 40  # longer logs are left out of the written `expect:` block: it would drown the file


def scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def flow(mapping: Mapping[str, Any]) -> str:
    parts = []
    for key, value in mapping.items():
        if isinstance(value, (list, tuple)):
            rendered = "[" + ", ".join(scalar(v) for v in value) + "]"
        elif isinstance(value, Mapping):
            rendered = flow(value)
        else:
            rendered = scalar(value)
        parts.append(f"{scalar(key)}: {rendered}")
    return "{" + ", ".join(parts) + "}"


def texts(value: Mapping[str, str] | str) -> str:
    if isinstance(value, str):
        return scalar(value)
    return flow(dict(value))


def _duration(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _step_line(step: Any, outcome: str | None) -> str:
    """One `- ACTOR.ACTION...` line from a logged step (the scenario file's own form) and its outcome."""
    if isinstance(step, str):
        label, args = step, {}
    else:
        ((label, args),) = step.items()
        args = dict(args or {})
    args.pop("expect", None)
    if label == NOTE:
        return f"  - note: {texts(args) if any(args.values()) else scalar('')}"
    if label == "clock.advance" and set(args) == {"ms"} and outcome in (None, "ok"):
        return f"  - clock.advance: {_duration(int(args['ms']))}"
    if outcome is not None:
        args["expect"] = outcome
    return f"  - {label}: {flow(args)}" if args else f"  - {label}"


def _actor_line(spec: ActorSpec) -> str:
    body: dict[str, Any] = dict(spec.config)
    if spec.kind == CONSUMER:
        body["topics"] = list(spec.topics)
    return f"  {scalar(spec.name)}: {{{spec.kind}: {flow(body)}}}"


def _cluster_lines(cluster: ClusterSpec) -> list[str]:
    out = ["cluster:", f"  brokers: {cluster.brokers}"]
    if cluster.replication_factor is not None:
        out.append(f"  replication_factor: {cluster.replication_factor}")
    if cluster.config:
        out.append(f"  config: {flow(dict(cluster.config))}")
    out.append("  topics:")
    out += [f"    {scalar(t.name)}: {{partitions: {t.partitions}}}" for t in cluster.topics]
    return out


def _cell(value: Any) -> str:
    """A table row's cell as the loader reads it back: numbers plain, NULL as null, text quoted when it could be
    read as a number or null."""
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    text = str(value)
    plain = scalar(text)
    return (
        json.dumps(text, ensure_ascii=False)
        if plain == text and (text.lstrip("-").isdigit() or text.lower() == "null")
        else plain
    )


def _database_lines(spec: Any) -> list[str]:
    if spec is None:
        return []
    out = ["database:", "  tables:"]
    for t in spec.tables:
        out += [f"    {scalar(t.name)}:", f"      columns: {scalar(t.columns)}"]
        if t.rows:
            out.append("      rows:")
            out += [f"        - [{', '.join(_cell(c) for c in row)}]" for row in t.rows]
    if spec.reconcile:
        out.append("  reconcile:")
        if spec.reconcile_title:
            out.append(f"    title: {texts(dict(spec.reconcile_title))}")
        out.append(f"    sql: {scalar(spec.reconcile)}")
        if spec.checks:
            out.append("    checks: [" + ", ".join(scalar(c) for c in spec.checks) + "]")
    return out


def _expect_lines(observation: Mapping[str, Any] | None) -> list[str]:
    if not observation:
        return []
    out: list[str] = []
    logs = {tp: p["log"] for tp, p in observation.get("partitions", {}).items() if 0 < len(p["log"]) <= LOG_EXPECT_MAX}
    if logs:
        out.append("  logs:")
        for tp, log in logs.items():
            out.append(
                f"    {tp}: [" + ", ".join(e["control"] if "control" in e else scalar(e["value"]) for e in log) + "]"
            )
    consumers = {
        n: {tp: v for tp, v in per.items() if 0 < len(v) <= LOG_EXPECT_MAX}
        for n, per in observation.get("consumers", {}).items()
    }
    consumers = {n: per for n, per in consumers.items() if per}
    if consumers:
        out.append("  consumers:")
        for name, per in consumers.items():
            out.append(f"    {scalar(name)}:")
            out += [f"      {tp}: [" + ", ".join(scalar(v) for v in values) + "]" for tp, values in per.items()]
    txns = {
        t: {k: v for k, v in s.items() if k in ("state", "epoch", "producer") and v is not None}
        for t, s in observation.get("transactions", {}).items()
    }
    if txns:
        out.append("  transactions:")
        out += [f"    {scalar(t)}: {flow(s)}" for t, s in txns.items() if s]
    return ["expect:", *out] if out else []


def write(
    *,
    scenario_id: str,
    title: Mapping[str, str],
    summary: Mapping[str, str] | None,
    tags: Iterable[str],
    seed: int,
    cluster: ClusterSpec,
    actors: Iterable[ActorSpec],
    commands: Iterable[Mapping[str, Any]],
    observation: Mapping[str, Any] | None = None,
    comment: str = "",
    database: Any = None,
    profile: Profile = DEFAULT_PROFILE,
    pipelines: Iterable[Any] = (),
) -> str:
    """The scenario file's text. `commands` are a session's log entries (with outcomes); entries that add an actor
    are left out (the actors are declared up front). A profile other than the default is written as `profile:`
    (the default is what a file without it means)."""
    out = []
    if comment:
        out += [f"# {line}" if line else "#" for line in comment.splitlines()]
    out += ["format: 1", f"id: {scenario_id}", f"title: {texts(title)}"]
    if summary:
        out.append(f"summary: {texts(summary)}")
    tags = list(tags)
    if tags:
        out.append("tags: [" + ", ".join(scalar(t) for t in tags) + "]")
    out.append(f"seed: {seed}")
    if profile != DEFAULT_PROFILE:
        out.append(f"profile: {flow(profile.to_dict())}")
    out += _cluster_lines(cluster)
    pipelines = [flow(p.to_dict()) for p in pipelines]
    if pipelines:
        out.append(f"pipeline: {pipelines[0]}" if len(pipelines) == 1 else "pipeline: [" + ", ".join(pipelines) + "]")
    out.append("actors:")
    out += [_actor_line(spec) for spec in actors]
    out += _database_lines(database)
    out.append("steps:")
    out.append('  - note: ""')
    for entry in commands:
        if "step" not in entry:
            continue
        step = entry["step"]
        is_note = isinstance(step, Mapping) and NOTE in step
        outcome = None if is_note else entry.get("outcome", "ok")  # None: nothing expected (a re-enactment)
        if not is_note and outcome is not None and (outcome != "ok" or entry.get("fenced")):
            out.append('  - note: ""')
        out.append(_step_line(step, outcome))
    out += _expect_lines(observation)
    return "\n".join(out) + "\n"


def title_from(title: Mapping[str, str] | None) -> dict[str, str]:
    if not title:
        return {DEFAULT_LANG: "Free play, saved as a scenario", "zh": "自由模式，另存为场景"}
    out = {lang: f"{text} (from a session)" for lang, text in title.items()}
    if "zh" in title:
        out["zh"] = f"{title['zh']}（来自一次会话）"
    return out
