"""The simulated cluster's brokers as a Kafka server: request handling, pure and deterministic.

Follows core/src/main/scala/kafka/network/SocketServer.scala (a connection's requests are read one at a time: the
channel is muted from a request's arrival until its response is sent, so a connection's responses leave in the order
of its requests, and a request that waits on the broker, a long-polling Fetch, holds back the ones behind it),
RequestChannel and KafkaApis (which decode a request, answer unsupported versions and dispatch to a handler).

Inputs, each at a time on the simulator's virtual clock, and nothing else: a request frame (or a decoded request) on a
connection to a broker, a connection closed by its client, a broker stopped or started, and time passing. Outputs:
response frames per connection, and connections to close. Everything in between is a function of those inputs and
the simulator's state, so a session that stores them replays them without sockets (issue 16). The asyncio layer
(`playground.simserver.server`) feeds the inputs at wall-clock times and writes the outputs to sockets.

What a client sends is bounded as a broker bounds it (bounds.py: message sizes, a create-topic policy, client quotas,
retention, the disk): a Produce or Fetch over a quota is answered at once with its `throttle_time_ms` and its
connection is muted that long (KIP-219: its next request is not read before), as SocketServer mutes a throttled
channel; storage.py keeps the logs' segments and deletes what retention says.

External clients appear in the simulator's protocol timeline (ev.Rpc) under their client.id; their request
correlations are negative, so they never pair with the simulator's own RPCs.

What a batch looked like on the wire is kept with it (batches.py): an external producer's batch goes into the
simulator's log as its bytes, so a Fetch returns it exactly as it was produced (compression, timestamps, headers),
with the offsets and the leader epoch the leader gave it. Batches the simulator wrote itself (its own clients'
records, transaction markers) are encoded from the log.
"""

from __future__ import annotations

import base64
import struct
import uuid
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from playground.engine import events as ev
from playground.protocol import apiversions, messages, records, txnlog
from playground.protocol.framing import frame
from playground.protocol.messages import Request, RequestError, UnsupportedVersion
from playground.sim.clock import TIMER
from playground.sim.cluster import Cluster
from playground.sim.leaders import INTERNAL_TOPICS
from playground.sim.log import Batch, PartitionLog
from playground.sim.placement import java_string_hash
from playground.sim.txnstate import EMPTY, STATE_IDS
from playground.simserver.batches import encode_sim_batch
from playground.simserver.bounds import Bounds, topic_config_int
from playground.simserver.clients import Clients
from playground.simserver.quotas import QuotaSensor
from playground.simserver.storage import Storage

_MASK64 = (1 << 64) - 1


class Output(NamedTuple):
    conn: int
    data: bytes | None  # a response frame, size prefix included; None: close the connection


class Connection:
    __slots__ = (
        "actor",
        "broker",
        "busy",
        "client_id",
        "closed",
        "conn_id",
        "pumping",
        "queue",
        "software",
        "throttled_until_ms",
    )

    def __init__(self, conn_id: int, broker: int) -> None:
        self.conn_id = conn_id
        self.broker = broker
        self.client_id: str | None = None
        self.actor: str | None = None  # the actor it belongs to, when the core tracks its clients (clients.py)
        self.software: tuple[str, str] | None = None  # from ApiVersions v3+: the client library and its version
        self.busy = False
        self.pumping = False
        self.closed = False
        self.throttled_until_ms = 0  # muted by a quota until then (its next request waits)
        # a request, or (correlation id, version) of an ApiVersions of a version not served
        self.queue: deque[Request | tuple[int, int]] = deque()

    @property
    def label(self) -> str:
        return self.actor or self.client_id or f"connection {self.conn_id}"


