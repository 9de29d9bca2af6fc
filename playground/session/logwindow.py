"""A window of one partition's log, anywhere in it: what a page shows past the newest entries the session's view
holds (issue 30: "earlier: offsets 0-41,203 not shown" and a link to them), and one record in full.

The entries are the view's (engine/backend.py, `view()`'s "log": offset, key, value, producer id, epoch, sequence,
transactional, and the fate the dashboard colours by). On the simulator a window is read from the partition's log
itself from its first offset on, so a page of the oldest records of a long log costs what a page of the newest
does; a backend that only has its view (a real cluster's observer, a detached session) is read through its view.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from playground.engine.backend import WHOLE_LOG
from playground.session import external
from playground.session.live import Live


class NoSuchPartition(LookupError):
    pass


def _sim_log(live: Live, tp: str) -> Any | None:
    """The simulator's log of `tp` (None: the backend is not the simulator); NoSuchPartition for an internal or
    unknown partition."""
    cluster = getattr(external.inner_backend(live.backend), "cluster", None)
    if cluster is None or not hasattr(cluster, "user_topics"):
        return None
    topic, _, n = tp.rpartition("-")
    if topic not in cluster.user_topics() or not n.isdigit() or int(n) >= cluster.partition_count(topic):
        raise NoSuchPartition(tp)
    return cluster.log(tp)


def _entry(offset: int, batch: Any, j: int) -> dict[str, Any]:
    """One offset as the view shows it (sim/observation.py's entries, with the fate)."""
    if batch.control is not None:
        return {
            "offset": offset,
            "control": batch.control,
            "producer_id": batch.producer_id,
            "epoch": batch.epoch,
            "fate": "marker",
        }
    return {
        "offset": offset,
        "key": batch.key_at(j),
        "value": batch.values[j],
        "producer_id": batch.producer_id,
        "epoch": batch.epoch,
        "sequence": batch.base_sequence + j if batch.base_sequence >= 0 else -1,
        "transactional": batch.transactional,
        "fate": batch.fate(),
    }


def read(live: Live, tp: str, start: int, limit: int) -> dict[str, Any]:
    """At most `limit` entries of `tp` from offset `start` (from the log start offset when it is before it), and the
    partition's marks: log start offset, high watermark, last stable offset, log end offset."""
    log = _sim_log(live, tp)
    if log is not None:
        first = max(start, log.log_start_offset)
        entries = [_entry(o, b, j) for o, b, j in islice(log.entries(first), max(0, limit))] if limit else []
        return {
            "entries": entries,
            "log_start_offset": log.log_start_offset,
            "high_watermark": log.high_watermark,
            "last_stable_offset": log.last_stable_offset,
            "log_end_offset": log.log_end_offset,
        }
    part = live.backend.view(WHOLE_LOG).get("partitions", {}).get(tp)
    if part is None:
        raise NoSuchPartition(tp)
    hw = part.get("high_watermark", 0)
    log_start = part.get("log_start_offset", 0)
    entries = [e for e in part.get("log", []) if e["offset"] >= max(start, log_start)][: max(0, limit)]
    return {
        "entries": entries,
        "log_start_offset": log_start,
        "high_watermark": hw,
        "last_stable_offset": part.get("last_stable_offset", hw),
        "log_end_offset": part.get("log_end_offset", hw),
    }


def record(live: Live, tp: str, offset: int) -> dict[str, Any] | None:
    """The entry at `offset` of `tp` (None: no record there, or a marker)."""
    entries = read(live, tp, offset, 1)["entries"]
    entry: dict[str, Any] = entries[0] if entries else {}
    if not entry or entry["offset"] != offset or entry.get("control"):
        return None
    return entry
