#!/usr/bin/env bash
# `make bench`: every figure in one run. The real-cluster part starts its own broker and stops it.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=".venv/bin/python"
echo "== simulator =="; "$PY" tools/bench/sim.py
echo "== web =="; "$PY" tools/bench/web.py
echo "== sessions as rows, scrubbing, the editor =="; "$PY" tools/bench/sharing.py
echo "== the anomaly checker over a growing history =="; "$PY" tools/bench/anomalies.py
echo "== a workshop: 40 attendees and the board (PostgreSQL, Redis, 2 Daphne, nginx) =="; "$PY" tools/bench/workshop.py
echo "== simulator vs real Kafka =="
bash tools/kafka/kafka.sh fetch
trap 'bash tools/kafka/kafka.sh stop >/dev/null 2>&1 || true' EXIT
export KAFKA_BOOTSTRAP_SERVERS
KAFKA_BOOTSTRAP_SERVERS=$(bash tools/kafka/kafka.sh start --nodes 1 | tail -n 1)
"$PY" tools/bench/kafka.py
echo "== the inspector watching 30 partitions of real Kafka =="; "$PY" tools/bench/inspector.py
