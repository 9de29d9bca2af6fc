"""Failover of a workshop served by two Daphne processes behind one address (Debian's nginx in front:
playground/procs.start_nginx), sharing one database and one Redis: when one process dies (SIGKILL) or Redis
restarts, every page must be live again within 5 s, and no command may be lost or stored twice.

The pages are websocket viewers (tests/wsviewer.py) that reconnect as the page's htmx ws extension does: after an
abnormal close, a random wait of up to 1 s, then up to 2 s, 4 s... between tries. Commands go through the proxy as
the page's buttons send them (form POSTs, tests/web/http.py), from the session's creator (it holds the drive
cookie).

Marked `redis`: in CI these run and never skip; a missing redis-server or nginx fails, naming the package.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from playground.deploy import procs
from playground.session import capability
from tests.wsviewer import ClientConnection, ConnectionClosed, frames_until, open_viewer, reconnect

from .http import Browserish

pytestmark = [pytest.mark.redis]

RECOVERY_S = 5.0  # the requirement: every page live again within 5 s
FAKE = {"PLAYGROUND_DEFAULT_BACKEND": "fake", "PLAYGROUND_BACKENDS": "fake=tests.web.fake_backend:FakeBackend"}
VERSION = re.compile(r'id="state-version" data-version="(\d+)"')


@dataclass
class Workshop:
    redis: procs.Proc
    servers: list[procs.Proc]
    proxy: procs.Proc

    def viewer(self, sid: str) -> ClientConnection:
        return open_viewer(self.proxy.url, sid)


@pytest.fixture
def workshop(tmp_path):
    """Redis, two Daphne processes on one SQLite file, nginx in front. A Redis of its own (not the suite's shared
    redis_server): these tests restart it."""
    started: list[procs.Proc] = []
    try:
        redis = procs.start_redis(tmp_path / "redis")
        started.append(redis)
        env = procs.django_env(tmp_path / "shared.sqlite3", redis.extra["url"], **FAKE)
        procs.migrate(env)
        servers = [procs.start_daphne(env, tmp_path) for _ in range(2)]
        started += servers
        started.append(procs.start_nginx(servers, tmp_path))
    except RuntimeError as exc:  # redis-server or nginx missing (the message names the package), or one did not start
        for p in reversed(started):
            p.stop()
        pytest.fail(str(exc))
    yield Workshop(redis, servers, started[-1])
    for p in reversed(started):
        p.stop()


def upstream_port(ws: ClientConnection) -> int:
    """The Daphne process behind a viewer: nginx's X-Upstream on the 101 (the last address when it tried several)."""
    return int(ws.response.headers["X-Upstream"].split(",")[-1].strip().rsplit(":", 1)[1])


def version_of(frame: str) -> int | None:
    m = VERSION.search(frame)
    return int(m.group(1)) if m else None


def session_log(base: str, sid: str) -> dict:
    status, body = Browserish(base).get(f"/s/{sid}/log.json")
    assert status == 200, (status, body[:300])
    return json.loads(body)


def produced_values(log: dict) -> list[str]:
    return [
        e["step"]["A.produce"]["value"]
        for e in log["commands"]
        if isinstance(e.get("step"), dict) and "A.produce" in e["step"]
    ]


def produce(driver: Browserish, sid: str, value: str, partition: int) -> int | None:
    """One click on "produce"; the HTTP status, or None when the request itself failed."""
    try:
        return driver.post(
            f"/s/{sid}/produce/", {"actor": "A", "topic": "orders", "partition": str(partition), "value": value}
        )[0]
    except OSError:
        return None


def new_session(workshop: Workshop, mode: str = "new") -> tuple[Browserish, str]:
    driver = Browserish(workshop.proxy.url)
    sid = driver.new_session("")
    assert driver.post(f"/s/{sid}/add-producer/", {"mode": mode})[0] == 204
    return driver, sid


