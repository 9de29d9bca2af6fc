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

Follows core/src/main/scala/kafka/coordinator/group/GroupCoordinator.scala (handleJoinGroup, handleLeaveGroup,
handleCommitOffsets, handleTxnCommitOffsets, handleFetchOffsets, onCompleteTxn), GroupMetadata.scala (pending
transactional offsets) and GroupMetadataManager.scala (storeOffsets, partitionFor); the TV2 path
group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupCoordinatorService.java.

A state machine in the h11 style (effects.py): every input returns the effects the cluster carries out (answers,
events, the session timer, the offsets' write to `__consumer_offsets`, the AddPartitionsToTxn of a TV2
TxnOffsetCommit); it never calls the cluster. It learns which broker leads each `__consumer_offsets` partition and
which brokers are up from the cluster's inputs, and reads partition counts from the cluster's topic metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from playground.engine import events as ev
from playground.sim.clock import TIMER
from playground.sim.effects import Answer, Effect, Effects, Emit, Reply, Timer
from playground.sim.placement import partition_for

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


@dataclass(frozen=True, slots=True)
class TxnOffsetWrite:
    """A TxnOffsetCommit on its way to `__consumer_offsets`: what is written, and who waits for the answer."""

    group_id: str
    partition: str
    producer_id: int
    epoch: int
    offsets: dict[str, int]
    reply: Reply
    transactional_id: str | None = None


@dataclass(frozen=True, slots=True)
class AddOffsetsPartition(Effect):
    """A TV2 TxnOffsetCommit: the group coordinator on `broker` has the transaction coordinator add the offsets
    partition to the transaction (AddPartitionsToTxn v5, verifyOnly=false, through the broker's
    AddPartitionsToTxnManager); the answer comes back as GroupCoordinator.offsets_partition_added(write, error)."""

    broker: int
    write: TxnOffsetWrite


@dataclass(frozen=True, slots=True)
class AppendTxnOffsets(Effect):
    """Append `values` to `write.partition` as a transactional batch of the producer (not a client's: no sequence
    check). `verify`: the append's verification guard, the transaction (by transactional id) that must still hold
    the partition (else INVALID_PRODUCER_EPOCH, nothing written). The outcome comes back as
    GroupCoordinator.txn_offsets_appended(write, error)."""

    write: TxnOffsetWrite
    values: tuple[str, ...]
    verify: str | None


@dataclass(frozen=True, slots=True)
class SessionTimeout:
    """A timer's tick: `member` sent no heartbeat for session.timeout.ms."""

    group_id: str
    member: Member


