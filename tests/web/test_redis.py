"""The Redis channel layer (channels_redis' RedisPubSubChannelLayer) against a real redis-server, and two Daphne
processes serving one session. Marked `redis`: in CI these run and never skip."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from playground import session
from playground.asgi import application
from playground.deploy import procs
from playground.session import capability
from tests.wsviewer import frames_until, open_viewer

from .http import Browserish

pytestmark = [pytest.mark.redis]


@pytest.mark.django_db(transaction=True)
async def test_it_fans_out_updates_through_redis(redis_layer, free_session):
    sid = free_session.id
    viewers = []
    for _ in range(5):
        ws = WebsocketCommunicator(
            application, f"/ws/s/{sid}/", headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
        )
        assert (await ws.connect(timeout=5))[0]
        await ws.receive_from(timeout=5)
        viewers.append(ws)
    await database_sync_to_async(session.add_producer)(sid, "new")
    frames = [await ws.receive_from(timeout=5) for ws in viewers]
    assert len(set(frames)) == 1 and 'data-producer="A"' in frames[0]
    for ws in viewers:
        await ws.disconnect()


@pytest.fixture
def two_servers(tmp_path, redis_server):
    env = procs.django_env(
        tmp_path / "shared.sqlite3",
        redis_server,
        PLAYGROUND_DEFAULT_BACKEND="fake",
        PLAYGROUND_BACKENDS="fake=tests.web.fake_backend:FakeBackend",
    )
    procs.migrate(env)
    first = procs.start_daphne(env, tmp_path)
    second = procs.start_daphne(env, tmp_path)
    yield first, second
    first.stop()
    second.stop()


def test_it_shows_live_on_the_second_process_what_is_driven_through_the_first(two_servers):
    first, second = two_servers
    driver = Browserish(first.url)
    sid = driver.new_session("")
    viewer = open_viewer(second.url, sid)
    snapshot = viewer.recv(timeout=10)
    assert 'id="p-producers"' in snapshot and 'data-producer="A"' not in snapshot

    assert driver.post(f"/s/{sid}/add-producer/", {"mode": "new"})[0] == 204
    frames_until(viewer, 'data-producer="A"')
    assert driver.post(f"/s/{sid}/action/", {"actor": "A", "action": "init_transactions"})[0] == 204
    frames_until(viewer, "InitProducerId")

    # The second process can drive too (for whoever holds the drive link): it catches up by replaying the log first.
    other = Browserish(second.url)
    assert other.post(f"/s/{sid}/action/", {"actor": "A", "action": "begin_transaction"})[0] == 403
    assert other.post(f"/s/{sid}/claim/", {"key": driver.cookie(capability.cookie_name(sid))})[0] == 204
    assert other.post(f"/s/{sid}/action/", {"actor": "A", "action": "begin_transaction"})[0] == 204
    assert (
        driver.post(f"/s/{sid}/produce/", {"actor": "A", "topic": "orders", "partition": "0", "value": "hello"})[0]
        == 204
    )
    frame = frames_until(viewer, "hello")
    assert 'data-fate="open"' in frame
    _status, body = Browserish(second.url).get(f"/s/{sid}/log.json")
    log = json.loads(body)["commands"]
    assert [e.get("step") for e in log[1:]] == [
        "A.init_transactions",
        "A.begin_transaction",
        {"A.produce": {"topic": "orders", "partition": 0, "value": "hello"}},
    ]
    viewer.close()


def test_it_survives_a_restart_of_every_server(two_servers, tmp_path, redis_server):
    first, second = two_servers
    driver = Browserish(first.url)
    sid = driver.new_session("")
    driver.post(f"/s/{sid}/add-producer/", {"mode": "plain"})
    driver.post(f"/s/{sid}/produce/", {"actor": "A", "topic": "orders", "partition": "1", "value": "kept"})
    first.stop()
    second.stop()
    env = procs.django_env(
        tmp_path / "shared.sqlite3",
        redis_server,
        PLAYGROUND_DEFAULT_BACKEND="fake",
        PLAYGROUND_BACKENDS="fake=tests.web.fake_backend:FakeBackend",
    )
    again = procs.start_daphne(env, tmp_path)
    try:
        status, html = Browserish(again.url).get(f"/s/{sid}/")
        assert status == 200 and "kept" in html
    finally:
        again.stop()