def test_it_moves_every_viewer_to_the_surviving_process_within_5_s(workshop):
    driver, sid = new_session(workshop)
    assert driver.post(f"/s/{sid}/action/", {"actor": "A", "action": "init_transactions"})[0] == 204
    assert driver.post(f"/s/{sid}/action/", {"actor": "A", "action": "begin_transaction"})[0] == 204
    for p in range(3):
        assert produce(driver, sid, f"before-{p}", p) == 204
    before = session_log(workshop.proxy.url, sid)

    viewers = [workshop.viewer(sid) for _ in range(6)]
    for ws in viewers:
        assert version_of(ws.recv(timeout=10)) == before["version"]
    victim, survivor = workshop.servers
    on_victim = [i for i, ws in enumerate(viewers) if upstream_port(ws) == victim.port]
    # nginx put viewers on both processes (fewest open connections first); otherwise the kill would test nothing
    # (or everything).
    assert 0 < len(on_victim) < len(viewers), [upstream_port(ws) for ws in viewers]

    killed_at = time.monotonic()
    victim.kill()

    def back_again(i: int) -> tuple[ClientConnection, str, float, int]:
        """A page: its socket on the dead process closes (nginx closes it: the browser sees 1006), then it
        reconnects as htmx would, through the same address. Viewers on the survivor must stay connected."""
        ws = viewers[i]
        if i not in on_victim:
            try:
                ws.recv(timeout=1.0)
            except TimeoutError:
                return ws, "", 0.0, 0
            except ConnectionClosed:
                raise AssertionError(f"viewer {i} on the surviving process was disconnected") from None
            raise AssertionError(f"viewer {i} on the surviving process got a frame though nothing changed")
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=RECOVERY_S)  # not a TimeoutError: the page learns at once that its socket is gone
        new, snapshot, tries = reconnect(lambda: workshop.viewer(sid), killed_at + RECOVERY_S, random.Random(i))
        return new, snapshot, time.monotonic() - killed_at, tries

    with ThreadPoolExecutor(len(viewers)) as pool:
        results = list(pool.map(back_again, range(len(viewers))))
    viewers = [r[0] for r in results]
    took = {i: round(results[i][2], 2) for i in on_victim}
    assert all(t < RECOVERY_S for t in took.values()), took
    for i in on_victim:
        snapshot = results[i][1]
        # The right state: the session as it was (nothing was lost with the process), from the survivor.
        assert upstream_port(viewers[i]) == survivor.port
        assert version_of(snapshot) == before["version"], (i, version_of(snapshot))
        assert 'data-producer="A"' in snapshot and all(f"before-{p}" in snapshot for p in range(3))

    # Commands go on through the same address: nginx skips the dead process (refused connect -> next server,
    # then out of rotation for fail_timeout). Every one is stored once and reaches every viewer.
    for p in range(3):
        assert produce(driver, sid, f"after-{p}", p) == 204
    assert driver.post(f"/s/{sid}/action/", {"actor": "A", "action": "commit_transaction"})[0] == 204
    final = session_log(workshop.proxy.url, sid)
    for ws in viewers:
        frames_until(ws, f'data-version="{final["version"]}"', timeout=RECOVERY_S)
        ws.close()
    # The whole log, each command exactly once and in order (the first entry is the producer's "add").
    produced = [
        {"A.produce": {"topic": "orders", "partition": p, "value": f"{when}-{p}"}}
        for when in ("before", "after")
        for p in range(3)
    ]
    assert [e.get("step") for e in final["commands"][1:]] == [
        "A.init_transactions",
        "A.begin_transaction",
        *produced[:3],
        *produced[3:],
        "A.commit_transaction",
    ]
    assert final["version"] == before["version"] + 4
    print(
        f"\nviewers on the killed process back after {sorted(took.values())} s "
        f"(tries: {[results[i][3] for i in on_victim]})"
    )


