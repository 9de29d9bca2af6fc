#!/usr/bin/env bash
# `make test`: start a real 3-node Kafka (tools/kafka), run every test against it, stop it whatever happens.
# The browser tests run in their own pytest invocation: Playwright's sync API wants a thread without an event loop.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTEST=".venv/bin/pytest"
mkdir -p test-artifacts

bash tools/kafka/kafka.sh fetch
trap 'bash tools/kafka/kafka.sh stop >/dev/null 2>&1 || true' EXIT
export KAFKA_BOOTSTRAP_SERVERS
KAFKA_BOOTSTRAP_SERVERS=$(bash tools/kafka/kafka.sh start --nodes 3 | tail -n 1)
export PLAYGROUND_KAFKA_NODES=3

status=0
"$PYTEST" -m "not browser" tests || status=$?
# The web tests again, every database test on a throw-away PostgreSQL (tests/pg.py; DATABASE_URL for the servers
# they start). It fails, never skips, when PostgreSQL cannot be started.
PLAYGROUND_TEST_DATABASE=postgres "$PYTEST" -m "not browser and not kafka" tests/web || status=$((status == 0 ? $? : status))
"$PYTEST" -m browser tests/browser || status=$((status == 0 ? $? : status))
# Pytest's closing line for each run is above; this line sums them for a reader of CI's log.
exit "$status"
