"""A session written out: as a scenario file (the editor's "Save this session as a scenario"), and its command log
page by page (log.json).

log.json is what the session is, in full (also handy to file a bug), a page at a time (issue 30: a log of 20,000
commands, or rows of a client's requests of a megabyte each, made one answer of any size): `?from=` and `?limit=`
choose the commands, `log_page_bytes` bounds the page (at least one command is on it), and `next` and `previous` link
the neighbours. What the clients sent is on it as stored (`in`, the packed frames a replay reads) and spelled out
(`requests`); an entry whose packed frames alone would pass the page's bound has them on a link of their own
(`in_href`), and the names the clients chose (a client.id may be 32,767 characters) are cut in what is spelled out,
never in `in`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import replace
from typing import Any

from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, ClusterSpec, TopicSpec
from playground.scenario.model import MAX_SOURCE_BYTES
from playground.scenario.run import build_observation
from playground.scenario.writer import title_from, write
from playground.session import external, limits, polls, store
from playground.session.backends import live_only
from playground.session.live import Live
from playground.session.replay import load, restore
from playground.simserver.clients import ADMIN


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
        pipelines=live.pipelines,
        profile=live.profile,
    )


# Scenario files hold at most these (docs/scenario-format-extensions.md): a longer session is cut, and says so.
ACTORS_MAX, STEPS_MAX = 12, 2000
CLOCK_GAP_MS = 1000  # a pause of the clients at least this long becomes a clock.advance
# The clients' steps written, in JSON bytes: a scenario file is at most MAX_SOURCE_BYTES (the rest of the file, its
# actors, cluster and the session's own steps, is bounded by the same limits as the session's)
STEPS_BYTES = MAX_SOURCE_BYTES // 2


def _bounded(text: str) -> str:
    """A client's id (a client.id, a transactional.id, a group) as long as a session's own may be: a longer one is its
    start and a digest of the whole (two long ids stay two)."""
    n = limits.limit("name_chars")
    if len(text) <= n:
        return text
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=3).hexdigest()
    return text[: n - len(digest) - 1] + "-" + digest


def _fit(text: str, limit_bytes: int) -> str:
    """A key or value a client sent, cut to what a scenario's may be (UTF-8 bytes), "…" where it was cut."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit_bytes:
        return text
    return raw[: max(0, limit_bytes - 3)].decode("utf-8", "ignore") + "…"


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
            config["client.id"] = _bounded(a.client_id)
        if a.kind == PRODUCER:
            if a.transactional_id:
                config["transactional.id"] = _bounded(a.transactional_id)
            actors.append(ActorSpec(name, PRODUCER, config))
        else:
            config["isolation.level"] = a.isolation or "read_uncommitted"
            if a.group_id:
                config["group.id"] = _bounded(a.group_id)
                by_group.setdefault(a.group_id, name)
            topics = tuple(sorted(a.topics & set(core.cluster.user_topics()))) or tuple(
                t.name for t in live.cluster.topics
            )
            actors.append(ActorSpec(name, CONSUMER, config, topics))
    ordered = list(core.clients.ops)
    ops: dict[int, list[int]] = {}
    for k, op in enumerate(ordered):
        ops.setdefault(int(op["n"]), []).append(k)
    admins: dict[int, list[dict[str, Any]]] = {}
    for a in core.clients.actors.values():
        if a.kind == ADMIN:
            admins.setdefault(a.first_n, []).append({"step": {"note": _admin_note(a.name, a.software)}})
    groups = {a.name: a.group_id for a in core.clients.actors.values() if a.kind == CONSUMER and a.group_id}
    senders, takes = polls.plan(ordered, names, groups, by_group)
    commands: list[dict[str, Any]] = []
    last_ms: int | None = None
    written = 0  # bytes of the clients' steps
    for i, entry in enumerate(live.commands):
        if len(commands) >= STEPS_MAX - 2 or written > STEPS_BYTES:
            commands.append({"step": {"note": {"en": "The session went on; the rest is in its log."}}, "outcome": "ok"})
            break
        if "step" in entry:
            if "vt" in entry:
                last_ms = _pause(commands, last_ms, int(entry["vt"]))
            commands.append(entry)
            continue
        commands.extend(admins.get(i, []))
        for k in ops.get(i, []):
            op = ordered[k]
            if op["action"] == polls.SEND and op["actor"] in names:
                commands.append({"step": {"note": _offsets_note(names[op["actor"]], op["args"])}})
            step = _step_of(op, names, senders.get(k, ""), takes.get(k, 0))
            if step is None:
                continue
            last_ms = _pause(commands, last_ms, int(op["t"]))
            if op["outcome"] != "ok":
                commands.append({"step": {"note": {"en": f"{step[0]}: the broker answered {op['outcome']}"}}})
            commands.append({"step": {step[0]: step[1]} if step[1] else step[0], "outcome": None})
            written += _size(commands[-1])
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


