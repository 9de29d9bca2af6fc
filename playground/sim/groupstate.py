"""The group coordinator's state: groups, members, the timers' ticks, and what every part of the coordinator needs
(which broker coordinates a group, who is a member of it, the membership event). The coordinator itself is
groups.py; its parts classicgroups.py and groupoffsets.py build on `GroupRegistry`.

Follows core/src/main/scala/kafka/coordinator/group/GroupMetadata.scala and MemberMetadata.scala (the group's and a
member's state), GroupCoordinator.scala (validateCurrentMember) and GroupMetadataManager.scala (partitionFor).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from playground.engine import events as ev
from playground.sim.effects import Emit, Reply
from playground.sim.placement import partition_for, setting_true

STABLE = "Stable"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
EMPTY = "Empty"
DEAD = "Dead"

REBALANCES_KEPT = 16  # a group's last rebalances, for the dashboard
TXN_CHECKS_KEPT = 8  # a group's last TxnOffsetCommits, for the dashboard
CAUSES_KEPT = 8  # of one rebalance: what started it and what joined it before it completed

# Why a rebalance began (GroupCoordinator.prepareRebalance's reasons, in a word each) with the member concerned
JOIN, REJOIN, LEAVE, SESSION_TIMEOUT, STATIC_REJOIN, SYNC_TIMEOUT = (
    "join",
    "rejoin",
    "leave",
    "session timeout",
    "static rejoin",
    "sync timeout",
)

# GroupConfig defaults (group.initial.rebalance.delay.ms, group.min/max.session.timeout.ms) and
# GroupCoordinator.NewMemberJoinTimeoutMs
INITIAL_REBALANCE_DELAY_MS = 3000
MIN_SESSION_TIMEOUT_MS = 6000
MAX_SESSION_TIMEOUT_MS = 1_800_000
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


@dataclass
class Member:
    member_id: str
    client_id: str
    topics: tuple[str, ...]
    alive: bool = True
    assignment: tuple[str, ...] = ()
    instance_id: str | None = None  # group.instance.id: a static member
    # joined the rebalance in progress (the eager protocol: the next generation waits until every member has)
    joined: bool = True


@dataclass
class ClassicMember(Member):
    """A member that speaks the classic group protocol (MemberMetadata.scala)."""

    client_host: str = ""
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 300_000
    protocol_type: str = ""
    protocols: tuple[tuple[str, bytes], ...] = ()
    member_assignment: bytes = b""
    awaiting_join: Reply | None = None
    awaiting_sync: Reply | None = None
    is_new: bool = True
    heartbeat_deadline_ms: int = 0

    def metadata(self, protocol: str | None) -> bytes:
        return next((data for name, data in self.protocols if name == protocol), b"")


# (committed leader epoch, committed metadata) as a commit carried them (OffsetCommit v6+ and TxnOffsetCommit v2+
# carry the epoch, both the metadata): the client's own record of where it was, kept and answered back unread
OffsetMeta = tuple[int, str]
NO_META: OffsetMeta = (-1, "")


@dataclass
class Group:
    group_id: str
    generation: int = 0
    state: str = EMPTY
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # group.instance.id -> its member id
    committed: dict[str, int] = field(default_factory=dict)
    # what was committed with each offset beside it (OffsetAndMetadata's leader epoch and metadata, which OffsetFetch
    # answers): absent for a commit that carried neither (-1 and "")
    committed_meta: dict[str, OffsetMeta] = field(default_factory=dict)
    # producer id -> partition -> offset: written by TxnOffsetCommit, waiting for the transaction's marker
    pending: dict[int, dict[str, int]] = field(default_factory=dict)
    pending_meta: dict[int, dict[str, OffsetMeta]] = field(default_factory=dict)
    # where each committed and pending offset's record stands in __consumer_offsets (GroupRegistry.records): a
    # transaction's offset replaces the committed one at its marker only if its record came later (KAFKA-5247)
    committed_at: dict[str, int] = field(default_factory=dict)
    pending_at: dict[int, dict[str, int]] = field(default_factory=dict)
    # Kafka 3.5 only (KAFKA-16371, fixed in 3.7.1): the partitions of a commit that also wrote others but whose own
    # metadata was too large stay pending, never written: a plain commit's until a later commit of the partition is
    # written (pendingOffsetCommits), a transaction's (producer id -> partition -> offset) until its marker
    never_written: set[str] = field(default_factory=set)
    never_written_txn: dict[int, dict[str, int]] = field(default_factory=dict)
    next_member: int = 0
    # the classic protocol's (None for the simulator's own consumers)
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    pending_members: set[str] = field(default_factory=set)  # given an id, not yet rejoined with it
    pending_sync: set[str] = field(default_factory=set)
    join_round: int = 0  # the delayed join in progress (a timer of an older one does nothing)
    new_member_added: bool = False
    initial_join: bool = False  # the first rebalance of an empty group: it ends with its timer only
    # For the dashboard: what started the rebalance in progress ((cause, the member's client.id), in order), and
    # the last rebalances as they completed: (time_ms, generation, causes, members' client.ids)
    causes: list[tuple[str, str]] = field(default_factory=list)
    rebalances: list[tuple[int, int, tuple[tuple[str, str], ...], tuple[str, ...]]] = field(default_factory=list)
    # the last TxnOffsetCommits' KIP-447 checks: (producer id, generation, member id, group.instance.id, checked,
    # error or None)
    txn_checks: list[tuple[int, int, str, str | None, bool, str | None]] = field(default_factory=list)

    def forget_offset(self, tp: str) -> None:
        """OffsetDelete: the partition's committed offset goes, and with it every offset of it still pending, the
        open transactions' too (3.x GroupMetadata.removeOffsets; 4.x OffsetMetadataManager.replay of the tombstone)."""
        self.committed.pop(tp, None)
        self.committed_meta.pop(tp, None)
        self.committed_at.pop(tp, None)
        self.never_written.discard(tp)
        by_producer: tuple[Mapping[int, MutableMapping[str, Any]], ...] = (
            self.pending,
            self.pending_meta,
            self.pending_at,
            self.never_written_txn,
        )
        for of_producer in by_producer:
            for pending in of_producer.values():
                pending.pop(tp, None)

    @property
    def classic(self) -> bool:
        return self.protocol_type is not None


