/*
 * What kafka-clients logs, turned into the items of the RPC timeline the dashboard draws. Follows the log lines of
 * apache/kafka clients/src/main/java/org/apache/kafka/clients/NetworkClient.java (doSend and
 * handleCompletedReceives, at DEBUG):
 *     Sending {apiKey} request with header {RequestHeader} and timeout {ms} to node {id}: {request data}
 *     Received {apiKey} response from node {id} for request with header {RequestHeader}: {response data}
 * and of clients/src/main/java/org/apache/kafka/clients/producer/internals/TransactionManager.java:
 *     Transition from state {} to {}            / Transition from state {} to error state {}   (DEBUG, transitionTo)
 *     ProducerId set to {} with epoch {}        (INFO, setProducerIdAndEpoch)
 * Those two loggers are set to DEBUG (java.util.logging FINE, through slf4j-jdk14); everything else at WARNING
 * goes to stderr, which the parent keeps the tail of.
 *
 * The items have the shape of playground/kafka/worker.py's _LogCollector items, so the backend draws both alike:
 *     {"type": "rpc", "t", "rpc", "broker", "direction", "version", "corr", "error", "detail"}
 *     {"type": "state", "t", "from", "to"}      {"type": "pid", "t", "producer_id", "epoch"}
 */

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;

