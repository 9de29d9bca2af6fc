"""The transaction coordinator's state: the `__transaction_state` partitions (who leads each, its coordinator epoch,
what is durably written there), the in-memory cache of transactional ids' metadata, writing a transition to the log,
loading a partition on election, and what the periodic scans would find.

Follows core/src/main/scala/kafka/coordinator/transaction/TransactionStateManager.scala (appendTransactionToLog,
loadTransactionsForTxnTopicPartition, removeTransactionsForTxnTopicPartition, timedOutTransactions, the expiry of
transactional ids, partitionFor) and TransactionLog.scala (the record's layout, for its size).

The coordinator is one logical object for the cluster; which broker answers for a transactional id is the leader of
its `__transaction_state` partition. What is durable (the last value per transactional id, per partition) is kept
apart from the in-memory cache, so a new leader can load it and resume Prepare* transactions. Pure: effects out,
nothing called (effects.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from playground.engine import events as ev
from playground.sim.effects import Effect, Effects, Emit
from playground.sim.placement import partition_for
from playground.sim.producerids import ProducerIdManager
from playground.sim.txnstate import (
    DEAD,
    EXPIRATION_ALLOWED,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    TV_0,
    TV_2,
    TransactionMetadata,
    Transit,
)

# Broker defaults (TransactionStateManagerConfig / TransactionLogConfig), overridable through the cluster config.
DEFAULTS = {
    "transaction.state.log.num.partitions": 50,
    "offsets.topic.num.partitions": 50,
    "transaction.max.timeout.ms": 900_000,
    "transactional.id.expiration.ms": 604_800_000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10_000,
    "transaction.remove.expired.transaction.cleanup.interval.ms": 3_600_000,
}

# Bytes a record costs on the log besides key and value: the v2 record batch header (61) plus the record's own
# varint framing (about 9). The cost scenario only needs the order of magnitude.
RECORD_OVERHEAD_BYTES = 70


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


@dataclass
class TxnPartitionState:
    """One `__transaction_state` partition: who leads it, its coordinator epoch, and what is durably written."""

    partition: int
    leader: int | None = None
    coordinator_epoch: int = 0
    loading: bool = False
    # transactional id -> last durable value (a Transit); compaction keeps only this
    records: dict[str, Transit] = field(default_factory=dict)


class AppendJob:
    """A transition written to `__transaction_state`, waiting for the followers: completed by
    `TransactionStateManager.complete`, then `then` (the coordinator's continuation, None for none) goes on."""

    __slots__ = ("broker", "coordinator_epoch", "md", "size", "st", "then", "transit")

    def __init__(
        self,
        md: TransactionMetadata,
        transit: Transit,
        st: TxnPartitionState,
        size: int,
        then: object,
    ) -> None:
        self.md = md
        self.transit = transit
        self.st = st
        self.coordinator_epoch = st.coordinator_epoch
        self.broker = st.leader
        self.size = size
        self.then = then


@dataclass(frozen=True, slots=True)
class AppendTxnState(Effect):
    """Write to the `__transaction_state` partition led by `broker`; once its followers have the record, give `job`
    back (TransactionCoordinator.txn_state_appended)."""

    broker: int | None
    transactional_id: str
    job: AppendJob


@dataclass(frozen=True, slots=True)
class WakeScans(Effect):
    """A transactional id got a new deadline: the periodic scans of `broker` must look by then (None: no change)."""

    broker: int | None
    timeout_at_ms: int | None
    expiry_at_ms: int | None


class TransactionStateManager:
    def __init__(self, config: Mapping[str, Any], *, kafka: str, brokers: Iterable[int]) -> None:
        cfg = config
        # "3.9" or "4": the release decides the transition table and how the coordinator aborts on its own (a 4.x
        # cluster runs with transaction.version=2 finalized, so its timeout and fencing aborts take the TV2 path)
        self.kafka = kafka
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
        self.producer_ids = ProducerIdManager()
        # the brokers that are up (the cluster says when one stops or starts)
        self.live_brokers: set[int] = set(brokers)
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

    def broker_up(self, broker: int | None) -> bool:
        return broker is not None and broker in self.live_brokers

    def lookup(self, broker: int, transactional_id: str) -> tuple[str | None, TxnPartitionState]:
        st = self.partitions[self.partition_for(transactional_id)]
        if st.leader != broker or not self.broker_up(broker):
            return "NOT_COORDINATOR", st
        if st.loading:
            return "COORDINATOR_LOAD_IN_PROGRESS", st
        return None, st

    def metadata(self, transactional_id: str) -> TransactionMetadata | None:
        return self.cache.get(transactional_id)

    def new_metadata(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        timeout_ms: int,
        state: str,
        *,
        last_producer_epoch: int = NO_PRODUCER_EPOCH,
        previous_producer_id: int = NO_PRODUCER_ID,
        partitions: set[str] | None = None,
        txn_start_ms: int = -1,
        txn_last_update_ms: int = 0,
        next_producer_id: int = NO_PRODUCER_ID,
        client_tv: int = TV_0,
    ) -> TransactionMetadata:
        return TransactionMetadata(
            transactional_id,
            producer_id,
            epoch,
            timeout_ms,
            state,
            last_producer_epoch=last_producer_epoch,
            previous_producer_id=previous_producer_id,
            partitions=set() if partitions is None else partitions,
            txn_start_ms=txn_start_ms,
            txn_last_update_ms=txn_last_update_ms,
            next_producer_id=next_producer_id,
            client_tv=client_tv,
            kafka=self.kafka,
        )

    # -- writing __transaction_state --------------------------------------------------------------------------
    @staticmethod
    def pending_event(md: TransactionMetadata, transit: Transit) -> Emit:
        return Emit(
            ev.TxnPending,
            {
                "transactional_id": md.transactional_id,
                "state": md.state,
                "pending_state": transit.state,
                "producer_id": transit.producer_id,
                "epoch": transit.producer_epoch,
            },
        )

    def append(
        self,
        md: TransactionMetadata,
        transit: Transit,
        st: TxnPartitionState,
        then: object,
        *,
        announce: bool = True,
    ) -> Effects:
        """appendTransactionToLog: write the value (durable at once in this model); `complete` finishes the
        transition once followers have it. `announce=False`: the pending state was announced when it was prepared
        (the completion, prepared before the markers)."""
        txid = md.transactional_id
        effects: Effects = [self.pending_event(md, transit)] if announce else []
        if transit.state == DEAD:
            st.records.pop(txid, None)
            size = record_bytes(txid, None)
        else:
            st.records[txid] = transit
            size = record_bytes(txid, transit.partitions)
        self.records_written += 1
        self.bytes_written += size
        self.records_by_id[txid] = self.records_by_id.get(txid, 0) + 1
        effects.append(AppendTxnState(st.leader, txid, AppendJob(md, transit, st, size, then)))
        return effects

    def complete(self, job: AppendJob) -> tuple[str | None, Effects]:
        """The followers have the record: complete the transition, unless this broker lost the partition meanwhile
        (then NOT_COORDINATOR)."""
        st, md, transit, broker = job.st, job.md, job.transit, job.broker
        txid = md.transactional_id
        if st.leader != broker or st.coordinator_epoch != job.coordinator_epoch or not self.broker_up(broker):
            return "NOT_COORDINATOR", []
        if self.cache.get(txid) is not md:
            return "NOT_COORDINATOR", []
        from_state = md.state
        md.complete_transition(transit)
        if transit.state == DEAD:
            del self.cache[txid]
            fields = {
                "transactional_id": txid,
                "producer_id": md.producer_id,
                "epoch": md.producer_epoch,
                "record_bytes": job.size,
            }
            return None, [Emit(ev.TxnExpired, fields)]
        state = Emit(
            ev.TxnState,
            {
                "transactional_id": txid,
                "from_state": from_state,
                "to_state": md.state,
                "producer_id": md.producer_id,
                "epoch": md.producer_epoch,
                "partitions": tuple(sorted(md.partitions)),
                "coordinator_broker": broker,
                "persisted": True,
                "record_bytes": job.size,
            },
        )
        return None, [state, *self.wake_scans(md, broker)]

    # -- what the periodic scans would find -------------------------------------------------------------------
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

    def wake_scans(self, md: TransactionMetadata, broker: int | None) -> Effects:
        if md.state == ONGOING:
            return [WakeScans(broker, md.txn_start_ms + md.txn_timeout_ms + 1, None)]
        if md.state in EXPIRATION_ALLOWED:
            return [WakeScans(broker, None, md.txn_last_update_ms + self.expiration_ms)]
        return []

    # -- leadership -------------------------------------------------------------------------------------------
    def resign_and_elect(self, partition: int, leader: int | None) -> TxnPartitionState:
        """onResignation of the old leader (drop the cache) and the start of onElection of the new one (loading,
        under a new coordinator epoch)."""
        st = self.partitions[partition]
        for txid in [t for t in self.cache if self.partition_for(t) == partition]:
            del self.cache[txid]
        st.leader = leader
        st.coordinator_epoch += 1
        st.loading = leader is not None
        return st

    def load(self, st: TxnPartitionState, leader: int) -> tuple[list[str], Effects]:
        """loadTransactionsForTxnTopicPartition: the cache from what is durable. Returns the transactional ids
        found in PrepareCommit/PrepareAbort (their markers must be sent again) and the scans to wake."""
        st.loading = False
        resumed = []
        effects: Effects = []
        for txid, rec in sorted(st.records.items()):
            md = self.new_metadata(
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
            effects.extend(self.wake_scans(md, leader))
            if md.state in (PREPARE_COMMIT, PREPARE_ABORT):
                resumed.append(txid)
        return resumed, effects

    # -- reads ------------------------------------------------------------------------------------------------
    def snapshot(self, transactional_id: str) -> dict[str, Any] | None:
        md = self.cache.get(transactional_id)
        p = self.partition_for(transactional_id)
        st = self.partitions[p]
        if md is None:
            rec = st.records.get(transactional_id)
            if rec is None:
                return None
            md = self.new_metadata(
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
