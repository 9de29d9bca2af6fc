"""The transaction state machine: Kafka's transaction states, the table of transitions each release allows, and a
transactional id's metadata with its prepare*/complete transitions. Both protocols share it: the classic one (TV1)
and transaction version 2 (KIP-890 part 2, TV2); it knows nothing of requests, logs or brokers.

Follows core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala (3.9) and, in 4.x,
transaction-coordinator/src/main/java/org/apache/kafka/coordinator/transaction/TransactionMetadata.java and
TransactionState.java (the state machine and its prepare*/complete transitions).

Every change follows Kafka's pattern: prepare a transition (the metadata gets a *pending state*; other requests
now get CONCURRENT_TRANSACTIONS), write the new value to `__transaction_state`, then complete the transition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

EMPTY = "Empty"
ONGOING = "Ongoing"
PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"
DEAD = "Dead"
PREPARE_EPOCH_FENCE = "PrepareEpochFence"

# TransactionState ids as persisted in __transaction_state (TransactionMetadata.scala, TransactionState.fromId).
STATE_IDS: dict[str, int] = {
    EMPTY: 0,
    ONGOING: 1,
    PREPARE_COMMIT: 2,
    PREPARE_ABORT: 3,
    COMPLETE_COMMIT: 4,
    COMPLETE_ABORT: 5,
    DEAD: 6,
    PREPARE_EPOCH_FENCE: 7,
}

# Target state -> the states it may be entered from (each TransactionState's validPreviousStates), per Kafka release.
# The tables the state machine obeys (TransactionMetadata._prepare checks every transition against its cluster's);
# the UI draws them (transitions_for).
TRANSITIONS: dict[str, frozenset[str]] = {  # Kafka 3.9: TransactionMetadata.scala
    EMPTY: frozenset({EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    ONGOING: frozenset({ONGOING, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    PREPARE_COMMIT: frozenset({ONGOING}),
    PREPARE_ABORT: frozenset({ONGOING, PREPARE_EPOCH_FENCE}),
    COMPLETE_COMMIT: frozenset({PREPARE_COMMIT}),
    COMPLETE_ABORT: frozenset({PREPARE_ABORT}),
    DEAD: frozenset({EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    PREPARE_EPOCH_FENCE: frozenset({ONGOING}),
}
# Kafka 4.x: TransactionState.java. One table for both protocols: the extra ways into PrepareAbort are the TV2 empty
# abort ("the client may not know the txn state on the server side, it needs to send endTxn request when uncertain");
# the coordinator only takes them for an EndTxn v5+ (endTransaction), never for a TV1 client's EndTxn.
TRANSITIONS_4: dict[str, frozenset[str]] = {
    **TRANSITIONS,
    PREPARE_ABORT: frozenset({ONGOING, PREPARE_EPOCH_FENCE, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
}
# Kafka 3.5's TransactionMetadata.scala has 3.9's table (the two differ only in a type annotation).
TRANSITIONS_BY_KAFKA: dict[str, dict[str, frozenset[str]]] = {
    "3.5": TRANSITIONS,
    "3.9": TRANSITIONS,
    "4": TRANSITIONS_4,
}


def transitions_for(kafka: str = "3.9") -> dict[str, frozenset[str]]:
    """The transition table of a Kafka release ("3.5", "3.9" or "4", as spec.Profile.kafka names it)."""
    return TRANSITIONS_BY_KAFKA[kafka]


EXPIRATION_ALLOWED = frozenset({EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT})

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767
# TransactionVersion: what the coordinator records as a transaction's clientTransactionVersion. TV_0 for TV1 clients
# (EndTxn < v5, Produce < v12), TV_2 for KIP-890 part 2 clients; the coordinator's own aborts use the server's level.
TV_0 = 0
TV_2 = 2


def is_epoch_exhausted(epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: epochs 32766 and 32767 are never handed to a client, so that the
    coordinator can always fence the current one (TV1) or bump it at the end of the transaction (TV2)."""
    return epoch >= SHORT_MAX - 1


