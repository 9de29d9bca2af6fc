"""Upstream's identifiers in the simulator's terms, pure: what the tap records of a real cluster's clients is replayed
on the simulator, whose brokers hand out their own producer ids, epochs and group member ids, and name topics by ids
of their own. A client's request names what the real cluster gave it; before the simulator is fed the request, those
are replaced by what the simulator gave for the same request (each request is fed to both, so every answer that hands
out an identifier comes in pairs: upstream's and the simulator's).

Pairs learned: InitProducerId's producer id and epoch (and EndTxn's, from v5: KIP-890's epoch bump at a transaction's
end), JoinGroup's member id (an answer MEMBER_ID_REQUIRED carries one too, KIP-394). Topic ids: upstream's from its
Metadata answers, the simulator's by name. Rewritten: the producer id and epoch of InitProducerId (KIP-360's bump of
a known producer), AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit and every record batch of a Produce
request (DefaultRecordBatch: the CRC-32C covers the producer id and epoch, so it is computed again); member ids of
JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and TxnOffsetCommit; topic ids (Fetch v13+, Produce v13+).
A Metadata request never creates a topic on the simulator (allow_auto_topic_creation false): a topic is created there
as upstream has it, once upstream's answer names it (session/taprecord.py). A Fetch's incremental fetch session
(KIP-227, FetchSession.scala: ids the broker hands out) becomes a sessionless full fetch (session id 0, epoch -1) of
every partition in the session: a connection's session is what its last full fetch (epoch 0) named, updated by each
incremental one (a partition named again with its new fetch offset, a forgotten one dropped), as the broker's session
cache keeps it. What it reads is the same, no state of the log changes by it, and the replay's consumers fetch every
partition they fetch on the real cluster, at the same offsets; `as_answered` then bounds it by upstream's answer.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from crc32c import crc32c

from playground.protocol import records
from playground.protocol.messages import decode_request, encode_request, peek
from playground.tap import wire

# Answers that hand out identifiers a client sends back: fed to both, paired by connection and correlation id.
PAIRED = frozenset({wire.INIT_PRODUCER_ID, wire.END_TXN, wire.JOIN_GROUP})
REWRITTEN = frozenset(
    {
        wire.PRODUCE,
        wire.FETCH,
        wire.METADATA,
        wire.INIT_PRODUCER_ID,
        wire.ADD_PARTITIONS_TO_TXN,
        wire.ADD_OFFSETS_TO_TXN,
        wire.END_TXN,
        wire.TXN_OFFSET_COMMIT,
        wire.JOIN_GROUP,
        wire.SYNC_GROUP,
        wire.HEARTBEAT,
        wire.LEAVE_GROUP,
        wire.OFFSET_COMMIT,
    }
)
_PRODUCER = (("producer_id", "producer_epoch"), ("v3_and_below_producer_id", "v3_and_below_producer_epoch"))
_PID_EPOCH = struct.Struct(">qh")
_PID_OFFSET = 43  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, 2 stamps


# (topic, partition, from offset, to offset or None, read_committed) -> the bytes the simulator's Fetch would return
Span = Callable[[str, int, int, int | None, bool], int | None]

# The partitions one connection's fetch session may hold here (a consumer's assignment is far smaller): past it the
# session is forgotten and each Fetch is recorded as it names its partitions.
SESSION_PARTITIONS_MAX = 10_000


def _topic_key(topic: Any) -> Any:
    """A FetchTopic's or ForgottenTopic's topic: its id from Fetch v13, its name before."""
    return getattr(topic, "topic_id", None) or getattr(topic, "topic", None)


class _EveryVersion(dict[int, tuple[int, int]]):
    def get(self, key: Any, default: Any = None) -> tuple[int, int]:
        return (0, 32767)


def _ok(body: Any) -> bool:
    code = getattr(body, "error_code", 0)
    return int(getattr(code, "value", code)) == 0


class Translation:
    """What upstream gave -> what the simulator gave. `sim_topic_id(name)`: the simulator's id of a topic."""

    def __init__(self, sim_topic_id: Callable[[str], uuid.UUID | None]) -> None:
        self.sim_topic_id = sim_topic_id
        self.producers: dict[int, int] = {}  # upstream producer id -> the simulator's
        self.epochs: dict[tuple[int, int], int] = {}  # (upstream producer id, epoch) -> the simulator's epoch
        self.epoch_shift: dict[int, int] = {}  # upstream producer id -> the last pair's difference (an epoch unseen)
        self.members: dict[str, str] = {}
        self.topic_names: dict[uuid.UUID, str] = {}  # upstream topic id -> name
        # a connection's incremental fetch session: (topic name or id, partition) -> (its FetchTopic, FetchPartition)
        self.fetch_sessions: dict[Any, dict[tuple[Any, int], tuple[Any, Any]]] = {}

    # ------------------------------------------------------------------------------------------ learning
    def learn(self, api_key: int, upstream: Any, sim: Any) -> None:
        """The two answers to the same request (upstream's and the simulator's)."""
        if api_key in (wire.INIT_PRODUCER_ID, wire.END_TXN):
            up_pid, sim_pid = int(getattr(upstream, "producer_id", -1)), int(getattr(sim, "producer_id", -1))
            if _ok(upstream) and _ok(sim) and up_pid >= 0 and sim_pid >= 0:
                up_epoch, sim_epoch = int(upstream.producer_epoch), int(sim.producer_epoch)
                self.producers[up_pid] = sim_pid
                self.epochs[(up_pid, up_epoch)] = sim_epoch
                self.epoch_shift[up_pid] = sim_epoch - up_epoch
        elif api_key == wire.JOIN_GROUP:
            up_member, sim_member = getattr(upstream, "member_id", ""), getattr(sim, "member_id", "")
            if up_member and sim_member:
                self.members[str(up_member)] = str(sim_member)

    def learn_topics(self, metadata: Any) -> None:
        """Upstream's Metadata answer: its topics' ids."""
        for topic in getattr(metadata, "topics", ()) or ():
            topic_id, name = getattr(topic, "topic_id", None), getattr(topic, "name", None)
            if topic_id is not None and name:
                self.topic_names[topic_id] = str(name)

    def producer(self, producer_id: int, epoch: int) -> tuple[int, int]:
        sim_pid = self.producers.get(producer_id)
        if sim_pid is None:
            return producer_id, epoch
        sim_epoch = self.epochs.get((producer_id, epoch))
        if sim_epoch is None:
            sim_epoch = epoch + self.epoch_shift.get(producer_id, 0) if epoch >= 0 else epoch
        return sim_pid, sim_epoch

    # ------------------------------------------------------------------------------------------ requests
    def forget(self, conn: Any) -> None:
        """The connection closed: its fetch session with it."""
        self.fetch_sessions.pop(conn, None)

    def request(self, payload: bytes, conn: Any = None) -> bytes:
        """A client's request frame (without its size prefix) as the simulator must be given it; `conn`: the client
        connection it came on (a fetch session is one connection's)."""
        try:
            api_key = peek(payload)[0]
        except ValueError:
            return payload
        if api_key not in REWRITTEN or not (
            self.producers or self.members or self.topic_names or api_key in (wire.FETCH, wire.METADATA)
        ):
            return payload
        try:
            request = decode_request(payload, _EveryVersion())
        except ValueError:
            return payload  # the simulator judges it as the broker did
        body = self._walk(request.body)
        if api_key == wire.FETCH and hasattr(body, "session_id"):
            body = self._sessionless(conn, body)
        if api_key == wire.METADATA and getattr(body, "allow_auto_topic_creation", False):
            body = dataclasses.replace(body, allow_auto_topic_creation=False)
        if body is request.body:
            return payload
        return encode_request(api_key, request.api_version, request.correlation_id, request.client_id, body)

    def _sessionless(self, conn: Any, body: Any) -> Any:
        """A Fetch as a sessionless full fetch of its connection's session (FetchSession.scala's cache: an epoch-0
        fetch starts it with what it names, an incremental one updates it and drops what it forgets)."""
        epoch = int(body.session_epoch)
        if epoch < 0 or conn is None:
            self.fetch_sessions.pop(conn, None)
            session: dict[tuple[Any, int], tuple[Any, Any]] | None = None
        elif epoch == 0:
            session = self.fetch_sessions[conn] = {}
        else:
            session = self.fetch_sessions.get(conn)  # None: begun before the tap saw it, named partitions only
        topics = body.topics
        if session is not None:
            for topic in body.topics:
                for p in topic.partitions:
                    session[(_topic_key(topic), int(p.partition))] = (topic, p)
            for gone in body.forgotten_topics_data:
                for partition in gone.partitions:
                    session.pop((_topic_key(gone), int(partition)), None)
            if len(session) > SESSION_PARTITIONS_MAX:  # a client's own bound would come first: remember none
                self.fetch_sessions.pop(conn, None)
            else:
                grouped: dict[Any, tuple[Any, list[Any]]] = {}
                for (key, _), (topic, p) in session.items():
                    grouped.setdefault(key, (topic, []))[1].append(p)
                topics = tuple(dataclasses.replace(t, partitions=tuple(parts)) for t, parts in grouped.values())
        return dataclasses.replace(
            body,
            session_id=type(body.session_id)(0),
            session_epoch=type(body.session_epoch)(-1),
            topics=topics,
            forgotten_topics_data=(),
        )

    def as_answered(
        self,
        payload: bytes,
        through: Mapping[tuple[str, int], int],
        span: Span,
        sim_topic_name: Callable[[Any], str | None],
        catch_up: Callable[[bool], None] = lambda read_committed: None,
    ) -> bytes:
        """A Fetch (as `request` gave it) for the simulator to answer what upstream answered, fed when upstream's
        answer came: it waits for nothing (max_wait 0) and reads each partition only as far as upstream returned
        whole batches. Fed as the client sent it, the simulator's answer would race upstream's: a record produced
        while upstream's answer was on its way would be given to the replayed consumer, and again at its next Fetch,
        which still names the offset upstream answered empty (kafka-clients' incremental session leaves it unnamed).
        A partition upstream returned nothing of is kept if the simulator has nothing there either (the consumer's
        position), else left out. `through`: fetched_through(upstream's answer); `span(topic, partition, from, to,
        read_committed)`: the bytes of the simulator's batches a Fetch from `from` returns up to offset `to` (None:
        whether it returns any, 0 or more), None where it would answer an error; `catch_up(read_committed)` is called
        before the simulator's log is read."""
        try:
            request = decode_request(payload, _EveryVersion())
        except ValueError:
            return payload
        body = request.body
        rc = int(getattr(body, "isolation_level", 0)) == 1
        catch_up(rc)
        topics, total = [], 0
        for topic in body.topics:
            name = getattr(topic, "topic", None) or sim_topic_name(getattr(topic, "topic_id", None))
            kept = []
            for p in topic.partitions:
                offset = int(p.fetch_offset)
                to = through.get((str(name), int(p.partition)), offset)
                given = span(str(name), int(p.partition), offset, to, rc) if name and to > offset else 0
                if given:
                    kept.append(dataclasses.replace(p, partition_max_bytes=type(p.partition_max_bytes)(given)))
                    total += given
                elif not name or not span(str(name), int(p.partition), offset, None, rc):
                    kept.append(p)  # the simulator answers it as upstream did: nothing, or the error it would
            if kept:
                topics.append(dataclasses.replace(topic, partitions=tuple(kept)))
        body = dataclasses.replace(
            body,
            max_wait=type(body.max_wait)(0),
            max_bytes=type(body.max_bytes)(max(int(body.max_bytes), total)),
            topics=tuple(topics),
        )
        return encode_request(wire.FETCH, request.api_version, request.correlation_id, request.client_id, body)

    def _walk(self, obj: Any) -> Any:
        if isinstance(obj, tuple):
            items = tuple(self._walk(x) for x in obj)
            return obj if all(a is b for a, b in zip(items, obj)) else items
        if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
            return obj
        changes: dict[str, Any] = {}
        for pid_field, epoch_field in _PRODUCER:
            pid = getattr(obj, pid_field, None)
            if pid is not None and int(pid) in self.producers:
                epoch = getattr(obj, epoch_field)
                new_pid, new_epoch = self.producer(int(pid), int(epoch))
                changes[pid_field], changes[epoch_field] = type(pid)(new_pid), type(epoch)(new_epoch)
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.name == "member_id" and isinstance(value, str) and value in self.members:
                changes[f.name] = type(value)(self.members[value])
            elif f.name == "topic_id" and isinstance(value, uuid.UUID):
                name = self.topic_names.get(value)
                sim_id = self.sim_topic_id(name) if name else None
                if sim_id is not None and sim_id != value:
                    changes[f.name] = sim_id
            elif f.name == "records" and isinstance(value, bytes | bytearray) and self.producers:
                again = rewrite_batches(bytes(value), self.producer)
                if again is not value:
                    changes[f.name] = type(value)(again)
            elif isinstance(value, tuple) and value and f.name not in changes:
                walked = self._walk(value)
                if walked is not value:
                    changes[f.name] = walked
        return dataclasses.replace(obj, **changes) if changes else obj


