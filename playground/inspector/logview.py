"""One partition's log, read in bounded windows, and what consumers would get from it.

Pure functions over decoded entries (playground/kafka/wire.py `LogEntry`, control batches included); no I/O.

* Windows: the log around the last stable offset and the log's end (plus one from a chosen offset), each at most
  INSPECTOR_WINDOW_RECORDS records; never the whole log.
* Transactions in the window: a producer's transactional data up to its next COMMIT/ABORT marker (markers carry
  the producer id; a marker closes every open batch of that producer on the partition, as the broker's
  ProducerStateManager completes the producer's ongoing transaction).
* Consumption follows the Java consumer (clients' CompletedFetch / FetchCollector): read_uncommitted gets every
  data record up to the high watermark; read_committed gets records below the LSO only, and drops the batches of
  aborted transactions using the abort index, the list of (producer id, first offset) of aborted transactions the
  broker sends with a read_committed Fetch (the log's .txnindex, built from ABORT markers). Here that list is
  rebuilt from the markers in the window: every ABORT marker gives (its producer id, the first offset of that
  producer's transaction); a transaction whose first offset lies before the window counts from the window's start.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from playground.kafka.wire import LogEntry


@dataclass
class Window:
    start: int
    end: int  # exclusive
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "reasons": list(self.reasons)}


def plan_windows(
    log_start: int, lso: int, hw: int, *, records: int, before_lso: int, from_offset: int | None = None
) -> list[Window]:
    """The offset ranges to read: [LSO - before, LSO + records), [HW - records, HW), and [from, from + records)
    when a consumer position is asked for; clipped to [log start, HW) and merged where they touch."""
    if hw <= log_start:
        return []
    ranges = [Window(max(log_start, hw - records), hw, ["end"])]
    if lso < hw:
        ranges.append(Window(max(log_start, lso - before_lso), min(hw, max(lso, log_start) + records), ["lso"]))
    if from_offset is not None:
        s = min(max(log_start, from_offset), hw)
        if s < hw:
            ranges.append(Window(s, min(hw, s + records), ["from_offset"]))
    ranges.sort(key=lambda w: w.start)
    merged: list[Window] = []
    for w in ranges:
        if merged and w.start <= merged[-1].end:
            merged[-1].end = max(merged[-1].end, w.end)
            merged[-1].reasons += [r for r in w.reasons if r not in merged[-1].reasons]
        else:
            merged.append(w)
    return merged


def gaps_between(windows: list[Window]) -> list[dict[str, int]]:
    return [{"start": a.end, "end": b.start} for a, b in itertools.pairwise(windows) if b.start > a.end]


def producer_kind(e: LogEntry) -> str:
    if e.transactional:
        return "transactional"
    return "idempotent" if e.producer_id >= 0 else "plain"


@dataclass
class Span:
    """A transaction as the partition sees it: a producer's transactional data and the marker that ends it."""

    producer_id: int
    epochs: list[int]
    first_offset: int | None  # None: began before what was read (see first_bound)
    first_bound: int  # offsets of this transaction are >= this (window start when it began before the window)
    data_offsets: list[int]
    first_timestamp_ms: int | None = None
    last_timestamp_ms: int | None = None
    outcome: str = "open"  # COMMIT | ABORT | open | unknown (its marker may lie in an unread gap)
    marker_offset: int | None = None
    marker_epoch: int | None = None
    coordinator_epoch: int | None = None
    marker_timestamp_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "producer_id": self.producer_id,
            "epochs": self.epochs,
            "first_offset": self.first_offset,
            "began_before_window": self.first_offset is None,
            "data_offsets": self.data_offsets,
            "outcome": self.outcome,
            "marker_offset": self.marker_offset,
            "marker_epoch": self.marker_epoch,
            "coordinator_epoch": self.coordinator_epoch,
            "first_timestamp_ms": self.first_timestamp_ms,
            "last_timestamp_ms": self.last_timestamp_ms,
            "marker_timestamp_ms": self.marker_timestamp_ms,
        }


def transactions(
    entries: list[LogEntry], windows: list[Window], hw: int, open_starts: dict[int, int] | None = None
) -> list[Span]:
    """The transactions in the entries (sorted by offset, read in `windows`). `open_starts`: producer id -> start
    offset of its open transaction (DescribeProducers' CurrentTxnStartOffset), the broker's word on which are open."""
    open_starts = open_starts or {}
    spans: list[Span] = []
    current: dict[int, Span] = {}
    last_marker: dict[int, int] = {}
    win_starts = [w.start for w in windows]
    w_index = 0
    for e in entries:
        # crossing into the next window: markers may sit in the unread gap, so what was open is now unknown,
        # except transactions the broker says are still open from before the gap
        while w_index + 1 < len(windows) and e.offset >= windows[w_index + 1].start:
            w_index += 1
            for pid, span in list(current.items()):
                start = open_starts.get(pid)
                if start is None or (span.first_offset is not None and span.first_offset < start):
                    span.outcome = "unknown"
                    spans.append(span)
                    del current[pid]
        if e.control:
            ended = current.pop(e.producer_id, None)
            if ended is None:
                # a marker of a transaction whose data lies before the window (or in a gap)
                bound = last_marker.get(e.producer_id, win_starts[w_index] - 1) + 1
                ended = Span(e.producer_id, [], None, max(bound, win_starts[w_index]), [])
            ended.outcome = e.control
            ended.marker_offset = e.offset
            ended.marker_epoch = e.epoch
            ended.coordinator_epoch = e.coordinator_epoch
            ended.marker_timestamp_ms = e.timestamp_ms
            spans.append(ended)
            last_marker[e.producer_id] = e.offset
            continue
        if not e.transactional:
            continue
        found = current.get(e.producer_id)
        if found is None:
            span = Span(e.producer_id, [], e.offset, e.offset, [], first_timestamp_ms=e.timestamp_ms)
            current[e.producer_id] = span
        else:
            span = found
        if e.epoch not in span.epochs:
            span.epochs.append(e.epoch)
        span.data_offsets.append(e.offset)
        span.last_timestamp_ms = e.timestamp_ms
    reaches_hw = bool(windows) and windows[-1].end >= hw
    for pid, span in current.items():
        last_window_start = windows[-1].start if windows else 0
        contiguous = reaches_hw and (span.data_offsets[-1] if span.data_offsets else 0) >= last_window_start
        span.outcome = "open" if (pid in open_starts or contiguous) else "unknown"
        spans.append(span)
    spans.sort(key=lambda s: (s.first_bound, s.producer_id))
    return spans


