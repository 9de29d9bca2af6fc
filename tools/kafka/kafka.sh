#!/usr/bin/env bash
# Run a real Apache Kafka (KRaft, combined broker+controller) on 127.0.0.1
# straight from Maven jars -- no Docker, no Kafka tarball.
#
#   kafka.sh fetch                 download the jars (once): tools/kafka/.jars for
#                                  3.9, tools/kafka/.jars-<release> for 4.x
#   kafka.sh start [--nodes 1|3]   fresh cluster (data wiped), wait until ready,
#                                  print the bootstrap servers on stdout
#   kafka.sh stop                  stop every node (SIGTERM, then SIGKILL)
#   kafka.sh stop-node N [--kill]  stop one node of the running cluster
#                                  (--kill: SIGKILL, i.e. a crash)
#   kafka.sh start-node N          restart one node, wait until it is back
#   kafka.sh status                show nodes and ports (exit 0 iff all nodes up)
#   kafka.sh bootstrap             print the bootstrap servers of the cluster
#   kafka.sh features              the cluster's finalized feature levels
#                                  (metadata.version, transaction.version, ...)
#   kafka.sh clean                 stop and delete the run directory
#   kafka.sh topics ...            org.apache.kafka.tools.TopicCommand
#   kafka.sh transactions ...      org.apache.kafka.tools.TransactionsCommand
#   kafka.sh groups ...            consumer group command
#   kafka.sh quorum ...            org.apache.kafka.tools.MetadataQuorumCommand
#   kafka.sh run-class CLASS ...   any class on the Kafka classpath
#
# --version 3.5|3.9|4 (anywhere on the line, or KAFKA_VERSION): which Kafka. 3.9
# is the default; 3.5 is 3.5.2 (the incident's release, before KIP-890); 4 is the
# newest 4.x release pinned below (an exact release such as 4.3.1 works too).
# Each version has its own jars, its own default run directory (.run for 3.9,
# .run-3.5, .run-4) and its own default ports (19092 for 3.9, 19792 for 3.5,
# 19592 for 4.x), so `start --version 4` runs beside a 3.9 cluster. A 4.x
# cluster is formatted with transaction.version=2 (KIP-890's protocol).
# Commands after `start` act on the version the run directory's cluster runs.
#
# Progress goes to stderr; only machine-readable answers go to stdout.
# See README.md next to this file for ports and settings.
#
# A second cluster of the same version beside the first: give it a run
# directory and ports of its own, and use the same variables for every later
# command on it:
#   KAFKA_RUN_DIR=/tmp/k2 KAFKA_BASE_PORT=19392 kafka.sh start --nodes 1
#   KAFKA_RUN_DIR=/tmp/k2 kafka.sh stop    (stops that cluster only)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The releases a profile's Kafka version names. playground/engine/spec.py's
# KAFKA_RELEASES says the same (tests/test_profiles.py checks that they agree).
KAFKA_RELEASE_3_5="3.5.2"
KAFKA_RELEASE_3_9="3.9.1"
KAFKA_RELEASE_3_9_FALLBACK="3.9.0"
KAFKA_RELEASE_4="4.4.0"
# the compiled helpers, log4j config and class-data-sharing archives are shared
# by every run directory (they depend only on the jars and the JVM)
BIN_DIR="$HERE/.run/bin"

select_version() { # 3.5 | 3.9 | 4 | an exact release -> RELEASE, LINE, JARS_DIR, defaults
    case "$1" in
        3.5) LINE=3.5 RELEASE=$KAFKA_RELEASE_3_5 EXACT_RELEASE="" ;;
        3.9) LINE=3.9 RELEASE=$KAFKA_RELEASE_3_9 EXACT_RELEASE="" ;;
        4) LINE=4 RELEASE=$KAFKA_RELEASE_4 EXACT_RELEASE="" ;;
        3.5.[0-9]*) LINE=3.5 RELEASE=$1 EXACT_RELEASE=$1 ;;
        3.9.[0-9]*) LINE=3.9 RELEASE=$1 EXACT_RELEASE=$1 ;;
        4.[0-9]*.[0-9]*) LINE=4 RELEASE=$1 EXACT_RELEASE=$1 ;;
        *) die "unknown Kafka version '$1': 3.5, 3.9 or 4 (or an exact release such as $KAFKA_RELEASE_4)" ;;
    esac
    if [[ "$LINE" == 3.9 ]]; then
        # where 3.9's jars have always been, so an existing checkout keeps them
        JARS_DIR="$HERE/.jars" DEFAULT_RUN_DIR="$HERE/.run" DEFAULT_BASE_PORT=19092
    elif [[ "$LINE" == 3.5 ]]; then
        JARS_DIR="$HERE/.jars-$RELEASE" DEFAULT_RUN_DIR="$HERE/.run-3.5" DEFAULT_BASE_PORT=19792
    else
        JARS_DIR="$HERE/.jars-$RELEASE" DEFAULT_RUN_DIR="$HERE/.run-4" DEFAULT_BASE_PORT=19592
    fi
}