class Call:
    """One request being handled: the handler answers it once with `reply` (or `no_reply`, acks=0)."""

    __slots__ = ("conn", "core", "done", "dst", "error", "request", "rpc", "throttle_ms")

    def __init__(self, core: ServerCore, conn: Connection, request: Request) -> None:
        self.core = core
        self.conn = conn
        self.request = request
        self.done = False
        self.rpc: int | None = None  # the timeline correlation, once announced
        self.dst = f"b{conn.broker}"
        self.error: str | None = None
        self.throttle_ms = 0  # a quota's throttle: the connection is muted this long once the answer is out

    @property
    def broker(self) -> int:
        return self.conn.broker

    @property
    def version(self) -> int:
        return self.request.api_version

    @property
    def body(self) -> Any:
        return self.request.body

    def announce(self, dst: str, detail: str) -> None:
        """Show the request in the simulator's protocol timeline (the APIs that tell a transaction's story)."""
        self.dst = dst
        self.rpc = self.core._announce(self, detail)

    def reply(self, data: Mapping[str, Any], *, error: str | None = None, detail: str = "") -> None:
        if self.done:
            return
        self.done = True
        self.core._complete(self, data, error, detail)

    def no_reply(self) -> None:
        if self.done:
            return
        self.done = True
        self.core._complete(self, None, None, "")

    def quota(self, kind: str, value: float, *, unrecord_if_throttled: bool = False) -> int:
        """Record `value` against this broker's `kind` quota ("produce", "fetch"); the throttle time (ms) it
        earns, kept for the answer and the mute. A throttled Fetch takes its bytes back (it returns none)."""
        sensor = self.core.quota_sensor(kind, self.broker)
        if sensor is None:
            return 0
        now = self.core.now_ms
        throttle_ms = sensor.record(value, now)
        if throttle_ms > 0 and unrecord_if_throttled:
            sensor.unrecord(value, now)
        self.throttle_ms = max(self.throttle_ms, throttle_ms)
        if self.done and throttle_ms > 0:
            self.core._mute(self.conn, throttle_ms)  # answered already (acks=0): the mute starts now
        return throttle_ms


Handler = Callable[[Call], None]


