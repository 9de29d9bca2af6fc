"""The partition logs (a strip of cells per partition, every consumer's position on it) and the consumers' tables
(what each consumer read, next to the log). Both are bounded whatever the clients wrote (issue 30): shorter strips
and fewer rows past a page's budget, the rest on the partitions' pages. Contexts for templates/playground/panels/,
as panels.py's are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from playground.engine.spec import CONSUMER_ACTIONS
from playground.web import cut
from playground.web.panelparts import (
    asked_about,
    external_card,
    link,
    owners,
    pid_label,
    producer_colours,
    shown_first,
    tp_key,
)

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

TABLE_ROWS = 24  # records per partition in the consumers' side-by-side table

CELL_CHARS, TABLE_CHARS, TITLE_CHARS = 9, 16, 24  # of a value: in a cell, in a table's row, in a hover

POSITIONS_SHOWN = 12  # a consumer card's positions (the rest are counted)

NAMES_AT_OFFSET = 3  # consumers named at one offset of a strip (the rest are counted)

NAMES_ON_STRIP = 6  # consumers named on a strip, the session's own first (the others are counted where they are)

PARTITION_PAGE = 100  # offsets on a page of a partition's log (the partition's own page)


def consumer_card(name: str, c: Mapping[str, Any]) -> dict[str, Any]:
    positions = sorted((c.get("positions") or {}).items(), key=lambda kv: tp_key(kv[0]))
    return {
        "name": cut.name(name),
        "external": external_card(c.get("external")),
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
    return sorted(tps, key=lambda tp: (tp_key(tp)[0] not in own, tp_key(tp)))


class Reader(NamedTuple):
    """What a consumer's cells in one partition depend on, worked out once a partition rather than once a cell."""

    name: str
    reads: bool  # it reads the partition (assigned, subscribed to its topic, or it received from it)
    committed: bool  # read_committed
    position: int
    got: set[int]  # the offsets it received, as far as they are kept
    oldest_got: int | None
    forgot: bool  # it received more than the offsets still kept


def readers(tp: str, columns: list[str], cons: Mapping[str, Mapping[str, Any]]) -> list[Reader]:
    out = []
    for n in columns:
        c = cons[n]
        positions, received = c.get("positions") or {}, c.get("received") or {}
        got = {r["offset"] for r in received.get(tp, [])}
        kept = sum(len(v) for v in received.values())
        reads = tp in positions or tp in received or tp.rpartition("-")[0] in (c.get("topics") or ())
        out.append(
            Reader(
                name=n,
                reads=reads,
                committed=c.get("isolation_level", "read_committed") != "read_uncommitted",
                position=positions.get(tp, 0),
                got=got,
                oldest_got=min(got) if got else None,
                forgot=c.get("received_total", kept) > kept,
            )
        )
    return out


def read_status(e: Mapping[str, Any], r: Reader, lso: int) -> str:
    """Whether a consumer got the record `e`, or why not: got, aborted (read_committed hides it), lso (held behind
    the LSO), pending (not polled yet), skipped (its position went past it without it), past (its position is past
    it, but the offsets it received that far back are no longer kept), na (it does not read the partition)."""
    if not r.reads:
        return "na"
    offset = e["offset"]
    if offset in r.got:
        return "got"
    if r.committed and e.get("fate") == "aborted":
        return "aborted"
    if r.committed and offset >= lso:
        return "lso"
    if offset >= r.position:
        return "pending"
    if r.forgot and (r.oldest_got is None or offset < r.oldest_got):
        return "past"  # older than the offsets of it still kept: whether it got this one is not known any more
    return "skipped"


def table_columns(cons: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The consumers side by side in the tables: read_uncommitted then read_committed, the session's own (at most
    the `consumers` limit) and then applications' up to TABLE_COLUMNS."""
    own = sum(1 for c in cons.values() if c.get("external") is None)
    order = shown_first(cons)[: max(own, TABLE_COLUMNS)]
    ru = [n for n in order if cons[n].get("isolation_level") == "read_uncommitted"]
    return ru + [n for n in order if n not in ru]


