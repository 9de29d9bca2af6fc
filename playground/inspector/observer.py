"""One read-only observer per cluster per server process, shared by every viewer.

`get_inspector()` returns the process-wide `ClusterInspector` of the cluster named in settings
(KAFKA_BOOTSTRAP_SERVERS; never an address from a request), keyed by its bootstrap servers. It serialises its
reads (one conversation with the cluster at a time: wire.WireClient is not thread-safe), caches each answer for
INSPECTOR_POLL_INTERVAL_S so that many viewers of the same thing cost one read, keeps one incremental reader of
__transaction_state, and runs at most one polling thread for all subscribers.

What one inspection reads (all bounded, see client.py): Metadata; ListOffsets (earliest, latest at
read_uncommitted = HW, latest at read_committed = LSO) per leader; DescribeProducers per leader; Fetch of the windows
around the LSO and the end of each partition; DescribeTransactions at each id's coordinator; the coordinator
partitions of the ids in __transaction_state from where the last read stopped; ListTransactions filtered by the
producer ids that hold open transactions. The same requests `kafka-transactions.sh` sends for describe,
describe-producers, list and find-hanging, plus a consumer's Fetch.

Not observable from a client: a partition leader's log end offset beyond the high watermark (DescribeLogDirs'
offsetLag is max(HW - LEO, 0), so 0 on the leader: ReplicaManager.getLogEndOffsetLag); `log_end_offset` is None.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from playground.inspector import detectors, hanging, logview
from playground.inspector.client import EARLIEST, TP, ReadOnlyWire
from playground.inspector.config import InspectorError, InspectorSettings, RefusedError, check_security, load_settings
from playground.inspector.txnlog import TxnStateLog, annotate, inits
from playground.kafka.wire import WireError, transaction_state_partition

log = logging.getLogger(__name__)

ONGOING_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort")
RECENT_TXN_PARTITIONS = 20  # partitions named by an id's last records that are read along with it
MAX_PRODUCER_IDS = 1000  # producer ids looked up with one ListTransactions per broker


class ClusterInspector:
    def __init__(self, settings: InspectorSettings) -> None:
        check_security(settings.bootstrap, settings.client)
        self.settings = settings
        self._lock = threading.RLock()
        self._wire: ReadOnlyWire | None = None
        self._txn_log = TxnStateLog()
        self._cache: dict[Any, tuple[float, dict[str, Any]]] = {}
        self._subs: list[Subscription] = []
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()

    # ------------------------------------------------------------------------------------------ plumbing

    def update_settings(self, settings: InspectorSettings) -> None:
        """Settings changed (a deploy, a test): keep what is still valid."""
        with self._lock:
            if settings == self.settings:
                return
            check_security(settings.bootstrap, settings.client)
            old, self.settings = self.settings, settings
            self._cache.clear()
            if (old.topics, old.transactional_ids) != (settings.topics, settings.transactional_ids):
                self._txn_log.reset()  # ids refused before were skipped while reading: read again
            if (old.request_timeout_s, old.fetch_max_bytes) != (settings.request_timeout_s, settings.fetch_max_bytes):
                self._close_wire()

    def _client(self) -> ReadOnlyWire:
        if self._wire is None:
            try:
                self._wire = ReadOnlyWire(
                    self.settings.bootstrap,
                    timeout_s=self.settings.request_timeout_s,
                    max_bytes=self.settings.fetch_max_bytes,
                )
            except WireError as e:
                raise InspectorError(f"KAFKA_BOOTSTRAP_SERVERS ({self.settings.bootstrap!r}): {e}") from None
        return self._wire

    def _close_wire(self) -> None:
        if self._wire is not None:
            self._wire.close()
            self._wire = None

    def _read(self, fn: Callable[[ReadOnlyWire], Any]) -> Any:
        with self._lock:
            try:
                return fn(self._client())
            except RefusedError:
                raise
            except WireError as e:
                self._close_wire()  # a fresh start next time (connections may be half-dead)
                raise InspectorError(
                    f"cannot read the Kafka cluster at {self.settings.bootstrap} (KAFKA_BOOTSTRAP_SERVERS): {e}"
                ) from None

    def close(self) -> None:
        with self._lock:
            for s in list(self._subs):
                s.close()
            self._close_wire()

    def requests_sent(self) -> dict[str, int]:
        """Requests sent so far, by API name: what the inspector cost the cluster."""
        return dict(self._wire.sent) if self._wire else {}

    # ------------------------------------------------------------------------------------------ simple reads

    def list_transactions(self, states: Iterable[str] = ONGOING_STATES) -> list[dict[str, Any]]:
        """ListTransactions on every broker, allowed ids only (others are counted, not named)."""
        listing = self._read(lambda w: w.list_transactions(states=list(states)))
        return [t for t in listing if self.settings.transactional_id_allowed(t["transactional_id"])]

    def describe_transaction(self, txid: str) -> dict[str, Any]:
        """DescribeTransactions at the id's coordinator, uncached: {"state": None} when it does not know the id."""
        txid = self.settings.check_transactional_id(txid)

        def run(w: ReadOnlyWire) -> dict[str, Any]:
            n = w.txn_state_partitions()
            return w.describe_transaction(txid, n) if n else {"state": None}

        return self._read(run)

    def find_hanging(
        self,
        topics: Iterable[str],
        *,
        partitions: Iterable[int] | None = None,
        max_transaction_timeout_ms: int | None = None,
    ) -> list[dict[str, Any]]:
        """kafka-transactions.sh find-hanging --topic T [--partition P] --max-transaction-timeout (see hanging.py),
        each with `command` (abort by producer id/epoch/coordinator epoch) and `command_start_offset`."""
        s = self.settings
        topics = [s.check_topic(t) for t in topics]
        limit = s.max_transaction_timeout_ms if max_transaction_timeout_ms is None else max_transaction_timeout_ms

        def run(w: ReadOnlyWire) -> list[dict[str, Any]]:
            tps = self._resolve(w, topics, {t: list(partitions) for t in topics} if partitions is not None else None)
            n = w.txn_state_partitions()
            found = hanging.find_hanging(w, tps, now_ms=_now_ms(), max_timeout_ms=limit, n_txn_partitions=n)
            return [self._with_commands(h) for h in found]

        return self._read(run)

    def _with_commands(self, h: dict[str, Any]) -> dict[str, Any]:
        b = self.settings.bootstrap
        h = dict(h)
        h["command"] = hanging.abort_command(
            b, h["topic"], h["partition"], h["producer_id"], h["producer_epoch"], h["coordinator_epoch"]
        )
        h["command_start_offset"] = hanging.abort_command_by_offset(
            b, h["topic"], h["partition"], h["current_txn_start_offset"]
        )
        txid = h.get("transactional_id")
        if txid and not self.settings.transactional_id_allowed(txid):
            h["transactional_id"] = None
            h["transactional_id_hidden"] = True
        return h

    def partition_view(self, topic: str, partition: int, *, from_offset: int | None = None) -> dict[str, Any]:
        report = self.inspect(
            [topic],
            partitions={topic: [partition]},
            from_offsets={(topic, partition): from_offset} if from_offset is not None else None,
        )
        return next(p for p in report["partitions"] if (p["topic"], p["partition"]) == (topic, partition))

    def transactional_id_view(self, txid: str) -> dict[str, Any]:
        report = self.inspect(transactional_ids=[txid])
        return report["transactional_ids"][0]

    def findings(
        self, topics: Iterable[str] = (), transactional_ids: Iterable[str] = (), *, since_s: float | None = None
    ) -> list[dict[str, Any]]:
        return self.inspect(topics, transactional_ids, since_s=since_s)["findings"]

    # ------------------------------------------------------------------------------------------ inspection

    def inspect(
        self,
        topics: Iterable[str] = (),
        transactional_ids: Iterable[str] = (),
        *,
        partitions: dict[str, list[int]] | None = None,
        from_offsets: dict[TP, int] | None = None,
        since_s: float | None = None,
        max_age_s: float | None = None,
    ) -> dict[str, Any]:
        """Everything about these topics (all their partitions, or `partitions`) and transactional ids; with
        neither, start from ListTransactions (ongoing transactions of allowed ids) and every allowed topic.

        An answer younger than INSPECTOR_POLL_INTERVAL_S (or `max_age_s`) for the same question is returned as is.
        Raises RefusedError for anything outside the allow-lists, InspectorError when the cluster cannot be read."""
        s = self.settings
        topics = tuple(sorted({s.check_topic(t) for t in topics}))
        txids = tuple(sorted({s.check_transactional_id(t) for t in transactional_ids}))
        key = (topics, txids, _freeze(partitions), _freeze(from_offsets), since_s)
        max_age = s.poll_interval_s if max_age_s is None else max_age_s
        with self._lock:
            hit = self._cache.get(key)
            if hit and time.monotonic() - hit[0] < max_age:
                return hit[1]
            report = self._read(lambda w: self._inspect(w, topics, txids, partitions, from_offsets or {}, since_s))
            self._cache[key] = (time.monotonic(), report)
            if len(self._cache) > 256:
                oldest = min(self._cache, key=lambda k: self._cache[k][0])
                self._cache.pop(oldest, None)
            return report

    def _resolve(self, w: ReadOnlyWire, topics: Iterable[str], partitions: dict[str, list[int]] | None) -> list[TP]:
        topics = list(topics)
        known = w.partitions_of(topics)
        missing = [t for t in topics if t not in known]
        if missing:
            raise InspectorError(f"no such topic on the cluster: {', '.join(missing)}")
        tps: list[TP] = []
        for t in topics:
            ps = known[t]
            if partitions and t in partitions:
                bad = sorted(set(partitions[t]) - set(ps))
                if bad:
                    raise InspectorError(f"{t} has no partition {', '.join(map(str, bad))} (it has {len(ps)})")
                ps = sorted(set(partitions[t]))
            tps += [(t, p) for p in ps]
        return tps

    def _inspect(
        self, w: ReadOnlyWire, topics: tuple[str, ...], txids: tuple[str, ...], partitions, from_offsets, since_s
    ) -> dict[str, Any]:
        s = self.settings
        t0 = time.monotonic()
        sent0 = dict(w.sent)
        now = _now_ms()
        notes: list[str] = []
        started_from = "arguments"
        listing: list[dict[str, Any]] | None = None
        if not topics and not txids:
            started_from = "list_transactions"
            listing = [
                t
                for t in w.list_transactions(states=list(ONGOING_STATES))
                if s.transactional_id_allowed(t["transactional_id"])
            ]
            txids = tuple(sorted({t["transactional_id"] for t in listing}))
            topics = tuple(t for t in w.all_topics() if s.topic_allowed(t))
            if not s.topics and not s.transactional_ids:
                notes.append("INSPECTOR_TOPICS and INSPECTOR_TRANSACTIONAL_IDS are empty: nothing may be inspected")
        n_txn = w.txn_state_partitions()

        # ---- transactional ids: the coordinator's current answer and the timeline from __transaction_state
        described: dict[str, dict[str, Any]] = {}
        for txid in txids:
            described[txid] = w.describe_transaction(txid, n_txn) if n_txn else {"state": None}
        if n_txn and txids:
            self._txn_log.poll(
                w,
                {transaction_state_partition(t, n_txn) for t in txids},
                allowed=s.transactional_id_allowed,
                now_ms=now,
                lookback_ms=int(s.txn_log_lookback_s * 1000),
                max_records=s.txn_log_max_records,
                history_max=s.txn_history_max,
            )
        timelines = {t: annotate(self._txn_log.history(t)) for t in txids}

        # ---- partitions: those asked for, plus the allowed ones the ids wrote to (so their evidence is visible)
        tps = self._resolve(w, topics, partitions)
        extra: list[TP] = []
        for txid in txids:
            named = [tuple(tp) for tp in described[txid].get("partitions", [])]
            for r in timelines[txid][-RECENT_TXN_PARTITIONS:]:
                named += [tuple(tp) for tp in r.get("partitions", [])]
            extra += [tp for tp in dict.fromkeys(named) if s.topic_allowed(tp[0]) and tp not in tps and tp not in extra]
        if extra:
            known = w.partitions_of(sorted({t for t, _ in extra}))
            tps += [tp for tp in extra if tp[1] in known.get(tp[0], [])]
        if len(tps) > s.max_partitions:
            notes.append(
                f"{len(tps)} partitions match; only the first {s.max_partitions} were read (INSPECTOR_MAX_PARTITIONS)"
            )
            tps = tps[: s.max_partitions]

        # ---- marks, producer states, windows
        errors: dict[TP, str] = {}
        starts = w.list_offsets(tps, EARLIEST, errors=errors)
        hws = w.list_offsets(tps, errors=errors)
        lsos = w.list_offsets(tps, committed=True, errors=errors)
        producers = w.describe_producers_of([tp for tp in tps if tp not in errors]) if tps else {}
        parts: dict[TP, logview.PartitionRead] = {}
        for tp in tps:
            if tp in errors or hws.get(tp) is None:
                parts[tp] = logview.PartitionRead(
                    tp[0], tp[1], None, 0, 0, 0, [], [], [], None, errors.get(tp, "no offsets")
                )
                continue
            hw = hws[tp]
            assert hw is not None  # checked above
            stable = lsos.get(tp)
            lso = stable if stable is not None else hw
            log_start = starts.get(tp) or 0
            windows = logview.plan_windows(
                log_start,
                lso,
                hw,
                records=s.window_records,
                before_lso=s.window_before_lso,
                from_offset=from_offsets.get(tp),
            )
            entries: list = []
            error = None
            try:
                for win in windows:
                    got, _marks = w.read_range(tp[0], tp[1], win.start, win.end, win.end - win.start)
                    entries += [e for e in got if not entries or e.offset >= entries[-1].next_offset]
            except WireError as e:
                if not getattr(e, "code", None):
                    raise
                error = str(e)
            prod = producers.get(tp)
            open_starts = (
                {
                    p["producer_id"]: p["current_txn_start_offset"]
                    for p in prod
                    if p["current_txn_start_offset"] is not None
                }
                if isinstance(prod, list)
                else {}
            )
            spans = logview.transactions(entries, windows, hw, open_starts)
            leader = w.meta.partitions[tp].leader if w.meta and tp in w.meta.partitions else None
            parts[tp] = logview.PartitionRead(
                tp[0],
                tp[1],
                leader,
                log_start,
                lso,
                hw,
                windows,
                entries,
                spans,
                prod if isinstance(prod, list) else None,
                error or (prod if isinstance(prod, str) else None),
            )

        # ---- who is who: transactional ids of the producer ids seen (ListTransactions by producer id)
        pids = sorted(
            {p["producer_id"] for pr in parts.values() for p in (pr.producers or [])}
            | {e.producer_id for pr in parts.values() for e in pr.entries if e.transactional}
        )
        txid_of: dict[int, str] = {}
        if pids:
            # the producer ids of open transactions first: those are the ones find-hanging must name
            first = sorted(
                {
                    p["producer_id"]
                    for pr in parts.values()
                    for p in (pr.producers or [])
                    if p["current_txn_start_offset"] is not None
                }
            )
            pids = (first + [p for p in pids if p not in set(first)])[:MAX_PRODUCER_IDS]
            for t in w.list_transactions(producer_ids=pids):
                txid_of.setdefault(t["producer_id"], t["transactional_id"])
        for txid, d in described.items():
            if d.get("producer_id") is not None:
                txid_of.setdefault(d["producer_id"], txid)
        open_ids = sorted(
            {
                txid_of[p["producer_id"]]
                for pr in parts.values()
                for p in (pr.producers or [])
                if p["current_txn_start_offset"] is not None and p["producer_id"] in txid_of
            }
        )
        for txid in open_ids:
            if txid not in described and n_txn:
                described[txid] = w.describe_transaction(txid, n_txn)

        # ---- hanging (find-hanging on the partitions read, from the producer states already at hand)
        cands = hanging.candidates(
            {tp: pr.producers for tp, pr in parts.items() if pr.producers is not None},
            now,
            s.max_transaction_timeout_ms,
        )
        found = [self._with_commands(h) for h in hanging.classify(cands, txid_of, described)]

        # ---- findings
        inits_by_id = {t: inits(tl) for t, tl in timelines.items()}
        show = s.transactional_id_allowed
        findings = detectors.hanging_findings(found, show)
        findings += detectors.shared_id_findings(
            timelines, inits_by_id, parts, None if s.live_gap_s is None else s.live_gap_s * 1000
        )
        live_gap_ms = None if s.live_gap_s is None else s.live_gap_s * 1000
        findings += detectors.frequent_reinit_findings(inits_by_id, s.reinit_max_per_hour, parts, live_gap_ms)
        findings += detectors.interleaved_findings(parts, txid_of, show)
        partition_dicts = [
            self._partition_dict(pr, now, txid_of, described, from_offsets.get(tp)) for tp, pr in parts.items()
        ]
        findings += detectors.lso_stall_findings(partition_dicts, s.lso_stall_ms, now)
        if since_s is not None:
            horizon = now - since_s * 1000
            findings = [
                f for f in findings if f.kind in detectors.CURRENT_KINDS or f.time_ms is None or f.time_ms >= horizon
            ]
        # newest first: the incident going on now is at the top, the one of an hour ago below it
        findings.sort(key=lambda f: f.time_ms if f.time_ms is not None else -1, reverse=True)
        found_dicts = [f.to_dict() for f in findings]

        sent = {k: v - sent0.get(k, 0) for k, v in w.sent.items() if v - sent0.get(k, 0)}
        return {
            "cluster": {"bootstrap": s.bootstrap, "brokers": sorted(w.meta.brokers) if w.meta else []},
            "fetched_at_ms": now,
            "elapsed_ms": round((time.monotonic() - t0) * 1000),
            "started_from": started_from,
            "transactions": listing,
            "partitions": partition_dicts,
            "transactional_ids": [
                self._txid_dict(t, described[t], timelines[t], inits_by_id[t], parts, n_txn, since_s, now)
                for t in txids
            ],
            "hanging": found,
            "findings": found_dicts,
            "groups": detectors.group_findings(found_dicts),
            "notes": notes,
            "requests": sent,
            "settings": {
                "max_transaction_timeout_ms": s.max_transaction_timeout_ms,
                "live_gap_s": s.live_gap_s,
                "reinit_max_per_hour": s.reinit_max_per_hour,
                "lso_stall_ms": s.lso_stall_ms,
                "window_records": s.window_records,
                "poll_interval_s": s.poll_interval_s,
            },
        }

    # ------------------------------------------------------------------------------------------ shaping

    def _shown(self, txid: str | None) -> str | None:
        return txid if txid and self.settings.transactional_id_allowed(txid) else None

    def _partition_dict(
        self, pr: logview.PartitionRead, now: int, txid_of: dict[int, str], described, from_offset
    ) -> dict[str, Any]:
        render = self.settings.render
        fate = logview.fates(pr.entries, pr.spans)
        producers = []
        open_txns = []
        for p in pr.producers or []:
            txid = txid_of.get(p["producer_id"])
            producers.append({**p, "transactional_id": self._shown(txid)})
            start = p["current_txn_start_offset"]
            if start is None:
                continue
            d = described.get(txid, {}) if txid else {}
            same = d.get("producer_id") == p["producer_id"]
            started = d.get("transaction_start_time_ms") if same else None
            if started is None:
                first = next((e for e in pr.entries if e.offset == start), None)
                started = first.timestamp_ms if first else None
            open_txns.append(
                {
                    "producer_id": p["producer_id"],
                    "producer_epoch": p["producer_epoch"],
                    "coordinator_epoch": p["coordinator_epoch"],
                    "start_offset": start,
                    "holds_lso": start == pr.last_stable_offset,
                    "transactional_id": self._shown(txid),
                    "coordinator_state": d.get("state") if same else None,
                    "coordinator_lists_partition": (
                        [pr.topic, pr.partition] in [list(x) for x in d.get("partitions", [])]
                    )
                    if same
                    else None,
                    "transaction_timeout_ms": d.get("transaction_timeout_ms") if same else None,
                    "started_ms": started,
                    "age_ms": now - started if started else None,
                    "last_timestamp_ms": p["last_timestamp"],
                    "last_write_age_ms": now - p["last_timestamp"] if p["last_timestamp"] >= 0 else None,
                }
            )
        open_txns.sort(key=lambda o: o["start_offset"])
        spans = []
        for sp in pr.spans:
            spans.append({**sp.to_dict(), "transactional_id": self._shown(txid_of.get(sp.producer_id))})
        consumer_from = (
            from_offset if from_offset is not None else (pr.windows[0].start if pr.windows else pr.high_watermark)
        )
        return {
            "topic": pr.topic,
            "partition": pr.partition,
            "leader": pr.leader,
            "error": pr.error,
            "log_start_offset": pr.log_start_offset,
            "last_stable_offset": pr.last_stable_offset,
            "high_watermark": pr.high_watermark,
            "log_end_offset": None,  # not observable from a client (module docstring)
            "windows": [w.to_dict() for w in pr.windows],
            "not_read": logview.gaps_between(pr.windows),
            "entries": [logview.entry_dict(e, fate.get(e.offset, "unknown"), render) for e in pr.entries],
            "transactions": spans,
            "producers": producers,
            "open_transactions": open_txns,
            "consumers": logview.consume(
                pr.entries,
                pr.spans,
                from_offset=consumer_from,
                lso=pr.last_stable_offset,
                hw=pr.high_watermark,
                windows=pr.windows,
                render=render,
            ),
        }

    def _txid_dict(self, txid, desc, timeline, init_list, parts, n_txn, since_s, now) -> dict[str, Any]:
        shown = timeline
        if since_s is not None:
            horizon = now - since_s * 1000
            shown = [r for r in timeline if (r.get("last_update_ms") or 0) >= horizon]
        pids = {r.get("producer_id") for r in timeline} | {desc.get("producer_id")}
        producers = {}
        for pr in parts.values():
            mine = [p for p in (pr.producers or []) if p["producer_id"] in pids]
            if mine:
                producers[pr.name] = mine
        part = transaction_state_partition(txid, n_txn) if n_txn else None
        return {
            "transactional_id": txid,
            "coordinator": {"txn_state_partition": part, "broker": desc.get("coordinator_broker")},
            "current": desc,
            "timeline": shown,
            "timeline_read_from_offset": self._txn_log.read_from.get(part) if part is not None else None,
            "timeline_next_offset": self._txn_log.next_offset.get(part) if part is not None else None,
            "inits": init_list,
            "producers": producers,
        }

    # ------------------------------------------------------------------------------------------ live updates

    def subscribe(
        self,
        callback: Callable[[dict[str, Any]], None],
        topics: Iterable[str] = (),
        transactional_ids: Iterable[str] = (),
        **kwargs: Any,
    ) -> Subscription:
        """Call `callback(report)` (the dict `inspect` returns, or {"error": message}) now and every
        INSPECTOR_POLL_INTERVAL_S, from the inspector's one polling thread, until `Subscription.close()`.
        Targets are checked against the allow-lists here, so a refused subscription raises at once."""
        topics = tuple(sorted({self.settings.check_topic(t) for t in topics}))
        transactional_ids = tuple(sorted({self.settings.check_transactional_id(t) for t in transactional_ids}))
        sub = Subscription(self, callback, {"topics": topics, "transactional_ids": transactional_ids, **kwargs})
        with self._lock:
            self._subs.append(sub)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._poll_loop, name="inspector-poll", daemon=True)
                self._thread.start()
            self._wake.set()
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)
            self._wake.set()

    def _poll_loop(self) -> None:
        while True:
            with self._lock:
                subs = list(self._subs)
                if not subs:
                    self._thread = None
                    return
            for sub in subs:
                if sub.closed:
                    continue
                try:
                    report = self.inspect(**sub.kwargs)
                except InspectorError as e:
                    report = {"error": str(e)}
                try:
                    sub.callback(report)
                except Exception:
                    log.exception("inspector subscriber failed")
            self._wake.wait(self.settings.poll_interval_s)
            self._wake.clear()


