"""Transaction markers: once PrepareCommit/PrepareAbort is durable, the coordinator prepares the completion
(CompleteCommit/CompleteAbort, pending while the markers are written: other requests get CONCURRENT_TRANSACTIONS),
sends one WriteTxnMarkers per partition leader, retries a partition whose leader could not write it, and writes the
completion once every partition has its marker.

Follows core/src/main/scala/kafka/coordinator/transaction/TransactionMarkerChannelManager.scala (addTxnMarkersToSend)
and TransactionMarkerRequestCompletionHandler.scala (which errors are retried, which stop the sending). The cluster
carries the requests (Cluster.send_markers) and gives every partition's result back (`marker_result`).
"""

from __future__ import annotations

from dataclasses import dataclass

from playground.sim.effects import Effect, Effects, Timer
from playground.sim.txnlog import TransactionStateManager, TxnPartitionState
from playground.sim.txnstate import PREPARE_ABORT, PREPARE_COMMIT, TransactionMetadata, Transit


class MarkerJob:
    """One transaction's markers on their way: the partitions still waiting, and the completion to write after."""

    __slots__ = ("completion", "control", "coordinator_epoch", "epoch", "md", "producer_id", "st", "waiting")

    def __init__(self, md: TransactionMetadata, st: TxnPartitionState, completion: Transit) -> None:
        self.md = md
        self.st = st
        self.control = "COMMIT" if md.state == PREPARE_COMMIT else "ABORT"
        self.coordinator_epoch = st.coordinator_epoch
        self.waiting = set(md.partitions)
        self.producer_id, self.epoch = md.producer_id, md.producer_epoch
        self.completion = completion


@dataclass(frozen=True, slots=True)
class SendMarkers(Effect):
    """WriteTxnMarkers from `coordinator` to the leaders of `partitions`; each partition's result comes back as
    TransactionCoordinator.marker_result(job, partition, error)."""

    coordinator: int | None
    transactional_id: str
    producer_id: int
    epoch: int
    control: str
    coordinator_epoch: int
    partitions: tuple[str, ...]
    job: MarkerJob


@dataclass(frozen=True, slots=True)
class MarkerRetry:
    """A timer's tick: send the marker for `partition` again."""

    job: MarkerJob
    partition: str


def send_markers(mgr: TransactionStateManager, md: TransactionMetadata, st: TxnPartitionState, now_ms: int) -> Effects:
    """addTxnMarkersToSend: the completion is prepared first (its pending state keeps other requests waiting,
    CONCURRENT_TRANSACTIONS), then one WriteTxnMarkers per leader carries the transaction's producer id and
    its current epoch (for TV2 the bumped one; after an overflow still the old producer id at 32767)."""
    completion = md.prepare_complete(now_ms)
    job = MarkerJob(md, st, completion)
    effects: Effects = [mgr.pending_event(md, completion)]
    if not job.waiting:
        return effects + mgr.append(md, completion, st, None, announce=False)
    effects.append(_send(job, tuple(sorted(job.waiting))))
    return effects


def _send(job: MarkerJob, partitions: tuple[str, ...]) -> SendMarkers:
    return SendMarkers(
        job.st.leader,
        job.md.transactional_id,
        job.producer_id,
        job.epoch,
        job.control,
        job.coordinator_epoch,
        partitions,
        job,
    )


def _still_current(mgr: TransactionStateManager, job: MarkerJob) -> bool:
    md = job.md
    return (
        mgr.cache.get(md.transactional_id) is md
        and job.st.coordinator_epoch == job.coordinator_epoch
        and md.state in (PREPARE_COMMIT, PREPARE_ABORT)
    )


def marker_result(
    mgr: TransactionStateManager, job: MarkerJob, partition: str, error: str | None, now_ms: int, backoff_ms: int
) -> Effects:
    """TransactionMarkerRequestCompletionHandler: a written marker ends the partition's wait (the last one writes
    the completion); a fenced epoch stops the sending; anything else is retried after `backoff_ms`."""
    if not _still_current(mgr, job):
        return []
    if error is None:
        job.waiting.discard(partition)
        job.md.partitions.discard(partition)
        if not job.waiting:
            return mgr.append(job.md, job.completion, job.st, None, announce=False)
        return []
    if error in ("INVALID_PRODUCER_EPOCH", "TRANSACTION_COORDINATOR_FENCED"):
        return []  # stop sending for this transaction
    label = f"marker retry {job.md.transactional_id} {partition}"
    return [Timer(now_ms + backoff_ms, label, MarkerRetry(job, partition))]


def marker_retry(mgr: TransactionStateManager, retry: MarkerRetry) -> Effects:
    if not _still_current(mgr, retry.job):
        return []
    return [_send(retry.job, (retry.partition,))]