def fetched_through(answer: Any, topic_names: Mapping[uuid.UUID, str]) -> dict[tuple[str, int], int]:
    """Upstream's Fetch answer: (topic, partition) -> the offset after the last whole batch it returned there (only
    the partitions it returned records of, without an error)."""
    through: dict[tuple[str, int], int] = {}
    for topic in getattr(answer, "responses", ()) or ():
        topic_id = getattr(topic, "topic_id", None)
        name = getattr(topic, "topic", None) or (topic_names.get(topic_id) if topic_id is not None else None)
        for part in topic.partitions if name else ():
            code = getattr(part.error_code, "value", part.error_code)
            end = records.whole_batches_end(part.records) if part.records and int(code) == 0 else None
            if end is not None:
                through[(str(name), int(part.partition_index))] = end
    return through


def rewrite_batches(data: bytes, producer: Callable[[int, int], tuple[int, int]]) -> bytes:
    """The record batches with each producer id and epoch as `producer` maps them, checksummed again (the same
    object when nothing changes)."""
    out: bytearray | None = None
    pos = 0
    while pos + records.HEADER_BYTES <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        end = pos + records.LOG_OVERHEAD + length
        if length < records.HEADER_BYTES - records.LOG_OVERHEAD or end > len(data) or data[pos + 16] != records.MAGIC:
            break  # not a batch this reader knows: the rest as it is
        pid, epoch = _PID_EPOCH.unpack_from(data, pos + _PID_OFFSET)
        new = producer(pid, epoch) if pid >= 0 else (pid, epoch)
        if new != (pid, epoch):
            if out is None:
                out = bytearray(data)
            _PID_EPOCH.pack_into(out, pos + _PID_OFFSET, *new)
            crc = crc32c(memoryview(out)[pos + records.ATTRIBUTES_OFFSET : end])
            struct.pack_into(">I", out, pos + records.CRC_OFFSET, crc)
        pos = end
    return data if out is None else bytes(out)


def answers_of(outputs: list[tuple[int, bytes | None]], asked: Mapping[tuple[int, int], int]) -> list[tuple[int, int]]:
    """(connection, correlation id) of the simulator's answers among `outputs` that `asked` waits for."""
    out = []
    for conn, data in outputs:
        if data is not None and len(data) >= 8:
            (correlation,) = struct.unpack_from(">i", data, 4)
            if (conn, correlation) in asked:
                out.append((conn, correlation))
    return out
