"""From a backend's `view()` dict (and the session's log) to what each panel's template draws.

Presentation only: no protocol logic. Every value here is read from the view dict the backend returned; this module
decides layout (which cells, which cursors, which colours), the templates decide words. The contexts are plain,
language-neutral data (texts in several languages stay {lang: text} dicts), so one context serves every language
and two equal contexts render equal HTML: `broadcast` skips panels whose context did not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.engine.spec import CONSUMER_ACTIONS, PRODUCER_ACTIONS
from playground.session import external, live_only
from playground.session.live import is_command
from playground.web import diagrams
from playground.web.apppanels import anomalies, database, truth

LOG_WINDOW = 48  # cells per strip: the last N entries of each partition
# A page draws at most this many cells of partition logs and rows of the consumers' table in all: a cluster of many
# partitions gets shorter strips (never fewer than the minimum), so a page and a live update stay bounded.
PAGE_CELLS, MIN_CELLS = 1024, 8
PAGE_TABLE_ROWS, MIN_TABLE_ROWS = 384, 4
TIMELINE_ROWS = 28
TABLE_ROWS = 24  # records per partition in the consumers' side-by-side table
MINE_ROWS = 30  # the user's own commands listed in the narrative
PALETTE = 8  # producer colours (CSS classes pc0..pc7)

PANELS = (
    "header",
    "scrubber",
    "connect",
    "cluster",
    "producers",
    "consumers",
    "logs",
    "coordinator",
    "timeline",
    "truth",
    "narrative",
    "exercise",
    "database",
    "anomalies",
)
SCRUB_WIDTH = 1000  # the time slider's drawing, in SVG units
SCRUB_TICKS_MAX = 400  # up to this many commands, a tick each; beyond, the track (and the marks) only
SCRUB_COLUMN = 3  # marks of one kind closer than this (SVG units) are drawn as one


FIRE_AND_FORGET = "fire-and-forget"  # a word of step_summary's, translated where it is shown (summary_words)


def step_summary(label: str, args: Mapping[str, Any]) -> str:
    """A step's arguments in a few words: `orders-0 "txn1-p0"`, `+61s`, `broker 2`; a database step's statement."""
    if not args:
        return ""
    if "sql" in args:
        return str(args["sql"])
    if "ms" in args:
        ms = int(args["ms"])
        return f"+{ms // 1000}s" if ms % 1000 == 0 else f"+{ms}ms"
    if "broker" in args:
        return f"b{args['broker']}"
    if "coordinator_of" in args:
        return f"coordinator of {args['coordinator_of']}"
    parts = []
    if "topic" in args:
        tp = args["topic"] + (f"-{args['partition']}" if args.get("partition") is not None else "")
        parts.append(tp)
    if args.get("key") is not None:
        parts.append(f"{args['key']}=")
    if "value" in args:
        parts.append(f'"{args["value"]}"')
    if "from" in args:
        parts.append(f"from {args['from']}")
    if args.get("await") is False:
        parts.append(FIRE_AND_FORGET)
    if "consumer" in args:
        parts.append(str(args["consumer"]))
    if "max" in args:
        parts.append(f"max {args['max']}")
    return " ".join(parts)


def _short(value: Any, n: int = 9) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= n else text[: n - 1] + "…"


def _tp_key(tp: str) -> tuple[str, int]:
    topic, _, n = tp.rpartition("-")
    return (topic, int(n)) if n.isdigit() else (tp, 0)


def producer_colours(view: Mapping[str, Any]) -> dict[int, int]:
    """A colour per producer id, in order of first appearance (producers first, then the logs)."""
    colours: dict[int, int] = {}
    pids = [p.get("producer_id") for p in view.get("producers", {}).values()]
    for tp in sorted(view.get("partitions", {}), key=_tp_key):
        pids += [e.get("producer_id") for e in view["partitions"][tp].get("log", [])]
    for pid in pids:
        if pid is not None and pid != -1 and pid not in colours:
            colours[pid] = len(colours) % PALETTE
    return colours


def owners(view: Mapping[str, Any]) -> dict[tuple[int, int], str]:
    """(producer id, epoch) -> producer name, from the producers' cards (who wrote a record, as far as we know)."""
    out: dict[tuple[int, int], str] = {}
    for name, p in view.get("producers", {}).items():
        if p.get("producer_id") is not None:
            out.setdefault((p["producer_id"], p.get("epoch")), name)
    return out