def test_it_stores_each_command_at_most_once_when_a_process_dies_under_it(workshop):
    """A driver clicking every 50 ms while a process is killed: a POST that reached the dying process gets an error
    (nginx does not send a POST again once sent: it may have been stored), every other one is stored exactly once
    on whichever process took it, and nothing is stored twice."""
    driver, sid = new_session(workshop, mode="plain")
    sent: list[tuple[str, int | None]] = []
    stop = threading.Event()

    def keep_clicking() -> None:
        i = 0
        while not stop.is_set():
            value = f"click-{i}"
            sent.append((value, produce(driver, sid, value, i % 3)))
            i += 1
            time.sleep(0.05)

    def answered(at_least: int, deadline_s: float) -> None:
        # Counted in answers, not seconds: a loaded machine slows the clicks, it must not shorten the test.
        until = time.monotonic() + deadline_s
        while len(sent) < at_least and time.monotonic() < until:
            time.sleep(0.05)

    clicker = threading.Thread(target=keep_clicking)
    clicker.start()
    try:
        answered(10, 60)
        workshop.servers[0].kill()
        answered(len(sent) + 20, 60)
    finally:
        stop.set()
        clicker.join(timeout=30)
    stored = produced_values(session_log(workshop.proxy.url, sid))
    ok = [v for v, status in sent if status == 204]
    failed = [(v, status) for v, status in sent if status != 204]
    assert len(stored) == len(set(stored)), "a command was stored twice"
    assert set(ok) <= set(stored), sorted(set(ok) - set(stored))
    assert set(stored) <= {v for v, _ in sent}
    # Only a request caught in flight by the kill may fail; commands before and after it all went through.
    assert len(failed) <= 2, failed
    assert len(ok) >= 28, len(ok)
    print(
        f"\n{len(sent)} clicks: {len(ok)} stored with 204, failed: {failed} "
        f"(stored anyway: {[v for v, _ in failed if v in stored]})"
    )


def _drain_versions(ws: ClientConnection) -> list[int]:
    """Versions of the frames this viewer received so far (without waiting)."""
    seen = []
    try:
        while True:
            v = version_of(ws.recv(timeout=0))
            if v is not None:
                seen.append(v)
    except TimeoutError:
        return seen


@pytest.mark.parametrize("crash", [False, True], ids=["restart", "crash"])
def test_it_delivers_updates_again_within_5_s_after_redis_restarts(workshop, crash):
    """A restart (SIGTERM) or a crash (SIGKILL) of Redis, down for 1 s, then back on the same port."""
    driver, sid = new_session(workshop, mode="plain")
    assert produce(driver, sid, "before", 0) == 204
    viewers = [workshop.viewer(sid) for _ in range(4)]
    for ws in viewers:
        ws.recv(timeout=10)
    assert {upstream_port(ws) for ws in viewers} == {s.port for s in workshop.servers}
    assert produce(driver, sid, "baseline", 0) == 204
    for ws in viewers:  # the channel layer works across processes before the restart
        frames_until(ws, "baseline", timeout=RECOVERY_S)

    # A command while Redis is down: posted from a thread, as the restart runs here (procs' servers must be started
    # from a thread that outlives them: Linux sends the child SIGTERM when the thread that started it ends).
    during: list[int | None] = []
    clicker = threading.Thread(target=lambda: (time.sleep(0.3), during.append(produce(driver, sid, "during", 1))))
    clicker.start()
    procs.restart_redis(workshop.redis, kill=crash, down_for=1.0)
    back_at = time.monotonic()
    clicker.join(timeout=30)
    assert during == [204], "a command while Redis is down is still taken (and stored): only its broadcast is lost"

    # Then a click every 250 ms until every page has had an update, as a trainer would go on. A page whose socket
    # closes reconnects as htmx would (its snapshot is an update too).
    updated: dict[int, float] = {}
    reconnected: set[int] = set()
    rng = random.Random(7)
    k = 0
    while len(updated) < len(viewers) and time.monotonic() < back_at + RECOVERY_S:
        assert produce(driver, sid, f"after-{k}", 2) == 204
        k += 1
        time.sleep(0.25)
        for i, ws in enumerate(viewers):
            if i in updated:
                continue
            try:
                if _drain_versions(ws):
                    updated[i] = time.monotonic() - back_at
            except ConnectionClosed:
                viewers[i], _snapshot, _tries = reconnect(lambda: workshop.viewer(sid), back_at + RECOVERY_S, rng)
                reconnected.add(i)
                updated[i] = time.monotonic() - back_at
    assert len(updated) == len(viewers), (
        f"pages without an update {RECOVERY_S} s after Redis came back: "
        f"{sorted(set(range(len(viewers))) - set(updated))}"
    )
    # Every command around the restart is stored once, in order: the database never depended on Redis.
    log = session_log(workshop.proxy.url, sid)
    assert produced_values(log) == ["before", "baseline", "during"] + [f"after-{i}" for i in range(k)]
    # A page that (re)connects now gets everything, the command whose broadcast was lost included.
    fresh = workshop.viewer(sid)
    snapshot = fresh.recv(timeout=10)
    assert version_of(snapshot) == log["version"] and "during" in snapshot
    for ws in [*viewers, fresh]:
        ws.close()
    print(
        f"\nafter Redis came back: updates again after {sorted(round(t, 2) for t in updated.values())} s; "
        f"{len(reconnected)} of {len(viewers)} pages had to reconnect; {k} clicks"
    )


