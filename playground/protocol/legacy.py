"""Message sets of the formats before KIP-98 (magic 0 and 1), which Produce v0-2 may carry and Fetch v0-3 returns,
as LegacyRecord.java and AbstractLegacyRecordBatch.java lay them out:

    offset int64 | size int32 | crc uint32 | magic int8 | attributes int8 | timestamp int64 (magic 1 only) |
    key bytes (int32 length, -1 null) | value bytes

The CRC-32 (not CRC-32C) covers everything from `magic` on. Attributes: bits 0-2 the codec, bit 3 (magic 1) the
timestamp type. A compressed message set is one wrapper message whose value is the codec's compression of the inner
messages; the wrapper's offset is the last inner one, and the inner offsets are relative (0, 1, ...) in magic 1,
absolute in magic 0 (MemoryRecordsBuilder.toInnerOffset).

How a Kafka 3.x broker handles them (its log is magic 2, message.format.version 3.0 and later):
- `up_convert`, LogValidator.validateMessagesAndAssignOffsets: a Produce's messages become one magic-2 batch without a
  producer id, each record keeping its key, value and timestamp (a magic-0 message has none: NO_TIMESTAMP, -1),
  compressed with the message set's codec (compression.type=producer); a bad CRC is CORRUPT_MESSAGE, more than one
  compressed wrapper or an inner message of another magic INVALID_RECORD.
- `down_convert`, RecordsUtil.downConvert for KafkaApis.handleFetchRequest: a Fetch v0-1 reads magic 0, v2-3 magic 1;
  control batches (transaction markers) are left out, each data batch becomes its records as messages of that magic,
  headers dropped, a compressed batch one wrapper compressed with the same codec; an uncompressed batch's records
  before the fetch offset are left out. A zstd batch cannot be down-converted (UNSUPPORTED_COMPRESSION_TYPE).

LZ4 as Kafka writes it (records.lz4_frame): magic 0's frames carry a descriptor checksum computed over the frame's
magic number too (KAFKA-3160), which a broker accepts and writes for magic 0 and clients of that age expect; magic 1's
the standard one.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from playground.protocol import records
from playground.protocol.records import CorruptRecordError, Record, RecordBatch

LOG_OVERHEAD = 12  # offset + size
RECORD_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
NO_TIMESTAMP = -1
CREATE_TIME, LOG_APPEND_TIME = 0, 1


@dataclass(frozen=True, slots=True)
class Message:
    offset: int
    magic: int
    attributes: int
    timestamp_ms: int  # NO_TIMESTAMP for magic 0
    key: bytes | None
    value: bytes | None

    @property
    def codec(self) -> int:
        return self.attributes & records.COMPRESSION_MASK


def is_legacy(data: bytes | memoryview) -> bool:
    """Whether a records field holds a message set of magic 0 or 1 (the magic byte sits at the same place as a
    batch's)."""
    return len(data) > 16 and data[16] < records.MAGIC


# ------------------------------------------------------------------------------------------------ reading


def read_messages(data: bytes | memoryview, *, partial_ok: bool = False) -> list[Message]:
    """The shallow messages of a message set (a compressed wrapper is one message), each checked against its CRC.
    A Fetch's may end with part of a message (cut at the size the broker promised, or its overflow message): with
    `partial_ok` it is dropped, as clients drop it."""
    view = memoryview(data)
    out: list[Message] = []
    pos = 0
    while pos < len(view):
        if len(view) - pos < LOG_OVERHEAD:
            if partial_ok:
                break
            raise CorruptRecordError("truncated message header")
        offset, size = struct.unpack_from(">qi", view, pos)
        start, end = pos + LOG_OVERHEAD, pos + LOG_OVERHEAD + size
        if end > len(view) and partial_ok:
            break
        if size < RECORD_OVERHEAD_V0 or end > len(view):
            raise CorruptRecordError(f"message of {size} bytes")
        out.append(_message(offset, view[start:end]))
        pos = end
    return out


def _message(offset: int, body: memoryview) -> Message:
    (crc,) = struct.unpack_from(">I", body, 0)
    if zlib.crc32(body[4:]) != crc:
        raise CorruptRecordError("message CRC does not match its contents")
    magic, attributes = body[4], body[5]
    pos = 6
    timestamp = NO_TIMESTAMP
    if magic == 1:
        if len(body) < RECORD_OVERHEAD_V0 + 8:
            raise CorruptRecordError("magic 1 message without its timestamp")
        (timestamp,) = struct.unpack_from(">q", body, pos)
        pos += 8
    elif magic != 0:
        raise CorruptRecordError(f"message magic {magic}", "INVALID_RECORD")
    key, pos = _read_bytes(body, pos)
    value, pos = _read_bytes(body, pos)
    if pos != len(body):
        raise CorruptRecordError("a message whose fields do not add up to its size")
    return Message(offset, magic, attributes, timestamp, key, value)


def _read_bytes(body: memoryview, pos: int) -> tuple[bytes | None, int]:
    if pos + 4 > len(body):
        raise CorruptRecordError("a message's key or value runs past its end")
    (size,) = struct.unpack_from(">i", body, pos)
    pos += 4
    if size < 0:
        return None, pos
    if pos + size > len(body):
        raise CorruptRecordError("a message's key or value runs past its end")
    return bytes(body[pos : pos + size]), pos + size


def _inner(wrapper: Message) -> list[Message]:
    """The messages inside a compressed wrapper."""
    data = decompress(wrapper.codec, wrapper.value or b"", wrapper.magic)
    inner = read_messages(data)
    for message in inner:
        if message.magic != wrapper.magic:
            raise CorruptRecordError("an inner message's magic is not its wrapper's", "INVALID_RECORD")
        if message.codec != records.NONE:
            raise CorruptRecordError("an inner message with a compression codec", "INVALID_RECORD")
    return inner


# ------------------------------------------------------------------------------------------------ up-conversion


def up_convert(data: bytes | memoryview) -> bytes:
    """A Produce's message set as the one magic-2 batch a 3.x broker appends (LogValidator), base offset 0; raises
    CorruptRecordError with the error the broker answers."""
    shallow = read_messages(data)
    if not shallow:
        raise CorruptRecordError("Record batch has no batches at all", "INVALID_RECORD")
    compressed = [m for m in shallow if m.codec != records.NONE]
    if compressed and len(shallow) > 1:
        raise CorruptRecordError("Compressed outer record has more than one batch", "INVALID_RECORD")
    if any(m.magic != shallow[0].magic for m in shallow):
        raise CorruptRecordError("Batch magic is not the same as the first batch's", "INVALID_RECORD")
    messages = _inner(shallow[0]) if compressed else shallow
    codec = shallow[0].codec
    if codec == records.ZSTD:
        raise CorruptRecordError("zstd in a message set of magic 0 or 1", "INVALID_RECORD")
    converted = [Record(i, m.timestamp_ms, m.key, m.value) for i, m in enumerate(messages)]
    return records.encode_batch(converted, compression=codec)


# ------------------------------------------------------------------------------------------------ down-conversion


def down_convert(batches: list[RecordBatch], magic: int, fetch_offset: int) -> bytes:
    """What a Fetch of an older version returns for these magic-2 batches (LazyDownConversionRecords and its send):
    the converted messages, filled up to the size of the batches read with an overflow message a client drops (offset
    -1, a size past the end), or cut at that size; at least the first batch that converts to anything. Raises
    CorruptRecordError(..., "UNSUPPORTED_COMPRESSION_TYPE") when that first batch is zstd; a later one ends the
    answer there, filled as above."""
    converted: list[bytes] = []
    for batch in batches:
        try:
            chunk = convert_batch(batch, magic, fetch_offset)
        except CorruptRecordError:
            if not converted:
                raise
            break
        if chunk:
            converted.append(chunk)
    original = sum(len(b.raw) for b in batches)
    if converted:
        size = max(original, len(converted[0]))
    else:
        size = LOG_OVERHEAD if batches else 0
    out = b"".join(converted)[:size]
    if len(out) < size:
        remaining = size - len(out)
        overflow = struct.pack(">qi", -1, max(remaining + 1, records.HEADER_BYTES))
        out += (overflow + bytes(max(0, remaining - len(overflow))))[:remaining]
    return out


def convert_batch(batch: RecordBatch, magic: int, fetch_offset: int) -> bytes:
    """One magic-2 batch in the old format (RecordsUtil.downConvert): b"" for a control batch, or when nothing of
    it is at or after `fetch_offset`."""
    if batch.control:
        return b""
    if batch.compression == records.ZSTD:
        raise CorruptRecordError("Down-conversion of zstandard-compressed batches", "UNSUPPORTED_COMPRESSION_TYPE")
    log_append = bool(batch.attributes & records.TIMESTAMP_TYPE_BIT)
    kept = [r for r in batch.records() if batch.compression != records.NONE or r.offset >= fetch_offset]
    if not kept:
        return b""
    if batch.compression == records.NONE:
        return b"".join(
            _encode_message(r.offset, magic, _timestamp_attr(magic, log_append), _ts(magic, r, batch), r) for r in kept
        )
    base = kept[0].offset
    inner = b"".join(
        _encode_message(r.offset - base if magic > 0 else r.offset, magic, 0, _ts(magic, r, batch), r) for r in kept
    )
    wrapper_ts = batch.max_timestamp if magic > 0 else NO_TIMESTAMP
    attributes = batch.compression | _timestamp_attr(magic, log_append)
    value = compress(batch.compression, inner, magic)
    return _encode_message(kept[-1].offset, magic, attributes, wrapper_ts, Record(0, 0, None, value))


def _timestamp_attr(magic: int, log_append: bool) -> int:
    return records.TIMESTAMP_TYPE_BIT if magic > 0 and log_append else 0


def _ts(magic: int, record: Record, batch: RecordBatch) -> int:
    """A record's timestamp in the old format: none in magic 0; the log append time for such a topic's batches."""
    if magic == 0:
        return NO_TIMESTAMP
    return batch.max_timestamp if batch.attributes & records.TIMESTAMP_TYPE_BIT else record.timestamp_ms


def encode_messages(messages: list[Record], magic: int, codec: int = records.NONE) -> bytes:
    """A message set as a producer of that age writes it (offsets 0, 1, ...; one compressed wrapper with a codec)."""
    if codec == records.NONE:
        return b"".join(_encode_message(i, magic, 0, _own_ts(magic, r), r) for i, r in enumerate(messages))
    inner = b"".join(_encode_message(i, magic, 0, _own_ts(magic, r), r) for i, r in enumerate(messages))
    wrapper_ts = max((r.timestamp_ms for r in messages), default=NO_TIMESTAMP) if magic > 0 else NO_TIMESTAMP
    wrapper = Record(0, 0, None, compress(codec, inner, magic))
    return _encode_message(len(messages) - 1, magic, codec, wrapper_ts, wrapper)


def _own_ts(magic: int, record: Record) -> int:
    return record.timestamp_ms if magic > 0 else NO_TIMESTAMP


def _encode_message(offset: int, magic: int, attributes: int, timestamp: int, record: Record) -> bytes:
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic > 0:
        body += struct.pack(">q", timestamp)
    for field in (record.key, record.value):
        if field is None:
            body += struct.pack(">i", -1)
        else:
            body += struct.pack(">i", len(field)) + field
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)


# ------------------------------------------------------------------------------------------------ codecs


def compress(codec: int, data: bytes, magic: int) -> bytes:
    if codec == records.LZ4:
        return records.lz4_frame(data, broken_checksum=magic == 0)
    return records.compress(codec, data)


def decompress(codec: int, data: bytes, magic: int) -> bytes:
    if codec == records.LZ4 and magic == 0:
        data = records.lz4_fix_checksum(data)  # Kafka reads magic 0's either way
    return records.decompress(codec, data)