def _admin_note(name: str, software: tuple[str, str] | None) -> dict[str, str]:
    """An admin client connected: a scenario has no admin actors, so it is a note, not a consumer."""
    what = f" ({software[0]} {software[1]})" if software else ""
    return {
        "en": f"{name}{what}, an admin client, connected here: a scenario has no admin actors, so its requests are "
        "not steps.",
        "zh": f"{name}{what}（管理客户端）在此连接：场景没有管理客户端这类角色，它的请求不写成步骤。",
    }


def _offsets_note(producer: str, args: dict[str, Any]) -> dict[str, str]:
    """The offsets a connected producer sent in its transaction (TxnOffsetCommit), as it sent them: the step after
    sends its consumer's position, which a re-enactment reaches by the same polls."""
    offsets = ", ".join(f"{tp} → {o}" for tp, o in sorted((args.get("offsets") or {}).items()))
    group = args.get("group")
    return {
        "en": f"{producer}.send_offsets_to_transaction: group {group}, offsets {offsets or '(none)'} (TxnOffsetCommit).",
        "zh": f"{producer}.send_offsets_to_transaction：消费组 {group}，offset {offsets or '（无）'}（TxnOffsetCommit）。",
    }


def _step_of(
    op: dict[str, Any], names: dict[str, str], consumer: str = "", take: int = 0
) -> tuple[str, dict[str, Any]] | None:
    """The scenario step of a client's operation (None: none); `consumer`: the one a send_offsets_to_transaction
    names, `take`: the records a poll takes (polls.plan)."""
    actor = names.get(op["actor"])
    if actor is None:
        return None
    action, args = op["action"], dict(op.get("args") or {})
    if action == "produce":
        if args.get("value") is None or isinstance(args.get("value"), bytes):
            return None
        value = _fit(args["value"], limits.limit("value_bytes"))
        out = {"topic": args["topic"], "partition": args["partition"], "value": value, "await": False}
        if isinstance(args.get("key"), str):
            out["key"] = _fit(args["key"], limits.limit("key_bytes"))
        return f"{actor}.produce", out
    if action == "send_offsets_to_transaction":
        return (f"{actor}.{action}", {"consumer": consumer}) if consumer else None
    if action == "poll":
        return (f"{actor}.poll", {"max": take}) if take else None
    if action in (
        "init_transactions",
        "begin_transaction",
        "commit_transaction",
        "abort_transaction",
        "commit",
    ):
        return f"{actor}.{action}", {}
    return None


# ------------------------------------------------------------------------------------------------ log.json
LOG_PAGE = 500  # commands of a page when ?limit= does not say
REQUESTS_SHOWN = 200  # an entry's requests spelled out (the rest are counted: `in` has them all)
ACTORS_SHOWN = 100  # external clients on a page (`external_next` has the rest)
NAME_CHARS = 200  # of a client's name in what log.json spells out


