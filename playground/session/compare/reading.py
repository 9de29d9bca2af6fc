"""One side of a comparison read after every step, incrementally: the flat list of fields the comparison looks at
(the step's outcome and the wire errors it met, each producer's epoch and client state, each transactional id's
`__transaction_state` entry, each partition's COMMIT/ABORT markers, HW and LSO, the scenario database's
reconciliation, what each consumer got), each value bounded.

Follows what a session's panels show (the simulator's view(), the "database vs Kafka" panel's reconciliation) and
reads the logs and consumers as the observation does (scenario/run.py: observe() after settle()). What grows with the
history is read only as far as it is new, so a step costs the same at step 10 and at step 500.
"""

from __future__ import annotations

import hashlib
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop as N_

from playground.engine.spec import CONSUMER, ActorSpec
from playground.scenario.database import WithDatabase

NONE = "—"
MAX_SHOWN = 20  # items of a list a field shows (a partition's markers, what a consumer got): the newest
MAX_VALUE_CHARS = 500  # of a value (a record's value is up to 1 KiB, a reconciliation's row 16 KiB): the rest digested


# ----------------------------------------------------------------------------------------------- one side
@dataclass(frozen=True)
class Field:
    """One thing to compare: `key` is stable across steps; its group and name are what the page shows, kept as
    messages to translate when shown (a comparison serves every language): `*_msg` with `*_arg` as its %(name)s,
    or, when `*_msg` is empty, `*_arg` as it is (a partition, a transactional id)."""

    key: str
    group_msg: str
    name_msg: str
    group_arg: str = ""
    name_arg: str = ""

    @property
    def group(self) -> str:
        return _label(self.group_msg, self.group_arg)

    @property
    def name(self) -> str:
        return _label(self.name_msg, self.name_arg)


def _label(msg: str, arg: str) -> str:
    if not msg:
        return arg
    return str(_(msg) % {"name": arg} if arg else _(msg))


THIS_STEP = N_("this step")
OUTCOME = Field("outcome", THIS_STEP, N_("outcome"))
WIRE = Field("wire", THIS_STEP, N_("errors on the wire"))


def _wire(entry: Mapping[str, Any]) -> str:
    from playground.sim.errors import CODES

    error = entry["error"]
    code = CODES.get(error)
    return f"{entry['rpc']} {error}" + (f" ({code})" if code is not None else "")


def _values(values: Sequence[Any]) -> str:
    return ", ".join(NONE if v is None else str(v) for v in values) or NONE


class _Tail:
    """A list a field shows that grows with the history (a partition's markers, what a consumer got): how long it is,
    its newest MAX_SHOWN items, and a digest of all of it, kept as items come. A longer list is shown as its length,
    its newest items and the digest, so that two lists that differ anywhere still differ on the page."""

    def __init__(self) -> None:
        self.count = 0
        self.newest: deque[str] = deque(maxlen=MAX_SHOWN)
        self.digest = hashlib.blake2b(digest_size=4)

    def add(self, item: str) -> None:
        self.count += 1
        self.newest.append(item)
        self.digest.update(item.encode() + b"\x1f")

    def text(self, sep: str) -> str:
        if not self.count:
            return NONE
        if self.count <= MAX_SHOWN:
            return sep.join(self.newest)
        return f"({self.count:,}) …{sep}{sep.join(self.newest)} #{self.digest.hexdigest()}"


