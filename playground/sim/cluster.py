"""The simulated cluster: brokers, topics and partition leaders, RPCs in virtual time, the transaction and group
coordinators, the periodic tasks of each broker, and the one place requests come in (Cluster's `handle_*` methods,
listed in its docstring). Requests for a coordinator are routed to it (KafkaApis' part), and what the coordinator
returns (effects.py) is carried out here (`_carry_out`): the coordinators never call the cluster.

Built in layers, each a module: brokers.py (the brokers on a network: liveness, the virtual clock, events, RPC),
leaders.py (topics and partitions, the partition leaders' request handling: Produce, Fetch, ListOffsets,
WriteTxnMarkers), and this one (the coordinators, brokers stopping and starting, the coordinators' requests, the
periodic scans). `kafka` names the release ("3.5", "3.9" or "4"; leaders.py says how they differ on the produce
path).

When a leader stops, the next live replica takes over (all replicas are in sync here); a broker that starts again
does not take leadership back (no preferred-leader rebalance). A new leader of a `__transaction_state` partition is
its transaction coordinator once it has loaded it.

Timing knobs (cluster config, all optional; Kafka itself ignores keys starting with `sim.`):
  sim.latency.ms (1)                 one way, client <-> broker
  sim.interbroker.latency.ms (1)     one way, broker <-> broker (markers)
  sim.broker.N.latency.ms (0)        extra one-way delay for anything to or from broker N
  sim.replication.latency.ms (1)     until followers have an append and the high watermark moves past it
  sim.broker.N.replication.latency.ms  the same for partitions led by broker N (a slow follower)
  sim.coordinator.load.ms (5)        a new coordinator loading its `__transaction_state` partition
  sim.marker.retry.backoff.ms (100)  before a transaction marker is sent again
  sim.replication.factor (min(3, brokers))

Broker settings read here and in leaders.py: transaction.partition.verification.enable (3.6+, default true).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from playground.engine import events as ev
from playground.sim.brokers import PeriodicScan
from playground.sim.clock import Entry
from playground.sim.coordinator import TransactionCoordinator
from playground.sim.effects import Answer, Effects, Emit, Reply, Timer
from playground.sim.groups import AddOffsetsPartition, AppendTxnOffsets, GroupCoordinator, VerifyOffsetsPartition
from playground.sim.groupstate import OffsetMeta
from playground.sim.leaders import INTERNAL_TOPICS, OFFSETS_TOPIC, TXN_TOPIC, PartitionLeaders, PartitionMeta
from playground.sim.markers import SendMarkers
from playground.sim.txnlog import AppendTxnState, WakeScans
from playground.sim.txnstate import TV_0


class Cluster(PartitionLeaders):
    """The simulated cluster. Its requests: `handle_X(broker, <the request's fields>, reply)`, `broker` the one the
    request arrives at, `reply(error: str | None, **result)` its answer (at once, or later in virtual time). A client
    model calls them inside `rpc`, which carries request and answer between client and broker; a Kafka protocol
    server may call them directly. `version`: the request's ApiVersion, where Kafka's answer depends on it.

        handle_produce(broker, partition, transactional_id, producer_id, epoch, base_sequence, transactional, values,
                       keys, acks, reply, client_id=None, version=None)                 -> base_offset, duplicate
        handle_fetch(broker, partition, offset, isolation_level, max_records, reply, max_wait_ms=0)
                                                         -> records, position, high_watermark, last_stable_offset
        handle_list_offsets(broker, partition, latest, isolation_level, reply)                 -> offset
        handle_find_coordinator(key, kind, reply)  (kind "transaction" or "group"; any broker) -> coordinator
        handle_init_producer_id(broker, transactional_id, timeout_ms, expected, reply, version=None)
                                                                                    -> producer_id, producer_epoch
        handle_add_partitions(broker, transactional_id, producer_id, epoch, partitions, reply, version=None)
        handle_add_offsets(broker, transactional_id, producer_id, epoch, group_id, reply, version=None)
        handle_end_txn(broker, transactional_id, producer_id, epoch, commit, reply, version=None)
                                                                  -> (v5+ on 4.x) producer_id, producer_epoch
        handle_join_group(broker, group_id, client_id, topics, reply, instance_id=None)        -> member_id
        handle_leave_group(group_id, member_id)
        handle_offset_commit(broker, group_id, generation, member_id, offsets, reply, instance_id=None, meta=None,
                             too_large=None, version=None)
        handle_txn_offset_commit(broker, group_id, producer_id, epoch, generation, member_id, offsets, reply,
                                 transactional_id=None, version=None, instance_id=None, meta=None, too_large=None)
        handle_offset_fetch(broker, group_id, partitions, require_stable, reply)         -> offsets, meta
        handle_classic_join_group(broker, group_id, member_id, client_id, client_host, session_timeout_ms,
                                  rebalance_timeout_ms, protocol_type, protocols, require_known_member_id, reply,
                                  instance_id=None, supports_skipping_assignment=False)
                     -> member_id, generation_id, protocol_type, protocol_name, leader, skip_assignment,
                        members (the leader's)
        handle_sync_group(broker, group_id, generation, member_id, protocol_type, protocol_name, assignments, reply,
                          instance_id=None)                     -> protocol_type, protocol_name, assignment
        handle_heartbeat(broker, group_id, generation, member_id, reply, instance_id=None)
        handle_classic_leave_group(broker, group_id, leaving, reply)    -> errors (leaving: (member id, instance id))

    `instance_id` is a static member's group.instance.id (KIP-345), None for a dynamic member.

    Produce, Fetch and ListOffsets are the partition leaders' (leaders.py); the rest are routed to the coordinators
    below. GroupCoordinator.assignment (the SyncGroup answer) and the coordinators' other reads are queries.
    The simulator's own consumers join with handle_join_group; clients over the Kafka protocol run the classic group
    protocol (handle_classic_join_group, handle_sync_group, handle_heartbeat, handle_classic_leave_group).
    """

    def __init__(
        self,
        brokers: int = 3,
        config: Mapping[str, Any] | None = None,
        topics: Mapping[str, int] | None = None,
        seed: int = 0,
        *,
        on_event: Callable[[ev.Event], None] | None = None,
        keep_events: bool = True,
        kafka: str = "3.9",
    ) -> None:
        super().__init__(brokers, config, seed, on_event=on_event, keep_events=keep_events, kafka=kafka)
        if kafka not in ("3.5", "3.9", "4"):
            raise ValueError(f"no model of Kafka {kafka!r} (3.5, 3.9 or 4)")
        self.coordinator_load_ms = int(self.config.get("sim.coordinator.load.ms", 5))
        self._scans: dict[tuple[int, str], PeriodicScan] = {}
        # the coordinators: state machines that answer with effects (effects.py), carried out by _carry_out
        self.txn_coordinator = TransactionCoordinator(
            self.config, kafka=kafka, brokers=self.broker_ids, marker_retry_backoff_ms=self.marker_retry_backoff_ms
        )
        self.groups = GroupCoordinator(self.config, kafka=kafka, brokers=self.broker_ids, topics=self.topics)
        for name, count in (topics or {}).items():
            self.create_topic(name, count)
        self._create_internal_topic(OFFSETS_TOPIC, self.groups.num_partitions)
        self._create_internal_topic(TXN_TOPIC, self.txn_coordinator.num_partitions)
        for p in range(self.groups.num_partitions):
            self.groups.on_leader_change(p, self.partitions[f"{OFFSETS_TOPIC}-{p}"].leader)
        for p in range(self.txn_coordinator.num_partitions):
            tc = self.txn_coordinator
            self._carry_out(tc, tc.on_leader_change(p, self.partitions[f"{TXN_TOPIC}-{p}"].leader, 0, self.now_ms))
        for b in self.broker_ids:
            self._start_broker_tasks(b)

    def discard(self) -> None:
        super().discard()
        self._scans.clear()  # each scan's task refers back to the cluster

    # -- brokers up/down --------------------------------------------------------------------------------------
    def stop_broker(self, broker: int) -> None:
        state = self.brokers[broker]
        if not state.up:
            return
        state.up = False
        state.incarnation += 1
        self.txn_coordinator.broker_stopped(broker)  # an unused producer id block is lost with the process
        self.groups.broker_stopped(broker)
        self.emit(ev.Broker, broker=broker, up=False)
        for fail in list(self._outstanding[broker].values()):
            fail()
        self._outstanding[broker].clear()
        for meta in self.partitions.values():
            if meta.leader == broker:
                self._elect(meta)

    def start_broker(self, broker: int) -> None:
        state = self.brokers[broker]
        if state.up:
            return
        state.up = True
        state.incarnation += 1
        self.txn_coordinator.broker_started(broker)
        self.groups.broker_started(broker)
        self.emit(ev.Broker, broker=broker, up=True)
        for meta in self.partitions.values():
            if meta.leader is None and broker in meta.replicas:
                self._elect(meta)
        self._start_broker_tasks(broker)

    def _elect(self, meta: PartitionMeta) -> None:
        new_leader = next((b for b in meta.replicas if self.brokers[b].up), None)
        if new_leader == meta.leader:
            return
        meta.leader = new_leader
        meta.leader_epoch += 1
        if meta.topic not in INTERNAL_TOPICS:  # internal partitions: CoordinatorLoad tells what matters
            self.emit(ev.Leader, partition=meta.name, leader=new_leader, leader_epoch=meta.leader_epoch)
        if meta.topic == TXN_TOPIC:
            tc = self.txn_coordinator
            self._carry_out(tc, tc.on_leader_change(meta.partition, new_leader, self.coordinator_load_ms, self.now_ms))
        elif meta.topic == OFFSETS_TOPIC:
            self.groups.on_leader_change(meta.partition, new_leader)

    def _start_broker_tasks(self, broker: int) -> None:
        tc = self.txn_coordinator
        self._scans[(broker, "abort")] = PeriodicScan(
            self,
            broker,
            tc.abort_interval_ms,
            f"transaction-abort b{broker}",
            lambda: self._carry_out(tc, tc.abort_timed_out_transactions(broker, self.now_ms)),
            lambda t: bool(tc.timed_out(broker, t)),
            lambda: tc.next_timeout_ms(broker),
        )
        self._scans[(broker, "expire")] = PeriodicScan(
            self,
            broker,
            tc.expire_interval_ms,
            f"transactionalId-expiration b{broker}",
            lambda: self._carry_out(tc, tc.remove_expired_transactional_ids(broker, self.now_ms)),
            lambda t: bool(tc.expirable(broker, t)),
            lambda: tc.next_expiry_ms(broker),
        )

    def wake_scans(self, broker: int | None, timeout_at_ms: int | None, expiry_at_ms: int | None) -> None:
        """A transactional id got a new deadline: make sure the scans of its coordinator look in time."""
        if broker is None:
            return
        if timeout_at_ms is not None and (broker, "abort") in self._scans:
            self._scans[(broker, "abort")].wake(timeout_at_ms)
        if expiry_at_ms is not None and (broker, "expire") in self._scans:
            self._scans[(broker, "expire")].wake(expiry_at_ms)

    # -- requests (Produce, Fetch and ListOffsets are the partition leaders': leaders.py) ---------------------
    def handle_find_coordinator(self, key: str, kind: str, reply: Reply) -> None:
        """FindCoordinator as any broker answers it: the leader of the key's __transaction_state (kind
        "transaction") or __consumer_offsets partition, or COORDINATOR_NOT_AVAILABLE while it has none alive."""
        leader = self.txn_coordinator.coordinator_of(key) if kind == "transaction" else self.groups.coordinator_of(key)
        if leader is None or not self.broker_up(leader):
            reply("COORDINATOR_NOT_AVAILABLE")
        else:
            reply(None, coordinator=leader)

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
        """InitProducerId: `transactional_id` None for an idempotent producer; `expected` (producer id, epoch) for
        an epoch bump of a producer that has one (KIP-360)."""
        tc = self.txn_coordinator
        effects = tc.init_producer_id(
            broker, transactional_id, timeout_ms, expected, reply, version=version, now_ms=self.now_ms
        )
        self._carry_out(tc, effects)

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
        """AddPartitionsToTxn (a TV1 client's; client_tv=TV_2: as a partition leader sends it for a TV2 client)."""
        tc = self.txn_coordinator
        effects = tc.add_partitions(
            broker,
            transactional_id,
            producer_id,
            epoch,
            partitions,
            reply,
            version=version,
            client_tv=client_tv,
            now_ms=self.now_ms,
        )
        self._carry_out(tc, effects)

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
        """AddOffsetsToTxn: KafkaApis asks the group coordinator for the group's `__consumer_offsets` partition and
        has the transaction coordinator add it."""
        tc = self.txn_coordinator
        partition = self.groups.offsets_partition(group_id)
        effects = tc.add_offsets(
            broker, transactional_id, producer_id, epoch, partition, reply, version=version, now_ms=self.now_ms
        )
        self._carry_out(tc, effects)

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
        """EndTxn: answered once PrepareCommit/PrepareAbort is durable, before the markers are written; v5+ (TV2,
        on 4.x) with the producer id and epoch the client continues with."""
        tc = self.txn_coordinator
        effects = tc.end_txn(
            broker, transactional_id, producer_id, epoch, commit, reply, version=version, now_ms=self.now_ms
        )
        self._carry_out(tc, effects)

    def handle_join_group(
        self,
        broker: int,
        group_id: str,
        client_id: str,
        topics: tuple[str, ...],
        reply: Reply,
        instance_id: str | None = None,
    ) -> None:
        """JoinGroup (with SyncGroup: the member's assignment is GroupCoordinator.assignment once the group is
        Stable): answered with the new member's id."""
        self._carry_out(
            self.groups, self.groups.join(broker, group_id, client_id, topics, reply, instance_id, self.now_ms)
        )

    def handle_rejoin_group(self, broker: int, group_id: str, member_id: str, reply: Reply) -> None:
        """JoinGroup of a member of the simulator's own consumers, rejoining the rebalance in progress."""
        self._carry_out(self.groups, self.groups.rejoin(broker, group_id, member_id, reply, self.now_ms))

    def handle_leave_group(self, group_id: str, member_id: str) -> None:
        """LeaveGroup, as a consumer that closes sends it (the client models send no RPC: it takes effect at once)."""
        self._carry_out(self.groups, self.groups.leave(group_id, member_id, self.now_ms))

    def member_crashed(self, group_id: str, member_id: str) -> None:
        """Not a request: a consumer's process died, its heartbeats stop; the member is evicted when its session
        times out."""
        self._carry_out(self.groups, self.groups.member_crashed(group_id, member_id, self.now_ms))

    def handle_classic_join_group(
        self,
        broker: int,
        group_id: str,
        member_id: str,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: tuple[tuple[str, bytes], ...],
        require_known_member_id: bool,
        reply: Reply,
        instance_id: str | None = None,
        supports_skipping_assignment: bool = False,
    ) -> None:
        """JoinGroup of the classic protocol (a client over the Kafka protocol); answered when the rebalance
        completes, with the member metadata of every member for the new generation's leader."""
        effects = self.groups.join_group(
            broker,
            group_id,
            member_id,
            client_id,
            client_host,
            session_timeout_ms,
            rebalance_timeout_ms,
            protocol_type,
            protocols,
            require_known_member_id,
            reply,
            self.now_ms,
            instance_id=instance_id,
            supports_skipping_assignment=supports_skipping_assignment,
        )
        self._carry_out(self.groups, effects)

    def handle_sync_group(
        self,
        broker: int,
        group_id: str,
        generation: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
        reply: Reply,
        instance_id: str | None = None,
    ) -> None:
        """SyncGroup: the leader's brings every member's assignment; each member gets its own."""
        effects = self.groups.sync_group(
            broker,
            group_id,
            generation,
            member_id,
            protocol_type,
            protocol_name,
            assignments,
            reply,
            self.now_ms,
            instance_id,
        )
        self._carry_out(self.groups, effects)

    def handle_heartbeat(
        self, broker: int, group_id: str, generation: int, member_id: str, reply: Reply, instance_id: str | None = None
    ) -> None:
        """Heartbeat: keeps a classic member's session; REBALANCE_IN_PROGRESS tells it to rejoin, FENCED_INSTANCE_ID
        that another instance took its group.instance.id."""
        effects = self.groups.heartbeat(broker, group_id, generation, member_id, reply, self.now_ms, instance_id)
        self._carry_out(self.groups, effects)

    def handle_classic_leave_group(
        self, broker: int, group_id: str, leaving: tuple[tuple[str, str | None], ...], reply: Reply
    ) -> None:
        """LeaveGroup of the classic protocol: the members leave at once, the others rebalance."""
        self._carry_out(self.groups, self.groups.leave_group(broker, group_id, leaving, reply, self.now_ms))

    def handle_offset_commit(
        self,
        broker: int,
        group_id: str,
        generation: int,
        member_id: str,
        offsets: dict[str, int],
        reply: Reply,
        instance_id: str | None = None,
        meta: Mapping[str, OffsetMeta] | None = None,
        too_large: Mapping[str, int] | None = None,
        version: int | None = None,
    ) -> None:
        """OffsetCommit (generation -1 and no member id: a consumer without group membership); `meta`: the leader
        epoch and metadata committed with each offset; `too_large`: the offsets not committed for their metadata's
        length (offset.metadata.max.bytes); `version`: the request's."""
        effects = self.groups.commit_offsets(
            broker,
            group_id,
            generation,
            member_id,
            offsets,
            reply,
            instance_id,
            now_ms=self.now_ms,
            meta=meta,
            too_large=too_large,
            version=version,
        )
        self._carry_out(self.groups, effects)

    def handle_txn_offset_commit(
        self,
        broker: int,
        group_id: str,
        producer_id: int,
        epoch: int,
        generation: int,
        member_id: str,
        offsets: dict[str, int],
        reply: Reply,
        *,
        transactional_id: str | None = None,
        version: int | None = None,
        instance_id: str | None = None,
        meta: Mapping[str, OffsetMeta] | None = None,
        too_large: Mapping[str, int] | None = None,
    ) -> None:
        """TxnOffsetCommit: the offsets are written to `__consumer_offsets` as the producer's transactional batch,
        pending until its marker. v5+ on 4.x (a TV2 client): the offsets partition is added to the transaction
        first."""
        effects = self.groups.txn_commit_offsets(
            broker,
            group_id,
            producer_id,
            epoch,
            generation,
            member_id,
            offsets,
            reply,
            transactional_id=transactional_id,
            version=version,
            instance_id=instance_id,
            meta=meta,
            too_large=too_large,
        )
        self._carry_out(self.groups, effects)

    def handle_offset_fetch(
        self, broker: int, group_id: str, partitions: tuple[str, ...], require_stable: bool, reply: Reply
    ) -> None:
        """OffsetFetch: `require_stable` (read_committed consumers) gets UNSTABLE_OFFSET_COMMIT while a partition
        has pending transactional offsets."""
        effects = self.groups.fetch_offsets(broker, group_id, partitions, require_stable, reply)
        self._carry_out(self.groups, effects)

    # -- carrying out what the coordinators return ------------------------------------------------------------
    def _carry_out(self, source: TransactionCoordinator | GroupCoordinator, effects: Effects) -> None:
        """Do what a coordinator asked, in order. What the cluster learns on the way (an append's outcome, an
        answer from another broker, a marker's result, a timer) goes back to `source` as its next input, and its
        effects are carried out in turn, at once when the input comes at once (as a call would have)."""
        for effect in effects:  # the most frequent kinds first: this runs for every effect of every request
            if isinstance(effect, Emit):
                self.emit(effect.event, **effect.fields)
            elif isinstance(effect, Answer):
                effect.reply(effect.error, **effect.fields)
            elif isinstance(effect, AppendTxnState):
                self._append_txn_state(effect)
            elif isinstance(effect, WakeScans):
                self.wake_scans(effect.broker, effect.timeout_at_ms, effect.expiry_at_ms)
            elif isinstance(effect, SendMarkers):
                self._send_markers(effect)
            elif isinstance(effect, Timer):
                self._timer(source, effect)
            elif isinstance(effect, AddOffsetsPartition):
                self._add_offsets_partition(effect)
            elif isinstance(effect, VerifyOffsetsPartition):
                self._verify_offsets_partition(effect)
            elif isinstance(effect, AppendTxnOffsets):
                self._append_txn_offsets(effect)
            else:
                raise TypeError(f"no way to carry out {effect!r}")

    def _timer(self, source: TransactionCoordinator | GroupCoordinator, timer: Timer) -> Entry:
        tick = timer.tick
        return self.scheduler.at(
            timer.at_ms,
            lambda: self._carry_out(source, source.on_timer(tick, self.now_ms)),
            category=timer.category,
            label=timer.label,
        )

    def _append_txn_state(self, append: AppendTxnState) -> None:
        """A `__transaction_state` record: durable once the followers have it (the leader's replication delay)."""
        tc, job = self.txn_coordinator, append.job
        self.scheduler.after(
            self.replication_ms(append.broker),
            lambda: self._carry_out(tc, tc.txn_state_appended(job, self.now_ms)),
            label=f"__transaction_state append {append.transactional_id}",
        )

    def _send_markers(self, send: SendMarkers) -> None:
        tc, job = self.txn_coordinator, send.job

        def on_result(partition: str, error: str | None) -> None:
            self._carry_out(tc, tc.marker_result(job, partition, error, self.now_ms))

        self.send_markers(
            send.coordinator,
            send.transactional_id,
            send.producer_id,
            send.epoch,
            send.control,
            send.coordinator_epoch,
            list(send.partitions),
            on_result,
        )

    def _add_offsets_partition(self, add: AddOffsetsPartition) -> None:
        groups, write = self.groups, add.write
        assert write.transactional_id is not None
        self._add_partitions_to_txn(
            add.broker,
            f"group coordinator(b{add.broker})",
            write.transactional_id,
            write.producer_id,
            write.epoch,
            [(write.partition, lambda error: self._carry_out(groups, groups.offsets_partition_added(write, error)))],
        )

    def _verify_offsets_partition(self, verify: VerifyOffsetsPartition) -> None:
        """KIP-890 part 1 for a TV1 TxnOffsetCommit: no need to ask when the offsets partition has this producer's
        transaction open at this epoch already (UnifiedLog.maybeStartTransactionVerification), else the transaction
        coordinator is asked, as for a Produce (TransactionCoordinator.verify_partition)."""
        write = verify.write
        assert write.transactional_id is not None
        entry = self.log(write.partition).producers.get(write.producer_id)
        error = None
        if entry is None or entry.epoch != write.epoch or entry.current_txn_first_offset is None:
            error = self.txn_coordinator.verify_partition(
                write.transactional_id, write.producer_id, write.epoch, write.partition, verify.generic_error
            )
        self._carry_out(self.groups, self.groups.offsets_partition_verified(write, error))

    def _append_txn_offsets(self, append: AppendTxnOffsets) -> None:
        """The group coordinator's write to `__consumer_offsets` (GroupMetadataManager.storeOffsets): a
        transactional batch of the producer, not a client's (no sequence check), behind the TV2 verification guard
        when it has one."""
        write, values = append.write, append.values
        pid, epoch = write.producer_id, write.epoch
        guard = append.verify
        error: str | None
        if guard is not None and self.txn_coordinator.in_transaction(guard, pid, epoch, write.partition) is not None:
            error = "INVALID_PRODUCER_EPOCH"
        else:
            log = self.log(write.partition)
            result = log.append(pid, epoch, -1, True, values, timestamp_ms=self.now_ms, from_client=False)
            error = result.error
            if error is None:
                self.after_append(log, result, pid, epoch, True, values)
        self._carry_out(self.groups, self.groups.txn_offsets_appended(write, error))

    # -- figures for the cost scenario and the dashboard ------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        tc = self.txn_coordinator
        return {
            "init_producer_id_calls": tc.init_producer_id_calls,
            "transaction_state_records": tc.records_written,
            "transaction_state_bytes": tc.bytes_written,
            "transaction_state_records_by_id": dict(sorted(tc.records_by_id.items())),
            "markers_written": self.markers_written,
        }
