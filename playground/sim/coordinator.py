"""The transaction coordinator, as Kafka 3.9 and Kafka 4.x run it: the classic protocol (TV1) and transaction
protocol version 2 (KIP-890 part 2, TV2).

Follows core/src/main/scala/kafka/coordinator/transaction/: TransactionCoordinator.scala (request handling),
TransactionMetadata.scala (3.9; transaction-coordinator/.../TransactionMetadata.java and TransactionState.java in
4.x: the state machine and its prepare*/complete transitions), TransactionStateManager.scala (`__transaction_state`,
the timeout and expiry scans, partitionFor) and TransactionMarkerChannelManager /
TransactionMarkerRequestCompletionHandler (markers to partition leaders, retried until acked).

Every change follows Kafka's pattern: prepare a transition (the metadata gets a *pending state*; other requests
now get CONCURRENT_TRANSACTIONS), append the new value to `__transaction_state` (acks=all), then complete the
transition. EndTxn is answered right after PrepareCommit/PrepareAbort is durable, before any marker is written; at
that moment the completion (CompleteCommit/CompleteAbort) is already prepared, so it stays pending while the markers
are written (sendTxnMarkersCallback calls prepareComplete before addTxnMarkersToSend).

Error codes on the wire follow KafkaApis: the handle_* methods take the request's ApiVersion, and a stale epoch
(PRODUCER_FENCED in the coordinator) goes out as INVALID_PRODUCER_EPOCH to versions older than KIP-588's
(AddPartitionsToTxn/AddOffsetsToTxn/EndTxn < 2, InitProducerId < 4): librdkafka 2.x sends AddPartitionsToTxn v0,
AddOffsetsToTxn v0 and EndTxn v1, so a fenced librdkafka producer sees 47, never 90, from those three; kafka-clients
3.9/4.x send newer versions and see 90.

Kafka 4.x (the cluster formatted with transaction.version=2) differs in these ways, each selected by `kafka`:
- the transition table (TransactionState.java): PrepareAbort may also be entered from Empty, CompleteCommit and
  CompleteAbort, the empty abort a TV2 client may send when unsure of the server's state;
- EndTxn v5+ (the client's TV2): the epoch is bumped by every EndTxn (prepareAbortOrCommit), the markers carry the
  bumped epoch, the answer carries the producer id and epoch the client continues with, a retry is recognised by
  the epoch being one behind, and when the epoch is exhausted (>= 32766) a new producer id is handed over at
  completion (nextProducerId, epoch 0); the epoch 32767 is only ever seen by the markers;
- the coordinator's own aborts (transaction timeout, InitProducerId fencing an Ongoing transaction) run the TV2 path
  whatever the client speaks, because they use the server's transaction.version; since KAFKA-19367 the fence bumps
  the epoch once (not twice), and since KAFKA-20090 a fence at an exhausted epoch also hands over a new producer id;
- partitions join a transaction through the partition leader (Produce v12+, TxnOffsetCommit v5+): the leader sends
  AddPartitionsToTxn (verifyOnly=false) on the client's behalf; there is no client AddPartitionsToTxn/AddOffsetsToTxn;
- AddPartitionsToTxn checks the pending transition first (KAFKA-18660), and TV2 EndTxn checks it before the epoch
  (KAFKA-18464), so a new transaction's request meets CONCURRENT_TRANSACTIONS, not a self-fence, while the previous
  one completes.

The coordinator is one logical object for the cluster; which broker answers for a transactional id is the leader
of its `__transaction_state` partition. What is durable (the last value per transactional id, per partition) is
kept apart from the in-memory cache, so a new leader can load it and resume Prepare* transactions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from playground.engine import events as ev

if TYPE_CHECKING:  # pragma: no cover
    from playground.sim.cluster import Cluster

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
TRANSITIONS_BY_KAFKA: dict[str, dict[str, frozenset[str]]] = {"3.9": TRANSITIONS, "4": TRANSITIONS_4}


def transitions_for(kafka: str = "3.9") -> dict[str, frozenset[str]]:
    """The transition table of a Kafka release ("3.9" or "4", as spec.Profile.kafka names it)."""
    return TRANSITIONS_BY_KAFKA[kafka]


EXPIRATION_ALLOWED = frozenset({EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT})

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767
# TransactionVersion: what the coordinator records as a transaction's clientTransactionVersion. TV_0 for TV1 clients
# (EndTxn < v5, Produce < v12), TV_2 for KIP-890 part 2 clients; the coordinator's own aborts use the server's level.
TV_0 = 0
TV_2 = 2

# Broker defaults (TransactionStateManagerConfig / TransactionLogConfig), overridable through the cluster config.
DEFAULTS = {
    "transaction.state.log.num.partitions": 50,
    "offsets.topic.num.partitions": 50,
    "transaction.max.timeout.ms": 900_000,
    "transactional.id.expiration.ms": 604_800_000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10_000,
    "transaction.remove.expired.transaction.cleanup.interval.ms": 3_600_000,
}

# KafkaApis (core/src/main/scala/kafka/server/KafkaApis.scala, 3.9): the first request version that may be answered
# PRODUCER_FENCED (KIP-588); older versions get INVALID_PRODUCER_EPOCH instead ("For older clients, they could not
# understand the new PRODUCER_FENCED error code"): handleInitProducerIdRequest (version < 4),
# handleEndTxnRequest, handleAddPartitionsToTxnRequest, handleAddOffsetsToTxnRequest (version < 2).
PRODUCER_FENCED_SINCE = {"InitProducerId": 4, "AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2, "EndTxn": 2}


def for_version(api: str, version: int | None, error: str | None) -> str | None:
    """The error code KafkaApis puts on the wire for `api` at request `version` (None: the newest)."""
    if error == "PRODUCER_FENCED" and version is not None and version < PRODUCER_FENCED_SINCE[api]:
        return "INVALID_PRODUCER_EPOCH"
    return error


# Bytes a record costs on the log besides key and value: the v2 record batch header (61) plus the record's own
# varint framing (about 9). The cost scenario only needs the order of magnitude.
RECORD_OVERHEAD_BYTES = 70


# Cached: every transactional request looks its id's coordinator partition up, and ids repeat from one transaction
# to the next. Bounded, as ids may be minted per order.
@functools.lru_cache(maxsize=4096)
def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """org.apache.kafka.common.utils.Utils.abs: abs(Integer.MIN_VALUE) is 0."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(key: str, partitions: int = 50) -> int:
    """TransactionStateManager.partitionFor / GroupMetadataManager.partitionFor."""
    return kafka_abs(java_string_hash(key)) % partitions


