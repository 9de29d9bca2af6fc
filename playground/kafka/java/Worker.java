/*
 * One actor of a real-cluster session on the Java client: a KafkaProducer or a KafkaConsumer in a process of its
 * own, driven by playground/kafka/java_worker.py over stdin/stdout, one JSON object per line. It mirrors
 * playground/kafka/worker.py (the librdkafka worker) operation for operation, and follows kafka-clients' own
 * sources (apache/kafka, clients/src/main/java/org/apache/kafka/clients/):
 *   producer/KafkaProducer.java                 which call throws what; doSend() hands an ApiException (a fenced
 *                                               producer's send, say) to the callback and a failed future rather
 *                                               than throwing it
 *   producer/internals/TransactionManager.java  the State enum (UNINITIALIZED ... FATAL_ERROR, reported after every
 *                                               call), maybeFailWithError() (the exception a later call gets)
 *   consumer/KafkaConsumer.java                 assign, poll, position, committed, endOffsets, commitSync
 *
 * Protocol:
 *   parent -> worker  first line: {"kind": "producer"|"consumer", "name": ..., "config": {...}}
 *                     (the configuration travels on stdin, not argv, where `ps` would show its secrets)
 *                     then: {"id": n, "op": "commit_transaction", "args": {...}, "timeout_s": s}
 *   worker -> parent  {"id": null, "ok": true, "result": {"ignored_settings": [...], "pid": ..., "client_version": ...}}
 *                     {"id": n, "ok": true, "result": {...}, "logs": [...], "txn_state": "...", "pid_epochs": [...]}
 *                     {"id": n, "ok": false, "error": "..."}      (a bug in the worker, not a Kafka error)
 * Kafka and client errors are results, named as the Java client names them (the exception's simple class name),
 * with the wire error beside them: {"outcome": "ProducerFencedException", "detail": "...", "wire": [{"rpc":
 * "EndTxn", "version": 4, "error": "PRODUCER_FENCED", "code": 90}], "fatal": true, ...}.
 *
 * Every call is bounded: kafka-clients' blocking calls by max.block.ms (the parent sets it below its own budget),
 * a send's future and flush() by the step's time here, and the parent kills a worker that does not answer in time.
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class Worker {
    private static PrintStream out;

    /** A failure the worker cannot express as a Kafka outcome: reported as {"ok": false}. */
    static final class WorkerBug extends RuntimeException {
        WorkerBug(String message) {
            super(message);
        }
    }

    public static void main(String[] argv) throws Exception {
        // stdout carries the protocol only: anything else that prints goes to stderr
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        ClientLog log = ClientLog.install();
        if (argv.length > 0 && "--train".equals(argv[0])) {
            train(log);
            return;
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String first = in.readLine();
        if (first == null) System.exit(0);
        Map<String, Object> hello = map(Json.parse(first));
        String kind = (String) hello.get("kind");
        String name = (String) hello.get("name");
        Map<String, Object> config = map(hello.get("config"));
        Actor actor;
        try {
            actor = "producer".equals(kind) ? new ProducerActor(config, log) : new ConsumerActor(config, log);
        } catch (Throwable e) { // bad configuration: report it, then exit
            send(reply(null, false, "error", "cannot create the client: " + chain(e)));
            System.exit(0);
            return;
        }
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("ignored_settings", actor.ignored);
        ready.put("pid", ProcessHandle.current().pid());
        ready.put("client_version", clientVersion());
        ready.put("actor", name);
        Map<String, Object> hi = reply(null, true, "result", ready);
        hi.put("txn_state", actor.txnState());
        send(hi);

        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Object id = null;
            try {
                Map<String, Object> msg = map(Json.parse(line));
                id = msg.get("id");
                if (handle(actor, log, msg)) break;
            } catch (Throwable e) { // a bug of this worker: say so, and stay up for the next call
                send(reply(id, false, "error", chain(e)));
            }
        }
        // Kafka's I/O threads are not daemons: leave without waiting for them (a closed client has none left)
        System.exit(0);
    }

    /** Answers one request; true when it was the last ("exit"). */
    private static boolean handle(Actor actor, ClientLog log, Map<String, Object> msg) {
        Object id = msg.get("id");
        String op = (String) msg.get("op");
        Map<String, Object> args = msg.get("args") == null ? Map.of() : map(msg.get("args"));
        double timeoutS = msg.get("timeout_s") == null ? 15.0 : ((Number) msg.get("timeout_s")).doubleValue();
        if ("exit".equals(op)) {
            try {
                actor.shutdown(timeoutS);
            } finally {
                Map<String, Object> r = reply(id, true, "result", Map.of("outcome", "ok"));
                r.put("logs", log.drain());
                send(r);
            }
            return true;
        }
        Map<String, Object> result;
        try {
            log.takeErrorAnswers(); // the wire errors of this call only
            result = actor.call(op, args, timeoutS);
        } catch (WorkerBug e) {
            send(reply(id, false, "error", op + ": " + e.getMessage()));
            return false;
        } catch (Throwable e) {
            actor.settle();
            result = actor.outcome(e);
            if (result == null) {
                send(reply(id, false, "error", op + ": " + chain(e)));
                return false;
            }
        }
        result.put("state", actor.state());
        Map<String, Object> r = reply(id, true, "result", result);
        r.put("logs", log.drain());
        r.put("txn_state", actor.txnState());
        r.put("pid_epochs", log.pidEpochList());
        send(r);
        return false;
    }

    /** kafka-clients' release, from the resource AppInfoParser reads (AppInfoParser itself moved in 4.x). */
    /** The class-data-sharing training run of tools/java/build.sh (`Worker --train`, under
     * -XX:ArchiveClassesAtExit): load what a worker's start and its first calls load, so that the archive written at
     * exit spares every later worker JVM most of its class loading and verification (about half its start-up CPU).
     * No broker is needed: a producer and a consumer are created against an address nothing answers on and closed at
     * once, and the classes of kafka-clients' protocol and client packages are loaded (not initialised) by name. */
    static void train(ClientLog log) throws Exception {
        Map<String, Object> conf = new LinkedHashMap<>();
        conf.put("bootstrap.servers", "127.0.0.1:9");
        conf.put("transactional.id", "cds-training");
        Map<String, Object> cconf = new LinkedHashMap<>();
        cconf.put("bootstrap.servers", "127.0.0.1:9");
        cconf.put("isolation.level", "read_committed");
        Actor producer = new ProducerActor(conf, log);
        Actor consumer = new ConsumerActor(cconf, log);
        Json.parse("{\"id\": 1, \"op\": \"poll\", \"args\": {\"max\": null}, \"timeout_s\": 1.5}");
        Json.write(reply(1, true, "result", ok()));
        producer.txnState();
        ClassLoader loader = Worker.class.getClassLoader();
        String[] packages = {"org/apache/kafka/common/message/", "org/apache/kafka/common/requests/",
            "org/apache/kafka/common/protocol/", "org/apache/kafka/common/record/", "org/apache/kafka/common/errors/",
            "org/apache/kafka/clients/producer/", "org/apache/kafka/clients/consumer/", "org/apache/kafka/clients/"};
        java.net.URL where = KafkaProducer.class.getProtectionDomain().getCodeSource().getLocation();
        int loaded = 0;
        try (java.util.jar.JarFile jar = new java.util.jar.JarFile(new java.io.File(where.toURI()))) {
            for (java.util.Enumeration<java.util.jar.JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
                String n = e.nextElement().getName();
                if (!n.endsWith(".class") || n.contains("-")) continue;
                boolean wanted = false;
                for (String p : packages) {
                    // the package itself, not its sub-packages (admin, the share consumer, ...), except producer/consumer internals
                    if (n.startsWith(p) && (n.indexOf('/', p.length()) < 0 || n.startsWith(p + "internals/"))) wanted = true;
                }
                if (!wanted) continue;
                try {
                    Class.forName(n.substring(0, n.length() - 6).replace('/', '.'), false, loader);
                    loaded++;
                } catch (Throwable ignored) {
                    // a class that cannot load here is simply not archived
                }
            }
        }
        producer.shutdown(0.1);
        consumer.shutdown(0.1);
        System.err.println("trained: " + loaded + " classes loaded");
    }

    static String clientVersion() {
        try (java.io.InputStream r = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties p = new Properties();
            if (r != null) p.load(r);
            return p.getProperty("version", "unknown");
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    private static Map<String, Object> reply(Object id, boolean ok, String key, Object value) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("id", id);
        r.put("ok", ok);
        r.put(key, value);
        return r;
    }

    private static void send(Map<String, Object> msg) {
        out.print(Json.write(msg));
        out.print('\n');
        out.flush();
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object o) {
        if (!(o instanceof Map)) throw new WorkerBug("expected a JSON object, got " + o);
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object o) {
        if (o == null) return List.of();
        if (!(o instanceof List)) throw new WorkerBug("expected a JSON array, got " + o);
        return (List<Object>) o;
    }

    static Integer intOrNull(Object o) {
        return o == null ? null : ((Number) o).intValue();
    }

    /** "KafkaException: Cannot execute transactional method ... <- ProducerFencedException: There is a newer ..." */
    static String chain(Throwable e) {
        StringBuilder b = new StringBuilder();
        Throwable t = e;
        for (int depth = 0; t != null && depth < 6; depth++, t = t.getCause()) {
            if (depth > 0) b.append(" <- ");
            b.append(t.getClass().getSimpleName());
            if (t.getMessage() != null) b.append(": ").append(t.getMessage());
            if (t.getCause() == t) break;
        }
        return b.length() > 600 ? b.substring(0, 600) + "..." : b.toString();
    }

    /** Drops (and reports) settings this client does not know, as worker.py does with librdkafka's. */
    static Properties properties(Map<String, Object> config, Set<String> known, List<String> ignored) {
        Properties p = new Properties();
        for (Map.Entry<String, Object> e : new TreeMap<>(config).entrySet()) {
            if (!known.contains(e.getKey())) {
                ignored.add(e.getKey());
                continue;
            }
            Object v = e.getValue();
            p.put(e.getKey(), v instanceof Double && ((Double) v) == Math.rint((Double) v) ? String.valueOf(((Double) v).longValue()) : String.valueOf(v));
        }
        return p;
    }

    // ------------------------------------------------------------------------------------------------ actors

    abstract static class Actor {
        final List<String> ignored = new ArrayList<>();
        final ClientLog log;

        Actor(ClientLog log) {
            this.log = log;
        }

        abstract Map<String, Object> call(String op, Map<String, Object> args, double timeoutS) throws Exception;

        abstract Map<String, Object> state();

        abstract void shutdown(double timeoutS);

        String txnState() {
            return null;
        }

        /** After a call threw. kafka-clients fails the call's result before it moves the TransactionManager to
         * its error state (TransactionManager.TxnRequestHandler.fatalError: result.fail(e), then
         * transitionToFatalError(e), on the I/O thread), so the caller may wake up while the state still says
         * COMMITTING_TRANSACTION. Wait a little for that transition, so that the state reported is the one the
         * application's next call meets. */
        void settle() {
            long deadline = System.nanoTime() + 500_000_000L;
            while (System.nanoTime() < deadline) {
                String st = txnState();
                if (!"COMMITTING_TRANSACTION".equals(st) && !"ABORTING_TRANSACTION".equals(st) && !"INITIALIZING".equals(st)) return;
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        /** An exception a Kafka call threw -> its outcome; null for anything that is a bug of this worker. */
        Map<String, Object> outcome(Throwable e) {
            Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            if (!(t instanceof KafkaException || t instanceof IllegalStateException
                || t instanceof IllegalArgumentException || t instanceof java.util.concurrent.TimeoutException)) {
                return null;
            }
            return failure(t, null, true);
        }

        Map<String, Object> failure(Throwable t, String note) {
            return failure(t, note, true);
        }

        /** `ownCall`: the failure of the call being answered, whose wire errors are the error answers received
         * since it began; otherwise (a callback on the I/O thread) only the last error answer is named. */
        Map<String, Object> failure(Throwable t, String note, boolean ownCall) {
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("outcome", t.getClass().getSimpleName());
            r.put("exception", t.getClass().getName());
            List<Map<String, Object>> wire = ownCall ? log.takeErrorAnswers() : new ArrayList<>();
            StringBuilder detail = new StringBuilder(chain(t));
            if (note != null) detail.append(" (").append(note).append(")");
            if (!wire.isEmpty()) {
                Map<String, Object> w = wire.get(wire.size() - 1);
                detail.append("; on the wire: ").append(w.get("rpc")).append(" v").append(w.get("version"))
                    .append(" ").append(w.get("error")).append(" (").append(w.get("code")).append(")");
            } else if (log.lastErrorAnswer() != null && (isErrorState() || !ownCall)) {
                // the call failed on a state an earlier answer caused (maybeFailWithError): name that answer
                Map<String, Object> w = log.lastErrorAnswer();
                r.put("wire_cause", w);
                detail.append(ownCall ? "; caused earlier by " : "; the last error answer: ").append(w.get("rpc")).append(" v").append(w.get("version"))
                    .append(" ").append(w.get("error")).append(" (").append(w.get("code")).append(")");
            }
            r.put("wire", wire);
            r.put("detail", detail.toString());
            r.put("retriable", t instanceof RetriableException);
            String st = txnState();
            r.put("fatal", "FATAL_ERROR".equals(st));
            r.put("txn_requires_abort", "ABORTABLE_ERROR".equals(st));
            return r;
        }

        boolean isErrorState() {
            String st = txnState();
            return "FATAL_ERROR".equals(st) || "ABORTABLE_ERROR".equals(st);
        }
    }

    // ---------------------------------------------------------------------------------------------- producer


    static final class ProducerActor extends Actor {
        final KafkaProducer<String, String> p;
        final Object tm; // TransactionManager (null for a producer that is neither transactional nor idempotent)
        final Field tmState;
        final Field tmPid;
        final boolean transactional;
        int appSentOk;
        final List<Delivery> inflight = Collections.synchronizedList(new ArrayList<>());
        // failures of sends nobody waits for (fire and forget): only the send's callback sees them
        final List<Exception> unseen = Collections.synchronizedList(new ArrayList<>());
        boolean closed;
        // the TransactionManager's pendingRequests once a send asked to hold the Sender's AddPartitionsToTxn
        RaceQueue race; // RaceQueue.java

        ProducerActor(Map<String, Object> config, ClientLog log) throws Exception {
            super(log);
            transactional = config.get(ProducerConfig.TRANSACTIONAL_ID_CONFIG) != null;
            Properties props = properties(config, ProducerConfig.configNames(), ignored);
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p = new KafkaProducer<>(props);
            // TransactionManager is internal: its state is read the way a debugger would, to report it after every
            // call as worker.py reports librdkafka's txn state. Its field names are those of 3.9 and 4.x alike.
            Field f = KafkaProducer.class.getDeclaredField("transactionManager");
            f.setAccessible(true);
            tm = f.get(p);
            if (tm != null) {
                tmState = tm.getClass().getDeclaredField("currentState");
                tmState.setAccessible(true);
                tmPid = tm.getClass().getDeclaredField("producerIdAndEpoch");
                tmPid.setAccessible(true);
            } else {
                tmState = null;
                tmPid = null;
            }
        }

        boolean isTransactional() {
            return transactional;
        }

        /** The race of issue 31 item 6, made to happen the way the scenario says (send_offsets_to_transaction's
         * `first`). A Spring listener sends its records and calls sendOffsetsToTransaction within microseconds: its
         * Sender thread queues AddPartitionsToTxn (TransactionManager.nextRequest) and its own thread
         * AddOffsetsToTxn (sendOffsetsToTransaction), and whichever is queued first goes first. Here each step is a
         * round trip from the Python side, so the Sender's AddPartitionsToTxn would always be sent and answered
         * before sendOffsetsToTransaction is called. A send that asks to hold (`hold_add_partitions`, a
         * fire-and-forget produce right before such a step) replaces the TransactionManager's pendingRequests by a
         * RaceQueue that keeps the Sender's AddPartitionsToTxn out of the queue until the AddOffsetsToTxn arrives,
         * then puts both in, in the order asked. Everything else is kafka-clients' own code: which request is
         * sent, how its answer is handled, what the application's call then throws. The queue is only touched
         * under the TransactionManager's lock, as its own code does. */
        @SuppressWarnings({"unchecked", "rawtypes"})
        void holdAddPartitions() throws Exception {
            if (tm == null) return;
            synchronized (tm) {
                if (race == null) {
                    Field f = tm.getClass().getDeclaredField("pendingRequests");
                    f.setAccessible(true);
                    race = new RaceQueue((PriorityQueue) f.get(tm), tm);
                    f.set(tm, race);
                }
                race.holding = true;
            }
        }

        void releaseAddPartitions() {
            synchronized (tm) {
                race.holding = false;
                race.first = "AddOffsetsToTxn";
                race.releaseHeld();
            }
        }

        @Override
        String txnState() {
            try {
                return tm == null ? null : String.valueOf(tmState.get(tm));
            } catch (IllegalAccessException e) {
                return null;
            }
        }

        void notePid() {
            if (tm == null) return;
            try {
                Object pe = tmPid.get(tm);
                if (pe == null) return;
                long id = pe.getClass().getField("producerId").getLong(pe);
                long epoch = pe.getClass().getField("epoch").getShort(pe);
                log.notePid(id, epoch, System.currentTimeMillis() / 1000.0);
            } catch (ReflectiveOperationException e) {
                // the log line "ProducerId set to" reports it too
            }
        }

        @Override
        Map<String, Object> state() {
            notePid();
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("queue", inflight.size());
            s.put("app_sent_ok", appSentOk);
            // Described here, on the main thread, not in the callback: Sender.failBatch completes the batch (runs
            // the callbacks, wakes flush()) before TransactionManager.handleFailedBatch moves to the error state
            // (maybeTransitionToErrorState: every failed send of a transactional producer ends in ABORTABLE_ERROR
            // or FATAL_ERROR), so wait a little for that transition first.
            if (!unseen.isEmpty() && isTransactional()) {
                long deadline = System.nanoTime() + 500_000_000L;
                while (!isErrorState() && !"ABORTING_TRANSACTION".equals(txnState()) && System.nanoTime() < deadline) {
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        break;
                    }
                }
            }
            List<Map<String, Object>> raised = new ArrayList<>();
            synchronized (unseen) {
                for (Exception e : unseen) {
                    Map<String, Object> r = failure(e, "a fire-and-forget send: only its callback saw this", false);
                    r.put("op", "send");
                    raised.add(r);
                }
                unseen.clear();
            }
            s.put("raised", raised);
            return s;
        }

        @Override
        Map<String, Object> call(String op, Map<String, Object> a, double timeoutS) throws Exception {
            // a send may block for metadata (up to max.block.ms) before its future exists: the step's time counts
            // from here
            long deadline = System.nanoTime() + (long) (timeoutS * 1e9);
            boolean holds = Boolean.TRUE.equals(a.get("hold_add_partitions"));
            if (holds) {
                holdAddPartitions();
            } else if (race != null && !op.equals("send_offsets_to_transaction") && !op.equals("status")) {
                releaseAddPartitions();  // the application's next call: the Sender's round has come
            }
            switch (op) {
                case "init_transactions":
                    p.initTransactions();
                    return ok();
                case "begin_transaction":
                    p.beginTransaction();
                    return ok();
                case "produce": {
                    Delivery d = send((String) a.get("topic"), intOrNull(a.get("partition")), (String) a.get("key"),
                        (String) a.get("value"), !Boolean.FALSE.equals(a.get("wait")));
                    Map<String, Object> r = ok();
                    if (!d.await) {
                        r.put("delivery", null);
                        return r;
                    }
                    return awaitAll(List.of(d), deadline, false);
                }
                case "produce_many": {
                    boolean wait = !Boolean.FALSE.equals(a.get("wait"));
                    List<Delivery> ds = new ArrayList<>();
                    for (Object o : list(a.get("records"))) {
                        Map<String, Object> rec = map(o);
                        ds.add(send((String) rec.get("topic"), intOrNull(rec.get("partition")), (String) rec.get("key"),
                            (String) rec.get("value"), wait));
                    }
                    if (!wait) {
                        Map<String, Object> r = ok();
                        r.put("deliveries", List.of());
                        return r;
                    }
                    return awaitAll(ds, deadline, true);
                }
                case "flush":
                    return flush(timeoutS);
                case "send_offsets_to_transaction": {
                    Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
                    for (Object o : list(a.get("offsets"))) {
                        List<Object> tpo = list(o);
                        offsets.put(new TopicPartition((String) tpo.get(0), ((Number) tpo.get(1)).intValue()),
                            new OffsetAndMetadata(((Number) tpo.get(2)).longValue()));
                    }
                    Map<String, Object> g = map(a.get("group_metadata"));
                    ConsumerGroupMetadata meta = new ConsumerGroupMetadata((String) g.get("group_id"),
                        ((Number) g.get("generation_id")).intValue(), (String) g.get("member_id"),
                        Optional.ofNullable((String) g.get("group_instance_id")));
                    if (race != null) {
                        synchronized (tm) {
                            race.first = String.valueOf(a.getOrDefault("first", "AddOffsetsToTxn"));
                        }
                    }
                    try {
                        p.sendOffsetsToTransaction(offsets, meta);
                    } finally {
                        if (race != null) releaseAddPartitions();
                    }
                    return ok();
                }
                case "commit_transaction":
                    p.commitTransaction();
                    return ok();
                case "abort_transaction":
                    p.abortTransaction();
                    return ok();
                case "close":
                    // KafkaProducer.close() aborts a transaction still open (Sender: "Aborting incomplete
                    // transaction due to shutdown"), then sends what is buffered: a close is not a crash
                    if (!closed) {
                        p.close(Duration.ofMillis((long) (timeoutS * 1000)));
                        closed = true;
                    }
                    return ok();
                case "status":
                    return ok();
                default:
                    throw new WorkerBug("unknown operation '" + op + "' for a producer");
            }
        }

        /** One ProducerRecord handed to send(). The callback is how a Java application learns a send's fate; a
         * fire-and-forget send is one whose future nobody calls get() on. */
        final class Delivery implements Callback {
            final String topic;
            final Integer partition;
            final String value;
            final boolean await;
            volatile boolean done;
            volatile RecordMetadata metadata;
            volatile Exception error;
            volatile Future<RecordMetadata> future;

            Delivery(String topic, Integer partition, String value, boolean await) {
                this.topic = topic;
                this.partition = partition;
                this.value = value;
                this.await = await;
            }

            @Override
            public void onCompletion(RecordMetadata m, Exception e) {
                metadata = m;
                error = e;
                done = true;
                inflight.remove(this);
                if (e != null && !await) unseen.add(e);
            }

            Map<String, Object> report() {
                Integer part = metadata != null && metadata.partition() >= 0 ? Integer.valueOf(metadata.partition()) : partition;
                if (part == null) return null; // failed before a partition was chosen: nothing to draw
                Map<String, Object> d = new LinkedHashMap<>();
                d.put("topic", topic);
                d.put("partition", part);
                d.put("offset", error == null && metadata != null ? metadata.offset() : null);
                d.put("value", value);
                d.put("error", error == null ? null : error.getClass().getSimpleName());
                d.put("await", await);
                return d;
            }
        }

        Delivery send(String topic, Integer partition, String key, String value, boolean await) {
            Delivery d = new Delivery(topic, partition, value, await);
            inflight.add(d);
            Future<RecordMetadata> f;
            try {
                // A RuntimeException that is not an ApiException (IllegalStateException outside a transaction, a
                // KafkaException) is thrown here; an ApiException goes to the callback and a failed future.
                f = p.send(new ProducerRecord<>(topic, partition, key, value), d);
            } catch (RuntimeException e) {
                inflight.remove(d);
                throw e;
            }
            d.future = f;
            if (!await) appSentOk++; // fire and forget: the application believes it sent the record once send() returned
            return d;
        }

        Map<String, Object> awaitAll(List<Delivery> ds, long deadline, boolean many) throws Exception {
            Map<String, Object> r = ok();
            List<Map<String, Object>> reports = new ArrayList<>();
            Throwable firstError = null;
            for (Delivery d : ds) {
                try {
                    d.future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                    appSentOk++;
                } catch (ExecutionException e) {
                    if (firstError == null) firstError = e.getCause() != null ? e.getCause() : e;
                } catch (java.util.concurrent.TimeoutException e) {
                    Map<String, Object> t = failure(e, "Future.get(): no answer to the send within the step's time");
                    t.put(many ? "deliveries" : "delivery", many ? List.of() : null);
                    return t;
                }
                Map<String, Object> rep = d.report();
                if (rep != null) reports.add(rep);
            }
            if (firstError != null) {
                r = failure(firstError, null);
            }
            if (many) r.put("deliveries", reports);
            else r.put("delivery", reports.isEmpty() ? null : reports.get(0));
            return r;
        }

        Map<String, Object> flush(double timeoutS) throws Exception {
            // flush() has no timeout of its own (it waits for every buffered send, up to delivery.timeout.ms): it
            // runs in a thread of its own so that the step's time bounds it
            Throwable[] thrown = new Throwable[1];
            Thread t = new Thread(() -> {
                try {
                    p.flush();
                } catch (Throwable e) {
                    thrown[0] = e;
                }
            }, "flush");
            t.setDaemon(true);
            t.start();
            t.join((long) (timeoutS * 1000));
            if (t.isAlive()) {
                Map<String, Object> r = failure(new java.util.concurrent.TimeoutException(
                    "flush() had not returned after " + timeoutS + " s"), "the application stopped waiting");
                r.put("left", inflight.size());
                return r;
            }
            if (thrown[0] != null) {
                if (thrown[0] instanceof Exception) throw (Exception) thrown[0];
                throw new RuntimeException(thrown[0]);
            }
            Map<String, Object> r = ok();
            r.put("left", inflight.size());
            return r;
        }

        @Override
        void shutdown(double timeoutS) {
            if (!closed) {
                try {
                    p.close(Duration.ofMillis((long) (Math.min(timeoutS, 5.0) * 1000)));
                } catch (RuntimeException e) {
                    // leaving anyway
                }
                closed = true;
            }
        }
    }

    static Map<String, Object> ok() {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("outcome", "ok");
        return r;
    }

    // ---------------------------------------------------------------------------------------------- consumer

    static final class ConsumerActor extends Actor {
        final KafkaConsumer<String, String> c;
        final List<TopicPartition> assigned = new ArrayList<>();
        boolean fromCommitted;
        // a group member (subscribe()): the group's rebalances, run inside poll(), assign its partitions
        boolean subscribed;
        // from a revoke to the next assignment (the eager protocol gives up everything; both run inside poll())
        boolean rebalancing;
        final List<String> toSubscribe = new ArrayList<>();
        // positions as the application knows them: partitions resolved or polled (worker.py's self.pos)
        final Map<TopicPartition, Long> pos = new LinkedHashMap<>();
        boolean closed;

        ConsumerActor(Map<String, Object> config, ClientLog log) {
            super(log);
            Properties props = properties(config, ConsumerConfig.configNames(), ignored);
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            c = new KafkaConsumer<>(props);
        }

        @Override
        Map<String, Object> state() {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("positions", positionList());
            return s;
        }

        List<List<Object>> positionList() {
            List<List<Object>> outList = new ArrayList<>();
            List<TopicPartition> keys = new ArrayList<>(pos.keySet());
            keys.sort((x, y) -> x.topic().equals(y.topic()) ? Integer.compare(x.partition(), y.partition()) : x.topic().compareTo(y.topic()));
            for (TopicPartition tp : keys) outList.add(List.of(tp.topic(), tp.partition(), pos.get(tp)));
            return outList;
        }

        @Override
        Map<String, Object> call(String op, Map<String, Object> a, double timeoutS) throws Exception {
            switch (op) {
                case "subscribe": {
                    // group management (a static member's, KIP-345): each partition starts at the group's
                    // committed offset; subscribe() itself at the first poll, when a scenario's consumer joins
                    toSubscribe.clear();
                    for (Object o : list(a.get("topics"))) toSubscribe.add((String) o);
                    subscribed = true;
                    fromCommitted = true;
                    assigned.clear();
                    pos.clear();
                    return ok();
                }
                case "assign": {
                    List<TopicPartition> tps = new ArrayList<>();
                    for (Object o : list(a.get("partitions"))) {
                        List<Object> tp = list(o);
                        tps.add(new TopicPartition((String) tp.get(0), ((Number) tp.get(1)).intValue()));
                    }
                    return assign(tps, Boolean.TRUE.equals(a.get("from_committed")));
                }
                case "poll":
                    return poll(timeoutS, intOrNull(a.get("max")),
                        a.get("settle_s") == null ? null : ((Number) a.get("settle_s")).doubleValue());
                case "positions": {
                    resolveStart(lookupBudget(timeoutS));
                    syncPositions(timeoutS);
                    Map<String, Object> r = ok();
                    r.put("positions", positionList());
                    return r;
                }
                case "group_metadata": {
                    syncPositions(timeoutS);
                    ConsumerGroupMetadata g = c.groupMetadata();
                    Map<String, Object> meta = new LinkedHashMap<>();
                    meta.put("group_id", g.groupId());
                    meta.put("generation_id", g.generationId());
                    meta.put("member_id", g.memberId());
                    meta.put("group_instance_id", g.groupInstanceId().orElse(null));
                    Map<String, Object> r = ok();
                    r.put("group_metadata", meta);
                    r.put("positions", positionList());
                    return r;
                }
                case "commit": {
                    // commitSync() of the positions the application knows; with none, the Java client sends
                    // nothing and returns (worker.py reports librdkafka's _NO_OFFSET there)
                    syncPositions(timeoutS);
                    Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
                    List<List<Object>> committed = new ArrayList<>();
                    for (Map.Entry<TopicPartition, Long> e : pos.entrySet()) {
                        if (e.getValue() >= 0) {
                            offsets.put(e.getKey(), new OffsetAndMetadata(e.getValue()));
                            committed.add(List.of(e.getKey().topic(), e.getKey().partition(), e.getValue()));
                        }
                    }
                    c.commitSync(offsets, Duration.ofMillis((long) (timeoutS * 1000)));
                    Map<String, Object> r = ok();
                    r.put("committed", committed);
                    return r;
                }
                case "seek_to_committed": {
                    if (subscribed) {
                        // the group owns the assignment: each partition back to its committed offset instead
                        followAssignment();
                        pos.clear();
                        resolveStart(lookupBudget(timeoutS));
                        for (Map.Entry<TopicPartition, Long> e : pos.entrySet()) c.seek(e.getKey(), e.getValue());
                        return ok();
                    }
                    // re-assigning (rather than seek) also drops what was pre-fetched for the old positions
                    c.unsubscribe(); // drops the manual assignment with its positions
                    Map<String, Object> r = assign(new ArrayList<>(assigned), fromCommitted);
                    resolveStart(lookupBudget(timeoutS));
                    return r;
                }
                case "status":
                    return ok();
                case "close":
                    if (!closed) {
                        c.close(Duration.ofMillis((long) (timeoutS * 1000)));
                        closed = true;
                    }
                    return ok();
                default:
                    throw new WorkerBug("unknown operation '" + op + "' for a consumer");
            }
        }

        /** How long one lookup inside a step may take (a position, the end offsets): half the step's time, at most
         * 10 s. A JVM's first requests are slow on a loaded machine (classes still loading, C1 compiling), and the
         * step's own bound is what matters. */
        static double lookupBudget(double timeoutS) {
            return Math.max(1.0, Math.min(timeoutS / 2, 10.0));
        }

        /** Manual assignment (no rebalance: deterministic). A group consumer starts at the group's committed
         * offsets (the Java consumer fetches them with require_stable, so the offsets of a transaction still open
         * are waited for), any other at the beginning. */
        Map<String, Object> assign(List<TopicPartition> tps, boolean fromCommitted) {
            c.assign(tps);
            if (!fromCommitted) c.seekToBeginning(tps);
            if (assigned != tps) {
                assigned.clear();
                assigned.addAll(tps);
            }
            this.fromCommitted = fromCommitted;
            pos.clear(); // unknown until resolved
            return ok();
        }

        /** Positions not known yet: position() resolves them (the committed offset, auto.offset.reset=earliest
         * without one, or the beginning after seekToBeginning). */
        void resolveStart(double timeoutS) {
            for (TopicPartition tp : assigned) {
                if (!pos.containsKey(tp)) pos.put(tp, c.position(tp, Duration.ofMillis((long) (timeoutS * 1000))));
            }
        }

        void syncPositions(double timeoutS) {
            // the Java consumer moves the position past control records and (read_committed) aborted data too
            for (TopicPartition tp : new ArrayList<>(pos.keySet())) {
                long p = c.position(tp, Duration.ofMillis((long) (lookupBudget(timeoutS) * 1000)));
                pos.put(tp, Math.max(pos.get(tp), p));
            }
        }

        /** A group member's partitions as its last rebalance left them (positions of those it lost are dropped,
         * those it gained are resolved again); true when it has some. */
        boolean followAssignment() {
            if (subscribed) {
                List<TopicPartition> now = new ArrayList<>(c.assignment());
                now.sort((x, y) -> x.topic().equals(y.topic()) ? Integer.compare(x.partition(), y.partition()) : x.topic().compareTo(y.topic()));
                if (!now.equals(assigned)) {
                    pos.keySet().retainAll(now);
                    assigned.clear();
                    assigned.addAll(now);
                }
            }
            return !assigned.isEmpty();
        }

        /** One poll()'s records, up to `max` in all: what lies beyond is handed out again by a later poll. */
        void take(List<Map<String, Object>> got, Integer max) {
            ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(100));
            Map<TopicPartition, Long> rewind = new HashMap<>();
            for (ConsumerRecord<String, String> m : records) {
                TopicPartition tp = new TopicPartition(m.topic(), m.partition());
                if (max != null && got.size() >= max) {
                    rewind.putIfAbsent(tp, m.offset());
                    continue;
                }
                if (rewind.containsKey(tp)) continue;
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("topic", m.topic());
                r.put("partition", m.partition());
                r.put("offset", m.offset());
                r.put("key", m.key());
                r.put("value", m.value());
                got.add(r);
                pos.put(tp, Math.max(pos.getOrDefault(tp, 0L), m.offset() + 1));
            }
            for (Map.Entry<TopicPartition, Long> e : rewind.entrySet()) {
                c.seek(e.getKey(), e.getValue());
                pos.put(e.getKey(), e.getValue());
            }
        }

        /** What is available now, up to `max` records: consume until every assigned partition's position reaches
         * the end offset at this consumer's isolation level (endOffsets() answers the LSO for read_committed, the
         * high watermark otherwise), or `settle_s` passes. A group member first polls until its group's rebalance
         * has given it partitions (a FencedInstanceIdException from poll() is the step's outcome). */
        Map<String, Object> poll(double timeoutS, Integer max, Double settleS) {
            long started = System.nanoTime();
            List<Map<String, Object>> got = new ArrayList<>();
            double bound = settleS != null ? settleS : Math.max(timeoutS - 1.0, 1.0);
            long deadline = started + (long) (bound * 1e9);
            if (!toSubscribe.isEmpty()) {
                c.subscribe(new ArrayList<>(toSubscribe), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                        rebalancing = true;
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                        rebalancing = false;
                    }
                });
                toSubscribe.clear();
            } else if (subscribed) {
                // a rebalance a heartbeat learnt of (REBALANCE_IN_PROGRESS) is joined inside poll(): revoke, rejoin
                take(got, max);
            }
            while ((rebalancing || !followAssignment()) && System.nanoTime() < deadline) {
                if (max != null && got.size() >= max) break;
                take(got, max);
            }
            // The lookups before the first fetch (position(), endOffsets()) may use the step's time but the last
            // second: a consumer's first requests in a fresh JVM on a loaded machine (classes loading, C1
            // compiling, metadata) can take longer than lookupBudget, and an application polls again rather than
            // give up. Only what is fetched counts; these lookups change nothing the consumer would read.
            long lookupsEnd = started + (long) (Math.max(timeoutS - 1.0, 1.0) * 1e9);
            resolveStart(Math.max(0.1, (lookupsEnd - System.nanoTime()) / 1e9));
            Map<TopicPartition, Long> ends = c.endOffsets(assigned, Duration.ofNanos(Math.max(100_000_000L, lookupsEnd - System.nanoTime())));
            while (System.nanoTime() < deadline) {
                if (max != null && got.size() >= max) break;
                if (subscribed && (rebalancing || !followAssignment())) break; // a rebalance began: the next poll follows it
                syncPositions(timeoutS);
                if (caughtUp(ends)) break;
                take(got, max);
            }
            if (max == null || got.size() < max) syncPositions(timeoutS);
            Map<String, Object> r = ok();
            r.put("records", got);
            List<List<Object>> endList = new ArrayList<>();
            for (TopicPartition tp : assigned) {
                if (ends.containsKey(tp)) endList.add(List.of(tp.topic(), tp.partition(), ends.get(tp)));
            }
            r.put("ends", endList);
            r.put("caught_up", caughtUp(ends));
            r.put("errors", List.of());
            if (subscribed) r.put("generation", c.groupMetadata().generationId());
            return r;
        }

        boolean caughtUp(Map<TopicPartition, Long> ends) {
            for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                if (pos.getOrDefault(e.getKey(), 0L) < e.getValue()) return false;
            }
            return true;
        }

        @Override
        void shutdown(double timeoutS) {
            if (!closed) {
                try {
                    c.close(Duration.ofMillis((long) (Math.min(timeoutS, 5.0) * 1000)));
                } catch (RuntimeException e) {
                    // leaving anyway
                }
                closed = true;
            }
        }
    }
}
