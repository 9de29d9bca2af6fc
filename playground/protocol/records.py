"""Record batches, magic v2 (KIP-98), as DefaultRecordBatch.java and DefaultRecord.java lay them out:

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 (2) | crc uint32 |
    attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 | producerId int64 |
    producerEpoch int16 | baseSequence int32 | recordCount int32 | records (compressed as a whole if the codec says)

The CRC-32C covers everything from `attributes` to the end, so a broker assigning offsets and stamping its leader
epoch (both before the CRC) leaves the checksum as the producer computed it; a Fetch returns the batch as it was
produced, compression included. Attributes: bits 0-2 the codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), bit 3 the
timestamp type, bit 4 transactional, bit 5 control. A control record (a transaction marker, EndTransactionMarker.java)
has the key int16 version 0 + int16 type (ABORT 0, COMMIT 1) and the value int16 version 0 + int32 coordinator epoch.

Codecs through cramjam (gzip through zlib, whose deflate is Java's), each written as kafka-clients writes it, so that a
batch the server compresses is the broker's byte for byte. Snappy comes two ways: kafka-clients writes xerial's framing (SnappyOutputStream: a magic
header, then length-prefixed blocks), librdkafka writes a plain snappy block; Kafka's reader (SnappyInputStream)
accepts both, and so does this one. LZ4 is the LZ4 frame format as Kafka writes it (Lz4BlockOutputStream, `lz4_frame`),
zstd a zstd frame.

kio has a record-batch reader, but it reads neither compressed batches nor millisecond timestamps (it truncates them
to seconds), so batches are read and written here, with kio's primitives' layout.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import cramjam
from crc32c import crc32c

MAGIC = 2
HEADER_BYTES = 61  # everything before the first record
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part batchLength does not count
CRC_OFFSET = 17  # where the checksum sits; it covers [21, end)
ATTRIBUTES_OFFSET = 21

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODECS = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20

ABORT_TYPE, COMMIT_TYPE = 0, 1
CONTROL_TYPES = {"ABORT": ABORT_TYPE, "COMMIT": COMMIT_TYPE}

# Decompressing a batch yields at most this much: a batch that claims more is refused as corrupt (what a broker would
# take is bounded by message.max.bytes on the compressed side; this bounds the other side).
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

_HEADER = struct.Struct(">qiibIhiqqqhii")
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream's default block size
_GZIP_HEADER = bytes.fromhex("1f8b08000000000000ff")  # no name, no time, no extra flags, OS unknown
_LZ4_MAGIC = struct.pack("<I", 0x184D2204)
_LZ4_FLG = 0x60  # version 1, independent blocks, no block or content checksum, no content size
_LZ4_BD = 0x40  # blocks of at most 64 KiB
_LZ4_BLOCK = 64 * 1024
_MASK32 = 0xFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393


class CorruptRecordError(ValueError):
    """A batch a broker would refuse. `error` is the code it answers with: CORRUPT_MESSAGE for a checksum or size
    that does not add up, INVALID_RECORD for a record that cannot be read."""

    def __init__(self, message: str, error: str = "CORRUPT_MESSAGE") -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class RecordBatch:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    raw: bytes  # the whole batch, header included

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def crc_ok(self) -> bool:
        return crc32c(memoryview(self.raw)[ATTRIBUTES_OFFSET:]) == self.crc

    def records(self) -> list[Record]:
        # bytes, not a memoryview: indexing bytes is faster, and the copy is one memcpy per batch.
        body = self.raw[HEADER_BYTES:]
        data = decompress(self.compression, body) if self.compression else body
        records: list[Record] = []
        pos = 0
        for _ in range(self.record_count):
            record, pos = _read_record(data, pos, self.base_offset, self.base_timestamp)
            records.append(record)
        if pos != len(data):
            raise CorruptRecordError(f"{len(data) - pos} bytes after the batch's last record", "INVALID_RECORD")
        return records

    def scan(self) -> tuple[int, bool]:
        """The batch read whole as `records()` reads it, with the same errors, keeping only how many records it holds
        and whether any has a key: what a Produce needs of an external producer's batch, whose bytes the log keeps
        (simserver/batches.py). Kafka's LogValidator walks every record of a batch it appends; building each one's
        key, value and Record here was three quarters of simcluster's CPU under a transactional flood (py-spy)."""
        data = decompress(self.compression, self.raw[HEADER_BYTES:]) if self.compression else self.raw[HEADER_BYTES:]
        size = len(data)
        pos = 0
        keyed = False
        varint = _read_varint
        # Varints of one byte (deltas, header counts, small keys) and two (the lengths of records and values under
        # 8 KiB, offset deltas past 63) are read here, not by a call, and each field has its own lines rather than a
        # loop over fields: calls and loops were most of this walk's time (py-spy under franz-go's ETL tests), so
        # the same few lines repeat below on purpose. Anything longer, and anything near an end, goes through
        # _read_varint, which says what is wrong. (`b` of an `elif` is the byte its `if` read: when that `if` did
        # not read one, the `elif`'s bound fails first.)
        for _ in range(self.record_count):
            if pos < size and (b := data[pos]) < 0x80:  # the record's length
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif pos + 1 < size and (c := data[pos + 1]) < 0x80:
                raw = (b & 0x7F) | (c << 7)
                length, pos = (raw >> 1) ^ -(raw & 1), pos + 2
            else:
                length, pos = varint(data, pos)
            end = pos + length
            if length < 0 or end > size:
                raise CorruptRecordError("a record's length runs past the batch", "INVALID_RECORD")
            pos += 1  # the attributes, unused in v2
            if pos < end and data[pos] < 0x80:  # the timestamp delta, skipped
                pos += 1
            elif pos + 1 < end and data[pos + 1] < 0x80:
                pos += 2
            else:
                _value, pos = varint(data, pos)
            if pos < end and data[pos] < 0x80:  # the offset delta, skipped
                pos += 1
            elif pos + 1 < end and data[pos + 1] < 0x80:
                pos += 2
            else:
                _value, pos = varint(data, pos)
            if pos < end and (b := data[pos]) < 0x80:  # the key's length, -1 for null
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                length, pos = varint(data, pos)
            if length >= 0:
                keyed = True
                pos += length
                if pos > size:
                    raise CorruptRecordError("a record's key, value or header runs past its end", "INVALID_RECORD")
            if pos < end and (b := data[pos]) < 0x80:  # the value's length, -1 for null
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif pos + 1 < end and (c := data[pos + 1]) < 0x80:
                raw = (b & 0x7F) | (c << 7)
                length, pos = (raw >> 1) ^ -(raw & 1), pos + 2
            else:
                length, pos = varint(data, pos)
            if length >= 0:
                pos += length
                if pos > size:
                    raise CorruptRecordError("a record's key, value or header runs past its end", "INVALID_RECORD")
            if pos < end and data[pos] == 0:  # no headers
                pos += 1
            else:
                _headers, pos = _read_headers(data, pos)
            if pos != end:
                raise CorruptRecordError("a record whose fields do not add up to its length", "INVALID_RECORD")
        if pos != size:
            raise CorruptRecordError(f"{size - pos} bytes after the batch's last record", "INVALID_RECORD")
        return self.record_count, keyed

    def control_type(self) -> str | None:
        """COMMIT or ABORT for a transaction marker's batch, None for a data batch."""
        if not self.control:
            return None
        (record,) = self.records()
        return control_type(record.key)


