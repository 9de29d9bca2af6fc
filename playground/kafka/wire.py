"""A minimal, blocking Kafka protocol client for what confluent-kafka does not expose: a raw Fetch that keeps
control batches (COMMIT/ABORT markers with their producer id and epoch), DescribeTransactions, ListTransactions,
DescribeProducers, FindCoordinator, and ApiVersions' feature levels (which Kafka a broker runs, and the cluster's
finalized transaction.version).

Encoding and decoding use kafka-python's protocol classes (`kafka.protocol.*`, flexible versions through its
Compact*/TaggedFields types); the requests kafka-python lacks (KIP-664's admin APIs) are declared below in the same
style. The transport is ours: one plain socket per broker, every connect, send and receive bounded by a timeout, so
an unreachable or stopped broker turns into `WireError` within seconds instead of a hang.

Addresses: the only addresses this client ever connects to are the bootstrap servers it is given (from server
settings) and the brokers those servers advertise in Metadata. Nothing a user types reaches it.
"""

from __future__ import annotations

import io
import socket
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.api import Request, Response
from kafka.protocol.api_versions import ApiVersionsRequest_v3
from kafka.protocol.fetch import FetchRequest_v11
from kafka.protocol.find_coordinator import FindCoordinatorRequest_v2
from kafka.protocol.metadata import MetadataRequest_v5
from kafka.protocol.types import (
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)
from kafka.record import MemoryRecords

# --------------------------------------------------------------------------------------------- KIP-664 APIs


