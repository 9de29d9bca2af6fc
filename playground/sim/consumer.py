"""The consumer: confluent_kafka.Consumer with librdkafka's (2.16) behaviour, on the simulated cluster. One model
for both profiles' clients: what a consumer reads and when its offsets count is the brokers' doing (the driver names
a Java consumer's errors as KafkaConsumer raises them).

Follows librdkafka's src/rdkafka_cgrp.c (JoinGroup/SyncGroup, OffsetCommit, OffsetFetch with RequireStable for
read_committed, auto commit; a static member's heartbeats, its FENCED_INSTANCE_ID as a fatal error
(rd_kafka_set_fatal_error) and its close without LeaveGroup, KIP-345), rdkafka_request.c
(rd_kafka_handle_OffsetCommit: FENCED_INSTANCE_ID is fatal), rdkafka_fetcher.c (Fetch, one round trip per leader), rdkafka_offset.c
(auto.offset.reset through ListOffsets) and rdkafka_assignment.c (the application's position).
"""

from __future__ import annotations

import functools
from collections import deque
from typing import TYPE_CHECKING, Any

from playground.engine import events as ev
from playground.sim.clientbase import (
    CLOSED,
    CRASHED,
    Client,
    GroupMetadata,
    Message,
    TopicPartition,
    conf_bool,
    conf_ms,
)
from playground.sim.clock import TIMER
from playground.sim.effects import Reply
from playground.sim.errors import KafkaError, KafkaException
from playground.sim.log import READ_COMMITTED

if TYPE_CHECKING:  # pragma: no cover
    from playground.sim.cluster import Cluster

# rd_kafka_err2str(RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID)
FENCED_INSTANCE_TEXT = "Broker: Static consumer fenced by other consumer with same group.instance.id"