def fates(entries: list[LogEntry], spans: list[Span]) -> dict[int, str]:
    """offset -> plain | committed | aborted | open | unknown | marker."""
    out: dict[int, str] = {}
    by_offset = {o: s for s in spans for o in s.data_offsets}
    names = {"COMMIT": "committed", "ABORT": "aborted", "open": "open", "unknown": "unknown"}
    for e in entries:
        if e.control:
            out[e.offset] = "marker"
        elif not e.transactional:
            out[e.offset] = "plain"
        else:
            s = by_offset.get(e.offset)
            out[e.offset] = names[s.outcome] if s else "unknown"
    return out


def abort_index(spans: list[Span]) -> list[tuple[int, int]]:
    """(first offset, producer id) of every aborted transaction in the window, sorted: what the broker's abort
    index would answer for this range."""
    return sorted((s.first_bound, s.producer_id) for s in spans if s.outcome == "ABORT")


def consume(
    entries: list[LogEntry],
    spans: list[Span],
    *,
    from_offset: int,
    lso: int,
    hw: int,
    windows: list[Window],
    render: Callable[[bytes | None], str | None],
) -> dict[str, Any]:
    """What a read_uncommitted and a read_committed consumer positioned at `from_offset` would get, within the
    windows read. Offsets the window does not cover are listed as gaps, never guessed."""
    todo = [e for e in entries if e.offset >= from_offset]

    def rec(e: LogEntry) -> dict[str, Any]:
        return {
            "offset": e.offset,
            "key": render(e.key),
            "value": render(e.value),
            "producer_id": e.producer_id,
            "producer_epoch": e.epoch,
            "transactional": e.transactional,
        }

    uncommitted = [rec(e) for e in todo if not e.control and e.offset < hw]
    # read_committed, as CompletedFetch.nextFetchedRecord does: the aborted transactions starting at or before a
    # batch make its producer id "aborted" until that producer's ABORT marker; control batches are never returned
    aborted = abort_index(spans)
    aborted_pids: set[int] = set()
    i = 0
    committed, dropped, uncertain = [], [], []
    unknown = {o for s in spans if s.outcome == "unknown" for o in s.data_offsets}
    for e in todo:
        if e.offset >= lso:
            break  # the broker returns nothing at or past the LSO to read_committed
        if e.producer_id >= 0:
            while i < len(aborted) and aborted[i][0] <= e.offset:
                aborted_pids.add(aborted[i][1])
                i += 1
            if e.control:
                if e.control == "ABORT":
                    aborted_pids.discard(e.producer_id)
                continue
            if e.transactional and e.producer_id in aborted_pids:
                dropped.append(e.offset)
                continue
        elif e.control:
            continue
        if e.offset in unknown:
            uncertain.append(e.offset)
        committed.append(rec(e))
    covered = [w for w in windows if w.end > from_offset]
    gaps = gaps_between(covered)
    if covered and covered[0].start > from_offset:
        gaps.insert(0, {"start": from_offset, "end": covered[0].start})
    return {
        "from_offset": from_offset,
        "read_uncommitted": uncommitted,
        "read_committed": committed,
        "dropped_as_aborted": dropped,
        "held_back_by_lso": [r["offset"] for r in uncommitted if r["offset"] >= lso],
        "uncertain": uncertain,  # transactional records whose marker lies in an unread gap
        "not_read": gaps,
        "last_stable_offset": lso,
        "high_watermark": hw,
    }


def entry_dict(e: LogEntry, fate: str, render: Callable[[bytes | None], str | None]) -> dict[str, Any]:
    d: dict[str, Any] = {
        "offset": e.offset,
        "producer_id": e.producer_id,
        "producer_epoch": e.epoch,
        "transactional": e.transactional,
        "timestamp_ms": e.timestamp_ms,
        "fate": fate,
    }
    if e.control:
        d.update(kind="control", control=e.control, coordinator_epoch=e.coordinator_epoch)
    else:
        d.update(kind="data", producer=producer_kind(e), sequence=e.sequence, key=render(e.key), value=render(e.value))
    return d


def offsets_in(entries: list[LogEntry], lo: int, hi: int) -> list[LogEntry]:
    offs = [e.offset for e in entries]
    return entries[bisect.bisect_left(offs, lo) : bisect.bisect_left(offs, hi)]


@dataclass
class PartitionRead:
    """What one inspection read of a partition: marks, windows, entries, transactions, producer states."""

    topic: str
    partition: int
    leader: int | None
    log_start_offset: int
    last_stable_offset: int
    high_watermark: int
    windows: list[Window]
    entries: list[LogEntry]
    spans: list[Span]
    producers: list[dict[str, Any]] | None  # DescribeProducers; None when the broker refused (see error)
    error: str | None = None

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"
