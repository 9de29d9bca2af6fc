"""A minimal, blocking Kafka protocol client for what confluent-kafka does not expose: a raw Fetch that keeps
control batches (COMMIT/ABORT markers with their producer id and epoch), DescribeTransactions, ListTransactions,
DescribeProducers, FindCoordinator, ListOffsets, Metadata, and ApiVersions' feature levels (which Kafka a broker runs,
and the cluster's finalized transaction.version).

Messages are kio's (dataclasses generated from Kafka's own schemas, clients/src/main/resources/common/message/*.json;
`kio.serial` writes and reads them, their header versions included). One message is the protocol package's instead
(playground/protocol/schemas.py): the DescribeTransactions response, whose TransactionStartTimeMs is -1 while no
transaction is open, which kio's timestamp type refuses (DescribeTransactionsResponse.json types it int64).
`describe_transaction_state` is the one parser of its answers, for the backend and the inspector alike. Record
batches are decoded in records.py (with the protocol package's batch reader).

The transport is ours: one plain socket per broker, every connect, send and receive bounded by a timeout, so an
unreachable or stopped broker turns into `WireError` within seconds instead of a hang.

Addresses: the only addresses this client ever connects to are the bootstrap servers it is given (from server
settings) and the brokers those servers advertise in Metadata. Nothing a user types reaches it.
"""

from __future__ import annotations

import datetime
import io
import socket
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kio.index import load_request_schema, load_response_from_request
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.describe_producers.v0.request import DescribeProducersRequest, TopicRequest
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.list_transactions.v0.request import ListTransactionsRequest
from kio.schema.metadata.v5.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import BrokerId, ProducerId, TopicName, TransactionalId
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i8, i32, i32Timedelta, i64

from playground.kafka.records import (
    TXN_STATES,
    LogEntry,
    decode_batches,
    decode_control_value,
    decode_txn_key,
    decode_txn_value,
    java_string_hash,
    transaction_state_partition,
)
from playground.protocol.schemas import DescribeTransactionsResponseV0

__all__ = [
    "TXN_STATES",
    "BrokerError",
    "LogEntry",
    "WireClient",
    "WireError",
    "advertised",
    "decode_batches",
    "decode_control_value",
    "decode_txn_key",
    "decode_txn_value",
    "describe_transaction_state",
    "java_string_hash",
    "transaction_state_partition",
]

# --------------------------------------------------------------------------------------------- messages


RESPONSES: dict[tuple[int, int], type[Any]] = {(65, 0): DescribeTransactionsResponseV0}
API_VERSIONS = 18


def response_type(request_type: type[Any]) -> type[Any]:
    key = (int(request_type.__api_key__), int(request_type.__version__))
    return RESPONSES.get(key) or load_response_from_request(request_type)


