"""One partition's log and its producer state: the partition leader's rules, in one place.

What Kafka does here (storage/.../ProducerAppendInfo.java, ProducerStateManager.java, UnifiedLog.scala):
- A data batch carries producer id, producer epoch, base sequence and the transactional flag. An idempotent
  producer's batch is checked against that producer's state: an older epoch -> INVALID_PRODUCER_EPOCH (47); a
  sequence gap -> OUT_OF_ORDER_SEQUENCE_NUMBER (45); a retry of one of the last 5 batches gets the original
  offsets back (no error, nothing appended); a non-transactional batch from a producer id with an open
  transaction on this partition -> INVALID_TXN_STATE (48).
- A control record (COMMIT/ABORT marker) occupies one offset; it ends the producer's open transaction here.
  A marker with an older epoch -> INVALID_PRODUCER_EPOCH, with an older coordinator epoch ->
  TRANSACTION_COORDINATOR_FENCED (52). Kafka writes a marker even when no transaction is open (a resent marker).
- LSO = min(first unstable offset, high watermark), where the first unstable offset is the smallest first
  offset among open transactions and completed ones whose marker is not yet below the high watermark.
- Each aborted transaction with data here gets an abort index entry (producer id, first offset, last offset =
  the ABORT marker's offset, the LSO at abort time); `read_committed` fetches use it to drop aborted batches.

Costs stay flat as the log grows: fetch finds a batch by bisecting base offsets, the first unstable offset
lives in a heap, and the abort index is bisected on last offset.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
COMMIT = "COMMIT"
ABORT = "ABORT"
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
# ProducerStateEntry.NUM_BATCHES_TO_RETAIN: the broker remembers this many batches per producer for de-duplication.
NUM_BATCHES_TO_RETAIN = 5


class Txn:
    """One transaction's span on this partition (the batches of it share this object)."""

    __slots__ = ("first_offset", "last_offset", "outcome", "producer_id", "stable")

    def __init__(self, producer_id: int, first_offset: int) -> None:
        self.producer_id = producer_id
        self.first_offset = first_offset
        self.last_offset: int | None = None  # the marker's offset, once written
        self.outcome: str | None = None  # COMMIT | ABORT once the marker is written
        self.stable = False  # marker below the high watermark: no longer holds the LSO back

    # A checkpoint (session/cache.py) holds one of these per transaction and one Batch per batch of every partition:
    # their state as a tuple freezes and thaws in about 2/3 of the time of the {slot: value} dict pickle makes.
    def __getstate__(self) -> tuple[Any, ...]:
        return (self.first_offset, self.last_offset, self.outcome, self.producer_id, self.stable)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.first_offset, self.last_offset, self.outcome, self.producer_id, self.stable = state


class Batch:
    __slots__ = (
        "base_offset",
        "base_sequence",
        "control",
        "coordinator_epoch",
        "epoch",
        "keys",
        "last_offset",
        "producer_id",
        "timestamp_ms",
        "transactional",
        "txn",
        "values",
    )

    def __init__(
        self,
        base_offset: int,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        transactional: bool,
        keys: Sequence[Any] | None,
        values: Sequence[Any],
        timestamp_ms: int,
        control: str | None = None,
        coordinator_epoch: int = -1,
        txn: Txn | None = None,
    ) -> None:
        self.base_offset = base_offset
        self.last_offset = base_offset + max(1, len(values)) - 1
        self.producer_id = producer_id
        self.epoch = epoch
        self.base_sequence = base_sequence
        self.transactional = transactional
        self.control = control
        self.coordinator_epoch = coordinator_epoch
        self.keys = keys
        self.values = values
        self.timestamp_ms = timestamp_ms
        self.txn = txn

    def __getstate__(self) -> tuple[Any, ...]:  # as Txn's
        return (
            self.base_offset,
            self.base_sequence,
            self.control,
            self.coordinator_epoch,
            self.epoch,
            self.keys,
            self.last_offset,
            self.producer_id,
            self.timestamp_ms,
            self.transactional,
            self.txn,
            self.values,
        )

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        (
            self.base_offset,
            self.base_sequence,
            self.control,
            self.coordinator_epoch,
            self.epoch,
            self.keys,
            self.last_offset,
            self.producer_id,
            self.timestamp_ms,
            self.transactional,
            self.txn,
            self.values,
        ) = state

    def key_at(self, i: int) -> Any:
        return None if self.keys is None else self.keys[i]

    def fate(self) -> str:
        if self.control is not None:
            return "marker"
        if not self.transactional:
            return "plain"
        outcome = self.txn.outcome if self.txn is not None else None
        return "open" if outcome is None else ("committed" if outcome == COMMIT else "aborted")


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class ProducerEntry:
    """ProducerStateEntry: what the leader remembers about one producer id on this partition."""

    __slots__ = (
        "batches",
        "coordinator_epoch",
        "current_txn_first_offset",
        "epoch",
        "last_timestamp_ms",
        "producer_id",
    )

    def __init__(self, producer_id: int) -> None:
        self.producer_id = producer_id
        self.epoch = NO_PRODUCER_EPOCH
        # (first_seq, last_seq, base_offset, last_offset) of the last NUM_BATCHES_TO_RETAIN batches of `epoch`
        self.batches: deque[tuple[int, int, int, int]] = deque(maxlen=NUM_BATCHES_TO_RETAIN)
        self.coordinator_epoch = -1
        self.current_txn_first_offset: int | None = None
        self.last_timestamp_ms = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1][1] if self.batches else NO_SEQUENCE

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> tuple[int, int] | None:
        if epoch != self.epoch:
            return None
        for b_first, b_last, base, last in self.batches:
            if b_first == first_seq and b_last == last_seq:
                return base, last
        return None


