"""Every version a cluster advertises, asked once: a minimal valid request of each API the simulated cluster serves, at
each version the release advertises, encoded by the protocol package (kio's classes, and for the versions kio lacks
the ones built from Kafka's own definitions), sent to a target (the pure core, or a broker over a socket: a real
Kafka or `simcluster`) and its answer read back as that version.

`exchange(target, kafka)` runs them in one fixed order, each API's versions oldest first, after a setup that every
target goes through the same way: a topic of one partition with a record in it, a group that has committed an offset,
a transaction open, a topic to delete for each DeleteTopics version. What a request needs of the cluster (the topic's
id, which broker leads the partition or coordinates the group) is read from the target's own answers.
"""

from __future__ import annotations

import dataclasses
import functools
import socket
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from playground.protocol import apiversions, legacy, messages, records
from playground.sim.cluster import Cluster
from playground.simserver.apis import HANDLERS
from playground.simserver.core import ServerCore

T0 = 1_700_000_000_000
CLOSED = "closed"


class Target(Protocol):
    def call(self, broker: int | None, api_key: int, version: int, body: dict[str, Any]) -> Any:
        """The decoded answer, or CLOSED when the broker closed the connection instead."""

    def pause(self) -> None:
        """Let a tenth of a second pass before retrying."""


@dataclass
class Answer:
    api_key: int
    version: int
    body: Any  # the decoded response, or CLOSED

    @property
    def errors(self) -> list[str]:
        """Every error code in the answer, in the order of its fields (NONE left out)."""
        return [e.name for e in _error_codes(self.body) if e != ErrorCode.none] if self.body != CLOSED else [CLOSED]


def _error_codes(value: Any) -> Iterator[ErrorCode]:
    if isinstance(value, ErrorCode):
        yield value
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _error_codes(getattr(value, f.name))
    elif isinstance(value, tuple):
        for item in value:
            yield from _error_codes(item)


# ------------------------------------------------------------------------------------------------ targets


def read_exactly(payload: bytes, api_key: int, version: int) -> tuple[int, Any]:
    """(correlation id, body) of a response payload, which must be read whole: no bytes left over."""
    cls = messages.response_class(api_key, version)
    from kio.serial import entity_reader

    (correlation,) = struct.unpack_from(">i", payload, 0)
    pos = 4 + (1 if cls.__flexible__ and api_key != messages.API_VERSIONS_KEY else 0)
    body, size = entity_reader(cls)(payload, pos)
    assert pos + size == len(payload), f"api key {api_key} v{version}: {len(payload) - pos - size} bytes after it"
    return correlation, body


class CoreTarget:
    """The pure core of a simulated cluster of `kafka`'s release, driven in virtual time."""

    def __init__(self, kafka: str, brokers: int = 1) -> None:
        # the broker settings tools/kafka gives a real cluster of as many nodes: min.insync.replicas 2 from 3 nodes
        config = {"min.insync.replicas": 2} if brokers >= 3 else {}
        cluster = Cluster(brokers=brokers, topics={}, config=config, keep_events=False, kafka=kafka)
        endpoints = {b: ("127.0.0.1", 9000 + b) for b in cluster.broker_ids}
        self.core = ServerCore(cluster, endpoints, start_ms=T0, handlers=HANDLERS)
        self.first = cluster.broker_ids[0]
        self.conns: dict[int, int] = {}
        self.next_conn = 1
        self.correlation = 0

    def call(self, broker: int | None, api_key: int, version: int, body: dict[str, Any]) -> Any:
        broker = self.first if broker is None else broker
        conn = self.conns.get(broker)
        if conn is None:
            conn = self.conns[broker] = self.next_conn
            self.next_conn += 1
        self.correlation += 1
        payload = _encode(api_key, version, self.correlation, body)
        self.core.receive(self.core.now_ms, broker, conn, payload)
        deadline = self.core.now_ms + 60_000
        while True:
            for out in self.core.take_output():
                assert out.conn == conn
                if out.data is None:
                    del self.conns[broker]
                    return CLOSED
                correlation, answer = read_exactly(out.data[4:], api_key, version)
                assert correlation == self.correlation
                return answer
            due = self.core.next_due_ms()
            if due is None or self.core.now_ms >= deadline:
                raise AssertionError(f"api key {api_key} v{version}: no answer")
            self.core.advance(min(due, deadline))

    def pause(self) -> None:
        self.core.advance(self.core.now_ms + 100)


