"""Connect your own app (issue 16): a session's listener serves its simulated brokers to real clients (confluent-kafka
here), what they do is in the session's command log, and the log replays it anywhere: in another process with other
string hashes, at an earlier step, in a fork, as a scenario. The listener's bounds: who may start it (HTTP and
websocket), production mode, listeners per client and per server, connections, the host, idle time."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from channels.testing import WebsocketCommunicator
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from django.db import OperationalError
from django.test import Client

from playground import session
from playground.asgi import application
from playground.engine.spec import Step
from playground.models import Command
from playground.session import capability, external, listener
from playground.web import broadcast

from .conftest import hold

pytestmark = [pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
QUIET = {"logger": logging.getLogger("listener-tests")}
CAP_S = 30.0  # generous: a loaded machine


def wait_for(condition, what: str, cap_s: float = CAP_S):
    deadline = time.monotonic() + cap_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {cap_s:.0f} s: {what}")


@pytest.fixture(autouse=True)
def _listeners():
    yield
    for sid in list(listener.LISTENERS):
        lst = listener.LISTENERS.get(sid)
        if lst is not None:
            listener._forget(lst)
            listener._the_loop().run(lst.shut())
    listener.drain()  # nothing of theirs writes to the database while it is emptied for the next test


def listen(client: Client, sid: str) -> str:
    r = client.post(f"/s/{sid}/listen/")
    assert r.status_code == 200, r.content
    answer = r.json()
    assert answer["state"] == "listening"
    return answer["bootstrap_servers"]


def rows(sid: str) -> list[dict]:
    """The stored log. The test database is SQLite in memory with a shared cache, where a read that meets the
    listener's write in another thread fails at once (SQLITE_LOCKED) instead of waiting: read again."""
    for _ in range(100):
        try:
            return [c.as_entry() for c in Command.objects.filter(session_id=sid, dropped=False).order_by("seq")]
        except OperationalError:
            time.sleep(0.05)
    raise AssertionError("the log stayed locked")


def quiet(sid: str, disconnected: bool = False) -> None:
    """Wait until the session's listener has stored what came in (the test then reads and writes the database alone);
    with `disconnected`, first until its clients have all gone."""
    lst = listener.LISTENERS.get(sid)
    if lst is None:
        return
    if disconnected:
        wait_for(lambda: not lst.conns, "the clients gone")
    wait_for(lambda: not lst.flushing and lst.flush_at is None, "the listener's rows stored")
    listener.drain()


def stored(sid: str, predicate, what: str) -> list[dict]:
    """Wait until the session's stored log satisfies `predicate` (the listener stores what came in within seconds)."""
    return wait_for(lambda: (lambda log: log if predicate(log) else None)(rows(sid)), what)


def producer(bootstrap: str, client_id: str, txid: str = "pay") -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, "client.id": client_id, **QUIET})


def address_html(bootstrap: str) -> str:
    """The connect panel's address: a line may break between its host:port pairs, never inside one."""
    return ",<wbr>".join(f'<span class="hp">{a}</span>' for a in bootstrap.split(","))


def fence_story(bootstrap: str) -> None:
    """payment-service commits o-0..o-2, opens another transaction with "zombie", monitoring takes the same
    transactional id (the fence), payment-service's commit fails."""
    pay = producer(bootstrap, "payment-service")
    pay.init_transactions(20)
    pay.begin_transaction()
    for i in range(3):
        pay.produce("orders", value=f"o-{i}".encode(), partition=0)
    pay.commit_transaction(20)
    pay.begin_transaction()
    pay.produce("orders", value=b"zombie", partition=1)
    pay.flush(10)
    monitoring = producer(bootstrap, "monitoring")
    monitoring.init_transactions(20)
    with pytest.raises(KafkaException) as fenced:
        pay.commit_transaction(10)
    assert fenced.value.args[0].name() == "_FENCED"
    monitoring.close()
    with contextlib.suppress(KafkaException):  # closing a fenced producer reports the fence again
        pay.close()


def view_digest(live) -> str:
    view = external.view(live, live.backend.view(200), False)
    shown = {
        "partitions": view["partitions"],
        "producers": {n: {k: v for k, v in p.items() if k != "external"} for n, p in view["producers"].items()},
        "transactions": view["transactions"],
        "ops": external.history_ops(live.backend),
    }
    return hashlib.sha256(json.dumps(shown, sort_keys=True, default=repr).encode()).hexdigest()


