"""Real servers on free loopback ports, for the tests and the bench: redis-server, Daphne processes, and nginx as
the reverse proxy that puts several Daphne processes behind one address.

Each start function waits until the server answers and returns a handle whose `stop()` ends exactly the process it
started (never anything found by name); `kill()` ends it with SIGKILL, as a crash would.

Start them from the main thread, or from a thread that outlives them: Linux's parent-death signal (which ends them
when the test run dies) fires when the *thread* that started the process ends, so a server started from a
short-lived thread (a thread pool's task, a `threading.Thread` that restarts Redis) is ended with it at once.
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_PORTS = set(range(19092, 19195)) | {8000}


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGTERM it when the process that started it dies (no orphans).
    Strictly, when the thread that started it ends (see the module's docstring)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
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

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would: no shutdown, the kernel closes its sockets."""
        if self.proc.poll() is None:
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
    argv = [
        redis_server_path(),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(workdir),
        "--protected-mode",
        "yes",
        "--maxclients",
        "2000",
    ]
    proc = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    _wait_port(port, proc, 10, "redis-server", log)
    p = Proc(proc, port, log)
    p.extra["url"] = f"redis://127.0.0.1:{port}/0"
    p.extra["argv"] = argv
    return p


def restart_redis(server: Proc, *, kill: bool = False, down_for: float = 0.0) -> Proc:
    """Stop the redis-server of `server` (a start_redis handle) and start a new one on the same port with the same
    arguments, so that its REDIS_URL stays valid: what a restart of Redis in the middle of a workshop looks like to
    the Daphne processes. `kill=True` ends the old one with SIGKILL (a crash) rather than SIGTERM (a clean
    shutdown); `down_for` seconds pass between the end of the old one and the start of the new one. Nothing is
    kept (no persistence: pub/sub holds no data). Updates `server` in place (its `proc`, so that `stop()` ends the
    new process) and returns it once the new one answers. Call it from the thread that will stop it (see above)."""
    if kill:
        server.kill()
    else:
        server.stop()
    if down_for > 0:
        time.sleep(down_for)
    argv = server.extra["argv"]
    log = server.log
    if log is None:
        raise ValueError("restart_redis restarts a redis-server start_redis started (a Proc with its log)")
    deadline = time.monotonic() + 10
    while True:
        with log.open("a") as out:
            out.write(f"\n--- restarted by procs.restart_redis at {time.strftime('%H:%M:%S')} ---\n")
        proc = subprocess.Popen(argv, stdout=log.open("a"), stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        try:
            _wait_port(server.port, proc, 10, "redis-server (restarted)", log)
            break
        except RuntimeError:
            # The port can be taken for a moment by a client's socket the kernel bound to it meanwhile: retry.
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    server.proc = proc
    return server


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
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v", "0"], env=env, check=True, cwd=ROOT
    )


def start_daphne(env: dict[str, str], workdir: Path, port: int | None = None) -> Proc:
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"daphne-{port}.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "--no-server-name",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "playground.asgi:application",
        ],
        env=env,
        cwd=ROOT,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        preexec_fn=_die_with_parent,
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


def nginx_path() -> str:
    # Debian puts it in /usr/sbin, which a non-root user's PATH usually lacks.
    path = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)
    if not path:
        raise RuntimeError(
            "nginx is not installed: `apt-get install -y nginx` (the failover tests put it in front of "
            "the Daphne processes)"
        )
    return path


NGINX_CONF = """# Written by playground/deploy/procs.py start_nginx: a reverse proxy in front of Daphne processes, for tests and benches.
daemon off;
master_process on;
worker_processes 1;
{user}pid {dir}/nginx.pid;
error_log {log} notice;
events {{ worker_connections 4096; }}
http {{
    log_format upstream '$remote_addr [$time_local] "$request" $status $body_bytes_sent '
                        'upstream=$upstream_addr upstream_status=$upstream_status time=$request_time';
    access_log {dir}/access.log upstream;
    client_body_temp_path {dir}/tmp/client_body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;

    # A websocket handshake goes on as an upgrade; any other request closes its upstream connection when done.
    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ""      close;
    }}

    upstream daphne {{
        # The server with the fewest open connections: websockets stay open for a whole workshop, and round robin,
        # which counts requests, left most of a room's sockets on one process (its event loop saturated, the
        # other's idle: tools/bench/workshop.py). Passive health: one failed connect (refused, timed out) takes a
        # server out for fail_timeout, after which one request tries it again. No upstream keepalive: a POST on a
        # kept connection to a process that died would fail after being sent, and nginx (rightly) never sends a
        # POST twice.
        least_conn;
{servers}
    }}

    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://daphne;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            # A request that could not reach a server goes to the next one (a POST too, as long as nothing of it was
            # sent: nginx does not retry non-idempotent requests once sent, without `non_idempotent`).
            proxy_next_upstream error timeout;
            proxy_connect_timeout {connect_ms}ms;
            # Websockets stay open for a whole workshop, idle between commands.
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
            proxy_buffering off;
            # Which server answered (also on the websocket's 101): lets a test know which viewer is where.
            add_header X-Upstream $upstream_addr always;
        }}
    }}
}}
"""


def start_nginx(
    upstreams: Sequence[Proc | int],
    workdir: Path,
    *,
    port: int | None = None,
    connect_timeout: float = 1.0,
    max_fails: int = 1,
    fail_timeout: int = 2,
) -> Proc:
    """Debian's nginx as a reverse proxy on a free loopback port in front of `upstreams` (Daphne handles or their
    ports), to the server with the fewest open connections, websockets included. Needs no root: it runs from its own directory under `workdir`
    (`-p <dir> -c <dir>/nginx.conf`: pid, logs, temp files there; `daemon off`, so the handle is the master).

    A server that refuses or does not accept a connection within `connect_timeout` seconds is skipped: the request
    goes to the next one, and the server is left out of new connections for `fail_timeout` seconds (passive
    health after `max_fails` failures; nginx counts fail_timeout in whole seconds). The websockets open on a server
    that dies are closed by nginx (without a close frame: a browser sees 1006 and reconnects). Every response
    carries X-Upstream, the server(s) tried. The handle's `url` is the proxy's; `extra["conf"]`,
    `extra["access_log"]` (upstream and status of each request) name its files. Raises RuntimeError naming
    `apt-get install -y nginx` when nginx is missing."""
    binary = nginx_path()
    port = port or free_port()
    ports = [u.port if isinstance(u, Proc) else int(u) for u in upstreams]
    if not ports:
        raise ValueError("start_nginx: no upstream server")
    home = workdir / f"nginx-{port}"
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    log = home / "error.log"
    servers = "\n".join(
        f"        server 127.0.0.1:{p} max_fails={max_fails} fail_timeout={max(1, fail_timeout)}s;" for p in ports
    )
    # As root, nginx's workers would switch to `nobody`, who cannot enter a private temporary directory.
    user = "user root;\n" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
    conf = home / "nginx.conf"
    conf.write_text(
        NGINX_CONF.format(
            user=user, dir=home, log=log, servers=servers, port=port, connect_ms=int(connect_timeout * 1000)
        )
    )
    proc = subprocess.Popen(
        [binary, "-p", str(home), "-c", str(conf), "-e", str(log)],
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        preexec_fn=_die_with_parent,
    )
    _wait_port(port, proc, 10, "nginx", log)
    p = Proc(proc, port, log)
    p.extra.update(conf=conf, access_log=home / "access.log", upstreams=ports)
    return p
