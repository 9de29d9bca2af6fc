"""Each real producer or consumer actor lives in a worker process of its own.

Why a process: an actor's `crash` must be a real crash (the process dies: no abort, no close, buffered records
lost), and librdkafka's threads stay out of the web server. The parent talks to a worker over a `Pipe` with a
small request/response protocol:

    parent -> worker   {"id": n, "op": "commit_transaction", "args": {...}}
    worker -> parent   {"id": n, "ok": True, "result": {...}, "logs": [...], "state": {...}}
                       {"id": n, "ok": False, "error": "..."}        (a bug in the worker, not a Kafka error)

Kafka and client errors are *results* (`{"outcome": "_FENCED", ...}`), never exceptions. Every call is bounded:
the librdkafka call inside the worker has its own timeout and the parent waits at most that plus a margin; a
worker that does not answer in time is killed and the parent raises `WorkerError`.

`logs` carries what librdkafka logged since the previous answer (debug contexts `eos` and `protocol`, parsed
into RPC request/response lines and transaction state changes): the client-observable RPC timeline.

This module is the parent's side; the worker's side is rdkafka_actor.py (the client) and rdkafka_log.py (its log).
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

from playground.kafka import boot
from playground.kafka.rdkafka_actor import worker_main

# ------------------------------------------------------------------------------------------- parent side

SPAWN = multiprocessing.get_context("spawn")
# How long past an operation's own budget the parent waits for the worker's answer before it counts the worker as
# stuck and kills it. The operation itself is bounded inside the worker (the client's timeout), so this only covers a
# worker that is slow to be scheduled: on a loaded 2-core machine (a test suite's load, ~15) that took more than 5 s
# now and then, and a step failed _TIMED_OUT by chance. Generous, yet bounded.
MARGIN_S = 30.0


class WorkerError(Exception):
    """The worker process died, did not start, or did not answer within its time."""


class ActorProcess:
    """Parent-side handle of one worker process. It starts in the background (boot.py: a bounded number at a time,
    waited for until ready); wait_ready() returns its first answer."""

    def __init__(self, name: str, kind: str, config: dict[str, Any], *, start_timeout_s: float | None = None) -> None:
        self.name = name
        self.kind = kind
        self.config = dict(config)
        self._next_id = 0
        self.conn, self._child = SPAWN.Pipe(duplex=True)
        self.proc = SPAWN.Process(
            target=worker_main, args=(self._child, kind, name, self.config), name=f"kafka-actor-{name}", daemon=True
        )
        self.start_timeout_s = start_timeout_s or boot.READY_TIMEOUT_S
        self._boot = boot.Boot(name, self._start, self._first_answer, WorkerError)

    def _start(self) -> None:
        self.proc.start()
        self._child.close()

    def _first_answer(self, cap_s: float) -> dict[str, Any]:
        return self._recv(None, min(cap_s, self.start_timeout_s))

    def wait_ready(self) -> dict[str, Any]:
        return self._boot.wait()

    @property
    def alive(self) -> bool:
        return self._boot.started and self.proc.is_alive()

    @property
    def pid(self) -> int | None:
        return self.proc.pid

    def call(self, op: str, timeout_s: float = 15.0, **args: Any) -> dict[str, Any]:
        """Run one operation in the worker. `timeout_s` is the operation's own budget (passed to librdkafka);
        the parent waits that plus a margin."""
        self.wait_ready()
        self._next_id += 1
        rid = self._next_id
        try:
            self.conn.send({"id": rid, "op": op, "args": args, "timeout_s": timeout_s})
        except (OSError, EOFError, BrokenPipeError) as e:
            raise WorkerError(f"actor {self.name}: worker process is gone ({e})") from None
        return self._recv(rid, timeout_s + MARGIN_S)

    def _recv(self, rid: int | None, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                ready = left > 0 and self.conn.poll(min(left, 0.5))
            except (OSError, EOFError):
                ready = False
                left = 0
            if ready:
                try:
                    msg = self.conn.recv()
                except (EOFError, OSError) as e:
                    self.kill()
                    raise WorkerError(f"actor {self.name}: worker process died ({e})") from None
                if rid is not None and msg.get("id") != rid:
                    continue  # a late answer to a call that already timed out
                if not msg.get("ok"):
                    raise WorkerError(f"actor {self.name}: {msg.get('error')}")
                return msg
            if not self.proc.is_alive():
                raise WorkerError(f"actor {self.name}: worker process exited (code {self.proc.exitcode})")
            if left <= 0:
                self.kill()
                raise WorkerError(f"actor {self.name}: no answer within {timeout_s:.0f}s; worker killed")

    def request_exit(self, timeout_s: float = 3.0) -> None:
        """Ask the worker to close its client and leave, without waiting for the answer (see join)."""
        try:
            self.conn.send({"id": -1, "op": "exit", "args": {}, "timeout_s": timeout_s})
        except (OSError, EOFError, BrokenPipeError):
            pass

    def join(self, timeout_s: float) -> None:
        if self._boot.started:
            self.proc.join(max(0.0, timeout_s))

    def kill(self) -> None:
        """A crash: SIGKILL, no goodbye. librdkafka's buffers die with the process."""
        if self._boot.cancel():
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(5)
        else:
            self._child.close()  # never started: its end of the pipe is still ours
        try:
            self.conn.close()
        except OSError:
            pass

    def stop(self, timeout_s: float = 5.0) -> None:
        """Orderly end: ask the worker to close its client, then make sure the process is gone."""
        if self.alive:
            try:
                self.call("exit", timeout_s=timeout_s)
            except WorkerError:
                pass
            self.proc.join(2)
        self.kill()
