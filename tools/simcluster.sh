# Sourced by tools/test.sh and tools/conformance/run.sh: `manage.py simcluster` standing in for a real cluster of
# tools/kafka, 3 nodes with the broker settings tools/kafka gives the real ones (the abort and expiry scans every
# second, no topic auto-creation, 3 partitions by default, no initial rebalance delay).

start_simcluster() { # kafka version, output file: starts it in the background, its pid in simcluster_pid
    .venv/bin/python manage.py simcluster --kafka "$1" --nodes 3 --port 0 \
        --config transaction.abort.timed.out.transaction.cleanup.interval.ms=1000 \
        --config transaction.remove.expired.transaction.cleanup.interval.ms=1000 \
        --config auto.create.topics.enable=false --config num.partitions=3 \
        --config group.initial.rebalance.delay.ms=0 >"$2" 2>"$2.err" &
    simcluster_pid=$!
}

simcluster_line() { # output file, line number: waits (bounded) until simcluster printed it
    for _ in $(seq 1 240); do
        [[ $(wc -l <"$1") -ge 2 ]] && { sed -n "$2p" "$1"; return 0; }
        sleep 0.5
    done
    echo "simcluster did not start ($1.err)" >&2
    return 1
}
