"""The application's side of a session's page: what each application believes it sent beside what reached a
read_committed consumer (the truth panel), the database beside Kafka with its reconciliation, and the anomaly
checker's findings (playground/scenario/anomalies.py). Contexts for templates/playground/panels/, as panels.py's are."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from playground.engine.backend import OK
from playground.scenario.anomalies import LISTED_MAX
from playground.session import limits
from playground.session.history import MOMENT_CHECKED_MAX
from playground.web import cut

RECONCILE_TABLE = ""  # the reconciliation's rows, for a cell's "show all" (no table of a scenario has this name)
ANOMALIES_SHOWN = 30  # findings the panel lists (the rest are counted)
ANOMALIES_MOMENT_MAX = MOMENT_CHECKED_MAX  # an earlier step past this is not checked anew (it reads the whole history)
TOPICS_LISTED = 200  # topics the pipeline form offers (a client may create many: the page stays bounded)
FINDING_CHARS = 120  # of a value or a name in a finding's sentence


def _read_committed_sends(sent: int, topics: Counter[str] | None, read_committed: set[str]) -> int:
    """Of a producer's `sent` sends, those to a topic a read_committed consumer reads (all of them when the log
    does not say which topics they went to)."""
    if not topics or "" in topics:
        return sent if not topics or read_committed else 0
    return min(sent, sum(n for t, n in topics.items() if t in read_committed))


def sent_by_topic(live: Any) -> dict[str, Counter[str]]:
    """Per producer, its produce commands the application was told succeeded, per topic ("": a produce of what a
    consumer polled, whose records and topic the command does not say). Kept up to date as the log grows; a Live
    rebuilt from a checkpoint (going back, a moment) goes on from what the checkpoint had counted."""
    memo = live.derived.get("sent_by_topic")
    if memo is None or memo[0] > live.length:
        memo = live.derived["sent_by_topic"] = [0, {}]
    by_actor: dict[str, Counter[str]] = memo[1]
    for entry in live.commands[memo[0] :]:
        raw = entry.get("step")
        # a produce always has arguments (a topic, or a consumer to take from): a one-key dict; only those are read,
        # without parsing the step, so that a moment of a long session reads its whole log cheaply
        if type(raw) is not dict or len(raw) != 1 or entry.get("outcome", OK) != OK:
            continue
        ((label, args),) = raw.items()
        if not label.endswith(".produce") or type(args) is not dict:
            continue
        topic = "" if "from" in args else str(args.get("topic", ""))
        by_actor.setdefault(label[: -len(".produce")], Counter())[topic] += 1
    memo[0] = live.length
    return by_actor


def truth(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    """What each producer's application believes it sent, what landed, what read_committed got. The gap counts
    only sends to topics a read_committed consumer reads: a send nobody reads that way has not gone missing."""
    rows: list[dict[str, Any]] = []
    top = 1
    read_committed = {
        str(t)
        for c in view.get("consumers", {}).values()
        if c.get("isolation_level") == "read_committed"
        for t in c.get("topics") or ()
    }
    by_actor = sent_by_topic(live)
    every = view.get("producers", {})
    for name, p in every.items():
        c = p.get("counters") or {}
        sent, landed, got = (
            int(c.get("app_sent_ok", 0)),
            int(c.get("landed", 0)),
            int(c.get("read_committed_received", 0)),
        )
        top = max(top, sent, landed, got)
        rows.append(
            {
                "name": cut.name(name),
                "external": p.get("external") is not None,
                "txid": cut.name(p["transactional_id"]) if p.get("transactional_id") else None,
                "sent": sent,
                "landed": landed,
                "got": got,
                "gap": max(0, _read_committed_sends(sent, by_actor.get(name), read_committed) - got),
            }
        )
    # A page draws the session's own producers and then, up to `page_actors`, the applications' in the order they
    # came (the clients' page lists every one); the gap counts them all.
    own = [r for r in rows if not r["external"]]
    shown = (own + [r for r in rows if r["external"]])[: max(len(own), limits.limit("page_actors"))]
    for r in shown:
        r["w_sent"], r["w_landed"], r["w_got"] = (round(100 * r[k] / top) for k in ("sent", "landed", "got"))
    more = len(rows) - len(shown)
    href = reverse("session-clients", args=(live.session_id,)) if more else ""
    if href and live.moment is not None:
        href += f"?at={live.moment}"
    return {"rows": shown, "more": more, "more_href": href, "gap": sum(r["gap"] for r in rows)}


class _Budget:
    """What a page (or a live update) may carry of the database's cells: each cell cut to `cell_chars` (a "show
    all" link has the rest), and `db_page_chars` in all (the rows past it are counted, not shown). Ten rows of a
    5 MB value once made a 100 MB page, and an update over Daphne's 1 MiB frame a session nobody could watch."""

    def __init__(self, live: Any) -> None:
        self.cell = limits.limit("cell_chars")
        self.left = limits.limit("db_page_chars")
        self.sid, self.at = live.session_id, live.moment
        self.left_out = 0

    def row(self, table: str, i: int, cells: list[Any]) -> list[Any] | None:
        if self.left <= 0:
            self.left_out += 1
            return None
        out = []
        for j, v in enumerate(cells):
            text = v if isinstance(v, str) else v.hex() if isinstance(v, (bytes, bytearray)) else None
            if text is not None and len(text) > self.cell:
                query = urlencode(
                    {"table": table, "row": i, "col": j, **({"at": self.at} if self.at is not None else {})}
                )
                out.append(
                    {"cut": text[: self.cell], "more": len(text) - self.cell, "href": f"/s/{self.sid}/cell/?{query}"}
                )
                self.left -= self.cell
            else:
                out.append(v)
                self.left -= len(str(v))
        return out


