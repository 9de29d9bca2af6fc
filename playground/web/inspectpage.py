"""The inspector's web page (/inspect/): who may open it, what a viewer picked, and what each section draws.

* The capability: INSPECTOR_KEY from settings. A browser presents it once (a form), it is compared in constant time,
  and the browser keeps an HMAC of it in an HttpOnly cookie (the key itself never sits in a cookie jar; changing
  INSPECTOR_KEY locks every browser out). Without it every inspector route answers 403, HTTP and websocket alike.
* A selection: topics (all their partitions, or some), transactional ids, offsets to read consumers from, or "the
  ongoing transactions" (ListTransactions); carried in the query string, so a page's address is its selection, and
  checked against the allow-lists by the inspector itself (RefusedError).
* Sections: the report `ClusterInspector.inspect` returns, shaped for the templates (contexts) and rendered into
  fragments with stable ids, so that live updates are htmx out-of-band swaps of the sections that changed.
  Partition logs are drawn with the session page's own cells (templatetags.playground.strip_cells).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop as N_

from playground.inspector.config import InspectorError, load_settings
from playground.inspector.toscenario import txid_names
from playground.session import limits
from playground.web.templatetags import playground as tags

COOKIE = "inspector_key"
COOKIE_MAX_AGE_S = 7 * 24 * 3600  # an operator's week; the key is asked again after that
TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")  # Kafka's own rule (Topic.validate)
LIST_MAX = 64  # topics, partitions, ids or offsets in one selection
PALETTE = 8  # producer colours, as on the session page (CSS pc0..pc7)
TABLE_ROWS = 12  # records in a partition's read_committed / read_uncommitted table
STRIP_TAIL = 24  # cells drawn at the end of a window read (its newest records) ...
STRIP_AROUND = (6, 10)  # ... and before/after the LSO and a chosen offset; the rest of a window is "…N"
ONGOING_LINKS = 20  # ongoing transactions whose "watch" link names the topics they write to (DescribeTransactions)
TIMELINE_ROWS = 24  # __transaction_state records shown per transactional id: the newest, never scrolled away


# ------------------------------------------------------------------------------------------------ capability


def off_reason() -> str | None:
    """Why the inspector is off on this server (None: it is on)."""
    if not (getattr(settings, "KAFKA_BOOTSTRAP_SERVERS", "") or "").strip():
        return _("No Kafka cluster is configured: the server's KAFKA_BOOTSTRAP_SERVERS is empty.")
    if not getattr(settings, "INSPECTOR_KEY", ""):
        return _("No INSPECTOR_KEY is set in the server's settings: without a key nobody may open the inspector.")
    return None


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def key_matches(presented: str | None) -> bool:
    """Whether a presented key is INSPECTOR_KEY: digests compared in constant time (the length leaks nothing)."""
    key = getattr(settings, "INSPECTOR_KEY", "")
    if not key or not presented or len(presented) > 1024:
        return False
    return hmac.compare_digest(_digest(presented), _digest(key))


def cookie_value() -> str:
    """What the browser keeps: an HMAC of the key, not the key."""
    key = getattr(settings, "INSPECTOR_KEY", "").encode("utf-8")
    return hmac.new(key, b"kafka-txn-playground inspector cookie v1", hashlib.sha256).hexdigest()


def authorized(cookie: str | None) -> bool:
    if off_reason() or not cookie or len(cookie) > 128:
        return False
    return hmac.compare_digest(cookie.encode(), cookie_value().encode())


def wrong_key(client: str, key: str) -> None:
    """A wrong key: LimitExceeded (a 429) once the client has tried `inspector_keys_per_minute` different ones in
    the last minute, counted in the database (every server process, concurrent guesses included). The right key is
    never refused (key_matches is asked first), so a guesser behind the same address locks nobody out."""
    name = "inspector_keys_per_minute"
    if limits.over(name, client):
        raise limits.reached(name)
    if limits.first_time(name, client, hashlib.sha256(key.encode()).hexdigest()[:32]):
        limits.take(name, client)


# ------------------------------------------------------------------------------------------------ selection


class SelectionError(InspectorError):
    """A malformed selection (the query string), not a cluster problem."""


@dataclass(frozen=True)
class Selection:
    """What a viewer watches: the page's query string (?topic=T&partition=T:0&txid=ID&from=T:0:42, or ?ongoing=1)."""

    topics: tuple[str, ...] = ()
    partitions: tuple[tuple[str, int], ...] = ()  # some partitions only (their topics are in `topics`)
    txids: tuple[str, ...] = ()
    from_offsets: tuple[tuple[str, int, int], ...] = ()
    ongoing: bool = False

    @classmethod
    def from_query(cls, q: Mapping[str, Iterable[str]]) -> Selection:
        """From a query's lists of values (QueryDict.lists(), parse_qs). Raises InspectorError on a malformed one;
        what is allowed is the inspector's to say (RefusedError)."""

        def values(name: str) -> list[str]:
            got = [v.strip() for v in q.get(name, []) if v and v.strip()]
            if len(got) > LIST_MAX:
                raise SelectionError(_("at most %(n)s values of %(name)s") % {"n": LIST_MAX, "name": name})
            return got

        def tp(text: str, n: int) -> list[str]:
            parts = text.rsplit(":", n)  # topic names have no ':' (Kafka allows [a-zA-Z0-9._-])
            if len(parts) != n + 1 or not all(p.isascii() and p.isdigit() and len(p) <= 12 for p in parts[1:]):
                raise SelectionError(
                    _("%(text)s: expected %(form)s")
                    % {"text": repr(text), "form": "TOPIC:PARTITION:OFFSET" if n == 2 else "TOPIC:PARTITION"}
                )
            return parts

        topics = values("topic")
        partitions = []
        for v in values("partition"):
            t, p = tp(v, 1)
            partitions.append((t, int(p)))
            if t not in topics:
                topics.append(t)
        froms = []
        for v in values("from"):
            t, p, o = tp(v, 2)
            froms.append((t, int(p), int(o)))
        bad = [t for t in topics + [f[0] for f in froms] if not TOPIC_NAME.match(t)]
        if bad:
            raise SelectionError(
                _("%(name)s is not a Kafka topic name (letters, digits, '.', '_', '-'; at most 249)")
                % {"name": repr(bad[0][:80])}
            )
        txids = values("txid")
        if any(len(t) > 1024 for t in txids):
            raise SelectionError(_("a transactional id of more than 1024 characters"))
        ongoing = any(v in ("1", "on", "true") for v in q.get("ongoing", []))
        # an offset only for a partition that is read
        froms = [
            f
            for f in froms
            if f[0] in topics
            and (not partitions or (f[0], f[1]) in partitions or all(p[0] != f[0] for p in partitions))
        ]
        return cls(
            tuple(sorted(set(topics))),
            tuple(sorted(set(partitions))),
            tuple(sorted(set(txids))),
            tuple(sorted(set(froms))),
            ongoing and not topics and not txids,
        )

    @property
    def empty(self) -> bool:
        return not (self.topics or self.txids or self.ongoing)

    def pairs(self, froms: Iterable[tuple[str, int, int]] | None = None) -> list[tuple[str, str]]:
        """The query's (name, value) pairs, with `froms` instead of the selection's own offsets when given."""
        pairs: list[tuple[str, str]] = [("topic", t) for t in self.topics]
        pairs += [("partition", f"{t}:{p}") for t, p in self.partitions]
        pairs += [("txid", t) for t in self.txids]
        pairs += [("from", f"{t}:{p}:{o}") for t, p, o in (self.from_offsets if froms is None else froms)]
        if self.ongoing:
            pairs.append(("ongoing", "1"))
        return pairs

    def query(self, **change: Any) -> str:
        """The canonical query string (with `from` replaced by `change["from"]` when given)."""
        return urlencode(self.pairs(change.get("from")))

    def key(self) -> str:
        return hashlib.blake2b(self.query().encode(), digest_size=12).hexdigest()

    def from_offset(self, topic: str, partition: int) -> int | None:
        return next((o for t, p, o in self.from_offsets if (t, p) == (topic, partition)), None)

    def summary(self) -> str:
        """The selection in a few words, for the page's title bar."""
        if self.ongoing:
            return _("the ongoing transactions")
        parts = []
        for t in self.topics:
            ps = [str(p) for tt, p in self.partitions if tt == t]
            parts.append(
                _("%(topic)s (partition %(partitions)s)") % {"topic": t, "partitions": ", ".join(ps)} if ps else t
            )
        parts += [_("transactional id %(id)s") % {"id": t} for t in self.txids]
        return " · ".join(parts)

    def inspect_kwargs(self) -> dict[str, Any]:
        """ClusterInspector.inspect's (and subscribe's) arguments."""
        parts: dict[str, list[int]] = {}
        for t, p in self.partitions:
            parts.setdefault(t, []).append(p)
        return {
            "topics": list(self.topics),
            "transactional_ids": list(self.txids),
            "partitions": parts or None,
            "from_offsets": {(t, p): o for t, p, o in self.from_offsets} or None,
        }

    def check(self) -> Selection:
        """RefusedError for a topic or id outside the allow-lists (before anything is read)."""
        s = load_settings()
        for t in self.topics:
            s.check_topic(t)
        for t in self.txids:
            s.check_transactional_id(t)
        return self


