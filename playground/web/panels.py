"""From a backend's `view()` dict (and the session's log) to what each panel's template draws.

Presentation only: no protocol logic. Every value here is read from the view dict the backend returned; this module
decides layout (which cells, which cursors, which colours), the templates decide words. The contexts are plain,
language-neutral data (texts in several languages stay {lang: text} dicts), so one context serves every language
and two equal contexts render equal HTML: `broadcast` skips panels whose context did not change.

The session's own panels are here (header, slider, producers, narrative, exercise) with the assembly of all;
the logs and consumers' tables are in logpanels.py, the coordinator, timeline and connected clients in
protocolpanels.py, what they share in panelparts.py, the application's side in apppanels.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.engine.spec import PRODUCER_ACTIONS
from playground.session import external, live_only
from playground.session.live import is_command, mark_of
from playground.web import cut
from playground.web.apppanels import anomalies, database, truth
from playground.web.grouppanels import groups
from playground.web.logpanels import consumers, logs
from playground.web.panelparts import (
    LINE_CHARS,
    asked_about,
    error_card,
    external_card,
    held_back,
    link,
    producer_colours,
    shown_first,
    unfenced,
)
from playground.web.protocolpanels import connect, coordinator, quiet, timeline

MINE_ROWS = 30  # the user's own commands listed in the narrative

LOG_PAGE = 100  # commands of a page of the log the narrative's "earlier" opens

PANELS = (
    "header",
    "scrubber",
    "connect",
    "cluster",
    "producers",
    "consumers",
    "groups",
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

MARK_CHARS = 60  # of what the clients' requests in a mark's hover were (a row of them lists who sent what)

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
        "connected": connected_software(view),
        "connected_more": max(0, len((view.get("external") or {}).get("software", [])) - SOFTWARE_LISTED),
        "own_actors": bool(live.actors),
        "paced": getattr(live, "paced", False),
    }


# ApiVersions' ClientSoftwareName as the header names it: kafka-clients calls itself "apache-kafka-java"
# (AppInfoParser), the name its users know it by is the artifact's
LIBRARY_NAMES = {"apache-kafka-java": "kafka-clients"}

SOFTWARE_LISTED = 6  # libraries named in the header (a session's clients rarely use more; the rest are counted)


def connected_software(view: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What the connected applications are, as their connections named themselves (ApiVersions v3+): each library and
    version, with the kinds of client using it (several: producers, consumers, admin clients)."""
    rows = []
    for s in (view.get("external") or {}).get("software", [])[:SOFTWARE_LISTED]:
        library = str(s["library"])
        rows.append(
            {
                "library": cut.name(LIBRARY_NAMES.get(library, library)),
                "version": cut.name(s["version"]),
                "kinds": sorted(s["kinds"].items()),
            }
        )
    return rows


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
    # only a command that fenced a producer can tell the open question's answer (panelparts.unfenced)
    asked = asked_about(live) if any(live.commands[seq].get("fenced") for seq, _kind in live.marks) else None
    for seq, kind in live.marks:
        entry = unfenced(live.commands[seq], asked)
        if entry is not live.commands[seq]:
            kind = mark_of(entry)  # fenced no longer, the open question's client held back
            if kind is None:
                continue
        k = live.step_of(seq)
        column = (int(k * scale / SCRUB_COLUMN), kind)
        if column in seen:
            continue
        seen.add(column)
        if kind == "note":
            label, text = "note", dict(step_from_entry(entry["step"]).args.get("text", {}))
        elif external.is_external(entry):
            label = (
                cut.text(external.label(entry, cut.name)[0], MARK_CHARS) + " → " + cut.name(entry.get("outcome", "ok"))
            )
            text = None
        else:
            step = step_from_entry(entry["step"]) if "step" in entry else None
            # an actor added ("+ actor") and "(fenced A)" are said in the viewer's language (scrubber.html)
            label = step.label + " → " + entry.get("outcome", "ok") if step else ""
            text = None
        marks.append(
            {
                "x": round(k * scale - 2, 1),
                "k": k,
                "kind": kind,
                "label": label,
                "text": text,
                "outcome": entry.get("outcome", "ok"),
                "fenced": ", ".join(entry.get("fenced") or ()),
            }
        )
    return {"length": n, "w": SCRUB_WIDTH, "ticks": ticks, "marks": marks}


