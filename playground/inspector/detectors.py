"""Findings: what is wrong, with the evidence that shows it (offsets, epochs, producer ids, times).

Stable kinds (the web page and `manage.py inspect --json` key on them):

* `hanging_transaction`: kafka-transactions.sh find-hanging's definition (see hanging.py): an open transaction on
  a partition that its coordinator will never end; the abort command is attached.
* `long_open_transaction`: an open transaction older than INSPECTOR_MAX_TRANSACTION_TIMEOUT_MS that the
  coordinator still tracks (find-hanging leaves these out): it holds the partition's LSO, read_committed consumers
  see nothing past it until the coordinator aborts it. The abort command is attached too.
* `shared_transactional_id`: an InitProducerId bumped the epoch of a transactional id while the previous epoch
  was live: it wrote (or changed its transaction) less than INSPECTOR_LIVE_GAP_S before the bump. Two instances
  with one transactional.id fence each other this way; a crashed instance restarting does too, but only after a
  pause (its restart), which is what the gap tells apart. Evidence: the fenced and new epochs, the fencing abort
  (PrepareAbort at epoch+1, as TransactionCoordinator.handleInitProducerId does over an Ongoing transaction), the
  records it aborted and the ABORT markers, from the partition logs read.
* `frequent_reinit`: more than INSPECTOR_REINIT_MAX_PER_HOUR InitProducerId for one id within an hour, far more
  than deployments cause: instances fencing each other in turn, or a crash loop.
* `interleaved_plain_records`: non-transactional records (producer id -1, or an idempotent producer without a
  transaction) written on a partition inside the offset span of a transaction (its first record to its marker, or
  to the high watermark while it is open): read_committed consumers get them only once the transaction ends, and
  when it aborts they stay while the transaction's own records are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from playground.inspector.logview import PartitionRead, producer_kind

# current conditions (not filtered by --since: they hold now, whenever they began)
CURRENT_KINDS = ("hanging_transaction", "long_open_transaction")
KINDS = (
    "hanging_transaction",
    "long_open_transaction",
    "shared_transactional_id",
    "frequent_reinit",
    "interleaved_plain_records",
)
HOUR_MS = 3_600_000


@dataclass
class Finding:
    kind: str
    subject: str  # a transactional id, or topic-partition
    summary: str  # one line for people
    evidence: dict[str, Any] = field(default_factory=dict)
    time_ms: int | None = None  # when it happened (the coordinator's or the record's clock)
    command: str | None = None  # what an operator would run (shown, never run)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "kind": self.kind,
            "subject": self.subject,
            "summary": self.summary,
            "time_ms": self.time_ms,
            "evidence": self.evidence,
        }
        if self.command:
            d["command"] = self.command
        return d


def _fmt_s(ms: int | float | None) -> str:
    return "?" if ms is None else f"{ms / 1000:.1f} s"


# ------------------------------------------------------------------------------------------------- hanging


def hanging_findings(found: list[dict[str, Any]], show_txid) -> list[Finding]:
    out = []
    for h in found:
        tp = f"{h['topic']}-{h['partition']}"
        txid = h.get("transactional_id")
        shown = txid if txid and show_txid(txid) else (None if not txid else "(not in INSPECTOR_TRANSACTIONAL_IDS)")
        kind = "hanging_transaction" if h["verdict"] == "hanging" else "long_open_transaction"
        coord = h.get("coordinator") or {}
        ev = {
            "topic": h["topic"],
            "partition": h["partition"],
            "producer_id": h["producer_id"],
            "producer_epoch": h["producer_epoch"],
            "coordinator_epoch": h["coordinator_epoch"],
            "start_offset": h["current_txn_start_offset"],
            "last_timestamp_ms": h["last_timestamp"],
            "duration_ms": h["duration_ms"],
            "transactional_id": shown,
            "reason": h["reason"],
            "coordinator_state": coord.get("state"),
            "abort_command_start_offset": h.get("command_start_offset"),
        }
        if kind == "long_open_transaction" and coord.get("transaction_start_time_ms") is not None:
            ev["coordinator_aborts_at_ms"] = coord["transaction_start_time_ms"] + coord.get("transaction_timeout_ms", 0)
        what = "hanging transaction" if kind == "hanging_transaction" else "transaction open past the maximum timeout"
        out.append(
            Finding(
                kind,
                tp,
                f"{tp}: {what} of producer id {h['producer_id']} epoch {h['producer_epoch']} from offset "
                f"{h['current_txn_start_offset']}, last write {_fmt_s(h['duration_ms'])} ago; {h['reason']}",
                ev,
                h["last_timestamp"],
                h.get("command"),
            )
        )
    return out


# ------------------------------------------------------------------------------------------------- shared id


def _epoch_activity(
    parts: dict[tuple[str, int], PartitionRead], pid: int, epoch: int
) -> tuple[int | None, dict[str, list[int]]]:
    """Latest record timestamp of (producer id, epoch) in the partitions read, and its data offsets per partition."""
    last, offsets = None, {}
    for pr in parts.values():
        mine = [e for e in pr.entries if not e.control and e.producer_id == pid and e.epoch == epoch]
        if mine:
            offsets[pr.name] = [e.offset for e in mine]
            ts = max((e.timestamp_ms or 0) for e in mine)
            last = ts if last is None else max(last, ts)
    return last, offsets


def shared_id_findings(
    timelines: dict[str, list[dict[str, Any]]],
    inits_by_id: dict[str, list[dict[str, Any]]],
    parts: dict[tuple[str, int], PartitionRead],
    live_gap_ms: float | None,
) -> list[Finding]:
    out = []
    for txid, inits in sorted(inits_by_id.items()):
        for init in inits:
            prev = init.get("previous")
            if not prev or prev.get("producer_epoch") is None:
                continue
            fence: dict[str, Any] = init.get("fence") or {}
            pid, old_epoch = prev["producer_id"], prev["producer_epoch"]
            data_last, data_offsets = _epoch_activity(parts, pid, old_epoch)
            acts = [t for t in (prev.get("last_activity_ms"), data_last) if t is not None]
            last_activity = max(acts) if acts else None
            fenced_open = fence.get("event") == "fenced_by_init"
            if fence.get("event") == "timed_out":
                continue  # the coordinator aborted it on timeout; the re-init came after (the same instance, late)
            if not fence and prev.get("last_event") == "abort_requested":
                continue  # KIP-360: an instance bumps its own epoch with InitProducerId right after its abort
            bump_ms = fence["time_ms"] if fenced_open else init["time_ms"]
            gap = None if (last_activity is None or bump_ms is None) else max(0, bump_ms - last_activity)
            live = gap is not None and live_gap_ms is not None and gap <= live_gap_ms
            if not (live or (live_gap_ms is None and fenced_open)):
                continue
            aborted, markers = {}, {}
            if fenced_open:
                for pr in parts.values():
                    offs = [
                        e.offset
                        for e in pr.entries
                        if not e.control
                        and e.producer_id == pid
                        and e.epoch == old_epoch
                        and any(s.outcome == "ABORT" and e.offset in s.data_offsets for s in pr.spans)
                    ]
                    mk = [
                        e.offset
                        for e in pr.entries
                        if e.control == "ABORT" and e.producer_id == pid and e.epoch == fence["producer_epoch"]
                    ]
                    if offs:
                        aborted[pr.name] = offs
                    if mk:
                        markers[pr.name] = mk
            ev = {
                "transactional_id": txid,
                "producer_id": pid,
                "fenced_epoch": old_epoch,
                "new_producer_id": init["producer_id"],
                "new_epoch": init["producer_epoch"],
                "init_txn_state_offset": init["offset"],
                "bump_time_ms": bump_ms,
                "fenced_epoch_last_activity_ms": last_activity,
                "gap_ms": gap,
                "fenced_open_transaction": fenced_open,
                "fenced_epoch_writes": data_offsets,
            }
            if fenced_open:
                ev.update(
                    fence_epoch=fence["producer_epoch"],
                    fence_txn_state_offset=fence["offset"],
                    fenced_partitions=fence["partitions"],
                    aborted_records=aborted,
                    abort_markers=markers,
                )
            what = (
                f"aborted its open transaction on {', '.join(f'{t}-{p}' for t, p in fence['partitions'])} (ABORT at epoch "
                f"{fence['producer_epoch']})"
                if fenced_open
                else "between two transactions"
            )
            out.append(
                Finding(
                    "shared_transactional_id",
                    txid,
                    f"{txid}: epoch {old_epoch} of producer id {pid} was fenced by an InitProducerId (new epoch "
                    f"{init['producer_epoch']}) {_fmt_s(gap)} after its last activity, {what}: another live instance "
                    "uses the same transactional.id",
                    ev,
                    bump_ms,
                )
            )
    return out


def frequent_reinit_findings(inits_by_id: dict[str, list[dict[str, Any]]], max_per_hour: int) -> list[Finding]:
    out = []
    for txid, inits in sorted(inits_by_id.items()):
        times = sorted(i["time_ms"] for i in inits if i.get("time_ms") is not None)
        best, best_at, j = 0, (0, 0), 0
        for k, t in enumerate(times):  # the most inits within any hour
            while t - times[j] > HOUR_MS:
                j += 1
            if k - j + 1 > best:
                best, best_at = k - j + 1, (times[j], t)
        if best > max_per_hour:
            shown = [
                {
                    "time_ms": i["time_ms"],
                    "producer_id": i["producer_id"],
                    "producer_epoch": i["producer_epoch"],
                    "txn_state_offset": i["offset"],
                }
                for i in inits
            ][-50:]
            out.append(
                Finding(
                    "frequent_reinit",
                    txid,
                    f"{txid}: {best} InitProducerId within an hour (more than INSPECTOR_REINIT_MAX_PER_HOUR={max_per_hour}): "
                    "instances fencing each other, or a crash loop",
                    {
                        "transactional_id": txid,
                        "inits_in_hour": best,
                        "first_ms": best_at[0],
                        "last_ms": best_at[1],
                        "threshold_per_hour": max_per_hour,
                        "inits": shown,
                    },
                    best_at[1],
                )
            )
    return out


# ------------------------------------------------------------------------------------------------- interleaving


def interleaved_findings(
    parts: dict[tuple[str, int], PartitionRead], txid_of: dict[int, str], show_txid
) -> list[Finding]:
    out = []
    for pr in parts.values():
        for s in pr.spans:
            if s.first_offset is None:
                continue
            if s.marker_offset is not None:
                end = s.marker_offset
            elif s.outcome == "open":
                end = pr.high_watermark
            else:
                end = s.data_offsets[-1]  # its marker lies in an unread gap: only what is known to be inside
            plain = [e for e in pr.entries if not e.control and not e.transactional and s.first_offset < e.offset < end]
            if not plain:
                continue
            txid = txid_of.get(s.producer_id)
            ev = {
                "topic": pr.topic,
                "partition": pr.partition,
                "transaction": {**s.to_dict(), "transactional_id": txid if txid and show_txid(txid) else None},
                "plain_records": [
                    {
                        "offset": e.offset,
                        "producer_id": e.producer_id,
                        "producer_epoch": e.epoch,
                        "producer": producer_kind(e),
                        "timestamp_ms": e.timestamp_ms,
                    }
                    for e in plain
                ],
                "read_committed_held_until": s.marker_offset,
            }
            outcome = {
                "COMMIT": "committed",
                "ABORT": "aborted",
                "open": "still open",
                "unknown": "ended (marker not read)",
            }[s.outcome]
            effect = (
                "read_committed consumers got them only after the marker"
                if s.outcome != "open"
                else "read_committed consumers cannot get them until it ends"
            )
            if s.outcome == "ABORT":
                effect += "; they stayed while the transaction's own records were dropped"
            out.append(
                Finding(
                    "interleaved_plain_records",
                    pr.name,
                    f"{pr.name}: {len(plain)} non-transactional record(s) at offset(s) {', '.join(str(e.offset) for e in plain[:10])} "
                    f"inside the transaction of producer id {s.producer_id} epoch {','.join(map(str, s.epochs))} "
                    f"(offsets {s.first_offset}..{end}, {outcome}): {effect}",
                    ev,
                    plain[0].timestamp_ms,
                )
            )
    return out
