"""kafka-clients' producer model, its state: the TransactionManager's state machine (State, isTransitionValid) and
its error handling (maybeFailWithError, maybeTransitionToErrorState, a timed-out call's pending result), the records
and their futures (a record is completed or failed here: RecordAccumulator's abort paths, Sender.failBatch), and the
Sender's wakeup. The transaction manager's requests are java_txnmgr.py's, the Sender's loop java_sender.py's,
KafkaProducer's calls javaclient.py's (whose docstring tells the behaviour as a whole).

Follows clients/src/main/java/org/apache/kafka/clients/producer/internals/TransactionManager.java (State,
transitionTo, maybeFailWithError, maybeTransitionToErrorState, handleCachedTransactionRequestResult,
completeTransaction), TransactionalRequestResult.java (await(max.block.ms) -> TimeoutException),
RecordAccumulator.java (abortBatches, abortUndrainedBatches), Sender.java (failBatch) and
producer/internals/FutureRecordMetadata.java.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from itertools import count
from typing import TYPE_CHECKING, Any

from playground.engine import events as ev
from playground.sim.apiversions import JAVA_CLIENT_MAX, TV2_MAX, java_versions
from playground.sim.clientbase import Client, conf_bool, conf_ms
from playground.sim.javaerrors import JavaException

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
# 3.5: UNINITIALIZED only from READY and no ABORTABLE_ERROR while INITIALIZING (both came with 3.6+: KAFKA-13668's
# transitionToUninitialized, and an abortable InitProducerId answer)
TM_TRANSITIONS_35: dict[str, frozenset[str]] = {
    **TM_TRANSITIONS_39,
    UNINITIALIZED: frozenset({READY}),
    ABORTABLE_ERROR: frozenset({IN_TRANSACTION, COMMITTING_TRANSACTION, ABORTABLE_ERROR}),
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

# The request versions kafka-clients sends to a cluster of its own release (see the module docstring): its highest
# ones, and on 4.x those of transaction protocol 2; to a cluster of another release, apiversions.java_versions
# negotiates them.
API_VERSIONS = {release: dict(versions) for release, versions in JAVA_CLIENT_MAX.items()}
API_VERSIONS["4"].update(TV2_MAX)

# TransactionManager.Priority: FindCoordinator first, the end of the transaction last (an epoch bump after it)
FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS_OR_OFFSETS, END_TXN, EPOCH_BUMP = range(5)
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20  # the first AddPartitionsToTxn meeting CONCURRENT_TRANSACTIONS


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


class TxnResult:
    """TransactionalRequestResult: a latch, the error it failed with, and whether the application saw it."""

    __slots__ = ("acked", "done", "error", "operation")

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self.done = False
        self.error: JavaException | None = None
        self.acked = False

    def fail(self, error: JavaException) -> None:
        self.error = error.kept()
        self.done = True

    def succeed(self) -> None:
        self.done = True


class TxnRequestHandler:
    """A TxnRequestHandler: one transactional request, its priority, the coordinator it needs, its result, and
    what its response does (`on_response(error, result)`)."""

    __slots__ = (
        "_on_response",
        "_send",
        "backoff_ms",
        "coordinator",
        "is_end_txn",
        "is_retry",
        "key",
        "name",
        "priority",
        "result",
    )

    def __init__(
        self,
        name: str,
        priority: int,
        result: TxnResult,
        send: Callable[[TxnRequestHandler, int | None], None],
        on_response: Callable[[TxnRequestHandler, str | None, dict[str, Any]], None],
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
        # given the handler rather than closing over it: a closure kept in the handler that refers to the handler
        # is a reference cycle, left to the garbage collector with the client and the cluster it holds
        self._send = send
        self._on_response = on_response

    def send(self, broker: int | None) -> None:
        self._send(self, broker)

    def on_response(self, error: str | None, result: dict[str, Any]) -> None:
        self._on_response(self, error, result)


class JavaProducerBase(Client):
    """The state of a KafkaProducer: its TransactionManager's and its records'."""

    def __init__(
        self, conf: dict[str, Any], *, cluster: Cluster, name: str | None = None, release: str = "3.9"
    ) -> None:
        super().__init__(conf, cluster, name)
        if release not in API_VERSIONS:
            raise ValueError(f"no model of kafka-clients {release!r}")
        self.release = release  # kafka-clients' version line; the cluster's is cluster.kafka
        c = self.conf
        self.transactional_id: str | None = c.get("transactional.id") or None
        # kafka-clients 3.0+: idempotence is on by default (a transactional producer always has it)
        self.idempotent = self.transactional_id is not None or conf_bool(c.get("enable.idempotence", True))
        acks = str(c.get("acks", c.get("request.required.acks", "all"))).lower()
        self.acks = -1 if acks in ("all", "-1") or self.idempotent else int(acks)
        self.linger_ms = conf_ms(c, "linger.ms", conf_ms(c, "queue.buffering.max.ms", 5 if release == "4" else 0))
        self.delivery_timeout_ms = conf_ms(c, "delivery.timeout.ms", conf_ms(c, "message.timeout.ms", 120_000))
        self.max_block_ms = conf_ms(c, "max.block.ms", 60_000)
        self.request_timeout_ms = conf_ms(c, "request.timeout.ms", 30_000)
        self.retry_backoff_ms = conf_ms(c, "retry.backoff.ms", 100)
        # exponential backoff up to retry.backoff.max.ms came with 3.7 (KIP-580); 3.5 waits retry.backoff.ms each time
        self.retry_backoff_max_ms = (
            self.retry_backoff_ms if release == "3.5" else conf_ms(c, "retry.backoff.max.ms", 1000)
        )
        self.transaction_timeout_ms = conf_ms(c, "transaction.timeout.ms", 60_000)
        # TransactionManager (exists for idempotent and transactional producers)
        self.has_tm = self.idempotent
        self.tm_table = {"3.5": TM_TRANSITIONS_35, "4": TM_TRANSITIONS_4}.get(release, TM_TRANSITIONS_39)
        # an invalid transition on the Sender thread poisons the manager (FATAL_ERROR) from 3.6 on (KAFKA-14831); in
        # 3.5 it is an IllegalStateException the Sender's loop logs ("Uncaught error in kafka producer I/O thread")
        self.poisons = release != "3.5"
        # Kafka 4.x cluster + kafka-clients 4.x: transaction.version 2 finalized and Produce v12 / EndTxn v5 /
        # TxnOffsetCommit v5 supported (maybeUpdateTransactionV2Enabled at initTransactions); a 4.x client on a 3.x
        # cluster, or a 3.x client on a 4.x one, runs the classic protocol
        kafka = getattr(cluster, "kafka", "3.9")
        self.tv2 = release == "4" and kafka == "4" and self.transactional_id is not None
        self.versions = self.api_versions = java_versions(API_VERSIONS, release, kafka, self.tv2)
        self.state = UNINITIALIZED if self.has_tm else READY
        self.last_error: JavaException | None = None
        self.producer_id = -1
        self.epoch = -1
        self.epoch_bump_required = False
        self.transaction_started = False
        self.new_partitions: set[str] = set()
        self.pending_partitions: set[str] = set()
        self._unnoticed: dict[str, int] = {}  # partition -> when a send added it without waking the Sender
        self.partitions_in_txn: set[str] = set()
        self._pending_transition: tuple[TxnResult, str, str] | None = None  # (result, state, operation)
        self._coordinators: dict[str, int | None] = {"transaction": None, "group": None}
        self._requests: list[tuple[int, int, TxnRequestHandler]] = []
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

    @property
    def txn_id(self) -> str:
        """transactional.id, where only a transactional producer gets (the requests of its transactions)."""
        assert self.transactional_id is not None, "a transactional request from a producer without transactional.id"
        return self.transactional_id

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

    # -- the Sender's wakeup ----------------------------------------------------------------------------------
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

    def _run_once(self) -> None:
        """Sender.runOnce: java_sender.py."""
        raise NotImplementedError

    def discard(self) -> None:
        self._requests.clear()  # the handlers' callbacks refer back to this manager
        self._pending_transition = None

    # -- TransactionManager: states and errors ----------------------------------------------------------------
    def _transition(self, target: str, error: JavaException | None = None, *, sender_thread: bool = False) -> None:
        """TransactionManager.transitionTo: an invalid transition throws IllegalStateException on the
        application thread (state unchanged) and poisons the manager on the Sender thread (FATAL_ERROR)."""
        if target != FATAL_ERROR and self.state not in self.tm_table.get(target, frozenset()):
            ident = f"TransactionalId {self.transactional_id}: " if self.transactional_id else ""
            exc = JavaException(
                "IllegalStateException",
                f"{ident}Invalid transition attempted from state {self.state} to state {target}",
            )
            if sender_thread and self.poisons:
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
            exc.kept()
            if sender_thread and not self.poisons:
                self._emit_error("background", exc)  # logged by the Sender's loop; the state stays as it was
                return
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

    def _cached_result(self, supplier: Callable[[], TxnResult], next_state: str, operation: str) -> TxnResult:
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

    def _await(self, result: TxnResult, timeout_ms: int) -> None:
        """TransactionalRequestResult.await(max.block.ms)."""
        self._wait(lambda: result.done, self.now_ms + timeout_ms)
        if not result.done:
            raise JavaException(
                "TimeoutException", f"Timeout expired after {timeout_ms}ms while awaiting {result.operation}"
            )
        result.acked = True
        if result.error is not None:
            raise result.error

    def _complete_transaction(self) -> None:
        """completeTransaction: READY, or INITIALIZING when an epoch bump follows."""
        self._transition(INITIALIZING if self.epoch_bump_required else READY, sender_thread=True)
        self.last_error = None
        self.epoch_bump_required = False
        self.transaction_started = False
        self.new_partitions.clear()
        self.pending_partitions.clear()
        self.partitions_in_txn.clear()

    def _set_producer_id(self, producer_id: int, epoch: int) -> None:
        if (producer_id, epoch) != (self.producer_id, self.epoch):
            self.producer_id, self.epoch = producer_id, epoch
            self._next_seq.clear()  # resetSequenceNumbers: a new epoch starts every partition at 0
            self._seq_owner.clear()

    # -- records completed or failed --------------------------------------------------------------------------
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