def cluster(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    brokers = [
        {"id": int(b), "up": bool(info.get("up", True))}
        for b, info in sorted(view.get("brokers", {}).items(), key=lambda kv: int(kv[0]))
    ]
    return {"brokers": brokers, "unobservable": list(view.get("unobservable", []))}


def producers(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    colours = producer_colours(view)
    asked = asked_about(live)
    cards = []
    every = view.get("producers", {})
    for name in shown_first(every):
        p = every[name]
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
                "name": cut.name(name),
                "external": external_card(ext),
                "txid": cut.name(p["transactional_id"]) if p.get("transactional_id") else None,
                "pid": p.get("producer_id"),
                "epoch": p.get("epoch"),
                "state": cut.name(state),
                "tone": tone,
                "fenced": bool(p.get("fenced")),
                "last_error": error_card(p.get("last_error")),
                "counters": dict(p.get("counters") or {}),
                "colour": colours.get(p.get("producer_id"), None),
                "transactional": bool(p.get("transactional_id")),
                "next_value": live.next_value(name) if ext is None else "",
            }
        )
        if asked is not None and asked.actor == name:
            cards[-1] = held_back(cards[-1], asked.number)
    own_consumers = {n: c for n, c in view.get("consumers", {}).items() if c.get("external") is None}
    return {
        "cards": cards,
        "more": len(every) - len(cards),
        "more_href": link(live, "session-clients") if len(every) > len(cards) else "",
        "txids": live.transactional_ids(),
        "topics": [{"name": t.name, "partitions": list(range(t.partitions))} for t in live.cluster.topics],
        # only the session's own consumers can be named in its commands (send_offsets_to_transaction, produce from)
        "group_consumers": [n for n, c in own_consumers.items() if c.get("group_id")],
        "consumers": list(own_consumers),
        "actions": PRODUCER_ACTIONS,
    }


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
    earlier = False  # whether there is more to list before the rows listed
    for i in range(live.length - 1, -1, -1):  # the user's own commands, newest first, only as many as are shown
        e = live.commands[i]
        if len(mine) == MINE_ROWS:
            earlier = (external.is_external(e) and not quiet(e)) or ("n" not in e and is_command(e))
            if earlier:
                break
            continue
        if external.is_external(e):
            if quiet(e):
                continue
            label, args = external.label(e, cut.name)
            mine.append(
                {
                    "i": i,
                    # what clients did is a step (the header's numbering); opening or closing the listener is not
                    "k": live.step_of(i) if external.EXT in e else None,
                    "listener": label if external.EXT not in e else "",  # listen, unlisten: said in the viewer's words
                    "label": cut.text(label, LINE_CHARS),
                    "args": cut.text(args, LINE_CHARS),
                    "outcome": cut.name(e.get("outcome", "ok")),
                    "external": True,
                }
            )
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
                    "added": kind,
                    "name": name,
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
        # the log before the first command listed, on the command log's pages (log.json?from=&limit=)
        # the log before the first row listed, on a page of the command log (log.json?from=&limit=)
        "mine_href": _log_link(live, max(0, mine[0]["i"] - LOG_PAGE)) if earlier else "",
        "running": live.running,
        # time passes between the steps (a real cluster; the simulator at the user's pace): outcomes can depend on it
        "timing": "real" if live_only(live.backend_name) else ("paced" if getattr(live, "paced", False) else ""),
    }


def _log_link(live: Any, start: int) -> str:
    from urllib.parse import urlencode

    from django.urls import reverse

    return reverse("session-log", args=(live.session_id,)) + "?" + urlencode({"from": start, "limit": LOG_PAGE})


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
        # no question open: its compare menu may show every outcome (a frame that reveals the last answer brings it)
        "compares": reveal.open_question is None,
        "profile": live.profile.key,
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
    "groups": groups,
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
