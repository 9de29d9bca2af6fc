"""What a partition's log holds, decoded: record batches (magic 2) with their producer id, epoch, base sequence and
the transactional and control bits, the COMMIT/ABORT markers of control batches, and `__transaction_state`'s keys
and values.

Follows Kafka's formats: DefaultRecordBatch.java and DefaultRecord.java (the batch header and records; attributes:
bits 0-2 the compression, bit 4 transactional, bit 5 control), ControlRecordType.java and EndTransactionMarker.java
(control keys and values), TransactionLog.scala with TransactionLogKey.json/TransactionLogValue.json (the
coordinator's records), Utils.abs and String.hashCode (TransactionStateManager.partitionFor).

Fields are read with kio's readers (`kio.serial.readers`). kio's own batch reader is not used: it keeps a record's
timestamp to the second only and does not decompress, while the logs shown here keep milliseconds and batches from
real clients may be compressed (gzip, snappy, lz4, zstd: decompressed with cramjam, as Kafka's CompressionType
names them). Batches of the pre-0.11 formats (magic 0, 1) carry no producer state and are skipped.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

import cramjam
from kio.serial.readers import (
    read_int8,
    read_int16,
    read_int32,
    read_int64,
    read_signed_varint,
    read_signed_varlong,
)

# DefaultRecordBatch's header: base offset (8), length (4), partition leader epoch (4), magic (1), crc (4),
# attributes (2), last offset delta (4), base timestamp (8), max timestamp (8), producer id (8), epoch (2),
# base sequence (4), record count (4).
BATCH_OVERHEAD = 61
LENGTH_OFFSET = 8
MAGIC_OFFSET = 16
ATTRIBUTES_OFFSET = 21
COMPRESSION_MASK = 0x07
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20


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


def decode_control_key(key: bytes | None) -> str:
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


# ---------------------------------------------------------------------------------------------------- batches

XERIAL_MAGIC = b"\x82SNAPPY\x00"


def _snappy(data: bytes) -> bytes:
    """Kafka's Java client frames snappy the xerial way (a 16-byte header, then length-prefixed blocks); librdkafka
    writes raw snappy."""
    if not data.startswith(XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out, pos = bytearray(), 16
    while pos + 4 <= len(data):
        (n,) = struct.unpack(">i", data[pos : pos + 4])
        out += bytes(cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    return bytes(out)


DECOMPRESS = {
    1: lambda data: bytes(cramjam.gzip.decompress(data)),
    2: _snappy,
    3: lambda data: bytes(cramjam.lz4.decompress(data)),
    4: lambda data: bytes(cramjam.zstd.decompress(data)),
}


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, size = read_signed_varint(buf, pos)
    pos += size
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise ValueError("record runs past its batch")
    return bytes(buf[pos : pos + n]), pos + n


def _records(
    data: bytes, count: int, base_offset: int, base_timestamp: int
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """DefaultRecord: (offset, timestamp ms, key, value) of each of `count` records."""
    out = []
    pos = 0
    for _ in range(count):
        length, size = read_signed_varint(data, pos)
        pos += size
        end = pos + length
        pos += 1  # attributes: unused
        ts_delta, size = read_signed_varlong(data, pos)
        pos += size
        offset_delta, size = read_signed_varint(data, pos)
        pos += size
        key, pos = _read_bytes(data, pos)
        value, pos = _read_bytes(data, pos)
        out.append((base_offset + offset_delta, base_timestamp + ts_delta, key, value))
        pos = end  # headers: skipped
    return out


def decode_batches(data: bytes) -> list[LogEntry]:
    """Decode a Fetch response's records (magic 2 batches), control batches INCLUDED. A batch cut off at the end
    (a Fetch answers up to its byte limit) is left out."""
    out: list[LogEntry] = []
    pos = 0
    while pos + BATCH_OVERHEAD <= len(data):
        base_offset, _ = read_int64(data, pos)
        length, _ = read_int32(data, pos + LENGTH_OFFSET)
        size = LENGTH_OFFSET + 4 + length
        if pos + size > len(data):
            break
        magic, _ = read_int8(data, pos + MAGIC_OFFSET)
        if magic != 2:  # pre-0.11 formats carry no producer state
            pos += size
            continue
        attributes, _ = read_int16(data, pos + ATTRIBUTES_OFFSET)
        last_delta, _ = read_int32(data, pos + 23)
        base_timestamp, _ = read_int64(data, pos + 27)
        pid, _ = read_int64(data, pos + 43)
        epoch, _ = read_int16(data, pos + 51)
        base_seq, _ = read_int32(data, pos + 53)
        count, _ = read_int32(data, pos + 57)
        body = bytes(data[pos + BATCH_OVERHEAD : pos + size])
        codec = attributes & COMPRESSION_MASK
        if codec:
            body = DECOMPRESS[codec](body)
        txn, ctrl = bool(attributes & TRANSACTIONAL_BIT), bool(attributes & CONTROL_BIT)
        first = len(out)
        for offset, ts, key, value in _records(body, count, base_offset, base_timestamp):
            if ctrl:
                entry = LogEntry(
                    offset,
                    offset + 1,
                    pid,
                    epoch,
                    -1,
                    txn,
                    control=decode_control_key(key),
                    coordinator_epoch=decode_control_value(value),
                    timestamp_ms=ts,
                )
            else:
                seq = base_seq + (offset - base_offset) if base_seq >= 0 else -1
                entry = LogEntry(offset, offset + 1, pid, epoch, seq, txn, key=key, value=value, timestamp_ms=ts)
            out.append(entry)
        for e in out[first:]:
            e.batch_bytes = size
        if out:
            out[-1].next_offset = max(out[-1].next_offset, base_offset + last_delta + 1)
        pos += size
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