class SocketTarget:
    """A cluster over the wire (a real broker or simcluster): one connection per broker, reopened once closed."""

    def __init__(self, bootstrap: str, timeout_s: float = 60.0) -> None:
        self.bootstrap = bootstrap.split(",")[0]
        self.timeout_s = timeout_s
        self.socks: dict[Any, socket.socket] = {}
        self.addresses: dict[int, tuple[str, int]] = {}
        self.correlation = 0

    def call(self, broker: int | None, api_key: int, version: int, body: dict[str, Any]) -> Any:
        if broker is None:
            host, _, port = self.bootstrap.rpartition(":")
            address = (host, int(port))
        else:
            address = self.addresses[broker]
        sock = self.socks.get(address)
        if sock is None:
            sock = self.socks[address] = socket.create_connection(address, timeout=self.timeout_s)
        self.correlation += 1
        payload = _encode(api_key, version, self.correlation, body)
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        head = _recv(sock, 4)
        if len(head) < 4:
            sock.close()
            del self.socks[address]
            return CLOSED
        data = _recv(sock, struct.unpack(">i", head)[0])
        correlation, answer = read_exactly(data, api_key, version)
        assert correlation == self.correlation
        return answer

    def pause(self) -> None:
        time.sleep(0.1)

    def close(self) -> None:
        for sock in self.socks.values():
            sock.close()
        self.socks.clear()


def _recv(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        try:
            chunk = sock.recv(n - len(out))
        except ConnectionResetError:
            return out
        if not chunk:
            return out
        out += chunk
    return out


def _encode(api_key: int, version: int, correlation: int, body: dict[str, Any]) -> bytes:
    cls = messages.request_class(api_key, version)
    return messages.encode_request(api_key, version, correlation, "versions", messages.build(cls, body))


# ------------------------------------------------------------------------------------------------ the requests


@dataclass
class Context:
    """What the requests name (their names start with `prefix`: a real cluster outlives one run) and need."""

    prefix: str = "versions"
    topic_id: Any = None
    leader: int | None = None
    group_coordinator: int | None = None
    txn_coordinator: int | None = None
    producer_id: int = -1  # the transactional id's, its transaction open
    producer_epoch: int = -1
    now_ms: int = T0
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)

    @property
    def topic(self) -> str:
        return self.prefix

    @property
    def group(self) -> str:
        return f"{self.prefix}-group"

    @property
    def txn(self) -> str:
        return f"{self.prefix}-txn"

    def name(self, what: str, version: int) -> str:
        return f"{self.prefix}-{what}-v{version}"


def produce_records(version: int, now_ms: int) -> bytes:
    """One record, in the format a producer of that version writes: magic 0 (v0-1), 1 (v2), or a v2 batch (v3+)."""
    record = records.Record(0, now_ms, b"key", b"value")
    if version < 3:
        return legacy.encode_messages([record], 0 if version < 2 else 1)
    return records.encode_batch([record])


def _topic(ctx: Context, **more: Any) -> dict[str, Any]:
    return {"name": ctx.topic, "topic": ctx.topic, "topic_id": ctx.topic_id, **more}