def database(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    """The application's tables, and the reconciliation query's rows with its gaps lit: a column whose values are
    all 0 or 1 is a check, and a row with a 0 in one is a gap (an order paid but never delivered...). Long cells are
    cut and the panel is bounded (_Budget)."""
    db = view.get("database")
    if not db:
        return {"on": False}
    budget = _Budget(live)
    rec = db.get("reconcile")
    checks: list[int] = []
    rows = []
    gaps = 0
    if rec and rec.get("rows"):
        checks = list(rec.get("checks") or [])
        for i, r in enumerate(rec["rows"]):
            gap = any(r[k] == 0 for k in checks)
            gaps += gap
            cells = budget.row(RECONCILE_TABLE, i, r)
            if cells is not None:
                rows.append({"cells": cells, "gap": gap})
    tables = []
    for n, t in db["tables"].items():
        shown = [c for c in (budget.row(n, i, r) for i, r in enumerate(t["rows"])) if c is not None]
        tables.append({"name": n, "columns": t["columns"], "rows": shown})
    return {
        "on": True,
        "tables": tables,
        "in_transaction": db.get("in_transaction", False),
        "left_out": budget.left_out,
        "page_chars": limits.limit("db_page_chars"),
        "reconcile": {
            "title": db.get("reconcile_title") or {},
            "columns": rec["columns"],
            "checks": checks,
            "rows": rows,
            "error": rec.get("error"),
            "gaps": gaps,
        }
        if rec
        else None,
    }


def cell(view: Mapping[str, Any], table: str, row: int, col: int) -> Any:
    """One cell of the database panel in full ("show all"); KeyError or IndexError when there is no such cell."""
    db = view["database"]
    rows = db["reconcile"]["rows"] if table == RECONCILE_TABLE else db["tables"][table]["rows"]
    return rows[row][col]


def race_endings(live: Any) -> list[dict[str, Any]]:
    """Notices beside the checker's: which ending of the AddOffsetsToTxn / AddPartitionsToTxn race each fenced
    kafka-clients application took (issue 31 item 6; simserver/clients.py's race_endings), at the step its fence
    was answered in."""
    from playground.session import external

    return [
        {
            "rule": "race-ending",
            "anomaly": None,
            "notice": True,
            "kind": f"race_{e['ending']}",
            "params": cut.strings({"actor": e["actor"], "txid": e["transactional_id"] or ""}, FINDING_CHARS, 1),
            "steps": [max(0, live.step_of(int(e["n"])) - 1)],
        }
        for e in external.race_endings(live.backend)
    ]


def anomalies(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    """What the anomaly checker finds in the session's history (playground/scenario/anomalies.py), each finding with the
    steps it names (the time slider goes there): the alarms first, then what the application was told (notices), at
    most ANOMALIES_SHOWN. The session's checker is fed as the log grows; an earlier step of a long session (a
    moment, built anew) is not checked again past ANOMALIES_MOMENT_MAX."""
    from playground.session.history import findings

    pipelines = [p.to_dict() for p in live.pipelines]
    if live.moment is not None and live.moment > ANOMALIES_MOMENT_MAX and live.anomalies is None:
        return {"deferred": ANOMALIES_MOMENT_MAX, "findings": [], "pipelines": pipelines}
    found = findings(live, view)
    ordered = [f for f in found if not f.notice] + [f for f in found if f.notice]
    shown = [
        {
            "rule": f.rule,
            "anomaly": f.anomaly,
            "notice": f.notice,
            "kind": f.kind,
            # values, actors and records as the checker names them: a client's may be any length
            "params": cut.strings(f.params, FINDING_CHARS, LISTED_MAX),
            "steps": f.steps,
        }
        for f in ordered
    ] + race_endings(live)
    return {
        "deferred": 0,
        # what the checker judges as consume-transform-produce, and the topics a driver may declare one between
        "pipelines": pipelines,
        "topics": sorted({tp.rpartition("-")[0] for tp in view.get("partitions") or ()} - {""})[:TOPICS_LISTED],
        "moment": live.moment is not None,
        "findings": shown[:ANOMALIES_SHOWN],
        "more": max(0, len(shown) - ANOMALIES_SHOWN),
        "alarms": sum(1 for f in found if not f.notice),
    }
