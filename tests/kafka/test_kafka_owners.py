"""The owners registry against the real broker (playground/kafka/owners.py): a server process killed with SIGKILL
runs no close(), and Kafka never deletes a topic by itself; the next backend deletes what the dead process owned,
and never what a live one owns.

The "server processes" here are real ones: a child Python process that opens a KafkaBackend session (topics, a
producer, a consumer group with a committed offset) and then either waits to be killed or closes on request. Each
test uses a registry directory of its own (tmp_path), so nothing else's entries are involved, and every wait is
bounded.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from playground.engine.spec import ActorSpec, ClusterSpec, TopicSpec
from playground.kafka import owners
from playground.kafka.backend import KafkaBackend
from playground.kafka.observer import Observer
from tests.kafkatopics import listed_everywhere

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parents[2]
CHILD_READY_S = 90.0  # spawn, import confluent_kafka, two workers, create topics, produce, poll, commit
GONE_S = 20.0

# A server process in miniature: a session whose topics, group and registry entry exist, then "hold" (close when a
# line arrives on stdin) or "wait" (until killed). It prints one JSON line once everything exists.
CHILD = """
import json, os, sys, time
from playground.kafka.backend import KafkaBackend
from playground.engine.spec import ActorSpec, ClusterSpec, Step, TopicSpec

bootstrap, owners_dir, mode = sys.argv[1:4]
cluster = ClusterSpec(brokers=1, config={}, topics=(TopicSpec("orders", 2), TopicSpec("audit", 1)))
actors = {
    "A": ActorSpec("A", "producer", {"enable.idempotence": True}),
    "in": ActorSpec("in", "consumer", {"isolation.level": "read_committed", "group.id": "readers"}, ("orders",)),
}
b = KafkaBackend(cluster, actors, settings={"bootstrap": bootstrap, "owners_dir": owners_dir})
for step in (Step("A", "produce", {"topic": "orders", "partition": 0, "value": "x"}), Step("in", "poll", {}),
             Step("in", "commit", {})):
    outcome = b.apply(step)
    assert outcome == "ok", (step, outcome)
print(json.dumps({"prefix": b.prefix, "pid": os.getpid()}), flush=True)
if mode == "hold":
    sys.stdin.readline()
    b.close()
    print(json.dumps({"closed": True}), flush=True)
else:
    time.sleep(600)
"""


class Child:
    """A child server process; its stdout lines are read by a thread, so every wait has a deadline."""

    def __init__(self, bootstrap: str, owners_dir: Path, mode: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("DJANGO_SETTINGS_MODULE", None)  # the cluster and the registry come from its arguments only
        self.log = owners_dir / f"child-{mode}.log"  # a file, not a pipe: a chatty child never blocks on it
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", CHILD, bootstrap, str(owners_dir), mode],
                cwd=ROOT,
                env=env,
                text=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def message(self, timeout_s: float) -> dict:
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            line = None
        if line is None:
            self.stop()
            pytest.fail(
                f"the child server process said nothing within {timeout_s} s (exit {self.proc.returncode}):\n"
                f"{self.log.read_text(errors='replace')[-3000:]}",
                pytrace=False,
            )
        return json.loads(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def topics_of(admin: AdminClient, prefix: str) -> set[str]:
    return {t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)}


def groups_of(admin: AdminClient, prefix: str) -> set[str]:
    return {
        g.group_id
        for g in admin.list_consumer_groups(request_timeout=10).result(timeout=11).valid
        if g.group_id.startswith(prefix)
    }


def wait_gone(admin: AdminClient, prefix: str) -> set[str]:
    """What is still listed under `prefix` after at most GONE_S (a deletion reaches every broker's metadata soon,
    not at once)."""
    deadline = time.monotonic() + GONE_S
    while True:
        left = topics_of(admin, prefix) | groups_of(admin, prefix)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.3)


def wait_listed(admin: AdminClient, prefix: str, expected: set[str]) -> set[str]:
    """The topics listed under `prefix` once they are `expected`, or after GONE_S: a topic just created reaches
    every broker's metadata soon, not at once, and the admin client may ask a broker that has not heard yet."""
    deadline = time.monotonic() + GONE_S
    while True:
        listed = topics_of(admin, prefix)
        if listed == expected or time.monotonic() > deadline:
            return listed
        time.sleep(0.3)


def entry_files(owners_dir: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in owners_dir.glob("*.json")}