def control_type(key: bytes | None) -> str:
    """A control record's type from its key (int16 version, int16 type: ABORT 0, COMMIT 1)."""
    if key is None or len(key) < 4:
        raise CorruptRecordError("control record without its type", "INVALID_RECORD")
    _version, kind = struct.unpack(">hh", key[:4])
    return {ABORT_TYPE: "ABORT", COMMIT_TYPE: "COMMIT"}.get(kind, f"CONTROL_{kind}")


def read_batches(
    data: bytes | bytearray | memoryview, *, partial_ok: bool = True, skip_old_formats: bool = False
) -> list[RecordBatch]:
    """The batches of a records field. A Fetch response may end with the first part of a batch (a broker cuts at
    max_bytes): with `partial_ok` that part is dropped, as clients drop it; otherwise it is an error. Batches of the
    pre-0.11 formats (magic 0, 1) are refused, or passed over with `skip_old_formats` (a reader of a real cluster's
    log: they carry no producer state)."""
    view = memoryview(data)
    out: list[RecordBatch] = []
    pos = 0
    while pos < len(view):
        if len(view) - pos < LOG_OVERHEAD:
            if partial_ok:
                break
            raise CorruptRecordError("truncated batch header")
        (length,) = struct.unpack_from(">i", view, pos + 8)
        if length < HEADER_BYTES - LOG_OVERHEAD:
            raise CorruptRecordError(f"batch length {length} is smaller than a batch header")
        end = pos + LOG_OVERHEAD + length
        if end > len(view):
            if partial_ok:
                break
            raise CorruptRecordError("truncated batch")
        if skip_old_formats and view[pos + 16] != MAGIC:
            pos = end
            continue
        fields = _HEADER.unpack_from(view, pos)
        if fields[3] != MAGIC:
            raise CorruptRecordError(f"record batch magic {fields[3]}, only magic 2 is served", "INVALID_RECORD")
        if fields[12] < 0:
            raise CorruptRecordError(f"negative record count {fields[12]}")
        out.append(_batch(fields, bytes(view[pos:end])))
        pos = end
    return out


