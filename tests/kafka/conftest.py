"""Fixtures of the real-broker tests.

They need a real Apache Kafka: `make test` starts a 3-node Kafka 3.9 cluster and a 3-node Kafka 4.x cluster
(tools/kafka) and exports KAFKA_BOOTSTRAP_SERVERS and KAFKA4_BOOTSTRAP_SERVERS. Without the cluster a test needs,
it FAILS (never skips: in CI a skip would hide a broken broker). A developer starts them with
`bash tools/kafka/kafka.sh start [--version 4] --nodes 3` and exports what each prints.
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


def require_bootstrap(kafka: str = "3.9") -> str:
    """The bootstrap servers of the test cluster of that Kafka version (clusters.SETTINGS names the variable)."""
    from playground.kafka.clusters import SETTINGS

    name = SETTINGS[kafka][0]
    bootstrap = os.environ.get(name, "").strip()
    if not bootstrap:
        pytest.fail(
            f"{name} is not set: these tests need a real Kafka {kafka}. `make test` starts one; by hand: "
            f"export {name}=$(bash tools/kafka/kafka.sh start --version {kafka} --nodes 3 | tail -n 1)",
            pytrace=False,
        )
    return bootstrap


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    return require_bootstrap()


def broker_control_for(bootstrap: str, kafka: str = "3.9") -> str:
    """How tests stop and start brokers: KAFKA_BROKER_CONTROL (KAFKA4_BROKER_CONTROL for 4.x) if set, else
    tools/kafka/kafka.sh, but only when that script runs the very cluster under test (never stop someone else's
    brokers)."""
    from playground.kafka.clusters import SETTINGS

    control = os.environ.get(SETTINGS[kafka][1], "").strip()
    if control:
        return control
    try:
        out = subprocess.run(
            ["bash", str(KAFKA_SH), "--version", kafka, "bootstrap"],
            capture_output=True,
            text=True,
            timeout=20,
            cwd=ROOT,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if out.returncode == 0 and out.stdout.strip().splitlines()[-1:] == [bootstrap]:
        return (
            DEFAULT_CONTROL
            if kafka == "3.9"
            else f"bash tools/kafka/kafka.sh --version {kafka} {{action}}-node {{broker}}"
        )
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
    # the 4.x cluster where the environment names it (a test that needs it asks require_bootstrap("4"))
    settings.KAFKA4_BOOTSTRAP_SERVERS, settings.KAFKA4_BROKER_CONTROL = request.getfixturevalue("kafka4_if_any")
    yield


@pytest.fixture(scope="session")
def kafka4_if_any() -> tuple[str, str]:
    """The 4.x test cluster's bootstrap servers and broker control, or empty strings."""
    bootstrap = os.environ.get("KAFKA4_BOOTSTRAP_SERVERS", "").strip()
    return (bootstrap, broker_control_for(bootstrap, "4")) if bootstrap else ("", "")