# ---------------------------------------------------------------------------------------------------- panels
def header(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    last = None
    for entry in reversed(live.commands):
        if "step" in entry:
            from playground.session import step_from_entry

            step = step_from_entry(entry["step"])
            if not step.is_note:
                last = {
                    "label": step.label,
                    "args": step_summary(step.label, step.args),
                    "outcome": entry.get("outcome", "ok"),
                    # at the user's pace: the time that passed before it, and who learnt meanwhile it was fenced
                    "elapsed_s": round(entry["elapsed_ms"] / 1000, 1) if entry.get("elapsed_ms") else None,
                    "meanwhile": ", ".join(entry.get("meanwhile_fatal") or []),
                }
                break
    scenario = live.scenario
    return {
        "session_id": live.session_id,
        "free_play": scenario is None,
        "title": dict(scenario.title) if scenario is not None else None,
        "scenario_id": scenario.id if scenario is not None else "",
        "backend": view.get("backend", live.backend_name),
        "seed": live.seed,
        "time_ms": view.get("time_ms", 0),
        "cursor": live.cursor,
        "total": len(live.steps),
        # the one step numbering (session/live.py): the step shown, and where the scenario ends at this pace
        "step": live.step_count,
        "end": live.step_count + len(live.steps) - live.cursor if scenario is not None else None,
        "running": live.running,
        "commands": live.step_count,
        "last": last,
        "version": live.version,
        # A real cluster: live in this process, or detached (see session.py), or live but not observable right now.
        "real": live_only(live.backend_name),
        "detached": getattr(live, "detached", ""),
        "observe_error": view.get("observe_error"),
        "prefix": getattr(live.backend, "prefix", None),
        "origin": live.origin,
        "replica": live.replica,
        "profile": profile_of(live),
        "paced": getattr(live, "paced", False),
    }


def profile_of(live: Any) -> dict[str, Any]:
    """The session's Kafka (exact release), client, and `transaction.version`: the level the cluster has finalized
    (as the real cluster reports it, as the simulator models it; None when a detached session cannot ask) and the
    protocol this client's transactions run (1: classic; 2: KIP-890's, only a client that implements it)."""
    profile = live.profile
    reported = getattr(live.backend, "transaction_version", None)
    if reported is None and not live_only(live.backend_name):
        reported = profile.finalized_transaction_version
    return {
        "kafka": profile.kafka,
        "release": profile.release,
        # the client as the header shows it: "java", or "java 3.5.2" for kafka-clients of another release (issue 20)
        "client": profile.client if profile.own_client else f"{profile.client} {profile.client_version}",
        "client_key": profile.client_key,
        "cluster_transaction_version": reported,
        "transaction_version": profile.transaction_version,
    }


def scrubber(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    """The time slider's track: step k is the state after the first k commands (0..step_count; live.py). A tick
    per step (while they fit), and marks where a command failed, fenced a producer, or carried a note; marks of one
    kind that would overlap are drawn once (the first), so the drawing stays small at 20,000 commands."""
    from playground.session import step_from_entry

    n = live.step_count
    scale = SCRUB_WIDTH / max(n, 1)
    ticks = " ".join(f"M{round((i + 1) * scale, 1)} 9V17" for i in range(n)) if 0 < n <= SCRUB_TICKS_MAX else ""
    marks, seen = [], set()
    for seq, kind in live.marks:
        k = live.step_of(seq)
        column = (int(k * scale / SCRUB_COLUMN), kind)
        if column in seen:
            continue
        seen.add(column)
        entry = live.commands[seq]
        if kind == "note":
            label, text = "note", dict(step_from_entry(entry["step"]).args.get("text", {}))
        elif external.is_external(entry):
            label, text = external.label(entry)[0] + " → " + entry.get("outcome", "ok"), None
        else:
            step = step_from_entry(entry["step"]) if "step" in entry else None
            label, text = (step.label if step else "+ actor") + " → " + entry.get("outcome", "ok"), None
            if entry.get("fenced"):
                label += " (fenced " + ", ".join(entry["fenced"]) + ")"
        marks.append({"x": round(k * scale - 2, 1), "k": k, "kind": kind, "label": label, "text": text})
    return {"length": n, "w": SCRUB_WIDTH, "ticks": ticks, "marks": marks}


def cluster(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    brokers = [
        {"id": int(b), "up": bool(info.get("up", True))}
        for b, info in sorted(view.get("brokers", {}).items(), key=lambda kv: int(kv[0]))
    ]
    return {"brokers": brokers, "unobservable": list(view.get("unobservable", []))}


def producers(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    colours = producer_colours(view)
    cards = []
    for name, p in view.get("producers", {}).items():
        state = p.get("state") or "INIT"
        tone = (
            "bad"
            if (p.get("fenced") or state in ("FATAL_ERROR", "CRASHED"))
            else "warn"
            if state == "ABORTABLE_ERROR"
            else (
                "busy"
                if state
                in ("IN_TRANSACTION", "COMMITTING_TRANSACTION", "ABORTING_TRANSACTION", "BEGIN_COMMIT", "BEGIN_ABORT")
                else "ok"
                if state == "READY"
                else "off"
                if state in ("CLOSED",)
                else "idle"
            )
        )
        ext = p.get("external")
        if ext is not None and state == "DISCONNECTED" and not p.get("fenced"):
            tone = "off"
        cards.append(
            {
                "name": name,
                "external": _external(ext),
                "txid": p.get("transactional_id"),
                "pid": p.get("producer_id"),
                "epoch": p.get("epoch"),
                "state": state,
                "tone": tone,
                "fenced": bool(p.get("fenced")),
                "last_error": p.get("last_error"),
                "counters": dict(p.get("counters") or {}),
                "colour": colours.get(p.get("producer_id"), None),
                "transactional": bool(p.get("transactional_id")),
                "next_value": live.next_value(name),
            }
        )
    consumers_with_group = [n for n, c in view.get("consumers", {}).items() if c.get("group_id")]
    return {
        "cards": cards,
        "txids": live.transactional_ids(),
        "topics": [{"name": t.name, "partitions": list(range(t.partitions))} for t in live.cluster.topics],
        "group_consumers": consumers_with_group,
        "consumers": list(view.get("consumers", {})),
        "actions": PRODUCER_ACTIONS,
    }


def consumers(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    cons = view.get("consumers", {})
    parts = view.get("partitions", {})
    who = owners(view)
    cards = []
    for name, c in cons.items():
        received = c.get("received_total", sum(len(v) for v in (c.get("received") or {}).values()))
        cards.append(
            {
                "name": name,
                "external": _external(c.get("external")),
                "isolation": c.get("isolation_level", "read_committed"),
                "group": c.get("group_id"),
                "state": c.get("state", "RUNNING"),
                "positions": sorted((c.get("positions") or {}).items(), key=lambda kv: _tp_key(kv[0])),
                "received": received,
            }
        )
    ru = [c for c in cards if c["isolation"] == "read_uncommitted"]
    rc = [c for c in cards if c["isolation"] != "read_uncommitted"]
    columns = ru + rc
    tables = []
    with_data = sum(1 for part in parts.values() if any(not e.get("control") for e in part.get("log", [])))
    per_table = max(MIN_TABLE_ROWS, min(TABLE_ROWS, PAGE_TABLE_ROWS // max(1, with_data)))
    for tp in sorted(parts, key=_tp_key):
        part = parts[tp]
        data = [e for e in part.get("log", []) if not e.get("control")]
        if not data:
            continue
        lso = part.get("last_stable_offset", 0)
        shown = data[-per_table:]
        got = {name: {r["offset"] for r in (c.get("received") or {}).get(tp, [])} for name, c in cons.items()}
        rows = []
        for e in shown:
            cells = []
            for col in columns:
                c = cons[col["name"]]
                reads_tp = (
                    tp in (c.get("positions") or {})
                    or tp in (c.get("received") or {})
                    or tp.rpartition("-")[0] in (c.get("topics") or ())
                )
                pos = (c.get("positions") or {}).get(tp, 0)
                if not reads_tp:
                    status = "na"
                elif e["offset"] in got[col["name"]]:
                    status = "got"
                elif col["isolation"] != "read_uncommitted" and e.get("fate") == "aborted":
                    status = "aborted"
                elif col["isolation"] != "read_uncommitted" and e["offset"] >= lso:
                    status = "lso"
                elif e["offset"] >= pos:
                    status = "pending"
                else:
                    status = "skipped"
                cells.append({"status": status})
            rows.append(
                {
                    "offset": e["offset"],
                    "value": e.get("value"),
                    "key": e.get("key"),
                    "fate": e.get("fate"),
                    "by": who.get((e.get("producer_id"), e.get("epoch"))) or _pid_label(e),
                    "cells": cells,
                }
            )
        tables.append({"tp": tp, "lso": lso, "rows": rows, "hidden_rows": len(data) - len(shown)})
    return {
        "ru": ru,
        "rc": rc,
        "columns": [{"name": c["name"], "isolation": c["isolation"]} for c in columns],
        "tables": tables,
        "actions": CONSUMER_ACTIONS,
    }


def _external(ext: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An external client's card says so: its client.id, library and version, whether it is connected."""
    if ext is None:
        return None
    software = ext.get("software") or {}
    return {
        "client_id": ext.get("client_id"),
        "library": software.get("library"),
        "version": software.get("version"),
        "connected": bool(ext.get("connected")),
        "member_id": ext.get("member_id"),
    }


def _pid_label(e: Mapping[str, Any]) -> str:
    pid = e.get("producer_id")
    if pid is None or pid == -1:
        return "—"
    return f"PID {pid} e{e.get('epoch')}"


def logs(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    colours = producer_colours(view)
    who = owners(view)
    cons = view.get("consumers", {})
    strips = []
    window = max(MIN_CELLS, min(LOG_WINDOW, PAGE_CELLS // max(1, len(view.get("partitions", {})))))
    for tp in sorted(view.get("partitions", {}), key=_tp_key):
        part = view["partitions"][tp]
        hw = part.get("high_watermark", 0)
        lso = part.get("last_stable_offset", hw)
        leo = part.get("log_end_offset", hw)
        entries = list(part.get("log", []))[-window:]
        start = entries[0]["offset"] if entries else part.get("window_start", leo)
        positions: dict[int, list[str]] = {}
        for name, c in cons.items():
            pos = (c.get("positions") or {}).get(tp)
            if pos is not None:
                positions.setdefault(max(pos, start), []).append(name)
        slots = []
        for e in entries:
            o = e["offset"]
            control = e.get("control")
            fate = "marker" if control else (e.get("fate") or ("committed" if e.get("transactional") else "plain"))
            owner = who.get((e.get("producer_id"), e.get("epoch")))
            slots.append(
                {
                    "offset": o,
                    "control": control,
                    "letter": (control or "?")[0] if control else "",
                    "fate": fate,
                    "text": _short(e.get("value")),
                    "value": e.get("value"),
                    "key": e.get("key"),
                    "pid": e.get("producer_id"),
                    "epoch": e.get("epoch"),
                    "sequence": e.get("sequence"),
                    "owner": owner,
                    "colour": colours.get(e.get("producer_id")),
                    "shade": (e.get("epoch") or 0) % 3 if e.get("epoch") not in (None, -1) else 0,
                    "cursors": [m for m, v in (("HW", hw), ("LSO", lso), ("LEO", leo)) if v == o],
                    "consumers": positions.get(o, []),
                }
            )
        end_offset = max(leo, (entries[-1]["offset"] + 1) if entries else leo)
        slots.append(
            {
                "offset": end_offset,
                "end": True,
                "cursors": [m for m, v in (("HW", hw), ("LSO", lso), ("LEO", leo)) if v == end_offset],
                "consumers": sorted({n for o, names in positions.items() if o >= end_offset for n in names}),
            }
        )
        # Cursors beyond the window's end (should not happen) or before it (long logs) still show, at the edge.
        strips.append(
            {
                "tp": tp,
                "topic": part.get("topic", tp.rpartition("-")[0]),
                "partition": part.get("partition"),
                "leader": part.get("leader"),
                "hw": hw,
                "lso": lso,
                "leo": leo,
                "log_start": part.get("log_start_offset", 0),
                "hidden": max(0, start - part.get("log_start_offset", 0)),
                "slots": slots,
            }
        )
    return {"strips": strips}


def _timeout_of(t: Mapping[str, Any], timers: Mapping[str, Any]) -> dict[str, Any]:
    """An open transaction's timeout: past `times_out_ms` (its start + transaction.timeout.ms) the coordinator's
    abort scan, which runs every `scan_every_ms` on its broker's grid of ticks, aborts it at the first tick after
    (`aborted_at_ms`; unknown on a real cluster). So the clock's effect is predictable: +61 s on a 60 s timeout
    may leave it Ongoing until the next tick."""
    start, timeout = t.get("txn_start_time_ms"), t.get("timeout_ms")
    if t.get("state") != "Ongoing" or t.get("pending_state") or start is None or start < 0 or not timeout:
        return {}
    times_out = int(start) + int(timeout)
    every = timers.get("abort_scan_interval_ms")
    tick = (timers.get("next_abort_scan_ms") or {}).get(t.get("coordinator_broker"))
    aborted_at = None
    if every and tick is not None:
        # the scan's ticks are tick + k x every; Kafka aborts a transaction whose start + timeout < now
        k = max(0, -(-(times_out + 1 - int(tick)) // int(every)))
        aborted_at = int(tick) + k * int(every)
    return {"times_out_ms": times_out, "aborted_at_ms": aborted_at, "scan_every_s": (every or 0) // 1000}


def coordinator(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    sm = diagrams.current_state_machine(view.get("transitions"))
    users: dict[str, list[dict[str, Any]]] = {}
    for name, p in view.get("producers", {}).items():
        if p.get("transactional_id"):
            users.setdefault(p["transactional_id"], []).append(
                {"name": name, "epoch": p.get("epoch"), "fenced": bool(p.get("fenced"))}
            )
    entries = []
    timers = live.backend.coordinator_timers() if hasattr(live.backend, "coordinator_timers") else {}
    for txid, t in sorted(view.get("transactions", {}).items()):
        current = t.get("state")
        entries.append(
            {
                "txid": txid,
                "state": current,
                "pid": t.get("producer_id"),
                "epoch": t.get("epoch"),
                "partitions": list(t.get("partitions") or []),
                "timeout_ms": t.get("timeout_ms"),
                "coordinator_partition": t.get("coordinator_partition"),
                "coordinator_broker": t.get("coordinator_broker"),
                "txn_start_time_ms": t.get("txn_start_time_ms"),
                "pending": t.get("pending_state"),
                "users": users.get(txid, []),
                **_timeout_of(t, timers),
            }
        )
    # The diagram's geometry is static (cached in diagrams); the context only says whether there is one.
    stats = view.get("stats") or {}
    return {
        "entries": entries,
        "sm": sm is not None,
        "table": view.get("transitions"),
        "stats": {
            k: stats[k]
            for k in (
                "transaction_state_records",
                "transaction_state_bytes",
                "init_producer_id_calls",
                "markers_written",
            )
            if k in stats
        },
    }


# A consumer's poll sends a Fetch (and a ListOffsets at the start) per partition, again and again: drawn, they push
# the transactional RPCs (the story) out of the diagram. Left out unless they carry an error.
CONSUMER_READS = frozenset({"Fetch", "ListOffsets"})


def timeline(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    consumers = set(view.get("consumers", {}))
    clients = list(view.get("producers", {})) + list(consumers)
    events, reads = [], 0
    for e in view.get("timeline", []):
        if e.get("rpc") in CONSUMER_READS and not e.get("error") and consumers & {e.get("src"), e.get("dst")}:
            reads += e.get("direction") == "request"
            continue
        events.append(e)
    return {**diagrams.timeline(events, clients, rows=TIMELINE_ROWS), "reads_left_out": reads}


def narrative(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    from playground.scenario.exercise import reveal
    from playground.session import step_from_entry

    outcomes = live.step_outcomes
    cursor = live.cursor
    shown = reveal(live)  # an exercise keeps its answers back (expectations, the notes that explain a question)
    ran_as, now = live.scenario_steps, live.step_count
    steps = []
    current_note = None
    for s in live.steps:
        done = s.index in outcomes
        outcome = outcomes.get(s.index)
        hidden = s.is_note and not shown.note(s.index)
        row = {
            "n": s.index,
            # the step number it ran as, or will run as when the scenario goes on from here (one numbering: live.py)
            "k": ran_as.get(s.index, now + s.index - cursor + 1),
            "note": dict(s.args.get("text", {})) if s.is_note and not hidden else None,
            "hidden": hidden,
            "label": s.label,
            "args": "" if s.is_note else step_summary(s.label, s.args),
            "expect": list(s.expect) if s.expect and shown.expect(done) else None,
            "done": done,
            "current": s.index == cursor - 1,
            "next": s.index == cursor,
            "outcome": outcome,
            "as_expected": (outcome in s.expect) if (done and s.expect and not s.is_note) else None,
        }
        if row["note"] and s.index < cursor and any(row["note"].values()):
            current_note = row["note"]
        steps.append(row)
    mine: list[dict[str, Any]] = []
    for i in range(live.length - 1, -1, -1):  # the user's own commands, newest first, only as many as are shown
        if len(mine) == MINE_ROWS:
            break
        e = live.commands[i]
        if external.is_external(e):
            if _quiet(e):
                continue
            label, args = external.label(e)
            mine.append({"i": i, "label": label, "args": args, "outcome": e.get("outcome", "ok"), "external": True})
            continue
        if "n" in e or not is_command(e):
            continue
        if "add" in e:
            ((name, decl),) = e["add"].items()
            ((kind, body),) = decl.items()
            mine.append(
                {
                    "i": i,
                    "k": live.step_of(i),
                    "label": f"+ {kind} {name}",
                    "args": _add_summary(kind, body),
                    "outcome": "ok",
                }
            )
        else:
            s = step_from_entry(e["step"])
            mine.append(
                {
                    "i": i,
                    "k": live.step_of(i),
                    "label": s.label,
                    "args": step_summary(s.label, s.args),
                    "outcome": e.get("outcome", "ok"),
                }
            )
    mine.reverse()
    return {
        "free_play": live.scenario is None,
        "summary": dict(live.scenario.summary) if live.scenario is not None else None,
        "steps": steps,
        "cursor": cursor,
        "total": len(steps),
        "note": current_note,
        "mine": mine,
        "mine_hidden": max(0, live.own_count - len(mine)),
        "running": live.running,
        # time passes between the steps (a real cluster; the simulator at the user's pace): outcomes can depend on it
        "timing": "real" if live_only(live.backend_name) else ("paced" if getattr(live, "paced", False) else ""),
    }


def exercise(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    """An exercise's goal as a checklist, the hints revealed so far, the question the next step asks, and the
    questions already answered with the right answer and how the room (or this session) answered."""
    from playground import rooms
    from playground.scenario import exercise as ex

    scenario = live.scenario
    if not ex.is_exercise(scenario):
        return {"on": False}
    reveal = ex.reveal(live)
    items = [
        i.as_dict() | {"hidden": False}
        if reveal.goal_values(i.ok)
        else {"kind": i.kind, "subject": i.subject, "wanted": None, "seen": None, "ok": False, "hidden": True}
        for i in ex.goal_items(live)
    ]
    pending = ex.pending_question(live)
    shown = [s for s in scenario.steps if s.predict and s.index < live.cursor][-3:]  # the latest answered questions
    given = rooms.answers(live, [s.index for s in shown])
    asked = [
        {
            "n": s.index,
            "question": dict(s.predict["question"]),
            "choices": [dict(c) for c in s.predict["choices"]],
            "answer": s.predict["answer"],
            "mine": live.predictions.get(s.index),
            "dist": ex.distribution(given[s.index], len(s.predict["choices"])),
        }
        for s in shown
    ]
    question = None
    if pending is not None:
        q = scenario.steps[pending].predict
        question = {"n": pending, "question": dict(q["question"]), "choices": [dict(c) for c in q["choices"]]}
    return {
        "on": True,
        "items": items,
        "done": sum(i["ok"] for i in items),
        "met": bool(items) and all(i["ok"] for i in items),
        "hints": [dict(h) for h in scenario.hints[: live.hints_shown]],
        "hints_left": len(scenario.hints) - live.hints_shown,
        "question": question,
        "asked": asked,
        # whose answers these are, for a page watching someone else's session (the board's spotlight)
        "who": (live.seat or {}).get("name") or "",
    }


# Requests a client sends just to stay in touch: a row of only these (answered ok) is not listed in the narrative.
QUIET_APIS = frozenset(
    {"Fetch", "Heartbeat", "Metadata", "ApiVersions", "FindCoordinator", "ListOffsets", "OffsetFetch"}
)


def _quiet(entry: Mapping[str, Any]) -> bool:
    if external.EXT not in entry or entry.get("outcome", "ok") != "ok":
        return False
    return all(api in QUIET_APIS for _who, api, _n in entry[external.EXT].get("sum", []))


def connect(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    """Connect your own app: whether this session can serve one (a simulated session, on a server that allows it),
    its bootstrap address while it listens, snippets to point a client at it, and who is connected."""
    from django.conf import settings

    ext = view.get("external") or {}
    listen = getattr(live, "listen", None)
    bootstrap = ",".join(f"{h}:{p}" for h, p in listen["brokers"].values()) if listen else ""
    clients = []
    for kind, group in (("producer", view.get("producers", {})), ("consumer", view.get("consumers", {}))):
        for name, a in group.items():
            x = a.get("external")
            if x is None:
                continue
            software = x.get("software") or {}
            clients.append(
                {
                    "name": name,
                    "kind": kind,
                    "client_id": x.get("client_id"),
                    "library": software.get("library"),
                    "version": software.get("version"),
                    "connected": bool(x.get("connected")),
                    "txid": a.get("transactional_id"),
                    "pid": a.get("producer_id"),
                    "epoch": a.get("epoch"),
                    "group": a.get("group_id"),
                    "state": a.get("state"),
                }
            )
    for a in ext.get("admins", []):
        software = a.get("software") or ("", "")
        clients.append(
            {
                "name": a["name"],
                "kind": "admin",
                "client_id": a.get("client_id"),
                "library": software[0] if software else None,
                "version": software[1] if software else None,
                "connected": bool(a.get("connected")) and bool(ext.get("listening")),
            }
        )
    topic = live.cluster.topics[0].name if live.cluster.topics else "orders"
    return {
        "available": bool(getattr(settings, "PLAYGROUND_LISTEN", False)) and live.backend_name == "sim",
        "listening": bool(ext.get("listening")),
        "bootstrap": bootstrap,
        "topic": topic,
        "clients": clients,
        "connected": sum(1 for c in clients if c["connected"]),
        "moment": live.moment is not None,
    }


def _add_summary(kind: str, body: Mapping[str, Any]) -> str:
    if kind == "producer":
        return f"transactional.id {body['transactional.id']}" if body.get("transactional.id") else "plain"
    bits = [body.get("isolation.level", "read_committed")]
    if body.get("group.id"):
        bits.append(f"group {body['group.id']}")
    return ", ".join(bits)


BUILDERS = {
    "header": header,
    "scrubber": scrubber,
    "connect": connect,
    "cluster": cluster,
    "producers": producers,
    "consumers": consumers,
    "logs": logs,
    "coordinator": coordinator,
    "timeline": timeline,
    "truth": truth,
    "narrative": narrative,
    "exercise": exercise,
    "database": database,
    "anomalies": anomalies,
}


def contexts(live: Any, view: Mapping[str, Any], head: Any = None) -> dict[str, dict[str, Any]]:
    """Every panel's context. For a moment (step k of a session), `head` is the session itself: the time slider's
    track always shows the whole log."""
    out = {name: BUILDERS[name](live, view) for name in PANELS if name != "scrubber"}
    out["scrubber"] = scrubber(head if head is not None else live, view)
    return out