class Consumer(Client):
    """confluent_kafka.Consumer on the simulated cluster: Consumer(conf, cluster=cluster, name="rc").

    poll/consume fetch from the partition leaders (one Fetch round trip per leader), capped at the LSO for
    read_committed (the default isolation level, as in librdkafka) and at the high watermark otherwise."""

    def __init__(self, conf: dict[str, Any], *, cluster: Cluster, name: str | None = None) -> None:
        super().__init__(conf, cluster, name)
        c = self.conf
        self.group_id: str | None = c.get("group.id") or None
        self.isolation_level = str(c.get("isolation.level", READ_COMMITTED))
        self.auto_offset_reset = str(c.get("auto.offset.reset", "latest"))
        self.enable_auto_commit = conf_bool(c.get("enable.auto.commit", True))
        self.auto_commit_interval_ms = conf_ms(c, "auto.commit.interval.ms", 5000)
        self.fetch_wait_max_ms = conf_ms(c, "fetch.wait.max.ms", 500)
        # KIP-345: a static member (its heartbeats below); librdkafka's and kafka-clients' defaults alike
        self.group_instance_id: str | None = c.get("group.instance.id") or None
        self.heartbeat_interval_ms = conf_ms(c, "heartbeat.interval.ms", 3000)
        self.max_poll_interval_ms = conf_ms(c, "max.poll.interval.ms", 300_000)
        self.fatal_error: KafkaError | None = None  # rd_kafka_fatal_error(): sticky
        self._coordinator: int | None = None
        self._polled_ms = self.cluster.scheduler.now_ms
        self.state = "RUNNING"
        self.topics: tuple[str, ...] = ()
        self.member_id: str | None = None
        self.generation = -1
        self.assigned: list[str] = []
        self.manual = False
        self.positions: dict[str, int] = {}
        # partitions where the application has been served something (a record or, silently, a control record):
        # librdkafka's app position is INVALID (-1001) until then
        self._served: set[str] = set()
        self._joining = False
        # a rebalance: a static member's heartbeat was answered REBALANCE_IN_PROGRESS; it has rejoined and waits
        self._rebalance_seen = False
        self._rejoined = False
        self._buffer: deque[Message] = deque()
        self.received: dict[str, list[tuple[int, Any]]] = {}
        self._auto_commit_started = False

    @property
    def group(self) -> str:
        """group.id, where only a consumer with one gets: subscribe() requires it, and so do the group's requests."""
        assert self.group_id is not None, "a group request from a consumer without group.id"
        return self.group_id

    # -- assignment -------------------------------------------------------------------------------------------
    def subscribe(self, topics: list[str], on_assign: Any = None, on_revoke: Any = None) -> None:
        if not self.group_id:
            raise KafkaException(KafkaError("_INVALID_ARG", "subscribe() requires group.id"))
        self.topics = tuple(topics)
        self.manual = False

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.manual = True
        self.assigned = [tp.name for tp in partitions]
        self._served.clear()
        for tp in partitions:
            if tp.offset >= 0:
                self.positions[tp.name] = tp.offset
            else:
                self.positions.pop(tp.name, None)

    def assignment(self) -> list[TopicPartition]:
        return [self._tp(name) for name in self.assigned]

    @staticmethod
    def _tp(name: str, offset: int = -1001) -> TopicPartition:
        topic, _, part = name.rpartition("-")
        return TopicPartition(topic, int(part), offset)

    def _ensure_member(self, deadline: int) -> bool:
        """JoinGroup/SyncGroup until this member has an assignment in a Stable group (False while rebalancing)."""
        if self.manual:
            return True
        c = self.cluster
        if self.member_id is None and not self._joining:
            self._joining = True

            def send(broker: int) -> None:
                def handler(broker: int, reply: Reply) -> None:
                    c.handle_join_group(broker, self.group, self.name, self.topics, reply, self.group_instance_id)

                def on_response(error: str | None, result: dict[str, Any]) -> None:
                    if error:
                        self._after(self.api_retry_ms, lambda: self._find_coordinator(self.group, "group", send))
                        return
                    self._joining = False
                    self.member_id = result["member_id"]
                    self._coordinator = broker
                    if self.group_instance_id is not None:
                        self._start_heartbeats(self.member_id)

                instance = f", instance {self.group_instance_id}" if self.group_instance_id is not None else ""
                self._rpc(
                    "JoinGroup",
                    broker,
                    f"group coordinator(b{broker})",
                    f"group {self.group_id}{instance}, topics {', '.join(self.topics)}",
                    handler,
                    on_response,
                )

            self._find_coordinator(self.group, "group", send)
            self._wait(lambda: self.member_id is not None, deadline)
        if self.member_id is None:
            return False
        if self._must_rejoin():
            self._rejoin(self.member_id, deadline)
            if self.member_id is None:
                return False
        current = c.groups.assignment(self.group, self.member_id)
        if current is None:
            return False
        generation, parts = current
        if generation != self.generation:
            # eager rebalance: everything revoked, the new assignment starts from the committed offsets
            self._rebalance_seen = self._rejoined = False
            self.generation = generation
            self.assigned = list(parts)
            self.positions.clear()
            self._served.clear()
            self._buffer.clear()
            c.emit(
                ev.ClientState,
                actor=self.name,
                from_state="REBALANCING",
                to_state=f"ASSIGNED {','.join(parts) or '-'} (generation {generation})",
            )
        return True

    api_retry_ms = 100

    def _must_rejoin(self) -> bool:
        """Whether this poll rejoins a rebalance in progress: a static member once a heartbeat told it; a dynamic
        one, which the simulator gives no heartbeats, whenever the coordinator waits for it (its heartbeat thread
        would have told it within heartbeat.interval.ms)."""
        if self._rejoined:
            return False
        if self.group_instance_id is not None:
            return self._rebalance_seen
        return self.member_id is not None and self.cluster.groups.rejoin_needed(self.group, self.member_id)

    def _rejoin(self, member_id: str, deadline: int) -> None:
        """The eager protocol's rejoin (librdkafka serves the revoke from the application's poll, then sends
        JoinGroup; kafka-clients does both inside poll()): every partition given up, positions forgotten."""
        c = self.cluster
        self._rejoined = True
        if self.assigned:
            c.emit(
                ev.ClientState, actor=self.name, from_state=f"ASSIGNED {','.join(self.assigned)}", to_state="REVOKED"
            )
        self.assigned = []
        self.positions.clear()
        self._served.clear()
        self._buffer.clear()
        answered: list[str | None] = []

        def send(broker: int) -> None:
            def handler(broker: int, reply: Reply) -> None:
                c.handle_rejoin_group(broker, self.group, member_id, reply)

            def on_response(error: str | None, result: dict[str, Any]) -> None:
                if error in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "_TRANSPORT"):
                    self._after(self.api_retry_ms, lambda: self._find_coordinator(self.group, "group", send))
                    return
                answered.append(error)
                if error == "UNKNOWN_MEMBER_ID":  # removed meanwhile: the next poll joins anew
                    self._lose_membership()

            self._rpc(
                "JoinGroup",
                broker,
                f"group coordinator(b{broker})",
                f"group {self.group_id}, member {member_id} (rejoin), topics {', '.join(self.topics)}",
                handler,
                on_response,
            )

        self._find_coordinator(self.group, "group", send)
        self._wait(lambda: bool(answered), deadline)

    def _start_heartbeats(self, member_id: str) -> None:
        """A static member's heartbeats (rd_kafka_cgrp_heartbeat; kafka-clients' HeartbeatThread), every
        heartbeat.interval.ms while it is this member: they are how an instance learns that another one took its
        group.instance.id (FENCED_INSTANCE_ID: librdkafka raises a fatal error), and that a rebalance waits for it
        (REBALANCE_IN_PROGRESS: its next poll rejoins). A dynamic member's heartbeats are not modelled: the
        simulator's coordinator knows whether its process runs, and its poll asks whether a rebalance waits for it
        (`_must_rejoin`). A member that is joining, with no generation yet, sends none.

        After max.poll.interval.ms without a poll the client stops heartbeating and forgets its member id, its
        assignment lost (librdkafka's "maximum poll interval exceeded"; a static member sends no LeaveGroup): the
        coordinator removes it when its session times out, and the next poll joins again.

        The timer and its callbacks are bound methods (no closures referring to each other): a discarded
        simulator's scheduler drops them and nothing is left in a reference cycle."""
        self.cluster.scheduler.after(
            self.heartbeat_interval_ms,
            functools.partial(self._beat_due, member_id),
            category=TIMER,
            label=f"{self.name} heartbeat",
            inert=functools.partial(self._beat_inert, member_id),
        )

    def _beat_inert(self, member_id: str, at_ms: int) -> bool:
        """Whether the beat due at `at_ms` changes nothing (an observation may let it run): the client is gone or
        no longer this member, or it is still within max.poll.interval.ms and the coordinator would answer it as it
        answered the last one."""
        if not self.alive or self.fatal_error is not None or self.member_id != member_id:
            return True
        if at_ms - self._polled_ms > self.max_poll_interval_ms:
            return False
        if self._rejoined or self.generation < 0:
            return True
        error = self.cluster.groups.heartbeat_error(self.group, member_id, self.group_instance_id, self.generation)
        return error is None

    def _beat_due(self, member_id: str) -> None:
        if not self.alive or self.fatal_error is not None or self.member_id != member_id:
            return
        c = self.cluster
        if self.now_ms - self._polled_ms > self.max_poll_interval_ms:
            c.member_crashed(self.group, member_id)
            self._lose_membership()
            return
        if self._rejoined or self.generation < 0:
            # joining (JoinGroup sent, no generation given yet): neither client heartbeats until it has one
            self._start_heartbeats(member_id)
            return
        broker, generation = self._coordinator, self.generation
        if broker is None:
            self._find_coordinator(self.group, "group", functools.partial(self._beat_to, member_id))
            return

        def handler(broker: int, reply: Reply) -> None:
            c.handle_heartbeat(broker, self.group, generation, member_id, reply, self.group_instance_id)

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            if self.member_id != member_id:
                return
            if error == "FENCED_INSTANCE_ID":
                self._set_fatal(error, f"Fatal consumer error: {FENCED_INSTANCE_TEXT}", background="heartbeat")
                return
            if error == "UNKNOWN_MEMBER_ID":  # removed (its session timed out): the next poll joins again
                self._lose_membership()
                return
            if error == "REBALANCE_IN_PROGRESS" and not self._rejoined:  # the next poll rejoins
                self._rebalance_seen = True
            if error in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "_TRANSPORT"):
                self._coordinator = None
            self._start_heartbeats(member_id)

        self._rpc(
            "Heartbeat",
            broker,
            f"group coordinator(b{broker})",
            f"group {self.group_id}, member {member_id}, instance {self.group_instance_id}, generation {generation}",
            handler,
            on_response,
        )

    def _beat_to(self, member_id: str, broker: int) -> None:
        self._coordinator = broker
        self._beat_due(member_id)

    def _lose_membership(self) -> None:
        self.member_id = None
        self.generation = -1
        self._rebalance_seen = self._rejoined = False

    def _set_fatal(self, error: str, reason: str, background: str | None = None) -> None:
        """rd_kafka_set_fatal_error for a consumer: sticky; commits fail with _FATAL from then on, and a poll
        returns nothing (the assignment is lost). `background`: the operation that raised it behind the
        application's back (a call's own error is the driver's to show)."""
        if self.fatal_error is not None:
            return
        self.fatal_error = KafkaError(error, reason, fatal=True)
        self._buffer.clear()
        if background is not None:
            self.cluster.emit(
                ev.ClientError,
                actor=self.name,
                op=background,
                error=error,
                fatal=True,
                txn_requires_abort=False,
                detail=reason,
            )

    def _ensure_positions(self, deadline: int) -> None:
        missing = [tp for tp in self.assigned if tp not in self.positions]
        if not missing:
            return
        committed: dict[str, int | None] = {}
        if self.group_id:
            got = self._fetch_committed(
                tuple(missing), require_stable=self.isolation_level == READ_COMMITTED, deadline=deadline
            )
            if got is None:
                return  # UNSTABLE_OFFSET_COMMIT or coordinator trouble: try again on the next poll
            committed = got
        for tp in missing:
            off = committed.get(tp)
            if off is not None:
                self.positions[tp] = off
            else:
                reset = self._list_offset(
                    tp, latest=self.auto_offset_reset in ("latest", "end", "largest"), deadline=deadline
                )
                if reset is not None:
                    self.positions[tp] = reset

    def _fetch_committed(
        self, partitions: tuple[str, ...], require_stable: bool, deadline: int
    ) -> dict[str, int | None] | None:
        c = self.cluster
        box: dict[str, Any] = {}

        def send(broker: int) -> None:
            def handler(broker: int, reply: Reply) -> None:
                c.handle_offset_fetch(broker, self.group, partitions, require_stable, reply)

            def on_response(error: str | None, result: dict[str, Any]) -> None:
                box["error"] = error
                box["offsets"] = result.get("offsets")

            self._rpc(
                "OffsetFetch",
                broker,
                f"group coordinator(b{broker})",
                f"group {self.group_id} {', '.join(partitions)}{' (require stable)' if require_stable else ''}",
                handler,
                on_response,
            )

        self._find_coordinator(self.group, "group", send)
        self._wait(lambda: "error" in box, deadline)
        if box.get("error") is not None or "error" not in box:
            return None
        offsets: dict[str, int | None] = box["offsets"]
        return offsets

    def _list_offset(self, tp: str, latest: bool, deadline: int) -> int | None:
        c = self.cluster
        leader = c.leader_of(tp)
        box: dict[str, Any] = {}

        def handler(broker: int, reply: Reply) -> None:
            c.handle_list_offsets(broker, tp, latest, self.isolation_level, reply)

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            box["error"] = error
            box["offset"] = result.get("offset")

        self._rpc(
            "ListOffsets",
            leader,
            f"leader {tp}(b{leader})",
            f"{tp} {'LATEST' if latest else 'EARLIEST'} {self.isolation_level}",
            handler,
            on_response,
        )
        self._wait(lambda: "error" in box, deadline)
        return box.get("offset") if box.get("error") is None else None

    # -- consuming --------------------------------------------------------------------------------------------
    def _fetch_round(self, max_records: int | None, deadline: int) -> None:
        """One Fetch round trip to every leader of an assigned partition with a known position."""
        c = self.cluster
        wanted = [tp for tp in self.assigned if tp in self.positions]
        if not wanted:
            return
        pending = {"n": 0}
        for tp in wanted:
            leader = c.leader_of(tp)
            position = self.positions[tp]
            pending["n"] += 1

            def handler(broker: int, reply: Reply, tp: str = tp, position: int = position) -> None:
                c.handle_fetch(
                    broker, tp, position, self.isolation_level, max_records, reply, max_wait_ms=self.fetch_wait_max_ms
                )

            def on_response(error: str | None, result: dict[str, Any], tp: str = tp, position: int = position) -> None:
                pending["n"] -= 1
                if error is not None or self.positions.get(tp) != position:
                    return
                for offset, key, value, pid, epoch in result["records"]:
                    msg = Message(*self._split(tp), value, key, offset)
                    msg.producer_id, msg.epoch = pid, epoch
                    self._buffer.append(msg)
                if result["records"] or result["position"] != position:
                    self._served.add(tp)
                self.positions[tp] = result["position"]

            self._rpc(
                "Fetch",
                leader,
                f"leader {tp}(b{leader})",
                f"{tp} from {position} ({self.isolation_level})",
                handler,
                on_response,
            )
        self._wait(lambda: pending["n"] == 0, deadline)

    @staticmethod
    def _split(tp: str) -> tuple[str, int]:
        topic, _, part = tp.rpartition("-")
        return topic, int(part)

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        if not self.alive:
            raise RuntimeError("Consumer closed")
        self._polled_ms = self.now_ms
        if self.fatal_error is not None:
            return []  # the application is served the fatal error event (_FATAL), no records
        deadline = self._deadline(timeout, 1000)
        if not self._buffer:
            if self.group_id and not self.manual and not self.topics:
                return []
            if self._ensure_member(deadline):
                self._ensure_positions(deadline)
                self._fetch_round(num_messages, deadline)
                self._start_auto_commit()
        out: list[Message] = []
        while self._buffer and len(out) < num_messages:
            out.append(self._buffer.popleft())
        self._record(out)
        return out

    def poll(self, timeout: float | None = None) -> Message | None:
        got = self.consume(1, timeout)
        return got[0] if got else None

    def _record(self, messages: list[Message]) -> None:
        by_tp: dict[str, list[Message]] = {}
        for m in messages:
            tp = f"{m._topic}-{m._partition}"
            by_tp.setdefault(tp, []).append(m)
            self.received.setdefault(tp, []).append((m._offset, m._value))
        for tp, msgs in by_tp.items():
            self.cluster.emit(
                ev.Consume,
                actor=self.name,
                partition=tp,
                offsets=tuple(m._offset for m in msgs),
                values=tuple(m._value for m in msgs),
                position=self.positions.get(tp, msgs[-1]._offset + 1),
            )

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        out = []
        for tp in partitions:
            # the application's position: what was returned to it (records still buffered do not count)
            buffered = next(
                (m._offset for m in self._buffer if m._topic == tp.topic and m._partition == tp.partition), None
            )
            pos = buffered if buffered is not None else self.positions.get(tp.name, -1001)
            if tp.name not in self._served:
                pos = -1001
            out.append(TopicPartition(tp.topic, tp.partition, pos))
        return out

    def seek(self, partition: TopicPartition) -> None:
        self.positions[partition.name] = partition.offset
        self._served.add(partition.name)
        self._buffer = deque(
            m for m in self._buffer if not (m._topic == partition.topic and m._partition == partition.partition)
        )

    def committed(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        if not self.group_id:
            raise KafkaException(KafkaError("_INVALID_ARG", "committed() requires group.id"))
        deadline = self._deadline(timeout, 10_000)
        names = tuple(tp.name for tp in partitions)
        got = self._fetch_committed(names, require_stable=self.isolation_level == READ_COMMITTED, deadline=deadline)
        if got is None:
            raise KafkaException(KafkaError("_TIMED_OUT", "committed() did not get stable offsets"))
        offsets = [got.get(tp.name) for tp in partitions]
        return [
            TopicPartition(tp.topic, tp.partition, offset if offset is not None else -1001)
            for tp, offset in zip(partitions, offsets)
        ]

    def commit(
        self, message: Message | None = None, offsets: list[TopicPartition] | None = None, asynchronous: bool = True
    ) -> list[TopicPartition] | None:
        if not self.group_id:
            raise KafkaException(KafkaError("_INVALID_ARG", "commit() requires group.id"))
        if offsets is not None:
            to_commit = {tp.name: tp.offset for tp in offsets}
        elif message is not None:
            to_commit = {f"{message._topic}-{message._partition}": message._offset + 1}
        else:
            current = self.position(self.assignment())
            to_commit = {tp.name: tp.offset for tp in current if tp.offset >= 0}
        if self.fatal_error is not None:
            # rd_kafka_cgrp_offsets_commit: "Commits are not allowed when a fatal error has been raised"
            raise KafkaException(KafkaError("_FATAL", "Commit failed: Local: Fatal error", fatal=True))
        if not to_commit:
            raise KafkaException(KafkaError("_NO_OFFSET", "No offset to commit"))
        c = self.cluster
        box: dict[str, Any] = {}

        def send(broker: int) -> None:
            def handler(broker: int, reply: Reply) -> None:
                c.handle_offset_commit(
                    broker,
                    self.group,
                    self.generation if not self.manual else -1,
                    self.member_id or "",
                    to_commit,
                    reply,
                    self.group_instance_id if not self.manual else None,
                )

            def on_response(error: str | None, result: dict[str, Any]) -> None:
                box["error"] = error
                if error == "FENCED_INSTANCE_ID":  # rd_kafka_handle_OffsetCommit: ACTION_FATAL
                    self._set_fatal(error, f"OffsetCommit failed: {FENCED_INSTANCE_TEXT}")

            self._rpc(
                "OffsetCommit",
                broker,
                f"group coordinator(b{broker})",
                f"group {self.group_id} {', '.join(f'{k}={v}' for k, v in sorted(to_commit.items()))}",
                handler,
                on_response,
            )

        self._find_coordinator(self.group, "group", send)
        if asynchronous:
            return None
        self._wait(lambda: "error" in box, self._deadline(None, 10_000))
        if "error" not in box:
            raise KafkaException(KafkaError("_TIMED_OUT", "commit timed out"))
        if box["error"] is not None:
            if box["error"] == "FENCED_INSTANCE_ID":  # confluent-kafka's words for a failed commit
                raise KafkaException(KafkaError(box["error"], f"Commit failed: {FENCED_INSTANCE_TEXT}", fatal=True))
            raise KafkaException(KafkaError(box["error"]))
        return [self._tp(k, v) for k, v in sorted(to_commit.items())]

    def _start_auto_commit(self) -> None:
        if not self.enable_auto_commit or not self.group_id or self._auto_commit_started:
            return
        self._auto_commit_started = True

        def tick() -> None:
            if not self.alive:
                return
            try:
                if any(tp in self.positions for tp in self.assigned):
                    self.commit(asynchronous=True)
            except KafkaException:
                pass
            self.cluster.scheduler.after(
                self.auto_commit_interval_ms, tick, category="timer", label=f"{self.name} auto commit"
            )

        self.cluster.scheduler.after(
            self.auto_commit_interval_ms, tick, category="timer", label=f"{self.name} auto commit"
        )

    def consumer_group_metadata(self) -> GroupMetadata:
        if not self.group_id:
            raise KafkaException(KafkaError("_INVALID_ARG", "consumer_group_metadata() requires group.id"))
        return GroupMetadata(self.group_id, self.generation, self.member_id or "", self.group_instance_id)

    def close(self) -> None:
        if not self.alive:
            return
        if self.enable_auto_commit and self.group_id and self.positions:
            try:
                self.commit(asynchronous=False)
            except KafkaException:
                pass
        if self.group_id and self.member_id:
            if self.group_instance_id is None:
                self.cluster.handle_leave_group(self.group_id, self.member_id)
            else:
                # KIP-345: a static member sends no LeaveGroup on close (rd_kafka_cgrp_leave_maybe, and
                # kafka-clients' maybeLeaveGroup for a static member): its heartbeats stop, and it stays in the group
                # until its session times out, for its next instance to take its place without a rebalance
                self.cluster.member_crashed(self.group_id, self.member_id)
        self.alive = False
        self.state = CLOSED

    def crash(self) -> None:
        """The process dies: no LeaveGroup; the group notices when the session times out."""
        if self.group_id and self.member_id:
            self.cluster.member_crashed(self.group_id, self.member_id)
        self.alive = False
        self.state = CRASHED
        self._buffer.clear()