class AppendResult(NamedTuple):
    error: str | None
    base_offset: int = -1
    last_offset: int = -1
    duplicate: bool = False


# A hook the leader calls for the first transactional batch of a transaction on this partition (KIP-890 part 1,
# transaction.partition.verification.enable=true in 3.9): returns an error name or None.
Verifier = Callable[[int, int], "str | None"]


class PartitionLog:
    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.name = f"{topic}-{partition}"
        self.batches: list[Batch] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.high_watermark = 0
        self.producers: dict[int, ProducerEntry] = {}
        self._ongoing: dict[int, Txn] = {}
        self._unstable: list[tuple[int, int, Txn]] = []  # (first_offset, tiebreak, txn)
        self._unreplicated: list[tuple[int, int, Txn]] = []  # (marker offset, tiebreak, txn)
        self._tiebreak = 0
        self.aborted: list[AbortedTxn] = []
        self._aborted_last: list[int] = []
        self.record_count = 0  # data records (not markers)

    # -- appends ----------------------------------------------------------------------------------------------
    def append(
        self,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        transactional: bool,
        values: Sequence[Any],
        keys: Sequence[Any] | None = None,
        timestamp_ms: int = 0,
        verify: Verifier | None = None,
        from_client: bool = True,
    ) -> AppendResult:
        """Validate and append one data batch as the leader does for a Produce request."""
        count = len(values)
        if count == 0:
            return AppendResult("INVALID_REQUEST")
        entry = self.producers.get(producer_id) if producer_id != NO_PRODUCER_ID else None
        if producer_id != NO_PRODUCER_ID:
            last_seq = base_sequence + count - 1
            if entry is not None and from_client and base_sequence != NO_SEQUENCE:
                dup = entry.find_duplicate(epoch, base_sequence, last_seq)
                if dup is not None:
                    return AppendResult(None, dup[0], dup[1], duplicate=True)
            if entry is not None and epoch < entry.epoch:
                return AppendResult("INVALID_PRODUCER_EPOCH")
            if from_client and base_sequence != NO_SEQUENCE:
                error = self._check_sequence(entry, epoch, base_sequence)
                if error:
                    return AppendResult(error)
            open_txn = entry is not None and entry.current_txn_first_offset is not None
            if open_txn and not transactional:
                return AppendResult("INVALID_TXN_STATE")
            if transactional and not open_txn and verify is not None:
                error = verify(producer_id, epoch)
                if error:
                    return AppendResult(error)
        base = self.log_end_offset
        txn = None
        if producer_id != NO_PRODUCER_ID:
            if entry is None:
                entry = self.producers[producer_id] = ProducerEntry(producer_id)
            if entry.epoch != epoch:
                entry.epoch = epoch
                entry.batches.clear()
            entry.batches.append((base_sequence, base_sequence + count - 1, base, base + count - 1))
            entry.last_timestamp_ms = timestamp_ms
            if transactional:
                txn = self._ongoing.get(producer_id)
                if txn is None:
                    txn = Txn(producer_id, base)
                    entry.current_txn_first_offset = base
                    self._ongoing[producer_id] = txn
                    self._tiebreak += 1
                    heapq.heappush(self._unstable, (base, self._tiebreak, txn))
        batch = Batch(base, producer_id, epoch, base_sequence, transactional, keys, values, timestamp_ms, txn=txn)
        self.batches.append(batch)
        self._bases.append(base)
        self.log_end_offset = base + count
        self.record_count += count
        return AppendResult(None, base, base + count - 1)

    @staticmethod
    def _check_sequence(entry: ProducerEntry | None, epoch: int, first_seq: int) -> str | None:
        current_epoch = entry.epoch if entry is not None else NO_PRODUCER_EPOCH
        if epoch != current_epoch:
            if first_seq != 0 and current_epoch != NO_PRODUCER_EPOCH:
                return "OUT_OF_ORDER_SEQUENCE_NUMBER"
            return None
        assert entry is not None
        # An entry of this epoch with no batch (a TV2 marker bumped the epoch, or a marker made the entry) takes
        # sequence 0 next: last is NO_SEQUENCE (-1). Any sequence goes only for a producer the partition has no
        # epoch of (NO_PRODUCER_EPOCH, above). franz-go's TestTxnEtl on 4.x: a batch of sequence 410 retried past the
        # refused batch 0 of a new epoch must be OUT_OF_ORDER_SEQUENCE_NUMBER, not appended before it.
        last = entry.last_seq
        if first_seq == last + 1 or (first_seq == 0 and last == 2**31 - 1):
            return None
        return "OUT_OF_ORDER_SEQUENCE_NUMBER"

    def append_marker(
        self, producer_id: int, epoch: int, control: str, coordinator_epoch: int, timestamp_ms: int = 0
    ) -> AppendResult:
        """Append a COMMIT/ABORT control record as the leader does for WriteTxnMarkers."""
        entry = self.producers.get(producer_id)
        if entry is not None:
            if epoch < entry.epoch:
                return AppendResult("INVALID_PRODUCER_EPOCH")
            if entry.coordinator_epoch > coordinator_epoch:
                return AppendResult("TRANSACTION_COORDINATOR_FENCED")
        else:
            entry = self.producers[producer_id] = ProducerEntry(producer_id)
        offset = self.log_end_offset
        txn = self._ongoing.pop(producer_id, None)
        if txn is not None:
            txn.last_offset = offset
            txn.outcome = control
            self._tiebreak += 1
            heapq.heappush(self._unreplicated, (offset, self._tiebreak, txn))
            if control == ABORT:
                self.aborted.append(
                    AbortedTxn(producer_id, txn.first_offset, offset, self._lso_at_completion(producer_id, offset))
                )
                self._aborted_last.append(offset)
        batch = Batch(
            offset,
            producer_id,
            epoch,
            NO_SEQUENCE,
            True,
            None,
            (None,),
            timestamp_ms,
            control=control,
            coordinator_epoch=coordinator_epoch,
            txn=txn,
        )
        self.batches.append(batch)
        self._bases.append(offset)
        self.log_end_offset = offset + 1
        if entry.epoch != epoch:
            entry.batches.clear()
        entry.epoch = epoch
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp_ms = timestamp_ms
        return AppendResult(None, offset, offset)

    def _lso_at_completion(self, producer_id: int, marker_offset: int) -> int:
        # ProducerStateManager.lastStableOffset(completedTxn): the first offset of any other open transaction,
        # else the offset after the marker. The txn index uses it to stop scanning early.
        first = None
        for txn in self._ongoing.values():
            if txn.producer_id != producer_id and (first is None or txn.first_offset < first):
                first = txn.first_offset
        return first if first is not None else marker_offset + 1

    # -- watermarks -------------------------------------------------------------------------------------------
    def advance_high_watermark(self, offset: int) -> bool:
        """Followers caught up to `offset` (exclusive). Returns True if the high watermark moved."""
        new_hw = min(offset, self.log_end_offset)
        if new_hw <= self.high_watermark:
            return False
        self.high_watermark = new_hw
        heap = self._unreplicated
        while heap and heap[0][0] < new_hw:
            heapq.heappop(heap)[2].stable = True
        return True

    def first_unstable_offset(self) -> int | None:
        heap = self._unstable
        while heap and heap[0][2].stable:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    @property
    def last_stable_offset(self) -> int:
        first = self.first_unstable_offset()
        if first is None:
            return self.high_watermark
        # an open transaction whose first batches retention deleted holds the LSO at the log start offset
        # (UnifiedLog.maybeIncrementFirstUnstableOffset)
        return min(max(first, self.log_start_offset), self.high_watermark)

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction here."""
        return {pid: txn.first_offset for pid, txn in self._ongoing.items()}

    # -- the log's start ----------------------------------------------------------------------------------------
    def delete_before(self, offset: int) -> int:
        """Retention deleted everything before `offset` (a batch boundary: whole segments go): the log start
        offset moves there (UnifiedLog.maybeIncrementLogStartOffset), with the abort index entries of what went
        (the transaction index is per segment). Producer state stays (ProducerStateManager keeps its entries when
        the log start moves). Returns how many data records went."""
        if offset <= self.log_start_offset:
            return 0
        offset = min(offset, self.log_end_offset)
        i = bisect_right(self._bases, offset - 1)
        while i > 0 and self.batches[i - 1].last_offset >= offset:
            i -= 1  # never cut a batch: the start stays on a batch boundary at or before `offset`
        gone = self.batches[:i]
        records = sum(len(b.values) for b in gone if b.control is None)
        del self.batches[:i]
        del self._bases[:i]
        self.record_count -= records
        self.log_start_offset = self._bases[0] if self._bases else offset
        j = bisect_left(self._aborted_last, self.log_start_offset)
        if j:
            del self.aborted[:j]
            del self._aborted_last[:j]
        return records

    def delete_records(self, offset: int) -> int:
        """DeleteRecords up to `offset` (at most the high watermark): the log start offset moves to exactly that
        offset (UnifiedLog.maybeIncrementLogStartOffset, ClientRecordDeletion), inside a batch if it falls there;
        the whole batches before it go. Returns how many data records went whole."""
        if offset <= self.log_start_offset:
            return 0
        gone = self.delete_before(offset)
        self.log_start_offset = max(self.log_start_offset, offset)
        return gone

    # -- reads ------------------------------------------------------------------------------------------------
    def batch_index(self, offset: int) -> int:
        """Index of the batch holding `offset` (or the first batch after it)."""
        i = bisect_right(self._bases, offset) - 1
        if i < 0:
            return 0
        if self.batches[i].last_offset < offset:
            return i + 1
        return i

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """TransactionIndex.collectAbortedTxns: aborted transactions overlapping [fetch_offset, upper_bound)."""
        out = []
        for i in range(bisect_left(self._aborted_last, fetch_offset), len(self.aborted)):
            txn = self.aborted[i]
            if txn.first_offset < upper_bound:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound:
                break
        return out

    def fetch(
        self, offset: int, isolation_level: str = READ_UNCOMMITTED, max_records: int | None = None
    ) -> tuple[list[tuple[int, Any, Any, int, int]], int]:
        """What a consumer at `offset` gets: [(offset, key, value, producer id, epoch)] and its next position.

        `read_committed` stops at the LSO and drops batches of aborted transactions, as librdkafka does with the
        AbortedTransactions list of the Fetch response; markers are never returned but move the position."""
        upper = self.last_stable_offset if isolation_level == READ_COMMITTED else self.high_watermark
        position = max(offset, self.log_start_offset)
        out: list[tuple[int, Any, Any, int, int]] = []
        if position >= upper:
            return out, position
        aborted_first: dict[int, list[int]] = {}
        if isolation_level == READ_COMMITTED:
            for txn in self.aborted_transactions(position, upper):
                aborted_first.setdefault(txn.producer_id, []).append(txn.first_offset)
        batches = self.batches
        limit = len(batches)
        i = self.batch_index(position)
        while i < limit:
            batch = batches[i]
            if batch.base_offset >= upper:
                break
            if batch.control is not None:
                if aborted_first and batch.control == ABORT:
                    firsts = aborted_first.get(batch.producer_id)
                    # the ABORT marker ends the earliest aborted span of this producer, if that span started
                    # before it (librdkafka's rd_kafka_aborted_txns_pop_offset(pid, max_offset=marker offset)):
                    # a marker of a transaction without data here ends nothing
                    if firsts and min(firsts) <= batch.base_offset:
                        firsts.remove(min(firsts))
                position = batch.last_offset + 1
                i += 1
                continue
            if batch.transactional and aborted_first:
                firsts = aborted_first.get(batch.producer_id)
                if firsts and min(firsts) <= batch.base_offset:
                    position = batch.last_offset + 1
                    i += 1
                    continue
            start = max(position, batch.base_offset) - batch.base_offset
            for j in range(start, min(len(batch.values), upper - batch.base_offset)):
                if max_records is not None and len(out) >= max_records:
                    return out, position
                out.append((batch.base_offset + j, batch.key_at(j), batch.values[j], batch.producer_id, batch.epoch))
                position = batch.base_offset + j + 1
            i += 1
        return out, position

    def entries(self, start_offset: int = 0) -> Iterator[tuple[int, Batch, int]]:
        """(offset, batch, index in batch) for every offset from `start_offset` to the log end offset."""
        batches = self.batches
        for i in range(self.batch_index(start_offset), len(batches)):
            batch = batches[i]
            for j in range(
                max(start_offset, batch.base_offset) - batch.base_offset, batch.last_offset - batch.base_offset + 1
            ):
                yield batch.base_offset + j, batch, j
