#!/usr/bin/env bash
# `make test`: start real Kafka clusters (tools/kafka): 3 nodes of Kafka 3.9 and 3 nodes of Kafka 4.x side by side, run
# every test against them, stop them whatever happens. The browser tests run in their own pytest invocation:
# Playwright's sync API wants a thread without an event loop.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTEST=".venv/bin/pytest"
mkdir -p test-artifacts

bash tools/kafka/kafka.sh fetch
bash tools/kafka/kafka.sh fetch --version 4
trap 'bash tools/kafka/kafka.sh stop >/dev/null 2>&1 || true; bash tools/kafka/kafka.sh --version 4 stop >/dev/null 2>&1 || true' EXIT
export KAFKA_BOOTSTRAP_SERVERS KAFKA4_BOOTSTRAP_SERVERS
# Both start at once (their own run directories and ports): the 4.x cluster's start-up overlaps the 3.9 one's.
bash tools/kafka/kafka.sh start --version 4 --nodes 3 >test-artifacts/kafka4.bootstrap &
kafka4=$!
KAFKA_BOOTSTRAP_SERVERS=$(bash tools/kafka/kafka.sh start --nodes 3 | tail -n 1)
wait "$kafka4" || { echo "the Kafka 4.x cluster did not start (logs: tools/kafka/.run-4/node-*/server.log)" >&2; exit 1; }
KAFKA4_BOOTSTRAP_SERVERS=$(tail -n 1 test-artifacts/kafka4.bootstrap)
export PLAYGROUND_KAFKA_NODES=3

status=0
"$PYTEST" -m "not browser" tests || status=$?
# The web tests again, every database test on a throw-away PostgreSQL (tests/pg.py; DATABASE_URL for the servers
# they start). It fails, never skips, when PostgreSQL cannot be started.
PLAYGROUND_TEST_DATABASE=postgres "$PYTEST" -m "not browser and not kafka" tests/web || status=$((status == 0 ? $? : status))
"$PYTEST" -m browser tests/browser || status=$((status == 0 ? $? : status))
# Pytest's closing line for each run is above; this line sums them for a reader of CI's log.
exit "$status"
