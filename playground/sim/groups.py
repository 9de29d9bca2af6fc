"""The group coordinator: membership (eager rebalance, range assignment), committed offsets, and transactional
offsets (KIP-98/KIP-447; TV2 on a 4.x cluster: a TxnOffsetCommit v5+ adds the offsets partition to the transaction
itself, GroupCoordinatorService.commitTransactionalOffsets -> AddPartitionsToTxnManager, as there is no
AddOffsetsToTxn).

A group lives on the leader of `__consumer_offsets-partitionFor(group.id)`. TxnOffsetCommit writes the offsets
as a transactional batch of the producer to that partition, so they stay *pending*: the COMMIT marker written
there makes them the group's committed offsets, the ABORT marker drops them (GroupMetadata
prepareTxnOffsetCommit / completePendingTxnOffsetCommit). OffsetFetch with RequireStable answers
UNSTABLE_OFFSET_COMMIT while a partition has pending transactional offsets; read_committed consumers ask that way.

A rebalance (a member joins, leaves or its session times out) waits until every member has joined again (the
eager protocol): each keeps its partitions, in its generation, until it rejoins from its poll, and the generation
moves only when the last one has. A consumer that crashes stays a member until session.timeout.ms passes without a
heartbeat; a rebalance waits for it until then.

Two kinds of groups. The simulator's own consumer models join through `join` and `rejoin` (the coordinator assigns
ranges itself when the last member has joined: there is no SyncGroup). Clients speaking the Kafka protocol
(playground/simserver) run the classic group protocol: `join_group` / `sync_group` / `heartbeat` / `leave_group` as
GroupCoordinator.scala handles JoinGroup, SyncGroup, Heartbeat and LeaveGroup: their rounds are in classicgroups.py.
A group is one kind or the other: the other kind's join gets INCONSISTENT_GROUP_PROTOCOL. Static members
(group.instance.id, KIP-345) of either kind take their old member's place without a rebalance.

The module is split by idea: groupstate.py holds the groups and members and what every part needs (which broker
coordinates a group, who is a member); classicgroups.py the classic protocol's rounds; groupoffsets.py committed and
transactional offsets; this file the simulator's own consumers and the coordinator that joins the three. Follows
core/src/main/scala/kafka/coordinator/group/GroupCoordinator.scala (handleJoinGroup, handleLeaveGroup) and
GroupMetadataManager.scala (partitionFor).

A state machine in the h11 style (effects.py): every input returns the effects the cluster carries out (answers,
events, the session timer, the offsets' write to `__consumer_offsets`, the AddPartitionsToTxn of a TV2
TxnOffsetCommit); it never calls the cluster. It learns which broker leads each `__consumer_offsets` partition and
which brokers are up from the cluster's inputs, and reads partition counts from the cluster's topic metadata.
"""

from __future__ import annotations

from playground.sim.classicgroups import ClassicGroupProtocol
from playground.sim.clock import TIMER
from playground.sim.effects import Answer, Effects, Reply, Timer
from playground.sim.groupoffsets import (
    AddOffsetsPartition,
    AppendTxnOffsets,
    GroupOffsets,
    TxnOffsetWrite,
    VerifyOffsetsPartition,
)
from playground.sim.groupstate import (
    DEAD,
    EMPTY,
    JOIN,
    LEAVE,
    PREPARING_REBALANCE,
    SESSION_TIMEOUT,
    STABLE,
    STATIC_REJOIN,
    ClassicMember,
    Group,
    HeartbeatExpiry,
    JoinDeadline,
    Member,
    PendingMemberExpiry,
    SessionTimeout,
    SyncDeadline,
)

__all__ = [
    "DEAD",
    "AddOffsetsPartition",
    "AppendTxnOffsets",
    "ClassicMember",
    "GroupCoordinator",
    "TxnOffsetWrite",
    "VerifyOffsetsPartition",
]


