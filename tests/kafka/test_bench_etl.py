"""tools/bench/etl.py (issue 32, `make bench`) runs and reports against a real Kafka 3.9: franz-go's two ETL tests and
the bulk transactional pipeline on both targets, with tiny numbers. The figures are the bench's to print; here only
that every line is there and reads as figures (no timed assertions)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.kafka.conftest import ROOT, require_bootstrap

pytestmark = pytest.mark.kafka
CAP_S = 900


def test_it_runs_franz_gos_etl_tests_and_the_bulk_pipeline_on_both_targets_and_prints_their_ratios():
    done = subprocess.run(
        [sys.executable, "tools/bench/etl.py", "--records", "2000", "--transactions", "2", "--per-transaction", "200"],
        cwd=ROOT,
        env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": require_bootstrap()},
        capture_output=True,
        text=True,
        timeout=CAP_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    for name in ("TestTxnEtl", "TestGroupETL"):
        (line,) = [line for line in lines if line.startswith(name)]
        assert re.search(r"2,000 records\s+Kafka\s+[\d.]+ s\s+simulator\s+[\d.]+ s\s+sim/Kafka [\d.]+", line), line
    for phase in ("transactional produce", "read_committed consume"):
        (line,) = [line for line in lines if line.startswith(phase)]
        assert re.search(r"400 records\s+Kafka\s+[\d,]+/s\s+simulator\s+[\d,]+/s\s+sim/Kafka [\d.]+", line), line
