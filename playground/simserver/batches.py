"""A partition's batches as the wire has them: an external producer's as it sent them, the simulator's own encoded
from its log, and what each takes on a broker's disk.

An external producer's batch goes into the simulator's log as its bytes (`WireValues`: its records' values, and
`WireKeys` its keys, as the simulator shows them, read from those bytes when they are asked for; the batches read
lately are kept decoded), so that a Fetch returns it exactly as it was produced (compression, timestamps, headers)
and a flood of records costs the server what it retains, not twice that. The simulator's own batches (its client
models' records, transaction markers) are encoded as DefaultRecordBatch lays them out (protocol/records.py), once.
Pure: the protocol server's core and its storage (storage.py) read them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from playground.protocol import records
from playground.sim.log import Batch


class WireValues(Sequence[Any]):
    """The values of a batch an external producer sent, as the simulator shows them (text where the bytes are UTF-8;
    all None when the server keeps only the batch's bytes, see ServerCore's `record_values`), read from the batch
    itself (`payload`, as it came on the wire) when they are asked for: the log holds each batch once, its bytes, so
    that what a flood of records costs the server is what it retains, not twice that."""

    __slots__ = ("length", "payload", "shown")

    def __init__(self, payload: bytes, length: int, shown: bool = True) -> None:
        self.payload = payload
        self.length = length  # records in the batch
        self.shown = shown

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: Any) -> Any:
        if not self.shown:
            if isinstance(i, slice):
                return (None,) * len(range(*i.indices(self.length)))
            if not -self.length <= i < self.length:
                raise IndexError(i)
            return None
        return _read_wire(self.payload)[1][i]

    def headers_at(self, i: int) -> dict[str, Any] | None:
        """Record `i`'s headers (name -> value as text where UTF-8; the last of a repeated name), None without any:
        a pipeline declared `by: header` maps inputs to outputs by one of them."""
        if not self.shown:
            return None
        return _read_wire(self.payload)[2][i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, list, WireValues)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.payload)

    def __repr__(self) -> str:
        return f"WireValues({tuple(self)!r})"


class WireKeys(Sequence[Any]):
    """The keys of such a batch, read from it as its values are."""

    __slots__ = ("values",)

    def __init__(self, values: WireValues) -> None:
        self.values = values

    def __len__(self) -> int:
        return self.values.length

    def __getitem__(self, i: Any) -> Any:
        return _read_wire(self.values.payload)[0][i]


HEADERS_SHOWN, HEADER_CHARS = 16, 256  # a record's headers kept for the view, and of each name and value


def _headers(headers: tuple[tuple[str, bytes | None], ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in headers[:HEADERS_SHOWN]:
        text = text_of(value)
        out[name[:HEADER_CHARS]] = text[:HEADER_CHARS] if text is not None else None
    return out


@functools.lru_cache(maxsize=16)
def _read_wire(payload: bytes) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[dict[str, Any] | None, ...]]:
    """(keys, values, headers) of a batch as the simulator shows them: the batches read lately are kept decoded (a
    page draws a window of a partition: its batches are read together, again at every update). Few: each holds its
    batch's bytes (the key) and its records (the value), up to a megabyte each, after retention deleted the batch
    too."""
    recs = records.read_batches(payload)[0].records()
    headers = tuple(_headers(r.headers) if r.headers else None for r in recs)
    return tuple(text_of(r.key) for r in recs), tuple(text_of(r.value) for r in recs), headers


# A control batch (RECORD_BATCH_OVERHEAD, one record of a 4-byte key and a 6-byte value) and the framing of one record
# (length, attributes, timestamp and offset deltas, key and value lengths, header count) as the simulator estimates
# the size of its own batches.
CONTROL_BATCH_BYTES = 78
RECORD_FRAMING_BYTES = 8


def stored_size(batch: Batch) -> int:
    """A batch's bytes on the disk: as an external producer sent it, or (the simulator's own batches) about as the
    server encodes them, without encoding them (the batch header and each record's framing)."""
    payload = getattr(batch.values, "payload", None)
    if payload is not None:
        return len(payload)
    if batch.control is not None:
        return CONTROL_BATCH_BYTES
    size = records.HEADER_BYTES
    for i, value in enumerate(batch.values):
        size += RECORD_FRAMING_BYTES + len(_wire(batch.key_at(i)) or b"") + len(_wire(value) or b"")
    return size


def encode_sim_batch(batch: Batch, leader_epoch: int) -> bytes:
    """A batch the simulator appended itself (its client models' records, a transaction marker) in wire form."""
    if batch.control is not None:
        return records.control_batch(
            base_offset=batch.base_offset,
            producer_id=batch.producer_id,
            producer_epoch=batch.epoch,
            control=batch.control,
            coordinator_epoch=batch.coordinator_epoch,
            timestamp_ms=batch.timestamp_ms,
            partition_leader_epoch=leader_epoch,
        )
    recs = [
        records.Record(batch.base_offset + i, batch.timestamp_ms, _wire(batch.key_at(i)), _wire(value))
        for i, value in enumerate(batch.values)
    ]
    return records.encode_batch(
        recs,
        base_offset=batch.base_offset,
        producer_id=batch.producer_id,
        producer_epoch=batch.epoch,
        base_sequence=batch.base_sequence,
        transactional=batch.transactional,
        partition_leader_epoch=leader_epoch,
    )


def _wire(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def text_of(raw: bytes | None) -> str | bytes | None:
    """How the simulator shows a key or value an external client sent: text where it is UTF-8, else the bytes."""
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
