"""`__transaction_state`'s records as the transaction coordinator writes them (TransactionLog.keyToBytes/valueToBytes;
transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json and TransactionLogValue.json).

Key: int16 version 0, then the transactional id (int16-length string). Value: int16 version, then v0 (classic
encoding) while the cluster's transaction.version is 0, v1 (flexible, with tagged fields) from transaction.version 1
(TransactionVersion.transactionLogValueVersion): a Kafka 3.9 cluster as tools/kafka formats it writes v0, a 4.x one
v1. In v1, PreviousProducerId (tag 0), NextProducerId (tag 1) and ClientTransactionVersion (tag 2) are written only
when they differ from their defaults (-1, -1, 0). An Empty transaction's partitions are null. An expired id's record
is a tombstone (no value).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

_I16 = struct.Struct(">h")
_HEAD = struct.Struct(">hqhib")  # version, producer id, epoch, timeout, status
_TIMES = struct.Struct(">qq")


def key_bytes(transactional_id: str) -> bytes:
    raw = transactional_id.encode("utf-8")
    return _I16.pack(0) + _I16.pack(len(raw)) + raw


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def value_bytes(
    *,
    version: int,
    producer_id: int,
    producer_epoch: int,
    timeout_ms: int,
    status: int,
    partitions: Iterable[tuple[str, int]] | None,
    last_update_ms: int,
    start_ms: int,
    previous_producer_id: int = -1,
    next_producer_id: int = -1,
    client_transaction_version: int = 0,
) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions or ():
        by_topic.setdefault(topic, []).append(partition)
    out = bytearray(_HEAD.pack(version, producer_id, producer_epoch, timeout_ms, status))
    if version == 0:
        if partitions is None:
            out += struct.pack(">i", -1)
        else:
            out += struct.pack(">i", len(by_topic))
            for topic, ids in by_topic.items():
                name = topic.encode("utf-8")
                out += _I16.pack(len(name)) + name + struct.pack(">i", len(ids))
                out += b"".join(struct.pack(">i", p) for p in sorted(ids))
        out += _TIMES.pack(last_update_ms, start_ms)
        return bytes(out)
    if partitions is None:
        out += _uvarint(0)
    else:
        out += _uvarint(len(by_topic) + 1)
        for topic, ids in by_topic.items():
            name = topic.encode("utf-8")
            out += _uvarint(len(name) + 1) + name + _uvarint(len(ids) + 1)
            out += b"".join(struct.pack(">i", p) for p in sorted(ids))
            out += b"\x00"  # no tagged fields
    out += _TIMES.pack(last_update_ms, start_ms)
    tags = []
    if previous_producer_id != -1:
        tags.append((0, struct.pack(">q", previous_producer_id)))
    if next_producer_id != -1:
        tags.append((1, struct.pack(">q", next_producer_id)))
    if client_transaction_version != 0:
        tags.append((2, _I16.pack(client_transaction_version)))
    out += _uvarint(len(tags))
    for tag, data in tags:
        out += _uvarint(tag) + _uvarint(len(data)) + data
    return bytes(out)