def encode_request(req: Any, correlation_id: int, client_id: str) -> bytes:
    """The request's header (the version its schema names) and body, without the size prefix."""
    header_type = req.__header_schema__
    header = header_type(
        request_api_key=req.__api_key__,
        request_api_version=req.__version__,
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    buf = io.BytesIO()
    entity_writer(header_type)(buf, header)
    entity_writer(type(req))(buf, req)
    return buf.getvalue()


def decode_response(request_type: type[Any], data: bytes) -> tuple[int, Any]:
    """(correlation id, response) of an answer to a request of that type, without the size prefix."""
    resp_type = response_type(request_type)
    try:
        header, size = entity_reader(resp_type.__header_schema__)(data, 0)
        resp, _ = entity_reader(resp_type)(data, size)
    except Exception as e:  # kio raises ValueError and friends on what it cannot read
        raise WireError(f"cannot read the answer to {request_type.__name__}: {e}") from None
    return int(header.correlation_id), resp


def describe_transaction_state(state: Any, coordinator: int) -> dict[str, Any]:
    """One transactional id's DescribeTransactions answer at its coordinator, in Kafka's words:
    {"state": None, ...} when the coordinator does not know the id (TRANSACTIONAL_ID_NOT_FOUND); BrokerError for any
    other error (`.retriable` when the coordinator moved or is loading)."""
    err = int(state.error_code)
    if err == TRANSACTIONAL_ID_NOT_FOUND:
        return {"state": None, "coordinator_broker": coordinator}
    if err:
        raise BrokerError(err, f"DescribeTransactions {state.transactional_id}")
    start_ms = int(state.transaction_start_time_ms)
    return {
        "state": state.transaction_state,
        "producer_id": int(state.producer_id),
        "producer_epoch": int(state.producer_epoch),
        "transaction_timeout_ms": int(state.transaction_timeout_ms),
        "transaction_start_time_ms": start_ms if start_ms >= 0 else None,
        "partitions": sorted((str(t.topic), int(p)) for t in state.topics for p in t.partitions),
        "coordinator_broker": coordinator,
    }


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
TRANSACTIONAL_ID_NOT_FOUND = 105


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

    def request(self, req: Any, timeout_s: float | None = None) -> Any:
        self.correlation_id += 1
        corr = self.correlation_id
        message = encode_request(req, corr, self.client_id)
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        try:
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            self.sock.sendall(struct.pack(">i", len(message)) + message)
        except OSError as e:
            raise WireError(f"sending to {self.addr[0]}:{self.addr[1]} failed: {e}") from None
        (size,) = struct.unpack(">i", self._recv_exactly(4, deadline))
        got, resp = decode_response(type(req), self._recv_exactly(size, deadline))
        if got != corr:
            raise WireError(f"correlation id mismatch from {self.addr}: sent {corr}, got {got}")
        return resp


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

    def _send_any(self, req: Any) -> Any:
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

    def send_to(self, node_id: int, req: Any, timeout_s: float | None = None) -> Any:
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
        resp = self._send_any(metadata_request(topics))
        brokers = {int(b.node_id): (b.host, int(b.port)) for b in resp.brokers}
        meta = ClusterMeta(brokers=brokers, controller=int(resp.controller_id))
        for t in resp.topics:
            topic = str(t.name)
            if int(t.error_code):
                meta.topic_errors[topic] = error_name(int(t.error_code)) or ""
            for part in t.partitions:
                pidx = int(part.partition_index)
                meta.partitions[(topic, pidx)] = PartitionMeta(
                    topic,
                    pidx,
                    int(part.leader_id),
                    [int(r) for r in part.replica_nodes],
                    [int(r) for r in part.isr_nodes],
                    error_name(int(part.error_code)),
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
            req = FetchRequest(
                replica_id=BrokerId(-1),
                max_wait=i32Timedelta.parse(datetime.timedelta(0)),
                min_bytes=i32(0),
                max_bytes=i32(max_bytes),
                isolation_level=i8(1 if read_committed else 0),
                session_id=i32(0),
                session_epoch=i32(-1),
                topics=(
                    FetchTopic(
                        topic=TopicName(topic),
                        partitions=(
                            FetchPartition(
                                partition=i32(partition),
                                current_leader_epoch=i32(-1),
                                fetch_offset=i64(offset),
                                log_start_offset=i64(-1),
                                partition_max_bytes=i32(max_bytes),
                            ),
                        ),
                    ),
                ),
                forgotten_topics_data=(),
                rack_id="",
            )
            try:
                resp = self.send_to(leader, req)
            except WireError:
                if attempt == 2:
                    raise
                continue
            if int(resp.error_code):
                raise BrokerError(int(resp.error_code), "Fetch")
            for t in resp.responses:
                for p in t.partitions:
                    err = int(p.error_code)
                    if err in RETRIABLE and attempt < 2:
                        break
                    return FetchedPartition(
                        str(t.topic),
                        int(p.partition_index),
                        error_name(err),
                        int(p.high_watermark),
                        int(p.last_stable_offset),
                        int(p.log_start_offset),
                        [(int(a.producer_id), int(a.first_offset)) for a in (p.aborted_transactions or ())],
                        bytes(p.records or b""),
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
            resp = self._send_any(FindCoordinatorRequest(key=key, key_type=i8(key_type)))
            code, node = int(resp.error_code), int(resp.node_id)
            if not code:
                if self.meta is None or node not in self.meta.brokers:
                    self.meta = self.meta or ClusterMeta({}, -1)
                    self.meta.brokers[node] = (resp.host, int(resp.port))
                return node
            last = BrokerError(code, "FindCoordinator")
            if code not in RETRIABLE:
                raise last
            time.sleep(0.2)
        raise last or WireError("FindCoordinator failed")

    def describe_transactions(self, transactional_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Each id's state at its coordinator (found with FindCoordinator), parsed by describe_transaction_state."""
        out: dict[str, dict[str, Any]] = {}
        for txid in transactional_ids:
            for attempt in range(6):
                coord = self.find_coordinator(txid, 1)
                resp = self.send_to(coord, describe_transactions_request([txid]))
                try:
                    out[txid] = describe_transaction_state(resp.transaction_states[0], coord)
                except BrokerError as e:
                    if e.retriable and attempt < 5:
                        time.sleep(0.2)
                        continue
                    raise
                break
        return out

    def list_transactions(self) -> list[dict[str, Any]]:
        meta = self.metadata([])
        out = []
        for nid in sorted(meta.brokers):
            resp = self.send_to(nid, list_transactions_request())
            out.extend(listed_transactions(resp, nid))
        return out

    def describe_producers(self, topic: str, partition: int) -> list[dict[str, Any]]:
        leader = self.leader(topic, partition)
        resp = self.send_to(leader, describe_producers_request({topic: [partition]}))
        out = []
        for t in resp.topics:
            for part in t.partitions:
                if int(part.error_code):
                    raise BrokerError(
                        int(part.error_code), f"DescribeProducers {topic}-{partition}: {part.error_message}"
                    )
                for p in part.active_producers:
                    state = producer_state(p)
                    state["epoch"] = state.pop("producer_epoch")
                    out.append(state)
        return out

    # -- ApiVersions (KIP-584's feature levels ride in its tagged fields)

    def api_versions(self, node_id: int) -> BrokerVersions:
        """One broker's ApiVersions v3: the API versions it serves, the feature levels its software supports
        (tag 0) and the cluster-wide finalized levels (tag 2; a feature not listed is at level 0)."""
        resp = self.send_to(
            node_id, ApiVersionsRequest(client_software_name="txn-playground", client_software_version="1")
        )
        if int(resp.error_code):
            raise BrokerError(int(resp.error_code), f"ApiVersions (broker {node_id})")
        return BrokerVersions(
            api_keys={int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys},
            supported={f.name: (int(f.min_version), int(f.max_version)) for f in resp.supported_features},
            finalized={f.name: int(f.max_version_level) for f in resp.finalized_features},
        )


def advertised(server: str, version: int = 4, timeout_s: float = 20.0) -> dict[str, dict[Any, tuple[int, int]]]:
    """What the broker at `server` (host:port, or the first of a bootstrap list) advertises in an ApiVersions
    request of `version` (a 3.5 broker
    answers v3 at most; from v4 on, the features whose lowest level is 0 are named too, KIP-1022): "api_keys" (api
    key -> lowest and highest version), "supported" (feature -> the levels its software supports) and "finalized"
    (feature -> the cluster's finalized levels)."""
    host, port = _parse_hostport(server.split(",")[0])
    request_type: Any = load_request_schema(API_VERSIONS, version)
    conn = _Connection(host, port, timeout_s, "txn-playground")
    try:
        resp = conn.request(request_type(client_software_name="txn-playground", client_software_version="1"))
    finally:
        conn.close()
    if int(resp.error_code):
        raise BrokerError(int(resp.error_code), f"ApiVersions v{version} ({server})")
    return {
        "api_keys": {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys},
        "supported": {f.name: (int(f.min_version), int(f.max_version)) for f in resp.supported_features},
        "finalized": {f.name: (int(f.min_version_level), int(f.max_version_level)) for f in resp.finalized_features},
    }


@dataclass
class BrokerVersions:
    api_keys: dict[int, tuple[int, int]]
    supported: dict[str, tuple[int, int]]  # feature -> (min, max) level this broker's software supports
    finalized: dict[str, int]  # feature -> the cluster's finalized (max) level


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


# --------------------------------------------------------------------------------------------- requests


def metadata_request(topics: Iterable[str] | None) -> MetadataRequest:
    """Metadata v5 for these topics (None: every topic), never creating one (allow_auto_topic_creation=false)."""
    return MetadataRequest(
        topics=None if topics is None else tuple(MetadataRequestTopic(name=TopicName(t)) for t in topics),
        allow_auto_topic_creation=False,
    )


def describe_transactions_request(transactional_ids: Iterable[str]) -> DescribeTransactionsRequest:
    return DescribeTransactionsRequest(transactional_ids=tuple(TransactionalId(t) for t in transactional_ids))


def list_transactions_request(states: Iterable[str] = (), producer_ids: Iterable[int] = ()) -> ListTransactionsRequest:
    return ListTransactionsRequest(
        state_filters=tuple(states), producer_id_filters=tuple(ProducerId(p) for p in producer_ids)
    )


def listed_transactions(resp: Any, broker: int) -> list[dict[str, Any]]:
    """One broker's ListTransactions answer: the ids it coordinates."""
    if int(resp.error_code):
        raise BrokerError(int(resp.error_code), f"ListTransactions on broker {broker}")
    return [
        {
            "transactional_id": str(t.transactional_id),
            "producer_id": int(t.producer_id),
            "state": t.transaction_state,
            "coordinator_broker": broker,
        }
        for t in resp.transaction_states
    ]


def describe_producers_request(partitions: dict[str, list[int]]) -> DescribeProducersRequest:
    return DescribeProducersRequest(
        topics=tuple(
            TopicRequest(name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps)) for t, ps in partitions.items()
        )
    )


def producer_state(p: Any) -> dict[str, Any]:
    """One active producer of a DescribeProducers answer (the partition leader's ProducerStateEntry)."""
    start = int(p.current_txn_start_offset)
    return {
        "producer_id": int(p.producer_id),
        "producer_epoch": int(p.producer_epoch),
        "last_sequence": int(p.last_sequence),
        "last_timestamp": int(p.last_timestamp),
        "coordinator_epoch": int(p.coordinator_epoch),
        "current_txn_start_offset": start if start >= 0 else None,
    }
