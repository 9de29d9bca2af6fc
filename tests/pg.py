"""A throw-away PostgreSQL for one test run: initdb into a fresh temp dir, pg_ctl start on a unix socket in that dir
and a free TCP port on 127.0.0.1 only, fsync off; `stop()` stops it and deletes the dir.

initdb and postgres refuse to run as root. As root (the CI machine), every PostgreSQL binary runs as the `postgres`
system user that Debian's postgresql package creates, through `runuser -u postgres --`, and the temp dir (created
in /tmp, not under pytest's 0700 /tmp/pytest-of-root) belongs to that user. As anyone else they run as is.

pg_ctl detaches the server, so a pytest killed hard (SIGKILL, or SIGTERM, which skips fixture teardown) would leave
it running. A tiny watchdog process guards against that: it holds a pipe from this process and, when the pipe
closes however this process ends, stops the server (immediate mode) and removes the dir. It ignores SIGINT, so a
Ctrl-C reaches pytest, whose teardown then stops the server in the ordinary way.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from playground.deploy import procs

USER = "playground"  # the superuser initdb creates (whatever OS user runs the server)
DATABASE = "playground"  # created after start: what DATABASE_URL names; pytest-django creates test_playground

# Speed over durability: the data dies with the run. No fsync or WAL flush waits, no full-page images, no
# checkpoints to speak of; loopback and the socket only.
SERVER_CONF = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{socket_dir}'
unix_socket_permissions = 0700
fsync = off
synchronous_commit = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
checkpoint_timeout = 1d
max_connections = 200
shared_buffers = 64MB
log_min_messages = warning
log_checkpoints = off
"""

_WATCHDOG = r"""
import shutil, signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
as_user, pg_ctl, data, root = sys.argv[1].split(), sys.argv[2], sys.argv[3], sys.argv[4]
sys.stdin.buffer.read()  # returns when the test process ends or closes the pipe
subprocess.run([*as_user, pg_ctl, "stop", "-D", data, "-m", "immediate", "-w", "-t", "10"],
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root)
shutil.rmtree(root, ignore_errors=True)
"""


class Unavailable(RuntimeError):
    """PostgreSQL could not be found or started; the message says what to do."""


def bin_dir() -> Path:
    """The newest /usr/lib/postgresql/<major>/bin (Debian's layout), else wherever initdb is on PATH."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise Unavailable(
        "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: "
        "`apt-get install -y postgresql` (tools/system-deps.sh does it)"
    )


def _as_user() -> tuple[list[str], pwd.struct_passwd | None]:
    """The command prefix that runs PostgreSQL's binaries as a user they accept, and that user (None: ourselves)."""
    if os.geteuid() != 0:
        return [], None
    try:
        owner = pwd.getpwnam("postgres")
    except KeyError:
        raise Unavailable(
            "running as root, and initdb/postgres refuse root; the `postgres` system user (made by "
            "Debian's postgresql package) is missing: `apt-get install -y postgresql`"
        ) from None
    runuser = shutil.which("runuser")
    if not runuser:
        raise Unavailable("running as root and `runuser` (util-linux) is missing: cannot run initdb as `postgres`")
    return [runuser, "-u", "postgres", "--"], owner


