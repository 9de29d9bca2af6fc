"""The classic group protocol, for clients speaking the Kafka protocol (playground/simserver): JoinGroup, SyncGroup,
Heartbeat and LeaveGroup as GroupCoordinator.scala handles them. A new member without an id is given one and asked to
rejoin (MEMBER_ID_REQUIRED, JoinGroup v4+); a join waits (DelayedJoin) until every member has rejoined or the
rebalance timeout, and the first rebalance of an empty group waits group.initial.rebalance.delay.ms more
(InitialDelayedJoin); the new generation's leader gets every member's metadata, assigns in its SyncGroup, and the
others' SyncGroups wait for it (each answered has its session restarted, propagateAssignment); a member without a
heartbeat (or an OffsetCommit of it: groupoffsets.py) for its session timeout is removed. A static member
(group.instance.id, KIP-345) that joins again takes its old member id's place: a Stable group does not rebalance,
LeaveGroup names members by instance id (v3+), and a request from an older instance is FENCED_INSTANCE_ID.

Follows core/src/main/scala/kafka/coordinator/group/GroupCoordinator.scala (handleJoinGroup, handleSyncGroup,
handleHeartbeat, handleLeaveGroup, updateStaticMemberAndRebalance, onCompleteJoin, schedulePendingSync) and
MemberMetadata.scala; on 4.x group-coordinator/src/main/java/org/apache/kafka/coordinator/group/
GroupMetadataManager.java (classicGroupJoin, classicGroupSync, classicGroupHeartbeat, classicGroupLeave).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.sim.clock import TIMER
from playground.sim.effects import Answer, Effects, Reply, Timer
from playground.sim.groupstate import (
    COMPLETING_REBALANCE,
    EMPTY,
    JOIN,
    LEAVE,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    PREPARING_REBALANCE,
    REJOIN,
    SESSION_TIMEOUT,
    STABLE,
    STATIC_REJOIN,
    SYNC_TIMEOUT,
    ClassicMember,
    Group,
    GroupRegistry,
    HeartbeatExpiry,
    JoinDeadline,
    PendingMemberExpiry,
    SyncDeadline,
)
from playground.sim.placement import java_string_hash


class ClassicGroupProtocol(GroupRegistry):
    # -- the classic group protocol (clients over the Kafka protocol) ----------------------------------------
    def join_group(
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
        now_ms: int,
        *,
        instance_id: str | None = None,
        supports_skipping_assignment: bool = False,
    ) -> Effects:
        """GroupCoordinator.handleJoinGroup. The answer (maybe later: DelayedJoin) is reply(error, member_id=,
        generation_id=, protocol_type=, protocol_name=, leader=, skip_assignment=, members=[(member_id,
        group_instance_id, metadata)]) where only the leader gets the members. `instance_id`: group.instance.id
        (JoinGroup v5+); `supports_skipping_assignment`: JoinGroup v9+ (KIP-814)."""
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error, {"member_id": member_id})]
        if not group_id:
            return [Answer(reply, "INVALID_GROUP_ID", {"member_id": member_id})]
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            return [Answer(reply, "INVALID_SESSION_TIMEOUT", {"member_id": member_id})]
        g = self.groups.get(group_id)
        if g is None and member_id:
            return [Answer(reply, "UNKNOWN_MEMBER_ID", {"member_id": member_id})]
        g = self.group(group_id)
        if not self._supports(g, protocol_type, protocols):
            return [Answer(reply, "INCONSISTENT_GROUP_PROTOCOL", {"member_id": member_id})]
        if not member_id:
            g.next_member += 1
            # GroupMetadata.generateMemberId: a static member's id starts with its instance id
            new_id = f"{instance_id or client_id}-{_member_uuid(group_id, g.next_member)}"
            if instance_id is not None and instance_id in g.static_members:
                return self._update_static_member(
                    g,
                    g.static_members[instance_id],
                    new_id,
                    protocols,
                    session_timeout_ms,
                    rebalance_timeout_ms,
                    reply,
                    now_ms,
                    supports_skipping_assignment,
                )
            if require_known_member_id and instance_id is None:
                g.pending_members.add(new_id)
                expiry = PendingMemberExpiry(group_id, new_id)
                timer = Timer(now_ms + session_timeout_ms, f"pending member {new_id}", expiry, category=TIMER)
                return [timer, Answer(reply, "MEMBER_ID_REQUIRED", {"member_id": new_id})]
            return self._add_member(
                g,
                new_id,
                client_id,
                client_host,
                session_timeout_ms,
                rebalance_timeout_ms,
                protocol_type,
                protocols,
                reply,
                now_ms,
                instance_id,
            )
        if member_id in g.pending_members:
            if instance_id is not None:
                # "Received unexpected JoinGroup with groupInstanceId for pending member": Kafka throws
                # IllegalStateException, which the request answers as UNKNOWN_SERVER_ERROR
                return [Answer(reply, "UNKNOWN_SERVER_ERROR", {"member_id": member_id})]
            g.pending_members.discard(member_id)
            return self._add_member(
                g,
                member_id,
                client_id,
                client_host,
                session_timeout_ms,
                rebalance_timeout_ms,
                protocol_type,
                protocols,
                reply,
                now_ms,
            )
        error = self._validate_member(g, member_id, instance_id)
        if error:
            return [Answer(reply, error, {"member_id": member_id})]
        member = g.members[member_id]
        assert isinstance(member, ClassicMember)  # a group is of one kind, and this one is classic
        if g.state == PREPARING_REBALANCE:
            return self._update_and_rebalance(
                g, member, protocols, session_timeout_ms, rebalance_timeout_ms, reply, now_ms
            )
        if g.state == COMPLETING_REBALANCE:
            if member.protocols == protocols:  # it missed the answer: the current generation again
                return [Answer(reply, None, self._join_result(g, member, g.leader_id == member_id))]
            return self._update_and_rebalance(
                g, member, protocols, session_timeout_ms, rebalance_timeout_ms, reply, now_ms
            )
        if g.state == STABLE:
            if g.leader_id == member_id or member.protocols != protocols:
                # the leader's join starts a rebalance (for what only it sees, e.g. new partitions)
                return self._update_and_rebalance(
                    g, member, protocols, session_timeout_ms, rebalance_timeout_ms, reply, now_ms
                )
            return [Answer(reply, None, self._join_result(g, member, False))]
        return [Answer(reply, "UNKNOWN_MEMBER_ID", {"member_id": member_id})]  # Empty, Dead

    def sync_group(
        self,
        broker: int,
        group_id: str,
        generation: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
        reply: Reply,
        now_ms: int,
        instance_id: str | None = None,
    ) -> Effects:
        """GroupCoordinator.handleSyncGroup: reply(error, protocol_type=, protocol_name=, assignment=bytes), the
        followers' once the leader's SyncGroup brings the assignment. `instance_id`: SyncGroup v3+."""
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        g = self.groups.get(group_id)
        if g is None:
            return [Answer(reply, "UNKNOWN_MEMBER_ID")]
        error = self._validate_member(g, member_id, instance_id)
        if error:
            return [Answer(reply, error)]
        member = g.members[member_id]
        if not isinstance(member, ClassicMember):
            return [Answer(reply, "UNKNOWN_MEMBER_ID")]
        if generation != g.generation:
            return [Answer(reply, "ILLEGAL_GENERATION")]
        if (protocol_type is not None and protocol_type != g.protocol_type) or (
            protocol_name is not None and protocol_name != g.protocol_name
        ):
            return [Answer(reply, "INCONSISTENT_GROUP_PROTOCOL")]
        if g.state == EMPTY:
            return [Answer(reply, "UNKNOWN_MEMBER_ID")]
        if g.state == PREPARING_REBALANCE:
            return [Answer(reply, "REBALANCE_IN_PROGRESS")]
        if g.state == STABLE:
            g.pending_sync.discard(member_id)
            return [*self._heartbeat(g, member, now_ms), Answer(reply, None, self._sync_result(g, member))]
        # CompletingRebalance
        member.awaiting_sync = reply
        g.pending_sync.discard(member_id)
        if g.leader_id != member_id:
            return []
        effects: Effects = []
        for m in self._classic_members(g):
            m.member_assignment = bytes(assignments.get(m.member_id, b""))
            if m.awaiting_sync is not None:
                # propagateAssignment: a member given its assignment has its session restarted from now
                effects += self._heartbeat(g, m, now_ms)
                effects.append(Answer(m.awaiting_sync, None, self._sync_result(g, m)))
                m.awaiting_sync = None
        g.state = STABLE
        effects.append(self._membership(g, now_ms))
        return effects

    def heartbeat(
        self,
        broker: int,
        group_id: str,
        generation: int,
        member_id: str,
        reply: Reply,
        now_ms: int,
        instance_id: str | None = None,
    ) -> Effects:
        """GroupCoordinator.handleHeartbeat (`instance_id`: Heartbeat v3+). The simulator's own consumers send it
        only as static members, to learn whether another instance took their group.instance.id (the model knows
        their liveness otherwise): it keeps no session for them."""
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        answer = self.heartbeat_error(group_id, member_id, instance_id, generation)
        if answer not in (None, "REBALANCE_IN_PROGRESS"):
            return [Answer(reply, answer)]
        member = self.groups[group_id].members[member_id]
        session = self._heartbeat(self.groups[group_id], member, now_ms) if isinstance(member, ClassicMember) else []
        return [*session, Answer(reply, answer)]

    def heartbeat_error(self, group_id: str, member_id: str, instance_id: str | None, generation: int) -> str | None:
        """A query: what a Heartbeat of this member would be answered at the group (its coordinator aside)."""
        g = self.groups.get(group_id)
        if g is None:
            return "UNKNOWN_MEMBER_ID"
        error = self._validate_member(g, member_id, instance_id)
        if error is None and generation != g.generation:
            error = "ILLEGAL_GENERATION"
        if error is None and g.state == EMPTY:
            error = "UNKNOWN_MEMBER_ID"
        if error is None and g.state == PREPARING_REBALANCE:
            error = "REBALANCE_IN_PROGRESS"
        return error

    def leave_group(
        self,
        broker: int,
        group_id: str,
        leaving: tuple[tuple[str, str | None], ...],
        reply: Reply,
        now_ms: int,
    ) -> Effects:
        """GroupCoordinator.handleLeaveGroup: `leaving` is (member id, group instance id) per member (LeaveGroup
        v3+ names members by either: an empty member id with an instance id removes that instance's member, as an
        administrator does); reply(error, errors=[error per member, in order])."""
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        g = self.groups.get(group_id)
        if g is None:
            return [Answer(reply, None, {"errors": ["UNKNOWN_MEMBER_ID"] * len(leaving)})]
        effects: Effects = []
        errors: list[str | None] = []
        for member_id, instance_id in leaving:
            if not member_id:
                current = g.static_members.get(instance_id) if instance_id is not None else None
                member = g.members.get(current) if current is not None else None
                if isinstance(member, ClassicMember):
                    effects += self._remove_member(g, member, now_ms, LEAVE)
                    errors.append(None)
                else:
                    errors.append("UNKNOWN_MEMBER_ID")
            elif member_id in g.pending_members:
                g.pending_members.discard(member_id)
                errors.append(None)
                effects += self._maybe_complete_join(g, now_ms)
            else:
                error = self._validate_member(g, member_id, instance_id)
                member = g.members.get(member_id)
                if error is None and isinstance(member, ClassicMember):
                    effects += self._remove_member(g, member, now_ms, LEAVE)
                errors.append(error or (None if isinstance(member, ClassicMember) else "UNKNOWN_MEMBER_ID"))
        return [*effects, Answer(reply, None, {"errors": errors})]

    # the protocol's inner steps
    def _supports(self, g: Group, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """GroupMetadata.supportsProtocols: an empty group takes any; a group of the simulator's own consumers
        none; otherwise the type must match and one protocol be shared with every member."""
        if not protocol_type or not protocols:
            return False
        if g.members and not g.classic:
            return False
        if g.state == EMPTY:
            return True
        names = {name for name, _ in protocols}
        return g.protocol_type == protocol_type and bool(names & self._candidates(g))

    def _candidates(self, g: Group) -> set[str]:
        members = self._classic_members(g)
        if not members:
            return set()
        common = {name for name, _ in members[0].protocols}
        for m in members[1:]:
            common &= {name for name, _ in m.protocols}
        return common

    def _classic_members(self, g: Group) -> list[ClassicMember]:
        return [m for m in g.members.values() if isinstance(m, ClassicMember)]

    def _add_member(
        self,
        g: Group,
        member_id: str,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: tuple[tuple[str, bytes], ...],
        reply: Reply,
        now_ms: int,
        instance_id: str | None = None,
    ) -> Effects:
        """addMemberAndRebalance: a new member waits in its JoinGroup; it expires after NewMemberJoinTimeoutMs."""
        member = ClassicMember(
            member_id,
            client_id,
            (),
            instance_id=instance_id,
            client_host=client_host,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            awaiting_join=reply,
            heartbeat_deadline_ms=now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS,
        )
        if g.state == PREPARING_REBALANCE and g.generation == 0:
            g.new_member_added = True
        g.protocol_type = protocol_type
        self._add(g, member)
        if g.leader_id is None:
            g.leader_id = member_id
        expiry = HeartbeatExpiry(g.group_id, member, member.heartbeat_deadline_ms)
        timer = Timer(member.heartbeat_deadline_ms, f"join timeout {member_id}", expiry, category=TIMER)
        self._cause(g, JOIN, member)
        return [timer, *self._maybe_prepare_rebalance(g, now_ms)]

    def _update_static_member(
        self,
        g: Group,
        old_id: str,
        new_id: str,
        protocols: tuple[tuple[str, bytes], ...],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        reply: Reply,
        now_ms: int,
        supports_skipping_assignment: bool,
    ) -> Effects:
        """updateStaticMemberAndRebalance (3.x) / updateStaticMemberThenRebalanceOrCompleteJoin (4.x): the instance's
        member gets the new id (GroupMetadata.replaceStaticMember: an older instance's JoinGroup or SyncGroup still
        waiting is answered FENCED_INSTANCE_ID), keeps its assignment, and waits in its JoinGroup; a Stable group
        whose selected protocol stays answers it at once with the current generation (the leader's id as it was,
        so that a member that was the leader does not assign; from JoinGroup v9 the leader is told it leads and to
        skip the assignment), any other state rebalances or goes on rebalancing."""
        effects: Effects = []
        current_leader = g.leader_id
        member = g.members.pop(old_id)
        assert isinstance(member, ClassicMember)
        if member.awaiting_join is not None:
            effects.append(Answer(member.awaiting_join, "FENCED_INSTANCE_ID", {"member_id": old_id}))
            member.awaiting_join = None
        if member.awaiting_sync is not None:
            effects.append(Answer(member.awaiting_sync, "FENCED_INSTANCE_ID"))
            member.awaiting_sync = None
        member.member_id = new_id
        self._add(g, member)
        if g.leader_id == old_id:
            g.leader_id = new_id
        effects += self._heartbeat(g, member, now_ms)
        member.protocols = protocols
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.awaiting_join = reply
        self._cause(g, STATIC_REJOIN, member)
        if g.state == STABLE:
            if g.protocol_name != self._select_protocol(g):
                return [*effects, *self._maybe_prepare_rebalance(g, now_ms)]
            member.awaiting_join = None
            skip = supports_skipping_assignment and g.leader_id == new_id
            result = self._join_result(g, member, skip)
            result.update(
                skip_assignment=skip, leader=(g.leader_id if supports_skipping_assignment else current_leader) or ""
            )
            return [*effects, Answer(reply, None, result), self._membership(g, now_ms)]
        if g.state == COMPLETING_REBALANCE:
            # the leader may already have been given the old member id to assign to: a new rebalance
            return [*effects, *self._prepare_rebalance(g, now_ms)]
        return [*effects, *self._maybe_complete_join(g, now_ms)]  # PreparingRebalance

    def _update_and_rebalance(
        self,
        g: Group,
        member: ClassicMember,
        protocols: tuple[tuple[str, bytes], ...],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        reply: Reply,
        now_ms: int,
    ) -> Effects:
        member.protocols = protocols
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        self._cause(g, REJOIN, member)
        if member.awaiting_join is not None:  # a JoinGroup sent again while the first waits: the first is answered
            stale = member.awaiting_join
            member.awaiting_join = reply
            return [
                Answer(stale, "UNKNOWN_MEMBER_ID", {"member_id": member.member_id}),
                *self._maybe_prepare_rebalance(g, now_ms),
            ]
        member.awaiting_join = reply
        return self._maybe_prepare_rebalance(g, now_ms)

    def _maybe_prepare_rebalance(self, g: Group, now_ms: int) -> Effects:
        if g.state in (STABLE, COMPLETING_REBALANCE, EMPTY):
            return self._prepare_rebalance(g, now_ms)
        return self._maybe_complete_join(g, now_ms)

    def _prepare_rebalance(self, g: Group, now_ms: int) -> Effects:
        effects: Effects = []
        if g.state == COMPLETING_REBALANCE:  # resetAndPropagateAssignmentError: the syncs waiting must rejoin
            for m in self._classic_members(g):
                m.member_assignment = b""
                if m.awaiting_sync is not None:
                    effects.append(Answer(m.awaiting_sync, "REBALANCE_IN_PROGRESS"))
                    m.awaiting_sync = None
        g.pending_sync.clear()
        was_empty = g.state == EMPTY
        g.state = PREPARING_REBALANCE
        g.join_round += 1
        rebalance_ms = max((m.rebalance_timeout_ms for m in self._classic_members(g)), default=0)
        if was_empty:
            # InitialDelayedJoin: wait for the group's other first members, up to the rebalance timeout
            delay = self.initial_rebalance_delay_ms
            g.new_member_added = False
            g.initial_join = True
            tick = JoinDeadline(g.group_id, g.join_round, True, max(rebalance_ms - delay, 0))
            effects.append(Timer(now_ms + delay, f"initial join {g.group_id}", tick, category=TIMER))
            return effects
        tick = JoinDeadline(g.group_id, g.join_round, False, 0)
        effects.append(Timer(now_ms + rebalance_ms, f"join {g.group_id}", tick, category=TIMER))
        return [*effects, *self._maybe_complete_join(g, now_ms)]

    def _maybe_complete_join(self, g: Group, now_ms: int) -> Effects:
        """DelayedJoin.tryComplete: done once every member waits in a JoinGroup and no new member is pending. An
        initial join (InitialDelayedJoin) only ends with its timer."""
        if g.state != PREPARING_REBALANCE or g.pending_members or g.initial_join:
            return []
        if all(m.awaiting_join is not None for m in self._classic_members(g)):
            return self._complete_join(g, now_ms)
        return []

    def _complete_join(self, g: Group, now_ms: int) -> Effects:
        """onCompleteJoin: dynamic members that did not rejoin are removed (static ones stay, with their metadata
        for the leader to assign to), the next generation begins; if no member rejoined, the join waits another
        rebalance timeout for the session timeouts to remove the silent ones."""
        effects: Effects = []
        for m in [m for m in self._classic_members(g) if m.awaiting_join is None and m.instance_id is None]:
            self._forget(g, m.member_id)
        if g.leader_id not in g.members:
            g.leader_id = next(iter(g.members), None)
        if g.members and not self._elect_joined_leader(g):
            g.join_round += 1
            rebalance_ms = max(m.rebalance_timeout_ms for m in self._classic_members(g))
            again = JoinDeadline(g.group_id, g.join_round, False, 0)
            return [Timer(now_ms + rebalance_ms, f"join {g.group_id}", again, category=TIMER)]
        g.generation += 1
        g.join_round += 1  # the delayed join is over: its timer does nothing
        g.initial_join = False
        if not g.members:
            g.state = EMPTY
            g.protocol_name = None
            g.leader_id = None
            return [*effects, self._membership(g, now_ms)]
        g.protocol_name = self._select_protocol(g)
        g.state = COMPLETING_REBALANCE
        for m in self._classic_members(g):
            if m.awaiting_join is not None:  # a static member that did not rejoin has nothing waiting
                effects.append(Answer(m.awaiting_join, None, self._join_result(g, m, g.leader_id == m.member_id)))
                m.awaiting_join = None
            m.is_new = False
            effects += self._heartbeat(g, m, now_ms)
            g.pending_sync.add(m.member_id)
        rebalance_ms = max(m.rebalance_timeout_ms for m in self._classic_members(g))
        tick = SyncDeadline(g.group_id, g.generation)
        effects.append(Timer(now_ms + rebalance_ms, f"sync {g.group_id}", tick, category=TIMER))
        return effects

    @staticmethod
    def _elect_joined_leader(g: Group) -> bool:
        """GroupMetadata.maybeElectNewJoinedLeader: a leader that did not rejoin (a static member) hands over to one
        that did; False when nobody rejoined."""
        leader = g.members.get(g.leader_id) if g.leader_id is not None else None
        if not isinstance(leader, ClassicMember):
            return False
        if leader.awaiting_join is not None:
            return True
        joined = next((m for m in g.members.values() if isinstance(m, ClassicMember) and m.awaiting_join), None)
        if joined is None:
            return False
        g.leader_id = joined.member_id
        return True

    def _select_protocol(self, g: Group) -> str:
        """GroupMetadata.selectProtocol: each member votes for its first choice among the protocols all support."""
        candidates = self._candidates(g)
        votes: dict[str, int] = {}
        for m in self._classic_members(g):
            choice = next(name for name, _ in m.protocols if name in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def _join_result(self, g: Group, member: ClassicMember, leader: bool) -> dict[str, Any]:
        return {
            "member_id": member.member_id,
            "generation_id": g.generation,
            "protocol_type": g.protocol_type,
            "protocol_name": g.protocol_name,
            "leader": g.leader_id or "",
            "members": [(m.member_id, m.instance_id, m.metadata(g.protocol_name)) for m in self._classic_members(g)]
            if leader
            else [],
        }

    def _sync_result(self, g: Group, member: ClassicMember) -> dict[str, Any]:
        return {
            "protocol_type": g.protocol_type,
            "protocol_name": g.protocol_name,
            "assignment": member.member_assignment,
        }

    def _heartbeat(self, g: Group, member: ClassicMember, now_ms: int) -> Effects:
        return session_kept(g, member, now_ms)

    def _remove_member(self, g: Group, member: ClassicMember, now_ms: int, cause: str) -> Effects:
        """removeMemberAndUpdateGroup: a JoinGroup it left waiting is answered UNKNOWN_MEMBER_ID."""
        effects: Effects = []
        self._cause(g, cause, member)
        if member.awaiting_join is not None:
            effects.append(Answer(member.awaiting_join, "UNKNOWN_MEMBER_ID", {"member_id": ""}))
            member.awaiting_join = None
        self._forget(g, member.member_id)
        g.pending_sync.discard(member.member_id)
        if g.leader_id == member.member_id:
            g.leader_id = next(iter(g.members), None)
        if g.state in (STABLE, COMPLETING_REBALANCE):
            effects += self._prepare_rebalance(g, now_ms)
        elif g.state == PREPARING_REBALANCE:
            effects += self._maybe_complete_join(g, now_ms)
        return effects

    def _classic_timer(self, tick: object, now_ms: int) -> Effects:
        if isinstance(tick, HeartbeatExpiry):
            g = self.groups.get(tick.group_id)
            member = tick.member
            if g is None or g.members.get(member.member_id) is not member:
                return []
            if member.heartbeat_deadline_ms != tick.deadline_ms:
                return []  # a later heartbeat moved the deadline
            if not member.is_new and (member.awaiting_join is not None or member.awaiting_sync is not None):
                return []  # hasSatisfiedHeartbeat: a member waiting for the rebalance is alive
            return self._remove_member(g, member, now_ms, SESSION_TIMEOUT)
        if isinstance(tick, PendingMemberExpiry):
            g = self.groups.get(tick.group_id)
            if g is None or tick.member_id not in g.pending_members:
                return []
            g.pending_members.discard(tick.member_id)
            return self._maybe_complete_join(g, now_ms)
        if isinstance(tick, JoinDeadline):
            g = self.groups.get(tick.group_id)
            if g is None or g.join_round != tick.round or g.state != PREPARING_REBALANCE:
                return []
            if tick.initial and g.new_member_added and tick.remaining_ms > 0:
                # InitialDelayedJoin.onComplete: more members came meanwhile, and there is time left: wait again
                g.new_member_added = False
                delay = min(self.initial_rebalance_delay_ms, tick.remaining_ms)
                again = JoinDeadline(g.group_id, g.join_round, True, max(tick.remaining_ms - delay, 0))
                return [Timer(now_ms + delay, f"initial join {g.group_id}", again, category=TIMER)]
            return self._complete_join(g, now_ms)
        if isinstance(tick, SyncDeadline):
            g = self.groups.get(tick.group_id)
            if g is None or g.generation != tick.generation or g.state not in (COMPLETING_REBALANCE, STABLE):
                return []
            if not g.pending_sync:
                return []
            # onExpirePendingSync, in CompletingRebalance and Stable alike: the members that never synced leave (a
            # Stable group's leader synced, a member that did not still holds nothing)
            for member_id in sorted(g.pending_sync):
                if isinstance(g.members.get(member_id), ClassicMember):
                    self._forget(g, member_id)
                    if g.leader_id == member_id:
                        g.leader_id = next(iter(g.members), None)
            g.pending_sync.clear()
            self._cause(g, SYNC_TIMEOUT, None)
            return self._prepare_rebalance(g, now_ms)
        raise ValueError(f"the group coordinator set no timer {tick!r}")


def _member_uuid(group_id: str, n: int) -> str:
    """A member id's UUID part (Kafka draws one at random): fixed by the group and how many joined before, so the
    same requests give the same ids. SplitMix64 over the group's hash, formatted as a UUID."""
    state = (java_string_hash(group_id) & 0xFFFFFFFF) << 20 | n
    words = []
    for _ in range(2):
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        words.append(z ^ (z >> 31))
    h = f"{words[0]:016x}{words[1]:016x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_MASK64 = (1 << 64) - 1


def session_kept(g: Group, member: ClassicMember, now_ms: int) -> Effects:
    """completeAndScheduleNextHeartbeatExpiration: the member's session deadline moves on (a Heartbeat, a JoinGroup
    or SyncGroup of it, and its OffsetCommit in a Stable group or one preparing a rebalance)."""
    member.heartbeat_deadline_ms = now_ms + member.session_timeout_ms
    tick = HeartbeatExpiry(g.group_id, member, member.heartbeat_deadline_ms)
    return [Timer(member.heartbeat_deadline_ms, f"session timeout {member.member_id}", tick, category=TIMER)]
