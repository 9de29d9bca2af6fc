"""The group coordinator: membership (eager rebalance, range assignment), committed offsets, and transactional
offsets (KIP-98/KIP-447; TV2 on a 4.x cluster: a TxnOffsetCommit v5+ adds the offsets partition to the transaction
itself, GroupCoordinatorService.commitTransactionalOffsets -> AddPartitionsToTxnManager, as there is no
AddOffsetsToTxn).

A group lives on the leader of `__consumer_offsets-partitionFor(group.id)`. TxnOffsetCommit writes the offsets
as a transactional batch of the producer to that partition, so they stay *pending*: the COMMIT marker written
there makes them the group's committed offsets, the ABORT marker drops them (GroupMetadata
prepareTxnOffsetCommit / completePendingTxnOffsetCommit). OffsetFetch with RequireStable answers
UNSTABLE_OFFSET_COMMIT while a partition has pending transactional offsets; read_committed consumers ask that way.

A consumer that crashes stays a member until session.timeout.ms passes without a heartbeat; a rebalance waits for
it (eager protocol: nobody has an assignment while the group is PreparingRebalance).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from playground.engine import events as ev
from playground.sim.clock import TIMER
from playground.sim.coordinator import partition_for

if TYPE_CHECKING:  # pragma: no cover
    from playground.sim.cluster import Cluster

STABLE = "Stable"
PREPARING_REBALANCE = "PreparingRebalance"
EMPTY = "Empty"


@dataclass
class Member:
    member_id: str
    client_id: str
    topics: tuple[str, ...]
    alive: bool = True
    assignment: tuple[str, ...] = ()


@dataclass
class Group:
    group_id: str
    generation: int = 0
    state: str = EMPTY
    members: dict[str, Member] = field(default_factory=dict)
    committed: dict[str, int] = field(default_factory=dict)
    # producer id -> partition -> offset: written by TxnOffsetCommit, waiting for the transaction's marker
    pending: dict[int, dict[str, int]] = field(default_factory=dict)
    next_member: int = 0


Reply = Callable[..., None]


class GroupCoordinator:
    def __init__(self, cluster: Cluster) -> None:
        self.c = cluster
        self.num_partitions = int(cluster.config.get("offsets.topic.num.partitions", 50))
        self.session_timeout_ms = 45_000
        self.groups: dict[str, Group] = {}

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def offsets_partition(self, group_id: str) -> str:
        return f"__consumer_offsets-{self.partition_for(group_id)}"

    def coordinator_of(self, group_id: str) -> int | None:
        return self.c.leader_of(self.offsets_partition(group_id))

    def group(self, group_id: str) -> Group:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id)
        return g

    def _check(self, broker: int, group_id: str) -> str | None:
        if self.coordinator_of(group_id) != broker or not self.c.broker_up(broker):
            return "NOT_COORDINATOR"
        return None

    # -- membership -------------------------------------------------------------------------------------------
    def join(self, broker: int, group_id: str, client_id: str, topics: tuple[str, ...], reply: Reply) -> None:
        error = self._check(broker, group_id)
        if error:
            reply(error)
            return
        g = self.group(group_id)
        g.next_member += 1
        member = Member(f"{client_id}-{g.next_member}", client_id, tuple(topics))
        g.members[member.member_id] = member
        self._rebalance(g)
        reply(None, member_id=member.member_id)

    def leave(self, group_id: str, member_id: str) -> None:
        g = self.groups.get(group_id)
        if g is not None and g.members.pop(member_id, None) is not None:
            self._rebalance(g)

    def member_crashed(self, group_id: str, member_id: str) -> None:
        """No more heartbeats: the member is evicted when its session times out."""
        g = self.groups.get(group_id)
        member = g.members.get(member_id) if g else None
        if member is None or not member.alive:
            return
        member.alive = False
        deadline = self.c.now_ms + self.session_timeout_ms

        def evict() -> None:
            if g.members.get(member_id) is member:
                del g.members[member_id]
                self._rebalance(g)

        self.c.scheduler.at(deadline, evict, category=TIMER, label=f"session timeout {member_id}")

    def _rebalance(self, g: Group) -> None:
        for m in g.members.values():
            m.assignment = ()
        if any(not m.alive for m in g.members.values()):
            # the rebalance waits for members that will never rejoin, until their sessions time out
            g.state = PREPARING_REBALANCE
            return
        g.generation += 1
        g.state = STABLE if g.members else EMPTY
        self._assign_range(g)
        self.c.emit(ev.GroupMembership, group=g.group_id, generation=g.generation, members=tuple(sorted(g.members)))

    def _assign_range(self, g: Group) -> None:
        """The range assignor: per topic, contiguous partition ranges to members sorted by member id."""
        assigned: dict[str, list[str]] = {m: [] for m in g.members}
        topics = sorted({t for m in g.members.values() for t in m.topics})
        for topic in topics:
            subscribers = sorted(mid for mid, m in g.members.items() if topic in m.topics)
            n = self.c.partition_count(topic)
            if not subscribers or n == 0:
                continue
            per, extra = divmod(n, len(subscribers))
            start = 0
            for i, mid in enumerate(subscribers):
                count = per + (1 if i < extra else 0)
                assigned[mid].extend(f"{topic}-{p}" for p in range(start, start + count))
                start += count
        for mid, parts in assigned.items():
            g.members[mid].assignment = tuple(parts)

    def assignment(self, group_id: str, member_id: str) -> tuple[int, tuple[str, ...]] | None:
        """(generation, partitions) once the group is Stable with this member in it; None while rebalancing."""
        g = self.groups.get(group_id)
        if g is None or g.state != STABLE or member_id not in g.members:
            return None
        return g.generation, g.members[member_id].assignment

    # -- offsets ----------------------------------------------------------------------------------------------
    def commit_offsets(
        self, broker: int, group_id: str, generation: int, member_id: str, offsets: dict[str, int], reply: Reply
    ) -> None:
        error = self._check(broker, group_id)
        if error:
            reply(error)
            return
        g = self.group(group_id)
        if member_id and generation >= 0:
            if member_id not in g.members:
                reply("UNKNOWN_MEMBER_ID")
                return
            if g.state != STABLE:
                reply("REBALANCE_IN_PROGRESS")
                return
            if generation != g.generation:
                reply("ILLEGAL_GENERATION")
                return
        g.committed.update(offsets)
        self.c.emit(
            ev.GroupOffsets, group=group_id, state="committed", offsets=tuple(sorted(offsets.items())), producer_id=-1
        )
        reply(None)

    def txn_commit_offsets(
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
        """`version`: the TxnOffsetCommit version; v5+ on a 4.x cluster comes from a TV2 client whose
        transaction does not hold the offsets partition yet: the group coordinator has it added first."""
        error = self._check(broker, group_id)
        if error:
            reply(error)
            return
        g = self.group(group_id)
        if member_id and generation >= 0:  # KIP-447 zombie fencing by group generation
            if member_id not in g.members:
                reply("UNKNOWN_MEMBER_ID")
                return
            if generation != g.generation:
                reply("ILLEGAL_GENERATION")
                return
        if self.c.kafka == "4" and version is not None and version >= 5 and transactional_id:
            self._add_then_write(broker, g, transactional_id, producer_id, epoch, offsets, reply)
            return
        self._write_txn_offsets(g, producer_id, epoch, offsets, reply)

    def _add_then_write(
        self,
        broker: int,
        g: Group,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        offsets: dict[str, int],
        reply: Reply,
    ) -> None:
        tc = self.c.txn_coordinator
        partition = self.offsets_partition(g.group_id)
        coordinator = tc.coordinator_of(transactional_id)

        def added(error: str | None) -> None:
            if error in ("NOT_ENOUGH_REPLICAS", "_TRANSPORT"):
                # GroupCoordinatorService.handleOperationException: NOT_ENOUGH_REPLICAS -> COORDINATOR_NOT_AVAILABLE
                error = "COORDINATOR_NOT_AVAILABLE"
            if error:
                reply(error)
                return
            if tc.in_transaction(transactional_id, producer_id, epoch, partition) is not None:
                reply("INVALID_PRODUCER_EPOCH")
                return
            self._write_txn_offsets(g, producer_id, epoch, offsets, reply)

        def handler(answer: Callable[..., None]) -> None:
            tc.add_partition_for_leader(coordinator, transactional_id, producer_id, epoch, partition, answer)

        if coordinator is None or not self.c.broker_up(coordinator):
            added("NOT_ENOUGH_REPLICAS")
            return
        self.c.rpc(
            "AddPartitionsToTxn",
            f"group coordinator(b{broker})",
            coordinator,
            f"coordinator(b{coordinator})",
            f"{partition}, producer {producer_id} epoch {epoch} (verifyOnly=false)",
            handler,
            lambda error, result: added(error),
            src_alive=lambda: self.c.broker_up(broker),
            src_broker=broker,
            version=5,
        )

    def _write_txn_offsets(self, g: Group, producer_id: int, epoch: int, offsets: dict[str, int], reply: Reply) -> None:
        group_id = g.group_id
        log = self.c.log(self.offsets_partition(group_id))
        values = tuple(f"{group_id}:{tp}={off}" for tp, off in sorted(offsets.items()))
        result = log.append(producer_id, epoch, -1, True, values, timestamp_ms=self.c.now_ms, from_client=False)
        if result.error:
            reply(result.error)
            return
        self.c.after_append(log, result, producer_id, epoch, True, values)
        g.pending.setdefault(producer_id, {}).update(offsets)
        self.c.emit(
            ev.GroupOffsets,
            group=group_id,
            state="pending",
            offsets=tuple(sorted(offsets.items())),
            producer_id=producer_id,
        )
        reply(None)

    def on_marker(self, offsets_partition: str, producer_id: int, control: str) -> None:
        """A transaction marker landed on a __consumer_offsets partition: settle that producer's pending offsets
        for the groups living there."""
        for g in self.groups.values():
            if self.offsets_partition(g.group_id) != offsets_partition:
                continue
            pending = g.pending.pop(producer_id, None)
            if pending is None:
                continue
            if control == "COMMIT":
                g.committed.update(pending)
                state = "committed"
            else:
                state = "dropped"
            self.c.emit(
                ev.GroupOffsets,
                group=g.group_id,
                state=state,
                offsets=tuple(sorted(pending.items())),
                producer_id=producer_id,
            )

    def fetch_offsets(
        self, broker: int, group_id: str, partitions: tuple[str, ...], require_stable: bool, reply: Reply
    ) -> None:
        error = self._check(broker, group_id)
        if error:
            reply(error)
            return
        g = self.group(group_id)
        if require_stable:
            for pending in g.pending.values():
                if any(tp in pending for tp in partitions):
                    reply("UNSTABLE_OFFSET_COMMIT")
                    return
        reply(None, offsets={tp: g.committed.get(tp) for tp in partitions})

    def committed(self, group_id: str) -> dict[str, int]:
        g = self.groups.get(group_id)
        return dict(g.committed) if g else {}