def fake_entry(owners_dir: Path, pid: int, start_time: int | None, prefixes: dict[str, str], **overrides) -> Path:
    """A registry entry as owners.py writes it, for a process that is not this one."""
    entry = {
        "format": owners.FORMAT,
        "hostname": owners._hostname(),
        "pid": pid,
        "start_time": start_time,
        "boot_id": owners._boot_id(),
        "pid_ns": owners._pid_namespace(),
        "updated_at": time.time(),
        "prefixes": {p: {"bootstrap": b, "since": time.time()} for p, b in prefixes.items()},
        **overrides,
    }
    path = owners_dir / f"{entry['hostname']}-{pid}-{start_time}-{secrets.token_hex(2)}.json"
    path.write_text(json.dumps(entry))
    return path


def make_topics(bootstrap: str, prefix: str, *names: str) -> None:
    """The topics, created and listed by every broker: a sweep right after asks any one of them (a dead process's
    topics were created long before)."""
    obs = Observer(bootstrap, {}, prefix)
    try:
        obs.create_topics({prefix + n: 1 for n in names}, 1)
    finally:
        obs.close()
    listed_everywhere(bootstrap, {prefix + n for n in names})


def drop_topics(bootstrap: str, prefix: str, *names: str) -> None:
    obs = Observer(bootstrap, {}, prefix)
    try:
        obs.delete_session([prefix + n for n in names], [], timeout_s=10)
    finally:
        obs.close()


def test_it_sweeps_what_a_server_process_killed_with_sigkill_left_behind(
    settings, tmp_path, admin, kafka_bootstrap, caplog
):
    t0 = time.monotonic()
    settings.KAFKA_OWNERS_DIR = str(tmp_path)
    child = Child(kafka_bootstrap, tmp_path, "wait")
    try:
        info = child.message(CHILD_READY_S)
        prefix, pid = info["prefix"], info["pid"]
        [(name, entry)] = entry_files(tmp_path).items()  # recorded before its topics were created
        assert (entry["pid"], entry["hostname"]) == (pid, owners._hostname())
        assert entry["start_time"] == owners.process_identity(pid).start_time
        assert entry["prefixes"][prefix]["bootstrap"] == kafka_bootstrap
        os.kill(pid, signal.SIGKILL)  # no close(), no atexit: exactly what kill -9 does to the server
        child.proc.wait(timeout=10)
    finally:
        child.stop()
    left = {prefix + "orders", prefix + "audit"}
    assert wait_listed(admin, prefix, left) == left  # nobody deleted them: the leak this test is about
    assert groups_of(admin, prefix) == {prefix + "readers"}
    assert owners.owner_state(entry)[0] == "dead"

    caplog.set_level(logging.INFO, logger="playground.kafka.owners")
    cluster = ClusterSpec(brokers=1, config={}, topics=(TopicSpec("orders", 1),))
    b = KafkaBackend(cluster, {"A": ActorSpec("A", "producer", {"enable.idempotence": True})})  # the successor
    try:
        assert wait_gone(admin, prefix) == set()
        assert not (tmp_path / name).exists()
        # what the successor owns now is recorded under its own pid: only its prefix
        assert [e["prefixes"].keys() for e in entry_files(tmp_path).values()] == [{b.prefix}]
        assert wait_listed(admin, b.prefix, {b.prefix + "orders"}) == {b.prefix + "orders"}
    finally:
        b.close()
    assert entry_files(tmp_path) == {}  # closed: this process owns nothing here any more
    swept = [r.getMessage() for r in caplog.records if r.name == "playground.kafka.owners" and prefix in r.getMessage()]
    assert len(swept) == 1, swept
    assert f"swept prefix {prefix} of dead server process {owners._hostname()}/{pid} (pid {pid} is gone)" in swept[0]
    # Kafka drops a group left without members or offsets once its topics are deleted (the group coordinator's
    # cleanup of deleted partitions): when that comes between the sweep's listing and its DeleteGroups, the group is
    # gone first (GROUP_ID_NOT_FOUND) and the sweep deleted none itself. Either way nothing is left (wait_gone above).
    deleted = f"deleted topics: {prefix}audit, {prefix}orders; consumer groups: "
    assert deleted + f"{prefix}readers" in swept[0] or deleted + "none" in swept[0], swept[0]
    assert time.monotonic() - t0 < 120