@dataclass(frozen=True)
class Transit:
    """TxnTransitMetadata: the target of a prepared transition (immutable)."""

    producer_id: int
    prev_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: str
    partitions: frozenset[str]
    txn_start_ms: int
    txn_last_update_ms: int
    next_producer_id: int = NO_PRODUCER_ID
    client_tv: int = TV_0


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: str = EMPTY
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    previous_producer_id: int = NO_PRODUCER_ID
    partitions: set[str] = field(default_factory=set)
    txn_start_ms: int = -1
    txn_last_update_ms: int = 0
    pending_state: str | None = None
    has_failed_epoch_fence: bool = False
    # TV2: the producer id the transaction completes with when its epoch ran out (prepareAbortOrCommit), and the
    # clientTransactionVersion of the last transition
    next_producer_id: int = NO_PRODUCER_ID
    client_tv: int = TV_0
    # the cluster's release decides the table and the fence's behaviour at Short.MaxValue
    kafka: str = "3.9"

    @property
    def table(self) -> Mapping[str, frozenset[str]]:
        return TRANSITIONS_BY_KAFKA[self.kafka]

    # -- prepare* (TransactionMetadata.scala / .java) ---------------------------------------------------------
    def _prepare(
        self,
        state: str,
        producer_id: int,
        epoch: int,
        last_epoch: int,
        timeout_ms: int,
        partitions: frozenset[str],
        start_ms: int,
        update_ms: int,
        *,
        next_producer_id: int = NO_PRODUCER_ID,
        client_tv: int | None = None,
    ) -> Transit:
        if self.pending_state is not None:
            raise IllegalStateError(
                f"{self.transactional_id}: transition to {state} while {self.pending_state} pending"
            )
        if self.state not in self.table[state]:
            raise IllegalStateError(f"{self.transactional_id}: {self.state} -> {state} is not a valid transition")
        if state != DEAD and epoch < 0:
            raise IllegalStateError(f"{self.transactional_id}: illegal new producer epoch {epoch}")
        self.pending_state = state
        return Transit(
            producer_id,
            self.producer_id,
            epoch,
            last_epoch,
            timeout_ms,
            state,
            partitions,
            start_ms,
            update_ms,
            next_producer_id,
            self.client_tv if client_tv is None else client_tv,
        )

    def prepare_fence_producer_epoch(self) -> Transit:
        if self.producer_epoch == SHORT_MAX and self.kafka != "4":
            raise IllegalStateError("cannot fence producer with epoch equal to Short.MaxValue")
        # 3.9: never bump twice after a failed fence write (KAFKA-9666); 4.x also never past Short.MaxValue
        # (KAFKA-20090: "to avoid overflow")
        keep = self.has_failed_epoch_fence or self.producer_epoch == SHORT_MAX
        bumped = self.producer_epoch if keep else self.producer_epoch + 1
        return self._prepare(
            PREPARE_EPOCH_FENCE,
            self.producer_id,
            bumped,
            NO_PRODUCER_EPOCH,
            self.txn_timeout_ms,
            frozenset(self.partitions),
            self.txn_start_ms,
            self.txn_last_update_ms,
        )

    def prepare_increment_producer_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now_ms: int
    ) -> Transit | str:
        if is_epoch_exhausted(self.producer_epoch):
            raise IllegalStateError(f"cannot allocate more producer epochs for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            epochs = (self.producer_epoch, self.last_producer_epoch)  # a retry of a call that already succeeded
        else:
            return "PRODUCER_FENCED"
        return self._prepare(EMPTY, self.producer_id, epochs[0], epochs[1], timeout_ms, frozenset(), -1, now_ms)

    def prepare_producer_id_rotation(
        self, new_producer_id: int, timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> Transit:
        return self._prepare(
            EMPTY,
            new_producer_id,
            0,
            self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            timeout_ms,
            frozenset(),
            -1,
            now_ms,
        )

    def prepare_add_partitions(self, added: frozenset[str], now_ms: int, client_tv: int = TV_0) -> Transit:
        start = now_ms if self.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT) else self.txn_start_ms
        return self._prepare(
            ONGOING,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(self.partitions) | added,
            start,
            now_ms,
            client_tv=client_tv,
        )

    def prepare_abort_or_commit(
        self,
        state: str,
        now_ms: int,
        client_tv: int = TV_0,
        next_producer_id: int = NO_PRODUCER_ID,
        no_partition_added: bool = False,
    ) -> Transit:
        if client_tv >= TV_2:
            # TV2: every EndTxn bumps the epoch; the markers and the next transaction use the bumped one. An abort
            # at Short.MaxValue goes through unbumped ("if we're already in a broken state")
            at_max = self.producer_epoch == SHORT_MAX and state == PREPARE_ABORT
            epoch = self.producer_epoch if at_max else self.producer_epoch + 1
            last_epoch = self.producer_epoch
        else:
            epoch, last_epoch = self.producer_epoch, self.last_producer_epoch  # TV1: the epoch does not move
        # a TV2 empty abort (no partition ever added) has no start time of its own: the update time stands in
        start = now_ms if no_partition_added else self.txn_start_ms
        return self._prepare(
            state,
            self.producer_id,
            epoch,
            last_epoch,
            self.txn_timeout_ms,
            frozenset(self.partitions),
            start,
            now_ms,
            next_producer_id=next_producer_id,
            client_tv=client_tv,
        )

    def prepare_complete(self, now_ms: int) -> Transit:
        state = COMPLETE_COMMIT if self.state == PREPARE_COMMIT else COMPLETE_ABORT
        # the state change was written: a failed epoch fence no longer matters
        self.has_failed_epoch_fence = False
        if self.client_tv >= TV_2 and self.next_producer_id != NO_PRODUCER_ID:
            # epoch overflow: the transaction completes on the new producer id at epoch 0; lastProducerEpoch keeps
            # the last epoch the client saw
            pid, epoch = self.next_producer_id, 0
        else:
            pid, epoch = self.producer_id, self.producer_epoch
        return self._prepare(
            state, pid, epoch, self.last_producer_epoch, self.txn_timeout_ms, frozenset(), self.txn_start_ms, now_ms
        )

    def prepare_dead(self) -> Transit:
        return self._prepare(
            DEAD,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(),
            self.txn_start_ms,
            self.txn_last_update_ms,
        )

    def complete_transition(self, t: Transit) -> None:
        if self.pending_state != t.state:
            raise IllegalStateError(
                f"{self.transactional_id}: completing {t.state} but pending is {self.pending_state}"
            )
        self.producer_id = t.producer_id
        self.previous_producer_id = t.prev_producer_id
        self.producer_epoch = t.producer_epoch
        self.last_producer_epoch = t.last_producer_epoch
        self.txn_timeout_ms = t.txn_timeout_ms
        self.partitions = set(t.partitions)
        self.txn_start_ms = t.txn_start_ms
        self.txn_last_update_ms = t.txn_last_update_ms
        self.next_producer_id = t.next_producer_id
        self.client_tv = t.client_tv
        self.state = t.state
        self.pending_state = None


class IllegalStateError(Exception):
    """What Kafka throws as IllegalStateException: a bug in the simulator, never an outcome."""