@dataclass
class Server:
    root: Path  # the temp dir: data/, the socket, the log
    port: int
    password: str
    pg_ctl: Path
    as_user: list[str]
    watchdog: subprocess.Popen

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = DATABASE) -> str:
        """The database through 127.0.0.1 and the port, with the password (scram-sha-256)."""
        return f"postgres://{USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def socket_url(self, database: str = DATABASE) -> str:
        """The same database through the unix socket, the socket directory percent-encoded as the host: what the
        tests use (DATABASE_URL). Django connects anew for every request (CONN_MAX_AGE=0), and a scram login over
        TCP costs several times a trusted socket login (24 ms against 9 ms, measured on a busy 2-core machine)."""
        from urllib.parse import quote

        return f"postgres://{USER}@{quote(str(self.socket_dir), safe='')}:{self.port}/{database}"

    def stop(self) -> None:
        """Stop the server (fast: disconnect clients, no waiting for them) and delete everything it wrote."""
        if self.data.exists():
            subprocess.run(
                [*self.as_user, str(self.pg_ctl), "stop", "-D", str(self.data), "-m", "fast", "-w", "-t", "30"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=self.root,
            )
        if self.watchdog.stdin and not self.watchdog.stdin.closed:
            self.watchdog.stdin.close()  # the watchdog's own stop finds nothing running, and removes the dir
        try:
            self.watchdog.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.watchdog.kill()
            self.watchdog.wait(timeout=5)
        shutil.rmtree(self.root, ignore_errors=True)


def _run(cmd: list[str], what: str, cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise Unavailable(f"{what} failed with exit status {done.returncode}:\n{done.stdout[-3000:]}")


def start(timeout: float = 60) -> Server:
    """initdb, start, create DATABASE; the running server. Unavailable (with initdb's or the server's own words)
    when any of it fails; nothing is left behind then."""
    bindir = bin_dir()
    as_user, owner = _as_user()
    root = Path(tempfile.mkdtemp(prefix="playground-pg-"))
    watchdog = None
    try:
        if owner is not None:
            os.chown(root, owner.pw_uid, owner.pw_gid)
        password = secrets.token_hex(16)
        pwfile = root / "pwfile"
        pwfile.write_text(password + "\n")
        if owner is not None:
            os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        pwfile.chmod(0o600)
        # Trust on the socket (its directory is 0700: only its owner, or root, gets in); a password over TCP, so
        # that no other local user can use the loopback port.
        _run(
            [
                *as_user,
                str(bindir / "initdb"),
                "-D",
                str(root / "data"),
                "-U",
                USER,
                f"--pwfile={pwfile}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ],
            "initdb",
            root,
        )
        pwfile.unlink()
        server = None
        for attempt in range(3):  # a free port can be taken between our probe and the server's bind
            port = procs.free_port()
            conf = root / "data" / "postgresql.conf"
            with conf.open("a") as f:  # later lines win: the retry's port replaces the previous one
                f.write(SERVER_CONF.format(port=port, socket_dir=root))
            if watchdog is None:
                watchdog = subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        _WATCHDOG,
                        " ".join(as_user),
                        str(bindir / "pg_ctl"),
                        str(root / "data"),
                        str(root),
                    ],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            log = root / "server.log"
            done = subprocess.run(
                [
                    *as_user,
                    str(bindir / "pg_ctl"),
                    "start",
                    "-D",
                    str(root / "data"),
                    "-l",
                    str(log),
                    "-w",
                    "-t",
                    str(int(timeout)),
                ],
                cwd=root,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            if done.returncode == 0:
                server = Server(root, port, password, bindir / "pg_ctl", as_user, watchdog)
                break
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            if "Address already in use" not in tail or attempt == 2:
                raise Unavailable(
                    f"pg_ctl start failed with exit status {done.returncode}:\n{done.stdout[-1000:]}\n{tail}"
                )
        _create_database(server)
        return server
    except BaseException:
        if watchdog is not None:
            subprocess.run(
                [*as_user, str(bindir / "pg_ctl"), "stop", "-D", str(root / "data"), "-m", "immediate"],
                cwd=root,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            watchdog.stdin.close()
            watchdog.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
        raise


def _create_database(server: Server) -> None:
    import psycopg

    try:
        with psycopg.connect(server.url("postgres"), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
    except psycopg.Error as exc:
        raise Unavailable(f"could not create database {DATABASE!r} on the new server: {exc}") from exc


def _self_test() -> None:  # python -m tests.pg: start, print the URLs, stop
    server = start()
    try:
        print(server.url(), server.socket_url(), sep="\n")
    finally:
        server.stop()


if __name__ == "__main__":
    _self_test()