REQUESTS: dict[int, Callable[[int, Context], dict[str, Any]]] = {
    0: lambda v, ctx: {
        "transactional_id": None,
        "acks": 1,
        "timeout": 30000,
        "topic_data": [_topic(ctx, partition_data=[{"index": 0, "records": produce_records(v, ctx.now_ms)}])],
    },
    1: lambda v, ctx: {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            _topic(
                ctx,
                partitions=[
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            )
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    },
    2: lambda v, ctx: {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            _topic(
                ctx,
                partitions=[{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1, "max_num_offsets": 1}],
            )
        ],
        "timeout": 30000,
    },
    3: lambda v, ctx: {
        "topics": [{"name": ctx.topic, "topic_id": None}],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    },
    8: lambda v, ctx: {
        "group_id": ctx.group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "retention_time": -1,
        "topics": [
            _topic(
                ctx,
                partitions=[
                    {
                        "partition_index": 0,
                        "committed_offset": 1,
                        "committed_leader_epoch": -1,
                        "commit_timestamp": -1,
                        "committed_metadata": "",
                    }
                ],
            )
        ],
    },
    9: lambda v, ctx: {
        "group_id": ctx.group,
        "topics": [_topic(ctx, partition_indexes=[0])],
        "require_stable": False,
        "groups": [
            {
                "group_id": ctx.group,
                "member_id": None,
                "member_epoch": -1,
                "topics": [_topic(ctx, partition_indexes=[0])],
            }
        ],
    },
    10: lambda v, ctx: {"key": ctx.group, "key_type": 0, "coordinator_keys": [ctx.group]},
    11: lambda v, ctx: {
        "group_id": ctx.name("joined", v),
        "session_timeout": 30000,
        "rebalance_timeout": 30000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": None,
    },
    12: lambda v, ctx: {"group_id": ctx.group, "generation_id": 1, "member_id": "nobody", "group_instance_id": None},
    13: lambda v, ctx: {
        "group_id": ctx.group,
        "member_id": "nobody",
        "members": [{"member_id": "nobody", "group_instance_id": None, "reason": None}],
    },
    14: lambda v, ctx: {
        "group_id": ctx.group,
        "generation_id": 1,
        "member_id": "nobody",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [],
    },
    15: lambda v, ctx: {"groups": [ctx.group], "include_authorized_operations": False},
    16: lambda v, ctx: {"states_filter": [], "types_filter": []},
    18: lambda v, ctx: {"client_software_name": "versions", "client_software_version": "1"},
    19: lambda v, ctx: {
        "topics": [
            {
                "name": ctx.name("created", v),
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 30000,
        "validate_only": False,
    },
    20: lambda v, ctx: {
        "topic_names": [ctx.name("deleted", v)],
        "topics": [{"name": ctx.name("deleted", v), "topic_id": None}],
        "timeout": 30000,
    },
    21: lambda v, ctx: {"topics": [_topic(ctx, partitions=[{"partition_index": 0, "offset": 0}])], "timeout": 30000},
    22: lambda v, ctx: {
        "transactional_id": None,
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
        "enable2_pc": False,
        "keep_prepared_txn": False,
    },
    23: lambda v, ctx: {
        "replica_id": -1,
        "topics": [_topic(ctx, partitions=[{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}])],
    },
    24: lambda v, ctx: {
        "v3_and_below_transactional_id": ctx.txn,
        "v3_and_below_producer_id": ctx.producer_id,
        "v3_and_below_producer_epoch": ctx.producer_epoch,
        "v3_and_below_topics": [{"name": ctx.topic, "partitions": [0]}],
        "transactions": [
            {
                "transactional_id": ctx.txn,
                "producer_id": ctx.producer_id,
                "producer_epoch": ctx.producer_epoch,
                "verify_only": True,
                "topics": [{"name": ctx.topic, "partitions": [0]}],
            }
        ],
    },
    25: lambda v, ctx: {
        "transactional_id": ctx.txn,
        "producer_id": ctx.producer_id,
        "producer_epoch": ctx.producer_epoch,
        "group_id": ctx.group,
    },
    26: lambda v, ctx: {
        "transactional_id": ctx.txn,
        "producer_id": ctx.producer_id,
        "producer_epoch": ctx.producer_epoch,
        "committed": False,
    },
    27: lambda v, ctx: {"markers": []},
    28: lambda v, ctx: {
        "transactional_id": ctx.txn,
        "group_id": ctx.group,
        "producer_id": ctx.producer_id,
        "producer_epoch": ctx.producer_epoch,
        "generation_id": -1,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            _topic(
                ctx,
                partitions=[
                    {
                        "partition_index": 0,
                        "committed_offset": 1,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            )
        ],
    },
    32: lambda v, ctx: {
        "resources": [{"resource_type": 2, "resource_name": ctx.topic, "configuration_keys": ["cleanup.policy"]}],
        "include_synonyms": False,
        "include_documentation": False,
    },
    33: lambda v, ctx: {
        "resources": [{"resource_type": 2, "resource_name": ctx.topic, "configs": []}],
        "validate_only": True,
    },
    37: lambda v, ctx: {
        "topics": [{"name": ctx.topic, "count": 1, "assignments": None}],
        "timeout": 30000,
        "validate_only": True,
    },
    42: lambda v, ctx: {"groups_names": [ctx.name("never", v)]},
    44: lambda v, ctx: {
        "resources": [{"resource_type": 2, "resource_name": ctx.topic, "configs": []}],
        "validate_only": True,
    },
    47: lambda v, ctx: {"group_id": ctx.group, "topics": [{"name": ctx.topic, "partitions": [{"partition_index": 0}]}]},
    60: lambda v, ctx: {
        "include_cluster_authorized_operations": False,
        "endpoint_type": 1,
        "include_fenced_brokers": False,
    },
    61: lambda v, ctx: {"topics": [{"name": ctx.topic, "partition_indexes": [0]}]},
    65: lambda v, ctx: {"transactional_ids": [ctx.txn]},
    66: lambda v, ctx: {
        "state_filters": [],
        "producer_id_filters": [],
        "duration_filter": -1,
        "transactional_id_pattern": None,
    },
}

# where each API's request goes: the partition's leader, the group's or the transaction's coordinator, or any broker
LEADER_APIS = frozenset({0, 1, 2, 21, 23, 61})
GROUP_APIS = frozenset({8, 9, 11, 12, 13, 14, 15, 28, 42, 47})
TXN_APIS = frozenset({24, 25, 26, 65})


def _route(api_key: int, ctx: Context) -> int | None:
    if api_key in LEADER_APIS:
        return ctx.leader
    if api_key in GROUP_APIS:
        return ctx.group_coordinator
    if api_key in TXN_APIS:
        return ctx.txn_coordinator
    return None


def setup(target: Target, kafka: str, prefix: str = "versions") -> Context:
    """The topic (with a record), the group (with an offset), the transaction (open), the topics DeleteTopics
    deletes; the topic's id and the brokers that lead it and coordinate the group and the transactional id."""
    ctx = Context(prefix)
    for name in [ctx.topic] + [ctx.name("deleted", v) for v in _versions(kafka, 20)]:
        body = {
            "topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout": 30000,
        }
        answer = target.call(None, 19, 5, body)  # a version every release serves
        assert answer.topics[0].error_code == ErrorCode.none, (name, answer)
    deadline = time.monotonic() + 60
    while True:
        meta = target.call(None, 3, 12, {"topics": [{"name": ctx.topic, "topic_id": None}]})
        (topic,) = meta.topics
        if topic.error_code == ErrorCode.none and topic.partitions and topic.partitions[0].leader_id >= 0:
            break
        assert time.monotonic() < deadline, meta
        time.sleep(0.2)
    ctx.topic_id = topic.topic_id
    ctx.leader = int(topic.partitions[0].leader_id)
    ctx.brokers = {int(b.node_id): (b.host, int(b.port)) for b in meta.brokers}
    if isinstance(target, SocketTarget):
        target.addresses = ctx.brokers
    ctx.group_coordinator = _coordinator(target, ctx.group, 0)
    ctx.txn_coordinator = _coordinator(target, ctx.txn, 1)
    produced = target.call(ctx.leader, 0, 9, REQUESTS[0](9, ctx))
    assert produced.responses[0].partition_responses[0].error_code == ErrorCode.none, produced
    committed = target.call(ctx.group_coordinator, 8, 8, REQUESTS[8](8, ctx))
    assert committed.topics[0].partitions[0].error_code == ErrorCode.none, committed
    body = {"transactional_id": ctx.txn, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1}
    init = _retried(target, lambda: target.call(ctx.txn_coordinator, 22, 4, body))
    ctx.producer_id, ctx.producer_epoch = int(init.producer_id), int(init.producer_epoch)
    return ctx


# errors a client retries: a broker not ready yet (a coordinator loading, a producer id block on its way), a
# transaction whose markers are still being written
RETRIABLE = frozenset(
    {ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available, ErrorCode.concurrent_transactions}
)


def _retried(target: Target, ask: Callable[[], Any]) -> Any:
    """The answer once it is not a retriable error (at most a minute of the target's time later)."""
    for _ in range(600):
        answer = ask()
        if answer == CLOSED or answer.error_code not in RETRIABLE:
            break
        target.pause()
    return answer


def _coordinator(target: Target, key: str, key_type: int) -> int:
    deadline = time.monotonic() + 60
    while True:
        answer = target.call(None, 10, 3, {"key": key, "key_type": key_type})
        if answer.error_code == ErrorCode.none:
            return int(answer.node_id)
        assert time.monotonic() < deadline, answer
        time.sleep(0.2)


def _versions(kafka: str, api_key: int) -> range:
    lo, hi = apiversions.API_KEYS[kafka][api_key]
    return range(lo, hi + 1)


def served(kafka: str) -> list[tuple[int, int]]:
    """(api key, version) of every version the simulated cluster of `kafka`'s release advertises, each API's oldest
    first, EndTxn last (so that the transaction the others join stays open until then)."""
    advertised = apiversions.advertised(kafka, HANDLERS)
    keys = sorted(advertised, key=lambda k: (k == 26, k))
    return [(key, v) for key in keys for v in range(advertised[key][0], advertised[key][1] + 1)]


def exchange(target: Target, kafka: str, prefix: str = "versions") -> list[Answer]:
    """Every (api key, version) the simulated cluster of `kafka`'s release advertises, asked once, in order."""
    ctx = setup(target, kafka, prefix)
    out = []
    for api_key, version in served(kafka):
        ctx.now_ms = T0 if isinstance(target, CoreTarget) else int(time.time() * 1000)
        body = REQUESTS[api_key](version, ctx)
        route = _route(api_key, ctx)
        if api_key in (11, 42):  # a group of its own for each version: its own coordinator
            route = _coordinator(target, body["group_id"] if api_key == 11 else body["groups_names"][0], 0)
        ask = functools.partial(target.call, route, api_key, version, body)
        # as clients retry them: a real broker's first idempotent producer ids wait for a block from its controller,
        # and an EndTxn after the first waits for the first one's markers (how soon they are written is timing)
        answer = _retried(target, ask) if api_key in (22, 26) else ask()
        out.append(Answer(api_key, version, answer))
    return out