configure() { # version -> RUN_DIR, STATE_FILE, ports
    select_version "$1"
    # KAFKA_RUN_DIR: where this cluster's state, node configs, data, logs and pid
    # files live (default tools/kafka/.run, .run-4 for 4.x). Every command acts on
    # the cluster of that directory only, so two clusters with different run
    # directories (and different KAFKA_BASE_PORTs) run side by side.
    RUN_DIR="${KAFKA_RUN_DIR:-$DEFAULT_RUN_DIR}"
    case "$RUN_DIR" in /*) ;; *) RUN_DIR="$PWD/$RUN_DIR" ;; esac
    RUN_DIR="${RUN_DIR%/}"
    STATE_FILE="$RUN_DIR/cluster.env"
    KAFKA_BASE_PORT="${KAFKA_BASE_PORT:-$DEFAULT_BASE_PORT}"
    KAFKA_CONTROLLER_BASE_PORT="${KAFKA_CONTROLLER_BASE_PORT:-$((KAFKA_BASE_PORT + 100))}"
}

KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx512m -Xms256m}"
# C1 only + serial GC: about half the start-up CPU of the default JVM flags,
# which matters when 3 brokers start at once on a small machine.
KAFKA_JVM_OPTS="${KAFKA_JVM_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
KAFKA_CDS="${KAFKA_CDS:-1}"
KAFKA_READY_TIMEOUT="${KAFKA_READY_TIMEOUT:-120}"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
KAFKA_WARMUP="${KAFKA_WARMUP:-1}"
KAFKA_EXTRA_PROPS="${KAFKA_EXTRA_PROPS:-}"

log() { printf '[kafka.sh %(%T)T] %s\n' -1 "$*" >&2; }
die() { printf '[kafka.sh %(%T)T] ERROR: %s\n' -1 "$*" >&2; exit 1; }

# ---------------------------------------------------------------- jars ----

jars_ok() { # the jars of the selected release are complete (3.9's pin also takes its fallback)
    [[ -f "$JARS_DIR/.complete" ]] && compgen -G "$JARS_DIR/kafka_2.13-*.jar" >/dev/null || return 1
    local have; have="$(cut -d' ' -f2 "$JARS_DIR/.complete")"
    [[ "$have" == "$RELEASE" ]] \
        || [[ "$RELEASE" == "$KAFKA_RELEASE_3_9" && -z "$EXACT_RELEASE" && "$have" == "$KAFKA_RELEASE_3_9_FALLBACK" ]]
}

mvn_copy() { # version target_dir  (Maven's output kept in memory, shown on failure)
    local out rc=0
    out="$(mvn -B -q -Dstyle.color=never -f "$HERE/pom.xml" \
        -Dkafka.version="$1" -Djars.dir="$2" package 2>&1)" || rc=$?
    if ((rc != 0)); then
        printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^\s*$' | tail -n 15 >&2
    fi
    return "$rc"
}

cmd_fetch() {
    if jars_ok; then
        log "jars present ($(cat "$JARS_DIR/.complete")), nothing to fetch"
        return 0
    fi
    command -v mvn >/dev/null || die "mvn not found (needed once, to download the Kafka jars)"
    command -v java >/dev/null || die "java not found (JDK 17+ needed)"
    mkdir -p "$RUN_DIR"
    local tmp="$RUN_DIR/jars.tmp.$$" v
    local versions=("$RELEASE")
    if [[ "$RELEASE" == "$KAFKA_RELEASE_3_9" && -z "$EXACT_RELEASE" ]]; then versions+=("$KAFKA_RELEASE_3_9_FALLBACK"); fi
    for v in "${versions[@]}"; do
        rm -rf "$tmp"
        log "fetching Apache Kafka $v jars with Maven ..."
        if mvn_copy "$v" "$tmp"; then
            echo "kafka $v" >"$tmp/.complete"
            rm -rf "$JARS_DIR"
            mv "$tmp" "$JARS_DIR"
            log "jars ready in $JARS_DIR (kafka $v, $(ls "$JARS_DIR"/*.jar | wc -l) jars)"
            return 0
        fi
        log "maven could not resolve kafka $v (its output is above)"
    done
    rm -rf "$tmp"
    die "could not download the Kafka jars"
}

classpath() { echo "$JARS_DIR/*"; }

# log4j config for command-line tools: warnings only, on stderr
tools_log4j() {
    mkdir -p "$BIN_DIR"
    local f="$BIN_DIR/tools-log4j.properties" tmp="$BIN_DIR/.tools-log4j.$BASHPID.$RANDOM"
    cat >"$tmp" <<'EOF'
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.clients.NetworkClient=ERROR
log4j.logger.org.apache.kafka.clients.admin.internals=ERROR
EOF
    mv -f "$tmp" "$f"
    echo "$f"
}

run_class() { # CLASS args...
    jars_ok || cmd_fetch
    local l4j; l4j="$(tools_log4j)"
    # shellcheck disable=SC2046
    java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 $(cds_opts use) \
        -Dlog4j.configuration="file:$l4j" -cp "$(classpath)" "$@"
}

# ------------------------------------------------------ java helper ----
# A small Java program, compiled once into .run/bin, used by this script:
#   format CLUSTER_ID [--feature NAME=LEVEL]... props...
#                                   format the storage of several nodes in one
#                                   JVM (kafka.tools.StorageTool.execute)
#   features BOOTSTRAP              the finalized feature levels, "NAME LEVEL"
#   ready TIMEOUT CLUSTER_ID id=host:port,... WARMUP ISR PID,...
#                                   wait until every expected broker answers a
#                                   metadata request itself, belongs to our
#                                   cluster (not some other Kafka on that port),
#                                   and sees all the expected brokers registered
#                                   and unfenced; fail fast if a PID dies;
#                                   WARMUP=1: also wait until the transaction and
#                                   group coordinators answer (this makes Kafka
#                                   create __transaction_state/__consumer_offsets
#                                   now rather than in the first test);
#                                   ISR=1: also wait until every partition
#                                   replica on an expected node is in the ISR.

HELPER_SRC='import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;

public class KafkaShHelper {
    static String last = "";
    static long deadline;
    static List<Long> pids = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "format": format(args); break;
            case "ready": ready(args); break;
            case "features": features(args); break;
            default: System.err.println("unknown command " + args[0]); System.exit(2);
        }
        System.exit(0);
    }

    // format CLUSTER_ID [--feature NAME=LEVEL]... PROPS...
    static void format(String[] args) {
        List<String> features = new ArrayList<>(), props = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            if (args[i].equals("--feature")) { features.add(args[i]); features.add(args[++i]); }
            else props.add(args[i]);
        }
        for (String p : props) {
            List<String> a = new ArrayList<>(List.of("format", "-t", args[1], "-c", p));
            a.addAll(features);
            int rc;
            try {
                rc = storageTool(a.toArray(new String[0]));
            } catch (Throwable t) {
                System.err.println("format " + p + ": " + t);
                rc = 1;
            }
            if (rc != 0) System.exit(1);
        }
    }

    static final class ExitCalled extends RuntimeException {
        final int code;
        ExitCalled(int code) { super("exit " + code); this.code = code; }
    }

    // StorageTool.execute (3.6+), or its main (3.5, which ends in Exit.exit: caught through the exit procedure)
    static int storageTool(String[] a) throws Exception {
        Class<?> tool = Class.forName("kafka.tools.StorageTool");
        try {
            java.lang.reflect.Method execute = tool.getMethod("execute", String[].class, java.io.PrintStream.class);
            return ((Number) execute.invoke(null, a, System.out)).intValue();
        } catch (NoSuchMethodException e) {
            // by reflection: 4.x has no org.apache.kafka.common.utils.Exit to compile against
            Class<?> exit = Class.forName("org.apache.kafka.common.utils.Exit");
            Class<?> procedure = Class.forName("org.apache.kafka.common.utils.Exit$Procedure");
            Object thrower = java.lang.reflect.Proxy.newProxyInstance(procedure.getClassLoader(),
                new Class<?>[] {procedure}, (self, method, args) -> {
                    if (method.getName().equals("execute")) throw new ExitCalled((Integer) args[0]);
                    return null;
                });
            exit.getMethod("setExitProcedure", procedure).invoke(null, thrower);
            try {
                tool.getMethod("main", String[].class).invoke(null, (Object) a);
                return 0;
            } catch (java.lang.reflect.InvocationTargetException t) {
                if (t.getCause() instanceof ExitCalled) return ((ExitCalled) t.getCause()).code;
                throw t;
            } finally {
                exit.getMethod("resetExitProcedure").invoke(null);
            }
        }
    }

    // features BOOTSTRAP: one line per finalized feature, "NAME LEVEL"
    static void features(String[] args) throws Exception {
        try (Admin a = admin(args[1])) {
            FeatureMetadata m = a.describeFeatures().featureMetadata().get(10, TimeUnit.SECONDS);
            for (Map.Entry<String, FinalizedVersionRange> e : new TreeMap<>(m.finalizedFeatures()).entrySet())
                System.out.println(e.getKey() + " " + e.getValue().maxVersionLevel());
        }
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", "3000");
        p.put("default.api.timeout.ms", "5000");
        p.put("socket.connection.setup.timeout.ms", "1000");
        p.put("socket.connection.setup.timeout.max.ms", "2000");
        p.put("reconnect.backoff.max.ms", "500");
        p.put("retry.backoff.max.ms", "500");
        return Admin.create(p);
    }

    static void checkDeadline(String what) {
        for (long pid : pids) {
            if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                System.err.println("kafka process " + pid + " exited");
                System.exit(1);
            }
        }
        if (System.currentTimeMillis() > deadline) {
            System.err.println(what + ": " + last);
            System.exit(1);
        }
    }

    static void ready(String[] args) throws Exception {
        deadline = System.currentTimeMillis() + Long.parseLong(args[1]) * 1000L;
        String clusterId = args[2];
        Map<Integer, String> expected = new TreeMap<>();
        for (String s : args[3].split(",")) {
            String[] kv = s.split("=", 2);
            expected.put(Integer.parseInt(kv[0]), kv[1]);
        }
        boolean warmup = args[4].equals("1"), isr = args[5].equals("1");
        if (args.length > 6) for (String p : args[6].split(",")) pids.add(Long.parseLong(p));

        // 1) every expected broker answers and sees all expected brokers
        Set<Integer> readyNodes = new TreeSet<>();
        while (readyNodes.size() < expected.size()) {
            checkDeadline("brokers not ready");
            for (Map.Entry<Integer, String> e : expected.entrySet()) {
                if (readyNodes.contains(e.getKey())) continue;
                try (Admin a = admin(e.getValue())) {
                    DescribeClusterResult r = a.describeCluster();
                    String cid = r.clusterId().get(5, TimeUnit.SECONDS);
                    if (!clusterId.equals(cid)) {
                        System.err.println(e.getValue() + " is a different Kafka cluster ("
                            + cid + ", expected " + clusterId + "): port clash?");
                        System.exit(1);
                    }
                    Set<Integer> seen = new TreeSet<>();
                    for (Node n : r.nodes().get(5, TimeUnit.SECONDS)) seen.add(n.id());
                    if (seen.containsAll(expected.keySet())) readyNodes.add(e.getKey());
                    else last = "node " + e.getKey() + " sees brokers " + seen;
                } catch (Exception ex) {
                    last = "node " + e.getKey() + ": " + ex;
                }
            }
            if (readyNodes.size() < expected.size()) Thread.sleep(250);
        }

        try (Admin a = admin(String.join(",", expected.values()))) {
            // 2) transaction and group coordinators answer; both lookups go out
            //    together so both internal topics are created at the same time
            boolean txnOk = !warmup, groupOk = !warmup;
            while (!(txnOk && groupOk)) {
                checkDeadline("coordinators not ready");
                KafkaFuture<?> txn = txnOk ? null
                    : a.describeTransactions(List.of("kafka-sh-warmup")).all();
                KafkaFuture<?> group = groupOk ? null
                    : a.describeConsumerGroups(List.of("kafka-sh-warmup")).all();
                if (txn != null) {
                    try {
                        txn.get(6, TimeUnit.SECONDS);
                        txnOk = true;
                    } catch (ExecutionException ex) {
                        if (ex.getCause() instanceof TransactionalIdNotFoundException) txnOk = true;
                        else last = "transaction coordinator: " + ex.getCause();
                    } catch (java.util.concurrent.TimeoutException ex) {
                        last = "transaction coordinator: timeout";
                    }
                }
                if (group != null) {
                    try {
                        group.get(6, TimeUnit.SECONDS);
                        groupOk = true;
                    } catch (ExecutionException ex) {
                        if (ex.getCause() instanceof GroupIdNotFoundException) groupOk = true;
                        else last = "group coordinator: " + ex.getCause();
                    } catch (java.util.concurrent.TimeoutException ex) {
                        last = "group coordinator: timeout";
                    }
                }
                if (!(txnOk && groupOk)) Thread.sleep(250);
            }

            // 3) replicas on expected nodes are back in the ISR
            while (isr) {
                checkDeadline("replicas not in sync");
                try {
                    Set<String> names = a.listTopics(new ListTopicsOptions().listInternal(true))
                        .names().get(5, TimeUnit.SECONDS);
                    int behind = 0;
                    for (TopicDescription d : a.describeTopics(names).allTopicNames()
                            .get(10, TimeUnit.SECONDS).values()) {
                        for (TopicPartitionInfo p : d.partitions()) {
                            for (Node r : p.replicas()) {
                                if (expected.containsKey(r.id()) && !p.isr().contains(r)) behind++;
                            }
                        }
                    }
                    if (behind == 0) break;
                    last = behind + " replica(s) not in the ISR yet";
                } catch (Exception ex) {
                    last = "describe topics: " + ex;
                }
                Thread.sleep(250);
            }
        }
    }
}
'

helper_dir() { echo "$BIN_DIR/helper-$(cut -d' ' -f2 "$JARS_DIR/.complete")"; }

ensure_helper() { # compiled per release: it calls Kafka's own classes
    jars_ok || cmd_fetch
    local dir; dir="$(helper_dir)"
    mkdir -p "$dir"
    local src="$dir/KafkaShHelper.java" tmp="$dir/.KafkaShHelper.$BASHPID.$RANDOM"
    printf '%s' "$HELPER_SRC" >"$tmp"
    if [[ -f "$dir/KafkaShHelper.class" ]] && cmp -s "$tmp" "$src"; then
        rm -f "$tmp"
    else
        mv -f "$tmp" "$src"
        javac -nowarn -cp "$(classpath)" -d "$dir" "$src" >&2 \
            || { rm -f "$dir/KafkaShHelper.class" "$src"; die "could not compile $src"; }
    fi
}

helper() { # command args...
    ensure_helper
    local l4j; l4j="$(tools_log4j)"
    # shellcheck disable=SC2046
    java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 $(cds_opts use) \
        -Dlog4j.configuration="file:$l4j" -cp "$(classpath):$(helper_dir)" KafkaShHelper "$@"
}

# ------------------------------------------------------------- nodes ----

broker_port() { echo $((KAFKA_BASE_PORT + $1 - 1)); }
controller_port() { echo $((KAFKA_CONTROLLER_BASE_PORT + $1 - 1)); }
node_dir() { echo "$RUN_DIR/node-$1"; }
pid_file() { echo "$RUN_DIR/node-$1/kafka.pid"; }

load_state() {
    [[ -f "$STATE_FILE" ]] || die "no cluster state in $RUN_DIR (run: kafka.sh start)"
    # shellcheck disable=SC1090
    source "$STATE_FILE"
    adopt_state_version
}

# The cluster of a run directory runs the release it was started with (a state
# file from before versions existed: 3.9); its jars serve every later command.
adopt_state_version() {
    [[ -f "$STATE_FILE" ]] || return 0
    local release
    release="$(sed -n 's/^KAFKA_RELEASE=//p' "$STATE_FILE")"
    select_version "${release:-3.9}"
}

bootstrap_for() { # nodes
    local i out=""
    for ((i = 1; i <= $1; i++)); do out+="${out:+,}127.0.0.1:$(broker_port "$i")"; done
    echo "$out"
}

expected_for() { # node ids...
    local i out=""
    for i in "$@"; do out+="${out:+,}$i=127.0.0.1:$(broker_port "$i")"; done
    echo "$out"
}

# pid of node N if its process is alive and really is that node's broker
node_pid() {
    local f pid
    f="$(pid_file "$1")"
    [[ -f "$f" ]] || return 1
    pid="$(cat "$f")"
    [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "kafka.Kafka $(node_dir "$1")/server.properties" || return 1
    echo "$pid"
}

node_pids() { # ids... -> comma-separated pids of the running ones
    local i p out=""
    for i in "$@"; do
        if p="$(node_pid "$i")"; then out+="${out:+,}$p"; fi
    done
    echo "$out"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_node_config() { # id nodes
    local id=$1 nodes=$2 dir voters="" i rf minisr
    dir="$(node_dir "$id")"
    mkdir -p "$dir/data"
    for ((i = 1; i <= nodes; i++)); do voters+="${voters:+,}$i@127.0.0.1:$(controller_port "$i")"; done
    if ((nodes >= 3)); then rf=3; minisr=2; else rf=$nodes; minisr=1; fi
    cat >"$dir/server.properties" <<EOF
# generated by tools/kafka/kafka.sh -- rewritten on every start
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$(broker_port "$id"),CONTROLLER://127.0.0.1:$(controller_port "$id")
advertised.listeners=PLAINTEXT://127.0.0.1:$(broker_port "$id")
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data

# topics
auto.create.topics.enable=false
num.partitions=3
default.replication.factor=$rf
min.insync.replicas=$minisr

# internal topics
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$minisr
transaction.state.log.num.partitions=50

# leaders stay where an election put them: the simulator does not model preferred-leader balancing, and the
# controller's check every 300 s would move partition and coordinator leaders under running scenarios minutes after
# a test stopped and restarted a broker (seen: NOT_COORDINATOR and markers written twice mid-scenario)
auto.leader.rebalance.enable=false

# fast feedback for tests
group.initial.rebalance.delay.ms=0
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
transaction.remove.expired.transaction.cleanup.interval.ms=1000

# small footprint
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.cleaner.dedupe.buffer.size=16777216
EOF
    if [[ -n "$KAFKA_EXTRA_PROPS" ]]; then
        printf '\n# KAFKA_EXTRA_PROPS\n%s\n' "$KAFKA_EXTRA_PROPS" >>"$dir/server.properties"
    fi
    cat >"$dir/log4j.properties" <<EOF
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=$dir/server.log
log4j.appender.file.MaxFileSize=50MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.clients.NetworkClient=WARN
EOF
}

# Class-data sharing: the first broker ever started writes an archive of the
# classes it loaded when it exits (-XX:ArchiveClassesAtExit); later starts map
# it (-XX:SharedArchiveFile), which cuts class loading at start-up. The archive
# is only adopted after `java -Xshare:on` has accepted it, and is keyed by the
# Kafka and Java versions; a mismatching archive is silently ignored by the JVM.
cds_archive() {
    # keyed by the Kafka version and the java binary (path + mtime, so a JDK
    # update gets a new archive); computed without starting a JVM
    local jbin kv key
    jbin="$(readlink -f "$(command -v java)")"
    kv="$(cut -d' ' -f2 "$JARS_DIR/.complete")"
    key="$(printf '%s %s' "$jbin" "$(stat -c %Y "$jbin")" | cksum | cut -d' ' -f1)"
    echo "$BIN_DIR/kafka-$kv-jvm-$key.jsa"
}

cds_opts() { # use|dump -> JVM options for this launch (may be empty)
    # "dump": write the archive at exit if there is none yet (node 1 only).
    # The archive was made with the classpath "$JARS_DIR/*"; other JVMs can use
    # it as long as their classpath starts with that.
    [[ "$KAFKA_CDS" == 1 ]] || return 0
    local jsa; jsa="$(cds_archive)"
    if [[ ! -f "$jsa" && -f "$jsa.new" ]]; then
        if java -Xshare:on -XX:SharedArchiveFile="$jsa.new" -Xlog:disable -Xlog:all=off \
            -XX:ErrorFile="$BIN_DIR/cds-check-hs_err.log" -XX:-CreateCoredumpOnCrash \
            -cp "$(classpath)" -version >/dev/null 2>&1; then
            mv -f "$jsa.new" "$jsa"
        else
            rm -f "$jsa.new"
        fi
    fi
    if [[ -f "$jsa" ]]; then
        echo "-XX:SharedArchiveFile=$jsa -Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"
    elif [[ "$1" == dump && "$RUN_DIR" == "$DEFAULT_RUN_DIR" ]]; then
        # only the default run directory's cluster writes the shared archive, so that two clusters
        # never write the same file
        mkdir -p "$BIN_DIR"
        rm -f "$jsa.new"
        echo "-XX:ArchiveClassesAtExit=$jsa.new -Xlog:cds=off -Xlog:cds+dynamic=off"
    fi
}

launch_node() { # id
    local id=$1 dir cds
    dir="$(node_dir "$id")"
    if ((id == 1)); then cds="$(cds_opts dump)"; else cds="$(cds_opts use)"; fi
    # shellcheck disable=SC2086
    nohup java $KAFKA_HEAP_OPTS $KAFKA_JVM_OPTS $cds -XX:+ExitOnOutOfMemoryError \
        -XX:ErrorFile="$dir/hs_err_pid%p.log" -Djava.awt.headless=true \
        -Dlog4j.configuration="file:$dir/log4j.properties" \
        -Dkafka.logs.dir="$dir" \
        -cp "$(classpath)" kafka.Kafka "$dir/server.properties" \
        >"$dir/stdout.log" 2>&1 </dev/null &
    echo $! >"$(pid_file "$id")"
}

stop_pids() { # "label" pid...
    local label=$1; shift
    local pids=("$@") t alive p limit=$KAFKA_STOP_TIMEOUT
    ((${#pids[@]})) || return 0
    # a JVM writing its class-data-sharing archive at exit needs longer
    for p in "${pids[@]}"; do
        if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q ArchiveClassesAtExit; then
            limit=$((limit + 60))
        fi
    done
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for ((t = 0; t < limit * 10; t++)); do
        alive=()
        for p in "${pids[@]}"; do
            if kill -0 "$p" 2>/dev/null; then alive+=("$p"); fi
        done
        ((${#alive[@]})) || return 0
        sleep 0.1
    done
    log "$label did not stop within ${limit}s, sending SIGKILL"
    kill -KILL "${alive[@]}" 2>/dev/null || true
    for p in "${alive[@]}"; do
        while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
    done
}

all_node_ids() {
    local d
    for d in "$RUN_DIR"/node-*; do
        if [[ -d "$d" ]]; then echo "${d##*/node-}"; fi
    done | sort -n
}

