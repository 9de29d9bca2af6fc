"""Starting actor worker processes on a busy machine: a bounded number at a time, each waited for until it says it is
ready, within a generous cap.

Why: a worker's start is CPU work (a Python process importing confluent-kafka, or a JVM loading kafka-clients), and
a session starts all its actors at once, as do the sessions beside it. On a 2-core machine under a test suite's load
(~15), a fixed 20 s for a start failed now and then ("the client did not start: ... no answer within 20s"). So:

* at most BOOT_SLOTS workers start at once in this process: the machine's cores (os.cpu_count()), since more would
  only share them; a worker waits for a slot before its process is started;
* a started worker is waited for until its first answer (it created its client: ready), it dies, or READY_TIMEOUT_S
  pass, a cap far above a start's time on a loaded machine, so that only a worker that is really stuck fails;
* nothing is retried: a worker that did not start is reported as such, once.

Each worker boots in a thread of its own (`Boot`), so that a session's workers still start in parallel while the
caller goes on to wait for each in turn.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

BOOT_SLOTS = max(1, int(os.environ.get("PLAYGROUND_WORKER_BOOT_SLOTS", "0") or 0) or os.cpu_count() or 1)
READY_TIMEOUT_S = float(os.environ.get("PLAYGROUND_WORKER_READY_TIMEOUT_S", "180") or 180)
SLOT_TIMEOUT_S = 600.0  # waiting for a slot: other workers' starts, each bounded by READY_TIMEOUT_S

_slots = threading.BoundedSemaphore(BOOT_SLOTS)
_mu = threading.Lock()
_booting = 0  # workers holding a slot now (for tests and figures)
_peak = 0  # the most that held one at once


class BootError(Exception):
    """The worker did not start: no slot, no process, or no first answer in time."""


def booting() -> tuple[int, int]:
    """(workers starting now, the most that started at once) in this process."""
    with _mu:
        return _booting, _peak


def reset_peak() -> None:
    global _peak
    with _mu:
        _peak = _booting


class Boot:
    """One worker's start, in a thread of its own: take a slot, `start()` the process, `wait_ready(READY_TIMEOUT_S)`
    for its first answer, give the slot back. `cancel()` (the worker is killed meanwhile) keeps a process from being
    started after all."""

    def __init__(
        self,
        name: str,
        start: Callable[[], None],
        wait_ready: Callable[[float], dict[str, Any]],
        error: type[Exception] = BootError,
    ) -> None:
        self.name = name
        self._start = start
        self._wait_ready = wait_ready
        self._error = error
        self._done = threading.Event()
        self._lock = threading.Lock()
        self.cancelled = False
        self.started = False
        self.result: dict[str, Any] | None = None
        self.failure: Exception | None = None
        threading.Thread(target=self._run, name=f"boot-{name}", daemon=True).start()

    def _run(self) -> None:
        global _booting, _peak
        try:
            if not _slots.acquire(timeout=SLOT_TIMEOUT_S):
                raise self._error(f"actor {self.name}: no free slot to start its worker within {SLOT_TIMEOUT_S:.0f}s")
            try:
                with _mu:
                    _booting += 1
                    _peak = max(_peak, _booting)
                with self._lock:
                    if self.cancelled:
                        raise self._error(f"actor {self.name}: killed before its worker started")
                    self._start()
                    self.started = True
                self.result = self._wait_ready(READY_TIMEOUT_S)
            finally:
                with _mu:
                    _booting -= 1
                _slots.release()
        except Exception as e:
            self.failure = e if isinstance(e, self._error) else self._error(f"actor {self.name}: {e}")
        finally:
            self._done.set()

    def cancel(self) -> bool:
        """No process will be started after this; True when one was started already (the caller kills it)."""
        with self._lock:
            self.cancelled = True
            return self.started

    def wait(self) -> dict[str, Any]:
        """The worker's first answer; the boot's failure raised. Bounded: a slot, then the readiness cap."""
        if not self._done.wait(SLOT_TIMEOUT_S + READY_TIMEOUT_S + 30.0):
            raise self._error(f"actor {self.name}: its worker did not start")
        if self.failure is not None:
            raise self.failure
        assert self.result is not None
        return self.result
