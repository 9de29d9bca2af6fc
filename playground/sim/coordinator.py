"""The transaction coordinator, as Kafka 3.9 and Kafka 4.x run it: the classic protocol (TV1) and transaction
protocol version 2 (KIP-890 part 2, TV2). This module is its request handling and its periodic and leadership
work; the pieces it is built from each have their own:
- txnstate.py: the states, the transition table of each release, TransactionMetadata's prepare*/complete
  transitions (shared by both protocols);
- txnlog.py: `__transaction_state` and the cache (TransactionStateManager);
- endtxn.py: EndTxn, TV1 and TV2 each apart;
- markers.py: WriteTxnMarkers to the partition leaders (TransactionMarkerChannelManager);
- replies.py: how an answer reaches who waits for it (KafkaApis' translation per request version).

Follows core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala (handleInitProducerId,
handleAddPartitionsToTransaction, handleVerifyPartitionsInTransaction, endTransaction, abortTimedOutTransactions,
onElection/onResignation), with TransactionStateManager.scala and TransactionMarkerChannelManager.scala beneath it.

A state machine in the h11 style (effects.py): every input (a request with its reply, a completed
`__transaction_state` append, a marker's result, a timer, a scan's tick, a leader change, a broker stopping or
starting) returns the effects the cluster carries out, and the coordinator never calls the cluster. Clients reach it
through the cluster's request methods (Cluster.handle_init_producer_id, ...).

Every change follows Kafka's pattern: prepare a transition (the metadata gets a *pending state*; other requests
now get CONCURRENT_TRANSACTIONS), append the new value to `__transaction_state` (acks=all), then complete the
transition. EndTxn is answered right after PrepareCommit/PrepareAbort is durable, before any marker is written.

Error codes on the wire follow KafkaApis: the requests take the request's ApiVersion, and a stale epoch
(PRODUCER_FENCED in the coordinator) goes out as INVALID_PRODUCER_EPOCH to versions older than KIP-588's
(AddPartitionsToTxn/AddOffsetsToTxn/EndTxn < 2, InitProducerId < 4): librdkafka 2.x sends AddPartitionsToTxn v0,
AddOffsetsToTxn v0 and EndTxn v1, so a fenced librdkafka producer sees 47, never 90, from those three; kafka-clients
3.9/4.x send newer versions and see 90.

Kafka 4.x (the cluster formatted with transaction.version=2) differs in these ways, each selected by `kafka`:
- the transition table (TransactionState.java): PrepareAbort may also be entered from Empty, CompleteCommit and
  CompleteAbort, the empty abort a TV2 client may send when unsure of the server's state;
- EndTxn v5+ (the client's TV2) and the coordinator's own aborts (transaction timeout, InitProducerId fencing an
  Ongoing transaction, which use the server's transaction.version) take the TV2 path of endtxn.py;
- partitions join a transaction through the partition leader (Produce v12+, TxnOffsetCommit v5+): the leader sends
  AddPartitionsToTxn (verifyOnly=false) on the client's behalf; there is no client AddPartitionsToTxn/AddOffsetsToTxn;
- AddPartitionsToTxn checks the pending transition first (KAFKA-18660), so a new transaction's request meets
  CONCURRENT_TRANSACTIONS, not a self-fence, while the previous one completes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from playground.engine import events as ev
from playground.sim import endtxn, markers
from playground.sim.effects import Effects, Emit, Reply, Timer
from playground.sim.placement import java_string_hash, kafka_abs, partition_for
from playground.sim.replies import NOBODY, AfterFence, LeaderRequester, Requester, Waiter, for_version
from playground.sim.txnlog import DEFAULTS, AppendJob, TransactionStateManager, TxnPartitionState, record_bytes
from playground.sim.txnstate import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    DEAD,
    EMPTY,
    EXPIRATION_ALLOWED,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    PREPARE_EPOCH_FENCE,
    SHORT_MAX,
    STATE_IDS,
    TRANSITIONS,
    TRANSITIONS_4,
    TRANSITIONS_BY_KAFKA,
    TV_0,
    TV_2,
    IllegalStateError,
    TransactionMetadata,
    Transit,
    is_epoch_exhausted,
    transitions_for,
)

# The transaction coordinator's vocabulary, importable from here (the dashboard draws transitions_for's table).
__all__ = [
    "COMPLETE_ABORT",
    "COMPLETE_COMMIT",
    "DEAD",
    "DEFAULTS",
    "EMPTY",
    "EXPIRATION_ALLOWED",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "ONGOING",
    "PREPARE_ABORT",
    "PREPARE_COMMIT",
    "PREPARE_EPOCH_FENCE",
    "SHORT_MAX",
    "STATE_IDS",
    "TRANSITIONS",
    "TRANSITIONS_4",
    "TRANSITIONS_BY_KAFKA",
    "TV_0",
    "TV_2",
    "IllegalStateError",
    "LoadDone",
    "TransactionCoordinator",
    "TransactionMetadata",
    "Transit",
    "TxnPartitionState",
    "Written",
    "for_version",
    "is_epoch_exhausted",
    "java_string_hash",
    "kafka_abs",
    "partition_for",
    "record_bytes",
    "transitions_for",
]


@dataclass(frozen=True, slots=True)
class Written:
    """What follows a `__transaction_state` write that a request waits for: answer it (with the producer id and epoch
    the transactional id has then, for InitProducerId)."""

    waiter: Waiter
    with_producer_id: bool = False


@dataclass(frozen=True, slots=True)
class LoadDone:
    """A timer's tick: the new leader of a `__transaction_state` partition has loaded it."""

    partition: int
    leader: int
    coordinator_epoch: int