class _Reader:
    """One side's fields after each command, from the simulator. What the cluster's size bounds (producers,
    transactions, watermarks, the last 200 RPCs: view() with a window of one record or none) is read anew each time;
    what grows with the history (every partition's markers, what every consumer got) only as far as it is new, into
    _Tails: a step costs the same at step 10 and at step 500, whatever the logs hold."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        # the simulator itself (a comparison runs on nothing else): no second reconciliation, and it settles
        self.inner: Any = backend.inner if isinstance(backend, WithDatabase) else backend
        self.seq = -1  # the last RPC seen
        self.since: dict[str, int] = {}  # per partition: the next offset to read
        self.markers: dict[str, _Tail] = {}
        self.got: dict[str, dict[str, _Tail]] = {}
        self.received: dict[str, int] = {}  # per consumer: the records it got, as far as read

    def read(self, actors: Mapping[str, ActorSpec], outcome: str | None) -> list[tuple[Field, str]]:
        """Everything the comparison looks at, right now, in the order the page shows it."""
        view = self.backend.view(log_limit=1)
        out: list[tuple[Field, str]] = [
            (OUTCOME, "" if outcome is None else outcome),
            (WIRE, self._wire(view, outcome)),
        ]
        for name, p in view.get("producers", {}).items():
            group = N_("producer %(name)s")
            error = p.get("last_error") or {}
            out.append((Field(f"producer.{name}.epoch", group, N_("epoch"), name), _or_none(p.get("epoch"))))
            out.append((Field(f"producer.{name}.state", group, N_("client state"), name), str(p.get("state") or NONE)))
            out.append(
                (Field(f"producer.{name}.error", group, N_("last error"), name), str(error.get("error") or NONE))
            )
        for txid, t in sorted(view.get("transactions", {}).items()):
            group = "__transaction_state " + txid
            out.append((Field(f"txn.{txid}.state", "", N_("state"), group), str(t.get("state") or NONE)))
            out.append((Field(f"txn.{txid}.epoch", "", N_("epoch"), group), _or_none(t.get("epoch"))))
        # The logs and what consumers got, once in-flight work has finished (a commit's markers are written after it
        # returns), as observe() reads them: what the producers and the coordinator said is read before, as it was.
        self.inner.settle()
        settled = self.inner.view(log_limit=0)
        partitions = settled.get("partitions", {})
        self._read_markers(partitions)
        for tp in sorted(partitions):
            part = partitions[tp]
            markers = self.markers.get(tp, _Tail()).text("; ")
            out.append((Field(f"log.{tp}.markers", "", N_("COMMIT/ABORT markers"), tp), markers))
            out.append((Field(f"log.{tp}.hw", "", N_("high watermark"), tp), str(part.get("high_watermark"))))
            out.append((Field(f"log.{tp}.lso", "", "", tp, "LSO"), str(part.get("last_stable_offset"))))
        out.extend(_reconciliation(view))
        consumers = settled.get("consumers", {})
        self._read_received(consumers)
        for name, spec in actors.items():
            if spec.kind != CONSUMER:
                continue
            got = NONE
            if name in consumers:
                tails = self.got.get(name, {})
                tps = {tp for tp in partitions if tp.rpartition("-")[0] in spec.topics} | set(tails)
                got = " · ".join(f"{tp}: {tails.get(tp, _Tail()).text(', ')}" for tp in sorted(tps)) or NONE
            out.append((Field(f"consumer.{name}.got", "", N_("got"), f"{spec.isolation_level} {name}"), got))
        return out

    def _wire(self, view: Mapping[str, Any], outcome: str | None) -> str:
        """The errors the brokers answered during the step (the RPCs after the last one seen)."""
        wire: list[str] = []
        top = self.seq
        for entry in view.get("timeline", []):
            top = max(top, int(entry.get("seq", 0)))
            if entry.get("seq", 0) > self.seq and entry.get("error") and entry.get("direction") == "response":
                text = _wire(entry)
                if text not in wire:
                    wire.append(text)
        self.seq = top
        return "; ".join(wire) if outcome is not None else ""

    def _read_markers(self, partitions: Mapping[str, Any]) -> None:
        for tp, part in partitions.items():
            if int(part.get("log_end_offset", 0)) < self.since.get(tp, 0):  # the log was cut: read it again
                self.since[tp], self.markers[tp] = 0, _Tail()
        for tp, entries in self.inner.log_entries(self.since).items():
            for e in entries:
                if e.get("control"):  # "epoch" is translated when shown (_shown): values are in no language
                    self.markers.setdefault(tp, _Tail()).add(f"{e['control']} @{e['offset']} · epoch {e.get('epoch')}")
            if entries:
                self.since[tp] = int(entries[-1]["offset"]) + 1

    def _read_received(self, consumers: Mapping[str, Any]) -> None:
        """What each consumer got since the last step: its last poll's records (the step's), read from the newest
        of what it received; anything else (it got fewer than before: it started over) is read again whole."""
        for name, c in consumers.items():
            total, before = int(c.get("received_total", 0)), self.received.get(name, 0)
            if total == before:
                continue
            polled = self.inner.polled(name) if total > before else []
            if polled and len(polled) == total - before:
                per_tp = Counter(tp for tp, _offset in polled)
                newest = self.inner.view(log_limit=max(per_tp.values()))["consumers"][name]["received"]
                for tp, n in per_tp.items():
                    for record in newest.get(tp, [])[-n:]:
                        self.got.setdefault(name, {}).setdefault(tp, _Tail()).add(_or_none(record.get("value")))
            else:
                self.got[name] = {}
                for tp, values in self.inner.observe().get("consumers", {}).get(name, {}).items():
                    tail = self.got[name].setdefault(tp, _Tail())
                    for value in values:
                        tail.add(_or_none(value))
            self.received[name] = total


def _reconciliation(view: Mapping[str, Any]) -> list[tuple[Field, str]]:
    """The scenario's reconciliation query, as the "database vs Kafka" panel runs it: how many rows disagree, and
    which (the query's rows are at most MAX_ROWS_SHOWN); or its error."""
    rec = (view.get("database") or {}).get("reconcile")
    group = N_("database vs Kafka")
    out: list[tuple[Field, str]] = []
    if rec and rec.get("error"):  # it failed (its statement limit, ...): as the panel says it
        out.append((Field("db.error", group, N_("reconciliation query")), str(rec["error"])))
    if rec and rec.get("columns"):
        checks = list(rec.get("checks") or [])
        gaps = [row for row in rec.get("rows") or [] if any(row[i] == 0 for i in checks)]
        out.append((Field("db.gaps", group, N_("rows where they disagree")), str(len(gaps))))
        columns = ", ".join(rec["columns"])
        out.append((Field("db.gap_rows", group, "", "", columns), " · ".join(_values(row) for row in gaps) or NONE))
    return out


def _bounded(value: str) -> str:
    """A value as kept: its first MAX_VALUE_CHARS characters, and for a longer one how many more and a digest of
    all of it (two values that differ anywhere still differ)."""
    if len(value) <= MAX_VALUE_CHARS:
        return value
    digest = hashlib.blake2b(value.encode(), digest_size=4).hexdigest()
    return f"{value[:MAX_VALUE_CHARS]}… (+{len(value) - MAX_VALUE_CHARS:,}) #{digest}"


def _or_none(value: Any) -> str:
    return NONE if value is None else str(value)
