"""`broker.abort_transaction: {partition: P}` on the simulator: what an operator does about a hanging transaction,
`kafka-transactions.sh abort --topic T --partition N --start-offset O`.

Follows tools/src/main/java/org/apache/kafka/tools/TransactionsCommand.java (AbortTransactionCommand, KIP-664, the
same in 3.5.2 and 3.9): DescribeProducers on the partition, the producer whose CurrentTransactionStartOffset is the
start offset, and Admin.abortTransaction with that producer id, its epoch and its coordinator epoch
(`producerState.coordinatorEpoch().orElse(0)`), which sends WriteTxnMarkers(ABORT) to the partition's leader
(clients/.../admin/internals/AbortTransactionHandler.java). The leader checks the marker as it checks the
coordinator's (log.append_marker: an older epoch is INVALID_PRODUCER_EPOCH, an older coordinator epoch
TRANSACTION_COORDINATOR_FENCED) and writes it; the LSO moves past the transaction.

The step names the partition only: it aborts the transaction open there that started first (what `find-hanging`
lists; the inspector shows the same command for a real cluster, playground/inspector/hanging.py). With no
transaction open on the partition the tool stops before sending anything ("Could not find any open transactions
starting at offset"): the outcome is INVALID_TXN_STATE. Pure and deterministic: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from typing import Any

from playground.sim.cluster import Cluster
from playground.sim.effects import Reply
from playground.sim.txnstate import PREPARE_ABORT, PREPARE_COMMIT

SOURCE = "admin (kafka-transactions.sh abort)"
NO_OPEN_TRANSACTION = "INVALID_TXN_STATE"
SETTLE_WAIT_MS = 5_000


def open_transactions(cluster: Cluster, partition: str) -> list[tuple[int, int, int, int]]:
    """DescribeProducers' active producers with a transaction open on `partition`: (start offset, producer id,
    epoch, coordinator epoch), the oldest first."""
    log = cluster.log(partition)
    found = [
        (e.current_txn_first_offset, e.producer_id, e.epoch, e.coordinator_epoch)
        for e in log.producers.values()
        if e.current_txn_first_offset is not None
    ]
    return sorted(found)


def abort(cluster: Cluster, partition: str) -> tuple[str | None, dict[str, Any]]:
    """Abort the oldest open transaction on `partition` and run the simulation until its leader has answered.
    Returns (error or None, {"partition", "start_offset", "producer_id", "epoch", "coordinator_epoch"})."""
    info: dict[str, Any] = {"partition": partition}
    # The operator acts once no transaction is half-completed (its markers still on their way, at most 5 s): a
    # fixed moment, as net.late_write's, instead of a race with the markers of the step before.
    tc = cluster.txn_coordinator
    cluster.scheduler.run_until(
        lambda: all(md.state not in (PREPARE_COMMIT, PREPARE_ABORT) for md in tc.cache.values()),
        cluster.now_ms + SETTLE_WAIT_MS,
    )
    candidates = open_transactions(cluster, partition)
    if not candidates:
        return NO_OPEN_TRANSACTION, info
    start, pid, epoch, coordinator_epoch = candidates[0]
    coordinator_epoch = max(coordinator_epoch, 0)
    info.update(start_offset=start, producer_id=pid, epoch=epoch, coordinator_epoch=coordinator_epoch)
    leader = cluster.leader_of(partition)
    answer: dict[str, Any] = {}

    def handler(broker: int, reply: Reply) -> None:
        cluster.handle_write_txn_markers(broker, pid, epoch, "ABORT", coordinator_epoch, [partition], reply)

    def on_response(error: str | None, result: dict[str, Any]) -> None:
        answer["error"] = error if error is not None else result["errors"].get(partition)

    cluster.rpc(
        "WriteTxnMarkers",
        SOURCE,
        leader,
        f"leader {partition}(b{leader})",
        f"ABORT producer {pid} epoch {epoch} coordinator epoch {coordinator_epoch} -> {partition} (start offset {start})",
        handler,
        on_response,
    )
    cluster.scheduler.run_until(lambda: "error" in answer, cluster.now_ms + 30_000)
    if "error" not in answer:
        return "REQUEST_TIMED_OUT", info
    return answer["error"], info
