#!/usr/bin/env bash
# Runs the incident's service against a Kafka bootstrap address (a session's "Connect your own app", `manage.py
# simcluster`, or a real cluster), building it first if needed:
#
#   bash examples/spring-incident/run.sh 127.0.0.1:40001,127.0.0.1:40002 [batches] [payments per batch] [topic] [metrics topic]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ $# -ge 1 ]] || { echo "usage: $0 BOOTSTRAP [batches] [payments per batch] [topic] [metrics topic]" >&2; exit 2; }
CP="$(bash "$HERE/build.sh" | tail -n 1)"
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$CP" incident.App "$@"
