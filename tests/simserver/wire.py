"""Driving the pure core (playground.simserver.core) the way the asyncio layer does, without sockets: encoded requests
in at a virtual time, response frames out, decoded for the test."""

from __future__ import annotations

import struct
import weakref
from typing import Any

from playground.protocol import messages, records
from playground.sim.cluster import Cluster
from playground.simserver.apis import HANDLERS
from playground.simserver.core import ServerCore

T0 = 1_700_000_000_000


def core_for(kafka: str = "3.9", brokers: int = 3, topics: dict[str, int] | None = None, **config: Any) -> ServerCore:
    cluster = Cluster(brokers=brokers, topics=topics or {}, config=config, keep_events=False, kafka=kafka)
    endpoints = {b: ("127.0.0.1", 9000 + b) for b in cluster.broker_ids}
    return ServerCore(cluster, endpoints, start_ms=T0, config=config, handlers=HANDLERS)


# core -> connection -> the client that owns it: outputs go to whoever's connection they are for
_OWNERS: weakref.WeakKeyDictionary[ServerCore, dict[int, Client]] = weakref.WeakKeyDictionary()


class Client:
    """One client's connections (one per broker, as clients keep them) to a core."""

    def __init__(self, core: ServerCore, client_id: str = "test-client", first_conn: int = 1) -> None:
        self.core = core
        _OWNERS.setdefault(core, {})
        self.client_id = client_id
        self.correlation = 0
        self.conns: dict[int, int] = {}
        self._next_conn = first_conn
        self.pending: dict[int, tuple[int, int, int]] = {}  # correlation -> (api key, version, conn)
        self.answers: dict[int, Any] = {}
        self.closed: set[int] = set()
        self.frames: list[tuple[int, bytes | None]] = []  # every output, as it left

    def conn(self, broker: int) -> int:
        if broker not in self.conns:
            self.conns[broker] = self._next_conn
            _OWNERS[self.core][self._next_conn] = self
            self._next_conn += 1
        return self.conns[broker]

    def send(self, broker: int, api_key: int, version: int, body: dict[str, Any], at_ms: int | None = None) -> int:
        self.correlation += 1
        cls = messages.request_class(api_key, version)
        payload = messages.encode_request(api_key, version, self.correlation, self.client_id, messages.build(cls, body))
        conn = self.conn(broker)
        self.pending[self.correlation] = (api_key, version, conn)
        self.core.receive(self.core.now_ms if at_ms is None else at_ms, broker, conn, payload)
        self.collect()
        return self.correlation

    def collect(self) -> None:
        owners = _OWNERS[self.core]
        for out in self.core.take_output():
            owners.get(out.conn, self)._take(out.conn, out.data)

    def _take(self, conn: int, data: bytes | None) -> None:
        self.frames.append((conn, data))
        if data is None:
            self.closed.add(conn)
            return
        (correlation,) = struct.unpack_from(">i", data, 4)
        api_key, version, _conn = self.pending.pop(correlation)
        _, body = messages.decode_response(api_key, version, data[4:])
        self.answers[correlation] = body

    def call(self, broker: int, api_key: int, version: int, body: dict[str, Any], wait_ms: int = 2000) -> Any:
        """Send, then let virtual time pass until the answer is in (at most `wait_ms`)."""
        correlation = self.send(broker, api_key, version, body)
        deadline = self.core.now_ms + wait_ms
        while correlation not in self.answers and self.core.now_ms < deadline:
            due = self.core.next_due_ms()
            self.core.advance(min(due if due is not None else deadline, deadline))
            self.collect()
        return self.answers.pop(correlation, None)

    def advance(self, ms: int) -> None:
        self.core.advance(self.core.now_ms + ms)
        self.collect()


def batch(
    values: list[bytes], *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False, codec: int = 0
) -> bytes:
    return records.encode_batch(
        [records.Record(i, T0 + i, None, v) for i, v in enumerate(values)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=txn,
        compression=codec,
    )


def produce_body(topic: str, partition: int, data: bytes, txid: str | None = None, acks: int = -1) -> dict[str, Any]:
    return {
        "transactional_id": txid,
        "acks": acks,
        "timeout": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": data}]}],
    }


def fetch_body(
    topic: str, partition: int, offset: int, *, committed: bool = False, max_wait_ms: int = 0
) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 1 if committed else 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
