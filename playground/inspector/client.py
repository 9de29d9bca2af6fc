"""The inspector's only connection to a cluster: playground/kafka/wire.py's raw protocol client, limited to
read-only requests.

Read-only by construction: `ReadOnlyWire` refuses to send any request whose API key is not in READ_ONLY_APIS
(Fetch, ListOffsets, Metadata, DescribeProducers, DescribeTransactions, ListTransactions). There is no Produce,
no InitProducerId, no OffsetCommit, no JoinGroup, no FindCoordinator (which auto-creates __transaction_state on a
cluster that never saw a transaction), no WriteTxnMarkers, no admin API that changes anything. Metadata is sent
with allow_auto_topic_creation=false (wire.py). The coordinator of a transactional id is found the way the broker
finds it, without FindCoordinator: partition abs(hashCode(id)) % partitions of __transaction_state, and its leader
(TransactionStateManager.partitionFor).

Fetches are bounded: bytes per request (INSPECTOR_FETCH_MAX_BYTES) and records per range; the caller chooses the
range (a window around the LSO and the end, never the whole log).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from kio.schema.list_offsets.v2.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64

from playground.kafka.wire import (
    ERROR_NAMES,
    RETRIABLE,
    BrokerError,
    LogEntry,
    WireClient,
    WireError,
    decode_batches,
    describe_producers_request,
    describe_transaction_state,
    describe_transactions_request,
    error_name,
    list_transactions_request,
    listed_transactions,
    producer_state,
    transaction_state_partition,
)

TXN_TOPIC = "__transaction_state"
READ_ONLY_APIS = {
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    61: "DescribeProducers",
    65: "DescribeTransactions",
    66: "ListTransactions",
}
LATEST, EARLIEST = -1, -2  # ListOffsets timestamps (ListOffsetsRequest.LATEST_TIMESTAMP / EARLIEST_TIMESTAMP)

TP = tuple[str, int]


class ReadOnlyWire(WireClient):
    """wire.WireClient that sends read-only requests only. Not thread-safe (like WireClient): the owner locks."""

    def __init__(self, bootstrap: str, *, timeout_s: float, max_bytes: int) -> None:
        super().__init__(bootstrap, timeout_s=timeout_s, client_id="txn-playground-inspector")
        self.max_bytes = max_bytes
        self.sent: dict[str, int] = defaultdict(int)  # requests by API name: what the inspector cost the cluster

    @staticmethod
    def _check(req: Any) -> str:
        name = READ_ONLY_APIS.get(int(req.__api_key__))
        if name is None:
            from playground.inspector.config import RefusedError

            raise RefusedError(f"the inspector never sends {type(req).__name__} (API key {req.__api_key__}): read-only")
        return name

    def _send_any(self, req: Any) -> Any:
        self.sent[self._check(req)] += 1
        return super()._send_any(req)

    def send_to(self, node_id: int, req: Any, timeout_s: float | None = None) -> Any:
        self.sent[self._check(req)] += 1
        return super().send_to(node_id, req, timeout_s)

    def find_coordinator(self, key: str, key_type: int) -> int:
        from playground.inspector.config import RefusedError

        raise RefusedError("the inspector never sends FindCoordinator (it can create __transaction_state)")

    # ----------------------------------------------------------------------------------------- topology

    def partitions_of(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """Partitions per topic; a topic the cluster does not know is missing from the answer."""
        topics = list(topics)
        if not topics:
            return {}
        meta = self.metadata(topics)
        out: dict[str, list[int]] = {}
        for (t, p), pm in meta.partitions.items():
            if t in topics and pm.error != "UNKNOWN_TOPIC_OR_PARTITION":
                out.setdefault(t, []).append(p)
        for t in out:
            out[t].sort()
        return {t: out[t] for t in topics if t in out and t not in meta.topic_errors}

    def all_topics(self) -> list[str]:
        meta = self.metadata(None)
        return sorted({t for (t, _p) in meta.partitions})

    def txn_state_partitions(self) -> int:
        """How many partitions __transaction_state has; 0 when it does not exist (no transaction ever)."""
        meta = self.metadata([TXN_TOPIC])
        return sum(
            1 for (t, _p), pm in meta.partitions.items() if t == TXN_TOPIC and pm.error != "UNKNOWN_TOPIC_OR_PARTITION"
        )

    def _by_leader(self, tps: Iterable[TP], errors: dict[TP, str] | None = None) -> dict[int, list[TP]]:
        """Partitions grouped by their leader; a partition without one goes to `errors` (or raises)."""
        tps = list(tps)
        missing = [tp for tp in tps if self.meta is None or tp not in self.meta.partitions]
        if missing:
            self.metadata(sorted({t for t, _ in missing}))
        groups: dict[int, list[TP]] = defaultdict(list)
        for tp in tps:
            try:
                groups[self.leader(*tp)].append(tp)
            except BrokerError as e:
                if errors is None:
                    raise
                errors[tp] = str(e)
        return groups

    # ----------------------------------------------------------------------------------------- offsets

    def list_offsets(
        self,
        tps: Iterable[TP],
        timestamp: int = LATEST,
        *,
        committed: bool = False,
        errors: dict[TP, str] | None = None,
    ) -> dict[TP, int | None]:
        """ListOffsets, one request per leader. LATEST at read_uncommitted is the high watermark, at read_committed
        the last stable offset; a timestamp gives the first offset at or after it (None: none). A partition that
        fails goes to `errors` when given (else the error is raised)."""
        out: dict[TP, int | None] = {}
        tps = list(tps)
        errs: dict[TP, str] = {}
        for attempt in range(3):
            todo = [tp for tp in tps if tp not in out and tp not in errs]
            if not todo:
                break
            if attempt:
                self.metadata(sorted({t for t, _ in todo}))
                time.sleep(0.2)
            for leader, group in self._by_leader(todo, errs if errors is not None else None).items():
                by_topic: dict[str, list[int]] = defaultdict(list)
                for t, p in group:
                    by_topic[t].append(p)
                req = ListOffsetsRequest(
                    replica_id=BrokerId(-1),
                    isolation_level=i8(1 if committed else 0),
                    topics=tuple(
                        ListOffsetsTopic(
                            name=TopicName(t),
                            partitions=tuple(
                                ListOffsetsPartition(partition_index=i32(p), timestamp=i64(timestamp)) for p in ps
                            ),
                        )
                        for t, ps in by_topic.items()
                    ),
                )
                resp = self.send_to(leader, req)
                for topic in resp.topics:
                    t = str(topic.name)
                    for part in topic.partitions:
                        p, err, offset = int(part.partition_index), int(part.error_code), int(part.offset)
                        if err in RETRIABLE and attempt < 2:
                            continue
                        if err and errors is None:
                            raise BrokerError(err, f"ListOffsets {t}-{p}")
                        if err:
                            errs[(t, p)] = str(BrokerError(err, f"ListOffsets {t}-{p}"))
                            continue
                        out[(t, p)] = offset if offset >= 0 else None
        if errors is not None:
            errors.update(errs)
            for tp in tps:
                if tp not in out and tp not in errs:
                    errors[tp] = f"ListOffsets {tp[0]}-{tp[1]}: no answer"
        return out

    # ----------------------------------------------------------------------------------------- logs

    def read_range(
        self, topic: str, partition: int, start: int, end: int | None, max_records: int
    ) -> tuple[list[LogEntry], dict[str, int]]:
        """Entries (control batches included) with start <= offset < end (end None: up to the high watermark),
        at most max_records, each Fetch at most max_bytes. Returns (entries, marks of the last Fetch)."""
        entries: list[LogEntry] = []
        offset = start
        marks: dict[str, int] = {}
        while max_records > len(entries):
            fp = self.fetch(topic, partition, offset, max_bytes=self.max_bytes)
            if fp.error == "OFFSET_OUT_OF_RANGE" and offset < fp.log_start_offset:
                offset = fp.log_start_offset  # deleted by retention or compaction meanwhile
                continue
            if fp.error:
                code = next((c for c, n in ERROR_NAMES.items() if n == fp.error), -1)
                raise BrokerError(code, f"Fetch {topic}-{partition}")
            marks = {
                "high_watermark": fp.high_watermark,
                "last_stable_offset": fp.last_stable_offset,
                "log_start_offset": fp.log_start_offset,
            }
            stop = fp.high_watermark if end is None else min(end, fp.high_watermark)
            new = [e for e in decode_batches(fp.records) if offset <= e.offset < stop]
            if not new:
                break
            entries.extend(new[: max_records - len(entries)])
            offset = new[-1].next_offset
            if offset >= stop:
                break
        return entries, marks

    # ----------------------------------------------------------------------------------------- KIP-664

    def describe_producers_of(self, tps: Iterable[TP]) -> dict[TP, list[dict[str, Any]] | str]:
        """DescribeProducers, one request per leader. Per partition: its active producers, or an error name."""
        out: dict[TP, list[dict[str, Any]] | str] = {}
        errors: dict[TP, str] = {}
        groups = self._by_leader(tps, errors)
        out.update(errors)
        for leader, group in groups.items():
            by_topic: dict[str, list[int]] = defaultdict(list)
            for t, p in group:
                by_topic[t].append(p)
            resp = self.send_to(leader, describe_producers_request(dict(by_topic)))
            for topic in resp.topics:
                for part in topic.partitions:
                    tp = (str(topic.name), int(part.partition_index))
                    err, msg = int(part.error_code), part.error_message
                    if err:
                        out[tp] = f"{error_name(err)}{': ' + msg if msg else ''}"
                        continue
                    out[tp] = [producer_state(p) for p in part.active_producers]
        return out

    def coordinator_of(self, txid: str, n_partitions: int) -> tuple[int, int]:
        """(partition of __transaction_state, its leader = the coordinator), as TransactionStateManager does."""
        part = transaction_state_partition(txid, n_partitions)
        return part, self.leader(TXN_TOPIC, part)

    def describe_transaction(self, txid: str, n_partitions: int) -> dict[str, Any]:
        """DescribeTransactions at the id's coordinator. {"state": None} when the coordinator does not know it."""
        last: Exception | None = None
        for attempt in range(5):
            part, coord = self.coordinator_of(txid, n_partitions)
            try:
                resp = self.send_to(coord, describe_transactions_request([txid]))
            except WireError as e:
                last = e
                self.metadata([TXN_TOPIC])
                continue
            try:
                described = describe_transaction_state(resp.transaction_states[0], coord)
            except BrokerError as e:
                if not e.retriable:
                    raise
                last = e
                self.metadata([TXN_TOPIC])  # the coordinator moved: NOT_COORDINATOR / loading
                time.sleep(0.1 * (attempt + 1))
                continue
            return {**described, "coordinator_partition": part}
        raise last or WireError(f"DescribeTransactions {txid}: no answer")

    def list_transactions(
        self, *, states: Iterable[str] = (), producer_ids: Iterable[int] = ()
    ) -> list[dict[str, Any]]:
        """ListTransactions on every broker (each lists the ids it coordinates), with the request's own filters."""
        meta = self.metadata([])
        out = []
        req = list_transactions_request(states, producer_ids)
        for nid in sorted(meta.brokers):
            out.extend(listed_transactions(self.send_to(nid, req), nid))
        return out
