"""The partition leaders: topics and their partitions (replicas, leader, log), and what a leader does with a request:
Produce (the checks of log.py, then KIP-890's transaction verification), Fetch (a long poll), ListOffsets and
WriteTxnMarkers, with its followers catching up behind every append (the high watermark moves after the replication
delay; acks=all is answered then).

Follows core/src/main/scala/kafka/server/ReplicaManager.scala (appendRecords, fetchMessages,
maybeStartTransactionVerificationForPartition), AddPartitionsToTxnManager.scala, DelayedFetch.scala, and
KafkaApis.scala (handleListOffsetRequest, handleWriteTxnMarkersRequest).

`kafka` names the release ("3.5", "3.9" or "4"). How a leader treats a transactional batch of a producer that has no
transaction open on the partition differs by release:
- Kafka 3.5: it appends it, and the batch opens a transaction on the partition whatever the coordinator knows
  (UnifiedLog.append -> ProducerAppendInfo at 3.5.2: no verification exists). A stray or late batch of a producer
  whose transaction is over starts a transaction nothing ever ends: a hanging transaction, holding the LSO until an
  operator aborts it (`kafka-transactions.sh abort`, Cluster.admin_abort).
- Kafka 3.6+ (3.9 here), for a TV1 client: KIP-890 part 1. The leader asks the coordinator first whether the
  partition is in the producer's ongoing transaction (ReplicaManager.maybeStartTransactionVerificationForPartitions
  -> AddPartitionsToTxnManager, verifyOnly) and refuses the batch when not; with the broker setting
  `transaction.partition.verification.enable=false` it skips that ("Skip verification if the request is not
  transactional or transaction verification is disabled") and the append guard (UnifiedLog
  .batchMissingRequiredVerification reads the same setting): 3.5's behaviour.
- Kafka 4.x for a TV2 client (Produce v12+): no AddPartitionsToTxn before it; the leader adds the partition to the
  transaction itself (addPartition operation, one AddPartitionsToTxn v5 with verifyOnly=false), then appends; a
  batch whose epoch is older than the partition's is refused before asking (KAFKA-18042). This happens whatever
  `transaction.partition.verification.enable` says (4.x ReplicaManager: `!transactionSupportedOperation
  .supportsEpochBump && !transactionPartitionVerificationEnable`); only the append guard follows the setting. TV1
  clients on 4.x keep part 1's verify-only check, under the same setting as on 3.9.

Placement is deterministic and easy to predict: partition p of every topic (and of `__transaction_state` and
`__consumer_offsets`) has replicas [b(p), b(p+1), ...] with b(i) = the (i mod brokers)-th broker, so orders-0 is
led by broker 1, orders-1 by broker 2, ... (who leads after a broker stops: cluster.py).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from playground.engine import events as ev
from playground.sim.brokers import Brokers
from playground.sim.coordinator import TransactionCoordinator
from playground.sim.effects import Effects, Reply
from playground.sim.groups import GroupCoordinator
from playground.sim.log import PartitionLog
from playground.sim.placement import setting_true

TXN_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = (TXN_TOPIC, OFFSETS_TOPIC)


class PartitionMeta:
    __slots__ = ("leader", "leader_epoch", "log", "name", "partition", "replicas", "topic")

    def __init__(self, topic: str, partition: int, replicas: tuple[int, ...]) -> None:
        self.name = f"{topic}-{partition}"
        self.topic = topic
        self.partition = partition
        self.replicas = replicas
        self.leader: int | None = replicas[0] if replicas else None
        self.leader_epoch = 0
        self.log: PartitionLog | None = None


class PartitionLeaders(Brokers):
    """The brokers as partition leaders. The coordinators are the cluster's (cluster.py): a leader asks the
    transaction coordinator (KIP-890's checks), and hands what the coordinators return to `_carry_out`."""

    txn_coordinator: TransactionCoordinator
    groups: GroupCoordinator

    def __init__(
        self,
        brokers: int,
        config: Mapping[str, Any] | None,
        seed: int,
        *,
        on_event: Callable[[ev.Event], None] | None,
        keep_events: bool,
        kafka: str,
    ) -> None:
        super().__init__(brokers, config, seed, on_event=on_event, keep_events=keep_events)
        self.kafka = kafka
        # KIP-890 part 1's check on the produce path: 3.6+ only, on unless the broker setting turns it off
        self.verification = kafka != "3.5" and setting_true(
            self.config.get("transaction.partition.verification.enable", True)
        )
        self.replication_factor = int(self.config.get("sim.replication.factor", min(3, brokers)))
        # the user topics' min.insync.replicas (Kafka's default 1): an acks=all write with fewer replicas in sync is
        # refused before the append (Partition.appendRecordsToLeader: NotEnoughReplicasException). Here a replica
        # is in sync while its broker is up (the followers keep up; leaders.py has no replica.lag.time.max.ms)
        self.min_insync_replicas = int(self.config.get("min.insync.replicas", 1))
        self.marker_retry_backoff_ms = int(self.config.get("sim.marker.retry.backoff.ms", 100))
        self.markers_written = 0
        self.partitions: dict[str, PartitionMeta] = {}
        self.topics: dict[str, int] = {}
        self._watermarks: dict[str, tuple[int, int, int]] = {}
        self._parked: dict[str, list[Callable[..., bool]]] = {}  # long-polling fetches per partition
        # While one Produce request is handled (one_produce_request): the partitions of its TV2 batches waiting to
        # be added to their transactions, by (broker, transactional id, producer id, epoch)
        self._tv2_adds: dict[tuple[int, str, int, int], list[tuple[str, Callable[[str | None], None]]]] | None = None

    def _carry_out(self, source: TransactionCoordinator | GroupCoordinator, effects: Effects) -> None:
        """What a coordinator returned, carried out: Cluster._carry_out."""
        raise NotImplementedError

    def discard(self) -> None:
        super().discard()
        self._parked.clear()  # long-polling fetches: their checks refer back to the leaders

    # -- topology ---------------------------------------------------------------------------------------------
    def _replicas(self, partition: int, replication_factor: int | None = None) -> tuple[int, ...]:
        n = len(self.broker_ids)
        count = self.replication_factor if replication_factor is None else replication_factor
        return tuple(self.broker_ids[(partition + i) % n] for i in range(count))

    def create_topic(self, name: str, partitions: int, replication_factor: int | None = None) -> None:
        """A topic of `partitions` partitions, each on `replication_factor` brokers (the cluster's default
        replication factor when None)."""
        if name in self.topics:
            raise ValueError(f"topic {name!r} already exists")
        if partitions < 1:
            raise ValueError(f"topic {name!r} needs at least one partition")
        if replication_factor is not None and not 1 <= replication_factor <= len(self.broker_ids):
            raise ValueError(
                f"topic {name!r}: replication factor {replication_factor} on {len(self.broker_ids)} brokers"
            )
        self.topics[name] = partitions
        for p in range(partitions):
            meta = PartitionMeta(name, p, self._replicas(p, replication_factor))
            meta.log = PartitionLog(name, p)
            self.partitions[meta.name] = meta

    def add_partitions(self, name: str, total: int) -> None:
        """CreatePartitions: the topic grows to `total` partitions, the new ones placed as a new topic's would be
        (with the replication factor of its partition 0)."""
        count = self.topics.get(name)
        if count is None or name in INTERNAL_TOPICS:
            raise ValueError(f"no topic {name!r} to add partitions to")
        if total <= count:
            raise ValueError(f"topic {name!r} has {count} partitions; {total} would not be an increase")
        replication = len(self.partitions[f"{name}-0"].replicas)
        for p in range(count, total):
            meta = PartitionMeta(name, p, self._replicas(p, replication))
            meta.log = PartitionLog(name, p)
            self.partitions[meta.name] = meta
        self.topics[name] = total

    def delete_topic(self, name: str) -> None:
        """DeleteTopics: the topic's partitions and their logs go. A fetch waiting on one of them is answered
        UNKNOWN_TOPIC_OR_PARTITION when its wait ends; a transaction marker still owed to one is dropped (send_markers),
        as Kafka's marker channel skips partitions that no longer exist."""
        if name not in self.topics or name in INTERNAL_TOPICS:
            raise ValueError(f"no topic {name!r} to delete")
        for p in range(self.topics.pop(name)):
            tp = f"{name}-{p}"
            self.partitions.pop(tp, None)
            self._watermarks.pop(tp, None)
            self._parked.pop(tp, None)

    def _create_internal_topic(self, name: str, partitions: int) -> None:
        self.topics[name] = partitions
        for p in range(partitions):
            meta = PartitionMeta(name, p, self._replicas(p))
            self.partitions[meta.name] = meta  # logs are created when first written

    def partition_count(self, topic: str) -> int:
        return self.topics.get(topic, 0)

    def user_topics(self) -> list[str]:
        return [t for t in self.topics if t not in INTERNAL_TOPICS]

    def leader_of(self, partition: str) -> int | None:
        meta = self.partitions.get(partition)
        return meta.leader if meta else None

    def log(self, partition: str) -> PartitionLog:
        meta = self.partitions[partition]
        if meta.log is None:
            meta.log = PartitionLog(meta.topic, meta.partition)
        return meta.log

    # -- partition leader: appends and replication ------------------------------------------------------------
    def after_append(
        self,
        log: PartitionLog,
        result: Any,
        producer_id: int,
        epoch: int,
        transactional: bool,
        values: Sequence[Any],
        sequence: int = -1,
        then: Callable[[], None] | None = None,
        client_id: str | None = None,
    ) -> None:
        """Announce an append and let followers catch up: the high watermark moves after the replication delay
        (acks=all answers then)."""
        if not result.duplicate:
            self.emit(
                ev.Append,
                partition=log.name,
                base_offset=result.base_offset,
                count=len(values),
                producer_id=producer_id,
                epoch=epoch,
                sequence=sequence,
                transactional=transactional,
                values=values,
                client_id=client_id,
            )
            self.emit_watermarks(log)
        self.replicate(log, result.last_offset + 1, then)

    def replicate(self, log: PartitionLog, upto: int, then: Callable[[], None] | None = None) -> None:
        leader = self.leader_of(log.name)

        def caught_up() -> None:
            if log.advance_high_watermark(upto):
                self.emit_watermarks(log)
            if then is not None:
                then()

        self.scheduler.after(self.replication_ms(leader), caught_up, label=f"replicate {log.name}")

    def emit_watermarks(self, log: PartitionLog) -> None:
        marks = (log.high_watermark, log.last_stable_offset, log.log_end_offset)
        if self._watermarks.get(log.name) != marks:
            self._watermarks[log.name] = marks
            parked = self._parked.get(log.name)
            if parked:
                self._parked[log.name] = [check for check in parked if not check()]
            if not log.topic.startswith("__"):
                self.emit(
                    ev.Watermarks,
                    partition=log.name,
                    high_watermark=marks[0],
                    last_stable_offset=marks[1],
                    log_end_offset=marks[2],
                )

    def _leader_log(self, broker: int, partition: str, reply: Callable[..., None]) -> PartitionLog | None:
        """The partition's log when `broker` leads it; otherwise answer the request as a broker would and None."""
        meta = self.partitions.get(partition)
        if meta is None:
            reply("UNKNOWN_TOPIC_OR_PARTITION")
            return None
        if meta.leader != broker:
            reply("NOT_LEADER_OR_FOLLOWER")
            return None
        return self.log(partition)

    # -- Produce, Fetch, ListOffsets --------------------------------------------------------------------------
    def handle_produce(
        self,
        broker: int,
        partition: str,
        transactional_id: str | None,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        transactional: bool,
        values: Sequence[Any],
        keys: Sequence[Any] | None,
        acks: int,
        reply: Callable[..., None],
        client_id: str | None = None,
        version: int | None = None,
    ) -> None:
        """`version`: the client's Produce version (librdkafka 10, kafka-clients 3.9 11, kafka-clients 4.x with
        TV2 12+). It decides how a failed verification reads, and on a 4.x cluster whether the leader adds the
        partition to the transaction itself."""
        log = self._leader_log(broker, partition, reply)
        if log is None:
            return
        if acks == -1 and self.below_min_isr(partition, log.topic):
            reply("NOT_ENOUGH_REPLICAS")
            return
        if transactional and transactional_id and self.kafka == "4" and version is not None and version >= 12:
            self._produce_tv2(
                broker, log, transactional_id, producer_id, epoch, base_sequence, values, keys, acks, reply, client_id
            )
            return
        verify = None
        if transactional and transactional_id and self.verification:
            tc = self.txn_coordinator
            verify = functools.partial(_verify_partition, tc, transactional_id, partition, version)
        result = log.append(
            producer_id, epoch, base_sequence, transactional, values, keys, timestamp_ms=self.now_ms, verify=verify
        )
        self._answer_produce(
            log, result, producer_id, epoch, base_sequence, transactional, values, acks, reply, client_id
        )

    def _answer_produce(
        self,
        log: PartitionLog,
        result: Any,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        transactional: bool,
        values: Sequence[Any],
        acks: int,
        reply: Callable[..., None],
        client_id: str | None,
    ) -> None:
        if result.error:
            reply(result.error)
            return

        def answer() -> None:
            reply(None, base_offset=result.base_offset, duplicate=result.duplicate)

        # acks=all is answered once the followers have the batch (the high watermark passed it); acks=1 by the
        # leader right away; acks=0 never.
        self.after_append(
            log,
            result,
            producer_id,
            epoch,
            transactional,
            values,
            base_sequence,
            then=answer if acks not in (0, 1) else None,
            client_id=client_id,
        )
        if acks == 1:
            answer()

    @contextlib.contextmanager
    def one_produce_request(self) -> Iterator[None]:
        """The batches handed to handle_produce inside are one Produce request's: the partitions its TV2 batches
        need added to their transactions are added together, one AddPartitionsToTxn per transaction, once the
        request's batches have all been looked at (ReplicaManager.appendRecords collects them for
        AddPartitionsToTxnManager.addOrVerifyTransaction). Added one by one, every partition after the first found
        the coordinator busy writing the first (CONCURRENT_TRANSACTIONS, answered NOT_ENOUGH_REPLICAS) and its
        batch was retried: a franz-go producer writing to 30 partitions took a retry round per partition."""
        if self._tv2_adds is not None:
            yield  # nested: the outer request gathers
            return
        self._tv2_adds = {}
        try:
            yield
        finally:
            gathered, self._tv2_adds = self._tv2_adds, None
            for (broker, txid, pid, epoch), waiting in gathered.items():
                src = f"leader {', '.join(p for p, _added in waiting)}(b{broker})"
                self._add_partitions_to_txn(broker, src, txid, pid, epoch, waiting)

    def _produce_tv2(
        self,
        broker: int,
        log: PartitionLog,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        values: Sequence[Any],
        keys: Sequence[Any] | None,
        acks: int,
        reply: Callable[..., None],
        client_id: str | None,
    ) -> None:
        """A TV2 client's transactional batch: join the transaction through the coordinator unless this producer
        already has a transaction open here at this epoch (UnifiedLog.hasOngoingTransaction(producerId, epoch)),
        then append. A late batch of an earlier transaction carries the epoch before the bump, so either the
        partition refuses it (its producer state holds the newer epoch) or the coordinator does: it can no longer
        land in the next transaction."""
        tc = self.txn_coordinator
        entry = log.producers.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            reply("INVALID_PRODUCER_EPOCH")  # KAFKA-18042: rejected before the coordinator is asked
            return
        if entry is not None and entry.epoch == epoch and entry.current_txn_first_offset is not None:
            result = log.append(producer_id, epoch, base_sequence, True, values, keys, timestamp_ms=self.now_ms)
            self._answer_produce(log, result, producer_id, epoch, base_sequence, True, values, acks, reply, client_id)
            return
        partition = log.name

        def added(error: str | None) -> None:
            if self.leader_of(partition) != broker or not self.broker_up(broker):
                reply("NOT_LEADER_OR_FOLLOWER")
                return
            if error == "_TRANSPORT":
                error = "NOT_ENOUGH_REPLICAS"  # NETWORK_EXCEPTION: "unable to verify the partition has been added"
            if error:
                reply(error)
                return

            # the verification guard: the transaction that took the partition must still be the one appending
            # (only with transaction.partition.verification.enable: UnifiedLog.batchMissingRequiredVerification)
            def guard(pid: int, e: int) -> str | None:
                return tc.in_transaction(transactional_id, pid, e, partition)

            result = log.append(
                producer_id,
                epoch,
                base_sequence,
                True,
                values,
                keys,
                timestamp_ms=self.now_ms,
                verify=guard if self.verification else None,
            )
            self._answer_produce(log, result, producer_id, epoch, base_sequence, True, values, acks, reply, client_id)

        if self._tv2_adds is not None:
            self._tv2_adds.setdefault((broker, transactional_id, producer_id, epoch), []).append((partition, added))
            return
        src = f"leader {partition}(b{broker})"
        self._add_partitions_to_txn(broker, src, transactional_id, producer_id, epoch, [(partition, added)])

    def _add_partitions_to_txn(
        self,
        broker: int,
        src: str,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        waiting: list[tuple[str, Callable[[str | None], None]]],
    ) -> None:
        """AddPartitionsToTxnManager: the broker (a partition leader for a TV2 Produce, the group coordinator for a
        TV2 TxnOffsetCommit) has the transaction coordinator add the partitions to the transaction, one
        inter-broker request; each partition's `added(error)` runs when the answer is back here (NOT_ENOUGH_REPLICAS
        at once without a live coordinator). The coordinator adds them together, so one error answers them all."""
        tc = self.txn_coordinator
        partitions = frozenset(p for p, _added in waiting)

        def added(error: str | None) -> None:
            for _p, then in waiting:
                then(error)

        coordinator = tc.coordinator_of(transactional_id)
        if coordinator is None or not self.broker_up(coordinator):
            added("NOT_ENOUGH_REPLICAS")
            return

        def handler(at: int, answer: Reply) -> None:
            effects = tc.add_partitions_for_leader(
                at, transactional_id, producer_id, epoch, partitions, answer, now_ms=self.now_ms
            )
            self._carry_out(tc, effects)

        self.rpc(
            "AddPartitionsToTxn",
            src,
            coordinator,
            f"coordinator(b{coordinator})",
            f"{', '.join(p for p, _added in waiting)}, producer {producer_id} epoch {epoch} (verifyOnly=false)",
            handler,
            lambda error, result: added(error),
            src_alive=lambda: self.broker_up(broker),
            src_broker=broker,
            version=5,
        )

    def handle_fetch(
        self,
        broker: int,
        partition: str,
        offset: int,
        isolation_level: str,
        max_records: int | None,
        reply: Callable[..., None],
        max_wait_ms: int = 0,
    ) -> None:
        """A Fetch is a long poll (DelayedFetch): with nothing readable at `offset` (below the LSO for
        read_committed, the high watermark otherwise) the leader holds it until something is, or until
        `max_wait_ms` (librdkafka's fetch.wait.max.ms, 500) has passed."""
        log = self._leader_log(broker, partition, reply)
        if log is None:
            return

        def readable() -> bool:
            upper = log.last_stable_offset if isolation_level == "read_committed" else log.high_watermark
            return upper > offset

        def answer() -> None:
            records, position = log.fetch(offset, isolation_level, max_records)
            reply(
                None,
                records=records,
                position=position,
                high_watermark=log.high_watermark,
                last_stable_offset=log.last_stable_offset,
            )

        if max_wait_ms <= 0 or readable():
            answer()
            return
        parked = self._parked.setdefault(partition, [])
        done = [False]

        def check(expired: bool = False) -> bool:
            if done[0]:
                return True
            if expired or readable():
                done[0] = True
                if partition not in self.partitions:
                    reply("UNKNOWN_TOPIC_OR_PARTITION")  # its topic was deleted meanwhile
                elif self.leader_of(partition) == broker and self.broker_up(broker):
                    answer()
                return True
            return False

        parked.append(check)
        self.scheduler.after(max_wait_ms, lambda: check(expired=True), label=f"fetch wait {partition}")

    def handle_list_offsets(
        self, broker: int, partition: str, latest: bool, isolation_level: str, reply: Callable[..., None]
    ) -> None:
        meta = self.partitions.get(partition)
        if meta is None or meta.leader != broker:
            reply("NOT_LEADER_OR_FOLLOWER")
            return
        log = self.log(partition)
        if not latest:
            reply(None, offset=log.log_start_offset)
        else:
            reply(None, offset=log.last_stable_offset if isolation_level == "read_committed" else log.high_watermark)

    # -- transaction markers ----------------------------------------------------------------------------------
    def below_min_isr(self, partition: str, topic: str) -> bool:
        """Partition.appendRecordsToLeader: an acks=all write, a transaction marker included, is refused
        (NotEnoughReplicasException) while fewer replicas are in sync than the min ISR. From Kafka 3.7 the min ISR
        is capped at the partition's replica count (apache/kafka#14594); Kafka 3.5 holds a one-replica topic to
        min.insync.replicas=2, so it refuses every marker to it and the transaction stays in PrepareAbort or
        PrepareCommit, retried for ever (seen on a real 3.5.2; 3.9.1 and 4.4.0 write it). Internal topics are left
        out: nothing here gives them fewer replicas than their min ISR."""
        if self.min_insync_replicas <= 1 or topic.startswith("__"):
            return False
        replicas = self.partitions[partition].replicas
        needed = self.min_insync_replicas if self.kafka == "3.5" else min(self.min_insync_replicas, len(replicas))
        return sum(1 for b in replicas if self.broker_up(b)) < needed

    def handle_write_txn_markers(
        self,
        broker: int,
        producer_id: int,
        epoch: int,
        control: str,
        coordinator_epoch: int,
        partitions: list[str],
        reply: Reply,
    ) -> None:
        """WriteTxnMarkers at a partition leader (the coordinator's marker channel sends it, and so does an admin's
        `kafka-transactions.sh abort`): append each partition's COMMIT/ABORT marker, answer once the followers have
        them all, with `errors` per partition."""
        errors: dict[str, str | None] = {}
        written: list[tuple[PartitionLog, int]] = []
        for tp in partitions:
            if tp not in self.partitions:
                errors[tp] = "UNKNOWN_TOPIC_OR_PARTITION"
                continue
            if self.leader_of(tp) != broker:
                errors[tp] = "NOT_LEADER_OR_FOLLOWER"
                continue
            log = self.log(tp)
            if self.below_min_isr(tp, log.topic):  # the coordinator writes markers with acks=all
                errors[tp] = "NOT_ENOUGH_REPLICAS"
                continue
            result = log.append_marker(producer_id, epoch, control, coordinator_epoch, self.now_ms)
            errors[tp] = result.error
            if result.error is None:
                self.markers_written += 1
                self.emit(
                    ev.Marker,
                    partition=tp,
                    offset=result.base_offset,
                    control=control,
                    producer_id=producer_id,
                    epoch=epoch,
                    coordinator_epoch=coordinator_epoch,
                )
                self.emit_watermarks(log)
                if log.topic == OFFSETS_TOPIC:
                    self._carry_out(self.groups, self.groups.on_marker(tp, producer_id, control))
                written.append((log, result.base_offset + 1))
        if not written:
            reply(None, errors=errors)
            return
        pending = [len(written)]

        def one_caught_up() -> None:
            pending[0] -= 1
            if pending[0] == 0:
                reply(None, errors=errors)

        for log, upto in written:
            self.replicate(log, upto, one_caught_up)

    def send_markers(
        self,
        coordinator: int | None,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        control: str,
        coordinator_epoch: int,
        partitions: list[str],
        on_result: Callable[[str, str | None], None],
    ) -> None:
        """TransactionMarkerChannelManager: one WriteTxnMarkers request per partition leader."""
        if coordinator is None or not self.broker_up(coordinator):
            return
        by_leader: dict[int | None, list[str]] = {}
        for tp in partitions:
            by_leader.setdefault(self.leader_of(tp), []).append(tp)
        incarnation = self.brokers[coordinator].incarnation

        def coordinator_alive() -> bool:
            return self.broker_up(coordinator) and self.brokers[coordinator].incarnation == incarnation

        for leader, tps in by_leader.items():
            if leader is None:
                for tp in tps:
                    if tp not in self.partitions:
                        # TransactionMarkerChannelManager: "these partitions are likely deleted already and hence
                        # can be skipped": the transaction completes without them
                        def deleted(tp: str = tp) -> None:
                            if coordinator_alive():
                                on_result(tp, None)

                        self.scheduler.after(0, deleted, label=f"marker {tp}: topic deleted")
                        continue

                    def no_leader(tp: str = tp) -> None:
                        if coordinator_alive():
                            on_result(tp, "NOT_LEADER_OR_FOLLOWER")

                    self.scheduler.after(self.marker_retry_backoff_ms, no_leader, label=f"marker {tp} has no leader")
                continue
            self._send_marker_request(
                coordinator,
                leader,
                transactional_id,
                producer_id,
                epoch,
                control,
                coordinator_epoch,
                tps,
                on_result,
                coordinator_alive,
            )

    def _send_marker_request(
        self,
        coordinator: int,
        leader: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        control: str,
        coordinator_epoch: int,
        tps: list[str],
        on_result: Callable[[str, str | None], None],
        coordinator_alive: Callable[[], bool],
    ) -> None:
        def handler(broker: int, reply: Reply) -> None:
            self.handle_write_txn_markers(broker, producer_id, epoch, control, coordinator_epoch, tps, reply)

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            errors: dict[str, str | None] = result["errors"] if error is None else dict.fromkeys(tps, error)
            for tp in tps:
                on_result(tp, errors.get(tp))

        self.rpc(
            "WriteTxnMarkers",
            f"coordinator(b{coordinator})",
            leader,
            f"leader {','.join(tps)}(b{leader})",
            f"{control} producer {producer_id} epoch {epoch} -> {', '.join(tps)}",
            handler,
            on_response,
            src_alive=coordinator_alive,
            src_broker=coordinator,
        )


def _verify_partition(
    tc: TransactionCoordinator, transactional_id: str, partition: str, version: int | None, producer_id: int, epoch: int
) -> str | None:
    error = tc.verify_partition(transactional_id, producer_id, epoch, partition, version is not None and version > 10)
    # the Produce path makes it retriable for older clients (ReplicaManager); a TxnOffsetCommit answers it as it is
    return "NOT_ENOUGH_REPLICAS" if error == "CONCURRENT_TRANSACTIONS" else error