cmd_stop() {
    [[ -d "$RUN_DIR" ]] || { log "nothing running"; return 0; }
    local id pid pids=()
    for id in $(all_node_ids); do
        if pid="$(node_pid "$id")"; then pids+=("$pid"); fi
        rm -f "$(pid_file "$id")"
    done
    if ((${#pids[@]} == 0)); then
        log "nothing running"
        return 0
    fi
    log "stopping ${#pids[@]} node(s) ..."
    stop_pids "cluster" "${pids[@]}"
    log "stopped"
}

cmd_start() {
    local nodes="${KAFKA_NODES:-1}"
    while (($#)); do
        case "$1" in
            --nodes) nodes="${2:-}"; shift 2 ;;
            --nodes=*) nodes="${1#--nodes=}"; shift ;;
            *) die "unknown option for start: $1" ;;
        esac
    done
    [[ "$nodes" =~ ^[1-9]$ ]] || die "--nodes must be 1..9 (1 or 3 recommended), got '$nodes'"
    command -v java >/dev/null || die "java not found (JDK 17+ needed)"
    jars_ok || cmd_fetch

    local t0=$SECONDS id
    cmd_stop
    rm -rf "$RUN_DIR"/node-* "$STATE_FILE"
    for ((id = 1; id <= nodes; id++)); do
        for p in "$(broker_port "$id")" "$(controller_port "$id")"; do
            if port_open "$p"; then
                die "port 127.0.0.1:$p is already in use (set KAFKA_BASE_PORT / KAFKA_CONTROLLER_BASE_PORT)"
            fi
        done
    done

    # a random base64url UUID, like Kafka's Uuid.randomUuid(): not starting
    # with "-" (the storage tool would read it as an option)
    local cluster_id="-"
    while [[ "$cluster_id" == -* ]]; do
        cluster_id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    done
    local bootstrap; bootstrap="$(bootstrap_for "$nodes")"
    mkdir -p "$RUN_DIR"
    cat >"$STATE_FILE" <<EOF
NODES=$nodes
CLUSTER_ID=$cluster_id
KAFKA_BASE_PORT=$KAFKA_BASE_PORT
KAFKA_CONTROLLER_BASE_PORT=$KAFKA_CONTROLLER_BASE_PORT
BOOTSTRAP=$bootstrap
KAFKA_RELEASE=$(cut -d' ' -f2 "$JARS_DIR/.complete")
EOF
    echo "$bootstrap" >"$RUN_DIR/bootstrap"

    log "formatting storage for $nodes node(s), cluster id $cluster_id ..."
    local props=()
    for ((id = 1; id <= nodes; id++)); do
        write_node_config "$id" "$nodes"
        props+=("$(node_dir "$id")/server.properties")
    done
    # Kafka 4.x: transaction.version 2, KIP-890's transaction protocol (a new
    # 4.x cluster gets it anyway; named here so that it never depends on a default)
    local features=()
    if [[ "$LINE" == 4 ]]; then features=(--feature transaction.version=2); fi
    if ! helper format "$cluster_id" "${features[@]}" "${props[@]}" >"$RUN_DIR/format.log" 2>&1; then
        cat "$RUN_DIR/format.log" >&2
        die "storage format failed"
    fi

    log "starting $nodes node(s) ..."
    for ((id = 1; id <= nodes; id++)); do launch_node "$id"; done

    local ids=(); for ((id = 1; id <= nodes; id++)); do ids+=("$id"); done
    if ! helper ready "$KAFKA_READY_TIMEOUT" "$cluster_id" "$(expected_for "${ids[@]}")" \
        "$KAFKA_WARMUP" 0 "$(node_pids "${ids[@]}")"; then
        for ((id = 1; id <= nodes; id++)); do
            node_pid "$id" >/dev/null || { log "node $id died; last lines of its logs:"; tail -n 30 "$(node_dir "$id")/stdout.log" "$(node_dir "$id")/server.log" >&2 2>/dev/null || true; }
        done
        cmd_stop
        die "cluster did not become ready (timeout ${KAFKA_READY_TIMEOUT}s; logs: $RUN_DIR/node-*/server.log)"
    fi
    log "cluster ready: $nodes node(s), kafka $(cut -d' ' -f2 "$JARS_DIR/.complete"), $((SECONDS - t0))s"
    echo "$bootstrap"
}

check_node_arg() { # id
    [[ "${1:-}" =~ ^[0-9]+$ ]] || die "usage: kafka.sh stop-node|start-node N"
    load_state
    ((1 <= $1 && $1 <= NODES)) || die "node $1 is not part of this $NODES-node cluster"
}

cmd_stop_node() { # N [--kill]
    check_node_arg "${1:-}"
    local pid kill=0
    [[ "${2:-}" == "--kill" ]] && kill=1
    if pid="$(node_pid "$1")"; then
        if ((kill)); then
            log "killing node $1 (pid $pid, SIGKILL: a crash, no controlled shutdown) ..."
            kill -KILL "$pid" 2>/dev/null || true
            while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
        else
            log "stopping node $1 (pid $pid) ..."
            stop_pids "node $1" "$pid"
        fi
        log "node $1 stopped"
    else
        log "node $1 is not running"
    fi
    rm -f "$(pid_file "$1")"
}

cmd_start_node() {
    check_node_arg "${1:-}"
    local id=$1 t0=$SECONDS
    if node_pid "$id" >/dev/null; then
        log "node $id is already running"
    else
        local p
        for p in "$(broker_port "$id")" "$(controller_port "$id")"; do
            if port_open "$p"; then die "port 127.0.0.1:$p is in use by another process"; fi
        done
        log "starting node $id ..."
        launch_node "$id"
    fi
    # wait until this node answers, sees every node that is currently up, and
    # its replicas have caught up (are back in the ISR)
    local ids=() i
    for ((i = 1; i <= NODES; i++)); do
        if node_pid "$i" >/dev/null; then ids+=("$i"); fi
    done
    helper ready "$KAFKA_READY_TIMEOUT" "$CLUSTER_ID" "$(expected_for "${ids[@]}")" 0 1 \
        "$(node_pids "$id")" \
        || die "node $id not ready after ${KAFKA_READY_TIMEOUT}s (log: $(node_dir "$id")/server.log)"
    log "node $id ready ($((SECONDS - t0))s)"
}

cmd_status() {
    if [[ ! -f "$STATE_FILE" ]]; then
        echo "no cluster (run: kafka.sh start)"
        return 1
    fi
    load_state
    local id pid up=0 rss
    echo "cluster: $NODES node(s), kafka $RELEASE, id $CLUSTER_ID, bootstrap $BOOTSTRAP"
    for ((id = 1; id <= NODES; id++)); do
        if pid="$(node_pid "$id")"; then
            up=$((up + 1))
            rss="$(awk '/VmRSS/ {printf "%d MB", $2/1024}' "/proc/$pid/status" 2>/dev/null || true)"
            if port_open "$(broker_port "$id")"; then
                echo "node $id: running  pid $pid  rss $rss  broker 127.0.0.1:$(broker_port "$id") (listening)  controller 127.0.0.1:$(controller_port "$id")"
            else
                echo "node $id: starting pid $pid  broker 127.0.0.1:$(broker_port "$id") (not listening yet)"
            fi
        else
            echo "node $id: stopped"
        fi
    done
    ((up == NODES)) # exit status 0 only if every node is up
}

cmd_bootstrap() {
    load_state
    echo "$BOOTSTRAP"
}

cmd_clean() {
    cmd_stop
    if [[ "$RUN_DIR" == "$DEFAULT_RUN_DIR" ]]; then
        rm -rf "$RUN_DIR"
    elif [[ -d "$RUN_DIR" ]]; then
        # a directory chosen by the caller: delete only what this script made there
        rm -rf "$RUN_DIR"/node-* "$RUN_DIR"/jars.tmp.* "$STATE_FILE" "$RUN_DIR/bootstrap" "$RUN_DIR/format.log"
        rmdir "$RUN_DIR" 2>/dev/null || true
    fi
    log "removed $RUN_DIR"
}

tool() { # CLASS args...  (adds --bootstrap-server unless given)
    local cls=$1; shift
    if [[ " $* " != *" --bootstrap-server "* && " $* " != *" --bootstrap-controller "* ]]; then
        load_state
        set -- --bootstrap-server "$BOOTSTRAP" "$@"
    fi
    run_class "$cls" "$@"
}

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//' >&2; }

cmd_features() {
    load_state
    helper features "$BOOTSTRAP"
}

main() {
    local version="${KAFKA_VERSION:-3.9}" cmd="" args=()
    # --version before the command, or among the options of this script's own
    # commands (a Kafka tool's arguments are its own: `topics --version` is Kafka's)
    while (($#)); do
        case "$1" in
            --version) version="${2:-}"; shift 2 || die "--version needs 3.5, 3.9 or 4" ;;
            --version=*) version="${1#--version=}"; shift ;;
            *)
                if [[ -z "$cmd" ]]; then
                    cmd="$1"; shift
                    case "$cmd" in topics | transactions | groups | quorum | run-class) args=("$@"); break ;; esac
                else
                    args+=("$1"); shift
                fi ;;
        esac
    done
    configure "$version"
    case "$cmd" in fetch | start | run-class | -h | --help | help | "") ;; *) adopt_state_version ;; esac
    set -- "${args[@]+"${args[@]}"}"
    case "$cmd" in
        fetch) cmd_fetch ;;
        start) cmd_start "$@" ;;
        stop) cmd_stop ;;
        stop-node) cmd_stop_node "$@" ;;
        start-node) cmd_start_node "$@" ;;
        status) cmd_status ;;
        bootstrap) cmd_bootstrap ;;
        features) cmd_features ;;
        clean) cmd_clean ;;
        topics) tool org.apache.kafka.tools.TopicCommand "$@" ;;
        transactions) tool org.apache.kafka.tools.TransactionsCommand "$@" ;;
        groups) tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "$@" ;;
        quorum) tool org.apache.kafka.tools.MetadataQuorumCommand "$@" ;;
        run-class) run_class "$@" ;;
        -h | --help | help | "") usage ;;
        *) usage; die "unknown command: $cmd" ;;
    esac
}

main "$@"