class TransactionCoordinator(TransactionStateManager):
    """The requests and the coordinator's own work; the state they change is TransactionStateManager's."""

    def __init__(
        self, config: Mapping[str, Any], *, kafka: str, brokers: Iterable[int], marker_retry_backoff_ms: int
    ) -> None:
        super().__init__(config, kafka=kafka, brokers=brokers)
        self.marker_retry_backoff_ms = marker_retry_backoff_ms

    # -- brokers ----------------------------------------------------------------------------------------------
    def broker_stopped(self, broker: int) -> None:
        self.live_brokers.discard(broker)
        self.producer_ids.broker_stopped(broker)

    def broker_started(self, broker: int) -> None:
        self.live_brokers.add(broker)

    # -- InitProducerId ---------------------------------------------------------------------------------------
    def init_producer_id(
        self,
        broker: int,
        transactional_id: str | None,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        reply: Reply,
        *,
        version: int | None = None,
        now_ms: int,
    ) -> Effects:
        self.init_producer_id_calls += 1
        requester = Requester(reply, "InitProducerId", version)
        if transactional_id is None:
            # idempotent producer: a new producer id, epoch 0, nothing persisted
            return requester.answer(None, producer_id=self.producer_ids.generate(broker), producer_epoch=0)
        if transactional_id == "":
            return requester.answer("INVALID_REQUEST")
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            return requester.answer("INVALID_TRANSACTION_TIMEOUT")
        error, st = self.lookup(broker, transactional_id)
        if error:
            return requester.answer(error)
        md = self.cache.get(transactional_id)
        if md is None:
            md = self.new_metadata(
                transactional_id,
                self.producer_ids.generate(broker),
                NO_PRODUCER_EPOCH,
                timeout_ms,
                EMPTY,
                txn_last_update_ms=now_ms,
            )
            self.cache[transactional_id] = md
        result = self._prepare_init_transit(md, timeout_ms, expected, broker, now_ms)
        if isinstance(result, str):
            return requester.answer(result)
        transit = result
        if transit.state == PREPARE_EPOCH_FENCE:
            # abort the ongoing transaction first and let the client retry (it will bump the epoch once more);
            # "since this is not from client, use server TV" (TransactionCoordinator.handleInitProducerId)
            abort = endtxn.end_transaction(
                self,
                broker,
                transactional_id,
                transit.producer_id,
                transit.producer_epoch,
                commit=False,
                from_client=False,
                client_tv=self.server_tv,
                waiter=AfterFence(requester),
                now_ms=now_ms,
            )
            return [self.pending_event(md, transit), *abort]
        return self.append(md, transit, st, Written(requester, with_producer_id=True))

    def _prepare_init_transit(
        self, md: TransactionMetadata, timeout_ms: int, expected: tuple[int, int] | None, broker: int, now_ms: int
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
                    self.producer_ids.generate(broker), timeout_ms, now_ms, expected is not None
                )
            return md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1], now_ms)
        if md.state == ONGOING:
            return md.prepare_fence_producer_epoch()
        raise IllegalStateError(f"found transactional id {md.transactional_id} in state {md.state}")

    # -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------------------------
    def add_partitions(
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
        now_ms: int,
    ) -> Effects:
        """A client's AddPartitionsToTxn (v0-3), or (client_tv=TV_2) a partition leader's AddPartitionsToTxn v5
        with verifyOnly=false, sent on a TV2 client's behalf for its Produce / TxnOffsetCommit."""
        requester = Requester(reply, "AddPartitionsToTxn", version)
        return self._add_partitions(
            broker, transactional_id, producer_id, epoch, partitions, requester, client_tv, now_ms
        )

    def add_offsets(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        offsets_partition: str,
        reply: Reply,
        *,
        version: int | None = None,
        now_ms: int,
    ) -> Effects:
        """AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction (the cluster names it,
        as KafkaApis.handleAddOffsetsToTxnRequest asks the group coordinator)."""
        requester = Requester(reply, "AddOffsetsToTxn", version)
        return self._add_partitions(
            broker, transactional_id, producer_id, epoch, frozenset({offsets_partition}), requester, TV_0, now_ms
        )

    def add_partitions_for_leader(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: frozenset[str],
        reply: Reply,
        *,
        now_ms: int,
    ) -> Effects:
        """What a partition leader's AddPartitionsToTxnManager gets back for a TV2 Produce (the partitions of one
        request) / TxnOffsetCommit (addPartition operation): the coordinator adds the partitions (writing Ongoing),
        and the leader reads the answer as replies.LeaderRequester says, so that the producer retries its batches
        where Kafka's would. `broker`: where the request arrived."""
        waiter = LeaderRequester(reply)
        return self._add_partitions(broker, transactional_id, producer_id, epoch, partitions, waiter, TV_2, now_ms)

    def _add_partitions(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: frozenset[str],
        waiter: Waiter,
        client_tv: int,
        now_ms: int,
    ) -> Effects:
        """TransactionCoordinator.handleAddPartitionsToTransaction."""
        error, st = self.lookup(broker, transactional_id)
        if error:
            return waiter.answer(error)
        md = self.cache.get(transactional_id)
        pending = md is not None and md.pending_state is not None
        if md is None:
            return waiter.answer("INVALID_PRODUCER_ID_MAPPING")
        if pending and self.kafka == "4":
            # 4.x checks the pending transition first (KAFKA-18660): a TV2 producer may already use the producer id
            # of a completion that is still pending (epoch overflow), and must wait rather than be refused
            return waiter.answer("CONCURRENT_TRANSACTIONS")
        if md.producer_id != producer_id:
            return waiter.answer("INVALID_PRODUCER_ID_MAPPING")
        if md.producer_epoch != epoch:
            return waiter.answer("PRODUCER_FENCED")
        if pending or md.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return waiter.answer("CONCURRENT_TRANSACTIONS")
        if md.state == ONGOING and partitions <= md.partitions:
            return waiter.answer(None)  # already in: nothing written
        return self.append(md, md.prepare_add_partitions(partitions, now_ms, client_tv), st, Written(waiter))

    # -- what a partition leader asks (queries: nothing changes) ----------------------------------------------
    def verify_partition(
        self, transactional_id: str, producer_id: int, epoch: int, partition: str, generic_error: bool = False
    ) -> str | None:
        """handleVerifyPartitionsInTransaction as a partition leader's Produce path, or a group coordinator's
        TxnOffsetCommit path, uses it for a TV1 client (KIP-890 part 1, verifyOnly), with the broker's translation of
        the answer (ReplicaManager / AddPartitionsToTxnManager). `generic_error`: the request asked for the
        genericError operation (Produce v11+, kafka-clients 3.8+; TxnOffsetCommit v4+), and TRANSACTION_ABORTABLE goes
        out as it is; older versions (librdkafka's Produce v10) get INVALID_TXN_STATE."""
        st = self.partitions[self.partition_for(transactional_id)]
        if st.leader is None or st.loading or not self.broker_up(st.leader):
            return "NOT_ENOUGH_REPLICAS"
        error = self._verify_error(transactional_id, producer_id, epoch)
        if error == "PRODUCER_FENCED":
            return "INVALID_PRODUCER_EPOCH"  # AddPartitionsToTxnManager: as producers expect it
        if error or partition in self.cache[transactional_id].partitions:
            return error
        return "TRANSACTION_ABORTABLE" if generic_error else "INVALID_TXN_STATE"

    def verify_partitions(
        self, broker: int, transactional_id: str, producer_id: int, epoch: int, partitions: list[str]
    ) -> dict[str, str | None]:
        """TransactionCoordinator.handleVerifyPartitionsInTransaction as the coordinator answers AddPartitionsToTxn
        v4+ with verifyOnly (what partition leaders send): each partition None when the producer's transaction holds
        it, else TRANSACTION_ABORTABLE; one error for all when the transaction cannot be checked."""
        if not transactional_id:
            return dict.fromkeys(partitions, "INVALID_REQUEST")
        error, _st = self.lookup(broker, transactional_id)
        error = error or self._verify_error(transactional_id, producer_id, epoch)
        if error:
            return dict.fromkeys(partitions, error)
        held = self.cache[transactional_id].partitions
        return {p: None if p in held else "TRANSACTION_ABORTABLE" for p in partitions}

    def _verify_error(self, transactional_id: str, producer_id: int, epoch: int) -> str | None:
        """Why a transaction cannot be verified (pending transitions are not looked at: the append checks last)."""
        md = self.cache.get(transactional_id)
        if md is None or md.producer_id != producer_id:
            return "INVALID_PRODUCER_ID_MAPPING"
        if md.producer_epoch != epoch:
            return "PRODUCER_FENCED"
        if md.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return "CONCURRENT_TRANSACTIONS"
        return None

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
    def end_txn(
        self,
        broker: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        commit: bool,
        reply: Reply,
        *,
        version: int | None = None,
        now_ms: int,
    ) -> Effects:
        """KafkaApis.handleEndTxnRequest: EndTxn v5+ is a TV2 client's (isTransactionV2Enabled), answered with the
        producer id and epoch to continue with; a 3.9 cluster has no v5."""
        client_tv = TV_2 if self.kafka == "4" and version is not None and version >= 5 else TV_0
        requester = Requester(reply, "EndTxn", version)
        return endtxn.end_transaction(
            self, broker, transactional_id, producer_id, epoch, commit, True, client_tv, requester, now_ms
        )

    # -- what the log, the markers and the timers report ------------------------------------------------------
    def txn_state_appended(self, job: AppendJob, now_ms: int) -> Effects:
        """The followers have a `__transaction_state` record (or this broker lost the partition meanwhile)."""
        error, effects = self.complete(job)
        then = job.then
        if isinstance(then, Written):
            md = job.md
            if error is None and then.with_producer_id:
                return effects + then.waiter.answer(None, producer_id=md.producer_id, producer_epoch=md.producer_epoch)
            return effects + then.waiter.answer(error)
        if isinstance(then, endtxn.EndTxnPrepared):
            return effects + endtxn.prepared(self, then, job, error, now_ms)
        return effects

    def marker_result(self, job: markers.MarkerJob, partition: str, error: str | None, now_ms: int) -> Effects:
        return markers.marker_result(self, job, partition, error, now_ms, self.marker_retry_backoff_ms)

    def on_timer(self, tick: object, now_ms: int) -> Effects:
        if isinstance(tick, markers.MarkerRetry):
            return markers.marker_retry(self, tick)
        if isinstance(tick, LoadDone):
            return self._loaded(tick, now_ms, announce=True)
        raise IllegalStateError(f"the transaction coordinator set no timer {tick!r}")

    # -- periodic tasks ---------------------------------------------------------------------------------------
    def abort_timed_out_transactions(self, broker: int, now_ms: int) -> Effects:
        effects: Effects = []
        for md in self.timed_out(broker, now_ms):
            transit = md.prepare_fence_producer_epoch()
            effects.append(self.pending_event(md, transit))
            # "since this is not from client, use server TV" (abortTimedOutTransactions)
            effects += endtxn.end_transaction(
                self,
                broker,
                md.transactional_id,
                transit.producer_id,
                transit.producer_epoch,
                commit=False,
                from_client=False,
                client_tv=self.server_tv,
                waiter=NOBODY,
                now_ms=now_ms,
            )
        return effects

    def remove_expired_transactional_ids(self, broker: int, now_ms: int) -> Effects:
        effects: Effects = []
        for md in self.expirable(broker, now_ms):
            st = self.partitions[self.partition_for(md.transactional_id)]
            effects += self.append(md, md.prepare_dead(), st, None)
        return effects

    # -- leadership -------------------------------------------------------------------------------------------
    def on_leader_change(self, partition: int, leader: int | None, load_ms: int, now_ms: int) -> Effects:
        """onResignation of the old leader (drop the cache) and onElection of the new one (load, resume)."""
        st = self.resign_and_elect(partition, leader)
        if leader is None:
            return []
        tick = LoadDone(partition, leader, st.coordinator_epoch)
        if load_ms <= 0:
            return self._loaded(tick, now_ms, announce=False)
        return [Timer(now_ms + load_ms, f"load __transaction_state-{partition}", tick)]

    def _loaded(self, tick: LoadDone, now_ms: int, *, announce: bool) -> Effects:
        st = self.partitions[tick.partition]
        if st.leader != tick.leader or st.coordinator_epoch != tick.coordinator_epoch:
            return []
        resumed, effects = self.load(st, tick.leader)
        if st.records and announce:  # a failover of a partition that holds transactional ids
            fields = {
                "txn_partition": tick.partition,
                "broker": tick.leader,
                "coordinator_epoch": tick.coordinator_epoch,
                "resumed": tuple(resumed),
            }
            effects.append(Emit(ev.CoordinatorLoad, fields))
        for txid in resumed:
            effects += markers.send_markers(self, self.cache[txid], st, now_ms)
        return effects