def whole_batches_end(data: bytes | bytearray | memoryview) -> int | None:
    """The offset after the last whole batch of a records field (None: no whole batch), read from the batch headers
    alone: a Fetch answer may end with the first part of a batch, which clients drop."""
    end: int | None = None
    pos = 0
    while len(data) - pos >= HEADER_BYTES:
        fields = _HEADER.unpack_from(data, pos)
        base_offset, length, last_offset_delta = fields[0], fields[1], fields[6]
        if length < HEADER_BYTES - LOG_OVERHEAD or pos + LOG_OVERHEAD + length > len(data):
            break
        end = base_offset + last_offset_delta + 1
        pos += LOG_OVERHEAD + length
    return end


def _batch(fields: tuple[int, ...], raw: bytes) -> RecordBatch:
    (base, length, leader_epoch, magic, crc, attributes, last_delta, base_ts, max_ts, pid, epoch, seq, count) = fields
    return RecordBatch(
        base, length, leader_epoch, magic, crc, attributes, last_delta, base_ts, max_ts, pid, epoch, seq, count, raw
    )


def decompress(codec: int, data: bytes) -> bytes:
    try:
        if codec == GZIP:
            out = bytes(cramjam.gzip.decompress(data))
        elif codec == SNAPPY:
            out = _snappy_decompress(data)
        elif codec == LZ4:
            out = bytes(cramjam.lz4.decompress(data))
        elif codec == ZSTD:
            out = bytes(cramjam.zstd.decompress(data))
        else:
            raise CorruptRecordError(f"unknown compression codec {codec}", "INVALID_RECORD")
    except CorruptRecordError:
        raise
    except Exception as e:  # every codec has errors of its own
        raise CorruptRecordError(f"cannot decompress ({CODECS.get(codec, codec)}): {e}") from None
    if len(out) > MAX_DECOMPRESSED_BYTES:
        raise CorruptRecordError(f"a batch decompressing to {len(out)} bytes")
    return out


def compress(codec: int, data: bytes) -> bytes:
    if codec == GZIP:  # as java.util.zip.GZIPOutputStream writes it (zlib's deflate, level 6, that header)
        deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
        body = deflate.compress(data) + deflate.flush()
        return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & _MASK32)
    if codec == SNAPPY:  # as kafka-clients writes it: xerial framing
        blocks = [
            bytes(cramjam.snappy.compress_raw(data[i : i + _XERIAL_BLOCK])) for i in range(0, len(data), _XERIAL_BLOCK)
        ]
        return _XERIAL_HEADER + b"".join(struct.pack(">i", len(b)) + b for b in blocks)
    if codec == LZ4:
        return lz4_frame(data)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    if codec == NONE:
        return data
    raise ValueError(f"unknown compression codec {codec}")


