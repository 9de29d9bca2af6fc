"""Findings: what is wrong, with the evidence that shows it (offsets, epochs, producer ids, times).

Stable kinds (the web page and `manage.py inspect --json` key on them):

* `lso_stall`: an open transaction has held a partition's LSO longer than a threshold: INSPECTOR_LSO_STALL_MS, or
  by default half of that transaction's own transaction.timeout.ms as its coordinator describes it (Kafka's
  default 60 s when it does not): a healthy transaction ends well within its timeout, and by half of it the
  partition's read_committed consumers have waited long enough to page someone. Evidence: how many offsets it
  holds back (LSO to HW), the records of other producers among them, what read_committed consumers get.
* `hanging_transaction`: kafka-transactions.sh find-hanging's definition (see hanging.py): an open transaction on
  a partition that its coordinator will never end; the abort command is attached.
* `long_open_transaction`: an open transaction older than INSPECTOR_MAX_TRANSACTION_TIMEOUT_MS that the
  coordinator still tracks (find-hanging leaves these out): it holds the partition's LSO, read_committed consumers
  see nothing past it until the coordinator aborts it. The abort command is attached too.
* `shared_transactional_id`: an InitProducerId replaced an epoch that was still live (classify_inits): the old
  epoch wrote after the new one started (certain), or the InitProducerId aborted an open transaction active less
  than INSPECTOR_LIVE_GAP_S before (likely; certain when consecutive InitProducerIds do so: instances alternating).
  A re-init after the previous transaction completed is a restart, never this finding (a rolling deploy does it);
  frequent_reinit counts restarts past its threshold. Evidence: the fenced and new epochs, the fencing abort
  (PrepareAbort at epoch+1, as TransactionCoordinator.handleInitProducerId does over an Ongoing transaction), the
  records it aborted and the ABORT markers, from the partition logs read.

Each finding says how sure it is (`confidence`: certain, likely, possible) and why (`why`). `group_findings` folds
them by kind and subject, newest first, for people and for alerting: one line per group.
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
from playground.inspector.sentences import say

# current conditions (not filtered by --since: they hold now, whenever they began)
CURRENT_KINDS = ("lso_stall", "hanging_transaction", "long_open_transaction")
KINDS = (
    "lso_stall",
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
    confidence: str = "certain"  # certain | likely | possible (CONFIDENCE)
    why: str = ""  # what in the cluster makes it so, and how sure that is
    # the summary and the why as sentences.py's [id, {values}]: the web page says them in its reader's language
    said: list[Any] | None = None
    why_said: list[Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {
            "kind": self.kind,
            "subject": self.subject,
            "summary": self.summary,
            "time_ms": self.time_ms,
            "confidence": self.confidence,
            "why": self.why,
            "evidence": self.evidence,
            "said": self.said,
            "why_said": self.why_said,
        }
        if self.command:
            d["command"] = self.command
        return d


def _fmt_s(ms: int | float | None) -> str:
    return "?" if ms is None else f"{ms / 1000:.1f} s"


def _listed(items: list[Any], limit: int = 10) -> str:
    """A list for a sentence, saying how many it leaves out."""
    shown = ", ".join(str(x) for x in items[:limit])
    return shown + (f", … (+{len(items) - limit})" if len(items) > limit else "")


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
        reason = h.get("reason_said") or h["reason"]
        said = [
            "hanging" if kind == "hanging_transaction" else "long_open",
            {
                "tp": tp,
                "pid": h["producer_id"],
                "epoch": h["producer_epoch"],
                "offset": h["current_txn_start_offset"],
                "ago": _fmt_s(h["duration_ms"]),
                "reason": reason,
            },
        ]
        why_said = ["hanging_why", {"ago": _fmt_s(h["duration_ms"]), "reason": reason}]
        out.append(
            Finding(
                kind,
                tp,
                say(said),
                ev,
                h["last_timestamp"],
                h.get("command"),
                why=say(why_said),
                said=said,
                why_said=why_said,
            )
        )
    return out


# ------------------------------------------------------------------------------------------------- shared id

# how sure a finding is: certain (the cluster shows it directly), likely (the cluster shows what two instances do,
# and one instance does only in an unusual way), possible (could as well be one instance)
CONFIDENCE = ("certain", "likely", "possible")


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


def _late_writes(
    parts: dict[tuple[str, int], PartitionRead], pid: int, epoch: int, after_ms: int | None
) -> dict[str, list[int]]:
    """Records of (producer id, epoch) created after `after_ms` (their CreateTime): the old epoch still writing once
    the new one had started, which a stopped instance cannot do."""
    if after_ms is None:
        return {}
    out: dict[str, list[int]] = {}
    for pr in parts.values():
        late = [
            e.offset
            for e in pr.entries
            if not e.control and e.producer_id == pid and e.epoch == epoch and (e.timestamp_ms or 0) > after_ms
        ]
        if late:
            out[pr.name] = late
    return out


def classify_inits(inits: list[dict[str, Any]], parts: dict[tuple[str, int], PartitionRead], live_gap_ms: float | None):
    """Each InitProducerId that replaced an earlier epoch, told apart as a restart or a second live instance.

    What one instance restarting looks like: its previous transaction had completed (committed or aborted, its
    markers written) before the InitProducerId, or it had crashed with a transaction open and the restart came
    after a pause. What two instances sharing the id look like, as the cluster shows it:
    * the old epoch still writing after the new one started (records created after the bump);
    * an InitProducerId that aborts an open transaction whose instance was active up to a moment before (within
      INSPECTOR_LIVE_GAP_S), and the same again at the next InitProducerId: instances alternating.
    Yields (init, verdict, confidence, why, facts) with verdict "shared" or "restart" and why as a sentence
    ([id, {values}], sentences.py) (timed-out transactions and an instance's own KIP-360 epoch bump after its abort
    are neither and are left out)."""
    out = []
    live: list[bool] = []  # per entry of out: did its InitProducerId abort a live transaction
    previous_live_fence = False
    for init in inits:
        prev = init.get("previous")
        if not prev or prev.get("producer_epoch") is None:
            previous_live_fence = False
            continue
        fence: dict[str, Any] = init.get("fence") or {}
        if fence.get("event") == "timed_out":
            previous_live_fence = False
            continue  # the coordinator aborted it on timeout; the re-init came after (the same instance, late)
        if not fence and prev.get("last_event") == "abort_requested":
            continue  # KIP-360: an instance bumps its own epoch with InitProducerId right after its abort
        pid, old_epoch = prev["producer_id"], prev["producer_epoch"]
        fenced_open = fence.get("event") == "fenced_by_init"
        bump_ms = fence.get("time_ms") if fenced_open else init.get("time_ms")
        data_last, data_offsets = _epoch_activity(parts, pid, old_epoch)
        acts = [t for t in (prev.get("last_activity_ms"), data_last) if t is not None]
        last_activity = max(acts) if acts else None
        gap = None if (last_activity is None or bump_ms is None) else max(0, bump_ms - last_activity)
        late = _late_writes(parts, pid, old_epoch, bump_ms)
        live_fence = fenced_open and (live_gap_ms is None or (gap is not None and gap <= live_gap_ms))
        gap_setting: Any = (
            ["no_gap_setting", {}] if live_gap_ms is None else f"INSPECTOR_LIVE_GAP_S={live_gap_ms / 1000:g}"
        )
        facts = {
            "pid": pid,
            "old_epoch": old_epoch,
            "fenced_open": fenced_open,
            "bump_ms": bump_ms,
            "last_activity": last_activity,
            "gap": gap,
            "data_offsets": data_offsets,
            "late_writes": late,
            "fence": fence,
        }
        gap_s = "?" if gap is None else f"{gap / 1000:.1f} s"
        # each why as sentences.py's [id, {values}] (the command line says it in English, the page in its language)
        if late:
            where = ", ".join(f"{tp} {offs}" for tp, offs in late.items())
            why = ["late_writes", {"old": old_epoch, "new": init["producer_epoch"], "where": where}]
            out.append((init, "shared", "certain", why, facts))
        elif live_fence and previous_live_fence:
            out.append((init, "shared", "certain", ["alternating", {"gap": gap_s}], facts))
        elif live_fence:
            out.append((init, "shared", "likely", ["live_fence", {"gap": gap_s, "setting": gap_setting}], facts))
        elif fenced_open:
            out.append((init, "restart", "likely", ["restart_idle", {"gap": gap_s}], facts))
        else:
            outcome = prev.get("last_outcome") or prev.get("last_event") or "none open"
            out.append((init, "restart", "likely", ["restart", {"outcome": outcome}], facts))
        live.append(live_fence)
        previous_live_fence = live_fence
    # alternation is seen at its second fence; the first of the pair is the same story
    for k in range(len(out) - 1):
        if live[k] and live[k + 1] and out[k + 1][2] == "certain" and out[k][2] == "likely":
            init, verdict, _c, why, facts = out[k]
            out[k] = (init, verdict, "certain", ["live_fence_next", why[1]], facts)
    return out


def shared_id_findings(
    timelines: dict[str, list[dict[str, Any]]],
    inits_by_id: dict[str, list[dict[str, Any]]],
    parts: dict[tuple[str, int], PartitionRead],
    live_gap_ms: float | None,
) -> list[Finding]:
    out = []
    for txid, inits in sorted(inits_by_id.items()):
        for init, verdict, confidence, why, f in classify_inits(inits, parts, live_gap_ms):
            if verdict != "shared":
                continue
            pid, old_epoch, fence, fenced_open = f["pid"], f["old_epoch"], f["fence"], f["fenced_open"]
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
                "bump_time_ms": f["bump_ms"],
                "fenced_epoch_last_activity_ms": f["last_activity"],
                "gap_ms": f["gap"],
                "fenced_open_transaction": fenced_open,
                "fenced_epoch_writes": f["data_offsets"],
                "writes_after_bump": f["late_writes"],
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
                [
                    "fenced_open",
                    {
                        "partitions": ", ".join(f"{t}-{p}" for t, p in fence["partitions"]),
                        "epoch": fence["producer_epoch"],
                    },
                ]
                if fenced_open
                else ["between", {}]
            )
            said = [
                "shared",
                {
                    "txid": txid,
                    "old": old_epoch,
                    "pid": pid,
                    "new": init["producer_epoch"],
                    "gap": _fmt_s(f["gap"]),
                    "what": what,
                },
            ]
            out.append(
                Finding(
                    "shared_transactional_id",
                    txid,
                    say(said),
                    ev,
                    f["bump_ms"],
                    confidence=confidence,
                    why=say(why),
                    said=said,
                    why_said=why,
                )
            )
    return out


def frequent_reinit_findings(
    inits_by_id: dict[str, list[dict[str, Any]]],
    max_per_hour: int,
    parts: dict[tuple[str, int], PartitionRead] | None = None,
    live_gap_ms: float | None = None,
) -> list[Finding]:
    out = []
    for txid, inits in sorted(inits_by_id.items()):
        restarts = sum(1 for x in classify_inits(inits, parts or {}, live_gap_ms) if x[1] == "restart")
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
            said = ["frequent", {"txid": txid, "n": best, "max": max_per_hour}]
            span = _fmt_s(best_at[1] - best_at[0])
            why_said = ["frequent_why", {"n": best, "span": span, "restarts": restarts}]
            out.append(
                Finding(
                    "frequent_reinit",
                    txid,
                    say(said),
                    {
                        "transactional_id": txid,
                        "inits_in_hour": best,
                        "restarts": restarts,
                        "first_ms": best_at[0],
                        "last_ms": best_at[1],
                        "threshold_per_hour": max_per_hour,
                        "inits": shown,
                    },
                    best_at[1],
                    why=say(why_said),
                    said=said,
                    why_said=why_said,
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
            outcome = {"COMMIT": "committed", "ABORT": "aborted", "open": "still_open", "unknown": "marker_unread"}
            effect = "until_end" if s.outcome == "open" else "after_marker"
            if s.outcome == "ABORT":
                effect = "after_marker_dropped"
            said = [
                "interleaved",
                {
                    "tp": pr.name,
                    "n": len(plain),
                    "offsets": _listed([e.offset for e in plain]),
                    "pid": s.producer_id,
                    "epochs": ",".join(map(str, s.epochs)),
                    "first": s.first_offset,
                    "end": end,
                    "outcome": [outcome[s.outcome], {}],
                    "effect": [effect, {}],
                },
            ]
            why_said: list[Any] = ["interleaved_why", {}]
            out.append(
                Finding(
                    "interleaved_plain_records",
                    pr.name,
                    say(said),
                    ev,
                    plain[0].timestamp_ms,
                    why=say(why_said),
                    said=said,
                    why_said=why_said,
                )
            )
    return out


# ------------------------------------------------------------------------------------------------- LSO stalls

DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000  # transaction.timeout.ms when a client does not set it (librdkafka, Java)


def lso_stall_threshold_ms(open_txn: dict[str, Any], setting_ms: int | None) -> tuple[int, list[Any]]:
    """The stall threshold for one open transaction, and where it comes from (a sentence: sentences.py)."""
    if setting_ms is not None:
        return int(setting_ms), ["threshold_setting", {"ms": setting_ms}]
    timeout = open_txn.get("transaction_timeout_ms")
    if timeout:
        return int(timeout) // 2, ["threshold_half", {"timeout": timeout}]
    return DEFAULT_TRANSACTION_TIMEOUT_MS // 2, ["threshold_default", {"timeout": DEFAULT_TRANSACTION_TIMEOUT_MS}]


def lso_stall_findings(partitions: list[dict[str, Any]], setting_ms: int | None, now_ms: int) -> list[Finding]:
    """From the report's partitions (ClusterInspector._partition_dict): the open transaction holding each LSO."""
    out = []
    for part in partitions:
        for o in part.get("open_transactions", []):
            if not o["holds_lso"] or o["age_ms"] is None:
                continue
            threshold, source = lso_stall_threshold_ms(o, setting_ms)
            if o["age_ms"] <= threshold:
                continue
            tp = f"{part['topic']}-{part['partition']}"
            lso, hw = part["last_stable_offset"], part["high_watermark"]
            held = [e for e in part["entries"] if e["kind"] == "data" and e["offset"] >= lso]
            others = [e for e in held if e["producer_id"] != o["producer_id"]]
            timeout = o.get("transaction_timeout_ms")
            aborts_at = (o["started_ms"] + timeout) if (timeout and o.get("started_ms")) else None
            ev = {
                "topic": part["topic"],
                "partition": part["partition"],
                "producer_id": o["producer_id"],
                "producer_epoch": o["producer_epoch"],
                "transactional_id": o["transactional_id"],
                "start_offset": o["start_offset"],
                "last_stable_offset": lso,
                "high_watermark": hw,
                "offsets_held": hw - lso,
                "records_held_read": len(held),
                "other_producers_records_held": len(others),
                "open_for_ms": o["age_ms"],
                "last_write_age_ms": o["last_write_age_ms"],
                "threshold_ms": threshold,
                "threshold_from": say(source),
                "transaction_timeout_ms": timeout,
                "coordinator_state": o["coordinator_state"],
                "coordinator_aborts_at_ms": aborts_at,
                "held_back": say(["held_back", {"tp": tp, "lso": lso}]),  # the page says it in its reader's words
            }
            values = {
                "tp": tp,
                "who": o["transactional_id"] or ["who_not_shown", {}],
                "pid": o["producer_id"],
                "epoch": o["producer_epoch"],
                "lso": lso,
                "age": _fmt_s(o["age_ms"]),
                "held": hw - lso,
                "hw": hw,
            }
            said: list[Any] = ["stall_others", {**values, "others": len(others)}] if others else ["stall", values]
            if aborts_at and aborts_at > now_ms:
                said = ["stall_aborts", {"stall": said, "left": _fmt_s(aborts_at - now_ms)}]
            why_said = [
                "stall_why",
                {"lso": lso, "age": _fmt_s(o["age_ms"]), "threshold": _fmt_s(threshold), "source": source},
            ]
            out.append(
                Finding(
                    "lso_stall",
                    tp,
                    say(said),
                    ev,
                    o["started_ms"],
                    why=say(why_said),
                    said=said,
                    why_said=why_said,
                )
            )
    return out


