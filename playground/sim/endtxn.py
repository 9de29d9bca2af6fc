"""EndTxn: the end of a transaction, as each protocol has the coordinator run it, apart: the classic protocol (TV1,
`end_transaction_v1`) and transaction version 2 (KIP-890 part 2, `end_transaction_v2`). Both prepare
PrepareCommit/PrepareAbort on the shared state machine (txnstate.py), write it to `__transaction_state`, answer once
it is durable (before any marker is written: commit returning does not mean the data is readable yet), then send the
markers (markers.py); the completion (CompleteCommit/CompleteAbort) is prepared at that moment, so it stays pending
while the markers are written (sendTxnMarkersCallback calls prepareComplete before addTxnMarkersToSend).

Follows core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala: endTransactionWithTV1 (3.9's
endTransaction) and, in 4.x, endTransaction's TV2 branch (transaction-coordinator's TransactionMetadata.java
prepareAbortOrCommit bumps the epoch).

TV2, as Kafka 4.x runs it (EndTxn v5+, and the coordinator's own aborts on a 4.x cluster, which use the server's
transaction.version whatever the client speaks):
- the epoch is bumped by every EndTxn, the markers carry the bumped epoch, the answer carries the producer id and
  epoch the client continues with, a retry is recognised by the epoch being one behind, and when the epoch is
  exhausted (>= 32766) a new producer id is handed over at completion (nextProducerId, epoch 0); the epoch 32767 is
  only ever seen by the markers;
- since KAFKA-19367 the fence bumps the epoch once (not twice), and since KAFKA-20090 a fence at an exhausted epoch
  also hands over a new producer id;
- the pending transition is checked before the epoch (KAFKA-18464), so a new transaction's EndTxn meets
  CONCURRENT_TRANSACTIONS, not a self-fence, while the previous one completes;
- PrepareAbort may be entered from Empty, CompleteCommit and CompleteAbort (TransactionState.java): the empty abort
  a TV2 client may send when unsure of the server's state.
"""

from __future__ import annotations

from dataclasses import dataclass

from playground.sim.effects import Effects
from playground.sim.markers import send_markers
from playground.sim.replies import Waiter
from playground.sim.txnlog import AppendJob, TransactionStateManager
from playground.sim.txnstate import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    PREPARE_EPOCH_FENCE,
    SHORT_MAX,
    TV_0,
    TV_2,
    IllegalStateError,
    Transit,
    is_epoch_exhausted,
)


@dataclass(frozen=True, slots=True)
class EndTxnPrepared:
    """What follows the PrepareCommit/PrepareAbort write: answer `waiter`, then send the markers."""

    waiter: Waiter
    tv2: bool
    fencing: bool


def end_transaction(
    mgr: TransactionStateManager,
    broker: int,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    commit: bool,
    from_client: bool,
    client_tv: int,
    waiter: Waiter,
    now_ms: int,
) -> Effects:
    """TransactionCoordinator.endTransaction: the TV2 path for EndTxn v5+ and for the coordinator's own aborts on a
    4.x cluster, endTransactionWithTV1 otherwise."""
    if client_tv >= TV_2:
        return end_transaction_v2(
            mgr, broker, transactional_id, producer_id, epoch, commit, from_client, waiter, now_ms
        )
    return end_transaction_v1(mgr, broker, transactional_id, producer_id, epoch, commit, from_client, waiter, now_ms)


def prepared(
    mgr: TransactionStateManager, then: EndTxnPrepared, job: AppendJob, error: str | None, now_ms: int
) -> Effects:
    """PrepareCommit/PrepareAbort is written (or failed to be): answer, then send the markers."""
    md, waiter = job.md, then.waiter
    if error:
        if not then.tv2 and then.fencing and mgr.cache.get(md.transactional_id) is md:
            md.has_failed_epoch_fence = True  # TV1; since KAFKA-19367 TV2 keeps no such note: the epoch was not raised
        return waiter.answer(error)
    if then.tv2:
        # the answer names what the client continues with: the completion's producer id and epoch (a new producer
        # id at epoch 0 after an overflow), TransactionCoordinator's newPreSendMetadata
        rotated = md.next_producer_id != NO_PRODUCER_ID
        effects = waiter.answer(
            None,
            producer_id=md.next_producer_id if rotated else md.producer_id,
            producer_epoch=0 if rotated else md.producer_epoch,
        )
    else:
        effects = waiter.answer(None)
    return effects + send_markers(mgr, md, job.st, now_ms)


# -- the classic protocol (TV1) --------------------------------------------------------------------------------------
def end_transaction_v1(
    mgr: TransactionStateManager,
    broker: int,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    commit: bool,
    from_client: bool,
    waiter: Waiter,
    now_ms: int,
) -> Effects:
    """endTransactionWithTV1: the epoch does not move; a client's EndTxn must carry exactly the current one."""
    error, st = mgr.lookup(broker, transactional_id)
    if error:
        return waiter.answer(error)
    md = mgr.cache.get(transactional_id)
    if md is None:
        return waiter.answer("INVALID_PRODUCER_ID_MAPPING")
    # strict equality for the client's requests: they never bump the epoch
    valid_epoch = (not from_client or epoch == md.producer_epoch) and epoch >= md.producer_epoch
    fencing = md.pending_state == PREPARE_EPOCH_FENCE
    if md.producer_id != producer_id:
        return waiter.answer("INVALID_PRODUCER_ID_MAPPING")
    if not valid_epoch:
        return waiter.answer("PRODUCER_FENCED")
    if md.pending_state is not None and not fencing:
        return waiter.answer("CONCURRENT_TRANSACTIONS")
    state = md.state
    if state == ONGOING:
        target = PREPARE_COMMIT if commit else PREPARE_ABORT
        if target == PREPARE_ABORT and fencing:
            # the fence: the bumped epoch takes effect in memory now and is what the markers carry
            md.pending_state = None
            md.producer_epoch = epoch
            md.last_producer_epoch = NO_PRODUCER_EPOCH
        transit = md.prepare_abort_or_commit(target, now_ms, TV_0)
    elif state == COMPLETE_COMMIT:
        return waiter.answer(None if commit else "INVALID_TXN_STATE")
    elif state == COMPLETE_ABORT:
        return waiter.answer(None if not commit else "INVALID_TXN_STATE")
    elif state == PREPARE_COMMIT:
        return waiter.answer("CONCURRENT_TRANSACTIONS" if commit else "INVALID_TXN_STATE")
    elif state == PREPARE_ABORT:
        return waiter.answer("CONCURRENT_TRANSACTIONS" if not commit else "INVALID_TXN_STATE")
    elif state == EMPTY:
        return waiter.answer("INVALID_TXN_STATE")
    else:
        raise IllegalStateError(f"found transactional id {transactional_id} in state {state}")
    return mgr.append(md, transit, st, EndTxnPrepared(waiter, tv2=False, fencing=fencing))


