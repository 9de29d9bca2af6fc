"""Simulated clusters served over the Kafka protocol, started once per test session: `manage.py simcluster` in a
process of its own, as a user starts it (free ports, loopback), stopped at the end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 90.0  # generous: the first start imports Django on a loaded machine


@dataclass
class SimCluster:
    proc: subprocess.Popen
    bootstrap: str
    control: str  # the KAFKA_BROKER_CONTROL template it printed
    stderr: list[str]

    @property
    def ports(self) -> list[int]:
        return [int(hostport.rpartition(":")[2]) for hostport in self.bootstrap.split(",")]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start_simcluster(kafka: str, nodes: int, *config: str) -> SimCluster:
    args = [sys.executable, "manage.py", "simcluster", "--kafka", kafka, "--nodes", str(nodes), "--port", "0"]
    for item in config:
        args += ["--config", item]
    proc = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    stderr: list[str] = []
    threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()  # type: ignore[arg-type]
    lines: list[str] = []
    deadline = time.monotonic() + START_TIMEOUT_S

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line.strip())
            if len(lines) == 2:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(max(0.0, deadline - time.monotonic()))
    if len(lines) < 2:
        proc.kill()
        pytest.fail(f"simcluster did not start within {START_TIMEOUT_S:.0f} s: {lines} {''.join(stderr)[-2000:]}")
    control = lines[0].removeprefix("KAFKA_BROKER_CONTROL=")
    return SimCluster(proc, lines[1], control, stderr)


# as tools/kafka configures the real test clusters: the first rebalance of a group does not wait 3 s for more members
TEST_CONFIG = ("group.initial.rebalance.delay.ms=0",)


@pytest.fixture(scope="session")
def simcluster35():
    cluster = start_simcluster("3.5", 1, *TEST_CONFIG, "auto.create.topics.enable=true")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def simcluster39():
    cluster = start_simcluster("3.9", 3, *TEST_CONFIG)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def simcluster4():
    cluster = start_simcluster("4", 3, *TEST_CONFIG)
    yield cluster
    cluster.stop()


@pytest.fixture(params=["3.9", "4"])
def simcluster(request):
    return request.getfixturevalue("simcluster39" if request.param == "3.9" else "simcluster4")