def _name(value: Any) -> Any:
    if isinstance(value, str) and len(value) > NAME_CHARS:
        return value[: NAME_CHARS - 1] + "…"
    return value


def _size(item: Any) -> int:
    return len(json.dumps(item, ensure_ascii=False, default=str).encode("utf-8"))


def readable(entry: dict[str, Any], payload: bytes | None, in_href: str, budget: int) -> dict[str, Any]:
    """An entry as log.json gives it: an external clients' entry with its requests spelled out (REQUESTS_SHOWN of
    them, names cut) and its packed frames (`in`, its row's payload in base64, as logs once kept it), on a link of
    their own when they alone would pass half of `budget`."""
    if external.EXT not in entry or payload is None:
        return entry
    body = dict(entry[external.EXT])
    body["sum"] = [[_name(who), api, n] for who, api, n in body.get("sum", [])][:REQUESTS_SHOWN]
    requests = external.requests_of(entry, payload)
    shown = [{**r, "client_id": _name(r.get("client_id"))} if "client_id" in r else r for r in requests]
    out: dict[str, Any] = {**entry, external.EXT: body, "requests": shown[:REQUESTS_SHOWN]}
    if len(requests) > REQUESTS_SHOWN:
        out["requests_more"] = len(requests) - REQUESTS_SHOWN
    text = base64.b64encode(payload).decode("ascii")
    if len(text) > budget // 2:
        out[external.EXT] = {**body, "in": None, "in_bytes": len(text), "in_href": in_href}
    else:
        out[external.EXT] = {**body, "in": text}
    return out


def log_page(live: Live, start: int, limit: int, budget: int, href: Any, external_from: int = 0) -> dict[str, Any]:
    """The commands [start, start + n) of the log, n <= `limit`, as many as three quarters of `budget` bytes hold
    (one at least), and the external clients from `external_from` in the last quarter (one at least);
    `href(**query)` makes the links to the neighbouring pages."""
    commands = live.commands
    start = min(max(0, start), len(commands))
    page: list[dict[str, Any]] = []
    size, for_actors = 0, budget // 4
    stop = min(len(commands), start + limit)
    packed = store.payloads(live.row_ids[i] for i in range(start, stop) if external.EXT in commands[i])
    for i in range(start, stop):
        entry = readable(commands[i], packed.get(live.row_ids[i]), href(entry=i, part="in"), budget)
        n = _size(entry)
        if page and size + n > budget - for_actors:
            break
        page.append(entry)
        size += n
    end = start + len(page)
    actors = external.actors(live.backend)
    first_actor = min(max(0, external_from), len(actors))
    shown: list[dict[str, Any]] = []
    size = 0
    for a in actors[first_actor : first_actor + ACTORS_SHOWN]:
        item = {k: _name(v) for k, v in a.items()}
        if shown and size + _size(item) > for_actors:
            break
        shown.append(item)
        size += _size(item)
    after = first_actor + len(shown)
    return {
        "length": len(commands),
        "from": start,
        "to": end,
        "commands": page,
        "next": href(**{"from": end, "limit": limit}) if end < len(commands) else None,
        "previous": href(**{"from": max(0, start - limit), "limit": limit}) if start > 0 else None,
        # the applications that connected to the session's listener, as actors (their requests are commands)
        "external": shown,
        "external_total": len(actors),
        "external_next": href(**{"from": start, "limit": limit, "external_from": after})
        if after < len(actors)
        else None,
    }


def packed_inputs(live: Live, index: int) -> str | None:
    """The packed frames (`in`: its row's payload, in base64) of the log's entry `index`, when it is an external
    clients' entry."""
    if not 0 <= index < len(live.commands) or external.EXT not in live.commands[index]:
        return None
    payload = store.payloads([live.row_ids[index]]).get(live.row_ids[index])
    return base64.b64encode(payload).decode("ascii") if payload is not None else None
