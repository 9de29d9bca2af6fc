"""KafkaProducer with kafka-clients' behaviour (3.9.1 and 4.x), on the simulated cluster, beside client.py's
librdkafka model.

Follows clients/src/main/java/org/apache/kafka/clients/producer/: KafkaProducer.java (the public calls, the order
of their checks, doSend), internals/TransactionManager.java (State and isTransitionValid, the request queue and its
priorities, one transactional request in flight, every handler's error mapping, maybeFailWithError,
maybeTransitionToErrorState), internals/Sender.java (runOnce: a fatal error aborts the batches; an abortable error or
an abort fails the undrained ones; no produce data while a transactional request is in flight; completeBatch /
failBatch / canRetry), internals/RecordAccumulator.java (drain only what isSendToPartitionAllowed, batch expiry at
delivery.timeout.ms) and internals/TransactionalRequestResult.java (await(max.block.ms) -> TimeoutException, a
timed-out call resumed by calling it again: handleCachedTransactionRequestResult).

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
  and epoch of the next transaction (the epoch bumped by every commit and abort), InitProducerId v6.

Simplifications, said here once: one batch in flight per partition (Java allows five); batches are as large as
what is queued; retries back off exponentially (retry.backoff.ms doubling to retry.backoff.max.ms) without the
20% jitter; a send blocks at most max.block.ms waiting for metadata; no compression, sizes or buffer memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from itertools import count
from typing import TYPE_CHECKING, Any

from playground.engine import events as ev
from playground.sim.clientbase import CLOSED, CRASHED, Client, GroupMetadata, TopicPartition, conf_bool, conf_ms
from playground.sim.clock import TIMER
from playground.sim.javaerrors import JavaException, exception_for, fenced

if TYPE_CHECKING:  # pragma: no cover
    from playground.sim.cluster import Cluster

# TransactionManager.State (PREPARED_TRANSACTION: 4.1+, KIP-939's prepareTransaction(); no scenario step enters it)
UNINITIALIZED = "UNINITIALIZED"
INITIALIZING = "INITIALIZING"
READY = "READY"
IN_TRANSACTION = "IN_TRANSACTION"
COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
ABORTABLE_ERROR = "ABORTABLE_ERROR"
FATAL_ERROR = "FATAL_ERROR"
PREPARED_TRANSACTION = "PREPARED_TRANSACTION"

# State.isTransitionValid: target -> the states it may be entered from (FATAL_ERROR from any state).
TM_TRANSITIONS_39: dict[str, frozenset[str]] = {
    UNINITIALIZED: frozenset({READY, ABORTABLE_ERROR}),
    INITIALIZING: frozenset({UNINITIALIZED, ABORTING_TRANSACTION}),
    READY: frozenset({INITIALIZING, COMMITTING_TRANSACTION, ABORTING_TRANSACTION}),
    IN_TRANSACTION: frozenset({READY}),
    COMMITTING_TRANSACTION: frozenset({IN_TRANSACTION}),
    ABORTING_TRANSACTION: frozenset({IN_TRANSACTION, ABORTABLE_ERROR}),
    ABORTABLE_ERROR: frozenset({IN_TRANSACTION, COMMITTING_TRANSACTION, ABORTABLE_ERROR, INITIALIZING}),
}
# 4.x: INITIALIZING also after a commit (the client-side epoch bump when a producer moves to TV2 mid-life), and
# KIP-939's prepared state between IN_TRANSACTION and the end of the transaction
TM_TRANSITIONS_4: dict[str, frozenset[str]] = {
    **TM_TRANSITIONS_39,
    INITIALIZING: frozenset({UNINITIALIZED, COMMITTING_TRANSACTION, ABORTING_TRANSACTION}),
    PREPARED_TRANSACTION: frozenset({IN_TRANSACTION, INITIALIZING}),
    COMMITTING_TRANSACTION: frozenset({IN_TRANSACTION, PREPARED_TRANSACTION}),
    ABORTING_TRANSACTION: frozenset({IN_TRANSACTION, ABORTABLE_ERROR, PREPARED_TRANSACTION}),
}

# The request versions kafka-clients sends to a cluster of its own release (see the module docstring).
API_VERSIONS = {
    "3.9": {
        "InitProducerId": 5,
        "AddPartitionsToTxn": 3,
        "AddOffsetsToTxn": 4,
        "EndTxn": 4,
        "TxnOffsetCommit": 4,
        "Produce": 11,
    },
    "4": {
        "InitProducerId": 6,
        "AddPartitionsToTxn": 3,
        "AddOffsetsToTxn": 4,
        "EndTxn": 5,
        "TxnOffsetCommit": 5,
        "Produce": 12,
    },
}

# TransactionManager.Priority: FindCoordinator first, the end of the transaction last (an epoch bump after it)
FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS_OR_OFFSETS, END_TXN, EPOCH_BUMP = range(5)
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20  # the first AddPartitionsToTxn meeting CONCURRENT_TRANSACTIONS


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


class RecordFuture:
    """FutureRecordMetadata / FutureFailure: done once the record is acknowledged or failed."""

    __slots__ = (
        "callback",
        "created_ms",
        "done",
        "epoch",
        "exception",
        "key",
        "offset",
        "partition",
        "producer_id",
        "topic",
        "value",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        value: Any,
        key: Any,
        created_ms: int,
        callback: Callable[[Any, JavaException | None], None] | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.value = value
        self.key = key
        self.created_ms = created_ms
        self.done = False
        self.exception: JavaException | None = None
        self.offset = -1
        self.callback = callback
        self.producer_id = -1
        self.epoch = -1

    @property
    def tp(self) -> str:
        return f"{self.topic}-{self.partition}"


class _Result:
    """TransactionalRequestResult: a latch, the error it failed with, and whether the application saw it."""

    __slots__ = ("acked", "done", "error", "operation")

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self.done = False
        self.error: JavaException | None = None
        self.acked = False

    def fail(self, error: JavaException) -> None:
        self.error = error
        self.done = True

    def succeed(self) -> None:
        self.done = True


class _Handler:
    """A TxnRequestHandler: one transactional request, its priority, the coordinator it needs, its result, and
    what its response does (`on_response(error, result)`)."""

    __slots__ = (
        "backoff_ms",
        "coordinator",
        "is_end_txn",
        "is_retry",
        "key",
        "name",
        "on_response",
        "priority",
        "result",
        "send",
    )

    def __init__(
        self,
        name: str,
        priority: int,
        result: _Result,
        send: Callable[[int], None],
        on_response: Callable[[str | None, dict[str, Any]], None],
        coordinator: str | None = "transaction",
        key: str | None = None,
        is_end_txn: bool = False,
    ) -> None:
        self.name = name
        self.priority = priority
        self.coordinator = coordinator  # "transaction", "group" or None (any broker)
        self.key = key
        self.result = result
        self.is_end_txn = is_end_txn
        self.is_retry = False
        self.backoff_ms: int | None = None
        self.send = send
        self.on_response = on_response


class JavaProducer(Client):
    """KafkaProducer on the simulated cluster: JavaProducer(conf, cluster=cluster, name="A", release="3.9"|"4").

    `release` is kafka-clients' version line; with "4" on a 4.x cluster the transactions run TV2."""

    def __init__(
        self, conf: dict[str, Any], *, cluster: Cluster, name: str | None = None, release: str = "3.9"
    ) -> None:
        super().__init__(conf, cluster, name)
        if release not in API_VERSIONS:
            raise ValueError(f"no model of kafka-clients {release!r}")
        self.release = release
        c = self.conf
        self.versions = API_VERSIONS[release]
        self.transactional_id: str | None = c.get("transactional.id") or None
        # kafka-clients 3.0+: idempotence is on by default (a transactional producer always has it)
        self.idempotent = self.transactional_id is not None or conf_bool(c.get("enable.idempotence", True))
        acks = str(c.get("acks", c.get("request.required.acks", "all"))).lower()
        self.acks = -1 if acks in ("all", "-1") or self.idempotent else int(acks)
        self.linger_ms = conf_ms(c, "linger.ms", conf_ms(c, "queue.buffering.max.ms", 5 if release == "4" else 0))
        self.delivery_timeout_ms = conf_ms(c, "delivery.timeout.ms", conf_ms(c, "message.timeout.ms", 120_000))
        self.max_block_ms = conf_ms(c, "max.block.ms", 60_000)
        self.retry_backoff_ms = conf_ms(c, "retry.backoff.ms", 100)
        self.retry_backoff_max_ms = conf_ms(c, "retry.backoff.max.ms", 1000)
        self.transaction_timeout_ms = conf_ms(c, "transaction.timeout.ms", 60_000)
        # TransactionManager (exists for idempotent and transactional producers)
        self.has_tm = self.idempotent
        self.tm_table = TM_TRANSITIONS_4 if release == "4" else TM_TRANSITIONS_39
        # Kafka 4.x cluster + kafka-clients 4.x: transaction.version 2 finalized and Produce v12 / EndTxn v5 /
        # TxnOffsetCommit v5 supported (maybeUpdateTransactionV2Enabled at initTransactions)
        self.tv2 = release == "4" and getattr(cluster, "kafka", "3.9") == "4" and self.transactional_id is not None
        self.state = UNINITIALIZED if self.has_tm else READY
        self.last_error: JavaException | None = None
        self.producer_id = -1
        self.epoch = -1
        self.epoch_bump_required = False
        self.transaction_started = False
        self.new_partitions: set[str] = set()
        self.pending_partitions: set[str] = set()
        self.partitions_in_txn: set[str] = set()
        self._pending_transition: tuple[_Result, str, str] | None = None  # (result, state, operation)
        self._coordinators: dict[str, int | None] = {"transaction": None, "group": None}
        self._requests: list[tuple[int, int, _Handler]] = []
        self._request_seq = count()
        self._txn_inflight = False
        self._dequeued = False
        self._accumulator: dict[str, deque[RecordFuture]] = {}
        self._inflight: dict[str, list[RecordFuture]] = {}
        self._attempts: dict[str, int] = {}
        self._retry_at: dict[str, int] = {}
        # a batch to retry keeps its records and sequence numbers (the broker may have it already)
        self._retry_batch: dict[str, tuple[list[RecordFuture], int, int, int]] = {}  # (batch, seq, pid, epoch)
        self._next_seq: dict[str, int] = {}
        self._seq_owner: dict[str, tuple[int, int]] = {}
        self._flushing = 0
        self._wake_times: set[int] = set()
        self._expiry_ms: int | None = None
        self._rr = 0
        self.stats = {"produce_calls": 0, "delivered": 0, "failed": 0}
        if self.has_tm and not self.transactional_id:
            self._wakeup()  # bumpIdempotentEpochAndResetIdIfNeeded: an idempotent producer gets its id at once

    # -- what the driver reads --------------------------------------------------------------------------------
    @property
    def fatal_error(self) -> str | None:
        """The fatal exception's class name (the driver's `fenced` reads "ProducerFencedException")."""
        if self.state == FATAL_ERROR and self.last_error is not None:
            return self.last_error.name
        return None

    @property
    def fenced(self) -> bool:
        return self.fatal_error == "ProducerFencedException"

    def outstanding(self) -> int:
        return (
            sum(len(q) for q in self._accumulator.values())
            + sum(len(b) for b in self._inflight.values())
            + sum(len(r[0]) for r in self._retry_batch.values())
        )

    def _incomplete(self) -> bool:
        return bool(self._inflight or self._retry_batch or any(self._accumulator.values()))

    # -- plumbing ---------------------------------------------------------------------------------------------
    def _rpc(
        self,
        name: str,
        broker: int | None,
        dst_label: str,
        detail: str,
        handler: Callable[[Callable[..., None]], None],
        on_response: Callable[[str | None, dict[str, Any]], None],
    ) -> None:
        self.cluster.rpc(
            name,
            self.name,
            broker,
            dst_label,
            detail,
            handler,
            on_response,
            src_alive=self._is_alive,
            version=self.versions.get(name),
        )

    def _wakeup(self, delay_ms: int = 0) -> None:
        """Sender.wakeup() (or its poll timeout: linger, backoff): run the Sender loop then, once however often
        it is asked for that instant."""
        at = self.now_ms + max(0, delay_ms)
        if at in self._wake_times:
            return
        self._wake_times.add(at)

        def run() -> None:
            self._wake_times.discard(at)
            self._run_once()

        self._after(max(0, delay_ms), run, f"{self.name} sender")

    def _transition(self, target: str, error: JavaException | None = None, *, sender_thread: bool = False) -> None:
        """TransactionManager.transitionTo: an invalid transition throws IllegalStateException on the
        application thread (state unchanged) and poisons the manager on the Sender thread (FATAL_ERROR)."""
        if target != FATAL_ERROR and self.state not in self.tm_table.get(target, frozenset()):
            ident = f"TransactionalId {self.transactional_id}: " if self.transactional_id else ""
            exc = JavaException(
                "IllegalStateException",
                f"{ident}Invalid transition attempted from state {self.state} to state {target}",
            )
            if sender_thread:
                self._set_state(FATAL_ERROR)
                self.last_error = exc
            raise exc
        if target in (FATAL_ERROR, ABORTABLE_ERROR):
            self.last_error = error
        else:
            self.last_error = None
        self._set_state(target)

    def _set_state(self, new: str) -> None:
        if new == self.state:
            return
        old, self.state = self.state, new
        self.cluster.emit(ev.ClientState, actor=self.name, from_state=old, to_state=new)

    def _emit_error(self, op: str, error: JavaException, fatal: bool = False, abortable: bool = False) -> None:
        self.cluster.emit(
            ev.ClientError,
            actor=self.name,
            op=op,
            error=error.name,
            fatal=fatal,
            txn_requires_abort=abortable,
            detail=error.describe(),
        )

    def _transition_to_fatal(self, error: JavaException, *, sender_thread: bool = True) -> None:
        self._transition(FATAL_ERROR, error, sender_thread=sender_thread)
        self._emit_error("background", error, fatal=True)
        if self._pending_transition is not None:
            self._pending_transition[0].fail(error)

    def _transition_to_abortable(self, error: JavaException, *, sender_thread: bool = True) -> None:
        if self.state == ABORTING_TRANSACTION:
            return  # "the transaction is already being aborted"
        try:
            self._transition(ABORTABLE_ERROR, error, sender_thread=sender_thread)
        except JavaException as exc:
            if sender_thread:
                self._emit_error("background", exc, fatal=True)
                if self._pending_transition is not None:
                    self._pending_transition[0].fail(exc)
                return
            raise
        self._emit_error("background", error, abortable=True)

    def _can_handle_abortable(self) -> bool:
        # coordinatorSupportsBumpingEpoch (InitProducerId v3+: always here) or TV2
        return True

    def _client_bump_needed(self) -> bool:
        """needToTriggerEpochBumpFromClient: TV1 bumps the epoch itself after an abortable error (KIP-360);
        TV2 gets a new epoch from every EndTxn."""
        return not self.tv2

    def maybe_transition_to_error_state(self, error: JavaException, *, sender_thread: bool = True) -> None:
        fatal = {
            "ClusterAuthorizationException",
            "TransactionalIdAuthorizationException",
            "ProducerFencedException",
            "UnsupportedVersionException",
        }
        if self.release == "4":
            fatal.add("InvalidPidMappingException")  # KAFKA-18019
        if error.name in fatal:
            self._transition_to_fatal(error, sender_thread=sender_thread)
        elif self.transactional_id:
            if self._client_bump_needed() and self.state not in (COMMITTING_TRANSACTION, ABORTING_TRANSACTION):
                self.epoch_bump_required = True
            self._transition_to_abortable(error, sender_thread=sender_thread)

    def _maybe_fail_with_error(self) -> None:
        """TransactionManager.maybeFailWithError: a previous error, re-raised for this call."""
        if self.state not in (ABORTABLE_ERROR, FATAL_ERROR) or self.last_error is None:
            return
        last = self.last_error
        pid = f"ProducerIdAndEpoch(producerId={self.producer_id}, epoch={self.epoch})"
        if last.name == "ProducerFencedException":
            raise JavaException(
                "ProducerFencedException",
                f"Producer with transactionalId "
                f"'{self.transactional_id}' and {pid} has been fenced by another producer with "
                "the same transactionalId",
                wire=last.wire,
            )
        if last.name == "InvalidProducerEpochException":
            raise JavaException(
                "InvalidProducerEpochException",
                f"Producer with transactionalId "
                f"'{self.transactional_id}' and {pid} attempted to produce with an old epoch",
                wire=last.wire,
            )
        if last.name == "IllegalStateException":
            raise JavaException(
                "IllegalStateException",
                f"Producer with transactionalId '{self.transactional_id}' "
                f"and {pid} cannot execute transactional method because of previous invalid state "
                "transition attempt",
                cause=last,
            )
        raise JavaException(
            "KafkaException", "Cannot execute transactional method because we are in an error state", cause=last
        )

    def _throw_if_pending_state(self, operation: str) -> None:
        pending = self._pending_transition
        if pending is not None:
            if pending[0].acked:
                self._pending_transition = None
            else:
                raise JavaException(
                    "IllegalStateException",
                    f"Cannot attempt operation `{operation}` because the "
                    f"previous call to `{pending[2]}` timed out and must be retried",
                )

    def _cached_result(self, supplier: Callable[[], _Result], next_state: str, operation: str) -> _Result:
        """handleCachedTransactionRequestResult: a call that timed out is resumed by calling it again."""
        self._ensure_transactional()
        pending = self._pending_transition
        if pending is not None:
            if pending[0].acked:
                self._pending_transition = None
            elif next_state != pending[1]:
                raise JavaException(
                    "IllegalStateException",
                    f"Cannot attempt operation `{operation}` because the "
                    f"previous call to `{pending[2]}` timed out and must be retried",
                )
            else:
                return pending[0]
        result = supplier()
        self._pending_transition = (result, next_state, operation)
        return result

    def _ensure_transactional(self) -> None:
        if not self.transactional_id:
            raise JavaException(
                "IllegalStateException", "Transactional method invoked on a non-transactional producer."
            )

    def _throw_if_no_transaction_manager(self) -> None:
        if not self.transactional_id:
            raise JavaException(
                "IllegalStateException",
                "Cannot use transactional methods without enabling "
                "transactions by setting the transactional.id configuration property",
            )

    def _throw_if_closed(self) -> None:
        if not self.alive:
            raise JavaException("IllegalStateException", "Cannot perform operation after producer has been closed")

    def _await(self, result: _Result, timeout_ms: int) -> None:
        """TransactionalRequestResult.await(max.block.ms)."""
        self._wait(lambda: result.done, self.now_ms + timeout_ms)
        if not result.done:
            raise JavaException(
                "TimeoutException", f"Timeout expired after {timeout_ms}ms while awaiting {result.operation}"
            )
        result.acked = True
        if result.error is not None:
            raise result.error

    # -- the transactional API (KafkaProducer + TransactionManager) -------------------------------------------
    def init_transactions(self) -> None:
        self._throw_if_no_transaction_manager()
        self._throw_if_closed()
        result = self._initialize_transactions(None)
        self._wakeup()
        self._await(result, self.max_block_ms)

    def _initialize_transactions(self, bump: tuple[int, int] | None) -> _Result:
        self._maybe_fail_with_error()

        def supply() -> _Result:
            if bump is None:
                # an epoch bump changes the state when the EndTxn completes
                self._transition(INITIALIZING)
            result = _Result("InitProducerId")
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
    ) -> None:
        """KafkaProducer.sendOffsetsToTransaction: the group metadata, the transaction manager, the producer
        open, then nothing to do for an empty map (before the state check), then the state
        (TransactionManager.sendOffsetsToTransaction: pending call, earlier error, IN_TRANSACTION)."""
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
        result = _Result("AddOffsetsToTxn" if not self.tv2 else "TxnOffsetCommitHandler")
        if self.tv2:
            # no AddOffsetsToTxn: the group coordinator adds __consumer_offsets to the transaction itself
            self.transaction_started = True
            self._enqueue(self._txn_offset_commit_handler(result, commit, group_metadata))
        else:
            self._enqueue(self._add_offsets_handler(result, commit, group_metadata))
        self._wakeup()
        self._await(result, self.max_block_ms)

    def commit_transaction(self) -> None:
        self._throw_if_no_transaction_manager()
        self._throw_if_closed()

        def supply() -> _Result:
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

    def _begin_abort(self) -> _Result:
        def supply() -> _Result:
            if self.state != ABORTABLE_ERROR:
                self._maybe_fail_with_error()
            self._transition(ABORTING_TRANSACTION)
            self.new_partitions.clear()  # nothing more to add to a transaction being aborted
            return self._begin_completing(commit=False)

        return self._cached_result(supply, ABORTING_TRANSACTION, "abortTransaction")

    def _begin_completing(self, commit: bool) -> _Result:
        """beginCompletingTransaction: AddPartitionsToTxn for what is still new (TV1), EndTxn, and an epoch bump
        after it when one is required (TV1 after an abortable error); in 3.9 an INVALID_PRODUCER_ID_MAPPING skips
        the EndTxn (the coordinator would refuse it) and goes straight to the bump."""
        if self.new_partitions:
            self._enqueue(self._add_partitions_handler())
        skip_end_txn = (
            self.release == "3.9"
            and self.last_error is not None
            and self.last_error.name == "InvalidPidMappingException"
        )
        end_result = _Result(f"EndTxn({str(commit).lower()})")
        if not skip_end_txn:
            self._enqueue(self._end_txn_handler(end_result, commit))
            if not self.epoch_bump_required:
                return end_result
        return self._initialize_transactions((self.producer_id, self.epoch))

    def _complete_transaction(self) -> None:
        """completeTransaction: READY, or INITIALIZING when an epoch bump follows."""
        self._transition(INITIALIZING if self.epoch_bump_required else READY, sender_thread=True)
        self.last_error = None
        self.epoch_bump_required = False
        self.transaction_started = False
        self.new_partitions.clear()
        self.pending_partitions.clear()
        self.partitions_in_txn.clear()

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
            self._accumulator.setdefault(tp, deque()).append(future)  # appended first (RecordAccumulator.append)
            self._schedule_expiry(future.created_ms + self.delivery_timeout_ms)
            if self.has_tm:
                self._maybe_add_partition(tp)
            self._wakeup()
            return future
        except JavaException as exc:
            if not exc.api:
                raise
            # an ApiException fails the returned future (FutureFailure) and goes to the callback, not to the caller
            if callback is not None:
                callback(None, exc)
            if self.has_tm:
                self.maybe_transition_to_error_state(exc, sender_thread=False)
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
        the ExecutionException's cause)."""
        self._wakeup()
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

    # -- the transactional request queue ----------------------------------------------------------------------
    def _enqueue(self, handler: _Handler) -> None:
        self._requests.append((handler.priority, next(self._request_seq), handler))
        self._requests.sort(key=lambda t: (t[0], t[1]))

    def _lookup_coordinator(self, kind: str, key: str) -> None:
        self._coordinators[kind] = None
        result = _Result("FindCoordinator")

        def send(broker: int) -> None:
            c = self.cluster

            def server(reply: Callable[..., None]) -> None:
                c.handle_find_coordinator(key, kind, reply)

            self._rpc(
                "FindCoordinator",
                broker,
                f"b{broker}",
                f"{kind} {key}",
                server,
                lambda err, res: self._txn_response(handler, err, res),
            )

        def on_response(error: str | None, res: dict[str, Any]) -> None:
            if error is None:
                self._coordinators[kind] = res["coordinator"]
                result.succeed()
            elif exception_for(error).retriable:
                self._reenqueue(handler)
            else:
                self._fatal(handler, exception_for(error))

        handler = _Handler("FindCoordinator", FIND_COORDINATOR, result, send, on_response, coordinator=None)
        self._enqueue(handler)

    def _reenqueue(self, handler: _Handler, backoff_ms: int | None = None) -> None:
        handler.is_retry = True
        if backoff_ms is not None:
            handler.backoff_ms = backoff_ms
        self._enqueue(handler)

    def _fatal(self, handler: _Handler, error: JavaException) -> None:
        handler.result.fail(error)
        self._transition_to_fatal(error)

    def _abortable(self, handler: _Handler, error: JavaException) -> None:
        handler.result.fail(error)
        self._transition_to_abortable(error)

    def _abortable_if_possible(self, handler: _Handler, error: JavaException) -> None:
        if self._can_handle_abortable():
            if self._client_bump_needed():
                self.epoch_bump_required = True
            self._abortable(handler, error)
        else:
            self._fatal(handler, error)

    def _next_request(self, has_incomplete: bool) -> _Handler | None:
        """TransactionManager.nextRequest."""
        if self.new_partitions:
            self._enqueue(self._add_partitions_handler())
        if not self._requests:
            return None
        handler = self._requests[0][2]
        if handler.is_end_txn and has_incomplete:
            return None  # "Do not send the EndTxn until all batches have been flushed"
        self._requests.pop(0)
        self._dequeued = True
        # maybeTerminateRequestWithError (a FindCoordinator may go on if the transaction will be aborted)
        if (
            self.state in (ABORTABLE_ERROR, FATAL_ERROR)
            and self.last_error is not None
            and not (self.state == ABORTABLE_ERROR and handler.name == "FindCoordinator")
        ):
            handler.result.fail(self.last_error)
            return None
        if handler.is_end_txn and not self.transaction_started:
            # nothing was added to the transaction (TV2: nothing sent): no EndTxn
            handler.result.succeed()
            if self.state != FATAL_ERROR:
                self._complete_transaction()
            handler = self._requests.pop(0)[2] if self._requests else None
        return handler

    def _maybe_send_txn_request(self) -> bool:
        """Sender.maybeSendAndPollTransactionalRequest: True when a transactional request is in flight or was
        dealt with (then no produce data goes out in this round)."""
        if self._txn_inflight:
            return True
        if self.state in (ABORTABLE_ERROR, ABORTING_TRANSACTION) and (
            any(self._accumulator.values()) or self._retry_batch
        ):
            reason = self.last_error or JavaException(
                "TransactionAbortedException", "Failing batch since transaction was aborted"
            )
            self._abort_undrained(reason)
        has_incomplete = self._incomplete()
        self._dequeued = False
        handler = self._next_request(has_incomplete)
        if handler is None:
            if self._dequeued:
                self._wakeup()  # a request was failed or skipped: the Sender loops on at once
            return False
        if handler.coordinator is not None and self._coordinators[handler.coordinator] is None:
            key = handler.key or self.transactional_id or ""
            self._lookup_coordinator(handler.coordinator, key)
            self._reenqueue(handler)
            self._wakeup()
            return True
        target = (
            self._coordinators[handler.coordinator] if handler.coordinator is not None else self.cluster.any_up_broker()
        )
        if target is None:
            self._reenqueue(handler)
            self._wakeup(self.retry_backoff_ms)
            return True
        self._txn_inflight = True
        delay = 0
        if handler.is_retry:
            delay = handler.backoff_ms if handler.backoff_ms is not None else self.retry_backoff_ms
        if delay:
            self._after(delay, lambda: handler.send(self._target_of(handler)), f"{self.name} {handler.name} retry")
        else:
            handler.send(target)
        return True

    def _target_of(self, handler: _Handler) -> int | None:
        if handler.coordinator is not None:
            return self._coordinators[handler.coordinator]
        return self.cluster.any_up_broker()

    def _txn_response(self, handler: _Handler, error: str | None, result: dict[str, Any]) -> None:
        """TxnRequestHandler.onComplete: a disconnect looks the coordinator up again and retries."""
        self._txn_inflight = False
        if not self.alive:
            return
        if error == "_TRANSPORT":
            if handler.coordinator is not None:
                self._lookup_coordinator(handler.coordinator, handler.key or self.transactional_id or "")
            self._reenqueue(handler)
        else:
            handler.on_response(error, result)
        self._wakeup()

    # -- handlers ---------------------------------------------------------------------------------------------
    def _init_producer_id_handler(self, result: _Result, bump: tuple[int, int] | None) -> _Handler:
        c = self.cluster
        txid = self.transactional_id
        version = self.versions["InitProducerId"]
        handler: _Handler

        def send(broker: int | None) -> None:
            detail = f"{txid or '(idempotent)'} timeout {self.transaction_timeout_ms} ms" + (
                f", bump {bump[0]}/{bump[1]}" if bump else ""
            )

            def server(reply: Callable[..., None]) -> None:
                c.handle_init_producer_id(broker, txid, self.transaction_timeout_ms, bump, reply, version=version)

            label = f"coordinator(b{broker})" if txid else f"b{broker}"
            self._rpc(
                "InitProducerId", broker, label, detail, server, lambda err, res: self._txn_response(handler, err, res)
            )

        def on_response(error: str | None, res: dict[str, Any]) -> None:
            if error is None:
                self._set_producer_id(res["producer_id"], res["producer_epoch"])
                self._transition(READY, sender_thread=True)
                self.last_error = None
                result.succeed()
            elif error in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"):
                self._lookup_coordinator("transaction", txid or "")
                self._reenqueue(handler)
            elif exception_for(error).retriable:
                self._reenqueue(handler)
            elif error in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"):
                self._fatal(handler, fenced(error))
            elif error == "TRANSACTION_ABORTABLE":
                self._abortable(handler, exception_for(error))
            else:
                self._fatal(
                    handler,
                    JavaException("KafkaException", f"Unexpected error in InitProducerIdResponse; {error}", wire=error),
                )

        handler = _Handler(
            "InitProducerId",
            EPOCH_BUMP if bump else INIT_PRODUCER_ID,
            result,
            send,
            on_response,
            coordinator="transaction" if txid else None,
        )
        return handler

    def _set_producer_id(self, producer_id: int, epoch: int) -> None:
        if (producer_id, epoch) != (self.producer_id, self.epoch):
            self.producer_id, self.epoch = producer_id, epoch
            self._next_seq.clear()  # resetSequenceNumbers: a new epoch starts every partition at 0
            self._seq_owner.clear()

    def _add_partitions_handler(self) -> _Handler:
        """AddPartitionsToTxnHandler (TV1 only)."""
        self.pending_partitions |= self.new_partitions
        self.new_partitions = set()
        parts = frozenset(self.pending_partitions)
        pid, epoch, txid = self.producer_id, self.epoch, self.transactional_id
        c = self.cluster
        version = self.versions["AddPartitionsToTxn"]
        result = _Result("AddPartitionsToTxn")
        handler: _Handler

        def send(broker: int | None) -> None:
            def server(reply: Callable[..., None]) -> None:
                c.handle_add_partitions(broker, txid, pid, epoch, parts, reply, version=version)

            self._rpc(
                "AddPartitionsToTxn",
                broker,
                f"coordinator(b{broker})",
                f"{', '.join(sorted(parts))}, producer {pid} epoch {epoch}",
                server,
                lambda err, res: self._txn_response(handler, err, res),
            )

        def on_response(error: str | None, res: dict[str, Any]) -> None:
            handler.backoff_ms = None
            if error is None:
                self.pending_partitions -= parts
                self.partitions_in_txn |= parts
                self.transaction_started = True
                result.succeed()
            elif error == "CONCURRENT_TRANSACTIONS":
                # the previous transaction is still completing: retry soon (maybeOverrideRetryBackoffMs)
                self._reenqueue(handler, ADD_PARTITIONS_RETRY_BACKOFF_MS if not self.partitions_in_txn else None)
            elif not self._coordinator_error(handler, error, txid):
                self.pending_partitions -= parts
                self._abortable(
                    handler,
                    JavaException(
                        "KafkaException", f"Could not add partitions to transaction due to errors: {error}", wire=error
                    ),
                )

        handler = _Handler("AddPartitionsToTxn", ADD_PARTITIONS_OR_OFFSETS, result, send, on_response)
        return handler

    def _coordinator_error(self, handler: _Handler, error: str, txid: str | None) -> bool:
        """An error TransactionManager.java's coordinator handlers (AddPartitionsToTxnHandler,
        AddOffsetsToTxnHandler, EndTxnHandler) all treat alike, handled; False for one each handles its own way."""
        if error in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"):
            self._lookup_coordinator("transaction", txid or "")
            self._reenqueue(handler)
        elif exception_for(error).retriable:
            self._reenqueue(handler)
        elif error in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"):
            self._fatal(handler, fenced(error))
        elif error in ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "INVALID_TXN_STATE") or (
            error == "INVALID_PRODUCER_ID_MAPPING" and self.release == "4"
        ):
            self._fatal(handler, exception_for(error))
        elif error in ("UNKNOWN_PRODUCER_ID", "INVALID_PRODUCER_ID_MAPPING"):
            self._abortable_if_possible(handler, exception_for(error))
        elif error == "TRANSACTION_ABORTABLE":
            self._abortable(handler, exception_for(error))
        else:
            return False
        return True

    def _end_txn_handler(self, result: _Result, commit: bool) -> _Handler:
        c = self.cluster
        txid = self.transactional_id
        version = self.versions["EndTxn"]
        handler: _Handler

        def send(broker: int | None) -> None:
            # the producer id and epoch at the time it goes out (a TV2 bump may have changed them)
            pid, epoch = self.producer_id, self.epoch

            def server(reply: Callable[..., None]) -> None:
                c.handle_end_txn(broker, txid, pid, epoch, commit, reply, version=version)

            self._rpc(
                "EndTxn",
                broker,
                f"coordinator(b{broker})",
                f"{'commit' if commit else 'abort'}, producer {pid} epoch {epoch}",
                server,
                lambda err, res: self._txn_response(handler, err, res),
            )

        def on_response(error: str | None, res: dict[str, Any]) -> None:
            if error is None:
                # EndTxn v5+: the producer id and epoch of the next transaction (bumped; a new id at epoch 0 after
                # an overflow); older versions answer -1
                if res.get("producer_id", -1) != -1:
                    self._set_producer_id(res["producer_id"], res["producer_epoch"])
                self._complete_transaction()
                result.succeed()
            elif not self._coordinator_error(handler, error, txid):
                self._fatal(
                    handler, JavaException("KafkaException", f"Unhandled error in EndTxnResponse: {error}", wire=error)
                )

        handler = _Handler(f"EndTxn({str(commit).lower()})", END_TXN, result, send, on_response, is_end_txn=True)
        return handler

    def _add_offsets_handler(self, result: _Result, offsets: dict[str, int], gm: GroupMetadata) -> _Handler:
        """AddOffsetsToTxnHandler (TV1): the result completes when the TxnOffsetCommit it queues does."""
        c = self.cluster
        pid, epoch, txid = self.producer_id, self.epoch, self.transactional_id
        version = self.versions["AddOffsetsToTxn"]
        handler: _Handler

        def send(broker: int | None) -> None:
            def server(reply: Callable[..., None]) -> None:
                c.handle_add_offsets(broker, txid, pid, epoch, gm.group_id, reply, version=version)

            self._rpc(
                "AddOffsetsToTxn",
                broker,
                f"coordinator(b{broker})",
                f"group {gm.group_id}, producer {pid} epoch {epoch}",
                server,
                lambda err, res: self._txn_response(handler, err, res),
            )

        def on_response(error: str | None, res: dict[str, Any]) -> None:
            if error is None:
                self._enqueue(self._txn_offset_commit_handler(result, offsets, gm))
                self.transaction_started = True
            elif not self._coordinator_error(handler, error, txid):
                self._fatal(
                    handler,
                    JavaException(
                        "KafkaException", f"Unexpected error in AddOffsetsToTxnResponse: {error}", wire=error
                    ),
                )

        handler = _Handler("AddOffsetsToTxn", ADD_PARTITIONS_OR_OFFSETS, result, send, on_response)
        return handler

    def _txn_offset_commit_handler(self, result: _Result, offsets: dict[str, int], gm: GroupMetadata) -> _Handler:
        """TxnOffsetCommitHandler, to the group coordinator."""
        c = self.cluster
        pending = dict(offsets)
        txid = self.transactional_id
        version = self.versions["TxnOffsetCommit"]
        handler: _Handler

        def send(broker: int | None) -> None:
            pid, epoch = self.producer_id, self.epoch
            commit = dict(pending)

            def server(reply: Callable[..., None]) -> None:
                c.handle_txn_offset_commit(
                    broker,
                    gm.group_id,
                    pid,
                    epoch,
                    gm.generation_id,
                    gm.member_id,
                    commit,
                    reply,
                    transactional_id=txid,
                    version=version,
                )

            self._rpc(
                "TxnOffsetCommit",
                broker,
                f"group coordinator(b{broker})",
                f"group {gm.group_id} {', '.join(f'{k}={v}' for k, v in sorted(commit.items()))}, "
                f"producer {pid} epoch {epoch}",
                server,
                lambda err, res: self._txn_response(handler, err, res),
            )

        def on_response(error: str | None, res: dict[str, Any]) -> None:
            if error is None:
                pending.clear()
            elif error in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT"):
                self._lookup_coordinator("group", gm.group_id)
            elif exception_for(error).retriable:
                pass  # retried with the same coordinator
            elif error in ("FENCED_INSTANCE_ID", "TRANSACTION_ABORTABLE"):
                self._abortable(handler, exception_for(error))
            elif error in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
                self._abortable(
                    handler,
                    JavaException(
                        "CommitFailedException",
                        "Transaction offset Commit failed due to consumer group metadata mismatch: " + error,
                        wire=error,
                    ),
                )
            elif error in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"):
                self._fatal(handler, fenced(error))
            else:
                self._fatal(
                    handler,
                    JavaException(
                        "KafkaException", f"Unexpected error in TxnOffsetCommitResponse: {error}", wire=error
                    ),
                )
            if result.done:
                pending.clear()
            elif not pending:
                result.succeed()
            else:
                self._reenqueue(handler)

        handler = _Handler(
            "TxnOffsetCommit",
            ADD_PARTITIONS_OR_OFFSETS,
            result,
            send,
            on_response,
            coordinator="group",
            key=gm.group_id,
        )
        return handler

    # -- the Sender loop --------------------------------------------------------------------------------------
    def _run_once(self) -> None:
        """Sender.runOnce."""
        if not self.alive:
            return
        if self.has_tm:
            if self.state == FATAL_ERROR:
                if self.last_error is not None:
                    self._abort_all(self.last_error)  # maybeAbortBatches
                return
            if not self.transactional_id and self.producer_id < 0 and self.state == UNINITIALIZED:
                # bumpIdempotentEpochAndResetIdIfNeeded: an idempotent producer asks any broker for an id
                self._transition(INITIALIZING, sender_thread=True)
                self._enqueue(self._init_producer_id_handler(_Result("InitProducerId"), None))
            if self._maybe_send_txn_request():
                return
        self._send_producer_data()

    def _sendable(self, tp: str) -> bool:
        """RecordAccumulator.shouldStopDrainBatchesForPartition / TransactionManager.isSendToPartitionAllowed."""
        if not self.has_tm:
            return True
        if self.state == FATAL_ERROR:
            return False
        if self.transactional_id and tp not in self.partitions_in_txn:
            return False
        return self.producer_id >= 0

    def _send_producer_data(self) -> None:
        """RecordAccumulator.ready + drain: a partition's records go once linger.ms has passed, at once while
        flushing or while the transaction completes, after the backoff when retried."""
        now = self.now_ms
        completing = self.state in (COMMITTING_TRANSACTION, ABORTING_TRANSACTION)
        for tp in sorted(set(self._accumulator) | set(self._retry_batch)):
            queue = self._accumulator.get(tp)
            if tp in self._inflight or not self._sendable(tp):
                continue
            if tp in self._retry_batch:
                retry_at = self._retry_at.get(tp, now)
                if retry_at > now:
                    self._wakeup(retry_at - now)
                    continue
                batch, seq, pid, epoch = self._retry_batch.pop(tp)
                self._send_batch(tp, batch, (seq, pid, epoch))
                continue
            if not queue:
                continue
            ready_at = queue[0].created_ms + self.linger_ms
            if ready_at > now and not self._flushing and not completing:
                self._wakeup(ready_at - now)
                continue
            batch = list(queue)
            queue.clear()
            self._send_batch(tp, batch)

    def _send_batch(self, tp: str, batch: list[RecordFuture], retry: tuple[int, int, int] | None = None) -> None:
        c = self.cluster
        leader = c.leader_of(tp)
        pid, epoch = (self.producer_id, self.epoch) if self.idempotent else (-1, -1)
        seq = -1
        if retry is not None:
            seq, pid, epoch = retry  # a retried batch keeps its producer state (ProducerBatch.hasSequence)
        elif self.idempotent:
            if self._seq_owner.get(tp) != (pid, epoch):
                self._seq_owner[tp] = (pid, epoch)
                self._next_seq[tp] = 0
            seq = self._next_seq.get(tp, 0)
            self._next_seq[tp] = seq + len(batch)
        for f in batch:
            f.producer_id, f.epoch = pid, epoch
        self._inflight[tp] = batch
        values = tuple(f.value for f in batch)
        keys = None if all(f.key is None for f in batch) else tuple(f.key for f in batch)
        transactional = self.transactional_id is not None
        txid, acks = self.transactional_id, self.acks
        version = self.versions["Produce"]

        def server(reply: Callable[..., None]) -> None:
            c.handle_produce(
                leader,
                tp,
                txid,
                pid,
                epoch,
                seq,
                transactional,
                values,
                keys,
                acks,
                reply,
                client_id=self.name,
                version=version,
            )

        detail = f"{tp} {len(batch)} record(s), producer {pid} epoch {epoch} seq {seq}"
        self._rpc(
            "Produce",
            leader,
            f"leader {tp}(b{leader})",
            detail,
            server,
            lambda err, res: self._on_produce_response(tp, batch, seq, pid, epoch, err, res),
        )
        if acks == 0:
            self._after(0, lambda: self._on_produce_response(tp, batch, seq, pid, epoch, None, {"base_offset": -1}))

    def _on_produce_response(
        self, tp: str, batch: list[RecordFuture], seq: int, pid: int, epoch: int, error: str | None, res: dict[str, Any]
    ) -> None:
        """Sender.completeBatch: retry what is retriable within delivery.timeout.ms, else complete or fail."""
        if self._inflight.get(tp) is not batch:
            return
        del self._inflight[tp]
        if error is not None:
            exc = exception_for(error if error != "_TRANSPORT" else "NETWORK_EXCEPTION")
            attempts = self._attempts.get(tp, 0) + 1
            backoff = min(self.retry_backoff_ms * (2 ** (attempts - 1)), self.retry_backoff_max_ms)
            created = min(f.created_ms for f in batch)
            if (
                exc.retriable
                and self.now_ms + backoff < created + self.delivery_timeout_ms
                and self.state != FATAL_ERROR
            ):
                self._attempts[tp] = attempts
                self._retry_at[tp] = self.now_ms + backoff
                # Sender.reenqueueBatch: the same batch, the same producer id, epoch and sequence
                self._retry_batch[tp] = (batch, seq, pid, epoch)
                self._wakeup(backoff)
                return
            self._attempts.pop(tp, None)
            self._retry_at.pop(tp, None)
            if (
                seq >= 0
                and self._next_seq.get(tp) == seq + len(batch)
                and (pid, epoch) == (self.producer_id, self.epoch)
            ):
                self._next_seq[tp] = seq  # adjustSequencesDueToFailedBatch
            self._fail_batch(batch, exc)
        else:
            self._attempts.pop(tp, None)
            self._retry_at.pop(tp, None)
            base = res.get("base_offset", -1)
            for i, f in enumerate(batch):
                f.offset = base + i if base >= 0 else -1
                self._complete(f, None)
        self._wakeup()

    def _complete(self, f: RecordFuture, exc: JavaException | None) -> None:
        if f.done:
            return
        f.done = True
        f.exception = exc
        self.stats["delivered" if exc is None else "failed"] += 1
        cluster = self.cluster
        if cluster.observed:
            cluster.emit(
                ev.Delivery,
                actor=self.name,
                partition=f.tp,
                offset=f.offset if exc is None else None,
                value=f.value,
                error=None if exc is None else exc.name,
            )
        else:
            cluster.skip_event()
        if f.callback is not None:
            f.callback(None if exc else f, exc)

    def _fail_batch(self, batch: list[RecordFuture], exc: JavaException) -> None:
        """Sender.failBatch: the records' futures fail, and the transaction manager hears of it
        (handleFailedBatch -> maybeTransitionToErrorState, on the Sender thread)."""
        for f in batch:
            self._complete(f, exc)
        if self.has_tm and self.alive:
            self.maybe_transition_to_error_state(exc)

    def _abort_undrained(self, reason: JavaException) -> None:
        """RecordAccumulator.abortUndrainedBatches: queued records fail; the transaction manager is not told."""
        for tp in sorted(self._retry_batch):
            for f in self._retry_batch.pop(tp)[0]:
                self._complete(f, reason)
        for queue in self._accumulator.values():
            while queue:
                self._complete(queue.popleft(), reason)

    def _abort_all(self, reason: JavaException) -> None:
        """RecordAccumulator.abortBatches: everything incomplete fails (a fatal error)."""
        self._abort_undrained(reason)

    def _schedule_expiry(self, at_ms: int) -> None:
        """Batch expiry (RecordAccumulator.expiredBatches): a timer, so that observing never expires a batch."""
        if self._expiry_ms is not None and self._expiry_ms <= at_ms:
            return
        self._expiry_ms = at_ms

        def expire() -> None:
            self._expiry_ms = None
            if not self.alive:
                return
            now = self.now_ms
            expired: list[RecordFuture] = []
            earliest: int | None = None
            for tp in sorted(self._accumulator):
                queue = self._accumulator[tp]
                while queue and queue[0].created_ms + self.delivery_timeout_ms <= now:
                    expired.append(queue.popleft())
                if queue:
                    due = queue[0].created_ms + self.delivery_timeout_ms
                    earliest = due if earliest is None else min(earliest, due)
            if expired:
                exc = JavaException(
                    "TimeoutException",
                    f"Expiring {len(expired)} record(s) for "
                    f"{expired[0].tp}:{now - expired[0].created_ms} ms has passed since batch "
                    "creation",
                )
                self._fail_batch(expired, exc)
                self._wakeup()
            if earliest is not None:
                self._schedule_expiry(earliest)

        def inert(t: int) -> bool:
            return not self.alive or not any(
                q and q[0].created_ms + self.delivery_timeout_ms <= t for q in self._accumulator.values()
            )

        self.cluster.scheduler.at(at_ms, expire, category=TIMER, label=f"{self.name} batch expiry", inert=inert)
