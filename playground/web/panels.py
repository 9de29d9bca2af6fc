"""From a backend's `view()` dict (and the session's log) to what each panel's template draws.

Presentation only: no protocol logic. Every value here is read from the view dict the backend returned; this module
decides layout (which cells, which cursors, which colours), the templates decide words. The contexts are plain,
language-neutral data (texts in several languages stay {lang: text} dicts), so one context serves every language
and two equal contexts render equal HTML: `broadcast` skips panels whose context did not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.engine.events import FENCE, pinned
from playground.engine.spec import CONSUMER_ACTIONS, PRODUCER_ACTIONS
from playground.session import external, limits, live_only
from playground.session.live import is_command
from playground.web import cut, diagrams
from playground.web.apppanels import anomalies, database, truth

LOG_WINDOW = 48  # cells per strip: the last N entries of each partition
# A page draws at most this many cells of partition logs and rows of the consumers' table in all: a cluster of many
# partitions gets shorter strips (never fewer than the minimum), and past PAGE_CELLS // MIN_CELLS partitions the rest
# are listed on their own page, so a page and a live update stay bounded whatever the clients made (issue 30).
PAGE_CELLS, MIN_CELLS = 512, 16
PAGE_STRIPS = PAGE_CELLS // MIN_CELLS
# The consumers' tables: at most this many rows, and cells of what each consumer read, in all; at most PAGE_TABLES
# partitions' tables (the rest on the partitions' page)
PAGE_TABLE_ROWS, PAGE_TABLE_CELLS, MIN_TABLE_ROWS, PAGE_TABLES = 384, 1024, 4, 12
TABLE_COLUMNS = 8  # consumers side by side in the consumers' tables (all the session's own, then applications')
TXNS_SHOWN = 12  # transactional ids the coordinator panel draws (all the session's own, then applications')
TIMELINE_ROWS = 28
# answers to pinned RPCs (fences, InitProducerId, EndTxn, rebalances) older than the rows drawn, listed above them:
# the last fences, and the last of every other kind
PINNED_FENCES, PINNED_EACH = 6, 2
TABLE_ROWS = 24  # records per partition in the consumers' side-by-side table
MINE_ROWS = 30  # the user's own commands listed in the narrative
LOG_PAGE = 100  # commands of a page of the log the narrative's "earlier" opens
PALETTE = 8  # producer colours (CSS classes pc0..pc7)
CELL_CHARS, TABLE_CHARS, TITLE_CHARS = 9, 16, 24  # of a value: in a cell, in a table's row, in a hover
LINE_CHARS = 160  # a line of words made of names (the narrative's, the slider's marks, an error's detail)
POSITIONS_SHOWN = 12  # a consumer card's positions (the rest are counted)
NAMES_AT_OFFSET = 3  # consumers named at one offset of a strip (the rest are counted)
NAMES_ON_STRIP = 6  # consumers named on a strip, the session's own first (the others are counted where they are)
LISTED = 8  # a transaction's partitions and users, listed (the rest are counted)

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


PARTITION_PAGE = 100  # offsets on a page of a partition's log (the partition's own page)


def link(live: Any, route: str, *args: Any, **query: Any) -> str:
    """The address of one of the session's list pages (`route`), at the step shown (?at=k on an earlier one)."""
    from urllib.parse import urlencode

    from django.urls import reverse

    sid = getattr(live, "session_id", None)
    if sid is None:
        return ""  # a drawing of a backend's view alone (tests, tools): no session to link to
    q = {k: v for k, v in query.items() if v is not None}
    if getattr(live, "moment", None) is not None:
        q["at"] = live.moment
    return reverse(route, args=(sid, *args)) + ("?" + urlencode(q) if q else "")


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


