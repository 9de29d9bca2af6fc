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
 * ProducerActor.holdAddPartitions. */
@SuppressWarnings({"rawtypes", "unchecked"})
final class RaceQueue extends PriorityQueue {
    final List<Object> held = new ArrayList<>();
    boolean holding;
    String first = "AddOffsetsToTxn";

    RaceQueue(PriorityQueue original) {
        super(Math.max(1, original.size()), original.comparator());
        for (Object h : original) super.offer(h);
    }

    @Override
    public boolean offer(Object h) {
        String name = h.getClass().getSimpleName();
        if (holding && name.equals("AddPartitionsToTxnHandler")) {
            held.add(h);
            return true;
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

    void releaseHeld() {
        for (Object h : held) super.offer(h);
        held.clear();
    }
}
