#!/usr/bin/env bash
# `make conformance` (issue 32): franz-go's kgo integration tests (v1.22.3, pinned in tools/conformance/go.mod) run
# against `manage.py simcluster --kafka 3.9` and `--kafka 4` (3 nodes, the broker settings tools/kafka gives the real
# clusters, tools/simcluster.sh), each judged against the tests that pass against real Kafka of that release
# (expected-3.9.txt, expected-4.txt): the simulator passes exactly those (tools/conformance/gotest.py check).
#
#   bash tools/conformance/run.sh                        both simulated clusters, checked (exit 1 if the rule breaks)
#   bash tools/conformance/run.sh record 3.9 BOOTSTRAP   a real Kafka 3.9.1 cluster: rewrites expected-3.9.txt
#   bash tools/conformance/run.sh record 4 BOOTSTRAP     a real Kafka 4.4.0 cluster: rewrites expected-4.txt
#
# Runs write test-artifacts/conformance-<target>.jsonl (go test -json) and .txt (one outcome per test).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tools/conformance
out=test-artifacts
mkdir -p "$out"
PY=${PY:-.venv/bin/python}

# franz-go's record count for its ETL tests (TestGroupETL, TestTxnEtl, ...): 500000 by default, which takes minutes
# per target; the same lower count for the real and the simulated runs, so the lists compare like with like.
export KGO_TEST_RECORDS=${KGO_TEST_RECORDS:-50000}
export KGO_TEST_RF=3
export KGO_LOG_LEVEL=${KGO_LOG_LEVEL:-info}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-15m}

if ! command -v go >/dev/null 2>&1; then
    echo "make conformance needs Go 1.26 or newer on PATH (franz-go v1.22.3's go.mod says go 1.26.0): none found" >&2
    exit 1
fi
# The module's own toolchain line is the floor: never fetch another toolchain behind the caller's back.
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
# Built once (go's build cache keeps it for the next runs) from the module cache's franz-go, fetched through the Go
# module proxy the first time and checked against go.sum.
(cd "$here" && go test -count=1 -run '^$' github.com/twmb/franz-go/pkg/kgo >/dev/null) || {
    echo "could not build franz-go's kgo tests ($(go version))" >&2
    exit 1
}

suite() { # target name, seeds: runs the whole kgo package against the seeds
    local start=$SECONDS
    # go test, not the binary alone: it runs the tests in the package's directory, where some read its sources.
    (cd "$here" && KGO_SEEDS=$2 go test -json -count=1 -timeout "$SUITE_TIMEOUT" github.com/twmb/franz-go/pkg/kgo) \
        >"$out/conformance-$1.jsonl" 2>&1 || true
    "$PY" "$here/gotest.py" results "$out/conformance-$1.jsonl" >"$out/conformance-$1.txt"
    echo "$1: $((SECONDS - start)) s, $(tail -n 1 "$out/conformance-$1.txt" | sed 's/^# //')"
}

if [[ ${1:-} == record ]]; then
    version=$2 seeds=$3
    suite "kafka-$version" "$seeds"
    exec "$PY" "$here/gotest.py" record "$out/conformance-kafka-$version.jsonl" "$here/expected-$version.txt" \
        "KGO_TEST_RECORDS=$KGO_TEST_RECORDS bash tools/conformance/run.sh record $version <3-node Kafka $version bootstrap>"
fi

source tools/simcluster.sh
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT
status=0
for version in 3.9 4; do
    start_simcluster "$version" "$out/conformance-simcluster-$version.out"
    pids+=("$simcluster_pid")
    seeds=$(simcluster_line "$out/conformance-simcluster-$version.out" 2) || { status=1; continue; }
    suite "simcluster-$version" "$seeds"
    accepted=()
    [[ -f $here/accepted-$version.txt ]] && accepted=("$here/accepted-$version.txt")
    run=$out/conformance-simcluster-$version.jsonl
    again=()
    # a test that failed under make test's load runs a second time, alone (gotest.py: again)
    pattern=$("$PY" "$here/gotest.py" again "$here/expected-$version.txt" "$run" "${accepted[@]}")
    if [[ -n $pattern ]]; then
        (cd "$here" && KGO_SEEDS=$seeds go test -json -count=1 -timeout "$SUITE_TIMEOUT" -run "$pattern" \
            github.com/twmb/franz-go/pkg/kgo) >"$out/conformance-simcluster-$version-again.jsonl" 2>&1 || true
        again=(--again "$out/conformance-simcluster-$version-again.jsonl")
    fi
    kill "$simcluster_pid" 2>/dev/null || true
    "$PY" "$here/gotest.py" check "$here/expected-$version.txt" "$run" "${accepted[@]}" "${again[@]}" || status=1
done
exit "$status"