def shown_first(actors: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The actors a page draws, at most `page_actors`: the session's own first, then the applications connected to
    its listener in the order they came (the list pages have them all)."""
    own = [n for n, a in actors.items() if a.get("external") is None]
    theirs = [n for n, a in actors.items() if a.get("external") is not None]
    return (own + theirs)[: max(len(own), limits.limit("page_actors"))]


def _error(err: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not err:
        return None
    return {k: cut.text(err.get(k), LINE_CHARS) if err.get(k) is not None else None for k in ("op", "error", "detail")}


def asked_about(live: Any) -> Any:
    """The client an exercise's open question asks about (exercise.asked): what it would tell is held back."""
    from playground.scenario.exercise import asked

    return asked(live)


def held_back(card: dict[str, Any], number: int) -> dict[str, Any]:
    """A producer's card while a question about its step is open: an error state would tell what the step does
    (a fenced producer's commit), so the badge says to answer first and the last error waits."""
    if card["tone"] not in ("bad", "warn") and not card["fenced"]:
        return card
    return card | {"state": "", "tone": "idle", "fenced": False, "last_error": None, "ask": number}


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
                "external": _external(ext),
                "txid": cut.name(p["transactional_id"]) if p.get("transactional_id") else None,
                "pid": p.get("producer_id"),
                "epoch": p.get("epoch"),
                "state": cut.name(state),
                "tone": tone,
                "fenced": bool(p.get("fenced")),
                "last_error": _error(p.get("last_error")),
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


def consumer_card(name: str, c: Mapping[str, Any]) -> dict[str, Any]:
    positions = sorted((c.get("positions") or {}).items(), key=lambda kv: _tp_key(kv[0]))
    return {
        "name": cut.name(name),
        "external": _external(c.get("external")),
        "isolation": c.get("isolation_level", "read_committed"),
        "group": cut.name(c["group_id"]) if c.get("group_id") else None,
        "state": cut.name(c.get("state", "RUNNING")),
        "positions": [(cut.name(tp), offset) for tp, offset in positions[:POSITIONS_SHOWN]],
        "positions_more": max(0, len(positions) - POSITIONS_SHOWN),
        "received": c.get("received_total", sum(len(v) for v in (c.get("received") or {}).values())),
    }


def own_topics_first(live: Any, tps: Any) -> list[str]:
    """Partitions in the order a page draws them: the session's own topics first (a scenario's story), then the
    others (made by connected applications), each by topic and partition number."""
    own = {t.name for t in live.cluster.topics}
    return sorted(tps, key=lambda tp: (_tp_key(tp)[0] not in own, _tp_key(tp)))


def read_status(e: Mapping[str, Any], c: Mapping[str, Any], tp: str, lso: int, got: set[int]) -> str:
    """Whether a consumer got the record `e` of `tp`, or why not: got, aborted (read_committed hides it), lso (held
    behind the LSO), pending (not polled yet), skipped (its position went past it without it), past (its position
    is past it, but the offsets it received that far back are no longer kept), na (it does not read `tp`)."""
    positions, received = c.get("positions") or {}, c.get("received") or {}
    committed = c.get("isolation_level", "read_committed") != "read_uncommitted"
    if not (tp in positions or tp in received or tp.rpartition("-")[0] in (c.get("topics") or ())):
        return "na"
    offset, pos = e["offset"], positions.get(tp, 0)
    if offset in got:
        return "got"
    if committed and e.get("fate") == "aborted":
        return "aborted"
    if committed and offset >= lso:
        return "lso"
    if offset >= pos:
        return "pending"
    kept = sum(len(v) for v in received.values())
    if c.get("received_total", kept) > kept and (not got or offset < min(got)):
        return "past"  # older than the offsets of it still kept: whether it got this one is not known any more
    return "skipped"


def table_columns(cons: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The consumers side by side in the tables: read_uncommitted then read_committed, the session's own (at most
    the `consumers` limit) and then applications' up to TABLE_COLUMNS."""
    own = sum(1 for c in cons.values() if c.get("external") is None)
    order = shown_first(cons)[: max(own, TABLE_COLUMNS)]
    ru = [n for n in order if cons[n].get("isolation_level") == "read_uncommitted"]
    return ru + [n for n in order if n not in ru]


def read_cells(e: Mapping[str, Any], tp: str, lso: int, columns: list[str], cons: Any, got: Any, asked: Any) -> list:
    """A record's cell per consumer; the consumer an open question asks about says nothing of a record it has not
    got yet (held behind the LSO, hidden as aborted, not polled yet: each tells what its poll will return); "not
    its partition" tells nothing and stays."""
    out: list[dict[str, Any]] = []
    for n in columns:
        status = read_status(e, cons[n], tp, lso, got[n])
        held = asked is not None and asked.actor == n and status not in ("got", "na")
        out.append({"status": "ask", "ask": asked.number} if held else {"status": status})
    return out


def table_row(
    e: Mapping[str, Any], tp: str, lso: int, columns: list[str], cons: Any, who: Any, got: Any, asked: Any = None
) -> dict:
    return {
        "offset": e["offset"],
        "value": cut.text(e.get("value"), TABLE_CHARS),
        "key": cut.text(e.get("key"), TABLE_CHARS) if e.get("key") is not None else None,
        "binary": cut.is_binary(e.get("value")),
        "fate": e.get("fate"),
        "by": cut.name(who.get((e.get("producer_id"), e.get("epoch"))) or _pid_label(e)),
        "cells": read_cells(e, tp, lso, columns, cons, got, asked),
    }


def consumers(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    cons = view.get("consumers", {})
    parts = view.get("partitions", {})
    who = owners(view)
    asked = asked_about(live)
    cards = [consumer_card(name, cons[name]) for name in shown_first(cons)]
    ru = [c for c in cards if c["isolation"] == "read_uncommitted"]
    rc = [c for c in cards if c["isolation"] != "read_uncommitted"]
    columns = table_columns(cons)
    tables = []
    with_data = [
        tp for tp in own_topics_first(live, parts) if any(not e.get("control") for e in parts[tp].get("log", []))
    ]
    drawn = with_data[:PAGE_TABLES]
    rows_in_all = min(PAGE_TABLE_ROWS, PAGE_TABLE_CELLS // max(1, len(columns)))
    per_table = max(MIN_TABLE_ROWS, min(TABLE_ROWS, rows_in_all // max(1, len(drawn))))
    for tp in drawn:
        part = parts[tp]
        data = [e for e in part.get("log", []) if not e.get("control")]
        lso = part.get("last_stable_offset", 0)
        shown = data[-per_table:]
        got = {n: {r["offset"] for r in (cons[n].get("received") or {}).get(tp, [])} for n in columns}
        rows = [table_row(e, tp, lso, columns, cons, who, got, asked) for e in shown]
        for e, r in zip(shown, rows):
            if cut.is_cut(e.get("value"), TABLE_CHARS):
                r["href"] = link(live, "session-record", tp, e["offset"], "value")
        first = shown[0]["offset"] if shown else part.get("log_end_offset", 0)
        log_start = part.get("log_start_offset", 0)
        tables.append(
            {
                "tp": tp,
                "key": cut.name(tp),
                "lso": lso,
                "rows": rows,
                # offsets before the first row shown (markers included): on the partition's own page
                "earlier": [log_start, first - 1] if first > log_start else None,
                "earlier_href": link(live, "session-partition", tp, to=first - 1) if first > log_start else "",
                "log_start": log_start,
            }
        )
    return {
        "ru": ru,
        "rc": rc,
        "more": len(cons) - len(cards),
        "columns": [
            {"name": cut.name(n), "isolation": cons[n].get("isolation_level", "read_committed")} for n in columns
        ],
        "columns_more": len(cons) - len(columns),
        "tables": tables,
        "tables_more": len(with_data) - len(drawn),
        "more_href": link(live, "session-clients") if len(cons) > len(columns) else "",
        "partitions_href": link(live, "session-partitions") if len(with_data) > len(tables) else "",
        "actions": CONSUMER_ACTIONS,
    }


def _external(ext: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An external client's card says so: its client.id, library and version, whether it is connected."""
    if ext is None:
        return None
    software = ext.get("software") or {}
    return {
        "client_id": cut.name(ext.get("client_id")) if ext.get("client_id") is not None else None,
        "library": cut.name(software.get("library")) if software.get("library") else None,
        "version": cut.name(software.get("version")) if software.get("version") else None,
        "connected": bool(ext.get("connected")),
        "member_id": cut.name(ext.get("member_id")) if ext.get("member_id") else None,
    }


def _pid_label(e: Mapping[str, Any]) -> str:
    pid = e.get("producer_id")
    if pid is None or pid == -1:
        return "—"
    return f"PID {pid} e{e.get('epoch')}"


def names_at(names: list[str]) -> dict[str, Any]:
    """Who fetches from an offset, as a strip names them: at most NAMES_AT_OFFSET names ("" is one of those a page
    does not name), and how many more."""
    shown = [n for n in names if n][:NAMES_AT_OFFSET]
    return {"names": [cut.name(n) for n in shown], "more": len(names) - len(shown)}


def slot(e: Mapping[str, Any], colours: Mapping[Any, int], who: Mapping[Any, str], marks: Any, at: Any) -> dict:
    """One offset of a strip: what its cell draws and its hover says (a value cut, the rest on its own link)."""
    o = e["offset"]
    control = e.get("control")
    fate = "marker" if control else (e.get("fate") or ("committed" if e.get("transactional") else "plain"))
    owner = who.get((e.get("producer_id"), e.get("epoch")))
    return {
        "offset": o,
        "control": control,
        "letter": (control or "?")[0] if control else "",
        "fate": fate,
        "text": cut.text(e.get("value"), CELL_CHARS),
        "value": cut.text(e.get("value"), TITLE_CHARS),
        "key": cut.text(e.get("key"), TITLE_CHARS // 2) if e.get("key") is not None else None,  # in the hover
        "binary": cut.is_binary(e.get("value")),
        "pid": e.get("producer_id"),
        "epoch": e.get("epoch"),
        "sequence": e.get("sequence"),
        "owner": cut.name(owner) if owner else None,
        "colour": colours.get(e.get("producer_id")),
        "shade": (e.get("epoch") or 0) % 3 if e.get("epoch") not in (None, -1) else 0,
        "cursors": [m for m, v in marks if v == o],
        "consumers": names_at(at.get(o, [])),
    }


def logs(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    colours = producer_colours(view)
    who = owners(view)
    cons = view.get("consumers", {})
    columns = table_columns(cons)  # a strip names the consumers of the tables (NAMES_ON_STRIP); the others it counts
    parts = view.get("partitions", {})
    order = own_topics_first(live, parts)
    drawn = order[:PAGE_STRIPS]
    window = max(MIN_CELLS, min(LOG_WINDOW, PAGE_CELLS // max(1, len(drawn))))
    strips = []
    for tp in drawn:
        part = parts[tp]
        hw = part.get("high_watermark", 0)
        lso = part.get("last_stable_offset", hw)
        leo = part.get("log_end_offset", hw)
        log_start = part.get("log_start_offset", 0)
        marks = (("HW", hw), ("LSO", lso), ("LEO", leo))
        entries = list(part.get("log", []))[-window:]
        start = entries[0]["offset"] if entries else part.get("window_start", leo)
        positions: dict[int, list[str]] = {}
        before: list[str] = []  # consumers whose position is before the cells drawn
        named = {n for n in columns if tp in (cons[n].get("positions") or {})}
        named = set([n for n in columns if n in named][:NAMES_ON_STRIP])
        for name, c in cons.items():
            pos = (c.get("positions") or {}).get(tp)
            if pos is not None:
                positions.setdefault(max(pos, start), []).append(name if name in named else "")
                if pos < start:
                    before.append(name if name in named else "")
        slots = [slot(e, colours, who, marks, positions) for e in entries]
        end_offset = max(leo, (entries[-1]["offset"] + 1) if entries else leo)
        slots.append(
            {
                "offset": end_offset,
                "end": True,
                "cursors": [m for m, v in marks if v == end_offset],
                "consumers": names_at(sorted({n for o, names in positions.items() if o >= end_offset for n in names})),
            }
        )
        strips.append(
            {
                "tp": tp,
                "key": cut.name(tp),
                "topic": cut.name(part.get("topic", tp.rpartition("-")[0])),
                "partition": part.get("partition"),
                "leader": part.get("leader"),
                "hw": hw,
                "lso": lso,
                "leo": leo,
                "log_start": log_start,
                # the offsets before the cells drawn (retention deleted those before log_start): on the
                # partition's own page, which opens around the LSO when the LSO is among them
                "hidden": max(0, start - log_start),
                "earlier_to": start - 1,
                "lso_before": lso < start,
                "consumers_before": names_at(before),
                "href": link(live, "session-partition", tp),
                "earlier_href": (
                    link(live, "session-partition", tp, **{"from": max(log_start, lso - PARTITION_PAGE // 2)})
                    if lso < start
                    else link(live, "session-partition", tp, to=start - 1)
                )
                if start > log_start
                else "",
                "slots": slots,
            }
        )
    more = len(order) - len(drawn)
    return {
        "strips": strips,
        "more": more,
        "partitions": len(order),
        "more_href": link(live, "session-partitions") if more else "",
    }


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


TXN_ACTIVE = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


def coordinator(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    """Each transactional id's `__transaction_state` entry, at most TXNS_SHOWN of them: those of the session's own
    producers first, then those in a transaction, then the rest by name (the transactions' list page has them all)."""
    sm = diagrams.current_state_machine(view.get("transitions"))
    users: dict[str, list[dict[str, Any]]] = {}
    own: set[str] = set()
    for name, p in view.get("producers", {}).items():
        if p.get("transactional_id"):
            users.setdefault(p["transactional_id"], []).append(
                {"name": cut.name(name), "epoch": p.get("epoch"), "fenced": bool(p.get("fenced"))}
            )
            if p.get("external") is None:
                own.add(p["transactional_id"])
    txns = view.get("transactions", {})
    order = sorted(txns, key=lambda t: (t not in own, txns[t].get("state") not in TXN_ACTIVE, t))
    entries = []
    timers = live.backend.coordinator_timers() if hasattr(live.backend, "coordinator_timers") else {}
    for txid in order[: max(len(own), TXNS_SHOWN)]:
        t = txns[txid]
        current = t.get("state")
        partitions = list(t.get("partitions") or [])
        used_by = users.get(txid, [])
        entries.append(
            {
                "txid": cut.name(txid),
                "state": current,
                "pid": t.get("producer_id"),
                "epoch": t.get("epoch"),
                "partitions": [cut.name(tp) for tp in partitions[:LISTED]],
                "partitions_more": max(0, len(partitions) - LISTED),
                "timeout_ms": t.get("timeout_ms"),
                "coordinator_partition": t.get("coordinator_partition"),
                "coordinator_broker": t.get("coordinator_broker"),
                "txn_start_time_ms": t.get("txn_start_time_ms"),
                "pending": t.get("pending_state"),
                "users": used_by[:LISTED],
                "users_more": max(0, len(used_by) - LISTED),
                **_timeout_of(t, timers),
            }
        )
    # The diagram's geometry is static (cached in diagrams); the context only says whether there is one.
    stats = view.get("stats") or {}
    return {
        "entries": entries,
        "more": len(order) - len(entries),
        "more_href": link(live, "session-transactions") if len(order) > len(entries) else "",
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


def rpc_event(e: Mapping[str, Any]) -> dict[str, Any]:
    """An RPC of the view's timeline with its names and words cut (a client's client.id or a transactional id in
    a request's detail can be 32,767 characters)."""
    return {
        **e,
        "src": cut.name(e.get("src")) if e.get("src") else e.get("src"),
        "dst": cut.name(e.get("dst")) if e.get("dst") else e.get("dst"),
        "rpc": cut.name(e.get("rpc")),
        "detail": cut.text(e.get("detail"), LINE_CHARS) if e.get("detail") else e.get("detail"),
        "error": cut.name(e.get("error")) if e.get("error") else e.get("error"),
    }


def timeline_events(view: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], int]:
    """The view's RPCs the timeline draws (consumers' routine reads left out), and how many reads were left out."""
    consumers = set(view.get("consumers", {}))
    events, reads = [], 0
    for e in view.get("timeline", []):
        if e.get("rpc") in CONSUMER_READS and not e.get("error") and consumers & {e.get("src"), e.get("dst")}:
            reads += e.get("direction") == "request"
            continue
        events.append(e)
    return events, reads


def pinned_events(view: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The RPCs that tell the session's story (events.pinned: fences, InitProducerId, EndTxn, rebalances), every one
    the view keeps, oldest first: those older than its timeline's last RPCs, then those among them."""
    return [*view.get("timeline_pinned", []), *(e for e in view.get("timeline", []) if pinned(e))]


def _pinned_listed(answers: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Of the pinned answers, those listed above the drawing, oldest first: the last PINNED_FENCES fences and the last
    PINNED_EACH of every other kind (however many EndTxn a session answers, its fence stays listed)."""
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for e in answers:
        by_kind.setdefault(pinned(e) or "", []).append(e)
    listed = [e for kind, kept in by_kind.items() for e in kept[-(PINNED_FENCES if kind == FENCE else PINNED_EACH) :]]
    return sorted(listed, key=lambda e: int(e.get("seq", 0)))


def timeline(
    live: Any, view: Mapping[str, Any], before: int | None = None, only_pinned: bool = False
) -> dict[str, Any]:
    """The protocol timeline's last TIMELINE_ROWS RPCs (of those before the RPC numbered `before`, for the
    timeline's own page, which links to the ones before them; of the pinned ones alone with `only_pinned`), and the
    answers to pinned RPCs that came before them (_pinned_listed), which however long the session stay in sight."""
    clients = [cut.name(n) for n in list(view.get("producers", {})) + list(view.get("consumers", {}))]
    events, reads = (pinned_events(view), 0) if only_pinned else timeline_events(view)
    end = (
        len(events)
        if before is None
        else next((i for i, e in enumerate(events) if e.get("seq", 0) >= before), len(events))
    )
    shown = events[max(0, end - TIMELINE_ROWS) : end]
    hidden = end - len(shown)
    first = shown[0].get("seq", 0) if shown else None
    earlier = [] if only_pinned else [e for e in pinned_events(view) if first is None or e.get("seq", 0) < first]
    answers = [e for e in earlier if e.get("direction") == "response"]
    listed = _pinned_listed(answers)
    # drawn as it is rendered (templatetags.timeline_svg): its words, and so its geometry, are the viewer's language's
    return {
        "rows": [rpc_event(e) for e in shown],
        "clients": clients,
        "hidden": hidden,
        "total": end,
        "earlier_href": link(live, "session-timeline", before=first, pinned=1 if only_pinned else None)
        if hidden
        else "",
        "reads_left_out": reads,
        "pinned": [rpc_event(e) for e in listed],
        "pinned_more": len(answers) - len(listed),
        "pinned_href": link(live, "session-timeline", pinned=1) if earlier else "",
        "only_pinned": only_pinned,
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
            earlier = (external.is_external(e) and not _quiet(e)) or ("n" not in e and is_command(e))
            if earlier:
                break
            continue
        if external.is_external(e):
            if _quiet(e):
                continue
            label, args = external.label(e, cut.name)
            mine.append(
                {
                    "i": i,
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
    }


# Requests a client sends just to stay in touch: a row of only these (answered ok) is not listed in the narrative.
QUIET_APIS = frozenset(
    {"Fetch", "Heartbeat", "Metadata", "ApiVersions", "FindCoordinator", "ListOffsets", "OffsetFetch"}
)


def _quiet(entry: Mapping[str, Any]) -> bool:
    if external.EXT not in entry or entry.get("outcome", "ok") != "ok":
        return False
    return all(api in QUIET_APIS for _who, api, _n in entry[external.EXT].get("sum", []))


def client_rows(view: Mapping[str, Any], counts: bool = False) -> list[dict[str, Any]]:
    """Every application connected to the session's listener (ever), as the connect panel and the clients' page
    list them: producers, then consumers, then admin clients, in the order they came, names cut; with `counts`
    (the clients' page), what each sent, read and asked too (the panel leaves them out: they change with every
    request, and it would be drawn again each time)."""
    ext = view.get("external") or {}
    rows = []
    for kind, group in (("producer", view.get("producers", {})), ("consumer", view.get("consumers", {}))):
        for name, a in group.items():
            x = a.get("external")
            if x is None:
                continue
            row = {
                **(_external(x) or {}),
                "name": cut.name(name),
                "kind": kind,
                "txid": cut.name(a["transactional_id"]) if a.get("transactional_id") else None,
                "pid": a.get("producer_id"),
                "epoch": a.get("epoch"),
                "group": cut.name(a["group_id"]) if a.get("group_id") else None,
                "state": cut.name(a.get("state")),
            }
            if counts:
                counters = a.get("counters") or {}
                row.update(
                    isolation=a.get("isolation_level"),
                    sent=counters.get("app_sent_ok"),
                    landed=counters.get("landed"),
                    committed=counters.get("read_committed_received"),
                    received=a.get("received_total"),
                    partitions=len(a.get("positions") or {}),
                    requests=x.get("requests"),
                    last_error=_error(a.get("last_error")),
                )
            rows.append(row)
    for a in ext.get("admins", []):
        software = a.get("software") or ("", "")
        rows.append(
            {
                "name": cut.name(a["name"]),
                "kind": "admin",
                "client_id": cut.name(a.get("client_id")) if a.get("client_id") is not None else None,
                "library": cut.name(software[0]) if software and software[0] else None,
                "version": cut.name(software[1]) if software and software[1] else None,
                "connected": bool(a.get("connected")) and bool(ext.get("listening")),
                **({"requests": a.get("requests")} if counts else {}),
            }
        )
    return rows


def connect(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    """Connect your own app: whether this session can serve one (a simulated session, on a server that allows it),
    its bootstrap address while it listens, snippets to point a client at it, and who is connected."""
    from django.conf import settings

    ext = view.get("external") or {}
    listen = getattr(live, "listen", None)
    bootstrap = ",".join(f"{h}:{p}" for h, p in listen["brokers"].values()) if listen else ""
    every = client_rows(view)
    clients = every[: limits.limit("page_actors")]
    topic = live.cluster.topics[0].name if live.cluster.topics else "orders"
    return {
        "available": bool(getattr(settings, "PLAYGROUND_LISTEN", False)) and live.backend_name == "sim",
        "listening": bool(ext.get("listening")),
        "bootstrap": bootstrap,
        "topic": topic,
        "clients": clients,
        "more": len(every) - len(clients),
        "more_href": link(live, "session-clients") if len(every) > len(clients) else "",
        "connected": sum(1 for c in every if c["connected"]),
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