# ------------------------------------------------------------------------------------------------ the picker


def picker(insp, sel: Selection) -> dict[str, Any]:
    """What the allow-lists let a viewer pick on this cluster: topics with their partitions, transactional ids the
    coordinators know (with their state), and the ongoing transactions (ListTransactions)."""
    s = insp.settings

    def topics(w) -> dict[str, list[int]]:
        # ClusterInspector has no "list topics" of its own; the same read-only client and lock, allowed ones only
        return w.partitions_of([t for t in w.all_topics() if s.topic_allowed(t)])

    known = insp._read(topics)
    txns = sorted(insp.list_transactions(states=()), key=lambda t: t["transactional_id"])
    from playground.inspector.observer import ONGOING_STATES

    ongoing = [t for t in txns if t["state"] in ONGOING_STATES]
    for t in ongoing[:ONGOING_LINKS]:
        # "watch" an ongoing transaction: its id and the (allowed) topics it is writing to right now
        written = {tp[0] for tp in insp.describe_transaction(t["transactional_id"]).get("partitions", [])}
        t["watch"] = urlencode(
            [("topic", x) for x in sorted(written) if s.topic_allowed(x)] + [("txid", t["transactional_id"])]
        )
    return {
        "topics": [
            {
                "name": t,
                "checked": t in sel.topics and not any(x[0] == t for x in sel.partitions),
                "partitions": [{"n": p, "value": f"{t}:{p}", "checked": (t, p) in sel.partitions} for p in ps],
            }
            for t, ps in sorted(known.items())
        ],
        "txids": txns,
        "ongoing": ongoing,
        "patterns": {"INSPECTOR_TOPICS": list(s.topics), "INSPECTOR_TRANSACTIONAL_IDS": list(s.transactional_ids)},
        "bootstrap": s.bootstrap,
    }


