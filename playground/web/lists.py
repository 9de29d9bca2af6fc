"""The session's list pages: what its page has no room for, page by page (issue 30). A session's page draws a bounded
part of everything (the newest cells of each partition, `page_actors` applications, transactional ids and clients,
the last RPCs); each "more" and "earlier" on it opens one of these, at the same step (?at=k):
- a partition's log, PARTITION_PAGE offsets at a time, anywhere from its log start offset to its end, with what
  each consumer of the tables read of it, and each record's key and value in full on its own link;
- every partition; every application connected to the listener; every transactional id; the protocol timeline
  before a given RPC.
Contexts from the view dict and the session (as panels.py's), rendered by templates/playground/lists/.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.session import limits, logwindow
from playground.web import cut, logpanels, panelparts, panels, protocolpanels

PARTITION_PAGE = logpanels.PARTITION_PAGE
LIST_PAGE = 100  # rows of a list page (partitions, clients, transactional ids)


def pages(live: Any, route: str, total: int, start: int, size: int, *args: Any) -> dict[str, Any]:
    """The links of a list paged by `size` from `start`: first, previous, next and last."""
    last = max(0, (total - 1) // size * size) if total else 0
    return {
        "start": start,
        "end": min(total, start + size),
        "total": total,
        "first": panels.link(live, route, *args, **{"from": 0}) if start > 0 else "",
        "previous": panels.link(live, route, *args, **{"from": max(0, start - size)}) if start > 0 else "",
        "next": panels.link(live, route, *args, **{"from": start + size}) if start + size < total else "",
        "last": panels.link(live, route, *args, **{"from": last}) if start + size < total else "",
    }


def _start(requested: int | None, total: int) -> int:
    return min(max(0, requested or 0), max(0, total - 1))


# ------------------------------------------------------------------------------------------------ a partition's log
def partition(
    live: Any, view: Mapping[str, Any], tp: str, start: int | None = None, to: int | None = None
) -> dict[str, Any]:
    """PARTITION_PAGE offsets of `tp`: from `start`, or ending at `to`, or the newest. NoSuchPartition when the
    session has no such partition."""
    marks = logwindow.read(live, tp, 0, 0)
    log_start, leo = marks["log_start_offset"], marks["log_end_offset"]
    hw, lso = marks["high_watermark"], marks["last_stable_offset"]
    if start is None:
        end = leo - 1 if to is None else min(to, leo - 1)
        start = max(log_start, end - PARTITION_PAGE + 1)
    start = max(log_start, min(start, max(log_start, leo - 1)))
    entries = logwindow.read(live, tp, start, PARTITION_PAGE)["entries"]
    cons = view.get("consumers", {})
    columns = logpanels.table_columns(cons)
    who = panelparts.owners(view)
    colours = panels.producer_colours(view)
    positions: dict[int, list[str]] = {}
    for name, c in cons.items():
        pos = (c.get("positions") or {}).get(tp)
        if pos is not None:
            positions.setdefault(pos, []).append(name)
    who_reads = logpanels.readers(tp, columns, cons)
    asked = panels.asked_about(live)
    rows = [_record_row(live, tp, e, lso, who_reads, who, asked) for e in entries]
    first = entries[0]["offset"] if entries else start
    last = entries[-1]["offset"] if entries else start - 1
    cursors = logpanels.cursors_at((("HW", hw), ("LSO", lso), ("LEO", leo)))
    cells = [logpanels.slot(e, colours, who, cursors, positions) for e in entries]
    if last + 1 >= leo:
        end_names = sorted({n for o, names in positions.items() if o >= leo for n in names})
        cells.append(
            {
                "offset": leo,
                "end": True,
                "cursors": list(cursors.get(leo, ())),
                "consumers": logpanels.names_at(end_names),
            }
        )
    strip = {"hidden": 0, "slots": cells}
    link = panels.link
    return {
        "tp": tp,
        "key": cut.name(tp),
        "log_start": log_start,
        "hw": hw,
        "lso": lso,
        "leo": leo,
        "first": first,
        "last": last,
        "strip": strip,
        "rows": rows,
        "columns": [{"name": cut.name(n), "isolation": cons[n].get("isolation_level")} for n in columns],
        "columns_more": len(cons) - len(columns),
        "oldest": link(live, "session-partition", tp, **{"from": log_start}) if first > log_start else "",
        "older": link(live, "session-partition", tp, to=first - 1) if first > log_start else "",
        "newer": link(live, "session-partition", tp, **{"from": last + 1}) if last + 1 < leo else "",
        "newest": link(live, "session-partition", tp) if last + 1 < leo else "",
        "around_lso": link(live, "session-partition", tp, **{"from": max(log_start, lso - PARTITION_PAGE // 2)})
        if not first <= lso <= last + 1
        else "",
        "partitions": link(live, "session-partitions"),
        "value_chars": limits.limit("cell_chars"),
    }


def _record_row(
    live: Any, tp: str, e: Mapping[str, Any], lso: int, readers: list[logpanels.Reader], who: Any, asked: Any
) -> dict[str, Any]:
    n = limits.limit("cell_chars")
    owner = who.get((e.get("producer_id"), e.get("epoch")))
    row: dict[str, Any] = {
        "offset": e["offset"],
        "control": e.get("control"),
        "fate": "marker" if e.get("control") else e.get("fate") or ("committed" if e.get("transactional") else "plain"),
        "pid": e.get("producer_id"),
        "epoch": e.get("epoch"),
        "sequence": e.get("sequence"),
        "by": cut.name(owner) if owner else None,
        "cells": [] if e.get("control") else logpanels.read_cells(e, lso, readers, asked),
    }
    for part in ("key", "value"):
        value = e.get(part)
        row[part] = {
            "text": cut.text(value, n),
            "binary": cut.is_binary(value),
            "none": value is None,
            "size": cut.size(value),
            "href": panels.link(live, "session-record", tp, e["offset"], part) if cut.is_cut(value, n) else "",
        }
    row["parts"] = [row["key"], row["value"]]
    return row


# ------------------------------------------------------------------------------------------------ the other lists
def partitions(live: Any, view: Mapping[str, Any], start: int | None) -> dict[str, Any]:
    parts = view.get("partitions", {})
    order = logpanels.own_topics_first(live, parts)
    first = _start(start, len(order))
    rows = []
    for tp in order[first : first + LIST_PAGE]:
        p = parts[tp]
        rows.append(
            {
                "key": cut.name(tp),
                "href": panels.link(live, "session-partition", tp),
                "leader": p.get("leader"),
                "log_start": p.get("log_start_offset", 0),
                "hw": p.get("high_watermark", 0),
                "lso": p.get("last_stable_offset", 0),
                "leo": p.get("log_end_offset", 0),
                "open": len(p.get("open_transactions") or {}),
            }
        )
    return {"rows": rows, "pages": pages(live, "session-partitions", len(order), first, LIST_PAGE)}


def clients(live: Any, view: Mapping[str, Any], start: int | None) -> dict[str, Any]:
    every = protocolpanels.client_rows(view, counts=True)
    first = _start(start, len(every))
    return {
        "rows": every[first : first + LIST_PAGE],
        "pages": pages(live, "session-clients", len(every), first, LIST_PAGE),
    }


def transactions(live: Any, view: Mapping[str, Any], start: int | None) -> dict[str, Any]:
    txns = view.get("transactions", {})
    users: dict[str, list[str]] = {}
    for name, p in view.get("producers", {}).items():
        if p.get("transactional_id"):
            users.setdefault(p["transactional_id"], []).append(cut.name(name))
    order = sorted(txns, key=lambda t: (txns[t].get("state") not in protocolpanels.TXN_ACTIVE, t))
    first = _start(start, len(order))
    rows = []
    for txid in order[first : first + LIST_PAGE]:
        t = txns[txid]
        tps = list(t.get("partitions") or [])
        rows.append(
            {
                "txid": cut.name(txid),
                "state": t.get("state"),
                "pending": t.get("pending_state"),
                "pid": t.get("producer_id"),
                "epoch": t.get("epoch"),
                "partitions": [cut.name(tp) for tp in tps[: protocolpanels.LISTED]],
                "partitions_more": max(0, len(tps) - protocolpanels.LISTED),
                "timeout_ms": t.get("timeout_ms"),
                "coordinator_broker": t.get("coordinator_broker"),
                "users": users.get(txid, [])[: protocolpanels.LISTED],
                "users_more": max(0, len(users.get(txid, [])) - protocolpanels.LISTED),
            }
        )
    return {"rows": rows, "pages": pages(live, "session-transactions", len(order), first, LIST_PAGE)}


def timeline(live: Any, view: Mapping[str, Any], before: int | None, pinned: bool = False) -> dict[str, Any]:
    """The protocol timeline's RPCs before the one numbered `before` (the last ones when None; the pinned ones alone
    with `pinned`), and the links to the RPCs before and after them."""
    drawn = panels.timeline(live, view, before=before, only_pinned=pinned)
    events = protocolpanels.pinned_events(view) if pinned else protocolpanels.timeline_events(view)[0]
    end = drawn["total"]
    after = end + protocolpanels.TIMELINE_ROWS
    only = 1 if pinned else None
    return {
        **drawn,
        "later_href": panels.link(live, "session-timeline", before=events[after].get("seq"), pinned=only)
        if after < len(events)
        else "",
        "newest_href": panels.link(live, "session-timeline", pinned=only) if end < len(events) else "",
        "kept": len(events),
        "all_href": panels.link(live, "session-timeline") if pinned else "",
    }