def read_cells(e: Mapping[str, Any], lso: int, readers: list[Reader], asked: Any) -> list:
    """A record's cell per consumer; the consumer an open question asks about says nothing of a record it has not
    got yet (held behind the LSO, hidden as aborted, not polled yet: each tells what its poll will return); "not
    its partition" tells nothing and stays."""
    out: list[dict[str, Any]] = []
    for r in readers:
        status = read_status(e, r, lso)
        held = asked is not None and asked.actor == r.name and status not in ("got", "na")
        out.append({"status": "ask", "ask": asked.number} if held else {"status": status})
    return out


def table_row(e: Mapping[str, Any], lso: int, readers: list[Reader], who: Any, asked: Any = None) -> dict:
    return {
        "offset": e["offset"],
        "value": cut.text(e.get("value"), TABLE_CHARS),
        "key": cut.text(e.get("key"), TABLE_CHARS) if e.get("key") is not None else None,
        "binary": cut.is_binary(e.get("value")),
        "fate": e.get("fate"),
        "by": cut.name(who.get((e.get("producer_id"), e.get("epoch"))) or pid_label(e)),
        "cells": read_cells(e, lso, readers, asked),
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
        who_reads = readers(tp, columns, cons)
        rows = [table_row(e, lso, who_reads, who, asked) for e in shown]
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


def names_at(names: list[str]) -> dict[str, Any]:
    """Who fetches from an offset, as a strip names them: at most NAMES_AT_OFFSET names ("" is one of those a page
    does not name), and how many more."""
    if not names:
        return {"names": [], "more": 0}  # most offsets: a strip asks for each of its cells, a thousand an update
    shown = [n for n in names if n][:NAMES_AT_OFFSET]
    return {"names": [cut.name(n) for n in shown], "more": len(names) - len(shown)}


def cursors_at(marks: Any) -> dict[int, list[str]]:
    """The marks (HW, LSO, LEO) drawn at each offset."""
    out: dict[int, list[str]] = {}
    for mark, offset in marks:
        out.setdefault(offset, []).append(mark)
    return out


def slot(e: Mapping[str, Any], colours: Mapping[Any, int], who: Mapping[Any, str], cursors: Any, at: Any) -> dict:
    """One offset of a strip: what its cell draws and its hover says (a value cut, the rest on its own link)."""
    o = e["offset"]
    control = e.get("control")
    value, key, pid, epoch = e.get("value"), e.get("key"), e.get("producer_id"), e.get("epoch")
    fate = "marker" if control else (e.get("fate") or ("committed" if e.get("transactional") else "plain"))
    owner = who.get((pid, epoch))
    return {
        "offset": o,
        "control": control,
        "letter": control[0] if control else "",
        "fate": fate,
        "text": cut.text(value, CELL_CHARS),
        "value": cut.text(value, TITLE_CHARS),
        "key": cut.text(key, TITLE_CHARS // 2) if key is not None else None,  # in the hover
        "binary": cut.is_binary(value),
        "pid": pid,
        "epoch": epoch,
        "sequence": e.get("sequence"),
        "owner": cut.name(owner) if owner else None,
        "colour": colours.get(pid),
        "shade": (epoch or 0) % 3 if epoch not in (None, -1) else 0,
        "cursors": list(cursors.get(o, ())),
        "consumers": names_at(at.get(o, ())),
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
        cursors = cursors_at(marks)
        slots = [slot(e, colours, who, cursors, positions) for e in entries]
        end_offset = max(leo, (entries[-1]["offset"] + 1) if entries else leo)
        slots.append(
            {
                "offset": end_offset,
                "end": True,
                "cursors": list(cursors.get(end_offset, ())),
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