class ServerCore:
    """See the module's docstring. `endpoints`: broker id -> (host, port) its listener advertises (Metadata,
    FindCoordinator). `start_ms`: the virtual time to start at (the asyncio layer passes the wall clock's epoch
    milliseconds, so record timestamps and transaction times read as dates). `seed` names the cluster (its id).
    `record_values`: whether the simulator's log also holds each external record's key and value as values (what its
    views and its own consumers read); without them it holds the batches' bytes only, and a million records of a
    hundred bytes cost tens of megabytes instead of hundreds (simcluster, where nothing but the wire reads them).
    `track_clients`: keep the clients as actors (clients.py; a session's listener), named apart from `reserved`; the
    timeline then names a connection's requests by its actor (a second instance of a client.id is "id#2").
    `handlers`: api key -> handler, apis.HANDLERS: as Kafka hands KafkaApis to its request handlers, the server is
    handed what answers each request (the handlers build on this module); it advertises those APIs as the cluster's
    release does (protocol/apiversions.py)."""

    def __init__(
        self,
        cluster: Cluster,
        endpoints: Mapping[int, tuple[str, int]],
        *,
        start_ms: int = 0,
        seed: int = 0,
        config: Mapping[str, Any] | None = None,
        record_values: bool = True,
        track_clients: bool = False,
        reserved: Iterable[str] = (),
        handlers: Mapping[int, Handler],
    ) -> None:
        self.cluster = cluster
        self.kafka = cluster.kafka
        self.endpoints = dict(endpoints)
        self.config: dict[str, Any] = dict(config or {})
        self.bounds = Bounds.from_config(self.config)
        self.storage = Storage()
        self._quotas: dict[tuple[str, int], QuotaSensor] = {}
        self.record_values = record_values
        self.clients = Clients(reserved, self.topic_of) if track_clients else None
        self.handlers: dict[int, Handler] = dict(handlers)
        # what ApiVersions says, and what is read: the same but for the versions the release refuses
        self.advertised = apiversions.advertised(self.kafka, self.handlers)
        self.accepted = apiversions.accepted(self.kafka, self.handlers)
        self.cluster_id = _cluster_id(seed)
        self.conns: dict[int, Connection] = {}
        self.outbox: list[Output] = []
        # The connections whose requests in the core changed (one queued, taken up, finished, a throttle set or
        # over, the connection closed) since the server last looked (server.after_core): only those can have memory
        # to give back or a mute to change, and looking at every connection after every request was a tenth of
        # simcluster's CPU under franz-go's ETL tests (py-spy).
        self.touched: set[int] = set()
        self.failures: deque[str] = deque(maxlen=100)  # handler bugs (the connection was closed), for tests and logs
        self.failure_count = 0
        self._rpc_seq = 0
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._topics_by_id: dict[uuid.UUID, str] = {}
        self._topic_generation: dict[str, int] = {}
        self._epochs: dict[str, tuple[list[int], list[int]]] = {}  # partition -> (start offsets, epochs)
        self._encoded: dict[tuple[str, int], bytes] = {}  # the simulator's own batches, encoded once
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.txn_state: dict[int, TxnStateLog] = {}  # __transaction_state partition -> its records
        # only these kinds are built for the server (the others only when someone observes the cluster)
        cluster.watch((ev.Leader, ev.TxnState, ev.TxnExpired), self._on_event)
        for topic in list(cluster.topics):
            self.topic_id(topic)
        self.advance(start_ms)

    def configure(self, config: Mapping[str, Any]) -> None:
        """New broker settings (a session listens again with other bounds): the bounds in force change."""
        self.config = dict(config)
        self.bounds = Bounds.from_config(self.config)
        self._quotas.clear()

    # ------------------------------------------------------------------------------------------------ inputs
    @property
    def now_ms(self) -> int:
        return self.cluster.scheduler.now_ms

    def advance(self, now_ms: int) -> None:
        """Let virtual time reach `now_ms`: whatever falls due on the way runs (and may answer requests). Every input
        ends with this too, so that what it set off without delay (an answer after a zero replication latency) is
        answered with it, not one loop turn later."""
        scheduler = self.cluster.scheduler
        scheduler.advance(max(0, now_ms - scheduler.now_ms))

    def receive(self, now_ms: int, broker: int, conn_id: int, payload: bytes) -> None:
        """A request frame (its payload, without the size prefix) arrived on a connection to `broker`."""
        self.advance(now_ms)
        conn = self._conn(conn_id, broker)
        if conn is None:
            return
        try:
            request = messages.decode_request(payload, self.accepted)
        except UnsupportedVersion as e:
            if e.api_key == messages.API_VERSIONS_KEY:
                conn.queue.append((e.correlation_id or 0, e.api_version))
                self._pump(conn)
                self.advance(now_ms)
            else:
                self._close(conn)
            return
        except RequestError:
            self._close(conn)
            return
        conn.queue.append(request)
        self.touched.add(conn_id)
        self._pump(conn)
        self.advance(now_ms)

    def receive_request(self, now_ms: int, broker: int, conn_id: int, request: Request) -> None:
        """A decoded request arrived (what `receive` does after decoding)."""
        self.advance(now_ms)
        conn = self._conn(conn_id, broker)
        if conn is None:
            return
        lo_hi = self.accepted.get(request.api_key)
        if lo_hi is None or not lo_hi[0] <= request.api_version <= lo_hi[1]:
            self._close(conn)
            return
        conn.queue.append(request)
        self.touched.add(conn_id)
        self._pump(conn)
        self.advance(now_ms)

    def disconnect(self, now_ms: int, conn_id: int) -> None:
        """The client closed the connection (or it broke): what it was waiting for is never sent."""
        self.advance(now_ms)
        conn = self.conns.pop(conn_id, None)
        self.touched.add(conn_id)
        if conn is not None:
            conn.closed = True
            conn.queue.clear()
            if self.clients is not None:
                self.clients.closed(conn_id)

    def stop_broker(self, now_ms: int, broker: int) -> None:
        """The broker's process stops: its connections close unanswered, the simulator elects new leaders."""
        self.advance(now_ms)
        for conn in [c for c in self.conns.values() if c.broker == broker]:
            self._close(conn)
        self.cluster.stop_broker(broker)
        self.advance(now_ms)

    def close_connections(self, broker: int | None = None) -> None:
        """Close every connection (to `broker`, or to any): a session stops a broker by a step of its own, or
        starts listening again on other ports."""
        for conn in [c for c in self.conns.values() if broker is None or c.broker == broker]:
            self._close(conn)

    def start_broker(self, now_ms: int, broker: int) -> None:
        self.advance(now_ms)
        self.cluster.start_broker(broker)
        self.advance(now_ms)

    # ------------------------------------------------------------------------------------------------ outputs
    def next_due_ms(self) -> int | None:
        entry = self.cluster.scheduler.next_entry()
        return entry.time_ms if entry is not None else None

    def take_output(self) -> list[Output]:
        out, self.outbox = self.outbox, []
        return out

    def broker_up(self, broker: int) -> bool:
        return self.cluster.broker_up(broker)

    # ------------------------------------------------------------------------------------------------ connections
    def _conn(self, conn_id: int, broker: int) -> Connection | None:
        conn = self.conns.get(conn_id)
        if conn is None:
            if not self.cluster.broker_up(broker):
                self.outbox.append(Output(conn_id, None))
                self.touched.add(conn_id)
                return None
            conn = self.conns[conn_id] = Connection(conn_id, broker)
        return conn

    def close_connection(self, conn: Connection) -> None:
        self._close(conn)

    def _close(self, conn: Connection) -> None:
        if not conn.closed:
            conn.closed = True
            conn.queue.clear()
            self.conns.pop(conn.conn_id, None)
            self.touched.add(conn.conn_id)
            self.outbox.append(Output(conn.conn_id, None))
            if self.clients is not None:
                self.clients.closed(conn.conn_id)

    def _pump(self, conn: Connection) -> None:
        """Handle the connection's next request unless one is being handled (the muted channel)."""
        if conn.pumping:
            return
        conn.pumping = True
        try:
            while not conn.busy and conn.queue and not conn.closed and conn.throttled_until_ms <= self.now_ms:
                item = conn.queue.popleft()
                self.touched.add(conn.conn_id)
                if isinstance(item, tuple):
                    correlation_id, _version = item
                    api_range = self.advertised[messages.API_VERSIONS_KEY]
                    self.outbox.append(
                        Output(conn.conn_id, frame(messages.api_versions_error(correlation_id, api_range)))
                    )
                    continue
                conn.busy = True
                if item.client_id is not None:
                    conn.client_id = item.client_id
                if self.clients is not None:
                    self.clients.request(conn, item, self.now_ms)
                    conn.actor = self.clients.label(conn)
                call = Call(self, conn, item)
                try:
                    self.handlers[item.api_key](call)
                except Exception as e:  # a bug here must cost one connection, never the server
                    self.failure_count += 1
                    self.failures.append(f"{item.name} v{item.api_version} from {conn.label}: {type(e).__name__}: {e}")
                    call.done = True
                    self._close(conn)
        finally:
            conn.pumping = False

    def _complete(self, call: Call, data: Mapping[str, Any] | None, error: str | None, detail: str) -> None:
        conn = call.conn
        request = call.request
        if call.rpc is None and error is not None:
            call.rpc = self._announce(call, "")  # an API kept out of the timeline shows when it fails
        if call.rpc is not None:
            self.cluster.emit(
                ev.Rpc,
                rpc=request.name,
                src=call.dst,
                dst=conn.label,
                direction="response",
                error=error,
                detail=f"v{request.api_version}" + (f", {detail}" if detail else ""),
                correlation=call.rpc,
            )
        if self.clients is not None:
            self.clients.answered(self, conn, request, data, error)
        if conn.closed:
            return
        if data is not None:
            cls = messages.response_class(request.api_key, request.api_version)
            assert cls is not None
            body = messages.build(cls, data)
            payload = messages.encode_response(request.api_key, request.api_version, request.correlation_id, body)
            self.outbox.append(Output(conn.conn_id, frame(payload)))
        conn.busy = False
        self.touched.add(conn.conn_id)
        if call.throttle_ms > 0:
            self._mute(conn, call.throttle_ms)
        self._pump(conn)

    def _mute(self, conn: Connection, throttle_ms: int) -> None:
        """The quota's throttle: the connection's next request is read once it is over (ThrottledChannel)."""
        until = self.now_ms + throttle_ms
        if until <= conn.throttled_until_ms:
            return
        conn.throttled_until_ms = until
        self.touched.add(conn.conn_id)

        def unmute() -> None:
            self.touched.add(conn.conn_id)
            if not conn.closed and conn.throttled_until_ms <= self.now_ms:
                self._pump(conn)

        self.cluster.scheduler.after(throttle_ms, unmute, category=TIMER, label=f"{conn.label} throttled")

    def quota_sensor(self, kind: str, broker: int) -> QuotaSensor | None:
        """A broker's quota sensor for "produce" or "fetch" bytes, None when no quota is set."""
        bound = self.bounds.producer_byte_rate if kind == "produce" else self.bounds.consumer_byte_rate
        if bound is None:
            return None
        sensor = self._quotas.get((kind, broker))
        if sensor is None:
            sensor = self._quotas[(kind, broker)] = QuotaSensor(bound)
        return sensor

    def _announce(self, call: Call, detail: str) -> int:
        self._rpc_seq += 1
        correlation = -self._rpc_seq
        self.cluster.emit(
            ev.Rpc,
            rpc=call.request.name,
            src=call.conn.label,
            dst=call.dst,
            direction="request",
            error=None,
            detail=f"v{call.request.api_version}" + (f", {detail}" if detail else ""),
            correlation=correlation,
        )
        return correlation

    # ------------------------------------------------------------------------------------------------ topics
    def topic_id(self, topic: str) -> uuid.UUID:
        """A topic's id: fixed by its name and how many times a topic of that name was created, so that the same
        inputs give the same ids (Kafka draws them at random; it only promises that a re-created topic differs)."""
        tid = self._topic_ids.get(topic)
        if tid is None:
            generation = self._topic_generation.get(topic, 0)
            seed = (java_string_hash(topic) & 0xFFFFFFFF) << 16 | generation
            hi, lo = _splitmix(seed), _splitmix(seed + 1)
            tid = uuid.UUID(int=((hi & 0x7FFF_FFFF_FFFF_FFFF) << 64 | lo) or 2)
            self._topic_ids[topic] = tid
            self._topics_by_id[tid] = topic
        return tid

    def topic_of(self, topic_id: uuid.UUID | None) -> str | None:
        if topic_id is None:
            return None
        name = self._topics_by_id.get(topic_id)
        return name if name is not None and name in self.cluster.topics else None

    def forget_topic(self, topic: str) -> None:
        tid = self._topic_ids.pop(topic, None)
        if tid is not None:
            self._topics_by_id.pop(tid, None)
        self._topic_generation[topic] = self._topic_generation.get(topic, 0) + 1
        self.topic_configs.pop(topic, None)
        for partition in [k for k in self._epochs if k.rpartition("-")[0] == topic]:
            del self._epochs[partition]
        for batch_key in [k for k in self._encoded if k[0].rpartition("-")[0] == topic]:
            del self._encoded[batch_key]

    def internal(self, topic: str) -> bool:
        return topic in INTERNAL_TOPICS

    # ------------------------------------------------------------------------------------------------ leader epochs
    def _on_event(self, event: ev.Event) -> None:
        if isinstance(event, ev.TxnState) and event.persisted:
            self._txn_record(event.transactional_id, expired=False)
        elif isinstance(event, ev.TxnExpired):
            self._txn_record(event.transactional_id, expired=True)
        elif isinstance(event, ev.Leader):
            meta = self.cluster.partitions.get(event.partition)
            if meta is None or meta.log is None:
                return
            starts, epochs = self._epoch_cache(event.partition)
            end = meta.log.log_end_offset
            while starts and starts[-1] >= end and epochs[-1] < event.leader_epoch and len(starts) > 1:
                starts.pop()  # an epoch in which nothing was appended leaves no entry (LeaderEpochFileCache)
                epochs.pop()
            starts.append(end)
            epochs.append(event.leader_epoch)

    def _epoch_cache(self, partition: str) -> tuple[list[int], list[int]]:
        cache = self._epochs.get(partition)
        if cache is None:
            cache = self._epochs[partition] = ([0], [0])
        return cache

    def epoch_at(self, partition: str, offset: int) -> int:
        """The leader epoch in which `offset` was appended (the epoch stamped on its batch)."""
        starts, epochs = self._epoch_cache(partition)
        i = bisect_right(starts, offset) - 1
        return epochs[max(i, 0)]

    def end_offset_for(self, partition: str, epoch: int, log_end_offset: int, current: int) -> tuple[int, int]:
        """LeaderEpochFileCache.endOffsetFor: (the largest epoch <= `epoch`, the offset where the next one starts or
        the log end offset), or (-1, -1) for an epoch older than any this log has."""
        starts, epochs = self._epoch_cache(partition)
        if epoch == current:
            return current, log_end_offset
        i = bisect_right(epochs, epoch) - 1
        if i < 0 or epoch > current:
            return -1, -1
        if i + 1 < len(starts):
            return epochs[i], starts[i + 1]
        return epochs[i], log_end_offset

    # ------------------------------------------------------------------------------------------------ __transaction_state
    def _txn_record(self, transactional_id: str, expired: bool) -> None:
        """The coordinator's record of a transition, as `__transaction_state` holds it (the simulator keeps what is
        durable per transactional id, not the records): written when the transition completes."""
        tc = self.cluster.txn_coordinator
        md = None if expired else tc.cache.get(transactional_id)
        value = None
        if md is not None:
            partitions = None if md.state == EMPTY else [_split_tp(tp) for tp in sorted(md.partitions)]
            value = txnlog.value_bytes(
                version=0 if self.kafka == "3.9" else 1,  # the cluster's transaction.version: 0 on 3.9, 2 on 4.x
                producer_id=md.producer_id,
                producer_epoch=md.producer_epoch,
                timeout_ms=md.txn_timeout_ms,
                status=STATE_IDS[md.state],
                partitions=partitions,
                last_update_ms=md.txn_last_update_ms,
                start_ms=md.txn_start_ms,
                previous_producer_id=md.previous_producer_id,
                next_producer_id=md.next_producer_id,
                client_transaction_version=md.client_tv,
            )
        view = self.txn_state.setdefault(tc.partition_for(transactional_id), TxnStateLog())
        view.append(txnlog.key_bytes(transactional_id), value, self.now_ms)

    # ------------------------------------------------------------------------------------------------ batches
    def batch_bytes(self, partition: str, batch: Batch) -> bytes:
        """A log batch as a Fetch returns it."""
        payload = getattr(batch.values, "payload", None)
        epoch = self.epoch_at(partition, batch.base_offset)
        if payload is not None:
            return records.with_offsets(payload, batch.base_offset, epoch)
        key = (partition, batch.base_offset)
        encoded = self._encoded.get(key)
        if encoded is None:
            encoded = self._encoded[key] = encode_sim_batch(batch, epoch)
        return encoded

    def log_of(self, partition: str) -> PartitionLog:
        return self.cluster.log(partition)

    # ------------------------------------------------------------------------------------------------ storage
    def topic_setting(self, topic: str, key: str) -> int:
        """A topic's max.message.bytes, segment.bytes or retention.bytes as in force (its own, or the broker's)."""
        return topic_config_int(self.bounds, self.topic_configs.get(topic, {}), key)

    def after_append(self, partition: str) -> None:
        """A batch was appended to `partition`: its segments take it in, and retention deletes what it says."""
        topic = partition.rpartition("-")[0]
        log = self.cluster.log(partition)
        self.storage.enforce_retention(
            partition,
            log,
            self.topic_setting(topic, "segment.bytes"),
            self.topic_setting(topic, "retention.bytes"),
            self.now_ms,
        )


