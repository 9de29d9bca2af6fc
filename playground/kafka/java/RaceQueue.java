/*
 * kafka-clients' TransactionManager.pendingRequests, for the race of issue 31 item 6 (Worker.ProducerActor
 * .holdAddPartitions): the Sender's AddPartitionsToTxn kept out of the queue until the application's AddOffsetsToTxn
 * comes, then both queued in the order the scenario states (send_offsets_to_transaction's `first`).
 */
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/** TransactionManager.pendingRequests (a PriorityQueue by TxnRequestHandler priority) that keeps the Sender's
 * AddPartitionsToTxnHandler out while `holding`, and puts it in when the application's AddOffsetsToTxnHandler
 * comes: after it (`first` AddOffsetsToTxn) or before it (AddPartitionsToTxn). See
 * ProducerActor.holdAddPartitions.
 *
 * The Sender queues its AddPartitionsToTxn on its own thread once a send has woken it. On a busy machine it can be
 * late: the application's AddOffsetsToTxn then came to an empty `held`, went out alone and was answered with the
 * fence, so sendOffsetsToTransaction threw ProducerFencedException where the scenario states the other ending (seen
 * once in CI, with the suites running side by side). So when the scenario wants AddPartitionsToTxn first, the
 * AddOffsetsToTxn waits for it, up to SENDER_WAIT_MS, on the TransactionManager's monitor: every offer comes under
 * that lock (its synchronized methods, or the worker's own synchronized blocks), and waiting releases it so that
 * the Sender can come in. */
@SuppressWarnings({"rawtypes", "unchecked"})
final class RaceQueue extends PriorityQueue {
    static final long SENDER_WAIT_MS = 10_000;

    final List<Object> held = new ArrayList<>();
    final Object lock; // the TransactionManager
    boolean holding;
    String first = "AddOffsetsToTxn";

    RaceQueue(PriorityQueue original, Object lock) {
        super(Math.max(1, original.size()), original.comparator());
        this.lock = lock;
        for (Object h : original) super.offer(h);
    }

    @Override
    public boolean offer(Object h) {
        String name = h.getClass().getSimpleName();
        if (holding && name.equals("AddPartitionsToTxnHandler")) {
            held.add(h);
            lock.notifyAll();
            return true;
        }
        if (name.equals("AddOffsetsToTxnHandler") && holding && first.equals("AddPartitionsToTxn")) {
            awaitHeld();
        }
        if (name.equals("AddOffsetsToTxnHandler") && !held.isEmpty()) {
            holding = false;
            if (first.equals("AddPartitionsToTxn")) releaseHeld();
            boolean added = super.offer(h);
            releaseHeld();
            return added;
        }
        return super.offer(h);
    }

    private void awaitHeld() {
        if (!Thread.holdsLock(lock)) return;
        long deadline = System.nanoTime() + SENDER_WAIT_MS * 1_000_000L;
        while (held.isEmpty()) {
            long leftMs = (deadline - System.nanoTime()) / 1_000_000L;
            if (leftMs <= 0) return;
            try {
                lock.wait(leftMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    void releaseHeld() {
        for (Object h : held) super.offer(h);
        held.clear();
    }
}