def with_payloads(sid: str) -> list[dict]:
    """The stored log as one JSON file: an external clients' entry with its payload in its body ("in", base64, as
    logs kept it before payloads were stored apart)."""
    out = []
    for row in Command.objects.filter(session_id=sid, dropped=False).order_by("seq"):
        entry = row.as_entry()
        if row.payload is not None:
            entry["ext"] = {**entry["ext"], "in": base64.b64encode(bytes(row.payload)).decode("ascii")}
        out.append(entry)
    return out


def replay_digest(path: str) -> str:
    """The session of a stored log replayed in this process (no database: the log's entries from a file)."""
    from playground.session.backends import build
    from playground.session.live import Live, free_play_actors, free_play_cluster
    from playground.session.replay import apply_entry

    entries = json.loads(Path(path).read_text())
    cluster, actors = free_play_cluster(), free_play_actors()
    live = Live("replay", "sim", 0, None, cluster, dict(actors), build("sim", cluster, actors, 0))
    for entry in entries:
        apply_entry(live, entry)
        live.record(entry)
    return view_digest(live)


def test_a_client_pair_sharing_a_transactional_id_lives_in_the_session_and_its_log_replays_it(
    client, sim_session, tmp_path
):
    sid = sim_session.id
    bootstrap = listen(client, sid)
    assert client.get(f"/s/{sid}/listen/").json() == {
        "state": "listening",
        "bootstrap_servers": bootstrap,
        "connections": 0,
        "host": "127.0.0.1",
    }
    fence_story(bootstrap)
    log = stored(sid, lambda log: any(e.get("outcome") == "INVALID_PRODUCER_EPOCH" for e in log), "the fence stored")
    quiet(sid, disconnected=True)
    log = rows(sid)
    assert "listen" in log[0] and all(external.is_external(e) for e in log)

    # log.json: every client an actor with its library and version, its requests as commands
    body = client.get(f"/s/{sid}/log.json").json()
    actors = {a["name"]: a for a in body["external"]}
    assert {"payment-service", "monitoring"} <= set(actors)
    pay = actors["payment-service"]
    assert (pay["kind"], pay["client_id"], pay["transactional_id"]) == ("producer", "payment-service", "pay")
    assert pay["library"] == "confluent-kafka-python" and pay["version"].startswith("2.16")
    assert actors["monitoring"]["producer_epoch"] > pay["producer_epoch"]
    requests = [r for c in body["commands"] if "ext" in c for r in c["requests"]]
    assert any(r.get("api") == "EndTxn" and r["client_id"] == "payment-service" for r in requests)

    # the page shows them as actors, fenced and not
    page = client.get(f"/s/{sid}/").content.decode()
    assert 'data-producer="payment-service"' in page and 'data-producer="monitoring"' in page
    assert "FENCED" in page and "confluent-kafka-python" in page and bootstrap in page

    # the anomaly checker: the zombie's send was acknowledged, then aborted by the fence, and the application was
    # told so by its commit (issue 17: not a lost write, "aborted, and the application was told")
    from playground.session.history import findings

    live = session.load(sid)
    found = findings(live)
    told = [f for f in found if f.rule == "aborted-told"]
    assert told and "zombie" in told[0].text and "payment-service" in told[0].text, [(f.rule, f.text) for f in found]
    # as confluent-kafka told the application (its commit raised _FENCED), not the broker's INVALID_PRODUCER_EPOCH
    assert "commit_transaction() returned _FENCED" in told[0].text, told[0].text
    assert not [f for f in found if f.rule == "lost-write"]

    # the same log replayed from scratch, here and in processes with other string hashes, shows the same
    quiet(sid)
    listener.stop(sid)
    live = session.load(sid)
    here = view_digest(live)
    session.CACHE.evict(sid)
    assert view_digest(session.load(sid)) == here
    path = tmp_path / "log.json"
    path.write_text(json.dumps(with_payloads(sid)))
    for hash_seed in ("0", "4242"):
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                "import django; django.setup(); from tests.web.test_listener import replay_digest; "
                f"print(replay_digest({str(path)!r}))",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": hash_seed, "DJANGO_SETTINGS_MODULE": "playground.settings"},
        )
        assert out.stdout.strip().splitlines()[-1:] == [here], out.stderr[-2000:]

    # an earlier step shows the clients as they were; a fork replays it on the simulator with the same observation
    fence_at = next(i for i, e in enumerate(live.commands) if e.get("outcome") == "INVALID_PRODUCER_EPOCH")
    k = live.step_of(fence_at) - 1  # the step before the entry of the fence (what clients did counts as steps)
    before = session.moment(sid, k)
    assert external.view(before, before.backend.view(200), True)["producers"]["payment-service"]["state"] != "FENCED"
    assert client.get(f"/s/{sid}/?at={k}").status_code == 200
    fork = session.fork(sid, live.step_count)
    assert view_digest(session.load(fork.id)) == here
    forked = broadcast.view_of(session.load(fork.id))
    assert forked["producers"]["payment-service"]["state"] == "FENCED"
    assert not forked["producers"]["monitoring"]["external"]["connected"]  # a fork listens to nobody

    # saved as a scenario: the clients as actors, what they did as steps; the file loads
    from playground.scenario import check_text

    text = client.get(f"/s/{sid}/scenario.yaml").content.decode()
    scenario, errors = check_text(text)
    assert scenario is not None, errors
    assert {"payment-service", "monitoring"} <= set(scenario.actors)
    labels = [s.label for s in scenario.steps]
    assert "monitoring.init_transactions" in labels and "payment-service.commit_transaction" in labels


