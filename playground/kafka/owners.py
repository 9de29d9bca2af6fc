"""Which server process owns which session prefixes on a real cluster, and sweeping the prefixes of dead ones.

Why: a session's topics are deleted by KafkaBackend.close(). A server process killed with SIGKILL (or one that
exits without closing its sessions) runs no close(), and Kafka never deletes a topic by itself: there is no topic
TTL, so the topics of a `pg-<8 hex>-` prefix would stay on the cluster forever. Consumer groups with committed
offsets linger too (until offsets.retention.minutes, 7 days by default, after the group became empty).
Transactional ids need no sweeping and cannot be deleted (Kafka has no admin API for it): the coordinator aborts an
open transaction after its transaction.timeout.ms, writing its ABORT markers to partitions that still exist (those
of a deleted topic are dropped), and removes an idle id after transactional.id.expiration.ms (7 days by default).

The registry survives the process: one JSON file per server process in `settings.KAFKA_OWNERS_DIR` (default
`VAR_DIR/kafka-owners/`), named `<hostname>-<pid>-<start time>.json`, written atomically (a temporary file, then
os.replace, so a reader never sees half a file) whenever a backend registers a prefix (before creating its
topics, so a kill between the two leaks nothing) and when its topics are gone. It records the hostname, the pid,
the process's start time (field 22 of /proc/<pid>/stat, clock ticks since boot), the boot id and the pid namespace,
and each prefix with the bootstrap servers of its cluster. A process that owns no prefix has no file.

An owner is dead when, on the same host (and pid namespace), its pid is gone, is a zombie, or belongs to a process
that started at another time (the pid was reused), or when the host has rebooted since (another boot id). An owner
on another host, or in another pid namespace, cannot be checked from here and is never touched; neither is one
whose liveness cannot be told (no /proc: only `kill(pid, 0)`, which cannot see a reused pid, so a live pid counts
as alive). The sweep deletes only prefixes of dead owners, only those recorded for the cluster it was asked about,
only names that start with a well-formed `pg-<8 hex>-` prefix; then it removes them from the dead owner's file
(and the file, once empty), and logs each prefix with exactly the topics and groups it deleted. Sweeps of one
registry directory are serialised with flock(2), so two successors starting together do not race; a prefix whose
deletion failed stays recorded for the next sweep.

When: the first KafkaBackend of a process sweeps for its cluster (`sweep_once`) before creating its own topics;
`sweep_at_startup()` is for the server's start-up, so the leftovers go away without waiting for a real-cluster
session.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from playground.kafka.clusters import SETTINGS, kafka_settings

log = logging.getLogger(__name__)

PREFIX_RE = re.compile(r"^pg-[0-9a-f]{8}-$")  # what KafkaBackend makes: secrets.token_hex(4)
FORMAT = 1
SWEEP_TIMEOUT_S = 20.0  # the whole sweep (lock, listing, deleting), so a backend's creation stays bounded
LOCK_TIMEOUT_S = 10.0
REQUEST_TIMEOUT_S = 8.0
LOCK_NAME = ".sweep.lock"

_quiet = logging.getLogger("playground.kafka.librdkafka")  # observer.py keeps it at CRITICAL


# ------------------------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    start_time: int | None  # clock ticks after boot (/proc/<pid>/stat field 22); None without /proc
    state: str | None  # R, S, D, Z (zombie), X (dead), ...; None without /proc


def _proc_available() -> bool:
    return os.path.exists("/proc/self/stat")


def process_identity(pid: int) -> ProcessIdentity | None:
    """The process that has this pid now, or None if there is none. The start time tells two processes that
    held the same pid apart."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except (FileNotFoundError, ProcessLookupError):
        if _proc_available():
            return None
        # no /proc (not Linux): existence only
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ProcessIdentity(int(pid), None, None)
    except OSError:
        return ProcessIdentity(int(pid), None, None)  # there, but unreadable: do not guess
    # the command name (field 2) is in parentheses and may itself hold spaces and parentheses
    rest = raw[raw.rfind(")") + 2 :].split()
    try:
        return ProcessIdentity(int(pid), int(rest[19]), rest[0])
    except (IndexError, ValueError):
        return ProcessIdentity(int(pid), None, None)


