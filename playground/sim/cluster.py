"""The simulated cluster: brokers, topics and partition leaders, RPCs in virtual time, the partition leaders'
request handling (Produce, Fetch, ListOffsets, WriteTxnMarkers), the periodic tasks of each broker, and the one
place requests come in: a `handle_*` method per request (Produce, Fetch, ListOffsets, FindCoordinator,
InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, JoinGroup, LeaveGroup, OffsetCommit, TxnOffsetCommit,
OffsetFetch), each taking the broker it arrives at, the request's fields and `reply(error, **result)`. The client
models call them from inside `rpc` (which carries the request and the answer in virtual time); so may a Kafka
protocol server. Requests for a coordinator are routed to it (KafkaApis' part), and what the coordinator returns
(effects.py) is carried out here (`_carry_out`): the coordinators never call the cluster.

`kafka` names the release ("3.9" or "4"). On 4.x a transactional Produce from a TV2 client (Produce v12+) has no
AddPartitionsToTxn before it: the leader adds the partition to the transaction itself (ReplicaManager
.maybeStartTransactionVerificationForPartition -> AddPartitionsToTxnManager, addPartition operation), one
AddPartitionsToTxn v5 (verifyOnly=false) to the coordinator, then appends; a batch whose epoch is older than the
partition's is refused before asking (KAFKA-18042). TV1 clients keep KIP-890 part 1's verify-only check.

Placement is deterministic and easy to predict: partition p of every topic (and of `__transaction_state` and
`__consumer_offsets`) has replicas [b(p), b(p+1), ...] with b(i) = the (i mod brokers)-th broker, so orders-0 is
led by broker 1, orders-1 by broker 2, ... When a leader stops, the next live replica takes over (all replicas are
in sync here); a broker that starts again does not take leadership back (no preferred-leader rebalance).

Timing knobs (cluster config, all optional; Kafka itself ignores keys starting with `sim.`):
  sim.latency.ms (1)                 one way, client <-> broker
  sim.interbroker.latency.ms (1)     one way, broker <-> broker (markers)
  sim.broker.N.latency.ms (0)        extra one-way delay for anything to or from broker N
  sim.replication.latency.ms (1)     until followers have an append and the high watermark moves past it
  sim.broker.N.replication.latency.ms  the same for partitions led by broker N (a slow follower)
  sim.coordinator.load.ms (5)        a new coordinator loading its `__transaction_state` partition
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from playground.engine import events as ev
from playground.sim.clock import TIMER, Entry, Scheduler, SplitMix64
from playground.sim.coordinator import TransactionCoordinator
from playground.sim.effects import Answer, Effects, Emit, Reply, Timer
from playground.sim.groups import AddOffsetsPartition, AppendTxnOffsets, GroupCoordinator
from playground.sim.log import PartitionLog
from playground.sim.markers import SendMarkers
from playground.sim.txnlog import AppendTxnState, WakeScans
from playground.sim.txnstate import TV_0

TXN_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = (TXN_TOPIC, OFFSETS_TOPIC)


class BrokerState:
    __slots__ = ("broker_id", "incarnation", "up")

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.up = True
        self.incarnation = 0


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


class Cluster:
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
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        if kafka not in ("3.9", "4"):
            raise ValueError(f"no model of Kafka {kafka!r} (3.9 or 4)")
        self.kafka = kafka  # read by the coordinators
        self.config: dict[str, Any] = dict(config or {})
        self.rng = SplitMix64(seed)
        self.scheduler = Scheduler()
        self.events: list[ev.Event] = []
        self.keep_events = keep_events
        # the last 200 RPCs, for the view: events, or (seq, time_ms, fields) when nobody observes events (then the
        # Rpc is only built if the timeline is read; see `timeline`)
        self._timeline: deque[ev.Rpc | tuple[int, int, dict[str, Any]]] = deque(maxlen=200)
        self._listeners: list[Callable[[ev.Event], None]] = [on_event] if on_event else []
        self._seq = 0
        self._correlation = 0
        self.brokers: dict[int, BrokerState] = {b: BrokerState(b) for b in range(1, brokers + 1)}
        self.broker_ids = tuple(self.brokers)
        self.replication_factor = int(self.config.get("sim.replication.factor", min(3, brokers)))
        self.latency_ms = int(self.config.get("sim.latency.ms", 1))
        self.interbroker_latency_ms = int(self.config.get("sim.interbroker.latency.ms", 1))
        self.default_replication_ms = int(self.config.get("sim.replication.latency.ms", 1))
        self.coordinator_load_ms = int(self.config.get("sim.coordinator.load.ms", 5))
        self.marker_retry_backoff_ms = int(self.config.get("sim.marker.retry.backoff.ms", 100))
        self._extra_latency = {b: int(self.config.get(f"sim.broker.{b}.latency.ms", 0)) for b in self.broker_ids}
        self._replication = {
            b: int(self.config.get(f"sim.broker.{b}.replication.latency.ms", self.default_replication_ms))
            for b in self.broker_ids
        }
        self.markers_written = 0
        self.partitions: dict[str, PartitionMeta] = {}
        self.topics: dict[str, int] = {}
        self._watermarks: dict[str, tuple[int, int, int]] = {}
        self._parked: dict[str, list[Callable[..., bool]]] = {}  # long-polling fetches per partition
        self._scans: dict[tuple[int, str], _PeriodicScan] = {}
        # replies owed by each broker: correlation -> fail(), so a stopped broker's requests fail at once
        self._outstanding: dict[int, dict[int, Callable[[], None]]] = {b: {} for b in self.broker_ids}
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

    # -- events -----------------------------------------------------------------------------------------------
    def subscribe(self, listener: Callable[[ev.Event], None]) -> None:
        self._listeners.append(listener)

    @property
    def observed(self) -> bool:
        """Whether events go anywhere (kept or listened to). Hot paths check it before assembling an event's
        fields; `emit` checks it too, so callers that do not bother stay correct."""
        return self.keep_events or bool(self._listeners)

    def skip_event(self) -> None:
        """Take the `seq` of an event that is not emitted because nobody observes it (see `observed`)."""
        self._seq += 1

    def emit(self, cls: type[ev.Event], **fields: Any) -> ev.Event | None:
        """Record an event. Its `seq` is taken even when nobody observes it, so that sequence numbers (visible
        in the RPC timeline) do not depend on whether events are kept. Returns None when the event was not
        built because nobody observes it (building the frozen dataclass is the bulk of an emit)."""
        self._seq += 1
        if not self.keep_events and not self._listeners:
            if cls is ev.Rpc:
                self._timeline.append((self._seq, self.scheduler.now_ms, fields))
            return None
        event = cls(seq=self._seq, time_ms=self.scheduler.now_ms, **fields)
        if self.keep_events:
            self.events.append(event)
        if cls is ev.Rpc:
            self._timeline.append(event)  # type: ignore[arg-type]
        for listener in self._listeners:
            listener(event)
        return event

    @property
    def timeline(self) -> list[ev.Rpc]:
        """The last 200 RPC events, oldest first."""
        return [e if isinstance(e, ev.Rpc) else ev.Rpc(seq=e[0], time_ms=e[1], **e[2]) for e in self._timeline]

    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms

    # -- topology ---------------------------------------------------------------------------------------------
    def _replicas(self, partition: int) -> tuple[int, ...]:
        n = len(self.broker_ids)
        return tuple(self.broker_ids[(partition + i) % n] for i in range(self.replication_factor))

    def create_topic(self, name: str, partitions: int) -> None:
        if name in self.topics:
            raise ValueError(f"topic {name!r} already exists")
        if partitions < 1:
            raise ValueError(f"topic {name!r} needs at least one partition")
        self.topics[name] = partitions
        for p in range(partitions):
            meta = PartitionMeta(name, p, self._replicas(p))
            meta.log = PartitionLog(name, p)
            self.partitions[meta.name] = meta

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

    def broker_up(self, broker: int | None) -> bool:
        return broker is not None and broker in self.brokers and self.brokers[broker].up

    def any_up_broker(self) -> int | None:
        return next((b for b in self.broker_ids if self.brokers[b].up), None)

    def handle_find_coordinator(self, key: str, kind: str, reply: Callable[..., None]) -> None:
        """FindCoordinator as any broker answers it: the leader of the key's __transaction_state (kind
        "transaction") or __consumer_offsets partition, or COORDINATOR_NOT_AVAILABLE while it has none alive."""
        leader = self.txn_coordinator.coordinator_of(key) if kind == "transaction" else self.groups.coordinator_of(key)
        if leader is None or not self.broker_up(leader):
            reply("COORDINATOR_NOT_AVAILABLE")
        else:
            reply(None, coordinator=leader)

    def replication_ms(self, broker: int | None) -> int:
        return self._replication.get(broker, self.default_replication_ms) if broker is not None else 0

    def hop_ms(self, dst: int | None, src_broker: int | None = None) -> int:
        extra = self._extra_latency.get(dst, 0) if dst is not None else 0
        if src_broker is not None:
            return self.interbroker_latency_ms + extra + self._extra_latency.get(src_broker, 0)
        return self.latency_ms + extra

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
        self._scans[(broker, "abort")] = _PeriodicScan(
            self,
            broker,
            tc.abort_interval_ms,
            f"transaction-abort b{broker}",
            lambda: self._carry_out(tc, tc.abort_timed_out_transactions(broker, self.now_ms)),
            lambda t: bool(tc.timed_out(broker, t)),
            lambda: tc.next_timeout_ms(broker),
        )
        self._scans[(broker, "expire")] = _PeriodicScan(
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

    # -- RPC --------------------------------------------------------------------------------------------------
    def rpc(
        self,
        name: str,
        src: str,
        dst_broker: int | None,
        dst_label: str,
        detail: str,
        handler: Callable[[Callable[..., None]], None],
        on_response: Callable[[str | None, dict[str, Any]], None],
        *,
        src_alive: Callable[[], bool] = lambda: True,
        src_broker: int | None = None,
        version: int | None = None,
    ) -> int:
        """Send a request; `handler(reply)` runs at the destination when it arrives, `reply(error, **result)`
        sends the answer back; `on_response(error, result)` runs at the source when the answer arrives (unless
        the source died meanwhile). A broker that is down, or stops before answering, yields `_TRANSPORT`.
        `version`: the request's ApiVersion, shown in the timeline as the real backend shows it ("v0, ...")."""
        self._correlation += 1
        corr = self._correlation
        prefix = f"v{version}" if version is not None else ""
        self.emit(
            ev.Rpc,
            rpc=name,
            src=src,
            dst=dst_label,
            direction="request",
            error=None,
            detail=_join_detail(prefix, detail),
            correlation=corr,
        )
        hop = self.hop_ms(dst_broker, src_broker)
        done = [False]

        def deliver(error: str | None, result: dict[str, Any]) -> None:
            if not src_alive():
                return
            self.emit(
                ev.Rpc,
                rpc=name,
                src=dst_label,
                dst=src,
                direction="response",
                error=error,
                detail=_join_detail(prefix, _describe(result)),
                correlation=corr,
            )
            on_response(error, result)

        def fail_transport() -> None:
            if done[0]:
                return
            done[0] = True
            self.scheduler.after(hop, lambda: deliver("_TRANSPORT", {}), label=f"{name} transport error")

        if dst_broker is None or not self.broker_up(dst_broker):
            self.scheduler.after(hop, lambda: deliver("_TRANSPORT", {}), label=f"{name} no broker")
            return corr
        incarnation = self.brokers[dst_broker].incarnation

        def reply(error: str | None = None, **result: Any) -> None:
            if done[0]:
                return
            if not self.broker_up(dst_broker) or self.brokers[dst_broker].incarnation != incarnation:
                return  # the broker died before answering; fail_transport already told the source
            done[0] = True
            self._outstanding[dst_broker].pop(corr, None)
            self.scheduler.after(hop, lambda: deliver(error, result), label=f"{name} response")

        def arrive() -> None:
            if not self.broker_up(dst_broker) or self.brokers[dst_broker].incarnation != incarnation:
                fail_transport()
                return
            self._outstanding[dst_broker][corr] = fail_transport
            handler(reply)

        self.scheduler.after(hop, arrive, label=f"{name} request")
        return corr

    # -- partition leader: appends and replication ------------------------------------------------------------
    def after_append(
        self,
        log: PartitionLog,
        result: Any,
        producer_id: int,
        epoch: int,
        transactional: bool,
        values: tuple,
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

    def handle_produce(
        self,
        broker: int,
        partition: str,
        transactional_id: str | None,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        transactional: bool,
        values: tuple,
        keys: tuple | None,
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
        if transactional and transactional_id and self.kafka == "4" and version is not None and version >= 12:
            self._produce_tv2(
                broker, log, transactional_id, producer_id, epoch, base_sequence, values, keys, acks, reply, client_id
            )
            return
        verify = None
        if transactional and transactional_id:
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
        values: tuple,
        acks: int,
        reply: Callable[..., None],
        client_id: str | None,
    ) -> None:
        if result.error:
            reply(result.error)
            return
        answer = lambda: reply(None, base_offset=result.base_offset, duplicate=result.duplicate)  # noqa: E731
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

    def _produce_tv2(
        self,
        broker: int,
        log: PartitionLog,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        values: tuple,
        keys: tuple | None,
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
            verify = lambda pid, e: tc.in_transaction(transactional_id, pid, e, partition)  # noqa: E731
            result = log.append(
                producer_id, epoch, base_sequence, True, values, keys, timestamp_ms=self.now_ms, verify=verify
            )
            self._answer_produce(log, result, producer_id, epoch, base_sequence, True, values, acks, reply, client_id)

        src = f"leader {partition}(b{broker})"
        self._add_partition_to_txn(broker, src, transactional_id, producer_id, epoch, partition, added)

    def _add_partition_to_txn(
        self,
        broker: int,
        src: str,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partition: str,
        added: Callable[[str | None], None],
    ) -> None:
        """AddPartitionsToTxnManager: the broker (a partition leader for a TV2 Produce, the group coordinator for a
        TV2 TxnOffsetCommit) has the transaction coordinator add `partition` to the transaction, one inter-broker
        request; `added(error)` runs when the answer is back here (NOT_ENOUGH_REPLICAS at once without a live
        coordinator)."""
        tc = self.txn_coordinator
        coordinator = tc.coordinator_of(transactional_id)
        if coordinator is None or not self.broker_up(coordinator):
            added("NOT_ENOUGH_REPLICAS")
            return
        at = coordinator

        def handler(answer: Reply) -> None:
            effects = tc.add_partition_for_leader(
                at, transactional_id, producer_id, epoch, partition, answer, now_ms=self.now_ms
            )
            self._carry_out(tc, effects)

        self.rpc(
            "AddPartitionsToTxn",
            src,
            coordinator,
            f"coordinator(b{coordinator})",
            f"{partition}, producer {producer_id} epoch {epoch} (verifyOnly=false)",
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
                if self.leader_of(partition) == broker and self.broker_up(broker):
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
                    self.scheduler.after(
                        self.marker_retry_backoff_ms,
                        lambda tp=tp: coordinator_alive() and on_result(tp, "NOT_LEADER_OR_FOLLOWER"),
                        label=f"marker {tp} has no leader",
                    )
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
        def handler(reply: Callable[..., None]) -> None:
            errors: dict[str, str | None] = {}
            written: list[tuple[PartitionLog, int]] = []
            for tp in tps:
                if self.leader_of(tp) != leader:
                    errors[tp] = "NOT_LEADER_OR_FOLLOWER"
                    continue
                log = self.log(tp)
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

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            errors = result.get("errors") if error is None else dict.fromkeys(tps, error)
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

    # -- requests to the coordinators: routed here, answered through `reply` ----------------------------------
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
        self, broker: int, group_id: str, client_id: str, topics: tuple[str, ...], reply: Reply
    ) -> None:
        """JoinGroup (with SyncGroup: the member's assignment is GroupCoordinator.assignment once the group is
        Stable): answered with the new member's id."""
        self._carry_out(self.groups, self.groups.join(broker, group_id, client_id, topics, reply))

    def handle_leave_group(self, group_id: str, member_id: str) -> None:
        """LeaveGroup, as a consumer that closes sends it (the client models send no RPC: it takes effect at once)."""
        self._carry_out(self.groups, self.groups.leave(group_id, member_id))

    def member_crashed(self, group_id: str, member_id: str) -> None:
        """Not a request: a consumer's process died, its heartbeats stop; the member is evicted when its session
        times out."""
        self._carry_out(self.groups, self.groups.member_crashed(group_id, member_id, self.now_ms))

    def handle_offset_commit(
        self, broker: int, group_id: str, generation: int, member_id: str, offsets: dict[str, int], reply: Reply
    ) -> None:
        """OffsetCommit (generation -1 and no member id: a consumer without group membership)."""
        effects = self.groups.commit_offsets(broker, group_id, generation, member_id, offsets, reply)
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
        for effect in effects:
            if isinstance(effect, Answer):
                effect.reply(effect.error, **effect.fields)
            elif isinstance(effect, Emit):
                self.emit(effect.event, **effect.fields)
            elif isinstance(effect, AppendTxnState):
                self._append_txn_state(effect)
            elif isinstance(effect, SendMarkers):
                self._send_markers(effect)
            elif isinstance(effect, WakeScans):
                self.wake_scans(effect.broker, effect.timeout_at_ms, effect.expiry_at_ms)
            elif isinstance(effect, Timer):
                self._timer(source, effect)
            elif isinstance(effect, AddOffsetsPartition):
                self._add_offsets_partition(effect)
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
        self._add_partition_to_txn(
            add.broker,
            f"group coordinator(b{add.broker})",
            write.transactional_id,
            write.producer_id,
            write.epoch,
            write.partition,
            lambda error: self._carry_out(groups, groups.offsets_partition_added(write, error)),
        )

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

    # -- time -------------------------------------------------------------------------------------------------
    def advance(self, ms: int) -> None:
        before = self.now_ms
        self.scheduler.advance(ms)
        self.emit(ev.Clock, from_ms=before, to_ms=self.now_ms)

    def settle(self, max_ms: int = 30_000) -> bool:
        return self.scheduler.settle(max_ms)

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


class _PeriodicScan:
    """A broker's periodic task (the coordinator's abort and expiry scans) on its fixed grid of ticks
    (broker start + k x interval), as Kafka's scheduler runs it. Ticks at which the scan would find nothing are
    skipped: the next tick is the first one at or after the earliest deadline the coordinator knows of, and a new
    deadline wakes the scan up earlier. Long clock jumps (7 days for expiry) stay cheap; behaviour is the same."""

    def __init__(
        self,
        cluster: Cluster,
        broker: int,
        interval_ms: int,
        label: str,
        task: Callable[[], None],
        would_act: Callable[[int], bool],
        next_deadline: Callable[[], int | None],
    ) -> None:
        self.c = cluster
        self.broker = broker
        self.interval_ms = interval_ms
        self.label = label
        self.task = task
        self.would_act = would_act
        self.next_deadline = next_deadline
        self.incarnation = cluster.brokers[broker].incarnation
        self.start_ms = cluster.now_ms
        self.entry = None
        self.scheduled_ms: int | None = None
        self._reschedule()

    def _alive(self) -> bool:
        state = self.c.brokers[self.broker]
        return state.up and state.incarnation == self.incarnation

    def _tick_after(self, t: int) -> int:
        """The first tick strictly after t."""
        k = (t - self.start_ms) // self.interval_ms + 1
        return self.start_ms + k * self.interval_ms

    def _schedule(self, tick: int) -> None:
        self.c.scheduler.cancel(self.entry)
        self.scheduled_ms = tick
        self.entry = self.c.scheduler.at(
            tick,
            self._run,
            category=TIMER,
            label=self.label,
            inert=lambda t: not self._alive() or not self.would_act(t),
        )

    def _reschedule(self) -> None:
        deadline = self.next_deadline()
        if deadline is None:
            self.c.scheduler.cancel(self.entry)
            self.entry = None
            self.scheduled_ms = None
            return
        self._schedule(max(self._tick_after(self.c.now_ms), self._tick_after(deadline - 1)))

    def wake(self, deadline_ms: int) -> None:
        if not self._alive():
            return
        tick = max(self._tick_after(self.c.now_ms), self._tick_after(deadline_ms - 1))
        if self.scheduled_ms is None or tick < self.scheduled_ms:
            self._schedule(tick)

    def _run(self) -> None:
        self.entry = None
        self.scheduled_ms = None
        if not self._alive():
            return
        self.task()
        self._reschedule()


def _join_detail(prefix: str, detail: str) -> str:
    """ ", ".join of the non-empty parts (without a generator: two of these per RPC)."""
    if prefix and detail:
        return f"{prefix}, {detail}"
    return prefix or detail


def _describe(result: dict[str, Any]) -> str:
    parts = []
    for key in ("producer_id", "producer_epoch", "base_offset", "coordinator", "member_id", "position"):
        if key in result and result[key] is not None:
            parts.append(f"{key.replace('_', ' ')} {result[key]}")
    if "records" in result:
        parts.append(f"{len(result['records'])} records")
    return ", ".join(parts)


def _verify_partition(
    tc: TransactionCoordinator, transactional_id: str, partition: str, version: int | None, producer_id: int, epoch: int
) -> str | None:
    return tc.verify_partition(transactional_id, producer_id, epoch, partition, version)