def test_a_step_while_clients_are_connected_runs_at_the_time_they_saw_and_replays_the_same(client, sim_session):
    sid = sim_session.id
    bootstrap = listen(client, sid)
    plain = Producer({"bootstrap.servers": bootstrap, "client.id": "ticker", "enable.idempotence": True, **QUIET})
    plain.produce("orders", value=b"t-1", partition=2)
    assert plain.flush(20) == 0
    time.sleep(0.3)  # the clock follows the wall clock while the client is connected
    quiet(sid)
    session.add_producer(sid, "new")
    live, outcome = session.apply_step(sid, Step("A", "init_transactions"))
    assert outcome == "ok"
    step = live.commands[-1]
    assert step["vt"] >= 300, step  # the step ran after the time that passed
    plain.produce("orders", value=b"t-2", partition=2)
    assert plain.flush(20) == 0
    stored(sid, lambda log: sum(1 for e in log if "ext" in e) >= 2, "the client's second send stored")
    quiet(sid)
    listener.stop(sid)
    # read once the listener has stored all it got (the client's later requests, too): a busy machine stored one
    # between an earlier read and the stop
    here = view_digest(session.load(sid))
    session.CACHE.evict(sid)
    assert view_digest(session.load(sid)) == here


def test_a_chatty_consumer_writes_a_row_every_few_seconds_not_one_per_poll(client, sim_session):
    sid = sim_session.id
    bootstrap = listen(client, sid)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "chatty",
            "fetch.wait.max.ms": 100,  # ten Fetch requests a second per broker on an idle topic
            **QUIET,
        }
    )
    consumer.assign([TopicPartition("orders", p, 0) for p in range(3)])
    started = time.monotonic()
    try:
        while time.monotonic() - started < 12:
            consumer.poll(0.2)
    finally:
        consumer.close()
    quiet(sid, disconnected=True)  # everything it sent stored (the last row may be its connection's close alone)
    ext = [e for e in rows(sid) if "ext" in e]
    fetches = sum(n for e in ext for _who, api, n in e["ext"]["sum"] if api == "Fetch")
    assert fetches >= 60, fetches  # it did poll many times a second
    assert len(ext) <= 12, [e["ext"]["sum"] for e in ext]  # but the log grew by a few rows
    packed = sum(e["ext"]["size"] for e in ext)
    assert packed < 60 * fetches, packed  # and a Fetch request costs tens of bytes, not hundreds