class GroupCoordinator(ClassicGroupProtocol, GroupOffsets):
    """The group coordinator of one cluster: the simulator's own consumers' membership here, the classic protocol's
    and the offsets' inputs from its parts."""

    # -- membership -------------------------------------------------------------------------------------------
    def join(
        self,
        broker: int,
        group_id: str,
        client_id: str,
        topics: tuple[str, ...],
        reply: Reply,
        instance_id: str | None = None,
        now_ms: int = 0,
    ) -> Effects:
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        g = self.group(group_id)
        if g.classic:
            return [Answer(reply, "INCONSISTENT_GROUP_PROTOCOL")]
        g.next_member += 1
        member = Member(
            f"{instance_id or client_id}-{g.next_member}", client_id, tuple(topics), instance_id=instance_id
        )
        old_id = g.static_members.get(instance_id) if instance_id is not None else None
        if old_id is not None:
            replaced = self._replace_static(g, old_id, member, now_ms)
            return [*replaced, Answer(reply, None, {"member_id": member.member_id})]
        self._add(g, member)
        self._cause(g, JOIN, member)
        return [*self._rebalance(g, now_ms, member), Answer(reply, None, {"member_id": member.member_id})]

    def rejoin(self, broker: int, group_id: str, member_id: str, reply: Reply, now_ms: int = 0) -> Effects:
        """A member of the simulator's own consumers joins the rebalance in progress (its JoinGroup with its member
        id, sent from its poll once it knows of the rebalance): it gives up its partitions, and the next generation
        begins when it was the last to rejoin."""
        error = self._check(broker, group_id)
        g = self.groups.get(group_id)
        member = g.members.get(member_id) if g is not None else None
        if error or g is None or member is None:
            return [Answer(reply, error or "UNKNOWN_MEMBER_ID", {"member_id": member_id})]
        if g.state != PREPARING_REBALANCE:  # nothing to rejoin: a known member's JoinGroup in a Stable group
            return [Answer(reply, None, {"member_id": member_id})]
        member.joined = True
        member.assignment = ()
        return [*self._complete_when_joined(g, now_ms), Answer(reply, None, {"member_id": member_id})]

    def rejoin_needed(self, group_id: str, member_id: str) -> bool:
        """A query: whether a rebalance waits for this member to rejoin."""
        g = self.groups.get(group_id)
        member = g.members.get(member_id) if g is not None else None
        return g is not None and member is not None and g.state == PREPARING_REBALANCE and not member.joined

    def _replace_static(self, g: Group, old_id: str, member: Member, now_ms: int) -> Effects:
        """A known static member of the simulator's own consumers joins again (a restart, or a second instance with
        the same group.instance.id): the new member id takes the old one's place and assignment. A Stable group
        does not rebalance; a group waiting for members that went silent goes on waiting for the others."""
        old = g.members.pop(old_id)
        member.assignment = old.assignment
        self._add(g, member)
        self._cause(g, STATIC_REJOIN, member)
        if g.state == STABLE:
            return [self._membership(g, now_ms)]
        return self._rebalance(g, now_ms)

    def leave(self, group_id: str, member_id: str, now_ms: int = 0) -> Effects:
        g = self.groups.get(group_id)
        member = self._forget(g, member_id) if g is not None else None
        if g is not None and member is not None:
            self._cause(g, LEAVE, member)
            return self._rebalance(g, now_ms)
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
        if isinstance(tick, (HeartbeatExpiry, PendingMemberExpiry, JoinDeadline, SyncDeadline)):
            return self._classic_timer(tick, now_ms)
        if not isinstance(tick, SessionTimeout):
            raise ValueError(f"the group coordinator set no timer {tick!r}")
        g, member = self.groups[tick.group_id], tick.member
        if g.members.get(member.member_id) is member:
            self._forget(g, member.member_id)
            self._cause(g, SESSION_TIMEOUT, member)
            return self._rebalance(g, now_ms)
        return []

    def _rebalance(self, g: Group, now_ms: int, joiner: Member | None = None) -> Effects:
        """prepareRebalance, for the simulator's own consumers: a Stable group goes PreparingRebalance and every
        member must join again, except one that just joined (or took a static member's place). Until it does, a
        member keeps fetching its partitions in the old generation, and offsets it commits or a transaction sends
        for it in that generation are accepted (KIP-447 checks the generation, which has not moved yet). A member
        learns of the rebalance from a heartbeat answered REBALANCE_IN_PROGRESS (consumer.py) and rejoins from its
        next poll; one that crashed is waited for until its session times out."""
        if g.state == STABLE:
            g.state = PREPARING_REBALANCE
            for m in g.members.values():
                m.joined = m is joiner
        return self._complete_when_joined(g, now_ms)

    def _complete_when_joined(self, g: Group, now_ms: int) -> Effects:
        """The next generation, once every member has joined (range-assigned at once: there is no SyncGroup)."""
        if any(not m.joined for m in g.members.values()):
            g.state = PREPARING_REBALANCE
            return []
        g.generation += 1
        g.state = STABLE if g.members else EMPTY
        self._assign_range(g)
        return [self._membership(g, now_ms)]

    def _assign_range(self, g: Group) -> None:
        """The range assignor: per topic, contiguous partition ranges to members in the assignors' order
        (AbstractPartitionAssignor.MemberInfo: static members first, by group.instance.id, then the others by member
        id)."""
        assigned: dict[str, list[str]] = {m: [] for m in g.members}
        topics = sorted({t for m in g.members.values() for t in m.topics})

        def order(member_id: str) -> tuple[bool, str]:
            instance = g.members[member_id].instance_id
            return (instance is None, instance if instance is not None else member_id)

        for topic in topics:
            subscribers = sorted((mid for mid, m in g.members.items() if topic in m.topics), key=order)
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
        """(generation, partitions) of this member: in a Stable group, or in a rebalance it has not rejoined yet
        (what it had); None once it waits for the next generation."""
        g = self.groups.get(group_id)
        member = g.members.get(member_id) if g is not None else None
        if g is None or member is None:
            return None
        if g.state == STABLE or (g.state == PREPARING_REBALANCE and not member.joined):
            return g.generation, member.assignment
        return None