def test_it_never_sweeps_the_prefixes_of_a_live_process(settings, tmp_path, admin, kafka_bootstrap):
    t0 = time.monotonic()
    settings.KAFKA_OWNERS_DIR = str(tmp_path)
    child = Child(kafka_bootstrap, tmp_path, "hold")
    try:
        info = child.message(CHILD_READY_S)
        prefix, pid = info["prefix"], info["pid"]
        mine = {prefix + "orders", prefix + "audit", prefix + "readers"}
        # the server's start-up sweep (what playground/asgi.py may call) and a direct one: both leave it alone
        thread = owners.sweep_at_startup()
        thread.join(timeout=30)
        assert not thread.is_alive()
        assert owners.sweep_dead_owners(kafka_bootstrap, {}, tmp_path) == []
        assert topics_of(admin, prefix) | groups_of(admin, prefix) == mine
        [entry] = entry_files(tmp_path).values()
        assert entry["pid"] == pid and list(entry["prefixes"]) == [prefix]
        # now it closes normally: it deletes its own topics and forgets its prefix
        child.proc.stdin.write("close\n")
        child.proc.stdin.flush()
        assert child.message(60) == {"closed": True}
        assert child.proc.wait(timeout=30) == 0
    finally:
        child.stop()
    assert wait_gone(admin, prefix) == set()  # its topics and its group
    assert entry_files(tmp_path) == {}
    assert time.monotonic() - t0 < 120


def test_it_treats_an_entry_whose_pid_now_belongs_to_another_process_as_dead(tmp_path, admin, kafka_bootstrap, caplog):
    reused, live = f"pg-{secrets.token_hex(4)}-", f"pg-{secrets.token_hex(4)}-"
    other = subprocess.Popen(["sleep", "60"])  # a live process holding the pid the dead owner had
    try:
        now = owners.process_identity(other.pid)
        assert now is not None and now.start_time is not None
        make_topics(kafka_bootstrap, reused, "orders")
        make_topics(kafka_bootstrap, live, "orders")
        # the owner that had this pid before started at another time: the pid was reused, the owner is dead
        gone = fake_entry(tmp_path, other.pid, now.start_time - 1, {reused: kafka_bootstrap})
        running = fake_entry(tmp_path, other.pid, now.start_time, {live: kafka_bootstrap})
        caplog.set_level(logging.INFO, logger="playground.kafka.owners")
        reports = owners.sweep_dead_owners(kafka_bootstrap, {}, tmp_path, timeout_s=20)
        assert [(r["prefix"], r["topics"], r["errors"]) for r in reports] == [(reused, [reused + "orders"], [])]
        assert "now belongs to another process" in reports[0]["reason"]
        assert wait_gone(admin, reused) == set()
        assert wait_listed(admin, live, {live + "orders"}) == {live + "orders"}
        assert not gone.exists() and running.exists()
        assert any(reused + "orders" in r.getMessage() for r in caplog.records if r.name == "playground.kafka.owners")
    finally:
        other.kill()
        other.wait(timeout=10)
        drop_topics(kafka_bootstrap, live, "orders")


def test_it_touches_only_this_clusters_prefixes_of_this_host(tmp_path, admin, kafka_bootstrap):
    dead = subprocess.Popen(["sleep", "60"])
    ident = owners.process_identity(dead.pid)
    dead.kill()
    dead.wait(timeout=10)
    other_cluster, other_host, ours = (f"pg-{secrets.token_hex(4)}-" for _ in range(3))
    try:
        for p in (other_cluster, other_host, ours):
            make_topics(kafka_bootstrap, p, "orders")
        entries = [
            # the same names may exist on this cluster, but the dead process used them on another one
            fake_entry(tmp_path, dead.pid, ident.start_time, {other_cluster: "127.0.0.1:1"}),
            # a process on another host cannot be checked from here
            fake_entry(tmp_path, dead.pid, ident.start_time, {other_host: kafka_bootstrap}, hostname="elsewhere"),
            # never a name that is not a session prefix ("pg-" would match every session's topics)
            fake_entry(
                tmp_path,
                dead.pid,
                ident.start_time,
                {"pg-": kafka_bootstrap, "": kafka_bootstrap, ours: ",".join(reversed(kafka_bootstrap.split(",")))},
            ),
        ]
        reports = owners.sweep_dead_owners(kafka_bootstrap, {}, tmp_path, timeout_s=20)
        assert [r["prefix"] for r in reports] == [ours]  # the bootstrap list in another order is the same cluster
        assert wait_gone(admin, ours) == set()
        assert wait_listed(admin, other_cluster, {other_cluster + "orders"}) == {other_cluster + "orders"}
        assert wait_listed(admin, other_host, {other_host + "orders"}) == {other_host + "orders"}
        assert json.loads(entries[0].read_text())["prefixes"].keys() == {other_cluster}
        assert json.loads(entries[1].read_text())["prefixes"].keys() == {other_host}
        assert not entries[2].exists()
    finally:
        for p in (other_cluster, other_host):
            drop_topics(kafka_bootstrap, p, "orders")
