"""Committed and transactional offsets (KIP-98/KIP-447; TV2 on a 4.x cluster: a TxnOffsetCommit v5+ adds the
offsets partition to the transaction itself, GroupCoordinatorService.commitTransactionalOffsets ->
AddPartitionsToTxnManager, as there is no AddOffsetsToTxn).

TxnOffsetCommit writes the offsets as a transactional batch of the producer to the group's `__consumer_offsets`
partition, so they stay *pending*: the COMMIT marker written there makes them the group's committed offsets, the
ABORT marker drops them (GroupMetadata prepareTxnOffsetCommit / completePendingTxnOffsetCommit). OffsetFetch with
RequireStable answers UNSTABLE_OFFSET_COMMIT while a partition has pending transactional offsets; read_committed
consumers ask that way. At the COMMIT marker a transaction's offset replaces a committed one only if its record came
later in `__consumer_offsets`: a plain commit written while the transaction was open stays (KAFKA-5247).

Follows core/src/main/scala/kafka/coordinator/group/GroupCoordinator.scala (handleCommitOffsets,
handleTxnCommitOffsets, handleFetchOffsets, onCompleteTxn), GroupMetadata.scala (pending transactional offsets) and
GroupMetadataManager.scala (storeOffsets); the TV2 path
group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupCoordinatorService.java.

Kafka 3.5 (KAFKA-16371, fixed in 3.7.1 and 3.8.0): storeOffsets prepares every partition of a commit, then writes
only those whose metadata is within offset.metadata.max.bytes, so a commit that writes some partitions leaves the
too-large ones pending, never written. A plain commit's stay in pendingOffsetCommits until a later commit of the
partition is written; a transaction's make completePendingTxnOffsetCommit throw at the COMMIT marker (an
IllegalStateException in the broker's log, "...hasn't been appended to the log"): the offsets it walked before are
committed, the rest are lost, and the groups it had not reached yet keep theirs pending (scalahash.py: the order).
Either way OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT for the pending partitions meanwhile. Kafka
3.5.2's GroupMetadata.scala and GroupMetadataManager.scala (handleTxnCompletion).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from playground.engine import events as ev
from playground.sim.classicgroups import session_kept
from playground.sim.effects import Answer, Effect, Effects, Emit, Reply
from playground.sim.groupstate import (
    COMPLETING_REBALANCE,
    EMPTY,
    NO_META,
    PREPARING_REBALANCE,
    STABLE,
    TXN_CHECKS_KEPT,
    ClassicMember,
    Group,
    GroupRegistry,
    OffsetMeta,
)
from playground.sim.placement import java_string_hash
from playground.sim.scalahash import scala_order, topic_partition_hash


@dataclass(frozen=True, slots=True)
class TxnOffsetWrite:
    """A TxnOffsetCommit on its way to `__consumer_offsets`: the request, what is written, and who waits for the
    answer."""

    group_id: str
    partition: str
    producer_id: int
    epoch: int
    offsets: dict[str, int]
    reply: Reply
    transactional_id: str | None = None
    meta: Mapping[str, OffsetMeta] = field(default_factory=dict)
    generation: int = -1
    member_id: str = ""
    instance_id: str | None = None
    too_large: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VerifyOffsetsPartition(Effect):
    """A TV1 TxnOffsetCommit on 3.9 or 4.x (KIP-890 part 1): the group coordinator's broker asks the transaction
    coordinator whether the transaction holds the offsets partition (AddPartitionsToTxn verifyOnly, unless the
    partition has this producer's transaction open already: UnifiedLog.maybeStartTransactionVerification), before
    anything else is checked. `generic_error`: TxnOffsetCommit v4+ (TRANSACTION_ABORTABLE as it is, else
    INVALID_TXN_STATE). The answer comes back as GroupCoordinator.offsets_partition_verified(write, error)."""

    write: TxnOffsetWrite
    generic_error: bool


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


class GroupOffsets(GroupRegistry):
    # -- offsets ----------------------------------------------------------------------------------------------
    def commit_offsets(
        self,
        broker: int,
        group_id: str,
        generation: int,
        member_id: str,
        offsets: dict[str, int],
        reply: Reply,
        instance_id: str | None = None,
        now_ms: int | None = None,
        meta: Mapping[str, OffsetMeta] | None = None,
        too_large: Mapping[str, int] | None = None,
        version: int | None = None,
    ) -> Effects:
        """OffsetCommit (`version`, where a client asked); `instance_id`: group.instance.id (OffsetCommit v7+);
        `meta`: the leader epoch and metadata committed with each offset, where the request carried them. `offsets`
        may be empty (every partition's metadata was over offset.metadata.max.bytes, `too_large`): the commit is
        validated all the same. A commit with a generation to a group that does not exist is refused (3.x
        handleCommitOffsets: ILLEGAL_GENERATION; 4.x validateOffsetCommit: GROUP_ID_NOT_FOUND from v9). A member's
        commit keeps its session as a heartbeat does, in a Stable group or one preparing a rebalance (3.x
        doCommitOffsets: completeAndScheduleNextHeartbeatExpiration; 4.x OffsetMetadataManager.commitOffset:
        rescheduleClassicGroupMemberHeartbeat): a consumer whose heartbeats stall while it commits is not timed out.
        A TxnOffsetCommit does not (neither Kafka's)."""
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        if group_id not in self.groups and generation >= 0:
            new_version = self.kafka == "4" and version is not None and version >= 9
            return [Answer(reply, "GROUP_ID_NOT_FOUND" if new_version else "ILLEGAL_GENERATION")]
        g = self.group(group_id)
        session: Effects = []
        if g.classic:
            error = self._classic_commit_error(g, generation, member_id, instance_id)
            if error:
                return [Answer(reply, error)]
            member = g.members.get(member_id)
            if now_ms is not None and isinstance(member, ClassicMember) and g.state in (STABLE, PREPARING_REBALANCE):
                session = session_kept(g, member, now_ms)
        elif instance_id is not None or (member_id and generation >= 0):
            error = self._validate_member(g, member_id, instance_id)
            if error:
                return [Answer(reply, error)]
            # a rebalance in progress keeps the generation until it completes (the simulator's own consumers have no
            # CompletingRebalance, where Kafka answers REBALANCE_IN_PROGRESS)
            if generation != g.generation:
                return [Answer(reply, "ILLEGAL_GENERATION")]
        if not offsets:
            return [*session, Answer(reply, None)]
        g.committed.update(offsets)
        _keep_meta(g.committed_meta, offsets, meta or {})
        self.records += 1
        g.committed_at.update(dict.fromkeys(offsets, self.records))
        g.never_written.difference_update(offsets)
        if self.kafka == "3.5":
            g.never_written.update(too_large or ())
        return [*session, _offsets_event(g, "committed", offsets, -1), Answer(reply, None)]

    @classmethod
    def _classic_commit_error(
        cls, g: Group, generation: int, member_id: str, instance_id: str | None, transactional: bool = False
    ) -> str | None:
        """validateOffsetCommit (3.x GroupCoordinator, 4.x ClassicGroup) for a group of the classic protocol: a
        consumer without group management commits into an empty group; a member (or a request naming an instance)
        commits as its instance's current member in its generation, and not while the group completes a rebalance
        (a transactional commit is not held to the group's state)."""
        if generation < 0 and g.state == EMPTY:
            return None
        if generation >= 0 or member_id or instance_id is not None:
            error = cls._validate_member(g, member_id, instance_id)
            if error:
                return error
            if generation != g.generation:
                return "ILLEGAL_GENERATION"
        elif not transactional and g.state != EMPTY:
            return "UNKNOWN_MEMBER_ID"
        if not transactional and g.state == COMPLETING_REBALANCE:
            return "REBALANCE_IN_PROGRESS"
        return None

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
        instance_id: str | None = None,
        meta: Mapping[str, OffsetMeta] | None = None,
        too_large: Mapping[str, int] | None = None,
    ) -> Effects:
        """`version`: the TxnOffsetCommit version; v5+ on a 4.x cluster comes from a TV2 client whose
        transaction does not hold the offsets partition yet: the group coordinator has it added first.
        `instance_id`: the consumer's group.instance.id (TxnOffsetCommit v3+, KIP-447); `meta` and `too_large`: as
        commit_offsets's. The transaction is verified (TV1 on 3.9 and 4.x, with transaction.partition.verification.
        enable) or the offsets partition added to it (TV2) before the group, the member and the offsets are checked
        (3.9 GroupCoordinator.handleTxnCommitOffsets: postVerificationCallback; 4.x
        scheduleTransactionalWriteOperation), so an empty `offsets` still adds it."""
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        partition = self.offsets_partition(group_id)
        write = TxnOffsetWrite(
            group_id,
            partition,
            producer_id,
            epoch,
            offsets,
            reply,
            transactional_id,
            meta or {},
            generation,
            member_id,
            instance_id,
            too_large or {},
        )
        if self.kafka == "4" and version is not None and version >= 5 and transactional_id:
            return [AddOffsetsPartition(broker, write)]
        if self.verification and transactional_id:
            return [VerifyOffsetsPartition(write, generic_error=version is not None and version >= 4)]
        return self._validated(write, None)

    def offsets_partition_verified(self, write: TxnOffsetWrite, error: str | None) -> Effects:
        """The verification's answer as the broker's AddPartitionsToTxnManager reads it."""
        if error:
            return [Answer(write.reply, _commit_error(error))]
        return self._validated(write, None)

    def _validated(self, write: TxnOffsetWrite, verify: str | None) -> Effects:
        """The group and the member checked (KIP-447), then the offsets written. Kafka 3.x creates a group that does
        not exist (handleTxnCommitOffsets); 4.x refuses a generation for it (validateTransactionalOffsetCommit)."""
        producer_id, generation, member_id = write.producer_id, write.generation, write.member_id
        instance_id = write.instance_id
        if self.kafka == "4" and write.group_id not in self.groups and generation >= 0:
            return [Answer(write.reply, "ILLEGAL_GENERATION")]
        g = self.group(write.group_id)
        error = None
        checked = g.classic or instance_id is not None or bool(member_id and generation >= 0)
        if g.classic:
            error = self._classic_commit_error(g, generation, member_id, instance_id, transactional=True)
        elif checked:  # KIP-447 zombie fencing by generation
            error = self._validate_member(g, member_id, instance_id)
            if error is None and generation != g.generation:
                error = "ILLEGAL_GENERATION"
        check = (producer_id, generation, member_id, instance_id, checked, error)
        g.txn_checks = [*g.txn_checks[-(TXN_CHECKS_KEPT - 1) :], check]
        if error:
            return [Answer(write.reply, error)]
        if self.kafka == "3.5" and write.offsets and write.too_large:
            never_written = g.never_written_txn.setdefault(producer_id, {})
            for tp, offset in write.too_large.items():  # prepareTxnOffsetCommit replaces what the partition had pending
                never_written[tp] = offset
                g.pending.get(producer_id, {}).pop(tp, None)
                g.pending_meta.get(producer_id, {}).pop(tp, None)
                g.pending_at.get(producer_id, {}).pop(tp, None)
        return self._append(write, verify)

    def offsets_partition_added(self, write: TxnOffsetWrite, error: str | None) -> Effects:
        """The transaction coordinator's answer (as the leader's AddPartitionsToTxnManager reads it) to a TV2
        TxnOffsetCommit's AddPartitionsToTxn."""
        if error:
            return [Answer(write.reply, _commit_error(error))]
        return self._validated(write, write.transactional_id)

    def _append(self, write: TxnOffsetWrite, verify: str | None) -> Effects:
        if not write.offsets:
            return [Answer(write.reply, None)]  # every partition's metadata too large: nothing to write (storeOffsets)
        values = tuple(f"{write.group_id}:{tp}={off}" for tp, off in sorted(write.offsets.items()))
        return [AppendTxnOffsets(write, values, verify)]

    def txn_offsets_appended(self, write: TxnOffsetWrite, error: str | None) -> Effects:
        """The offsets are in `__consumer_offsets` (pending until the transaction's marker), or were refused."""
        if error:
            return [Answer(write.reply, error)]
        g = self.group(write.group_id)
        g.pending.setdefault(write.producer_id, {}).update(write.offsets)
        _keep_meta(g.pending_meta.setdefault(write.producer_id, {}), write.offsets, write.meta)
        self.records += 1
        g.pending_at.setdefault(write.producer_id, {}).update(dict.fromkeys(write.offsets, self.records))
        for tp in write.offsets:  # onTxnOffsetCommitAppend: written now
            g.never_written_txn.get(write.producer_id, {}).pop(tp, None)
        return [_offsets_event(g, "pending", write.offsets, write.producer_id), Answer(write.reply, None)]

    def on_marker(self, offsets_partition: str, producer_id: int, control: str) -> Effects:
        """A transaction marker landed on a __consumer_offsets partition: settle that producer's pending offsets
        for the groups living there (Kafka 3.5: up to the first offset never written, module docstring)."""
        groups = [
            g
            for g in self.groups.values()
            if self.offsets_partition(g.group_id) == offsets_partition
            and (producer_id in g.pending or producer_id in g.never_written_txn)
        ]
        if self.kafka == "3.5":
            groups = scala_order(groups, lambda g: java_string_hash(g.group_id))
        effects: Effects = []
        for g in groups:
            pending = g.pending.pop(producer_id, {})
            pending_meta = g.pending_meta.pop(producer_id, {})
            pending_at = g.pending_at.pop(producer_id, {})
            never_written = g.never_written_txn.pop(producer_id, {})
            if control != "COMMIT":
                effects.append(_offsets_event(g, "dropped", {**pending, **never_written}, producer_id))
                continue
            walked = scala_order([*pending, *never_written], topic_partition_hash) if never_written else list(pending)
            stop = next((i for i, tp in enumerate(walked) if tp in never_written), len(walked))
            # a commit written after the transaction's offset stays (completePendingTxnOffsetCommit: olderThan; 4.x
            # replayEndTransactionMarker: recordOffset)
            committed = {tp: pending[tp] for tp in walked[:stop] if g.committed_at.get(tp, -1) < pending_at[tp]}
            g.committed.update(committed)
            _keep_meta(g.committed_meta, committed, pending_meta)
            g.committed_at.update({tp: pending_at[tp] for tp in committed})
            if committed:
                effects.append(_offsets_event(g, "committed", committed, producer_id))
            if never_written:
                lost = {tp: pending.get(tp, never_written.get(tp, -1)) for tp in walked[stop:]}
                effects.append(_offsets_event(g, "lost", lost, producer_id))
                break  # the IllegalStateException ends handleTxnCompletion: the groups after keep theirs pending
        return effects

    def fetch_offsets(
        self, broker: int, group_id: str, partitions: tuple[str, ...], require_stable: bool, reply: Reply
    ) -> Effects:
        error = self._check(broker, group_id)
        if error:
            return [Answer(reply, error)]
        g = self.groups.get(group_id) or Group(group_id)  # asking makes no group
        if require_stable:
            for pending in [*g.pending.values(), *g.never_written_txn.values(), g.never_written]:
                if any(tp in pending for tp in partitions):
                    return [Answer(reply, "UNSTABLE_OFFSET_COMMIT")]
        offsets = {tp: g.committed.get(tp) for tp in partitions}
        meta = {tp: g.committed_meta.get(tp, NO_META) for tp in partitions}
        return [Answer(reply, None, {"offsets": offsets, "meta": meta})]

    def committed(self, group_id: str) -> dict[str, int]:
        g = self.groups.get(group_id)
        return dict(g.committed) if g else {}


def _commit_error(error: str) -> str:
    """An append's error as a commit answers it: NOT_ENOUGH_REPLICAS (or no answer from the transaction coordinator)
    is COORDINATOR_NOT_AVAILABLE (3.x GroupMetadataManager.maybeConvertOffsetCommitError, 4.x
    GroupCoordinatorService.handleOperationException)."""
    return "COORDINATOR_NOT_AVAILABLE" if error in ("NOT_ENOUGH_REPLICAS", "_TRANSPORT") else error


def _offsets_event(g: Group, state: str, offsets: Mapping[str, int], producer_id: int) -> Emit:
    fields = {
        "group": g.group_id,
        "state": state,
        "offsets": tuple(sorted(offsets.items())),
        "producer_id": producer_id,
    }
    return Emit(ev.GroupOffsets, fields)


def _keep_meta(kept: dict[str, OffsetMeta], offsets: Mapping[str, int], meta: Mapping[str, OffsetMeta]) -> None:
    """A commit replaces a partition's whole OffsetAndMetadata: what it carried beside each offset, or nothing."""
    for tp in offsets:
        carried = meta.get(tp, NO_META)
        if carried == NO_META:
            kept.pop(tp, None)
        else:
            kept[tp] = carried