def test_only_the_drive_capability_starts_or_stops_it_over_http_and_over_the_websocket(client, sim_session):
    sid = sim_session.id
    stranger = Client()
    r = stranger.post(f"/s/{sid}/listen/")
    assert r.status_code == 403 and sid not in listener.LISTENERS
    assert stranger.get(f"/s/{sid}/listen/").json()["state"] == "off"  # watching is free
    listen(client, sid)
    assert stranger.post(f"/s/{sid}/unlisten/").status_code == 403
    assert sid in listener.LISTENERS

    async def over_websocket(cookie: str | None) -> str:
        headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
        if cookie:
            headers.append((b"cookie", f"{capability.cookie_name(sid)}={cookie}".encode()))
        ws = WebsocketCommunicator(application, f"/ws/s/{sid}/", headers=headers)
        connected, _ = await ws.connect(timeout=5)
        assert connected
        await ws.receive_from(timeout=10)  # the snapshot
        await ws.send_to(text_data=json.dumps({"type": "command", "command": "unlisten", "data": {}}))
        try:
            return await ws.receive_from(timeout=10)
        finally:
            await ws.disconnect()

    from asgiref.sync import async_to_sync

    frame = async_to_sync(over_websocket)(None)
    assert 'id="ws-error"' in frame and "403" in frame and sid in listener.LISTENERS
    async_to_sync(over_websocket)(sim_session.drive_secret)
    wait_for(lambda: sid not in listener.LISTENERS, "the listener stopped by its driver over the websocket")
    assert "unlisten" in rows(sid)[-1]
    assert client.get(f"/s/{sid}/listen/").json()["state"] == "off"


def test_production_mode_keeps_it_off_unless_the_server_enables_it(client, sim_session, settings):
    settings.PLAYGROUND_LISTEN = False
    r = client.post(f"/s/{sim_session.id}/listen/")
    assert r.status_code == 403 and "PLAYGROUND_LISTEN" in r.content.decode()
    assert client.get(f"/s/{sim_session.id}/listen/").json()["state"] == "disabled"
    assert 'id="connect-app"' not in client.get("/").content.decode()
    settings.PLAYGROUND_LISTEN = True
    assert 'id="connect-app"' in client.get("/").content.decode()


def test_listeners_are_capped_per_client_and_per_server(client, settings):
    settings.PLAYGROUND_LIMITS = {"listeners_per_client": 1, "listeners": 2}
    first, second = (hold(client, session.create(None, backend="sim")) for _ in range(2))
    listen(client, first.id)
    r = client.post(f"/s/{second.id}/listen/")
    assert r.status_code == 429 and "stop one first" in r.content.decode()
    other = Client(REMOTE_ADDR="10.1.2.3")
    third = hold(other, session.create(None, backend="sim"))
    listen(other, third.id)
    fourth = hold(other, session.create(None, backend="sim"))
    settings.PLAYGROUND_LIMITS = {"listeners_per_client": 5, "listeners": 2}
    r = other.post(f"/s/{fourth.id}/listen/")
    assert r.status_code == 429 and "its limit" in r.content.decode()
    client.post(f"/s/{first.id}/unlisten/")
    listen(other, fourth.id)  # a stopped listener gives its place back


def test_it_binds_only_the_configured_host_and_closes_connections_over_the_cap(client, sim_session, settings):
    settings.PLAYGROUND_LIMITS = {"listener_connections": 2}
    bootstrap = listen(client, sim_session.id)
    lst = listener.LISTENERS[sim_session.id]
    assert {s.getsockname()[0] for server in lst.servers.values() for s in server.sockets} == {"127.0.0.1"}
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    socks = [socket.create_connection((host, int(port)), timeout=5) for _ in range(3)]
    try:
        socks[2].settimeout(10)
        assert socks[2].recv(1) == b""  # the third is closed at once
        assert len(lst.conns) == 2
    finally:
        for s in socks:
            s.close()


def test_an_idle_listener_closes_itself_and_the_log_says_so(client, sim_session, settings, monkeypatch):
    settings.PLAYGROUND_LIMITS = {"listener_idle_s": 1}
    monkeypatch.setattr(listener, "IDLE_CHECK_S", 0.2)
    listen(client, sim_session.id)
    wait_for(lambda: sim_session.id not in listener.LISTENERS, "the idle listener closed")
    # the listener is forgotten before its worker writes the unlisten entry: let the write end before reading the
    # log, since a read at the same moment makes the write fail on the tests' shared-cache SQLite (SQLITE_LOCKED)
    listener.drain()
    last = stored(sim_session.id, lambda log: "unlisten" in log[-1], "the unlisten entry")[-1]
    assert last["unlisten"]["why"] == "idle"