def lz4_frame(data: bytes, *, broken_checksum: bool = False) -> bytes:
    """An LZ4 frame as Kafka writes one (Lz4BlockOutputStream): independent blocks of at most 64 KiB, each stored
    uncompressed when compressing does not make it smaller, no checksums but the descriptor's. Kafka's reader refuses
    linked blocks, which LZ4's own frame writer makes. `broken_checksum`: the descriptor checksum computed over the
    frame's magic number too, as magic-0 message sets had it (KAFKA-3160)."""
    header = _LZ4_MAGIC + bytes([_LZ4_FLG, _LZ4_BD])
    out = bytearray(header)
    out.append((xxh32(header if broken_checksum else header[4:]) >> 8) & 0xFF)
    for i in range(0, len(data), _LZ4_BLOCK):
        block = data[i : i + _LZ4_BLOCK]
        packed = bytes(cramjam.lz4.compress_block(block, store_size=False))
        if len(packed) < len(block):
            out += struct.pack("<I", len(packed)) + packed
        else:
            out += struct.pack("<I", len(block) | 0x80000000) + block
    out += struct.pack("<I", 0)
    return bytes(out)


def lz4_fix_checksum(frame: bytes) -> bytes:
    """An LZ4 frame with its descriptor checksum recomputed (a magic-0 frame's was computed over the magic number)."""
    if len(frame) < 7 or not frame.startswith(_LZ4_MAGIC):
        return frame
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)  # after the content size and dictionary id
    if len(frame) <= end:
        return frame
    return frame[:end] + bytes([(xxh32(frame[4:end]) >> 8) & 0xFF]) + frame[end + 1 :]


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, as LZ4 frames checksum their descriptors."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _MASK32, (seed + _P2) & _MASK32, seed & _MASK32, (seed - _P1) & _MASK32]
        while pos + 16 <= n:
            for i in range(4):
                (word,) = struct.unpack_from("<I", data, pos)
                v[i] = (_rotl((v[i] + word * _P2) & _MASK32, 13) * _P1) & _MASK32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _MASK32
    else:
        h = (seed + _P5) & _MASK32
    h = (h + n) & _MASK32
    while pos + 4 <= n:
        (word,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + word * _P3) & _MASK32, 17) * _P4) & _MASK32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _MASK32, 11) * _P1) & _MASK32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _MASK32
    h ^= h >> 13
    h = (h * _P3) & _MASK32
    h ^= h >> 16
    return h


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK32


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    pos = len(_XERIAL_HEADER)
    parts = []
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("truncated xerial snappy block length")
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CorruptRecordError("truncated xerial snappy block")
        parts.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + size])))
        pos += size
    return b"".join(parts)


# ----------------------------------------------------------------------------------------------- varints


