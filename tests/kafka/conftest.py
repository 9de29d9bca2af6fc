"""Fixtures of the real-broker tests.

They need a real Apache Kafka: `make test` starts a 3-node cluster (tools/kafka) and exports
KAFKA_BOOTSTRAP_SERVERS. Without it these tests FAIL (never skip: in CI a skip would hide a broken broker).
A developer starts one with `bash tools/kafka/kafka.sh start --nodes 3` and exports what it prints.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# `kill -USR1 <pytest pid>` prints every thread's stack: a bounded wait that is not bounded shows where.
faulthandler.register(signal.SIGUSR1, all_threads=True)
KAFKA_SH = ROOT / "tools" / "kafka" / "kafka.sh"
DEFAULT_CONTROL = "bash tools/kafka/kafka.sh {action}-node {broker}"


def require_bootstrap() -> str:
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if not bootstrap:
        pytest.fail(
            "KAFKA_BOOTSTRAP_SERVERS is not set: these tests need a real Kafka. `make test` starts one; by hand: "
            "export KAFKA_BOOTSTRAP_SERVERS=$(bash tools/kafka/kafka.sh start --nodes 3 | tail -n 1)",
            pytrace=False,
        )
    return bootstrap


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    return require_bootstrap()


def broker_control_for(bootstrap: str) -> str:
    """How tests stop and start brokers: KAFKA_BROKER_CONTROL if set, else tools/kafka/kafka.sh, but only when
    that script runs the very cluster under test (never stop someone else's brokers)."""
    control = os.environ.get("KAFKA_BROKER_CONTROL", "").strip()
    if control:
        return control
    try:
        out = subprocess.run(["bash", str(KAFKA_SH), "bootstrap"], capture_output=True, text=True, timeout=20, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if out.returncode == 0 and out.stdout.strip().splitlines()[-1:] == [bootstrap]:
        return DEFAULT_CONTROL
    return ""


@pytest.fixture
def admin(kafka_bootstrap):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": kafka_bootstrap})


@pytest.fixture(scope="session")
def broker_control(kafka_bootstrap) -> str:
    return broker_control_for(kafka_bootstrap)


@pytest.fixture(autouse=True)
def _kafka_settings(request, settings):
    """Every test in tests/kafka talks to the cluster of the environment, through Django settings as the server
    does. Broker control is configured when it can be done safely (see broker_control_for)."""
    if request.node.get_closest_marker("kafka") is None:
        yield
        return
    settings.KAFKA_BOOTSTRAP_SERVERS = require_bootstrap()
    settings.KAFKA_BROKER_CONTROL = request.getfixturevalue("broker_control")
    yield