def test_reset_closes_the_listener_with_the_log_that_opened_it(client, sim_session):
    sid = sim_session.id
    bootstrap = listen(client, sid)
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    quiet(sid)
    session.reset(sid)
    wait_for(lambda: sid not in listener.LISTENERS, "the listener closed with its log")
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2).close()


def test_a_long_session_with_a_clients_requests_keeps_checkpoints_that_restore_it(client, sim_session, tmp_path):
    sid = sim_session.id
    bootstrap = listen(client, sid)
    plain = Producer({"bootstrap.servers": bootstrap, "client.id": "busy", "linger.ms": 0, **QUIET})
    for i in range(10):
        plain.produce("orders", value=f"b-{i}".encode(), partition=i % 3)
        assert plain.flush(20) == 0
    stored(
        sid, lambda log: sum(n for e in log if "ext" in e for _w, a, n in e["ext"]["sum"] if a == "Produce") >= 10, ""
    )
    quiet(sid)
    session.add_producer(sid, "new")
    live = session.load(sid)
    while live.length <= session.CHECKPOINT_EVERY:
        live, _ = session.apply_step(sid, Step("A", "flush"))  # the client stays connected meanwhile
    assert session.CHECKPOINT_EVERY in live.checkpoints  # the simulator froze with its protocol core and clients
    plain.produce("orders", value=b"after", partition=0)
    assert plain.flush(20) == 0
    stored(sid, lambda log: "ext" in log[-1], "the send after the checkpoint")
    quiet(sid)
    listener.stop(sid)
    head = session.load(sid)
    here = view_digest(head)
    # step k restored from the checkpoint (a thaw, then the commands after it) is step k replayed from the start
    k = head.step_of(session.CHECKPOINT_EVERY + 1)  # a step just past the checkpoint's entry
    path = tmp_path / "prefix.json"
    path.write_text(json.dumps(with_payloads(sid)[: head.entries_at(k)]))
    assert view_digest(session.moment(sid, k)) == replay_digest(str(path))
    session.CACHE.evict(sid)
    assert view_digest(session.load(sid)) == here


def test_a_scenario_with_a_database_keeps_its_panel_beside_the_clients(client):
    from playground.scenario import library

    entry = library.find("db-incident-in-full")
    assert entry is not None
    row = hold(client, session.create(entry.scenario, source=entry.scenario.source, backend="sim"))
    bootstrap = listen(client, row.id)
    topic = entry.scenario.cluster.topics[0].name
    plain = Producer({"bootstrap.servers": bootstrap, "client.id": "outsider", **QUIET})
    plain.produce(topic, value=b"from-outside", partition=0)
    assert plain.flush(20) == 0
    stored(
        row.id, lambda log: any("ext" in e and any(a == "Produce" for _w, a, _n in e["ext"]["sum"]) for e in log), ""
    )
    view = broadcast.view_of(session.load(row.id))
    assert view["database"]["tables"] and "outsider" in view["producers"]
    page = client.get(f"/s/{row.id}/").content.decode()
    assert 'id="p-database"' in page and 'data-producer="outsider"' in page


def test_an_actor_added_and_the_unlisten_carry_the_time_the_clock_followed_to(client, sim_session):
    """While clients are connected the clock follows the wall clock with nothing stored: an actor added then starts
    its clients' timers at that time, and the unlisten closes the connections at it; both say so in the log, so a
    replay passes the same time first (without, a busy machine's replay differed from the live session)."""
    sid = sim_session.id
    bootstrap = listen(client, sid)
    plain = Producer({"bootstrap.servers": bootstrap, "client.id": "ticker", **QUIET})
    plain.produce("orders", value=b"t-1", partition=0)
    assert plain.flush(20) == 0
    stored(sid, lambda log: any("ext" in e for e in log), "the client's send stored")
    time.sleep(0.3)
    quiet(sid)
    session.add_producer(sid, "new")
    log = rows(sid)
    add = next(e for e in log if "add" in e)
    assert add["vt"] >= max(e["ext"]["end"] for e in log if "ext" in e)
    time.sleep(0.2)
    quiet(sid)
    listener.stop(sid)
    unlisten = rows(sid)[-1]["unlisten"]
    assert unlisten["vt"] >= add["vt"] + 200
    here = view_digest(session.load(sid))
    session.CACHE.evict(sid)
    assert view_digest(session.load(sid)) == here


