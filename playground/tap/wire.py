"""What the tap reads off the frames it forwards, pure: the APIs it decodes, the head of a Produce request (the
transactional id and, from the first record batch's header, the producer id, epoch and transactional bit: the records
themselves are never kept), and the answers that name brokers' addresses rewritten to the tap's own listeners.

Follows Kafka's ProduceRequest.json (transactional_id from v3, flexible from v9, topic ids from v13),
DefaultRecordBatch.java (the batch header's layout, playground/protocol/records.py), MetadataResponse.json,
FindCoordinatorResponse.json (one coordinator up to v3, a list from v4), DescribeClusterResponse.json, and the
KIP-951 `node_endpoints` of ProduceResponse (v10+) and FetchResponse (v16+): a client reconnects to the leader they
name, so they are rewritten too.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from playground.protocol import records

PRODUCE, FETCH, METADATA, OFFSET_COMMIT, FIND_COORDINATOR = 0, 1, 3, 8, 10
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, API_VERSIONS = 11, 12, 13, 14, 18
INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 22, 24, 25, 26, 28
DESCRIBE_CLUSTER = 60

# Requests decoded whole (small ones: no records) and handed to the observer with their answers.
OBSERVED = frozenset(
    {
        OFFSET_COMMIT,
        JOIN_GROUP,
        HEARTBEAT,
        LEAVE_GROUP,
        SYNC_GROUP,
        API_VERSIONS,
        INIT_PRODUCER_ID,
        ADD_PARTITIONS_TO_TXN,
        ADD_OFFSETS_TO_TXN,
        END_TXN,
        TXN_OFFSET_COMMIT,
    }
)
# Answers that name brokers: decoded, rewritten, encoded again.
ADDRESSING = frozenset({METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER})


def node_endpoints_version(api_key: int, api_version: int) -> bool:
    """Whether this answer may carry KIP-951's node_endpoints (a new leader's address)."""
    return (api_key == PRODUCE and api_version >= 10) or (api_key == FETCH and api_version >= 16)


# ---------------------------------------------------------------------------------------------- Produce's head


@dataclass(frozen=True, slots=True)
class ProduceHead:
    """What a Produce request says about its producer, read off its first bytes."""

    transactional_id: str | None
    acks: int
    producer_id: int | None  # None: the first batch's header was not within the head
    producer_epoch: int | None
    transactional: bool


class _Cursor:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise IndexError("past the head")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> Any:
        s = struct.Struct(fmt)
        return s.unpack(self.take(s.size))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            (b,) = self.take(1)
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ValueError("varint too long")

    def string(self, compact: bool) -> str | None:
        n = self.uvarint() - 1 if compact else self.unpack(">h")
        return None if n < 0 else self.take(n).decode("utf-8", "replace")

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def read_produce_head(head: bytes) -> ProduceHead | None:
    """A Produce request's producer, from as much of its frame (no size prefix) as was read; None when the head is
    too short or not a Produce request this reader knows (v3 and later: the versions with a transactional id)."""
    c = _Cursor(head)
    try:
        api_key, version, _correlation = c.unpack(">h"), c.unpack(">h"), c.unpack(">i")
        if api_key != PRODUCE or version < 3:
            return None
        flexible = version >= 9
        c.string(compact=False)  # client.id: a request header's is never compact
        if flexible:
            c.skip_tags()
        transactional_id = c.string(flexible)
        acks = c.unpack(">h")
        c.unpack(">i")  # timeout_ms
        topics = c.uvarint() - 1 if flexible else c.unpack(">i")
        if topics < 1:
            return ProduceHead(transactional_id, acks, None, None, False)
        if version >= 13:
            c.take(16)  # topic_id
        else:
            c.string(flexible)
        partitions = c.uvarint() - 1 if flexible else c.unpack(">i")
        if partitions < 1:
            return ProduceHead(transactional_id, acks, None, None, False)
        c.unpack(">i")  # partition index
        size = c.uvarint() - 1 if flexible else c.unpack(">i")
        if size < records.HEADER_BYTES:
            return ProduceHead(transactional_id, acks, None, None, False)
        batch = c.take(records.HEADER_BYTES)
    except (IndexError, ValueError, struct.error):
        return None
    attributes, producer_id, producer_epoch = _BATCH_PRODUCER.unpack_from(batch, records.ATTRIBUTES_OFFSET)
    return ProduceHead(
        transactional_id, acks, producer_id, producer_epoch, bool(attributes & records.TRANSACTIONAL_BIT)
    )


# attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 | producerId int64 | epoch int16
_BATCH_PRODUCER = struct.Struct(">h4x8x8xqh")


# ---------------------------------------------------------------------------------------------- addresses


Address = tuple[str, int]


def brokers_named(body: Any) -> list[tuple[int, str, int]]:
    """(node id, host, port) of every broker an answer names (empty hosts, as a coordinator not found, left out)."""
    out = [(int(b.node_id), b.host, int(b.port)) for b in getattr(body, "brokers", ()) if hasattr(b, "node_id")]
    out += [(int(b.broker_id), b.host, int(b.port)) for b in getattr(body, "brokers", ()) if hasattr(b, "broker_id")]
    out += [(int(c.node_id), c.host, int(c.port)) for c in getattr(body, "coordinators", ()) or ()]
    out += [(int(n.node_id), n.host, int(n.port)) for n in getattr(body, "node_endpoints", ()) or ()]
    if hasattr(body, "host") and hasattr(body, "node_id"):
        out.append((int(body.node_id), body.host, int(body.port)))
    return [(node, host, port) for node, host, port in out if host]


def rewrite(body: Any, address_of: Callable[[int], Address | None]) -> Any:
    """The answer with every broker's host and port replaced by `address_of(node id)` (left as they are where it
    gives None)."""

    def moved(item: Any, id_field: str) -> Any:
        if not getattr(item, "host", ""):
            return item
        address = address_of(int(getattr(item, id_field)))
        if address is None:
            return item
        return dataclasses.replace(item, host=address[0], port=type(item.port)(address[1]))

    changes: dict[str, Any] = {}
    for name in ("brokers", "coordinators", "node_endpoints"):
        items: Iterable[Any] | None = getattr(body, name, None)
        if items:
            changes[name] = tuple(moved(i, "broker_id" if hasattr(i, "broker_id") else "node_id") for i in items)
    if hasattr(body, "host") and hasattr(body, "node_id"):
        top = moved(body, "node_id")
        if top is not body:
            changes["host"], changes["port"] = top.host, top.port
    return dataclasses.replace(body, **changes) if changes else body
