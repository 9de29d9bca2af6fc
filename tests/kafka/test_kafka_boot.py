"""Actor workers start a bounded number at a time and are waited for until they say they are ready (boot.py). No
broker needed: a worker is ready once it has created its client, which does not connect yet."""

from __future__ import annotations

import time

import pytest

from playground.kafka import boot
from playground.kafka.worker import ActorProcess, WorkerError

CONFIG = {"bootstrap.servers": "127.0.0.1:1", "linger.ms": 5}


def test_it_starts_no_more_workers_at_once_than_the_machine_has_cores_and_waits_for_each_to_be_ready():
    boot.reset_peak()
    procs = [ActorProcess(f"w{i}", "producer", CONFIG) for i in range(2 * boot.BOOT_SLOTS + 1)]
    try:
        for p in procs:
            ready = p.wait_ready()
            assert ready["ok"] and ready["result"]["pid"] == p.pid
            assert p.alive
        assert 1 <= boot.booting()[1] <= boot.BOOT_SLOTS
        assert boot.booting()[0] == 0  # every slot given back
    finally:
        for p in procs:
            p.kill()
    assert not any(p.alive for p in procs)


def test_it_starts_no_process_for_a_worker_killed_while_it_waits_for_a_slot():
    held = [boot._slots.acquire(timeout=60) for _ in range(boot.BOOT_SLOTS)]  # every slot taken
    assert all(held)
    try:
        p = ActorProcess("never", "producer", CONFIG)
        p.kill()
    finally:
        for _ in held:
            boot._slots.release()
    deadline = time.monotonic() + 60
    while p._boot.failure is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.pid is None and not p.alive
    with pytest.raises(WorkerError, match="killed before its worker started"):
        p.wait_ready()