class GroupCoordinator:
    def __init__(
        self, config: Mapping[str, Any], *, kafka: str, brokers: Iterable[int], topics: Mapping[str, int]
    ) -> None:
        self.kafka = kafka
        self.num_partitions = int(config.get("offsets.topic.num.partitions", 50))
        self.session_timeout_ms = 45_000
        self.groups: dict[str, Group] = {}
        # what the cluster tells: the leader of each __consumer_offsets partition, the brokers that are up, and the
        # topics' partition counts (the cluster's metadata, read-only here)
        self.leaders: dict[int, int | None] = {}
        self.live_brokers: set[int] = set(brokers)
        self.topics = topics

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def offsets_partition(self, group_id: str) -> str:
        return f"__consumer_offsets-{self.partition_for(group_id)}"

    def coordinator_of(self, group_id: str) -> int | None:
        return self.leaders.get(self.partition_for(group_id))

    def group(self, group_id: str) -> Group:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id)
        return g

    def _check(self, broker: int, group_id: str) -> str | None:
        if self.coordinator_of(group_id) != broker or broker not in self.live_brokers:
            return "NOT_COORDINATOR"
        return None

    # -- what the cluster tells -------------------------------------------------------------------------------
    def on_leader_change(self, partition: int, leader: int | None) -> None:
        self.leaders[partition] = leader

    def broker_stopped(self, broker: int) -> None:
        self.live_brokers.discard(broker)

    def broker_started(self, broker: int) -> None:
        self.live_brokers.add(broker)

    # -- membership -------------------------------------------------------------------------------------------
    def join(self, broker: int, group_id: str, client_id: str, topics: tuple[str, ...], reply: Reply) -> Effects:
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        g = self.group(group_id)
        g.next_member += 1
        member = Member(f"{client_id}-{g.next_member}", client_id, tuple(topics))
        g.members[member.member_id] = member
        return [*self._rebalance(g), Answer(reply, None, {"member_id": member.member_id})]

    def leave(self, group_id: str, member_id: str) -> Effects:
        g = self.groups.get(group_id)
        if g is not None and g.members.pop(member_id, None) is not None:
            return self._rebalance(g)
        return []

    def member_crashed(self, group_id: str, member_id: str, now_ms: int) -> Effects:
        """No more heartbeats: the member is evicted when its session times out."""
        g = self.groups.get(group_id)
        member = g.members.get(member_id) if g else None
        if member is None or not member.alive:
            return []
        member.alive = False
        tick = SessionTimeout(group_id, member)
        return [Timer(now_ms + self.session_timeout_ms, f"session timeout {member_id}", tick, category=TIMER)]

    def on_timer(self, tick: object, now_ms: int) -> Effects:
        if not isinstance(tick, SessionTimeout):
            raise ValueError(f"the group coordinator set no timer {tick!r}")
        g, member = self.groups[tick.group_id], tick.member
        if g.members.get(member.member_id) is member:
            del g.members[member.member_id]
            return self._rebalance(g)
        return []

    def _rebalance(self, g: Group) -> Effects:
        for m in g.members.values():
            m.assignment = ()
        if any(not m.alive for m in g.members.values()):
            # the rebalance waits for members that will never rejoin, until their sessions time out
            g.state = PREPARING_REBALANCE
            return []
        g.generation += 1
        g.state = STABLE if g.members else EMPTY
        self._assign_range(g)
        fields = {"group": g.group_id, "generation": g.generation, "members": tuple(sorted(g.members))}
        return [Emit(ev.GroupMembership, fields)]

    def _assign_range(self, g: Group) -> None:
        """The range assignor: per topic, contiguous partition ranges to members sorted by member id."""
        assigned: dict[str, list[str]] = {m: [] for m in g.members}
        topics = sorted({t for m in g.members.values() for t in m.topics})
        for topic in topics:
            subscribers = sorted(mid for mid, m in g.members.items() if topic in m.topics)
            n = self.topics.get(topic, 0)
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
    ) -> Effects:
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        g = self.group(group_id)
        if member_id and generation >= 0:
            if member_id not in g.members:
                return [Answer(reply, "UNKNOWN_MEMBER_ID")]
            if g.state != STABLE:
                return [Answer(reply, "REBALANCE_IN_PROGRESS")]
            if generation != g.generation:
                return [Answer(reply, "ILLEGAL_GENERATION")]
        g.committed.update(offsets)
        fields = {"group": group_id, "state": "committed", "offsets": tuple(sorted(offsets.items())), "producer_id": -1}
        return [Emit(ev.GroupOffsets, fields), Answer(reply, None)]

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
    ) -> Effects:
        """`version`: the TxnOffsetCommit version; v5+ on a 4.x cluster comes from a TV2 client whose
        transaction does not hold the offsets partition yet: the group coordinator has it added first."""
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        g = self.group(group_id)
        if member_id and generation >= 0:  # KIP-447 zombie fencing by group generation
            if member_id not in g.members:
                return [Answer(reply, "UNKNOWN_MEMBER_ID")]
            if generation != g.generation:
                return [Answer(reply, "ILLEGAL_GENERATION")]
        partition = self.offsets_partition(group_id)
        if self.kafka == "4" and version is not None and version >= 5 and transactional_id:
            write = TxnOffsetWrite(group_id, partition, producer_id, epoch, offsets, reply, transactional_id)
            return [AddOffsetsPartition(broker, write)]
        return [self._append(TxnOffsetWrite(group_id, partition, producer_id, epoch, offsets, reply), None)]

    def offsets_partition_added(self, write: TxnOffsetWrite, error: str | None) -> Effects:
        """The transaction coordinator's answer (as the leader's AddPartitionsToTxnManager reads it) to a TV2
        TxnOffsetCommit's AddPartitionsToTxn."""
        if error in ("NOT_ENOUGH_REPLICAS", "_TRANSPORT"):
            # GroupCoordinatorService.handleOperationException: NOT_ENOUGH_REPLICAS -> COORDINATOR_NOT_AVAILABLE
            error = "COORDINATOR_NOT_AVAILABLE"
        if error:
            return [Answer(write.reply, error)]
        return [self._append(write, write.transactional_id)]

    def _append(self, write: TxnOffsetWrite, verify: str | None) -> AppendTxnOffsets:
        values = tuple(f"{write.group_id}:{tp}={off}" for tp, off in sorted(write.offsets.items()))
        return AppendTxnOffsets(write, values, verify)

    def txn_offsets_appended(self, write: TxnOffsetWrite, error: str | None) -> Effects:
        """The offsets are in `__consumer_offsets` (pending until the transaction's marker), or were refused."""
        if error:
            return [Answer(write.reply, error)]
        self.group(write.group_id).pending.setdefault(write.producer_id, {}).update(write.offsets)
        fields = {
            "group": write.group_id,
            "state": "pending",
            "offsets": tuple(sorted(write.offsets.items())),
            "producer_id": write.producer_id,
        }
        return [Emit(ev.GroupOffsets, fields), Answer(write.reply, None)]

    def on_marker(self, offsets_partition: str, producer_id: int, control: str) -> Effects:
        """A transaction marker landed on a __consumer_offsets partition: settle that producer's pending offsets
        for the groups living there."""
        effects: Effects = []
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
            fields = {
                "group": g.group_id,
                "state": state,
                "offsets": tuple(sorted(pending.items())),
                "producer_id": producer_id,
            }
            effects.append(Emit(ev.GroupOffsets, fields))
        return effects

    def fetch_offsets(
        self, broker: int, group_id: str, partitions: tuple[str, ...], require_stable: bool, reply: Reply
    ) -> Effects:
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        g = self.group(group_id)
        if require_stable:
            for pending in g.pending.values():
                if any(tp in pending for tp in partitions):
                    return [Answer(reply, "UNSTABLE_OFFSET_COMMIT")]
        return [Answer(reply, None, {"offsets": {tp: g.committed.get(tp) for tp in partitions}})]

    def committed(self, group_id: str) -> dict[str, int]:
        g = self.groups.get(group_id)
        return dict(g.committed) if g else {}
