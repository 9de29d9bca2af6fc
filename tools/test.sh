#!/usr/bin/env bash
# `make test`: start real Kafka clusters (tools/kafka): 3 nodes each of Kafka 3.9, 4.x and (for its own tests) 3.5,
# side by side, run every test against them, stop them whatever happens. The browser tests run in their own pytest
# invocation: Playwright's sync API wants a thread without an event loop.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTEST=".venv/bin/pytest"
mkdir -p test-artifacts
rm -f test-artifacts/kafka35.bootstrap

bash tools/kafka/kafka.sh fetch
bash tools/kafka/kafka.sh fetch --version 4
bash tools/kafka/kafka.sh fetch --version 3.5
trap 'bash tools/kafka/kafka.sh stop >/dev/null 2>&1 || true; bash tools/kafka/kafka.sh --version 4 stop >/dev/null 2>&1 || true; bash tools/kafka/kafka.sh --version 3.5 stop >/dev/null 2>&1 || true' EXIT
export KAFKA_BOOTSTRAP_SERVERS KAFKA4_BOOTSTRAP_SERVERS
# Both start at once (their own run directories and ports): the 4.x cluster's start-up overlaps the 3.9 one's.
bash tools/kafka/kafka.sh start --version 4 --nodes 3 >test-artifacts/kafka4.bootstrap &
kafka4=$!
KAFKA_BOOTSTRAP_SERVERS=$(bash tools/kafka/kafka.sh start --nodes 3 | tail -n 1)
wait "$kafka4" || { echo "the Kafka 4.x cluster did not start (logs: tools/kafka/.run-4/node-*/server.log)" >&2; exit 1; }
KAFKA4_BOOTSTRAP_SERVERS=$(tail -n 1 test-artifacts/kafka4.bootstrap)
export PLAYGROUND_KAFKA_NODES=3

# The simulated cluster standing in for the real ones (issue 15): `manage.py simcluster`, 3 nodes of Kafka 3.9 and 3 of
# Kafka 4.x with the broker settings tools/kafka gives the real ones (tools/simcluster.sh), started now (their start-up
# overlaps the main run), stopped on exit.
source tools/simcluster.sh
simclusters=()
trap 'bash tools/kafka/kafka.sh stop >/dev/null 2>&1 || true; bash tools/kafka/kafka.sh --version 4 stop >/dev/null 2>&1 || true; bash tools/kafka/kafka.sh --version 3.5 stop >/dev/null 2>&1 || true; for pid in "${simclusters[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT
start_simcluster 3.9 test-artifacts/simcluster39.out
simclusters+=("$simcluster_pid")
start_simcluster 4 test-artifacts/simcluster4.out
simclusters+=("$simcluster_pid")

status=0
# The runs that mostly wait (on brokers' timers, workers, markers, clock.advance sleeps) go in the background, beside
# the runs that mostly compute, so that the waiting of the ones overlaps the work of the others: each background run
# writes its log to test-artifacts/, printed whole when it ends.
background=()
in_background() { # name, command...: runs the command with its output in test-artifacts/NAME.log
    local name=$1
    shift
    "$@" >"test-artifacts/$name.log" 2>&1 &
    background+=("$name:$!")
}
# The tests of the real 3.9 and 4.x clusters (marker kafka).
in_background kafka "$PYTEST" --durations=25 -m "kafka and not kafka35 and not browser" tests
# Kafka 3.5's (issue 20), on a 3-node cluster of its own (its own run directory and ports).
kafka35_pass() {
    local bootstrap
    if ! bootstrap=$(bash tools/kafka/kafka.sh start --version 3.5 --nodes 3 | tail -n 1); then
        echo "the Kafka 3.5 cluster did not start (logs: tools/kafka/.run-3.5/node-*/server.log)"
        return 1
    fi
    echo "$bootstrap" >test-artifacts/kafka35.bootstrap
    KAFKA35_BOOTSTRAP_SERVERS="$bootstrap" "$PYTEST" -m "kafka35" tests/kafka tests/simserver
}
in_background kafka35 kafka35_pass
# franz-go's kgo integration tests against simclusters of its own (3.9 and 4.x), judged against the lists of what
# passes against real Kafka (issue 32, tools/conformance/run.sh: make conformance).
in_background conformance bash tools/conformance/run.sh
# The real-backend tests that compare with the simulator (every library scenario in every profile, the late writes,
# a coordinator's broker stopped and started) a second time, with simcluster standing in for the real clusters: the
# observations must equal the in-process simulator's, as they equal a real cluster's.
if sc39=$(simcluster_line test-artifacts/simcluster39.out 2) && sc4=$(simcluster_line test-artifacts/simcluster4.out 2); then
    in_background simcluster-standin env KAFKA_STANDIN=simcluster KAFKA_BOOTSTRAP_SERVERS="$sc39" \
        KAFKA4_BOOTSTRAP_SERVERS="$sc4" \
        KAFKA_BROKER_CONTROL="$(simcluster_line test-artifacts/simcluster39.out 1 | sed 's/^KAFKA_BROKER_CONTROL=//')" \
        KAFKA4_BROKER_CONTROL="$(simcluster_line test-artifacts/simcluster4.out 1 | sed 's/^KAFKA_BROKER_CONTROL=//')" \
        "$PYTEST" -m "kafka and not kafka35" tests/kafka/test_kafka_fidelity.py tests/kafka/test_kafka_latewrite.py \
        "tests/kafka/test_kafka_backend.py::test_the_coordinator_fails_over_and_the_producer_carries_on"
else
    status=1
fi

# In the foreground: every other test; the web tests again, every database test on a throw-away PostgreSQL
# (tests/pg.py; DATABASE_URL for the servers they start; it fails, never skips, when PostgreSQL cannot be started);
# then the browser tests.
"$PYTEST" --durations=25 -m "not browser and not kafka and not kafka35" tests || status=$?
PLAYGROUND_TEST_DATABASE=postgres "$PYTEST" -m "not browser and not kafka" tests/web || status=$((status == 0 ? $? : status))
"$PYTEST" -m "browser and not kafka" tests/browser || status=$((status == 0 ? $? : status))

declare -A job_status=()
wait_for() { # background run's name: waits for it, keeps its status
    local job
    for job in "${background[@]}"; do
        [[ ${job%%:*} == "$1" ]] || continue
        job_status[$1]=0
        wait "${job##*:}" || job_status[$1]=$?
    done
}
# The browser tests that need a real cluster (the inspector's) run on Kafka 3.5's once its own run has ended: the
# 3.9 and 4.x clusters are still busy with runs that stop and start their brokers (a topic created while one is down
# fails with INVALID_REPLICATION_FACTOR), the 3.5 one is then idle, all its brokers up.
wait_for kafka35
if [[ -s test-artifacts/kafka35.bootstrap ]]; then
    KAFKA_BOOTSTRAP_SERVERS=$(cat test-artifacts/kafka35.bootstrap) "$PYTEST" -m "browser and kafka" tests/browser ||
        status=$((status == 0 ? $? : status))
else
    echo "the inspector's browser tests did not run: the Kafka 3.5 cluster did not start" >&2
    status=1
fi

for job in "${background[@]}"; do
    name=${job%%:*}
    [[ -v job_status[$name] ]] || wait_for "$name"
    echo "== $name (test-artifacts/$name.log) =="
    cat "test-artifacts/$name.log"
    status=$((status == 0 ? ${job_status[$name]} : status))
done
# Pytest's closing line for each run is above; this line sums them for a reader of CI's log.
exit "$status"
