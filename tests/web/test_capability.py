"""Who may drive: the creator's browser holds the session's drive capability; a watch link shows everything and
changes nothing; commands without the capability get 403 over HTTP and over the websocket alike."""

from __future__ import annotations

import json
import logging

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from playground.asgi import application
from playground.models import Session
from playground.session import capability
from playground.web.commands import COMMANDS

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


def _new(client: Client) -> str:
    r = client.post("/new/", {"scenario": "zombie-fencing"})
    assert r.status_code == 302, r.content
    return r["Location"].rstrip("/").rsplit("/", 1)[-1]


def test_it_gives_the_creators_browser_the_capability_in_an_httponly_cookie(client):
    sid = _new(client)
    cookie = client.cookies[capability.cookie_name(sid)]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and len(cookie.value) >= 32  # >= 192 bits
    assert client.post(f"/s/{sid}/step/").status_code == 204
    html = client.get(f"/s/{sid}/").content.decode()
    assert f"#drive={cookie.value}" in html and 'class="session scenario"' in html


def test_it_stores_only_a_digest_of_the_capability(client):
    sid = _new(client)
    key = client.cookies[capability.cookie_name(sid)].value
    row = Session.objects.get(pk=sid)
    assert row.drive_key == capability.digest(key) and key not in row.drive_key


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_it_refuses_every_command_without_the_capability(client, name):
    sid = _new(client)
    before = Session.objects.get(pk=sid)
    watcher = Client()
    r = watcher.post(f"/s/{sid}/{name}/", {"actor": "A", "action": "init_transactions", "seconds": "10"})
    assert r.status_code == 403 and "watch-only" in r.content.decode()
    forged = Client()
    forged.cookies[capability.cookie_name(sid)] = "x" * 32
    assert forged.post(f"/s/{sid}/{name}/").status_code == 403
    after = Session.objects.get(pk=sid)
    assert (after.version, after.length) == (before.version, before.length)


def test_it_shows_a_watcher_everything_with_every_control_disabled(client):
    sid = _new(client)
    client.post(f"/s/{sid}/step/")
    html = Client().get(f"/s/{sid}/").content.decode()
    assert 'class="session scenario watch"' in html
    assert html.count('<fieldset class="ctl" disabled>') == 3  # header, static controls, the board
    assert "#drive=" not in html and "copy drive link" not in html
    assert "Partition logs" in html


def test_it_hands_over_a_drive_link_once_as_a_cookie(client):
    sid = _new(client)
    key = client.cookies[capability.cookie_name(sid)].value
    other = Client()
    assert other.post(f"/s/{sid}/claim/", {"key": "wrong" * 8}).status_code == 403
    assert capability.cookie_name(sid) not in other.cookies
    assert other.post(f"/s/{sid}/claim/", {"key": key}).status_code == 204
    assert other.cookies[capability.cookie_name(sid)]["httponly"]
    assert other.post(f"/s/{sid}/step/").status_code == 204


def test_it_never_writes_the_capability_to_a_log(client, caplog):
    caplog.set_level(logging.DEBUG)
    sid = _new(client)
    key = client.cookies[capability.cookie_name(sid)].value
    Client().post(f"/s/{sid}/claim/", {"key": key[:-1] + "A"})
    Client().post(f"/s/{sid}/step/")
    client.post(f"/s/{sid}/step/")
    Client().post(f"/s/{sid}/claim/", {"key": key})
    assert caplog.records and not [r for r in caplog.records if key in r.getMessage()]


def test_it_lets_nobody_drive_a_session_stored_before_capabilities(client):
    sid = _new(client)
    Session.objects.filter(pk=sid).update(drive_key="")
    assert client.post(f"/s/{sid}/step/").status_code == 403
    assert client.post(f"/s/{sid}/claim/", {"key": "a" * 32}).status_code == 403


def test_it_lets_a_watcher_fork_and_drive_the_fork(client):
    sid = _new(client)
    client.post(f"/s/{sid}/step/")
    watcher = Client()
    r = watcher.post(f"/s/{sid}/fork/", {"at": "1"})
    assert r.status_code == 302
    fork = r["Location"].rstrip("/").rsplit("/", 1)[-1]
    assert watcher.post(f"/s/{fork}/step/").status_code == 204
    assert Client().post(f"/s/{fork}/step/").status_code == 403


def _ws(sid: str, cookie: str = "") -> WebsocketCommunicator:
    headers = HEADERS + ([(b"cookie", cookie.encode())] if cookie else [])
    return WebsocketCommunicator(application, f"/ws/s/{sid}/", headers=headers)


async def test_it_refuses_commands_over_the_websocket_without_the_capability(client):
    sid = await database_sync_to_async(_new)(client)
    key = client.cookies[capability.cookie_name(sid)].value
    watcher = _ws(sid)
    assert (await watcher.connect(timeout=5))[0]
    await watcher.receive_from(timeout=5)
    await watcher.send_to(text_data=json.dumps({"type": "command", "command": "step"}))
    frame = await watcher.receive_from(timeout=5)
    assert 'id="ws-error"' in frame and "403" in frame
    row = await database_sync_to_async(Session.objects.get)(pk=sid)
    assert row.length == 0
    driver = _ws(sid, f"{capability.cookie_name(sid)}={key}")
    assert (await driver.connect(timeout=5))[0]
    await driver.receive_from(timeout=5)
    await driver.send_to(text_data=json.dumps({"type": "command", "command": "step"}))
    update = await driver.receive_from(timeout=5)
    assert "ws-error" not in update
    row = await database_sync_to_async(Session.objects.get)(pk=sid)
    assert row.length == 1
    for ws in (watcher, driver):
        await ws.disconnect()
