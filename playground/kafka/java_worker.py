"""The parent side of a Java-client actor: a JVM running playground/kafka/java/Worker.java (kafka-clients of the
session's Kafka release), one per actor, spoken to in JSON lines over its stdin/stdout.

It offers what `worker.ActorProcess` offers (wait_ready, call, kill, stop, request_exit, join), so KafkaBackend
drives either without knowing which. The protocol is worker.py's with JSON for pickles:

    parent -> worker   {"kind": ..., "name": ..., "config": {...}}                    (first line only)
                       {"id": n, "op": "commit_transaction", "args": {...}, "timeout_s": s}
    worker -> parent   {"id": n, "ok": true, "result": {...}, "logs": [...], "txn_state": "...", "pid_epochs": [...]}
                       {"id": n, "ok": false, "error": "..."}     (a bug in the worker, not a Kafka error)

Every call is bounded: kafka-clients' blocking calls by max.block.ms (set below the step's budget by the backend),
the worker's own waits by the step's time, and here by that time plus a margin, after which the JVM is killed
and `WorkerError` raised. `kill()` is SIGKILL: a crash, no close, no abort, buffered records lost.

The worker is compiled by tools/java/build.sh into tools/java/.build/<release>/ (git-ignored): `ensure_built()`
runs that script when the build is missing or older than the sources, so nothing is installed by hand.
`python -m playground.kafka.java_worker build` builds it for every release of playground/engine/spec.py KAFKA_RELEASES.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from playground.kafka import boot
from playground.kafka.worker import MARGIN_S, WorkerError

ROOT = Path(__file__).resolve().parents[2]
SRC_DIR = Path(__file__).resolve().parent / "java"
BUILD_SH = ROOT / "tools" / "java" / "build.sh"
BUILD_TIMEOUT_S = 600.0  # a first build downloads kafka-clients with Maven
# A small JVM per actor: C1 only and the serial GC start fastest, and an actor's heap stays small.
JVM_OPTS = [
    "-Xms16m",
    "-Xmx128m",
    "-Xss512k",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Xshare:auto",
    "-Djava.awt.headless=true",
]

_built: dict[str, str] = {}
_build_lock = threading.Lock()


def build_dir() -> Path:
    return Path(os.environ.get("JAVA_WORKER_BUILD_DIR") or ROOT / "tools" / "java" / ".build")


def stamp_for(release: str) -> str:
    """What tools/java/build.sh writes into `stamp` after a build: the release and a checksum of the sources."""
    h = hashlib.sha256()
    for p in sorted(SRC_DIR.glob("*.java"), key=str):
        h.update(p.read_bytes())
    return f"{release} {h.hexdigest()}"


def classpath(release: str) -> str:
    """Exactly the class path tools/java/build.sh trained the class-data sharing archive with (it must match)."""
    d = build_dir() / release
    return f"{d / 'worker.jar'}{os.pathsep}{d / 'lib'}{os.sep}*"


def jvm_opts(release: str) -> list[str]:
    """JVM_OPTS, plus the release's class-data sharing archive when the build has one (tools/java/build.sh trains
    it): a worker then maps the classes a worker loads instead of loading and verifying them, about half its
    start-up CPU. -Xshare:auto ignores an archive that does not fit (another JDK), and JVM messages go to stderr,
    never to stdout, which carries the protocol."""
    archive = build_dir() / release / "worker.jsa"
    extra = [f"-XX:SharedArchiveFile={archive}"] if archive.is_file() else []
    return [*JVM_OPTS, *extra, "-Xlog:disable", "-Xlog:all=warning:stderr"]


def _built_on_disk(release: str) -> bool:
    d = build_dir() / release
    stamp = d / "stamp"
    return (
        stamp.is_file()
        and stamp.read_text().strip() == stamp_for(release)
        and (d / "lib" / ".complete").is_file()
        and (d / "worker.jar").is_file()
    )


_background: dict[str, threading.Thread] = {}
_background_lock = threading.Lock()
_failed: dict[str, str] = {}


def build_in_background(releases: list[str] | None = None) -> None:
    """Build the worker for these releases (default: every pinned one), each in a daemon thread, unless built or
    being built: the server serves at once (the simulator needs no JVM), and a Java session waits for its release's
    build only (`waiting`)."""
    from playground.engine.spec import KAFKA_RELEASES

    tools = bool(shutil.which("javac") and shutil.which("mvn"))
    for release in releases or sorted(set(KAFKA_RELEASES.values())):
        with _background_lock:
            running = release in _background and _background[release].is_alive()
            if running or release in _built or _built_on_disk(release):
                continue
            if not tools:
                _failed[release] = "javac or mvn is missing"
                continue

            def build(release: str = release) -> None:
                try:
                    ensure_built(release)
                except WorkerError as e:
                    _failed[release] = str(e)

            _failed.pop(release, None)
            _background[release] = threading.Thread(target=build, name=f"java-worker-build-{release}", daemon=True)
            _background[release].start()


def waiting(release: str) -> str | None:
    """None when the worker for kafka-clients `release` is built (a Java session can start now); else the sentence
    a Java session's page shows while its build runs (started here if it is not yet), or why it cannot be built."""
    if release in _built or _built_on_disk(release):
        return None
    if release not in _failed:
        build_in_background([release])
    if release in _failed:
        return (
            f"The Java client's worker for kafka-clients {release} cannot be built on this server: {_failed[release]}"
        )
    return (
        f"The Java client's worker for kafka-clients {release} is being built on this server (once, about a "
        "minute): the session starts when it is ready."
    )