# -- transaction version 2 (KIP-890 part 2) -------------------------------------------------------------------------
def end_transaction_v2(
    mgr: TransactionStateManager,
    broker: int,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    commit: bool,
    from_client: bool,
    waiter: Waiter,
    now_ms: int,
) -> Effects:
    """endTransaction for TV2. A retry is told apart from the next EndTxn by its epoch: one behind the bumped
    epoch (retryOnEpochBump) or the last epoch of a producer id rotated away (retryOnOverflow):

                      Abort: retry / current    Commit: retry / current
        Empty         PRODUCER_FENCED / bump    PRODUCER_FENCED / INVALID_TXN_STATE
        CompleteAbort NONE / bump               INVALID_TXN_STATE / INVALID_TXN_STATE
        CompleteCommit INVALID_TXN_STATE / bump NONE / INVALID_TXN_STATE
    """
    error, st = mgr.lookup(broker, transactional_id)
    if error:
        return waiter.answer(error)
    md = mgr.cache.get(transactional_id)
    if md is None:
        return waiter.answer("INVALID_PRODUCER_ID_MAPPING")
    fencing = md.pending_state == PREPARE_EPOCH_FENCE
    retry_on_overflow = (
        not fencing and md.previous_producer_id == producer_id and epoch == SHORT_MAX - 1 and md.producer_epoch == 0
    )
    retry_on_bump = not fencing and md.producer_epoch == epoch + 1
    if fencing:
        valid_epoch = (not from_client or epoch == md.producer_epoch) and epoch >= md.producer_epoch
    elif md.state in (PREPARE_COMMIT, PREPARE_ABORT):
        valid_epoch = retry_on_bump
    elif md.state in (COMPLETE_COMMIT, COMPLETE_ABORT):
        valid_epoch = retry_on_bump or retry_on_overflow or epoch == md.producer_epoch
    else:  # Ongoing, Empty: the same epoch means the next EndTxn, not a retry
        valid_epoch = epoch == md.producer_epoch
    is_retry = retry_on_bump or retry_on_overflow
    if md.producer_id != producer_id and not retry_on_overflow:
        return waiter.answer("INVALID_PRODUCER_ID_MAPPING")
    if md.pending_state is not None and not fencing:
        # KAFKA-18464: the previous transaction is still completing; wait for it instead of self-fencing
        return waiter.answer("CONCURRENT_TRANSACTIONS")
    if not valid_epoch:
        return waiter.answer("PRODUCER_FENCED")

    def current() -> Effects:
        return waiter.answer(None, producer_id=md.producer_id, producer_epoch=md.producer_epoch)

    def complete_with(target: str, no_partition_added: bool) -> Transit:
        # a new producer id when this bump uses up the epochs (since KAFKA-20090 for a fence too)
        exhausted = is_epoch_exhausted(md.producer_epoch)
        next_pid = mgr.producer_ids.generate(broker) if exhausted else NO_PRODUCER_ID
        if fencing:
            # KAFKA-19367: the fence's bump is the abort's own; the epoch is not raised twice
            md.pending_state = None
            md.last_producer_epoch = NO_PRODUCER_EPOCH
        return md.prepare_abort_or_commit(target, now_ms, TV_2, next_pid, no_partition_added)

    state = md.state
    if state == ONGOING:
        transit = complete_with(PREPARE_COMMIT if commit else PREPARE_ABORT, False)
    elif state == COMPLETE_COMMIT:
        if commit:
            return current() if is_retry else waiter.answer("INVALID_TXN_STATE")
        if is_retry:
            return waiter.answer("INVALID_TXN_STATE")
        transit = complete_with(PREPARE_ABORT, True)
    elif state == COMPLETE_ABORT:
        if commit:
            return waiter.answer("INVALID_TXN_STATE")
        if is_retry:
            return current()
        transit = complete_with(PREPARE_ABORT, True)
    elif state == PREPARE_COMMIT:
        return waiter.answer("CONCURRENT_TRANSACTIONS" if commit else "INVALID_TXN_STATE")
    elif state == PREPARE_ABORT:
        return waiter.answer("CONCURRENT_TRANSACTIONS" if not commit else "INVALID_TXN_STATE")
    elif state == EMPTY:
        if commit:
            return waiter.answer("INVALID_TXN_STATE")
        transit = complete_with(PREPARE_ABORT, True)
    else:
        raise IllegalStateError(f"found transactional id {transactional_id} in state {state}")
    return mgr.append(md, transit, st, EndTxnPrepared(waiter, tv2=True, fencing=fencing))