def _read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A zigzag-encoded varint (or varlong): (value, next position)."""
    # Most varints of a record (its attributes, deltas, the sizes of its key, value and headers) fit one or two
    # bytes: a Produce reads every record it appends, so these two paths are the simulated cluster's hottest loop
    # (py-spy under franz-go's ETL tests).
    if pos + 1 < len(data):
        b = data[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        b2 = data[pos + 1]
        if b2 < 0x80:
            raw = (b & 0x7F) | (b2 << 7)
            return (raw >> 1) ^ -(raw & 1), pos + 2
    shift = 0
    raw = 0
    while True:
        if pos >= len(data):
            raise CorruptRecordError("a record ends inside a varint", "INVALID_RECORD")
        b = data[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint longer than 10 bytes", "INVALID_RECORD")
    return (raw >> 1) ^ -(raw & 1), pos


def _write_varint(out: bytearray, value: int) -> None:
    raw = (value << 1) ^ (value >> 63)
    raw &= (1 << 64) - 1
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def _read_bytes(data: bytes | memoryview, pos: int) -> tuple[bytes | None, int]:
    size, pos = _read_varint(data, pos)
    if size < 0:
        return None, pos
    end = pos + size
    if end > len(data):
        raise CorruptRecordError("a record's key, value or header runs past its end", "INVALID_RECORD")
    return bytes(data[pos:end]), end


def _read_record(data: bytes | memoryview, pos: int, base_offset: int, base_timestamp: int) -> tuple[Record, int]:
    length, pos = _read_varint(data, pos)
    end = pos + length
    if length < 0 or end > len(data):
        raise CorruptRecordError("a record's length runs past the batch", "INVALID_RECORD")
    pos += 1  # attributes: unused in v2
    timestamp_delta, pos = _read_varint(data, pos)
    offset_delta, pos = _read_varint(data, pos)
    key, pos = _read_bytes(data, pos)
    value, pos = _read_bytes(data, pos)
    headers, pos = _read_headers(data, pos)
    if pos != end:
        raise CorruptRecordError("a record whose fields do not add up to its length", "INVALID_RECORD")
    return Record(base_offset + offset_delta, base_timestamp + timestamp_delta, key, value, headers), end


def _read_headers(data: bytes | memoryview, pos: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = _read_varint(data, pos)
    if count < 0:
        raise CorruptRecordError("negative header count", "INVALID_RECORD")
    headers = []
    for _ in range(count):
        hkey, pos = _read_bytes(data, pos)
        if hkey is None:
            raise CorruptRecordError("a header without a key", "INVALID_RECORD")
        hvalue, pos = _read_bytes(data, pos)
        try:
            headers.append((hkey.decode("utf-8"), hvalue))
        except UnicodeDecodeError:
            raise CorruptRecordError("a header key that is not UTF-8", "INVALID_RECORD") from None
    return tuple(headers), pos


def _write_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        _write_varint(out, -1)
    else:
        _write_varint(out, len(value))
        out += value


# ----------------------------------------------------------------------------------------------- writing


def encode_records(records: Iterable[Record], base_offset: int, base_timestamp: int) -> bytes:
    out = bytearray()
    body = bytearray()
    for r in records:
        body.clear()
        body.append(0)
        _write_varint(body, r.timestamp_ms - base_timestamp)
        _write_varint(body, r.offset - base_offset)
        _write_bytes(body, r.key)
        _write_bytes(body, r.value)
        _write_varint(body, len(r.headers))
        for hkey, hvalue in r.headers:
            _write_bytes(body, hkey.encode("utf-8"))
            _write_bytes(body, hvalue)
        _write_varint(out, len(body))
        out += body
    return bytes(out)


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    compression: int = NONE,
    partition_leader_epoch: int = -1,
    log_append_time: bool = False,
) -> bytes:
    """One batch of `records` (their offsets absolute: base_offset + delta), checksummed."""
    if not records:
        raise ValueError("a batch holds at least one record")
    base_timestamp = records[0].timestamp_ms
    max_timestamp = max(r.timestamp_ms for r in records)
    body = encode_records(records, base_offset, base_timestamp)
    if compression != NONE:
        body = compress(compression, body)
    attributes = compression
    if log_append_time:
        attributes |= TIMESTAMP_TYPE_BIT
    if transactional:
        attributes |= TRANSACTIONAL_BIT
    if control:
        attributes |= CONTROL_BIT
    last_offset_delta = records[-1].offset - base_offset
    tail = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
        + body
    )
    crc = crc32c(tail)
    head = struct.pack(">qiibI", base_offset, len(tail) + 9, partition_leader_epoch, MAGIC, crc)
    return head + tail


def control_batch(
    *,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    control: str,
    coordinator_epoch: int,
    timestamp_ms: int,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transaction marker as a partition leader writes it for WriteTxnMarkers (MemoryRecords.withEndTransactionMarker)."""
    key = struct.pack(">hh", 0, CONTROL_TYPES[control])
    value = struct.pack(">hi", 0, coordinator_epoch)
    return encode_batch(
        [Record(base_offset, timestamp_ms, key, value)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def with_offsets(raw: bytes, base_offset: int, partition_leader_epoch: int) -> bytes:
    """The batch as a leader appends it: its base offset and the leader's epoch set (neither is under the CRC)."""
    return struct.pack(">q", base_offset) + raw[8:12] + struct.pack(">i", partition_leader_epoch) + raw[16:]