class Subscription:
    def __init__(
        self, inspector: ClusterInspector, callback: Callable[[dict[str, Any]], None], kwargs: dict[str, Any]
    ) -> None:
        self.inspector = inspector
        self.callback = callback
        self.kwargs = kwargs
        self.closed = False

    def close(self) -> None:
        self.closed = True
        self.inspector._unsubscribe(self)


# ------------------------------------------------------------------------------------------------ registry

_REGISTRY: dict[str, ClusterInspector] = {}
_REGISTRY_LOCK = threading.Lock()


def registry_key(bootstrap: str) -> str:
    return ",".join(sorted(s.strip().lower().removeprefix("plaintext://") for s in bootstrap.split(",") if s.strip()))


def get_inspector(**overrides: Any) -> ClusterInspector:
    """The process's inspector of the cluster in settings (created on first use). `overrides`: settings by field
    name (load_settings), for the CLI and tests."""
    s = load_settings(**overrides)
    if not s.bootstrap:
        raise InspectorError("No Kafka cluster is configured: set KAFKA_BOOTSTRAP_SERVERS in the server's settings.")
    check_security(s.bootstrap, s.client)
    key = registry_key(s.bootstrap)
    with _REGISTRY_LOCK:
        insp = _REGISTRY.get(key)
        if insp is None:
            insp = _REGISTRY[key] = ClusterInspector(s)
        else:
            insp.update_settings(s)
        return insp


def forget_inspectors() -> None:
    """Close and drop every inspector of this process (tests; a settings reload)."""
    with _REGISTRY_LOCK:
        for insp in _REGISTRY.values():
            insp.close()
        _REGISTRY.clear()


def _now_ms() -> int:
    return int(time.time() * 1000)


def _freeze(d: dict | None) -> Any:
    if not d:
        return None
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in d.items()))
