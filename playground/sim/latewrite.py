"""`net.late_write` on the simulator: a Produce request of an earlier transaction, delivered now.

A producer's Produce request can be held back by the network (a slow path, a retried connection, a broker's full
request queue) and reach the partition leader after the producer has moved on. The step delivers one such request:
one transactional batch of one record, carrying the producer's `transactional.id`, the producer id and epoch of the
earlier record it names (`of:`, a record the producer wrote in its earlier transaction) and a base sequence. It is
handed to the leader's Produce path (`Cluster.handle_produce`) exactly as a client's request is, with the Produce
version the actor's client speaks; the leader's checks decide its fate, nothing here does:
- Kafka 3.9 (and a librdkafka producer on 4.x, which keeps the classic protocol): a transactional batch of a producer
  with no transaction open on the partition is verified with the coordinator first (KIP-890 part 1,
  `transaction.partition.verification.enable`, default true since 3.6: ReplicaManager
  .maybeStartTransactionVerificationForPartitions -> TransactionCoordinator.handleVerifyPartitionsInTransaction, which
  answers TRANSACTION_ABORTABLE for a partition not in the ongoing transaction; AddPartitionsToTxnManager turns that
  into INVALID_TXN_STATE for Produce versions before 11). A producer that does have one open there appends without
  asking (UnifiedLog.maybeStartTransactionVerification: hasOngoingTransaction), so a late batch at the same epoch
  joins the producer's next transaction when that one already holds the partition.
- Kafka 4.x with kafka-clients (transaction protocol v2, Produce v12): every EndTxn bumps the epoch and the markers
  carry the new one, so the leader's producer state holds a newer epoch than the late batch and refuses it at once
  (UnifiedLog.maybeStartTransactionVerification: "Epoch of producer ... is smaller than the last seen epoch",
  INVALID_PRODUCER_EPOCH).

The sequence number: the one the leader expects next from that producer at that epoch (its last sequence + 1), so
that the idempotence check lets the batch through and only the transaction checks decide; when the leader holds
another epoch for the producer, the one after the earlier record's. The real backend computes it the same way from
DescribeProducers (playground/kafka/latewrite.py). The request arrives once the transaction coordinator has no
transaction of that id half-completed (PrepareCommit/PrepareAbort, markers still on their way; at most 5 s), so
its fate does not hang on a race with the markers of the step before. Pure and deterministic: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from typing import Any

from playground.sim.cluster import Cluster
from playground.sim.coordinator import TransactionCoordinator
from playground.sim.effects import Reply
from playground.sim.txnstate import PREPARE_ABORT, PREPARE_COMMIT

# The Produce version each client sends (librdkafka 2.16: v10; kafka-clients: javaclient.API_VERSIONS).
LIBRDKAFKA_PRODUCE_VERSION = 10
SOURCE = "network"


SETTLE_WAIT_MS = 5_000


def _settled(tc: TransactionCoordinator, transactional_id: str) -> bool:
    md = tc.metadata(transactional_id)
    return md is None or (md.state not in (PREPARE_COMMIT, PREPARE_ABORT) and md.pending_state is None)


class LateWriteError(Exception):
    """The step names a record that is not there (not an outcome: the scenario is wrong)."""


def find_record(cluster: Cluster, value: str) -> tuple[str, int, int, int, int]:
    """The first data record whose value is `value`, in (topic, partition, offset) order over the user topics:
    (partition name, offset, producer id, epoch, sequence)."""
    for topic in sorted(cluster.user_topics()):
        for p in range(cluster.partition_count(topic)):
            name = f"{topic}-{p}"
            for batch in cluster.log(name).batches:
                if batch.control:
                    continue
                for j, v in enumerate(batch.values):
                    if v == value:
                        seq = batch.base_sequence + j if batch.base_sequence >= 0 else -1
                        return name, batch.base_offset + j, batch.producer_id, batch.epoch, seq
    raise LateWriteError(f"net.late_write: no record {value!r} in the log (of: names a record the producer wrote)")


def late_sequence(leader_epoch: int | None, leader_last_seq: int, epoch: int, earlier_seq: int) -> int:
    """See the module docstring; the same rule as playground/kafka/latewrite.late_sequence."""
    if leader_epoch == epoch and leader_last_seq >= 0:
        return leader_last_seq + 1
    return earlier_seq + 1


def deliver(
    cluster: Cluster,
    *,
    transactional_id: str,
    of: str,
    value: str,
    key: str | None = None,
    version: int = LIBRDKAFKA_PRODUCE_VERSION,
    actor: str = "",
) -> tuple[str | None, dict[str, Any]]:
    """Deliver the late batch and run the simulation until the leader has answered it (acks=all).
    Returns (error or None, {"partition", "producer_id", "epoch", "sequence", "base_offset"})."""
    tp, _offset, pid, epoch, earlier_seq = find_record(cluster, of)
    # The request arrives once the coordinator has finished completing any transaction of this id (its markers
    # written): a fixed moment, the same on both backends, instead of a race with the markers of the step before.
    tc = cluster.txn_coordinator
    cluster.scheduler.run_until(lambda: _settled(tc, transactional_id), cluster.now_ms + SETTLE_WAIT_MS)
    entry = cluster.log(tp).producers.get(pid)
    seq = late_sequence(
        entry.epoch if entry is not None else None, entry.last_seq if entry is not None else -1, epoch, earlier_seq
    )
    leader = cluster.leader_of(tp)
    answer: dict[str, Any] = {}
    info = {"partition": tp, "producer_id": pid, "epoch": epoch, "sequence": seq, "base_offset": -1}

    def handler(broker: int, reply: Reply) -> None:
        cluster.handle_produce(
            broker,
            tp,
            transactional_id,
            pid,
            epoch,
            seq,
            True,
            (value,),
            None if key is None else (key,),
            -1,
            reply,
            client_id=None,
            version=version,
        )

    def on_response(error: str | None, result: dict[str, Any]) -> None:
        answer["error"] = error
        info["base_offset"] = result.get("base_offset", -1)

    src = f"{SOURCE} (late write of {actor})" if actor else SOURCE
    cluster.rpc(
        "Produce",
        src,
        leader,
        f"leader {tp}(b{leader})",
        f"{tp} 1 record(s), producer {pid} epoch {epoch} seq {seq} (held back since {of!r})",
        handler,
        on_response,
        version=version,
    )
    cluster.scheduler.run_until(lambda: "error" in answer, cluster.now_ms + 30_000)
    if "error" not in answer:
        return "REQUEST_TIMED_OUT", info
    return answer["error"], info
