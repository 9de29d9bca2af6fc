"""What a partition's log holds, decoded: record batches (magic 2) with their producer id, epoch, base sequence and
the transactional and control bits, the COMMIT/ABORT markers of control batches, and `__transaction_state`'s keys
and values.

Follows Kafka's formats: DefaultRecordBatch.java and DefaultRecord.java (the batch header and records; attributes:
bits 0-2 the compression, bit 4 transactional, bit 5 control), ControlRecordType.java and EndTransactionMarker.java
(control keys and values), TransactionLog.scala with TransactionLogKey.json/TransactionLogValue.json (the
coordinator's records), Utils.abs and String.hashCode (TransactionStateManager.partitionFor).

Batches are read by the protocol package (playground/protocol/records.py: every codec real clients send, timestamps
in milliseconds, checksums), the same reader the simulated cluster's server uses; this module turns them into the
entries the observers show. Batches of the pre-0.11 formats (magic 0, 1) carry no producer state and are skipped.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from playground.protocol.records import control_type, read_batches

HEADERS_SHOWN, HEADER_CHARS = 16, 256  # a record's headers an entry keeps, and of each name and value


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
    headers: tuple[tuple[str, bytes | None], ...] = ()  # a pipeline `by: header` maps records by one of them

    def to_dict(self) -> dict[str, Any]:
        if self.control:
            return {
                "offset": self.offset,
                "control": self.control,
                "producer_id": self.producer_id,
                "epoch": self.epoch,
            }
        out: dict[str, Any] = {
            "offset": self.offset,
            "key": _text(self.key),
            "value": _text(self.value),
            "producer_id": self.producer_id,
            "epoch": self.epoch,
            "sequence": self.sequence,
            "transactional": self.transactional,
        }
        if self.headers:  # bounded as a connected client's are (simserver/batches.py)
            out["headers"] = {
                name[:HEADER_CHARS]: (_text(value) or "")[:HEADER_CHARS] if value is not None else None
                for name, value in self.headers[:HEADERS_SHOWN]
            }
        return out


def _text(b: bytes | None) -> str | None:
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b.hex()


def decode_control_value(value: bytes | None) -> int | None:
    """Control record value (markers): int16 version (0), int32 coordinator epoch."""
    if not value or len(value) < 6:
        return None
    _version, coord_epoch = struct.unpack(">hi", value[:6])
    return coord_epoch


def decode_batches(data: bytes) -> list[LogEntry]:
    """Decode a Fetch response's records (magic 2 batches, any codec: playground/protocol/records.py reads them),
    control batches INCLUDED. A batch cut off at the end (a Fetch answers up to its byte limit) is left out, and so
    are batches of the pre-0.11 formats (magic 0, 1), which carry no producer state."""
    out: list[LogEntry] = []
    for batch in read_batches(data, partial_ok=True, skip_old_formats=True):
        first = len(out)
        for record in batch.records():
            offset, ts = record.offset, record.timestamp_ms
            if batch.control:
                entry = LogEntry(
                    offset,
                    offset + 1,
                    batch.producer_id,
                    batch.producer_epoch,
                    -1,
                    batch.transactional,
                    control=control_type(record.key),
                    coordinator_epoch=decode_control_value(record.value),
                    timestamp_ms=ts,
                )
            else:
                seq = batch.base_sequence + (offset - batch.base_offset) if batch.base_sequence >= 0 else -1
                entry = LogEntry(
                    offset,
                    offset + 1,
                    batch.producer_id,
                    batch.producer_epoch,
                    seq,
                    batch.transactional,
                    key=record.key,
                    value=record.value,
                    timestamp_ms=ts,
                    headers=record.headers,
                )
            out.append(entry)
        for e in out[first:]:
            e.batch_bytes = len(batch.raw)
        if out:
            out[-1].next_offset = max(out[-1].next_offset, batch.next_offset)
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