class DescribeTransactionsResponse_v0(Response):
    API_KEY = 65
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "transaction_states",
            CompactArray(
                ("error_code", Int16),
                ("transactional_id", CompactString("utf-8")),
                ("transaction_state", CompactString("utf-8")),
                ("transaction_timeout_ms", Int32),
                ("transaction_start_time_ms", Int64),
                ("producer_id", Int64),
                ("producer_epoch", Int16),
                (
                    "topics",
                    CompactArray(
                        ("topic", CompactString("utf-8")),
                        ("partitions", CompactArray(Int32)),
                        ("tags", TaggedFields),
                    ),
                ),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class DescribeTransactionsRequest_v0(Request):
    API_KEY = 65
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = DescribeTransactionsResponse_v0
    SCHEMA = Schema(("transactional_ids", CompactArray(CompactString("utf-8"))), ("tags", TaggedFields))


class ListTransactionsResponse_v0(Response):
    API_KEY = 66
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        ("unknown_state_filters", CompactArray(CompactString("utf-8"))),
        (
            "transaction_states",
            CompactArray(
                ("transactional_id", CompactString("utf-8")),
                ("producer_id", Int64),
                ("transaction_state", CompactString("utf-8")),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class ListTransactionsRequest_v0(Request):
    API_KEY = 66
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = ListTransactionsResponse_v0
    SCHEMA = Schema(
        ("state_filters", CompactArray(CompactString("utf-8"))),
        ("producer_id_filters", CompactArray(Int64)),
        ("tags", TaggedFields),
    )


class DescribeProducersResponse_v0(Response):
    API_KEY = 61
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "topics",
            CompactArray(
                ("name", CompactString("utf-8")),
                (
                    "partitions",
                    CompactArray(
                        ("partition_index", Int32),
                        ("error_code", Int16),
                        ("error_message", CompactString("utf-8")),
                        (
                            "active_producers",
                            CompactArray(
                                ("producer_id", Int64),
                                ("producer_epoch", Int32),
                                ("last_sequence", Int32),
                                ("last_timestamp", Int64),
                                ("coordinator_epoch", Int32),
                                ("current_txn_start_offset", Int64),
                                ("tags", TaggedFields),
                            ),
                        ),
                        ("tags", TaggedFields),
                    ),
                ),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class DescribeProducersRequest_v0(Request):
    API_KEY = 61
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = DescribeProducersResponse_v0
    SCHEMA = Schema(
        (
            "topics",
            CompactArray(
                ("name", CompactString("utf-8")),
                ("partition_indexes", CompactArray(Int32)),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


# ------------------------------------------------------------------------------------------------ errors

# Kafka's error codes (Errors.java) that this client can meet, by name.
ERROR_NAMES = {
    0: None,
    1: "OFFSET_OUT_OF_RANGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    35: "UNSUPPORTED_VERSION",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    105: "TRANSACTIONAL_ID_NOT_FOUND",
}

RETRIABLE = {5, 6, 7, 14, 15, 16, 74, 75}


def error_name(code: int) -> str | None:
    return ERROR_NAMES.get(code, f"ERROR_{code}") if code else None


class WireError(Exception):
    """A broker could not be reached or answered garbage, within the time allowed."""


class BrokerError(WireError):
    def __init__(self, code: int, what: str) -> None:
        self.code = code
        super().__init__(f"{what}: {error_name(code)} ({code})")

    @property
    def retriable(self) -> bool:
        return self.code in RETRIABLE


# ------------------------------------------------------------------------------------------- transport


class _Connection:
    def __init__(self, host: str, port: int, timeout_s: float, client_id: str) -> None:
        self.addr = (host, port)
        self.timeout_s = timeout_s
        self.client_id = client_id
        self.correlation_id = 0
        try:
            self.sock = socket.create_connection(self.addr, timeout=timeout_s)
        except OSError as e:
            raise WireError(f"cannot connect to {host}:{port}: {e}") from None
        self.sock.settimeout(timeout_s)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def _recv_exactly(self, n: int, deadline: float) -> bytes:
        chunks = []
        while n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WireError(f"timed out reading from {self.addr[0]}:{self.addr[1]}")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(min(n, 1 << 20))
            except TimeoutError:
                raise WireError(f"timed out reading from {self.addr[0]}:{self.addr[1]}") from None
            except OSError as e:
                raise WireError(f"connection to {self.addr[0]}:{self.addr[1]} failed: {e}") from None
            if not chunk:
                raise WireError(f"connection to {self.addr[0]}:{self.addr[1]} closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def request(self, req: Request, timeout_s: float | None = None) -> Any:
        self.correlation_id += 1
        corr = self.correlation_id
        header = req.build_header(correlation_id=corr, client_id=self.client_id)
        message = header.encode() + req.encode()
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        try:
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            self.sock.sendall(Int32.encode(len(message)) + message)
        except OSError as e:
            raise WireError(f"sending to {self.addr[0]}:{self.addr[1]} failed: {e}") from None
        (size,) = struct.unpack(">i", self._recv_exactly(4, deadline))
        buf = io.BytesIO(self._recv_exactly(size, deadline))
        resp_type = req.RESPONSE_TYPE
        got = resp_type.parse_header(buf).correlation_id
        if got != corr:
            raise WireError(f"correlation id mismatch from {self.addr}: sent {corr}, got {got}")
        return resp_type.decode(buf)


@dataclass
class PartitionMeta:
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    error: str | None = None


@dataclass
class ClusterMeta:
    brokers: dict[int, tuple[str, int]]
    controller: int
    partitions: dict[tuple[str, int], PartitionMeta] = field(default_factory=dict)
    topic_errors: dict[str, str] = field(default_factory=dict)


@dataclass
class FetchedPartition:
    topic: str
    partition: int
    error: str | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list[tuple[int, int]]
    records: bytes


class WireClient:
    """Connections to the brokers of ONE cluster (the one in settings). Not thread-safe: one per thread."""

    def __init__(self, bootstrap_servers: str, *, timeout_s: float = 4.0, client_id: str = "txn-playground") -> None:
        self.bootstrap = [_parse_hostport(s) for s in bootstrap_servers.split(",") if s.strip()]
        if not self.bootstrap:
            raise WireError("no bootstrap servers configured")
        self.timeout_s = timeout_s
        self.client_id = client_id
        self._conns: dict[Any, _Connection] = {}
        self.meta: ClusterMeta | None = None

    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    # -- connections

    def _conn(self, key: Any, host: str, port: int) -> _Connection:
        c = self._conns.get(key)
        if c is None:
            c = _Connection(host, port, self.timeout_s, self.client_id)
            self._conns[key] = c
        return c

    def _drop(self, key: Any) -> None:
        c = self._conns.pop(key, None)
        if c:
            c.close()

    def _send_any(self, req: Request) -> Any:
        """Send to any reachable broker (known brokers first, then the bootstrap list), all within one timeout:
        a cluster whose every address hangs costs timeout_s, not timeout_s per address."""
        errors = []
        targets: list[tuple[Any, str, int]] = []
        if self.meta:
            targets += [(nid, h, p) for nid, (h, p) in sorted(self.meta.brokers.items())]
        targets += [(("bootstrap", h, p), h, p) for h, p in self.bootstrap]
        deadline = time.monotonic() + self.timeout_s
        for key, h, p in targets:
            left = deadline - time.monotonic()
            if left <= 0.05:
                errors.append("out of time")
                break
            try:
                if key not in self._conns:
                    c = _Connection(h, p, min(self.timeout_s, left), self.client_id)
                    c.timeout_s = self.timeout_s
                    self._conns[key] = c
                return self._conns[key].request(req, min(self.timeout_s, left))
            except WireError as e:
                self._drop(key)
                errors.append(str(e))
        raise WireError("no broker of the configured cluster answered: " + "; ".join(errors[-3:]))

    def send_to(self, node_id: int, req: Request, timeout_s: float | None = None) -> Any:
        if self.meta is None or node_id not in self.meta.brokers:
            self.metadata()
        assert self.meta is not None
        if node_id not in self.meta.brokers:
            raise WireError(f"broker {node_id} is not in the cluster's metadata (down?)")
        h, p = self.meta.brokers[node_id]
        try:
            return self._conn(node_id, h, p).request(req, timeout_s)
        except WireError:
            self._drop(node_id)
            raise

    # -- Metadata

    def metadata(self, topics: Iterable[str] | None = None) -> ClusterMeta:
        req = MetadataRequest_v5(topics=list(topics) if topics is not None else None, allow_auto_topic_creation=False)
        resp = self._send_any(req)
        brokers = {b[0]: (b[1], b[2]) for b in resp.brokers}
        meta = ClusterMeta(brokers=brokers, controller=resp.controller_id)
        for err, topic, _internal, parts in resp.topics:
            if err:
                meta.topic_errors[topic] = error_name(err) or ""
            for perr, pidx, leader, replicas, isr, _offline in parts:
                meta.partitions[(topic, pidx)] = PartitionMeta(
                    topic, pidx, leader, list(replicas), list(isr), error_name(perr)
                )
        if self.meta is not None and topics is not None:
            # keep what we knew about other topics
            merged = dict(self.meta.partitions)
            merged.update(meta.partitions)
            meta.partitions = merged
        self.meta = meta
        return meta

    def leader(self, topic: str, partition: int, refresh: bool = False) -> int:
        if refresh or self.meta is None or (topic, partition) not in self.meta.partitions:
            self.metadata([topic])
        assert self.meta is not None
        pm = self.meta.partitions.get((topic, partition))
        if pm is None:
            raise WireError(f"{topic}-{partition} is not in the cluster's metadata")
        if pm.leader < 0:
            raise BrokerError(5, f"{topic}-{partition} has no leader")
        return pm.leader

    # -- Fetch (keeps control batches: we decode the raw record batches ourselves)

    def fetch(
        self, topic: str, partition: int, offset: int, *, read_committed: bool = False, max_bytes: int = 4 << 20
    ) -> FetchedPartition:
        for attempt in range(3):
            leader = self.leader(topic, partition, refresh=attempt > 0)
            req = FetchRequest_v11(
                replica_id=-1,
                max_wait_time=0,
                min_bytes=0,
                max_bytes=max_bytes,
                isolation_level=1 if read_committed else 0,
                session_id=0,
                session_epoch=-1,
                topics=[(topic, [(partition, -1, offset, -1, max_bytes)])],
                forgotten_topics_data=[],
                rack_id="",
            )
            try:
                resp = self.send_to(leader, req)
            except WireError:
                if attempt == 2:
                    raise
                continue
            if resp.error_code:
                raise BrokerError(resp.error_code, "Fetch")
            for t, parts in resp.topics:
                for p, err, hw, lso, lstart, aborted, _pref, records in parts:
                    if err in RETRIABLE and attempt < 2:
                        break
                    return FetchedPartition(
                        t, p, error_name(err), hw, lso, lstart, [tuple(a) for a in (aborted or [])], records or b""
                    )
            time.sleep(0.2)
        raise WireError(f"Fetch {topic}-{partition}: no usable answer")

    def read_log(
        self, topic: str, partition: int, *, start: int = 0, limit: int = 100_000
    ) -> tuple[FetchedPartition, list[LogEntry]]:
        """Every batch of a partition from `start` up to its high watermark, control batches included."""
        entries: list[LogEntry] = []
        offset = start
        first: FetchedPartition | None = None
        while True:
            fp = self.fetch(topic, partition, offset)
            if fp.error == "OFFSET_OUT_OF_RANGE" and offset < fp.log_start_offset:
                offset = fp.log_start_offset
                continue
            if fp.error:
                raise BrokerError(
                    next((c for c, n in ERROR_NAMES.items() if n == fp.error), -1), f"Fetch {topic}-{partition}"
                )
            first = first or fp
            new = [e for e in decode_batches(fp.records) if e.offset >= offset]
            if not new:
                return _merge_marks(first, fp), entries
            entries.extend(new)
            offset = new[-1].next_offset
            if offset >= fp.high_watermark or len(entries) >= limit:
                return _merge_marks(first, fp), entries

    # -- coordinators and KIP-664

    def find_coordinator(self, key: str, key_type: int) -> int:
        """key_type 0 = group, 1 = transaction. Returns the coordinator's broker id."""
        last = None
        for _ in range(10):
            resp = self._send_any(FindCoordinatorRequest_v2(coordinator_key=key, coordinator_type=key_type))
            if not resp.error_code:
                if self.meta is None or resp.coordinator_id not in self.meta.brokers:
                    self.meta = self.meta or ClusterMeta({}, -1)
                    self.meta.brokers[resp.coordinator_id] = (resp.host, resp.port)
                return resp.coordinator_id
            last = BrokerError(resp.error_code, "FindCoordinator")
            if resp.error_code not in RETRIABLE:
                raise last
            time.sleep(0.2)
        raise last or WireError("FindCoordinator failed")

    def describe_transactions(self, transactional_ids: list[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for txid in transactional_ids:
            for attempt in range(6):
                coord = self.find_coordinator(txid, 1)
                resp = self.send_to(coord, DescribeTransactionsRequest_v0(transactional_ids=[txid], tags={}))
                (err, _tid, state, timeout_ms, start_ms, pid, epoch, topics, _t) = resp.transaction_states[0]
                if err in RETRIABLE and attempt < 5:
                    time.sleep(0.2)
                    continue
                if err == 105:
                    out[txid] = {"state": None, "coordinator_broker": coord}
                elif err:
                    raise BrokerError(err, f"DescribeTransactions {txid}")
                else:
                    out[txid] = {
                        "state": state,
                        "producer_id": pid,
                        "epoch": epoch,
                        "timeout_ms": timeout_ms,
                        "txn_start_time_ms": start_ms if start_ms >= 0 else None,
                        "partitions": sorted((t, p) for t, ps, _tg in topics for p in ps),
                        "coordinator_broker": coord,
                    }
                break
        return out

    def list_transactions(self) -> list[dict[str, Any]]:
        meta = self.metadata([])
        out = []
        for nid in sorted(meta.brokers):
            resp = self.send_to(nid, ListTransactionsRequest_v0(state_filters=[], producer_id_filters=[], tags={}))
            for tid, pid, state, _t in resp.transaction_states:
                out.append({"transactional_id": tid, "producer_id": pid, "state": state, "coordinator_broker": nid})
        return out

    def describe_producers(self, topic: str, partition: int) -> list[dict[str, Any]]:
        leader = self.leader(topic, partition)
        resp = self.send_to(
            leader,
            DescribeProducersRequest_v0(topics=[(topic, [partition], {})], tags={}),
        )
        out = []
        for _name, parts, _t in resp.topics:
            for _pidx, err, msg, producers, _t2 in parts:
                if err:
                    raise BrokerError(err, f"DescribeProducers {topic}-{partition}: {msg}")
                for pid, epoch, last_seq, last_ts, coord_epoch, txn_start, _t3 in producers:
                    out.append(
                        {
                            "producer_id": pid,
                            "epoch": epoch,
                            "last_sequence": last_seq,
                            "last_timestamp": last_ts,
                            "coordinator_epoch": coord_epoch,
                            "current_txn_start_offset": txn_start if txn_start >= 0 else None,
                        }
                    )
        return out

    # -- ApiVersions (KIP-584's feature levels ride in its tagged fields)

    def api_versions(self, node_id: int) -> BrokerVersions:
        """One broker's ApiVersions v3: the API versions it serves, the feature levels its software supports
        (tag 0) and the cluster-wide finalized levels (tag 2; a feature not listed is at level 0)."""
        resp = self.send_to(
            node_id,
            ApiVersionsRequest_v3(
                client_software_name="txn-playground", client_software_version="1", _tagged_fields={}
            ),
        )
        if resp.error_code:
            raise BrokerError(resp.error_code, f"ApiVersions (broker {node_id})")
        tags = resp._tagged_fields or {}
        return BrokerVersions(
            api_keys={key: (lo, hi) for key, lo, hi, _t in resp.api_versions},
            supported={name: (lo, hi) for name, lo, hi in _features(tags.get(0))},
            finalized={name: hi for name, hi, _lo in _features(tags.get(2))},
        )


@dataclass
class BrokerVersions:
    api_keys: dict[int, tuple[int, int]]
    supported: dict[str, tuple[int, int]]  # feature -> (min, max) level this broker's software supports
    finalized: dict[str, int]  # feature -> the cluster's finalized (max) level


def _features(raw: bytes | None) -> list[tuple[str, int, int]]:
    """ApiVersionsResponse's SupportedFeatures / FinalizedFeatures: a compact array of (name, int16, int16, tags)."""
    if not raw:
        return []
    buf = io.BytesIO(raw)
    out = []
    for _ in range(max(_read_uvarint(buf) - 1, 0)):
        name = buf.read(_read_uvarint(buf) - 1).decode("utf-8")
        first, second = struct.unpack(">hh", buf.read(4))
        _skip_tags(buf)
        out.append((name, first, second))
    return out


def _merge_marks(first: FetchedPartition, last: FetchedPartition) -> FetchedPartition:
    return FetchedPartition(
        first.topic,
        first.partition,
        None,
        last.high_watermark,
        last.last_stable_offset,
        first.log_start_offset,
        first.aborted_transactions,
        b"",
    )


def _parse_hostport(s: str) -> tuple[str, int]:
    s = s.strip()
    for prefix in ("PLAINTEXT://", "plaintext://"):
        if s.startswith(prefix):
            s = s[len(prefix) :]
    host, _, port = s.rpartition(":")
    if not host or not port.isdigit():
        raise WireError(f"bad bootstrap server {s!r} in settings (want host:port)")
    return host.strip("[]"), int(port)


# --------------------------------------------------------------------------------------------- records


@dataclass
class LogEntry:
    offset: int
    next_offset: int
    producer_id: int
    epoch: int
    sequence: int
    transactional: bool
    control: str | None = None  # "COMMIT" | "ABORT" | None
    coordinator_epoch: int | None = None
    key: bytes | None = None
    value: bytes | None = None
    timestamp_ms: int | None = None
    batch_bytes: int = 0  # size of the record batch this entry came in (on disk and on the wire)

    def to_dict(self) -> dict[str, Any]:
        if self.control:
            return {
                "offset": self.offset,
                "control": self.control,
                "producer_id": self.producer_id,
                "epoch": self.epoch,
            }
        return {
            "offset": self.offset,
            "key": _text(self.key),
            "value": _text(self.value),
            "producer_id": self.producer_id,
            "epoch": self.epoch,
            "sequence": self.sequence,
            "transactional": self.transactional,
        }


def _text(b: bytes | None) -> str | None:
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b.hex()


CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}


def decode_control_key(key: bytes) -> str:
    """Control record key: int16 version (0), int16 type (ABORT=0, COMMIT=1)."""
    if key is None or len(key) < 4:
        raise ValueError("control record key too short")
    _version, ctype = struct.unpack(">hh", key[:4])
    return CONTROL_TYPES.get(ctype, f"CONTROL_{ctype}")


def decode_control_value(value: bytes | None) -> int | None:
    """Control record value (markers): int16 version (0), int32 coordinator epoch."""
    if not value or len(value) < 6:
        return None
    _version, coord_epoch = struct.unpack(">hi", value[:6])
    return coord_epoch


def decode_batches(data: bytes) -> list[LogEntry]:
    """Decode a Fetch response's records (magic 2 batches), control batches INCLUDED.

    kafka-python's consumer drops control batches; here we read the batch header ourselves (producer id, epoch,
    base sequence, the transactional and control attribute bits) through `kafka.record.MemoryRecords`.
    """
    out: list[LogEntry] = []
    if not data:
        return out
    mr = MemoryRecords(data)
    while True:
        batch = mr.next_batch()
        if batch is None:
            break
        if getattr(batch, "magic", 2) != 2:  # pre-0.11 formats carry no producer state
            for rec in batch:
                out.append(LogEntry(rec.offset, rec.offset + 1, -1, -1, -1, False, key=rec.key, value=rec.value))
            continue
        pid, epoch, base_seq = batch.producer_id, batch.producer_epoch, batch.base_sequence
        txn, ctrl = batch.is_transactional, batch.is_control_batch
        next_offset = batch.next_offset
        size = batch.size_in_bytes
        first = len(out)
        for _i, rec in enumerate(batch):
            if ctrl:
                # kafka-python yields ControlRecord objects: raw key/value still available
                key = rec.key
                out.append(
                    LogEntry(
                        rec.offset,
                        rec.offset + 1,
                        pid,
                        epoch,
                        -1,
                        txn,
                        control=decode_control_key(key),
                        coordinator_epoch=decode_control_value(rec.value),
                        timestamp_ms=rec.timestamp,
                    )
                )
            else:
                seq = base_seq + (rec.offset - batch.base_offset) if base_seq >= 0 else -1
                out.append(
                    LogEntry(
                        rec.offset,
                        rec.offset + 1,
                        pid,
                        epoch,
                        seq,
                        txn,
                        key=rec.key,
                        value=rec.value,
                        timestamp_ms=rec.timestamp,
                    )
                )
        for e in out[first:]:
            e.batch_bytes = size
        if out:
            out[-1].next_offset = max(out[-1].next_offset, next_offset)
    return out


# ------------------------------------------------------------------------------------ __transaction_state

TXN_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}


def java_string_hash(s: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def transaction_state_partition(transactional_id: str, partitions: int = 50) -> int:
    """Utils.abs(hashCode) % partitions, where Kafka's abs maps Integer.MIN_VALUE to 0."""
    h = java_string_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def decode_txn_key(key: bytes) -> str | None:
    """Key: int16 version (0), string transactional id (int16 length). None for keys of other versions."""
    buf = io.BytesIO(key)
    (version,) = struct.unpack(">h", buf.read(2))
    if version != 0:
        return None
    (n,) = struct.unpack(">h", buf.read(2))
    return buf.read(n).decode("utf-8")


def _read_uvarint(buf: io.BytesIO) -> int:
    shift = result = 0
    while True:
        b = buf.read(1)
        if not b:
            raise ValueError("buffer underrun in varint")
        result |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return result
        shift += 7


def decode_txn_value(value: bytes | None) -> dict[str, Any] | None:
    """TransactionLogValue v0 (classic encoding) or v1 (flexible). None = tombstone (expired id)."""
    if value is None:
        return None
    buf = io.BytesIO(value)
    (version,) = struct.unpack(">h", buf.read(2))
    pid, epoch, timeout_ms, status = struct.unpack(">qhib", buf.read(15))
    partitions: list[tuple[str, int]] = []
    tags: dict[int, bytes] = {}
    if version == 0:
        (n,) = struct.unpack(">i", buf.read(4))
        for _ in range(max(n, 0)):
            (tl,) = struct.unpack(">h", buf.read(2))
            topic = buf.read(tl).decode("utf-8")
            (pn,) = struct.unpack(">i", buf.read(4))
            for _ in range(pn):
                partitions.append((topic, struct.unpack(">i", buf.read(4))[0]))
        last_update, start = struct.unpack(">qq", buf.read(16))
    else:
        n = _read_uvarint(buf) - 1
        for _ in range(max(n, 0)):
            tl = _read_uvarint(buf) - 1
            topic = buf.read(tl).decode("utf-8")
            pn = _read_uvarint(buf) - 1
            for _ in range(pn):
                partitions.append((topic, struct.unpack(">i", buf.read(4))[0]))
            _skip_tags(buf)
        last_update, start = struct.unpack(">qq", buf.read(16))
        tags = _read_tags(buf)
    out = {
        "version": version,
        "producer_id": pid,
        "epoch": epoch,
        "timeout_ms": timeout_ms,
        "state": TXN_STATES.get(status, f"UNKNOWN_{status}"),
        "partitions": sorted(partitions),
        "last_update_ms": last_update,
        "txn_start_time_ms": start if start >= 0 else None,
    }
    if 0 in tags:
        out["previous_producer_id"] = struct.unpack(">q", tags[0][:8])[0]
    if 1 in tags:
        out["next_producer_id"] = struct.unpack(">q", tags[1][:8])[0]
    if 2 in tags:
        out["client_transaction_version"] = struct.unpack(">h", tags[2][:2])[0]
    return out


def _read_tags(buf: io.BytesIO) -> dict[int, bytes]:
    n = _read_uvarint(buf)
    out = {}
    for _ in range(n):
        tag = _read_uvarint(buf)
        size = _read_uvarint(buf)
        out[tag] = buf.read(size)
    return out


def _skip_tags(buf: io.BytesIO) -> None:
    _read_tags(buf)