final class ClientLog extends Handler {
    // The RPCs the timeline shows, as worker.py's TIMELINE_RPCS: not Fetch, ListOffsets or Metadata, which a
    // consumer repeats on every poll and which would push the transactional RPCs out of the timeline.
    static final Set<String> TIMELINE_RPCS = Set.of(
        "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "Produce",
        "FindCoordinator", "OffsetCommit", "OffsetFetch", "JoinGroup", "SyncGroup");
    // Who answers them: NetworkClient names only a node id; which role that node plays follows from the RPC.
    static final Set<String> TXN_COORDINATOR_RPCS = Set.of("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn");
    static final Set<String> GROUP_COORDINATOR_RPCS = Set.of(
        "TxnOffsetCommit", "OffsetCommit", "OffsetFetch", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup");

    private static final Pattern SENT = Pattern.compile(
        "Sending (\\w+) request with header RequestHeader\\(apiKey=\\w+, apiVersion=(\\d+), clientId=.*?, "
            + "correlationId=(-?\\d+).*?\\) and timeout \\d+ to node (-?\\d+): ", Pattern.DOTALL);
    private static final Pattern RECEIVED = Pattern.compile(
        "Received (\\w+) response from node (-?\\d+) for request with header RequestHeader\\(apiKey=\\w+, "
            + "apiVersion=(\\d+), clientId=.*?, correlationId=(-?\\d+).*?\\): ", Pattern.DOTALL);
    // Every generated response's toString() spells its error fields errorCode=N (partitionErrorCode=N in
    // AddPartitionsToTxn): the first one that is not 0 is the answer's error.
    private static final Pattern ERROR_CODE = Pattern.compile("[eE]rrorCode=(-?\\d+)");
    private static final Pattern TRANSITION = Pattern.compile("Transition from state (\\w+) to (?:error state )?(\\w+)");
    private static final Pattern PRODUCER_ID = Pattern.compile("ProducerId set to (-?\\d+) with epoch (-?\\d+)");

    private final ArrayDeque<Map<String, Object>> items = new ArrayDeque<>();
    // error answers since the last drain (the wire error beside a call's exception) and the last one ever seen
    private final List<Map<String, Object>> errorsSinceDrain = new ArrayList<>();
    private Map<String, Object> lastErrorAnswer;
    final List<long[]> pidEpochs = new ArrayList<>();

    static ClientLog install() {
        LogManager.getLogManager().reset();
        ClientLog h = new ClientLog();
        h.setLevel(Level.ALL);
        Logger root = Logger.getLogger("");
        root.setLevel(Level.WARNING);
        root.addHandler(h);
        for (String name : new String[] {
            "org.apache.kafka.clients.NetworkClient",
            "org.apache.kafka.clients.producer.internals.TransactionManager"}) {
            Logger.getLogger(name).setLevel(Level.FINE);
        }
        return h;
    }

    // JUL keeps loggers weakly: the configured ones must stay referenced for their levels to last
    private static final List<Logger> KEEP = new ArrayList<>();

    static {
        KEEP.add(Logger.getLogger("org.apache.kafka.clients.NetworkClient"));
        KEEP.add(Logger.getLogger("org.apache.kafka.clients.producer.internals.TransactionManager"));
    }

    @Override
    public void publish(LogRecord record) {
        try {
            take(record);
        } catch (RuntimeException e) {
            // a line we misparse must never take the actor down
        }
    }

    private synchronized void take(LogRecord record) {
        String msg = record.getMessage();
        if (msg == null) return;
        double t = record.getMillis() / 1000.0;
        if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
            System.err.println(record.getLevel() + " " + record.getLoggerName() + ": " + msg
                + (record.getThrown() != null ? " (" + record.getThrown() + ")" : ""));
        }
        Matcher m;
        if (msg.contains("Sending ") && (m = SENT.matcher(msg)).find()) {
            String rpc = rpcName(m.group(1));
            if (!TIMELINE_RPCS.contains(rpc)) return;
            add(rpcItem(t, rpc, node(rpc, m.group(4)), "request", m.group(2), m.group(3), null, ""));
            return;
        }
        if (msg.contains("Received ") && (m = RECEIVED.matcher(msg)).find()) {
            String rpc = rpcName(m.group(1));
            String body = msg.substring(m.end());
            Integer code = errorCode(body);
            String error = null;
            String detail = "";
            if (code != null) {
                error = Errors.forCode(code.shortValue()).name();
                detail = error + " (" + code + ")";
                Map<String, Object> answer = new LinkedHashMap<>();
                answer.put("rpc", rpc);
                answer.put("version", Integer.parseInt(m.group(3)));
                answer.put("error", error);
                answer.put("code", code);
                errorsSinceDrain.add(answer);
                lastErrorAnswer = answer;
            }
            if (!TIMELINE_RPCS.contains(rpc)) return;
            add(rpcItem(t, rpc, node(rpc, m.group(2)), "response", m.group(3), m.group(4), error, detail));
            return;
        }
        if ((m = TRANSITION.matcher(msg)).find()) {
            Map<String, Object> it = new LinkedHashMap<>();
            it.put("type", "state");
            it.put("t", t);
            it.put("from", m.group(1));
            it.put("to", m.group(2));
            add(it);
            return;
        }
        if ((m = PRODUCER_ID.matcher(msg)).find()) {
            notePid(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), t);
        }
    }

    /** A producer id and epoch, from the log line or read from the TransactionManager after a call. */
    synchronized void notePid(long producerId, long epoch, double t) {
        for (long[] pe : pidEpochs) {
            if (pe[0] == producerId && pe[1] == epoch) return;
        }
        if (producerId < 0) return;
        pidEpochs.add(new long[] {producerId, epoch});
        Map<String, Object> it = new LinkedHashMap<>();
        it.put("type", "pid");
        it.put("t", t);
        it.put("producer_id", producerId);
        it.put("epoch", epoch);
        add(it);
    }

    private void add(Map<String, Object> item) {
        if (items.size() >= 2000) items.pollFirst(); // between two answers; older lines are dropped
        items.addLast(item);
    }

    private static String rpcName(String apiKeyEnum) {
        try {
            return ApiKeys.valueOf(apiKeyEnum).name; // END_TXN -> EndTxn, as the protocol names it
        } catch (IllegalArgumentException e) {
            return apiKeyEnum;
        }
    }

    /** NetworkClient's node ids -> worker.py's broker names ("TxnCoordinator/1", "-1/bootstrap", "broker/2"). The
     * consumer's group coordinator connection has the id Integer.MAX_VALUE - node id (AbstractCoordinator). */
    private static String node(String rpc, String id) {
        long n = Long.parseLong(id);
        if (n < 0) return id + "/bootstrap";
        if (n > Integer.MAX_VALUE / 2) n = Integer.MAX_VALUE - n;
        if (TXN_COORDINATOR_RPCS.contains(rpc)) return "TxnCoordinator/" + n;
        if (GROUP_COORDINATOR_RPCS.contains(rpc)) return "GroupCoordinator/" + n;
        return "broker/" + n;
    }

    private static Integer errorCode(String body) {
        Matcher m = ERROR_CODE.matcher(body);
        while (m.find()) {
            int code = Integer.parseInt(m.group(1));
            if (code != 0) return code;
        }
        return null;
    }

    private static Map<String, Object> rpcItem(double t, String rpc, String broker, String direction, String version,
                                               String corr, String error, String detail) {
        Map<String, Object> it = new LinkedHashMap<>();
        it.put("type", "rpc");
        it.put("t", t);
        it.put("rpc", rpc);
        it.put("broker", broker);
        it.put("direction", direction);
        it.put("version", Integer.parseInt(version));
        it.put("corr", Long.parseLong(corr));
        it.put("error", error);
        it.put("detail", detail);
        return it;
    }

    synchronized List<Map<String, Object>> drain() {
        List<Map<String, Object>> out = new ArrayList<>(items);
        items.clear();
        return out;
    }

    /** The error answers received since the previous call to this method. */
    synchronized List<Map<String, Object>> takeErrorAnswers() {
        List<Map<String, Object>> out = new ArrayList<>(errorsSinceDrain);
        errorsSinceDrain.clear();
        return out;
    }

    synchronized Map<String, Object> lastErrorAnswer() {
        return lastErrorAnswer;
    }

    synchronized List<List<Long>> pidEpochList() {
        List<List<Long>> out = new ArrayList<>();
        for (long[] pe : pidEpochs) out.add(List.of(pe[0], pe[1]));
        return out;
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
    }
}