# ------------------------------------------------------------------------------------------------- grouping


RANK = {c: n for n, c in enumerate(CONFIDENCE)}


def group_findings(findings: list[dict[str, Any]], evidence_max: int = 50) -> list[dict[str, Any]]:
    """Findings (Finding.to_dict) folded by kind and subject: a count, the first and last seen, the surest
    confidence, the newest finding's summary and why; each group's findings newest first (at most
    `evidence_max`, saying how many more). Groups: current conditions (CURRENT_KINDS) first, then newest first."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for f in findings:
        g = groups.setdefault(
            (f["kind"], f["subject"]), {"kind": f["kind"], "subject": f["subject"], "count": 0, "findings": []}
        )
        g["count"] += 1
        g["findings"].append(f)
    out = []
    for g in groups.values():
        fs = sorted(g["findings"], key=lambda f: f["time_ms"] if f["time_ms"] is not None else -1, reverse=True)
        times = [f["time_ms"] for f in fs if f["time_ms"] is not None]
        newest = fs[0]
        g.update(
            first_ms=min(times) if times else None,
            last_ms=max(times) if times else None,
            confidence=min((f.get("confidence", "certain") for f in fs), key=lambda c: RANK.get(c, 9)),
            summary=newest["summary"],
            why=newest.get("why", ""),
            said=newest.get("said"),
            why_said=newest.get("why_said"),
            command=newest.get("command"),
            current=g["kind"] in CURRENT_KINDS,
            findings=fs[:evidence_max],
            more=max(0, len(fs) - evidence_max),
        )
        out.append(g)
    out.sort(
        key=lambda g: (
            0 if g["current"] else 1,
            -(g["last_ms"] if g["last_ms"] is not None else -1),
            g["kind"],
            g["subject"],
        )
    )
    return out


def group_line(g: dict[str, Any], when) -> str:
    """One line per group (the CLI's summary, an alert's text)."""
    times = when(g["last_ms"]) if g["count"] == 1 else f"{when(g['first_ms'])}..{when(g['last_ms'])}"
    return f"[{g['kind']}] {g['subject']}: {g['count']}x, {times}, {g['confidence']}: {g['summary']}"