@dataclass(frozen=True, slots=True)
class SessionTimeout:
    """A timer's tick: `member` sent no heartbeat for session.timeout.ms."""

    group_id: str
    member: Member


@dataclass(frozen=True, slots=True)
class HeartbeatExpiry:
    """A classic member's session deadline, as set by its last heartbeat (a later heartbeat moves it)."""

    group_id: str
    member: ClassicMember
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class PendingMemberExpiry:
    """A member given an id by MEMBER_ID_REQUIRED that did not rejoin within its session timeout."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class JoinDeadline:
    """The delayed join of rebalance `round` ends (DelayedJoin, InitialDelayedJoin)."""

    group_id: str
    round: int
    initial: bool
    remaining_ms: int


@dataclass(frozen=True, slots=True)
class SyncDeadline:
    """Members that got generation `generation` must SyncGroup by now (GroupCoordinator.schedulePendingSync)."""

    group_id: str
    generation: int


class GroupRegistry:
    """The groups this coordinator holds and what the cluster tells it."""

    def __init__(
        self, config: Mapping[str, Any], *, kafka: str, brokers: Iterable[int], topics: Mapping[str, int]
    ) -> None:
        self.kafka = kafka
        # KIP-890 part 1 on 3.9 and 4.x: a TV1 TxnOffsetCommit's transaction is verified first (groupoffsets.py)
        self.verification = kafka != "3.5" and setting_true(
            config.get("transaction.partition.verification.enable", True)
        )
        self.num_partitions = int(config.get("offsets.topic.num.partitions", 50))
        self.session_timeout_ms = 45_000
        self.initial_rebalance_delay_ms = int(
            config.get("group.initial.rebalance.delay.ms", INITIAL_REBALANCE_DELAY_MS)
        )
        self.min_session_timeout_ms = int(config.get("group.min.session.timeout.ms", MIN_SESSION_TIMEOUT_MS))
        self.max_session_timeout_ms = int(config.get("group.max.session.timeout.ms", MAX_SESSION_TIMEOUT_MS))
        self.groups: dict[str, Group] = {}
        # the offset commit records written to __consumer_offsets so far: stands for a record's offset there, as only
        # the order of the records of one group (one partition) matters
        self.records = 0
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

    @staticmethod
    def _add(g: Group, member: Member) -> None:
        g.members[member.member_id] = member
        if member.instance_id is not None:
            g.static_members[member.instance_id] = member.member_id

    @staticmethod
    def _forget(g: Group, member_id: str) -> Member | None:
        """GroupMetadata.remove: the member, and its instance id's entry."""
        member = g.members.pop(member_id, None)
        if (
            member is not None
            and member.instance_id is not None
            and g.static_members.get(member.instance_id) == member_id
        ):
            del g.static_members[member.instance_id]
        return member

    @staticmethod
    def _validate_member(g: Group, member_id: str, instance_id: str | None) -> str | None:
        """validateCurrentMember (3.x) / ClassicGroup.validateMember (4.x): a request naming an instance id must
        come from that instance's current member (another member id is an older instance: FENCED_INSTANCE_ID), and
        the member must be in the group."""
        if instance_id is not None:
            current = g.static_members.get(instance_id)
            if current is None:
                return "UNKNOWN_MEMBER_ID"
            if current != member_id:
                return "FENCED_INSTANCE_ID"
        if member_id not in g.members:
            return "UNKNOWN_MEMBER_ID"
        return None

    @staticmethod
    def _cause(g: Group, cause: str, member: Member | None) -> None:
        """What a rebalance (or a static member's rejoin without one) is for, kept until it completes."""
        if len(g.causes) < CAUSES_KEPT:
            g.causes.append((cause, member.client_id if member is not None else ""))

    def _membership(self, g: Group, now_ms: int) -> Emit:
        """The group's members settled (a generation, or a static member's place taken without a rebalance): the
        dashboard's record of it, with what caused it."""
        clients = tuple(sorted(m.client_id for m in g.members.values()))
        g.rebalances = [*g.rebalances[-(REBALANCES_KEPT - 1) :], (now_ms, g.generation, tuple(g.causes), clients)]
        g.causes = []
        fields = {"group": g.group_id, "generation": g.generation, "members": tuple(sorted(g.members))}
        return Emit(ev.GroupMembership, fields)