class TxnStateLog:
    """One `__transaction_state` partition as a Fetch reads it: one batch per record (the coordinator appends each
    transition alone), compacted as Kafka's log cleaner would once it holds more than COMPACT_AFTER records: only
    the newest record of each transactional id stays, at its offset."""

    COMPACT_AFTER = 2000

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.batches: list[bytes] = []
        self.keys: list[bytes] = []
        self.log_end_offset = 0

    def append(self, key: bytes, value: bytes | None, timestamp_ms: int) -> None:
        offset = self.log_end_offset
        self.offsets.append(offset)
        self.keys.append(key)
        self.batches.append(
            records.encode_batch([records.Record(offset, timestamp_ms, key, value)], base_offset=offset)
        )
        self.log_end_offset = offset + 1
        if len(self.offsets) > 2 * self.COMPACT_AFTER:
            newest = {k: i for i, k in enumerate(self.keys)}
            keep = sorted(set(newest.values()) | set(range(len(self.keys) - self.COMPACT_AFTER, len(self.keys))))
            self.offsets = [self.offsets[i] for i in keep]
            self.batches = [self.batches[i] for i in keep]
            self.keys = [self.keys[i] for i in keep]

    def read(self, offset: int) -> list[bytes]:
        return self.batches[bisect_left(self.offsets, offset) :]


def _split_tp(tp: str) -> tuple[str, int]:
    topic, _, partition = tp.rpartition("-")
    return topic, int(partition)


def _splitmix(seed: int) -> int:
    z = (seed + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _cluster_id(seed: int) -> str:
    """Kafka's cluster ids are a UUID's 16 bytes in URL-safe base64 without padding (22 characters)."""
    raw = struct.pack(">QQ", _splitmix(seed ^ 0x5EED), _splitmix(seed ^ 0xC1D))
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
