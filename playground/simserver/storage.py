"""What the brokers' disks hold: each partition's log as segments, size-based retention, and the bytes the cluster
retains in all.

Follows storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java (a segment rolls when the next
batch would take it past `segment.bytes`) and core/src/main/scala/kafka/log/UnifiedLog.scala
(deleteRetentionSizeBreachedSegments: while the log is larger than `retention.bytes`, its oldest segments go, whole,
as long as what remains is still at least that large; deletableSegments: never a segment that reaches past the high
watermark, nor the active one while it is empty; deleting them all rolls a new active segment first; the log start
offset moves to the first segment left). A segment's size is the bytes of its batches as they are on the wire
(batches.stored_size): an external producer's batch as it sent it, the simulator's own batches (its client models'
records, transaction markers) about as the server encodes them.

Timing: Kafka checks retention every `log.retention.check.interval.ms` (5 minutes); the simulator checks a partition
as it appends to it. What goes is the same, only sooner, so that a flood of records never outgrows the bound while
it waits for the next check.

Pure and deterministic: the protocol server's core calls it after an append; a replay of the same inputs deletes the
same segments at the same offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from playground.sim.log import Batch, PartitionLog
from playground.simserver.batches import stored_size


@dataclass
class Segments:
    """One partition's segments: their base offsets, sizes (bytes) and when each was last appended to (its file's
    modification time, virtual ms), oldest first; the last is the active one."""

    bases: list[int] = field(default_factory=lambda: [0])
    sizes: list[int] = field(default_factory=lambda: [0])
    modified: list[int] = field(default_factory=lambda: [0])
    counted_to: int = 0  # the log end offset up to which batches are counted in
    size: int = 0  # the bytes of all its segments


class Storage:
    """Segments per partition and the cluster's retained bytes. `batch_size(batch)`: a batch's bytes on the disk."""

    def __init__(self, batch_size: Callable[[Batch], int] = stored_size) -> None:
        self.batch_size = batch_size
        self.parts: dict[str, Segments] = {}
        self.retained_bytes = 0
        self.deleted_bytes = 0  # what retention deleted so far, in all

    def count(self, partition: str, log: PartitionLog, segment_bytes: int, now_ms: int = 0) -> Segments:
        """Take in the batches appended since the last count (rolling segments on the way), at `now_ms`."""
        seg = self.parts.get(partition)
        if seg is None:
            seg = self.parts[partition] = Segments(bases=[log.log_start_offset], sizes=[0], modified=[now_ms])
            seg.counted_to = log.log_start_offset
        if log.log_end_offset <= seg.counted_to:
            return seg
        for batch in _batches_from(log, seg.counted_to):
            size = self.batch_size(batch)
            if seg.sizes[-1] > 0 and seg.sizes[-1] + size > segment_bytes:
                seg.bases.append(batch.base_offset)  # LogSegment.shouldRoll: the active segment is full
                seg.sizes.append(0)
                seg.modified.append(now_ms)
            seg.sizes[-1] += size
            seg.modified[-1] = now_ms
            seg.size += size
            self.retained_bytes += size
        seg.counted_to = log.log_end_offset
        return seg

    def enforce_retention(
        self, partition: str, log: PartitionLog, segment_bytes: int, retention_bytes: int, now_ms: int = 0
    ) -> int:
        """Delete the oldest segments while the log stays at least `retention_bytes` without them; the records
        deleted (0: none)."""
        seg = self.count(partition, log, segment_bytes, now_ms)
        if retention_bytes < 0:
            return 0
        diff = seg.size - retention_bytes
        if diff < 0:
            return 0
        n = 0
        while n < len(seg.bases):
            upper = seg.bases[n + 1] if n + 1 < len(seg.bases) else log.log_end_offset
            last_and_empty = n + 1 == len(seg.bases) and seg.sizes[n] == 0
            if log.high_watermark < upper or last_and_empty or diff - seg.sizes[n] < 0:
                break
            diff -= seg.sizes[n]
            n += 1
        if n == 0:
            return 0
        self._drop(seg, n, log)
        return log.delete_before(seg.bases[0])

    def delete_records(self, partition: str, log: PartitionLog, segment_bytes: int, offset: int, now_ms: int) -> None:
        """DeleteRecords: the log start offset moves to `offset` (PartitionLog.delete_records), and the segments
        wholly before it go (UnifiedLog.deleteLogStartOffsetBreachedSegments, which Kafka runs at its next retention
        check; here at once, as retention runs here)."""
        seg = self.count(partition, log, segment_bytes, now_ms)
        n = 0
        while n + 1 < len(seg.bases) and seg.bases[n + 1] <= offset:
            n += 1
        if offset >= log.log_end_offset and seg.sizes[-1] > 0:
            n = len(seg.bases)  # the active segment too: a new one starts at the log end
        if n:
            self._drop(seg, n, log)
        log.delete_records(offset)

    def _drop(self, seg: Segments, n: int, log: PartitionLog) -> None:
        """The `n` oldest segments go (all of them: a new active one starts at the log end first)."""
        if n == len(seg.bases):
            seg.bases.append(log.log_end_offset)
            seg.sizes.append(0)
            seg.modified.append(seg.modified[-1])
        gone = sum(seg.sizes[:n])
        del seg.bases[:n]
        del seg.sizes[:n]
        del seg.modified[:n]
        seg.size -= gone
        self.retained_bytes -= gone
        self.deleted_bytes += gone

    def forget(self, partitions: Iterable[str]) -> None:
        """Topics deleted: their segments go with them."""
        for partition in partitions:
            seg = self.parts.pop(partition, None)
            if seg is not None:
                self.retained_bytes -= seg.size


def _batches_from(log: PartitionLog, offset: int) -> Iterable[Batch]:
    batches = log.batches
    for i in range(log.batch_index(offset), len(batches)):
        batch = batches[i]
        if batch.base_offset >= offset:
            yield batch