def test_it_renders_a_session_while_its_listener_feeds_it(client, sim_session):
    """Pages and frames are built in worker threads while the listener's loop applies the clients' requests: a render
    once read the clients' history as it grew ("deque mutated during iteration", from the listener's flush). A
    producer sends one record at a time while this thread builds the panels, with the interpreter switching threads
    as often as it can."""
    import threading

    sid = sim_session.id
    bootstrap = listen(client, sid)
    live = session.load(sid)
    sending, sent = True, 0

    def send() -> None:
        nonlocal sent
        p = Producer({"bootstrap.servers": bootstrap, "client.id": "steady", "linger.ms": 0, **QUIET})
        while sending:
            p.produce("orders", value=b"x" * 10, partition=sent % 3)
            p.flush(10)
            sent += 1

    sender = threading.Thread(target=send, daemon=True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    sender.start()
    renders = 0
    try:
        wait_for(lambda: sent >= 1, "the first record acknowledged")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sent < 300:
            contexts = broadcast.contexts_of(live)
            renders += 1
        with listener.reading(live):  # the test reads the clients' history as a render does: under the lock
            assert external.history_ops(live.backend)
    finally:
        sys.setswitchinterval(interval)
        sending = False
        sender.join(30)
    assert sent >= 300 and renders > 10, (sent, renders)
    assert set(contexts) == set(broadcast.panels.PANELS)
    quiet(sid)


def test_it_shows_the_address_to_whoever_drives_the_session_and_a_sentence_to_its_watchers(client, sim_session):
    """Issue 33: anything pointed at the address writes into the session, so its watchers (a watch link, a room's
    projector) see who is connected, not where to connect: on the page, in the websocket's snapshot and updates, in
    GET /listen/."""
    from asgiref.sync import async_to_sync, sync_to_async

    sid = sim_session.id
    watcher = Client()
    before = watcher.get(f"/s/{sid}/").content.decode()
    assert "The session’s driver can connect an application of their own to it here" in before
    assert 'class="primary listen"' not in before
    assert 'class="primary listen"' in client.get(f"/s/{sid}/").content.decode()

    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    driving = [*headers, (b"cookie", f"{capability.cookie_name(sid)}={sim_session.drive_secret}".encode())]

    async def sockets_meet_the_listener() -> tuple[str, str, str]:
        both = [WebsocketCommunicator(application, f"/ws/s/{sid}/", headers=h) for h in (driving, headers)]
        for ws in both:
            assert (await ws.connect(timeout=5))[0]
            await ws.receive_from(timeout=10)  # the snapshot, before the listener
        bootstrap = await sync_to_async(listen)(client, sid)

        async def until_listening(ws) -> str:
            text = ""
            while 'data-state="listening"' not in text:
                text += await ws.receive_from(timeout=CAP_S)
            return text

        try:
            return bootstrap, await until_listening(both[0]), await until_listening(both[1])
        finally:
            for ws in both:
                await ws.disconnect()

    bootstrap, driver_update, watcher_update = async_to_sync(sockets_meet_the_listener)()
    assert bootstrap and f'id="bootstrap-servers">{address_html(bootstrap)}<' in driver_update
    assert bootstrap not in watcher_update and "applications its driver points at them" in watcher_update

    driver_page, watcher_page = client.get(f"/s/{sid}/").content.decode(), watcher.get(f"/s/{sid}/").content.decode()
    assert f'id="bootstrap-servers">{address_html(bootstrap)}<' in driver_page
    assert bootstrap not in watcher_page and "applications its driver points at them" in watcher_page
    live = session.load(sid)
    assert bootstrap in broadcast.snapshot(live, "en", drives=True)
    assert bootstrap not in broadcast.snapshot(live, "en") and bootstrap not in broadcast.snapshot(live, "zh-hans")
    assert client.get(f"/s/{sid}/listen/").json()["bootstrap_servers"] == bootstrap
    told = watcher.get(f"/s/{sid}/listen/").json()
    assert told["state"] == "listening" and told["bootstrap_servers"] == ""
