"""KafkaProducer with kafka-clients' behaviour (3.9.1 and 4.x), on the simulated cluster, beside client.py's
librdkafka model: the application's calls here, the producer's state in java_base.py, its TransactionManager's
requests in java_txnmgr.py, its Sender in java_sender.py.

Follows clients/src/main/java/org/apache/kafka/clients/producer/: KafkaProducer.java (the public calls, the order
of their checks, doSend), internals/TransactionManager.java (State and isTransitionValid, the request queue and its
priorities, one transactional request in flight, every handler's error mapping, maybeFailWithError,
maybeTransitionToErrorState), internals/Sender.java (runOnce: a fatal error aborts the batches; an abortable error or
an abort fails the undrained ones; no produce data while a transactional request is in flight; completeBatch /
failBatch / canRetry), internals/RecordAccumulator.java (drain only what isSendToPartitionAllowed, batch expiry at
delivery.timeout.ms) and internals/TransactionalRequestResult.java (await(max.block.ms) -> TimeoutException, a
timed-out call resumed by calling it again: handleCachedTransactionRequestResult). The race between the application's
AddOffsetsToTxn and the Sender's AddPartitionsToTxn (TransactionManager.Priority gives both ADD_PARTITIONS_OR_OFFSETS;
a fatal error stops Sender.runOnce before nextRequest, and transitionToFatalError fails only a pending init, commit
or abort) is send_offsets_to_transaction's `first`.

What the application sees are exceptions; a step's outcome is the exception's simple class name
(ProducerFencedException, InvalidProducerEpochException, TransactionAbortableException, IllegalStateException,
KafkaException, TimeoutException, ...), and `wire` keeps the broker's error code behind it when there is one.

send() returns a future. An ApiException met while sending (ProducerFencedException or
InvalidProducerEpochException from an earlier error, a TimeoutException waiting max.block.ms for metadata of an
unknown topic) is not thrown: it completes the returned future, and a fire-and-forget send is a future nobody calls
get() on, so the application does not notice. Other exceptions are thrown: IllegalStateException outside a
transaction, KafkaException ("Cannot execute transactional method because we are in an error state") after an
abortable error. The record is appended to the accumulator *before* the transaction check (KafkaProducer.doSend:
"Add the partition to the transaction (if in progress) after it has been successfully appended to the
accumulator", KAFKA-13782); a send refused with IllegalStateException leaves its record there, held back because
its partition is not in a transaction (the Sender only drains partitions in the transaction), until a later
transaction adds that partition and it goes out with it, or an abort fails it, or delivery.timeout.ms expires it.

Errors and their class (TransactionManager):
- fatal (FATAL_ERROR, only close() is left): ProducerFencedException (INVALID_PRODUCER_EPOCH or PRODUCER_FENCED
  from the coordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit),
  InvalidTxnStateException from the coordinator, TransactionalIdAuthorizationException, an unexpected error
  (KafkaException), an invalid state transition met on the Sender thread (IllegalStateException, "poisoned");
  in 4.x also InvalidPidMappingException (KAFKA-18019).
- abortable (ABORTABLE_ERROR, abortTransaction() recovers): every error of a produced batch that is not in the
  fatal list (InvalidProducerEpochException from a partition leader, KIP-588; TransactionAbortableException;
  InvalidTxnStateException from a leader's verification; OutOfOrderSequenceException; TimeoutException of an
  expired batch), CommitFailedException from TxnOffsetCommit, TransactionAbortableException from any
  coordinator; in 3.9 INVALID_PRODUCER_ID_MAPPING / UNKNOWN_PRODUCER_ID (abortable with an epoch bump, KIP-360).

Request versions (hence how the coordinator answers, KafkaApis):
- kafka-clients 3.9.1 against 3.9.1: InitProducerId v5, AddPartitionsToTxn v3 (the client builder stops at v3, v4+
  is brokers'), AddOffsetsToTxn v4, EndTxn v4, TxnOffsetCommit v4, Produce v11. All >= KIP-588's versions, so a
  fenced Java producer gets PRODUCER_FENCED (90) where librdkafka gets INVALID_PRODUCER_EPOCH (47); Produce v11
  asks for the genericError operation, so a failed verification reads TRANSACTION_ABORTABLE (120).
- kafka-clients 4.x against a 4.x cluster with transaction.version=2: TV2 (isTransactionV2Enabled). No
  AddPartitionsToTxn (the partition leader adds the partition on Produce v12), no AddOffsetsToTxn
  (sendOffsetsToTransaction sends TxnOffsetCommit v5 straight away), EndTxn v5 whose answer carries the producer id
  and epoch of the next transaction (the epoch bumped by every commit and abort), InitProducerId v5 (v6 is in the
  client's schema; a 4.4.0 broker does not advertise it).

Simplifications, said here once: one batch in flight per partition (Java allows five); batches are as large as
what is queued; retries back off exponentially (retry.backoff.ms doubling to retry.backoff.max.ms) without the
20% jitter; a send blocks at most max.block.ms waiting for metadata; no compression, sizes or buffer memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from playground.sim.clientbase import CLOSED, CRASHED, GroupMetadata, TopicPartition
from playground.sim.java_base import (
    ABORTABLE_ERROR,
    ABORTING_TRANSACTION,
    API_VERSIONS,
    COMMITTING_TRANSACTION,
    FATAL_ERROR,
    IN_TRANSACTION,
    INITIALIZING,
    PREPARED_TRANSACTION,
    READY,
    TM_TRANSITIONS_4,
    TM_TRANSITIONS_39,
    UNINITIALIZED,
    RecordFuture,
    TxnResult,
)
from playground.sim.java_sender import JavaSender
from playground.sim.javaerrors import JavaException

if TYPE_CHECKING:  # pragma: no cover
    from playground.sim.cluster import Cluster

# The kafka-clients model's vocabulary, importable from here.
__all__ = [
    "ABORTABLE_ERROR",
    "ABORTING_TRANSACTION",
    "API_VERSIONS",
    "CLOSED",
    "COMMITTING_TRANSACTION",
    "CRASHED",
    "FATAL_ERROR",
    "INITIALIZING",
    "IN_TRANSACTION",
    "PREPARED_TRANSACTION",
    "READY",
    "TM_TRANSITIONS_4",
    "TM_TRANSITIONS_39",
    "UNINITIALIZED",
    "JavaException",
    "JavaProducer",
    "RecordFuture",
    "murmur2",
]


def murmur2(data: bytes) -> int:
    """org.apache.kafka.common.utils.Utils.murmur2 (seed 0x9747b28c), as a signed 32-bit int."""
    length = len(data)
    seed, m, r = 0x9747B28C, 0x5BD1E995, 24
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


class JavaProducer(JavaSender):
    """KafkaProducer on the simulated cluster: JavaProducer(conf, cluster=cluster, name="A", release="3.9"|"4").

    `release` is kafka-clients' version line; with "4" on a 4.x cluster the transactions run TV2."""

    def __init__(
        self, conf: dict[str, Any], *, cluster: Cluster, name: str | None = None, release: str = "3.9"
    ) -> None:
        super().__init__(conf, cluster=cluster, name=name, release=release)
        if self.has_tm and not self.transactional_id:
            self._wakeup()  # bumpIdempotentEpochAndResetIdIfNeeded: an idempotent producer gets its id at once

    # -- the transactional API (KafkaProducer + TransactionManager) -------------------------------------------
    def init_transactions(self) -> None:
        self._throw_if_no_transaction_manager()
        self._throw_if_closed()
        result = self._initialize_transactions(None)
        self._wakeup()
        self._await(result, self.max_block_ms)

    def _initialize_transactions(self, bump: tuple[int, int] | None) -> TxnResult:
        self._maybe_fail_with_error()

        def supply() -> TxnResult:
            if bump is None:
                # an epoch bump changes the state when the EndTxn completes
                self._transition(INITIALIZING)
            result = TxnResult("InitProducerId")
            self._enqueue(self._init_producer_id_handler(result, bump))
            return result

        return self._cached_result(supply, INITIALIZING, "initTransactions")

    def begin_transaction(self) -> None:
        self._throw_if_no_transaction_manager()
        self._throw_if_closed()
        self._ensure_transactional()
        self._throw_if_pending_state("beginTransaction")
        self._maybe_fail_with_error()
        self._transition(IN_TRANSACTION)

    def send_offsets_to_transaction(
        self,
        offsets: Iterable[TopicPartition],
        group_metadata: GroupMetadata | None,
        first: str = "AddOffsetsToTxn",
    ) -> None:
        """KafkaProducer.sendOffsetsToTransaction: the group metadata, the transaction manager, the producer
        open, then nothing to do for an empty map (before the state check), then the state
        (TransactionManager.sendOffsetsToTransaction: pending call, earlier error, IN_TRANSACTION).

        `first` is the race of issue 31 item 6, decided inside kafka-clients within microseconds when the
        application sends to a partition new in the transaction and calls this at once: the application thread
        queues AddOffsetsToTxn (enqueueRequest), the Sender thread queues AddPartitionsToTxn for the new partitions
        at its next round (nextRequest); both have Priority ADD_PARTITIONS_OR_OFFSETS, so the pendingRequests
        queue sends whichever was queued first. "AddOffsetsToTxn" (the default: no time passes between two calls
        of the application here, so the Sender's round comes after this call): a fence comes back in this call's
        own AddOffsetsToTxnResponse and is thrown here, ProducerFencedException. "AddPartitionsToTxn": the Sender's
        round came first; its AddPartitionsToTxn is fenced, the manager goes to FATAL_ERROR, and the Sender's
        runOnce stops at "do not continue sending if the transaction manager is in a failed state": the queued
        AddOffsetsToTxn is never sent and never failed (only a pending initTransactions / commitTransaction /
        abortTransaction result is, transitionToFatalError), so this call waits max.block.ms and throws
        TimeoutException ("Timeout expired after 60000ms while awaiting AddOffsetsToTxn"). With TV2 there is no
        AddPartitionsToTxn nor AddOffsetsToTxn, hence no race: `first` changes nothing."""
        if group_metadata is None:
            raise JavaException("IllegalArgumentException", "Consumer group metadata could not be null")
        self._throw_if_no_transaction_manager()
        self._throw_if_closed()
        # the application passes what it consumed: partitions without a position have nothing to commit
        commit = {tp.name: tp.offset for tp in offsets if tp.offset >= 0}
        if not commit:
            return
        self._ensure_transactional()
        self._throw_if_pending_state("sendOffsetsToTransaction")
        self._maybe_fail_with_error()
        if self.state != IN_TRANSACTION:
            raise JavaException(
                "IllegalStateException",
                f"Cannot send offsets if a transaction is not in progress (currentState= {self.state})",
            )
        result = TxnResult("AddOffsetsToTxn" if not self.tv2 else "TxnOffsetCommitHandler")
        if self.tv2:
            # no AddOffsetsToTxn: the group coordinator adds __consumer_offsets to the transaction itself
            self.transaction_started = True
            self._enqueue(self._txn_offset_commit_handler(result, commit, group_metadata))
        else:
            if first == "AddPartitionsToTxn" and self.new_partitions:
                # the Sender's round ran first: TransactionManager.nextRequest queued AddPartitionsToTxn
                self._unnoticed.clear()
                self._enqueue(self._add_partitions_handler())
            self._enqueue(self._add_offsets_handler(result, commit, group_metadata))
        self._wakeup()
        self._await(result, self.max_block_ms)

    def commit_transaction(self) -> None:
        self._throw_if_no_transaction_manager()
        self._throw_if_closed()

        def supply() -> TxnResult:
            self._maybe_fail_with_error()
            self._transition(COMMITTING_TRANSACTION)
            return self._begin_completing(commit=True)

        result = self._cached_result(supply, COMMITTING_TRANSACTION, "commitTransaction")
        self._wakeup()
        self._await(result, self.max_block_ms)

    def abort_transaction(self) -> None:
        self._throw_if_no_transaction_manager()
        self._throw_if_closed()
        result = self._begin_abort()
        self._wakeup()
        self._await(result, self.max_block_ms)

    def _begin_abort(self) -> TxnResult:
        def supply() -> TxnResult:
            if self.state != ABORTABLE_ERROR:
                self._maybe_fail_with_error()
            self._transition(ABORTING_TRANSACTION)
            self.new_partitions.clear()  # nothing more to add to a transaction being aborted
            return self._begin_completing(commit=False)

        return self._cached_result(supply, ABORTING_TRANSACTION, "abortTransaction")

    def _begin_completing(self, commit: bool) -> TxnResult:
        """beginCompletingTransaction: AddPartitionsToTxn for what is still new (TV1), EndTxn, and an epoch bump
        after it when one is required (TV1 after an abortable error); in 3.9 an INVALID_PRODUCER_ID_MAPPING skips
        the EndTxn (the coordinator would refuse it) and goes straight to the bump."""
        if self.new_partitions:
            self._enqueue(self._add_partitions_handler())
        skip_end_txn = (
            self.release != "4" and self.last_error is not None and self.last_error.name == "InvalidPidMappingException"
        )
        end_result = TxnResult(f"EndTxn({str(commit).lower()})")
        if not skip_end_txn:
            self._enqueue(self._end_txn_handler(end_result, commit))
            if not self.epoch_bump_required:
                return end_result
        return self._initialize_transactions((self.producer_id, self.epoch))

    # -- send / flush -----------------------------------------------------------------------------------------
    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        callback: Callable[[Any, JavaException | None], None] | None = None,
    ) -> RecordFuture:
        """KafkaProducer.send / doSend. Returns the record's future; see the module docstring for what is thrown
        and what fails the future instead."""
        self.stats["produce_calls"] += 1
        future = RecordFuture(topic, -1 if partition is None else partition, value, key, self.now_ms, callback)
        appended = False
        try:
            self._throw_if_closed()
            count_ = self.cluster.partition_count(topic)
            if count_ == 0 or (partition is not None and partition >= count_):
                # waitOnMetadata: the metadata never shows the topic (or partition); blocks max.block.ms
                self._wait(lambda: False, self.now_ms + self.max_block_ms)
                what = (
                    f"Topic {topic} not present in metadata"
                    if count_ == 0
                    else f"Partition {partition} of topic {topic} with partition count {count_} is not present in "
                    "metadata"
                )
                raise JavaException("TimeoutException", f"{what} after {self.max_block_ms} ms.")
            if partition is None or partition < 0:
                partition = self._partition_for(key, count_)
            future.partition = partition
            future.created_ms = self.now_ms
            tp = future.tp
            queue = self._accumulator.setdefault(tp, deque())
            new_batch = not queue  # batches are unbounded here: a record opens one only where none is waiting
            queue.append(future)  # appended first (RecordAccumulator.append)
            appended = True
            self._schedule_expiry(future.created_ms + self.delivery_timeout_ms)
            adding = tp not in self.new_partitions
            if self.has_tm:
                self._maybe_add_partition(tp)
            if new_batch:
                self._wakeup()
            elif adding and tp in self.new_partitions:
                # doSend wakes the Sender only for a new (or a full) batch: a record that joins a waiting batch, such
                # as one held back outside a transaction, is added to the transaction at the Sender's next round, not
                # at a round of this instant (the Sender thread ran that one before this send; _send_producer_data)
                self._unnoticed[tp] = self.now_ms
            return future
        except JavaException as exc:
            if not exc.api:
                raise
            exc.kept()
            # an ApiException fails the returned future (FutureFailure) and goes to the callback, not to the caller
            if callback is not None:
                callback(None, exc)
            if self.has_tm:
                self.maybe_transition_to_error_state(exc, sender_thread=False)
            if self.state == FATAL_ERROR and appended and not future.done:
                # its record is in the accumulator: a fatal Sender's round (every retry.backoff.ms, runOnce's
                # client.poll(retryBackoffMs)) fails it with the batches (maybeAbortBatches)
                self._wakeup(self.retry_backoff_ms)
            failed = RecordFuture(topic, future.partition, value, key, self.now_ms)
            failed.done, failed.exception = True, exc
            self.stats["failed"] += 1
            return failed

    def _partition_for(self, key: Any, partitions: int) -> int:
        if key is None:
            # the scenario format: round robin for keyless records (kafka-clients itself is sticky)
            self._rr += 1
            return (self._rr - 1) % partitions
        data = key.encode() if isinstance(key, str) else bytes(key)
        return (murmur2(data) & 0x7FFFFFFF) % partitions  # BuiltInPartitioner: toPositive(murmur2(key)) % n

    def _maybe_add_partition(self, tp: str) -> None:
        """TransactionManager.maybeAddPartition (the record is already in the accumulator)."""
        self._maybe_fail_with_error()
        self._throw_if_pending_state("send")
        if not self.transactional_id:
            return
        if self.producer_id < 0:
            raise JavaException(
                "IllegalStateException",
                f"Cannot add partition {tp} to transaction before completing a call to initTransactions",
            )
        if self.state != IN_TRANSACTION:
            raise JavaException(
                "IllegalStateException", f"Cannot add partition {tp} to transaction while in state  {self.state}"
            )
        if self.tv2:
            self.partitions_in_txn.add(tp)  # the leader adds it when the batch arrives
            self.transaction_started = True
        elif tp in self.partitions_in_txn or tp in self.new_partitions or tp in self.pending_partitions:
            return
        else:
            self.new_partitions.add(tp)

    def get(self, future: RecordFuture) -> Any:
        """Future.get(): block until the record is acknowledged; its exception if it failed (the application sees
        the ExecutionException's cause). Waiting wakes nothing: the Sender sends when its own round comes."""
        self._wait(lambda: future.done, future.created_ms + self.delivery_timeout_ms + self.max_block_ms)
        if not future.done:
            raise JavaException("TimeoutException", "the record was not acknowledged")
        if future.exception is not None:
            raise future.exception
        return future.offset

    def flush(self) -> None:
        """KafkaProducer.flush(): linger is over, wait for every record sent so far (no timeout: a record that
        can never be sent ends when delivery.timeout.ms expires it)."""
        waiting = (
            [f for q in self._accumulator.values() for f in q]
            + [f for b in self._inflight.values() for f in b]
            + [f for r in self._retry_batch.values() for f in r[0]]
        )
        if not waiting:
            return
        self._flushing += 1
        try:
            self._wakeup()
            latest = max(f.created_ms for f in waiting) + self.delivery_timeout_ms + self.max_block_ms
            self._wait(lambda: all(f.done for f in waiting), latest)
        finally:
            self._flushing -= 1

    # -- lifecycle --------------------------------------------------------------------------------------------
    def close(self) -> None:
        """KafkaProducer.close(): the Sender sends what it can, then aborts a transaction still open ("Aborting
        incomplete transaction due to shutdown"), then stops."""
        if not self.alive:
            return
        self._wakeup()
        deadline = self.now_ms + self.delivery_timeout_ms + self.max_block_ms

        def drained() -> bool:
            return not self._txn_inflight and not self._incomplete()

        self._wait(drained, deadline)
        if self.transactional_id and self.state in (
            IN_TRANSACTION,
            COMMITTING_TRANSACTION,
            ABORTING_TRANSACTION,
            ABORTABLE_ERROR,
        ):
            try:
                result = (
                    self._begin_abort() if self.state not in (COMMITTING_TRANSACTION, ABORTING_TRANSACTION) else None
                )
                self._wakeup()
                if result is not None:
                    self._wait(lambda: result.done, deadline)
            except JavaException:
                pass
        self.alive = False
        self._set_state(CLOSED)

    def crash(self) -> None:
        """The process dies: nothing more is sent, buffered records are lost; requests already on the wire still
        reach the brokers."""
        self.alive = False
        self._accumulator.clear()
        self._set_state(CRASHED)