def _read_text(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip() or None
    except OSError:
        return None


def _boot_id() -> str | None:
    return _read_text("/proc/sys/kernel/random/boot_id")


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")  # e.g. "pid:[4026531836]"
    except OSError:
        return None


def _hostname() -> str:
    return socket.gethostname()


def _identity_of_this_process() -> dict[str, Any]:
    me = process_identity(os.getpid())
    return {
        "hostname": _hostname(),
        "pid": os.getpid(),
        "start_time": me.start_time if me else None,
        "boot_id": _boot_id(),
        "pid_ns": _pid_namespace(),
    }


def owner_state(entry: dict[str, Any]) -> tuple[str, str]:
    """("alive" | "dead" | "unknown", why) for a registry entry."""
    pid = entry.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return "unknown", "the entry has no valid pid"
    if entry.get("hostname") != _hostname():
        return "unknown", f"it ran on another host ({entry.get('hostname')})"
    ns = _pid_namespace()
    if entry.get("pid_ns") and ns and entry["pid_ns"] != ns:
        return "unknown", "it ran in another pid namespace (another container)"
    boot = _boot_id()
    if entry.get("boot_id") and boot and entry["boot_id"] != boot:
        return "dead", "the host has rebooted since"
    now = process_identity(pid)
    if now is None:
        return "dead", f"pid {pid} is gone"
    if now.state in ("Z", "X"):
        return "dead", f"pid {pid} has exited (a zombie not reaped yet)"
    if entry.get("start_time") is not None and now.start_time is not None and now.start_time != entry["start_time"]:
        return (
            "dead",
            f"pid {pid} now belongs to another process (started at tick {now.start_time}, not {entry['start_time']})",
        )
    return "alive", f"pid {pid} is running"


def same_cluster(a: str, b: str) -> bool:
    """Bootstrap lists name the same cluster when they hold the same servers, in any order."""

    def norm(s: str) -> list[str]:
        return sorted(x.strip().lower() for x in str(s).split(",") if x.strip())

    return bool(norm(a)) and norm(a) == norm(b)


# ------------------------------------------------------------------------------------------- this process

_lock = threading.RLock()
_owned: dict[Path, dict[str, dict[str, Any]]] = {}  # registry dir -> {prefix: {"bootstrap", "since"}}
_swept: set[tuple[Path, str]] = set()
_sweeping: dict[tuple[Path, str], threading.Lock] = {}
_write_failed: set[Path] = set()


def _after_fork_in_child() -> None:
    # A forked child owns nothing: were it to write the parent's prefixes under its own pid, its death would get
    # the parent's live sessions swept.
    global _lock
    _lock = threading.RLock()
    _owned.clear()
    _swept.clear()
    _sweeping.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _file_name(ident: dict[str, Any]) -> str:
    host = re.sub(r"[^A-Za-z0-9._-]", "_", str(ident["hostname"])) or "host"
    return f"{host}-{ident['pid']}-{ident['start_time'] if ident['start_time'] is not None else 'x'}.json"


def own_file(owners_dir: Path | str) -> Path:
    """This process's registry file in `owners_dir` (it exists while the process owns a prefix there)."""
    return Path(owners_dir) / _file_name(_identity_of_this_process())


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())  # after a power cut the file is whole or absent (the boot id then says "dead")
    os.replace(tmp, path)


def _save(owners_dir: Path) -> None:
    """Write this process's entry for `owners_dir` (or remove it when it owns nothing there). Never raises: the
    registry only helps clean up after a crash, a session works without it (a warning says so, once per dir)."""
    prefixes = _owned.get(owners_dir, {})
    ident = _identity_of_this_process()
    path = owners_dir / _file_name(ident)
    try:
        if prefixes:
            owners_dir.mkdir(parents=True, exist_ok=True)
            _write_atomically(path, {"format": FORMAT, **ident, "updated_at": time.time(), "prefixes": prefixes})
        else:
            path.unlink(missing_ok=True)
        _write_failed.discard(owners_dir)
    except OSError as e:
        if owners_dir not in _write_failed:
            _write_failed.add(owners_dir)
            log.warning(
                "cannot record the owned Kafka prefixes in %s (%s): if this process is killed, its sessions' "
                "topics will not be swept",
                owners_dir,
                e,
            )


def register(owners_dir: Path | str, prefix: str, bootstrap: str) -> None:
    """This process owns `prefix` on the cluster `bootstrap` (call before creating anything under it)."""
    d = Path(owners_dir)
    with _lock:
        _owned.setdefault(d, {})[prefix] = {"bootstrap": bootstrap, "since": time.time()}
        _save(d)


def unregister(owners_dir: Path | str, prefix: str) -> None:
    """The topics and groups of `prefix` are deleted: nothing under it is left to sweep."""
    d = Path(owners_dir)
    with _lock:
        if _owned.get(d, {}).pop(prefix, None) is not None:
            _save(d)


def owned(owners_dir: Path | str) -> dict[str, str]:
    """prefix -> bootstrap, what this process owns in `owners_dir` (as recorded)."""
    with _lock:
        return {p: v["bootstrap"] for p, v in _owned.get(Path(owners_dir), {}).items()}


# ------------------------------------------------------------------------------------------- sweeping