def _page_like(ws, seen: list[str], shown: dict) -> None:
    """Read what the server pushed, as the page does (static/js/playground.js): a frame of differences whose
    data-base is not the version the page shows means a frame was lost: ask for a snapshot."""
    try:
        while True:
            frame = ws.recv(timeout=0)
            seen.append(frame)
            m = re.search(r'id="state-version" data-version="(\d+)"(?: data-base="(\d+)")?', frame)
            if m:
                if m.group(2) is not None and shown.get("v") is not None and m.group(2) != shown["v"]:
                    ws.send('{"type": "snapshot"}')
                shown["v"] = m.group(1)
    except TimeoutError:
        pass


def test_it_brings_connected_pages_up_to_date_after_redis_lost_an_update(workshop):
    """A command whose broadcast Redis lost (down, or back but not yet resubscribed): pages that stayed connected
    notice the gap in versions at the next update and ask for the whole state, so they show it."""
    creator, sid = new_session(workshop, mode="plain")
    # Commands to one process (not round robin): each of its updates is then a diff against its previous one.
    driver = Browserish(workshop.servers[0].url)
    assert driver.post(f"/s/{sid}/claim/", {"key": creator.cookie(capability.cookie_name(sid))})[0] == 204
    assert produce(driver, sid, "before", 0) == 204
    viewers = [workshop.viewer(sid) for _ in range(2)]
    shown = [{"v": str(version_of(ws.recv(timeout=10)))} for ws in viewers]
    clicker = threading.Thread(target=lambda: (time.sleep(0.3), produce(driver, sid, "during", 1)))
    clicker.start()
    procs.restart_redis(workshop.redis, down_for=1.0)
    clicker.join(timeout=30)
    frames: dict[int, list[str]] = {i: [] for i in range(len(viewers))}
    deadline = time.monotonic() + RECOVERY_S
    k = 0

    def current(i: int) -> bool:  # partition 1's strip, re-sent with the record of the lost update
        return any('id="strip-orders-1"' in f and "during" in f.split('id="strip-orders-1"', 1)[1] for f in frames[i])

    while time.monotonic() < deadline and not all(current(i) for i in frames):
        assert produce(driver, sid, f"after-{k}", 2) == 204
        k += 1
        time.sleep(0.25)
        for i, ws in enumerate(viewers):
            _page_like(ws, frames[i], shown[i])
    assert all(frames.values()), "no update at all after the restart"
    assert "during" in produced_values(session_log(workshop.proxy.url, sid))
    for i in frames:
        # The partition the lost update changed reaches the page again, with what it holds now.
        assert current(i), f"viewer {i}: partition 1 never re-sent after the restart; it still lacks 'during'"


def test_it_takes_over_a_run_whose_process_died_within_10_s(workshop, tmp_path):
    """ "run" pressed on one process, which is then killed: the survivor (it serves a page of the session, so its
    watchdog is up) sees the run's heartbeat go stale and carries on with the steps."""
    creator = Browserish(workshop.proxy.url)
    sid = creator.new_session("zombie-fencing")
    runner = Browserish(workshop.servers[0].url)
    assert runner.post(f"/s/{sid}/claim/", {"key": creator.cookie(capability.cookie_name(sid))})[0] == 204
    survivor_page = open_viewer(workshop.servers[1].url, sid)  # a page served by the other process
    survivor_page.recv(timeout=10)
    assert runner.post(f"/s/{sid}/run/")[0] == 204
    time.sleep(0.5)
    before = session_log(workshop.proxy.url, sid)["commands"]
    workshop.servers[0].kill()
    killed_at = time.monotonic()
    deadline = killed_at + 10
    log = session_log(workshop.servers[1].url, sid)
    while time.monotonic() < deadline and len(log["commands"]) <= len(before) + 1:
        time.sleep(0.25)
        log = session_log(workshop.servers[1].url, sid)
    taken_over = time.monotonic() - killed_at
    assert len(log["commands"]) > len(before) + 1, (
        f"the run did not go on within 10 s ({len(log['commands'])} commands)"
    )
    print(f"\nrun taken over {taken_over:.1f} s after its process died")
    survivor_page.close()