def is_epoch_exhausted(epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: epochs 32766 and 32767 are never handed to a client, so that the
    coordinator can always fence the current one (TV1) or bump it at the end of the transaction (TV2)."""
    return epoch >= SHORT_MAX - 1


def record_bytes(transactional_id: str, partitions: frozenset[str] | set[str] | None) -> int:
    """Approximate size of one `__transaction_state` record: key v0 (int16 version, string id) and value v0
    (int16 version, ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32, TransactionStatus int8,
    TransactionPartitions [Topic string, PartitionIds [int32]], LastUpdate int64, Start int64). None: tombstone."""
    key = 2 + 2 + len(transactional_id.encode())
    if partitions is None:
        return key + RECORD_OVERHEAD_BYTES
    by_topic: dict[str, int] = {}
    for tp in partitions:
        topic, _, _ = tp.rpartition("-")
        by_topic[topic] = by_topic.get(topic, 0) + 1
    parts = 4 + sum(2 + len(t.encode()) + 4 + 4 * n for t, n in by_topic.items())
    value = 2 + 8 + 2 + 4 + 1 + parts + 8 + 8
    return key + value + RECORD_OVERHEAD_BYTES


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

    # -- prepare* (TransactionMetadata.scala / .java) -----------------------------------------------------------
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
        if self.producer_epoch == SHORT_MAX and self.kafka == "3.9":
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


@dataclass
class TxnPartitionState:
    """One `__transaction_state` partition: who leads it, its coordinator epoch, and what is durably written."""

    partition: int
    leader: int | None = None
    coordinator_epoch: int = 0
    loading: bool = False
    # transactional id -> last durable value (a Transit); compaction keeps only this
    records: dict[str, Transit] = field(default_factory=dict)


Reply = Callable[..., None]


class TransactionCoordinator:
    def __init__(self, cluster: Cluster) -> None:
        self.c = cluster
        cfg = cluster.config
        # "3.9" or "4": the release decides the transition table and how the coordinator aborts on its own (a 4.x
        # cluster runs with transaction.version=2 finalized, so its timeout and fencing aborts take the TV2 path)
        self.kafka: str = getattr(cluster, "kafka", "3.9")
        self.server_tv = TV_2 if self.kafka == "4" else TV_0
        self.num_partitions = int(
            cfg.get("transaction.state.log.num.partitions", DEFAULTS["transaction.state.log.num.partitions"])
        )
        self.max_timeout_ms = int(cfg.get("transaction.max.timeout.ms", DEFAULTS["transaction.max.timeout.ms"]))
        self.expiration_ms = int(cfg.get("transactional.id.expiration.ms", DEFAULTS["transactional.id.expiration.ms"]))
        self.abort_interval_ms = int(
            cfg.get(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                DEFAULTS["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
            )
        )
        self.expire_interval_ms = int(
            cfg.get(
                "transaction.remove.expired.transaction.cleanup.interval.ms",
                DEFAULTS["transaction.remove.expired.transaction.cleanup.interval.ms"],
            )
        )
        self.partitions = [TxnPartitionState(p) for p in range(self.num_partitions)]
        self.cache: dict[str, TransactionMetadata] = {}
        # the cost scenario's figures
        self.records_written = 0
        self.bytes_written = 0
        self.init_producer_id_calls = 0
        self.records_by_id: dict[str, int] = {}

    # -- placement --------------------------------------------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def coordinator_of(self, transactional_id: str) -> int | None:
        return self.partitions[self.partition_for(transactional_id)].leader

    def _lookup(self, broker: int, transactional_id: str) -> tuple[str | None, TxnPartitionState]:
        st = self.partitions[self.partition_for(transactional_id)]
        if st.leader != broker or not self.c.broker_up(broker):
            return "NOT_COORDINATOR", st
        if st.loading:
            return "COORDINATOR_LOAD_IN_PROGRESS", st
        return None, st

    def metadata(self, transactional_id: str) -> TransactionMetadata | None:
        return self.cache.get(transactional_id)

    # -- writing __transaction_state --------------------------------------------------------------------------
    def _emit_pending(self, md: TransactionMetadata, transit: Transit) -> None:
        self.c.emit(
            ev.TxnPending,
            transactional_id=md.transactional_id,
            state=md.state,
            pending_state=transit.state,
            producer_id=transit.producer_id,
            epoch=transit.producer_epoch,
        )

    def _append(
        self,
        md: TransactionMetadata,
        transit: Transit,
        st: TxnPartitionState,
        callback: Callable[[str | None], None],
        *,
        announce: bool = True,
    ) -> None:
        """appendTransactionToLog: write the value (durable at once in this model), complete the transition once
        followers have it, unless this broker lost the partition meanwhile (then NOT_COORDINATOR). `announce=False`:
        the pending state was announced when it was prepared (the completion, prepared before the markers)."""
        txid = md.transactional_id
        coordinator_epoch = st.coordinator_epoch
        broker = st.leader
        if announce:
            self._emit_pending(md, transit)
        if transit.state == DEAD:
            st.records.pop(txid, None)
            size = record_bytes(txid, None)
        else:
            st.records[txid] = transit
            size = record_bytes(txid, transit.partitions)
        self.records_written += 1
        self.bytes_written += size
        self.records_by_id[txid] = self.records_by_id.get(txid, 0) + 1

        def complete() -> None:
            if st.leader != broker or st.coordinator_epoch != coordinator_epoch or not self.c.broker_up(broker):
                callback("NOT_COORDINATOR")
                return
            if self.cache.get(txid) is not md:
                callback("NOT_COORDINATOR")
                return
            from_state = md.state
            md.complete_transition(transit)
            if transit.state == DEAD:
                del self.cache[txid]
                self.c.emit(
                    ev.TxnExpired,
                    transactional_id=txid,
                    producer_id=md.producer_id,
                    epoch=md.producer_epoch,
                    record_bytes=size,
                )
            else:
                self.c.emit(
                    ev.TxnState,
                    transactional_id=txid,
                    from_state=from_state,
                    to_state=md.state,
                    producer_id=md.producer_id,
                    epoch=md.producer_epoch,
                    partitions=tuple(sorted(md.partitions)),
                    coordinator_broker=broker,
                    persisted=True,
                    record_bytes=size,
                )
                self._wake_scans(md, broker)
            callback(None)

        self.c.scheduler.after(self.c.replication_ms(broker), complete, label=f"__transaction_state append {txid}")

    def _new_metadata(
        self, transactional_id: str, producer_id: int, epoch: int, timeout_ms: int, state: str, **fields: object
    ) -> TransactionMetadata:
        return TransactionMetadata(transactional_id, producer_id, epoch, timeout_ms, state, kafka=self.kafka, **fields)  # type: ignore[arg-type]

    # -- InitProducerId ---------------------------------------------------------------------------------------
    def handle_init_producer_id(
        self,
        broker: int,
        transactional_id: str | None,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        reply: Reply,
        *,
        version: int | None = None,
    ) -> None:
        self.init_producer_id_calls += 1
        reply = self._versioned("InitProducerId", version, reply)
        if transactional_id is None:
            # idempotent producer: a new producer id, epoch 0, nothing persisted
            reply(None, producer_id=self.c.generate_producer_id(broker), producer_epoch=0)
            return
        if transactional_id == "":
            reply("INVALID_REQUEST")
            return
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            reply("INVALID_TRANSACTION_TIMEOUT")
            return
        error, st = self._lookup(broker, transactional_id)
        if error:
            reply(error)
            return
        md = self.cache.get(transactional_id)
        if md is None:
            md = self._new_metadata(
                transactional_id,
                self.c.generate_producer_id(broker),
                NO_PRODUCER_EPOCH,
                timeout_ms,
                EMPTY,
                txn_last_update_ms=self.c.now_ms,
            )
            self.cache[transactional_id] = md
        result = self._prepare_init_transit(md, timeout_ms, expected, broker)
        if isinstance(result, str):
            reply(result)
            return
        transit = result
        if transit.state == PREPARE_EPOCH_FENCE:
            # abort the ongoing transaction first and let the client retry (it will bump the epoch once more);
            # "since this is not from client, use server TV" (TransactionCoordinator.handleInitProducerId)
            self._emit_pending(md, transit)

            def after_abort(err: str | None, **_: object) -> None:
                reply(err if err else "CONCURRENT_TRANSACTIONS")

            self._end_transaction(
                broker,
                transactional_id,
                transit.producer_id,
                transit.producer_epoch,
                commit=False,
                from_client=False,
                client_tv=self.server_tv,
                callback=after_abort,
            )
            return

        def after_write(err: str | None) -> None:
            if err:
                reply(err)
            else:
                reply(None, producer_id=md.producer_id, producer_epoch=md.producer_epoch)

        self._append(md, transit, st, after_write)

    def _prepare_init_transit(
        self, md: TransactionMetadata, timeout_ms: int, expected: tuple[int, int] | None, broker: int
    ) -> Transit | str:
        def valid_producer_id(pid: int, epoch: int) -> bool:
            return (
                md.producer_epoch == NO_PRODUCER_EPOCH
                or pid == md.producer_id
                or (pid == md.previous_producer_id and is_epoch_exhausted(epoch))
            )

        if md.pending_state is not None:
            return "CONCURRENT_TRANSACTIONS"
        if expected is not None and not valid_producer_id(*expected):
            return "PRODUCER_FENCED"
        if md.state in (PREPARE_ABORT, PREPARE_COMMIT):
            return "CONCURRENT_TRANSACTIONS"
        if md.state in (COMPLETE_ABORT, COMPLETE_COMMIT, EMPTY):
            if is_epoch_exhausted(md.producer_epoch) and (expected is None or expected[1] == md.producer_epoch):
                return md.prepare_producer_id_rotation(
                    self.c.generate_producer_id(broker), timeout_ms, self.c.now_ms, expected is not None
                )
            return md.prepare_increment_producer_epoch(
                timeout_ms, None if expected is None else expected[1], self.c.now_ms
            )
        if md.state == ONGOING:
            return md.prepare_fence_producer_epoch()
        raise IllegalStateError(f"found transactional id {md.transactional_id} in state {md.state}")

    # -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------------------------
    def handle_add_partitions(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: frozenset[str],
        reply: Reply,
        *,
        version: int | None = None,
        client_tv: int = TV_0,
    ) -> None:
        """A client's AddPartitionsToTxn (v0-3), or (client_tv=TV_2) a partition leader's AddPartitionsToTxn v5
        with verifyOnly=false, sent on a TV2 client's behalf for its Produce / TxnOffsetCommit."""
        self._add_partitions(
            broker,
            transactional_id,
            producer_id,
            epoch,
            partitions,
            self._versioned("AddPartitionsToTxn", version, reply),
            client_tv,
        )

    def _add_partitions(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: frozenset[str],
        reply: Reply,
        client_tv: int = TV_0,
    ) -> None:
        """TransactionCoordinator.handleAddPartitionsToTransaction."""
        error, st = self._lookup(broker, transactional_id)
        if error:
            reply(error)
            return
        md = self.cache.get(transactional_id)
        pending = md is not None and md.pending_state is not None
        if md is None:
            reply("INVALID_PRODUCER_ID_MAPPING")
        elif pending and self.kafka == "4":
            # 4.x checks the pending transition first (KAFKA-18660): a TV2 producer may already use the producer id
            # of a completion that is still pending (epoch overflow), and must wait rather than be refused
            reply("CONCURRENT_TRANSACTIONS")
        elif md.producer_id != producer_id:
            reply("INVALID_PRODUCER_ID_MAPPING")
        elif md.producer_epoch != epoch:
            reply("PRODUCER_FENCED")
        elif pending or md.state in (PREPARE_COMMIT, PREPARE_ABORT):
            reply("CONCURRENT_TRANSACTIONS")
        elif md.state == ONGOING and partitions <= md.partitions:
            reply(None)  # already in: nothing written
        else:
            self._append(md, md.prepare_add_partitions(partitions, self.c.now_ms, client_tv), st, reply)

    def handle_add_offsets(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        group_id: str,
        reply: Reply,
        *,
        version: int | None = None,
    ) -> None:
        # KafkaApis.handleAddOffsetsToTxnRequest: the group's __consumer_offsets partition joins the transaction
        offsets_partition = f"__consumer_offsets-{self.c.groups.partition_for(group_id)}"
        self._add_partitions(
            broker,
            transactional_id,
            producer_id,
            epoch,
            frozenset({offsets_partition}),
            self._versioned("AddOffsetsToTxn", version, reply),
        )

    def add_partition_for_leader(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partition: str,
        reply: Callable[[str | None], None],
    ) -> None:
        """What a partition leader's AddPartitionsToTxnManager gets back for a TV2 Produce / TxnOffsetCommit
        (addPartition operation): the coordinator adds the partition (writing Ongoing), and the leader translates
        the answer as ReplicaManager / AddPartitionsToTxnManager do: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH
        ("producers expect to handle INVALID_PRODUCER_EPOCH in this scenario"), a pending transition or a missing
        coordinator becomes NOT_ENOUGH_REPLICAS ("unable to verify the partition has been added to the
        transaction"), so the producer retries its batch. `broker`: where the request arrived (Cluster sends it)."""

        def answer(error: str | None = None, **_: object) -> None:
            if error == "PRODUCER_FENCED":
                error = "INVALID_PRODUCER_EPOCH"
            elif error in (
                "CONCURRENT_TRANSACTIONS",
                "COORDINATOR_LOAD_IN_PROGRESS",
                "COORDINATOR_NOT_AVAILABLE",
                "NOT_COORDINATOR",
                "NETWORK_EXCEPTION",
            ):
                error = "NOT_ENOUGH_REPLICAS"
            reply(error)

        self._add_partitions(broker, transactional_id, producer_id, epoch, frozenset({partition}), answer, TV_2)

    @staticmethod
    def _versioned(api: str, version: int | None, reply: Reply) -> Reply:
        """KafkaApis' sendResponseCallback: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for old versions."""

        def answer(error: str | None = None, **result: object) -> None:
            reply(for_version(api, version, error), **result)

        return answer

    def verify_partition(
        self, transactional_id: str, producer_id: int, epoch: int, partition: str, produce_version: int | None = None
    ) -> str | None:
        """handleVerifyPartitionsInTransaction as a partition leader's Produce path uses it for a TV1 client
        (KIP-890 part 1, verifyOnly), with the leader's translation of the answer (ReplicaManager /
        AddPartitionsToTxnManager). `produce_version`: the client's Produce version; from v11 (kafka-clients 3.8+)
        KafkaApis asks for the genericError operation and TRANSACTION_ABORTABLE goes out as it is, older versions
        (librdkafka's v10) get INVALID_TXN_STATE."""
        st = self.partitions[self.partition_for(transactional_id)]
        if st.leader is None or st.loading or not self.c.broker_up(st.leader):
            return "NOT_ENOUGH_REPLICAS"
        md = self.cache.get(transactional_id)
        if md is None or md.producer_id != producer_id:
            return "INVALID_PRODUCER_ID_MAPPING"
        if md.producer_epoch != epoch:
            return "INVALID_PRODUCER_EPOCH"  # PRODUCER_FENCED, as producers expect it on Produce
        if md.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return "NOT_ENOUGH_REPLICAS"  # CONCURRENT_TRANSACTIONS, made retriable for older clients
        if partition in md.partitions:
            return None
        return "TRANSACTION_ABORTABLE" if produce_version is not None and produce_version > 10 else "INVALID_TXN_STATE"

    def in_transaction(self, transactional_id: str, producer_id: int, epoch: int, partition: str) -> str | None:
        """The leader's last check before it appends a TV2 batch it had the coordinator add (the verification guard
        of UnifiedLog.append): still the same producer, epoch and open transaction holding the partition."""
        md = self.cache.get(transactional_id)
        if md is None or md.producer_id != producer_id or md.producer_epoch != epoch:
            return "INVALID_PRODUCER_EPOCH"
        if md.state != ONGOING or partition not in md.partitions:
            return "INVALID_TXN_STATE"
        return None

    # -- EndTxn -----------------------------------------------------------------------------------------------
    def handle_end_txn(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        commit: bool,
        reply: Reply,
        *,
        version: int | None = None,
    ) -> None:
        """KafkaApis.handleEndTxnRequest: EndTxn v5+ is a TV2 client's (isTransactionV2Enabled), answered with the
        producer id and epoch to continue with; a 3.9 cluster has no v5."""
        client_tv = TV_2 if self.kafka == "4" and version is not None and version >= 5 else TV_0
        answer = self._versioned("EndTxn", version, reply)
        if client_tv >= TV_2:
            self._end_transaction(broker, transactional_id, producer_id, epoch, commit, True, client_tv, answer)
        else:
            self._end_transaction(
                broker, transactional_id, producer_id, epoch, commit, True, client_tv, lambda err, **res: answer(err)
            )

    def _end_transaction(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        commit: bool,
        from_client: bool,
        client_tv: int,
        callback: Callable[..., None],
    ) -> None:
        """TransactionCoordinator.endTransaction: the TV2 path for EndTxn v5+ and for the coordinator's own aborts
        on a 4.x cluster, endTransactionWithTV1 otherwise."""
        if client_tv >= TV_2:
            self._end_transaction_v2(broker, transactional_id, producer_id, epoch, commit, from_client, callback)
        else:
            self._end_transaction_v1(broker, transactional_id, producer_id, epoch, commit, from_client, callback)

    def _end_transaction_v1(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        commit: bool,
        from_client: bool,
        callback: Callable[..., None],
    ) -> None:
        error, st = self._lookup(broker, transactional_id)
        if error:
            callback(error)
            return
        md = self.cache.get(transactional_id)
        if md is None:
            callback("INVALID_PRODUCER_ID_MAPPING")
            return
        # strict equality for the client's requests: they never bump the epoch
        valid_epoch = (not from_client or epoch == md.producer_epoch) and epoch >= md.producer_epoch
        fencing = md.pending_state == PREPARE_EPOCH_FENCE
        if md.producer_id != producer_id:
            callback("INVALID_PRODUCER_ID_MAPPING")
            return
        if not valid_epoch:
            callback("PRODUCER_FENCED")
            return
        if md.pending_state is not None and not fencing:
            callback("CONCURRENT_TRANSACTIONS")
            return
        state = md.state
        if state == ONGOING:
            target = PREPARE_COMMIT if commit else PREPARE_ABORT
            if target == PREPARE_ABORT and fencing:
                # the fence: the bumped epoch takes effect in memory now and is what the markers carry
                md.pending_state = None
                md.producer_epoch = epoch
                md.last_producer_epoch = NO_PRODUCER_EPOCH
            transit = md.prepare_abort_or_commit(target, self.c.now_ms, TV_0)
        elif state == COMPLETE_COMMIT:
            callback(None if commit else "INVALID_TXN_STATE")
            return
        elif state == COMPLETE_ABORT:
            callback(None if not commit else "INVALID_TXN_STATE")
            return
        elif state == PREPARE_COMMIT:
            callback("CONCURRENT_TRANSACTIONS" if commit else "INVALID_TXN_STATE")
            return
        elif state == PREPARE_ABORT:
            callback("CONCURRENT_TRANSACTIONS" if not commit else "INVALID_TXN_STATE")
            return
        elif state == EMPTY:
            callback("INVALID_TXN_STATE")
            return
        else:
            raise IllegalStateError(f"found transactional id {transactional_id} in state {state}")

        def after_prepare(err: str | None) -> None:
            if err:
                if fencing and self.cache.get(transactional_id) is md:
                    md.has_failed_epoch_fence = True
                callback(err)
                return
            # answer first, then send the markers: commit returning does not mean the data is readable yet
            callback(None)
            self._send_markers(md, st)

        self._append(md, transit, st, after_prepare)

    def _end_transaction_v2(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        commit: bool,
        from_client: bool,
        callback: Callable[..., None],
    ) -> None:
        """endTransaction for TV2. A retry is told apart from the next EndTxn by its epoch: one behind the bumped
        epoch (retryOnEpochBump) or the last epoch of a producer id rotated away (retryOnOverflow):

                          Abort: retry / current    Commit: retry / current
            Empty         PRODUCER_FENCED / bump    PRODUCER_FENCED / INVALID_TXN_STATE
            CompleteAbort NONE / bump               INVALID_TXN_STATE / INVALID_TXN_STATE
            CompleteCommit INVALID_TXN_STATE / bump NONE / INVALID_TXN_STATE
        """
        error, st = self._lookup(broker, transactional_id)
        if error:
            callback(error)
            return
        md = self.cache.get(transactional_id)
        if md is None:
            callback("INVALID_PRODUCER_ID_MAPPING")
            return
        fencing = md.pending_state == PREPARE_EPOCH_FENCE
        retry_on_overflow = (
            not fencing and md.previous_producer_id == producer_id and epoch == SHORT_MAX - 1 and md.producer_epoch == 0
        )
        retry_on_bump = not fencing and md.producer_epoch == epoch + 1
        if fencing:
            valid_epoch = (not from_client or epoch == md.producer_epoch) and epoch >= md.producer_epoch
        elif md.state in (PREPARE_COMMIT, PREPARE_ABORT):
            valid_epoch = retry_on_bump
        elif md.state in (COMPLETE_COMMIT, COMPLETE_ABORT):
            valid_epoch = retry_on_bump or retry_on_overflow or epoch == md.producer_epoch
        else:  # Ongoing, Empty: the same epoch means the next EndTxn, not a retry
            valid_epoch = epoch == md.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if md.producer_id != producer_id and not retry_on_overflow:
            callback("INVALID_PRODUCER_ID_MAPPING")
            return
        if md.pending_state is not None and not fencing:
            # KAFKA-18464: the previous transaction is still completing; wait for it instead of self-fencing
            callback("CONCURRENT_TRANSACTIONS")
            return
        if not valid_epoch:
            callback("PRODUCER_FENCED")
            return

        def current() -> None:
            callback(None, producer_id=md.producer_id, producer_epoch=md.producer_epoch)

        def complete_with(target: str, no_partition_added: bool) -> Transit:
            # a new producer id when this bump uses up the epochs (since KAFKA-20090 for a fence too)
            next_pid = self.c.generate_producer_id(broker) if is_epoch_exhausted(md.producer_epoch) else NO_PRODUCER_ID
            if fencing:
                # KAFKA-19367: the fence's bump is the abort's own; the epoch is not raised twice
                md.pending_state = None
                md.last_producer_epoch = NO_PRODUCER_EPOCH
            return md.prepare_abort_or_commit(target, self.c.now_ms, TV_2, next_pid, no_partition_added)

        state = md.state
        if state == ONGOING:
            transit = complete_with(PREPARE_COMMIT if commit else PREPARE_ABORT, False)
        elif state == COMPLETE_COMMIT:
            if commit:
                if is_retry:
                    current()
                else:
                    callback("INVALID_TXN_STATE")
                return
            if is_retry:
                callback("INVALID_TXN_STATE")
                return
            transit = complete_with(PREPARE_ABORT, True)
        elif state == COMPLETE_ABORT:
            if not commit:
                if is_retry:
                    current()
                    return
                transit = complete_with(PREPARE_ABORT, True)
            else:
                callback("INVALID_TXN_STATE")
                return
        elif state == PREPARE_COMMIT:
            callback("CONCURRENT_TRANSACTIONS" if commit else "INVALID_TXN_STATE")
            return
        elif state == PREPARE_ABORT:
            callback("CONCURRENT_TRANSACTIONS" if not commit else "INVALID_TXN_STATE")
            return
        elif state == EMPTY:
            if commit:
                callback("INVALID_TXN_STATE")
                return
            transit = complete_with(PREPARE_ABORT, True)
        else:
            raise IllegalStateError(f"found transactional id {transactional_id} in state {state}")

        def after_prepare(err: str | None) -> None:
            if err:
                callback(err)  # KAFKA-19367 follow-up: no failed-fence bookkeeping, the epoch was not raised
                return
            # the answer names what the client continues with: the completion's producer id and epoch (a new
            # producer id at epoch 0 after an overflow), TransactionCoordinator's newPreSendMetadata
            rotated = md.next_producer_id != NO_PRODUCER_ID
            callback(
                None,
                producer_id=md.next_producer_id if rotated else md.producer_id,
                producer_epoch=0 if rotated else md.producer_epoch,
            )
            self._send_markers(md, st)

        self._append(md, transit, st, after_prepare)

    # -- markers ----------------------------------------------------------------------------------------------
    def _send_markers(self, md: TransactionMetadata, st: TxnPartitionState) -> None:
        """addTxnMarkersToSend: the completion is prepared first (its pending state keeps other requests waiting,
        CONCURRENT_TRANSACTIONS), then one WriteTxnMarkers per leader carries the transaction's producer id and
        its current epoch (for TV2 the bumped one; after an overflow still the old producer id at 32767)."""
        control = "COMMIT" if md.state == PREPARE_COMMIT else "ABORT"
        coordinator_epoch = st.coordinator_epoch
        txid = md.transactional_id
        waiting = set(md.partitions)
        producer_id, epoch = md.producer_id, md.producer_epoch
        completion = md.prepare_complete(self.c.now_ms)
        self._emit_pending(md, completion)

        def still_current() -> bool:
            return (
                self.cache.get(txid) is md
                and st.coordinator_epoch == coordinator_epoch
                and md.state in (PREPARE_COMMIT, PREPARE_ABORT)
            )

        def on_result(partition: str, error: str | None) -> None:
            if not still_current():
                return
            if error is None:
                waiting.discard(partition)
                md.partitions.discard(partition)
                if not waiting:
                    self._append(md, completion, st, lambda err: None, announce=False)
            elif error in ("INVALID_PRODUCER_EPOCH", "TRANSACTION_COORDINATOR_FENCED"):
                return  # TransactionMarkerRequestCompletionHandler: stop sending for this transaction
            else:
                self.c.scheduler.after(
                    self.c.marker_retry_backoff_ms,
                    lambda: (
                        still_current()
                        and self.c.send_markers(
                            st.leader, txid, producer_id, epoch, control, coordinator_epoch, [partition], on_result
                        )
                    ),
                    label=f"marker retry {txid} {partition}",
                )

        if not waiting:
            self._append(md, completion, st, lambda err: None, announce=False)
            return
        self.c.send_markers(st.leader, txid, producer_id, epoch, control, coordinator_epoch, sorted(waiting), on_result)

    # -- periodic tasks ---------------------------------------------------------------------------------------
    def timed_out(self, broker: int, now_ms: int) -> list[TransactionMetadata]:
        """timedOutTransactions: Ongoing, no pending transition, txnStartTimestamp + timeout < now."""
        out = []
        for md in self.cache.values():
            st = self.partitions[self.partition_for(md.transactional_id)]
            if st.leader != broker or st.loading:
                continue
            if md.pending_state is None and md.state == ONGOING and md.txn_start_ms + md.txn_timeout_ms < now_ms:
                out.append(md)
        return out

    def next_timeout_ms(self, broker: int) -> int | None:
        """The earliest time at which the abort scan of `broker` would find a timed-out transaction."""
        times = [
            md.txn_start_ms + md.txn_timeout_ms + 1
            for md in self.cache.values()
            if md.state == ONGOING and self.partitions[self.partition_for(md.transactional_id)].leader == broker
        ]
        return min(times) if times else None

    def next_expiry_ms(self, broker: int) -> int | None:
        times = [
            md.txn_last_update_ms + self.expiration_ms
            for md in self.cache.values()
            if md.state in EXPIRATION_ALLOWED
            and self.partitions[self.partition_for(md.transactional_id)].leader == broker
        ]
        return min(times) if times else None

    def _wake_scans(self, md: TransactionMetadata, broker: int | None) -> None:
        if md.state == ONGOING:
            self.c.wake_scans(broker, md.txn_start_ms + md.txn_timeout_ms + 1, None)
        elif md.state in EXPIRATION_ALLOWED:
            self.c.wake_scans(broker, None, md.txn_last_update_ms + self.expiration_ms)

    def abort_timed_out_transactions(self, broker: int) -> None:
        for md in self.timed_out(broker, self.c.now_ms):
            transit = md.prepare_fence_producer_epoch()
            self._emit_pending(md, transit)
            # "since this is not from client, use server TV" (abortTimedOutTransactions)
            self._end_transaction(
                broker,
                md.transactional_id,
                transit.producer_id,
                transit.producer_epoch,
                commit=False,
                from_client=False,
                client_tv=self.server_tv,
                callback=lambda err, **_: None,
            )

    def expirable(self, broker: int, now_ms: int) -> list[TransactionMetadata]:
        out = []
        for md in self.cache.values():
            st = self.partitions[self.partition_for(md.transactional_id)]
            if st.leader != broker or st.loading:
                continue
            if (
                md.pending_state is None
                and md.state in EXPIRATION_ALLOWED
                and md.txn_last_update_ms <= now_ms - self.expiration_ms
            ):
                out.append(md)
        return out

    def remove_expired_transactional_ids(self, broker: int) -> None:
        for md in self.expirable(broker, self.c.now_ms):
            st = self.partitions[self.partition_for(md.transactional_id)]
            self._append(md, md.prepare_dead(), st, lambda err: None)

    # -- leadership -------------------------------------------------------------------------------------------
    def on_leader_change(self, partition: int, leader: int | None, load_ms: int) -> None:
        """onResignation of the old leader (drop the cache) and onElection of the new one (load, resume)."""
        st = self.partitions[partition]
        for txid in [t for t in self.cache if self.partition_for(t) == partition]:
            del self.cache[txid]
        st.leader = leader
        st.coordinator_epoch += 1
        if leader is None:
            st.loading = False
            return
        st.loading = True
        epoch = st.coordinator_epoch

        def loaded() -> None:
            if st.leader != leader or st.coordinator_epoch != epoch:
                return
            st.loading = False
            resumed = []
            for txid, rec in sorted(st.records.items()):
                md = self._new_metadata(
                    txid,
                    rec.producer_id,
                    rec.producer_epoch,
                    rec.txn_timeout_ms,
                    rec.state,
                    last_producer_epoch=rec.last_producer_epoch,
                    previous_producer_id=rec.prev_producer_id,
                    partitions=set(rec.partitions),
                    txn_start_ms=rec.txn_start_ms,
                    txn_last_update_ms=rec.txn_last_update_ms,
                    next_producer_id=rec.next_producer_id,
                    client_tv=rec.client_tv,
                )
                self.cache[txid] = md
                self._wake_scans(md, leader)
                if md.state in (PREPARE_COMMIT, PREPARE_ABORT):
                    resumed.append(txid)
            if st.records and load_ms > 0:  # a failover of a partition that holds transactional ids
                self.c.emit(
                    ev.CoordinatorLoad,
                    txn_partition=partition,
                    broker=leader,
                    coordinator_epoch=epoch,
                    resumed=tuple(resumed),
                )
            for txid in resumed:
                self._send_markers(self.cache[txid], st)

        if load_ms <= 0:
            loaded()
        else:
            self.c.scheduler.after(load_ms, loaded, label=f"load __transaction_state-{partition}")

    def snapshot(self, transactional_id: str) -> dict | None:
        md = self.cache.get(transactional_id)
        p = self.partition_for(transactional_id)
        st = self.partitions[p]
        if md is None:
            rec = st.records.get(transactional_id)
            if rec is None:
                return None
            md = self._new_metadata(
                transactional_id,
                rec.producer_id,
                rec.producer_epoch,
                rec.txn_timeout_ms,
                rec.state,
                partitions=set(rec.partitions),
                txn_start_ms=rec.txn_start_ms,
                txn_last_update_ms=rec.txn_last_update_ms,
            )
        return {
            "state": md.state,
            "producer_id": md.producer_id,
            "epoch": md.producer_epoch,
            "partitions": sorted(md.partitions),
            "timeout_ms": md.txn_timeout_ms,
            "coordinator_partition": p,
            "coordinator_broker": st.leader,
            "txn_start_time_ms": md.txn_start_ms if md.txn_start_ms >= 0 else None,
            "pending_state": md.pending_state,
            "last_update_time_ms": md.txn_last_update_ms,
        }

    def known_ids(self) -> list[str]:
        ids = set(self.cache)
        for st in self.partitions:
            ids.update(st.records)
        return sorted(ids)