def ensure_built(release: str) -> str:
    """The worker's class path for kafka-clients `release`, building it first when it is missing or stale."""
    with _build_lock:
        if release in _built:
            return _built[release]
        if not _built_on_disk(release):
            try:
                proc = subprocess.run(
                    ["bash", str(BUILD_SH), release], cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
                )
            except (OSError, subprocess.TimeoutExpired) as e:
                raise WorkerError(f"could not build the Java worker for kafka-clients {release}: {e}") from None
            if proc.returncode != 0:
                raise WorkerError(
                    f"could not build the Java worker for kafka-clients {release} (tools/java/build.sh): "
                    f"{proc.stderr.strip()[-1500:]}"
                )
        _built[release] = classpath(release)
        return _built[release]


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise WorkerError("java not found (a JDK 17 runs the Java client's workers)")
    return found


class JavaActorProcess:
    """Parent-side handle of one Java worker process (the counterpart of worker.ActorProcess). The JVM starts in the
    background (boot.py: a bounded number at a time, waited for until ready); wait_ready() returns its first answer."""

    client = "java"

    def __init__(
        self, name: str, kind: str, config: dict[str, Any], *, release: str, start_timeout_s: float | None = None
    ) -> None:
        self.name = name
        self.kind = kind
        self.config = dict(config)
        self.release = release
        self._next_id = 0
        self.start_timeout_s = start_timeout_s or boot.READY_TIMEOUT_S
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=40)
        self._send_lock = threading.Lock()
        self._cp = ensure_built(release)
        self._java = java_binary()
        self.proc: subprocess.Popen[bytes] | None = None
        self._boot = boot.Boot(name, self._start, self._first_answer, WorkerError)

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            [self._java, *jvm_opts(self.release), "-cp", self._cp, "Worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            # own session and process group: signals aimed at the server's group do not reach the JVM
            start_new_session=True,
        )
        threading.Thread(target=self._read_stdout, name=f"java-actor-{self.name}-out", daemon=True).start()
        threading.Thread(target=self._read_stderr, name=f"java-actor-{self.name}-err", daemon=True).start()
        self._write({"kind": self.kind, "name": self.name, "config": self.config})

    def _first_answer(self, cap_s: float) -> dict[str, Any]:
        return self._recv(None, min(cap_s, self.start_timeout_s))

    # ---------------------------------------------------------------------------------------------- pipes

    def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            for raw in self.proc.stdout:
                try:
                    self._answers.put(json.loads(raw))
                except ValueError:
                    self._stderr.append(f"(stdout) {raw[:300]!r}")
        except (OSError, ValueError):
            pass
        self._answers.put(None)  # end of stream: the process is gone

    def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        try:
            for raw in self.proc.stderr:
                self._stderr.append(raw.decode("utf-8", "replace").rstrip()[:500])
        except (OSError, ValueError):
            pass

    def _write(self, msg: dict[str, Any]) -> None:
        data = (json.dumps(msg, separators=(",", ":")) + "\n").encode("utf-8")
        with self._send_lock:
            try:
                if self.proc is None or self.proc.stdin is None:
                    raise ValueError("not started")
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (OSError, ValueError) as e:
                raise WorkerError(f"actor {self.name}: Java worker process is gone ({e})") from None

    def stderr_tail(self, lines: int = 8) -> str:
        return " | ".join(list(self._stderr)[-lines:])

    # ---------------------------------------------------------------------------------------------- calls

    def wait_ready(self) -> dict[str, Any]:
        return self._boot.wait()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def call(self, op: str, timeout_s: float = 15.0, **args: Any) -> dict[str, Any]:
        """Run one operation in the worker. `timeout_s` is the operation's own budget; the parent waits that plus a
        margin, then kills the JVM."""
        self.wait_ready()
        self._next_id += 1
        rid = self._next_id
        self._write({"id": rid, "op": op, "args": args, "timeout_s": timeout_s})
        return self._recv(rid, timeout_s + MARGIN_S)

    def _recv(self, rid: int | None, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError(f"actor {self.name}: no answer within {timeout_s:.0f}s; Java worker killed")
            try:
                msg = self._answers.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if msg is None:
                self._answers.put(None)  # every later wait sees the end too
                code = None
                if self.proc is not None:
                    try:
                        code = self.proc.wait(5)
                    except subprocess.TimeoutExpired:
                        pass
                raise WorkerError(f"actor {self.name}: Java worker exited (code {code}): {self.stderr_tail()}")
            if rid is not None and msg.get("id") != rid:
                continue  # a late answer to a call that already timed out
            if not msg.get("ok"):
                raise WorkerError(f"actor {self.name}: {msg.get('error')}")
            return msg

    def request_exit(self, timeout_s: float = 3.0) -> None:
        """Ask the worker to close its client and leave, without waiting for the answer (see join)."""
        try:
            self._write({"id": -1, "op": "exit", "args": {}, "timeout_s": timeout_s})
        except WorkerError:
            pass

    def join(self, timeout_s: float) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(max(0.0, timeout_s))
        except subprocess.TimeoutExpired:
            pass

    def kill(self) -> None:
        """A crash: SIGKILL, no goodbye. The producer's buffers and its open transaction are left as they are."""
        self._boot.cancel()
        if self.proc is None:
            self._answers.put(None)  # never started: a wait for an answer ends now
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # its own group: the JVM and nothing else
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass

    def stop(self, timeout_s: float = 5.0) -> None:
        """Orderly end: ask the worker to close its client, then make sure the process is gone."""
        if self.alive:
            try:
                self.call("exit", timeout_s=timeout_s)
            except WorkerError:
                pass
            self.join(2)
        self.kill()


def main(argv: list[str]) -> int:
    """`python -m playground.kafka.java_worker build`: build the worker for every pinned release (make run/test)."""
    if argv[:1] != ["build"]:
        print("usage: python -m playground.kafka.java_worker build [--if-possible]", file=sys.stderr)
        return 2
    from playground.engine.spec import KAFKA_RELEASES

    if "--if-possible" in argv and not (shutil.which("javac") and shutil.which("mvn")):
        print(
            "java worker: javac or mvn missing, not built (needed only for Java-client sessions on a real cluster)",
            file=sys.stderr,
        )
        return 0
    for release in sorted(set(KAFKA_RELEASES.values())):
        try:
            ensure_built(release)
        except WorkerError as e:
            print(e, file=sys.stderr)
            if "--if-possible" in argv:
                return 0
            return 1
        print(f"java worker: kafka-clients {release} ready in {build_dir() / release}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
