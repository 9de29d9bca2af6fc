"""Real servers on free loopback ports, for the tests and the bench: redis-server and Daphne processes.

Each start function waits until the server answers and returns a handle whose `stop()` ends exactly the process it
started (never anything found by name).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_PORTS = set(range(19092, 19195)) | {8000}


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGTERM it when the process that started it dies (no orphans)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the handle's stop() still ends it
        pass


def free_port() -> int:
    """A port the kernel just handed out on 127.0.0.1 (bind to port 0), never 8000 or the test Kafka's range."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in FORBIDDEN_PORTS:
            return port


def _wait_port(port: int, proc: subprocess.Popen, timeout: float, what: str, log: Path | None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening on {port}\n{tail}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout} s")


@dataclass
class Proc:
    proc: subprocess.Popen
    port: int
    log: Path | None = None
    extra: dict = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def redis_server_path() -> str:
    path = shutil.which("redis-server")
    if not path:
        raise RuntimeError("redis-server is not installed: `apt-get install -y redis-server` (make test does it)")
    return path


def start_redis(workdir: Path) -> Proc:
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"redis-{port}.log"
    proc = subprocess.Popen(
        [redis_server_path(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(workdir), "--protected-mode", "yes", "--maxclients", "2000"],
        stdout=log.open("w"), stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
    )
    _wait_port(port, proc, 10, "redis-server", log)
    p = Proc(proc, port, log)
    p.extra["url"] = f"redis://127.0.0.1:{port}/0"
    return p


def django_env(db_path: Path, redis_url: str = "", **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="playground.settings",
        PLAYGROUND_DB=str(db_path),
        REDIS_URL=redis_url,
        PYTHONPATH=str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
    )
    env.update(extra)
    return env


def migrate(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v", "0"], env=env, check=True, cwd=ROOT)


def start_daphne(env: dict[str, str], workdir: Path, port: int | None = None) -> Proc:
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"daphne-{port}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "playground.asgi:application"],
        env=env, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
    )
    _wait_port(port, proc, 30, "daphne", log)
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    return Proc(proc, port, log)
