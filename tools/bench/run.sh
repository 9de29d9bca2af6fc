#!/usr/bin/env bash
# `make bench`: every figure in one run. The real-cluster parts start their own brokers and stop them.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=".venv/bin/python"
echo "== simulator =="; "$PY" tools/bench/sim.py
echo "== web =="; "$PY" tools/bench/web.py
echo "== connect your own app: an external client's request to the screen =="; "$PY" tools/bench/connect.py
echo "== sessions as rows, scrubbing, the editor =="; "$PY" tools/bench/sharing.py
echo "== the anomaly checker over a growing history =="; "$PY" tools/bench/anomalies.py
echo "== compare: a GET's CPU, first and kept, in two processes =="; "$PY" tools/bench/compare.py
echo "== a session of a million Kafka requests, opened in a fresh process and a fresh Daphne =="; "$PY" tools/bench/door.py
echo "== a workshop: 40 attendees and the board (PostgreSQL, Redis, 2 Daphne, nginx) =="; "$PY" tools/bench/workshop.py
echo "== simulator vs real Kafka, per profile =="
# 1-node clusters of Kafka 3.9 and 4.x (their own run directories and ports, 19092 and 19592), started together
bash tools/kafka/kafka.sh fetch
bash tools/kafka/kafka.sh fetch --version 4
"$PY" -m playground.kafka.java_worker build   # kafka-clients of both releases, for the Java client's profiles
trap 'bash tools/kafka/kafka.sh stop >/dev/null 2>&1 || true; bash tools/kafka/kafka.sh --version 4 stop >/dev/null 2>&1 || true' EXIT
export KAFKA_BOOTSTRAP_SERVERS KAFKA4_BOOTSTRAP_SERVERS
bench4=$(mktemp)
bash tools/kafka/kafka.sh start --version 4 --nodes 1 >"$bench4" &
kafka4=$!
KAFKA_BOOTSTRAP_SERVERS=$(bash tools/kafka/kafka.sh start --nodes 1 | tail -n 1)
wait "$kafka4"
KAFKA4_BOOTSTRAP_SERVERS=$(tail -n 1 "$bench4"); rm -f "$bench4"
"$PY" tools/bench/kafka.py
echo "== the simulated cluster over the Kafka protocol (simcluster) vs the 1-node Kafka 3.9 =="; "$PY" tools/bench/simserver.py
echo "== where clients wait: franz-go's ETL tests and a bulk transactional pipeline, simcluster vs the 1-node Kafka 3.9 =="; "$PY" tools/bench/etl.py
echo "== the tap in front of the 1-node Kafka 3.9: the latency it adds per request, its CPU =="; "$PY" tools/bench/tap.py
echo "== the inspector watching 30 partitions of real Kafka =="; "$PY" tools/bench/inspector.py