@contextlib.contextmanager
def _sweep_lock(owners_dir: Path, timeout_s: float) -> Iterator[bool]:
    """flock(2) on the registry directory's lock file; yields False if another process held it for timeout_s.
    The kernel releases it when its holder dies, so a sweeper killed halfway blocks nobody."""
    fd = os.open(owners_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    yield False
                    return
                time.sleep(0.1)
        yield True
    finally:
        os.close(fd)


def _read_entry(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        log.warning("kafka owners registry: cannot read %s (%s); left alone", path, e)
        return None
    if not isinstance(data, dict) or not isinstance(data.get("prefixes"), dict):
        log.warning("kafka owners registry: %s is not a registry entry; left alone", path)
        return None
    return data


def _kafka_msg(e: BaseException) -> str:
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return f"{e.args[0].name()}: {e.args[0].str()}"
    return f"{type(e).__name__}: {e}"


def _error_code(e: BaseException) -> int | None:
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return e.args[0].code()
    return None


def sweep_dead_owners(
    bootstrap: str,
    client_config: dict[str, Any] | None,
    owners_dir: Path | str,
    timeout_s: float = SWEEP_TIMEOUT_S,
) -> list[dict[str, Any]]:
    """Delete the topics and consumer groups of every prefix that a dead process recorded for this cluster, and
    forget those prefixes. Returns one report per prefix handled: {"prefix", "owner", "reason", "topics",
    "groups", "errors"}. Bounded by `timeout_s`; never raises for a Kafka or file problem (it logs it)."""
    d = Path(owners_dir)
    if not d.is_dir():
        return []
    deadline = time.monotonic() + timeout_s
    reports: list[dict[str, Any]] = []
    try:
        with _sweep_lock(d, min(LOCK_TIMEOUT_S, timeout_s)) as locked:
            if not locked:
                log.warning("kafka owners registry %s: another process is sweeping it; skipped", d)
                return []
            reports = _sweep_locked(d, bootstrap, client_config or {}, deadline)
    except OSError as e:
        log.warning("kafka owners registry %s: %s; nothing swept", d, e)
    return reports


def _sweep_locked(d: Path, bootstrap: str, client: dict[str, Any], deadline: float) -> list[dict[str, Any]]:
    dead: list[tuple[Path, dict[str, Any], str, list[str]]] = []  # file, entry, why dead, its prefixes here
    for path in sorted(d.glob("*.json")):
        entry = _read_entry(path)
        if entry is None:
            continue
        state, why = owner_state(entry)
        if state != "dead":
            continue
        mine = []
        for prefix, info in list(entry["prefixes"].items()):
            if not PREFIX_RE.match(str(prefix)):
                # a name this code never records: sweeping it could match other sessions' topics (or all of them)
                log.warning(
                    "kafka owners registry: %s records %r, not a session prefix; dropped without deleting anything",
                    path.name,
                    prefix,
                )
                entry["prefixes"].pop(prefix)
                continue
            if isinstance(info, dict) and same_cluster(str(info.get("bootstrap", "")), bootstrap):
                mine.append(prefix)
        dead.append((path, entry, why, mine))
    if not dead:
        return []
    wanted = [p for _, _, _, mine in dead for p in mine]
    done: set[str] = set()
    reports: list[dict[str, Any]] = []
    if wanted:
        found = _delete_prefixes(wanted, bootstrap, client, deadline)
        for _path, entry, why, mine in dead:
            owner = f"{entry.get('hostname')}/{entry.get('pid')}"
            for prefix in mine:
                r = found[prefix]
                reports.append({"prefix": prefix, "owner": owner, "reason": why, **r})
                if r["errors"]:
                    log.warning(
                        "kafka: sweeping prefix %s of dead server process %s (%s) on %s failed, kept for the next "
                        "sweep: %s (deleted topics: %s; consumer groups: %s)",
                        prefix,
                        owner,
                        why,
                        bootstrap,
                        "; ".join(r["errors"][:3]),
                        ", ".join(r["topics"]) or "none",
                        ", ".join(r["groups"]) or "none",
                    )
                else:
                    done.add(prefix)
                    log.warning(
                        "kafka: swept prefix %s of dead server process %s (%s) on %s: deleted topics: %s; "
                        "consumer groups: %s",
                        prefix,
                        owner,
                        why,
                        bootstrap,
                        ", ".join(r["topics"]) or "none",
                        ", ".join(r["groups"]) or "none",
                    )
    for path, entry, _why, mine in dead:
        for prefix in mine:
            if prefix in done:
                entry["prefixes"].pop(prefix, None)
        try:
            if entry["prefixes"]:
                _write_atomically(path, entry)  # what is left belongs to other clusters, or failed
            else:
                path.unlink(missing_ok=True)
            path.with_name(path.name + ".tmp").unlink(missing_ok=True)  # a write the owner's death cut short
        except OSError as e:
            log.warning("kafka owners registry: cannot update %s: %s", path, e)
    return reports


def _delete_prefixes(
    prefixes: list[str], bootstrap: str, client: dict[str, Any], deadline: float
) -> dict[str, dict[str, Any]]:
    """{prefix: {"topics": deleted, "groups": deleted, "errors": [...]}}: what KafkaBackend.close() deletes for a
    prefix (every topic and consumer group under it), found by listing the cluster, since the dead process cannot
    say which names it used."""
    out: dict[str, dict[str, Any]] = {p: {"topics": [], "groups": [], "errors": []} for p in prefixes}

    def left() -> float:
        return max(0.5, min(REQUEST_TIMEOUT_S, deadline - time.monotonic()))

    def owner_of(name: str) -> str | None:
        for p in prefixes:
            if name.startswith(p):
                return p
        return None

    def owner(name: str) -> str:  # a name listed because owner_of() found its prefix
        return next(p for p in prefixes if name.startswith(p))

    conf = {
        "bootstrap.servers": bootstrap,
        **{
            k: v for k, v in client.items() if k not in ("bootstrap.servers", "metadata.broker.list", "debug", "logger")
        },
        "logger": _quiet,
        "socket.connection.setup.timeout.ms": 3000,
        "reconnect.backoff.max.ms": 1000,
    }
    try:
        admin = AdminClient(conf)
        topics = sorted(t for t in admin.list_topics(timeout=left()).topics if owner_of(t))
        listing = admin.list_consumer_groups(request_timeout=left()).result(timeout=left() + 1)
        groups = sorted(g.group_id for g in listing.valid if owner_of(g.group_id))
    except Exception as e:
        for r in out.values():
            r["errors"].append(f"listing the cluster: {_kafka_msg(e)}")
        return out
    if topics:
        try:
            futures = admin.delete_topics(topics, operation_timeout=left(), request_timeout=left())
        except Exception as e:
            futures = {}
            for t in topics:
                out[owner(t)]["errors"].append(f"deleting {t}: {_kafka_msg(e)}")
        for t, fut in futures.items():
            try:
                fut.result(timeout=left() + 1)
                out[owner(t)]["topics"].append(t)
            except Exception as e:
                if _error_code(e) == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue  # deleted meanwhile (by whom does not matter)
                out[owner(t)]["errors"].append(f"deleting topic {t}: {_kafka_msg(e)}")
    if groups:
        try:
            futures = admin.delete_consumer_groups(groups, request_timeout=left())
        except Exception as e:
            futures = {}
            for g in groups:
                out[owner(g)]["errors"].append(f"deleting group {g}: {_kafka_msg(e)}")
        for g, fut in futures.items():
            try:
                fut.result(timeout=left() + 1)
                out[owner(g)]["groups"].append(g)
            except Exception as e:
                if _error_code(e) == KafkaError.GROUP_ID_NOT_FOUND:
                    continue
                out[owner(g)]["errors"].append(f"deleting group {g}: {_kafka_msg(e)}")
    return out


def sweep_once(bootstrap: str, client_config: dict[str, Any] | None, owners_dir: Path | str) -> list[dict[str, Any]]:
    """sweep_dead_owners() the first time a process asks for this registry and cluster; later calls return []
    at once (concurrent first calls wait for the one that sweeps). Never raises."""
    key = (Path(owners_dir), ",".join(sorted(x.strip().lower() for x in bootstrap.split(",") if x.strip())))
    with _lock:
        gate = _sweeping.setdefault(key, threading.Lock())
    with gate:
        with _lock:
            if key in _swept:
                return []
            _swept.add(key)
        try:
            return sweep_dead_owners(bootstrap, client_config, owners_dir)
        except Exception:
            log.exception("kafka owners registry: the sweep failed")
            return []


def sweep_at_startup(background: bool = True) -> threading.Thread | list[dict[str, Any]] | None:
    """For the server's start-up (e.g. at the end of playground/asgi.py): sweep the dead owners' prefixes on every
    configured cluster (one per profile's Kafka version, clusters.SETTINGS). By default in a daemon thread, so
    start-up does not wait for the clusters (returns the thread); `background=False` sweeps now and returns the
    reports. None when no cluster is configured."""
    targets: list[tuple[Any, ...]] = []
    for kafka in SETTINGS:
        s = kafka_settings(kafka)
        if s["bootstrap"] and all(t[0] != s["bootstrap"] for t in targets):
            targets.append((s["bootstrap"], s["client"], s["owners_dir"]))
    if not targets:
        return None

    def sweep_all() -> list[dict[str, Any]]:
        return [report for args in targets for report in sweep_once(*args)]

    if not background:
        return sweep_all()
    t = threading.Thread(target=sweep_all, name="kafka-owners-sweep", daemon=True)
    t.start()
    return t
