"""kafka-clients' producer model, its Sender: the loop (runOnce: a fatal error aborts the batches; a transactional
request in flight holds the produce data back), which partitions may be drained (isSendToPartitionAllowed, linger),
the Produce request with its producer id, epoch and sequence, its response (completeBatch: retry what is retriable
within delivery.timeout.ms with the same sequence, else complete or fail), and batch expiry.

Follows clients/src/main/java/org/apache/kafka/clients/producer/internals/Sender.java (runOnce, sendProducerData,
completeBatch, canRetry, reenqueueBatch), RecordAccumulator.java (ready, drain, expiredBatches) and
TransactionManager.java (isSendToPartitionAllowed, the sequence numbers per partition).
"""

from __future__ import annotations

from typing import Any

from playground.sim.clock import TIMER
from playground.sim.effects import Reply
from playground.sim.java_base import (
    ABORTING_TRANSACTION,
    COMMITTING_TRANSACTION,
    FATAL_ERROR,
    INITIALIZING,
    UNINITIALIZED,
    RecordFuture,
    TxnResult,
)
from playground.sim.java_txnmgr import JavaTxnManager
from playground.sim.javaerrors import JavaException, exception_for


class JavaSender(JavaTxnManager):
    """The Sender's loop over the accumulator and the transaction manager."""

    def _run_once(self) -> None:
        """Sender.runOnce."""
        if not self.alive:
            return
        if self.has_tm:
            if self.state == FATAL_ERROR:
                if self.last_error is not None:
                    self._abort_all(self.last_error)  # maybeAbortBatches
                return
            if not self.transactional_id and self.producer_id < 0 and self.state == UNINITIALIZED:
                # bumpIdempotentEpochAndResetIdIfNeeded: an idempotent producer asks any broker for an id
                self._transition(INITIALIZING, sender_thread=True)
                self._enqueue(self._init_producer_id_handler(TxnResult("InitProducerId"), None))
            if self._maybe_send_txn_request():
                return
        self._send_producer_data()

    def _sendable(self, tp: str) -> bool:
        """RecordAccumulator.shouldStopDrainBatchesForPartition / TransactionManager.isSendToPartitionAllowed."""
        if not self.has_tm:
            return True
        if self.state == FATAL_ERROR:
            return False
        if self.transactional_id and tp not in self.partitions_in_txn:
            return False
        return self.producer_id >= 0

    def _send_producer_data(self) -> None:
        """RecordAccumulator.ready + drain: a partition's records go once linger.ms has passed, at once while
        flushing or while the transaction completes, after the backoff when retried."""
        now = self.now_ms
        completing = self.state in (COMMITTING_TRANSACTION, ABORTING_TRANSACTION)
        held_back = False
        for tp in sorted(set(self._accumulator) | set(self._retry_batch)):
            queue = self._accumulator.get(tp)
            if tp in self._inflight:
                continue
            if not self._sendable(tp):
                held_back = held_back or bool(queue)
                continue
            if tp in self._retry_batch:
                retry_at = self._retry_at.get(tp, now)
                if retry_at > now:
                    self._wakeup(retry_at - now)
                    continue
                batch, seq, pid, epoch = self._retry_batch.pop(tp)
                self._send_batch(tp, batch, (seq, pid, epoch))
                continue
            if not queue:
                continue
            ready_at = queue[0].created_ms + self.linger_ms
            if ready_at > now and not self._flushing and not completing:
                self._wakeup(ready_at - now)
                continue
            batch = list(queue)
            queue.clear()
            self._send_batch(tp, batch)
        if held_back and not self._inflight and not self._txn_inflight:
            # Records wait for a partition the transaction does not hold, and nothing is on the wire to wake the
            # Sender: its NetworkClient.poll sleeps until request.timeout.ms at most (Utils.min(timeout,
            # metadataTimeout, defaultRequestTimeoutMs)). Measured with kafka-clients 3.9.1 and 4.4.0: a send
            # joining a record held back outside a transaction goes out (AddPartitionsToTxn first) 30 s later.
            self._wakeup(self.request_timeout_ms)

    def _send_batch(self, tp: str, batch: list[RecordFuture], retry: tuple[int, int, int] | None = None) -> None:
        c = self.cluster
        leader = c.leader_of(tp)
        pid, epoch = (self.producer_id, self.epoch) if self.idempotent else (-1, -1)
        seq = -1
        if retry is not None:
            seq, pid, epoch = retry  # a retried batch keeps its producer state (ProducerBatch.hasSequence)
        elif self.idempotent:
            if self._seq_owner.get(tp) != (pid, epoch):
                self._seq_owner[tp] = (pid, epoch)
                self._next_seq[tp] = 0
            seq = self._next_seq.get(tp, 0)
            self._next_seq[tp] = seq + len(batch)
        for f in batch:
            f.producer_id, f.epoch = pid, epoch
        self._inflight[tp] = batch
        values = tuple(f.value for f in batch)
        keys = None if all(f.key is None for f in batch) else tuple(f.key for f in batch)
        transactional = self.transactional_id is not None
        txid, acks = self.transactional_id, self.acks
        version = self.versions["Produce"]

        def server(broker: int, reply: Reply) -> None:
            c.handle_produce(
                broker,
                tp,
                txid,
                pid,
                epoch,
                seq,
                transactional,
                values,
                keys,
                acks,
                reply,
                client_id=self.name,
                version=version,
            )

        detail = f"{tp} {len(batch)} record(s), producer {pid} epoch {epoch} seq {seq}"
        self._rpc(
            "Produce",
            leader,
            f"leader {tp}(b{leader})",
            detail,
            server,
            lambda err, res: self._on_produce_response(tp, batch, seq, pid, epoch, err, res),
        )
        if acks == 0:
            self._after(0, lambda: self._on_produce_response(tp, batch, seq, pid, epoch, None, {"base_offset": -1}))

    def _on_produce_response(
        self, tp: str, batch: list[RecordFuture], seq: int, pid: int, epoch: int, error: str | None, res: dict[str, Any]
    ) -> None:
        """Sender.completeBatch: retry what is retriable within delivery.timeout.ms, else complete or fail."""
        if self._inflight.get(tp) is not batch:
            return
        del self._inflight[tp]
        if error is not None:
            exc = exception_for(error if error != "_TRANSPORT" else "NETWORK_EXCEPTION")
            attempts = self._attempts.get(tp, 0) + 1
            backoff = min(self.retry_backoff_ms * (2 ** (attempts - 1)), self.retry_backoff_max_ms)
            created = min(f.created_ms for f in batch)
            if (
                exc.retriable
                and self.now_ms + backoff < created + self.delivery_timeout_ms
                and self.state != FATAL_ERROR
            ):
                self._attempts[tp] = attempts
                self._retry_at[tp] = self.now_ms + backoff
                # Sender.reenqueueBatch: the same batch, the same producer id, epoch and sequence
                self._retry_batch[tp] = (batch, seq, pid, epoch)
                self._wakeup(backoff)
                return
            self._attempts.pop(tp, None)
            self._retry_at.pop(tp, None)
            if (
                seq >= 0
                and self._next_seq.get(tp) == seq + len(batch)
                and (pid, epoch) == (self.producer_id, self.epoch)
            ):
                self._next_seq[tp] = seq  # adjustSequencesDueToFailedBatch
            self._fail_batch(batch, exc)
        else:
            self._attempts.pop(tp, None)
            self._retry_at.pop(tp, None)
            base = res.get("base_offset", -1)
            for i, f in enumerate(batch):
                f.offset = base + i if base >= 0 else -1
                self._complete(f, None)
        self._wakeup()

    def _schedule_expiry(self, at_ms: int) -> None:
        """Batch expiry (RecordAccumulator.expiredBatches): a timer, so that observing never expires a batch."""
        if self._expiry_ms is not None and self._expiry_ms <= at_ms:
            return
        self._expiry_ms = at_ms

        def expire() -> None:
            self._expiry_ms = None
            if not self.alive:
                return
            now = self.now_ms
            expired: list[RecordFuture] = []
            earliest: int | None = None
            for tp in sorted(self._accumulator):
                queue = self._accumulator[tp]
                while queue and queue[0].created_ms + self.delivery_timeout_ms <= now:
                    expired.append(queue.popleft())
                if queue:
                    due = queue[0].created_ms + self.delivery_timeout_ms
                    earliest = due if earliest is None else min(earliest, due)
            if expired:
                exc = JavaException(
                    "TimeoutException",
                    f"Expiring {len(expired)} record(s) for "
                    f"{expired[0].tp}:{now - expired[0].created_ms} ms has passed since batch "
                    "creation",
                )
                self._fail_batch(expired, exc)
                self._wakeup()
            if earliest is not None:
                self._schedule_expiry(earliest)

        def inert(t: int) -> bool:
            return not self.alive or not any(
                q and q[0].created_ms + self.delivery_timeout_ms <= t for q in self._accumulator.values()
            )

        self.cluster.scheduler.at(at_ms, expire, category=TIMER, label=f"{self.name} batch expiry", inert=inert)