def topics_written(report: Mapping[str, Any], allowed) -> list[str]:
    """The allowed topics the report's transactional ids wrote to (their current transaction, their timelines):
    a selection of ids alone is shown with them, so that their records and markers are there to see."""
    seen = {
        tp[0]
        for t in report.get("transactional_ids", [])
        for tp in list(t["current"].get("partitions", [])) + [p for r in t["timeline"] for p in r.get("partitions", [])]
    }
    return sorted(t for t in seen if allowed(t))


# ------------------------------------------------------------------------------------------------ formatting


def hms(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "—"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%H:%M:%S.%f")[:-3]


def age(ms: int | float | None) -> Any:
    """A duration as the page says it, in the language it is rendered in (a report's contexts are built once)."""
    if ms is None:
        return "—"
    return Drawn(lambda: escape(_age_text(ms)))


def _age_text(ms: int | float) -> str:
    s = max(0.0, ms / 1000)
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return _("%(m)s min %(s)s s") % {"m": int(s // 60), "s": int(s % 60)}
    return _("%(h)s h %(m)s min") % {"h": int(s // 3600), "m": int(s % 3600 // 60)}


def dom_id(kind: str, text: str) -> str:
    """An element id for any topic or transactional id (ids may hold characters an id attribute should not)."""
    return f"insp-{kind}-" + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _tps(pairs: Iterable[Iterable[Any]]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in pairs) or "—"


# ------------------------------------------------------------------------------------------------ contexts


def colours(report: Mapping[str, Any]) -> dict[int, int]:
    """A colour per producer id in order of first appearance (as panels.producer_colours does for sessions)."""
    out: dict[int, int] = {}
    for part in report.get("partitions", []):
        for e in part["entries"]:
            pid = e["producer_id"]
            if pid >= 0 and pid not in out:
                out[pid] = len(out) % PALETTE
    return out


def _slot(
    e: Mapping[str, Any], lso: int, hw: int, pc: dict[int, int], names: dict[int, str], from_offset: int | None
) -> dict[str, Any]:
    pid, epoch = e["producer_id"], e["producer_epoch"]
    unnamed = _("transactional id not shown")
    if e["kind"] == "control":
        owner = f"{names.get(pid, unnamed)} · " + _("coordinator epoch %(epoch)s") % {
            "epoch": e.get("coordinator_epoch")
        }
    elif e["transactional"]:
        owner = f"{names.get(pid, unnamed)} · isTransactional: true"
    else:
        owner = _("idempotent") + " · isTransactional: false" if pid >= 0 else "isTransactional: false"
    return {
        "offset": e["offset"],
        "control": e.get("control"),
        "letter": e["control"][0] if e.get("control") else "",
        "fate": e["fate"],
        "text": tags.short(e.get("value"), 9),
        "value": e.get("value"),
        "key": e.get("key"),
        "pid": pid,
        "epoch": epoch,
        "sequence": e.get("sequence"),
        "owner": owner,
        "colour": pc.get(pid),
        "shade": epoch % 3 if epoch >= 0 else 0,
        "cursors": [m for m, v in (("HW", hw), ("LSO", lso)) if v == e["offset"]],
        "consumers": ["from"] if from_offset == e["offset"] else [],
    }


class Drawn:
    """HTML drawn when a template shows it, in the language it is rendered in: a report's contexts are built once
    (the hub's thread) and rendered in each watcher's language."""

    def __init__(self, draw: Callable[[], SafeString]) -> None:
        self.draw = draw

    def __html__(self) -> str:
        return self.draw()

    __str__ = __html__


def _drawn(slots: list[dict[str, Any]], marks: Iterable[int | None]) -> list[int]:
    """Which of a window's cells to draw: its start, its newest STRIP_TAIL, and a few around the LSO and a chosen
    offset. A window holds up to INSPECTOR_WINDOW_RECORDS records for the consumers and the findings; drawing them
    all, for dozens of partitions, every poll, would make each update megabytes of HTML."""
    n = len(slots)
    keep = set(range(min(n, STRIP_AROUND[0]))) | set(range(max(0, n - STRIP_TAIL), n))
    offsets = [c["offset"] for c in slots]
    for mark in marks:
        if mark is not None and offsets and offsets[0] <= mark <= offsets[-1]:
            i = next(k for k, o in enumerate(offsets) if o >= mark)
            keep |= set(range(max(0, i - STRIP_AROUND[0]), min(n, i + STRIP_AROUND[1])))
    return sorted(keep)


def _more(n: int, first: int, last: int, why: str) -> str:
    """`why`: a sentence with the offsets' placeholders (first, last)."""
    return f'<li class="more" title="{escape(why % {"first": first, "last": last})}">…{n}</li>'


def strip_html(
    part: Mapping[str, Any], pc: dict[int, int], names: dict[int, str], from_offset: int | None
) -> SafeString:
    """The partition's cells, window by window: what was not read between them, and what was read but not drawn,
    as "…N" (the offsets are in its hover)."""
    lso, hw = part["last_stable_offset"], part["high_watermark"]
    out: list[str] = []
    previous_end = part["log_start_offset"]
    entries = part["entries"]
    for w in part["windows"]:
        if w["start"] > previous_end:
            out.append(
                _more(
                    w["start"] - previous_end,
                    previous_end,
                    w["start"] - 1,
                    _("offsets %(first)s..%(last)s not read (the inspector reads windows around the LSO and the end)"),
                )
            )
        slots = [_slot(e, lso, hw, pc, names, from_offset) for e in entries if w["start"] <= e["offset"] < w["end"]]
        run: list[dict[str, Any]] = []  # the cells drawn side by side, up to a gap of cells not drawn
        last: int | None = None
        for i in _drawn(slots, (lso, from_offset)):
            if last is not None and i > last + 1:
                out.append(tags.strip_cells({"hidden": 0, "slots": run}))
                run = []
                out.append(
                    _more(
                        i - last - 1,
                        slots[last + 1]["offset"],
                        slots[i - 1]["offset"],
                        _("offsets %(first)s..%(last)s read but not drawn (see the table below and the findings)"),
                    )
                )
            run.append(slots[i])
            last = i
        out.append(tags.strip_cells({"hidden": 0, "slots": run}))
        previous_end = w["end"]
    end = {
        "offset": hw,
        "end": True,
        "cursors": [m for m, v in (("HW", hw), ("LSO", lso)) if v == hw],
        "consumers": ["from"] if from_offset is not None and from_offset >= hw else [],
    }
    out.append(tags.strip_cells({"hidden": 0, "slots": [end]}))
    return mark_safe("".join(out))


def consumer_table(part: Mapping[str, Any]) -> SafeString:
    """What read_uncommitted and read_committed consumers at the chosen offset get, record by record (the session
    page's side-by-side table: ✓ got, ✗ hidden: aborted, ◔ held: behind the LSO)."""
    c = part["consumers"]
    ru = {r["offset"] for r in c["read_uncommitted"]}
    rc = {r["offset"] for r in c["read_committed"]}
    dropped, held = set(c["dropped_as_aborted"]), set(c["held_back_by_lso"])
    data = [e for e in part["entries"] if e["kind"] == "data" and e["offset"] >= c["from_offset"]]
    rows = []
    for e in data[:TABLE_ROWS]:
        o = e["offset"]
        rc_status = "got" if o in rc else "aborted" if o in dropped else "lso" if o in held else "skipped"
        rows.append(
            {
                "offset": o,
                "key": e.get("key"),
                "value": e.get("value"),
                "fate": e["fate"],
                "by": f"PID {e['producer_id']} e{e['producer_epoch']}" if e["producer_id"] >= 0 else "—",
                "cells": [{"status": "got" if o in ru else "skipped"}, {"status": rc_status}],
            }
        )
    t = {
        "tp": f"{part['topic']}-{part['partition']}",
        "lso": part["last_stable_offset"],
        "rows": rows,
        "hidden_rows": 0,
    }
    cols = {
        "columns": [
            {"name": "read_uncommitted", "isolation": "read_uncommitted"},
            {"name": "read_committed", "isolation": "read_committed"},
        ]
    }
    return mark_safe(tags.cmp_table(t, cols))


def partition_context(
    part: Mapping[str, Any], pc: dict[int, int], names: dict[int, str], sel: Selection
) -> dict[str, Any]:
    name = f"{part['topic']}-{part['partition']}"
    ctx: dict[str, Any] = {
        "id": dom_id("p", name),
        "name": name,
        "topic": part["topic"],
        "partition": part["partition"],
        "leader": part["leader"],
        "error": part["error"],
    }
    if part["error"] and not part["windows"] and not part["entries"]:
        return ctx
    c = part["consumers"]
    more = max(
        0, len([e for e in part["entries"] if e["kind"] == "data" and e["offset"] >= c["from_offset"]]) - TABLE_ROWS
    )
    ctx.update(
        log_start=part["log_start_offset"],
        lso=part["last_stable_offset"],
        hw=part["high_watermark"],
        behind=part["high_watermark"] - part["last_stable_offset"],
        windows=", ".join(f"[{w['start']}, {w['end']})" for w in part["windows"]) or "—",
        strip=Drawn(lambda: strip_html(part, pc, names, sel.from_offset(part["topic"], part["partition"]))),
        open=[
            {**o, "age": age(o["age_ms"]), "write_age": age(o["last_write_age_ms"])} for o in part["open_transactions"]
        ],
        from_offset=c["from_offset"],
        chosen=sel.from_offset(part["topic"], part["partition"]),
        table=Drawn(lambda: consumer_table(part)),
        more_rows=more,
        counts={
            "ru": len(c["read_uncommitted"]),
            "rc": len(c["read_committed"]),
            "dropped": len(c["dropped_as_aborted"]),
            "held": len(c["held_back_by_lso"]),
            "uncertain": len(c["uncertain"]),
        },
        not_read=c["not_read"],
        # the "read from offset" form keeps the rest of the selection
        hidden=sel.pairs([f for f in sel.from_offsets if (f[0], f[1]) != (part["topic"], part["partition"])]),
        producers=[{**p, "when": hms(p["last_timestamp"])} for p in part["producers"]],
    )
    return ctx


EVENTS = {  # __transaction_state record -> what it means, in the coordinator's terms (said as _txid.html renders it)
    "init": "InitProducerId",
    "begin": N_("AddPartitionsToTxn (begin)"),
    "add_partitions": "AddPartitionsToTxn",
    "commit_requested": "EndTxn(commit)",
    "abort_requested": "EndTxn(abort)",
    "fenced_by_init": N_("fenced by InitProducerId"),
    "timed_out": N_("aborted: transaction.timeout.ms"),
    "committed": N_("markers written"),
    "aborted": N_("markers written"),
    "expired": "transactional.id.expiration.ms",
    "unchanged": "",
}


def txid_context(t: Mapping[str, Any], report: Mapping[str, Any]) -> dict[str, Any]:
    cur = t["current"]
    rows = [
        {
            "offset": r["offset"],
            "when": hms(r.get("last_update_ms")),
            "event": r["event"],
            "what": EVENTS.get(r["event"], ""),
            "state": r.get("state"),
            "pid": r.get("producer_id"),
            "epoch": r.get("epoch"),
            "partitions": _tps(r.get("partitions", [])),
            "timeout": r.get("timeout_ms"),
        }
        for r in t["timeline"][-TIMELINE_ROWS:]
    ]
    started = cur.get("transaction_start_time_ms")
    return {
        "id": dom_id("t", t["transactional_id"]),
        "txid": t["transactional_id"],
        "state": cur.get("state"),
        "current": cur,
        "partitions": _tps(cur.get("partitions", [])),
        "started": hms(started),
        "duration": age(report["fetched_at_ms"] - started)
        if started and cur.get("state") in ("Ongoing", "PrepareCommit", "PrepareAbort")
        else "—",
        "coordinator": t["coordinator"],
        "rows": rows,
        "hidden_rows": max(0, len(t["timeline"]) - TIMELINE_ROWS),
        "read_from": t["timeline_read_from_offset"],
        "inits": len(t["inits"]),
        "producers": [
            {"tp": tp, "states": [{**p, "when": hms(p["last_timestamp"])} for p in ps]}
            for tp, ps in t["producers"].items()
        ],
    }


def finding_context(f: Mapping[str, Any]) -> dict[str, Any]:
    def shown(k: str, v: Any) -> str:
        if k.endswith("_ms") and isinstance(v, int) and v > 10**12:  # a moment (the broker's clock), not a duration
            return f"{hms(v)} UTC"
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)

    ev = f.get("evidence", {})
    # the evidence the inspector wrote as a sentence: the template says it in its reader's language (|said)
    said = {
        "reason": ((f.get("said") or [None, {}])[1] or {}).get("reason"),
        "threshold_from": ((f.get("why_said") or [None, {}])[1] or {}).get("source"),
        "held_back": _held_back(ev) if "last_stable_offset" in ev else None,
    }
    return {
        **f,
        "when": hms(f.get("time_ms")),
        "evidence_items": [
            {"key": k, "value": said.get(k) or shown(k, v), "said": bool(said.get(k))}
            for k, v in ev.items()
            if v not in (None, [], {})
        ],
    }


def _held_back(ev: Mapping[str, Any]) -> list[Any]:
    return ["held_back", {"tp": f"{ev['topic']}-{ev['partition']}", "lso": ev["last_stable_offset"]}]


GROUP_FINDINGS_SHOWN = 10  # findings listed inside an expanded group (newest first); the JSON report has them all


def group_context(g: Mapping[str, Any]) -> dict[str, Any]:
    shown = g["findings"][:GROUP_FINDINGS_SHOWN]
    return {
        **g,
        "id": dom_id("g", f"{g['kind']}|{g['subject']}"),
        "first": hms(g["first_ms"]),
        "last": hms(g["last_ms"]),
        "items": [finding_context(f) for f in shown],
        "not_listed": g["count"] - len(shown),
    }


def stall_context(f: Mapping[str, Any]) -> dict[str, Any]:
    ev = f["evidence"]
    tp = f"{ev['topic']}-{ev['partition']}"
    return {
        **f,
        "tp": tp,
        "anchor": dom_id("p", tp),
        "open_for": age(ev["open_for_ms"]),
        "threshold": age(ev["threshold_ms"]),
        "aborts_at": hms(ev.get("coordinator_aborts_at_ms")),
        "held_back_said": _held_back(ev),
        # where the threshold comes from, as the finding's why says it (an older report: the English text)
        "threshold_from_said": ((f.get("why_said") or [None, {}])[1] or {}).get("source") or ev.get("threshold_from"),
    }


def max_timeout_minutes(ms: int) -> str:
    """find-hanging's --max-transaction-timeout takes minutes, as a number (TransactionsCommand)."""
    return str(ms // 60_000) if ms % 60_000 == 0 else f"{ms / 60_000:.3f}".rstrip("0")


def contexts(report: Mapping[str, Any], sel: Selection) -> dict[str, Any]:
    """Everything the page's sections draw, from one report (or {"error": ...} when the cluster cannot be read)."""
    if "error" in report:
        return {"error": report["error"]}
    pc, names = colours(report), txid_names(report)
    stalls = [f for f in report["findings"] if f["kind"] == "lso_stall"]
    stalled = {(f["evidence"]["topic"], f["evidence"]["partition"]): f["evidence"]["open_for_ms"] for f in stalls}
    # a partition whose LSO is stalled comes first (longest first): the incident, not the third panel of four
    parts = sorted(
        report["partitions"],
        key=lambda p: (
            (0, -stalled[(p["topic"], p["partition"])]) if (p["topic"], p["partition"]) in stalled else (1, 0)
        ),
    )
    return {
        "status": {
            "bootstrap": report["cluster"]["bootstrap"],
            "brokers": report["cluster"]["brokers"],
            "when": hms(report["fetched_at_ms"]),
            "read_at_ms": report["fetched_at_ms"],
            "elapsed_ms": report["elapsed_ms"],
            "requests": sorted(report["requests"].items()),
            "total": sum(report["requests"].values()),
            "notes": report["notes"],
            "every": report["settings"]["poll_interval_s"],
            "started_from": report["started_from"],
            "transactions": report.get("transactions") or [],
        },
        "partitions": [partition_context(p, pc, names, sel) for p in parts],
        "stalls": [stall_context(f) for f in stalls],
        "groups": [group_context(g) for g in report.get("groups", [])],
        "txids": [txid_context(t, report) for t in report["transactional_ids"]],
        "hanging": [{**h, "when": hms(h["last_timestamp"]), "for": age(h["duration_ms"])} for h in report["hanging"]],
        "findings": [finding_context(f) for f in report["findings"]],
        "max_timeout": age(report["settings"]["max_transaction_timeout_ms"]),
        "max_timeout_minutes": max_timeout_minutes(report["settings"]["max_transaction_timeout_ms"]),
    }


# ------------------------------------------------------------------------------------------------ rendering

# The page's sections (templates _<name>.html), in the order a snapshot sends them; in the two that hold items (a
# partition, a transactional id: their own templates), the items that changed are sent alone.
SECTIONS = ("status", "stalls", "findings", "hanging", "partitions", "txids")
ITEMS = {"partitions": "_partition.html", "txids": "_txid.html"}


def _render(name: str, ctx: Mapping[str, Any], lang: str, **extra: Any) -> str:
    with translation.override(lang):
        return render_to_string(f"playground/inspect/{name}", {**ctx, **extra, "lang": lang})


def render_item(section: str, item: Mapping[str, Any], sel: Selection, lang: str) -> str:
    return _render(ITEMS[section], {"x": item}, lang, sel=sel)


def as_oob(html: str, element_id: str) -> str:
    """An item's fragment as an out-of-band swap of itself (items render once, in place, inside their section)."""
    return html.replace(f'id="{element_id}"', f'id="{element_id}" hx-swap-oob="true"', 1)


def render_section(
    section: str, ctx: Mapping[str, Any], sel: Selection, lang: str, oob: bool = True, **extra: Any
) -> str:
    return _render(f"_{section}.html", ctx, lang, sel=sel, oob=oob, **extra)


@dataclass
class Rendered:
    """One report rendered for one language: each section, and each partition's and id's own fragment."""

    sections: dict[str, str]
    items: dict[str, dict[str, str]]  # section -> element id -> html (an out-of-band swap of itself)

    def snapshot(self) -> str:
        return "".join(self.sections[s] for s in SECTIONS)

    def changes(self, before: Rendered | None) -> str:
        """The fragments that differ from `before` (a whole section when its set of items changed)."""
        if before is None:
            return self.snapshot()
        out = []
        for s in SECTIONS:
            if s in ITEMS and list(self.items[s]) == list(before.items[s]):
                out += [h for k, h in self.items[s].items() if before.items[s].get(k) != h]
            elif self.sections[s] != before.sections[s]:
                out.append(self.sections[s])
        return "".join(out)


def render_all(ctx: Mapping[str, Any], sel: Selection, lang: str, oob_sections: bool = True) -> Rendered:
    """Every section of a report's contexts (each partition and id rendered once, used in place and alone)."""
    items = {s: {x["id"]: render_item(s, x, sel, lang) for x in ctx[s]} for s in ITEMS}
    sections = {}
    for s in SECTIONS:
        extra = {"rendered": [mark_safe(h) for h in items[s].values()]} if s in ITEMS else {}
        sections[s] = render_section(s, ctx, sel, lang, oob=oob_sections, **extra)
    return Rendered(sections, {s: {k: as_oob(h, k) for k, h in d.items()} for s, d in items.items()})


__all__ = [
    "COOKIE",
    "Rendered",
    "Selection",
    "SelectionError",
    "authorized",
    "contexts",
    "key_matches",
    "off_reason",
    "picker",
    "render_all",
    "topics_written",
]
