"""The session websocket through Channels' WebsocketCommunicator (in-memory layer)."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from playground import session
from playground.asgi import application
from playground.engine.spec import Step
from playground.models import Session
from playground.session import capability

pytestmark = [pytest.mark.django_db(transaction=True)]

PANELS = (
    "p-header",
    "p-cluster",
    "p-producers",
    "p-consumers",
    "p-logs",
    "p-coordinator",
    "p-timeline",
    "p-truth",
    "p-narrative",
)


def _connect(sid: str, lang: str = "en") -> WebsocketCommunicator:
    return WebsocketCommunicator(
        application, f"/ws/s/{sid}/?lang={lang}", headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    )


async def _open(sid: str, lang: str = "en") -> tuple[WebsocketCommunicator, str]:
    ws = _connect(sid, lang)
    connected, _ = await ws.connect(timeout=5)
    assert connected
    return ws, await ws.receive_from(timeout=5)


async def test_it_sends_a_full_snapshot_first(free_session):
    ws, first = await _open(free_session.id)
    for pid in PANELS:
        assert f'id="{pid}" class' in first or f'id="{pid}"' in first
        assert 'hx-swap-oob="true"' in first
    assert 'id="state-version" data-version="0"' in first
    await ws.disconnect()


async def test_it_pushes_changed_panels_to_every_viewer(free_session):
    sid = free_session.id
    a, _ = await _open(sid)
    b, _ = await _open(sid)
    await database_sync_to_async(session.add_producer)(sid, "new")
    fa, fb = await a.receive_from(timeout=5), await b.receive_from(timeout=5)
    assert fa == fb
    assert 'data-producer="A"' in fa
    assert 'data-version="1"' in fa
    await database_sync_to_async(session.apply_step)(sid, Step("A", "init_transactions"))
    frame = await a.receive_from(timeout=5)
    assert 'id="p-coordinator"' in frame and "txn-1" in frame
    assert 'id="p-logs"' not in frame  # nothing changed in the logs: not re-sent
    await database_sync_to_async(session.apply_step)(sid, Step("A", "begin_transaction"))
    await a.receive_from(timeout=5)
    await database_sync_to_async(session.apply_step)(
        sid, Step("A", "produce", {"topic": "orders", "partition": 1, "value": "v"})
    )
    frame = await a.receive_from(timeout=5)
    # Only what changed: partition orders-1's strip and A's card, not the whole logs and producers panels.
    assert 'id="strip-orders-1" hx-swap-oob="true"' in frame and 'id="strip-orders-0"' not in frame
    assert 'id="pc-A" hx-swap-oob="true"' in frame
    assert 'id="p-logs"' not in frame and 'id="p-producers"' not in frame
    await a.disconnect()
    await b.disconnect()


async def test_it_sends_each_viewer_its_language(fencing_session):
    sid = fencing_session.id
    en, _ = await _open(sid, "en")
    zh, _ = await _open(sid, "zh-hans")
    await database_sync_to_async(session.step)(sid)
    fen, fzh = await en.receive_from(timeout=5), await zh.receive_from(timeout=5)
    assert "Round 1, fenced at commit" in fen
    assert "第一轮" in fzh
    await en.disconnect()
    await zh.disconnect()


async def test_it_renders_an_update_only_in_the_languages_its_pages_were_opened_in(fencing_session):
    from channels.layers import get_channel_layer

    sid = fencing_session.id
    en, _ = await _open(sid, "en")
    layer = get_channel_layer()
    spy = await layer.new_channel()
    await layer.group_add(session.group_name(sid), spy)
    await database_sync_to_async(session.step)(sid)
    message = await layer.receive(spy)
    assert set(message["html"]) == {"en"} and "Round 1, fenced at commit" in await en.receive_from(timeout=5)
    assert (await database_sync_to_async(Session.objects.get)(pk=sid)).viewer_langs == ",en,"
    zh, _ = await _open(sid, "zh-hans")
    await database_sync_to_async(session.step)(sid)
    assert set((await layer.receive(spy))["html"]) == {"en", "zh-hans"}
    await layer.group_discard(session.group_name(sid), spy)
    await en.disconnect()
    await zh.disconnect()


async def test_it_renders_an_update_only_in_the_languages_open_right_now(fencing_session):
    """A language whose last page closed is not rendered any more (the row still lists it: fanout.py knows better)."""
    from channels.layers import get_channel_layer

    sid = fencing_session.id
    en, _ = await _open(sid, "en")
    zh, _ = await _open(sid, "zh-hans")
    layer = get_channel_layer()
    spy = await layer.new_channel()
    await layer.group_add(session.group_name(sid), spy)
    await database_sync_to_async(session.step)(sid)
    assert set((await layer.receive(spy))["html"]) == {"en", "zh-hans"}
    await zh.disconnect()
    await database_sync_to_async(session.step)(sid)
    assert set((await layer.receive(spy))["html"]) == {"en"}
    assert (await database_sync_to_async(Session.objects.get)(pk=sid)).viewer_langs == ",en,zh-hans,"
    await layer.group_discard(session.group_name(sid), spy)
    await en.disconnect()


async def test_it_sends_a_snapshot_to_a_page_whose_language_an_update_was_not_rendered_in(fencing_session):
    """The page opened while the update was being rendered: it gets everything again, in its own language."""
    sid = fencing_session.id
    zh, _ = await _open(sid, "zh-hans")
    await database_sync_to_async(Session.objects.filter(pk=sid).update)(viewer_langs=",en,")  # as the render read it
    await database_sync_to_async(session.step)(sid)
    frame = await zh.receive_from(timeout=5)
    assert all(f'id="{pid}"' in frame for pid in PANELS) and "第一轮" in frame
    await zh.disconnect()


async def test_it_refuses_an_unknown_session():
    ws = _connect("no-such-session")
    connected, code = await ws.connect(timeout=5)
    assert not connected
    assert code == 4404


@pytest.mark.parametrize(
    "frame",
    [
        "not json",
        "[]",
        "42",
        json.dumps({"type": "apply", "step": "A.crash"}),
        json.dumps({"type": None}),
        "{" * 5000,
        json.dumps({}),
    ],
)
async def test_it_answers_bad_messages_with_an_error_frame_and_changes_nothing(free_session, frame):
    sid = free_session.id
    ws, _ = await _open(sid)
    await ws.send_to(text_data=frame)
    reply = await ws.receive_from(timeout=5)
    assert 'id="ws-error"' in reply
    await ws.send_to(bytes_data=b"\x00\x01")
    assert 'id="ws-error"' in await ws.receive_from(timeout=5)
    await ws.send_to(text_data=json.dumps({"type": "ping"}))
    assert 'id="ws-pong"' in await ws.receive_from(timeout=5)  # still alive
    row = await database_sync_to_async(Session.objects.get)(pk=sid)
    assert row.length == 0 and row.version == 0
    await ws.disconnect()


async def test_it_resends_a_snapshot_on_request(free_session):
    ws, first = await _open(free_session.id)
    await ws.send_to(text_data=json.dumps({"type": "snapshot"}))
    assert await ws.receive_from(timeout=5) == first
    await ws.disconnect()


def _driver(row):
    """An async test client holding the session's drive capability (its creator's browser)."""
    from django.test import AsyncClient

    client = AsyncClient()
    client.cookies[capability.cookie_name(row.id)] = row.drive_secret
    return client


async def test_it_runs_the_rest_of_a_scenario_and_pauses(fencing_session, settings):

    settings.PLAYGROUND_RUN_STEP_MS = 50
    sid = fencing_session.id
    ws, _ = await _open(sid)
    client = _driver(fencing_session)
    r = await client.post(f"/s/{sid}/run/")
    assert r.status_code == 204
    seen = []
    for _ in range(4):
        seen.append(await ws.receive_from(timeout=5))
    r = await client.post(f"/s/{sid}/pause/")
    assert r.status_code == 204
    await asyncio.sleep(0.3)
    row = await database_sync_to_async(Session.objects.get)(pk=sid)
    assert not row.running
    n = row.length
    assert 2 <= n < 30
    await asyncio.sleep(0.3)
    row = await database_sync_to_async(Session.objects.get)(pk=sid)
    assert row.length == n  # paused: nothing more applied
    await ws.disconnect()


async def test_it_runs_to_the_end_and_stops(fencing_session, settings):

    settings.PLAYGROUND_RUN_STEP_MS = 0
    sid = fencing_session.id
    total = len((await database_sync_to_async(session.load)(sid)).steps)
    r = await _driver(fencing_session).post(f"/s/{sid}/run/")
    assert r.status_code == 204
    for _ in range(200):
        row = await database_sync_to_async(Session.objects.get)(pk=sid)
        if not row.running:
            break
        await asyncio.sleep(0.05)
    assert not row.running
    assert row.length == total


async def test_it_shows_one_viewer_an_earlier_step_and_holds_its_live_updates(free_session):
    sid = free_session.id
    for _ in range(3):
        await database_sync_to_async(session.add_producer)(sid, "plain")
    scrubber, _ = await _open(sid)
    other, _ = await _open(sid)
    await scrubber.send_to(text_data=json.dumps({"type": "at", "step": 1}))
    moment = await scrubber.receive_from(timeout=5)
    assert 'data-producer="A"' in moment and 'data-producer="B"' not in moment  # step 1: only A was added
    assert 'id="ws-moment" hx-swap-oob="true" data-at="1" data-length="3"' in moment
    assert 'data-length="3"' in moment.split('id="p-scrubber"', 1)[1]  # the track still shows the whole log
    await database_sync_to_async(session.add_producer)(sid, "plain")
    live = await other.receive_from(timeout=5)
    held = await scrubber.receive_from(timeout=5)
    assert 'data-producer="D"' in live
    assert 'id="p-scrubber"' in held and 'data-length="4"' in held and "data-producer" not in held  # the track only
    await scrubber.send_to(text_data=json.dumps({"type": "live"}))
    back = await scrubber.receive_from(timeout=5)
    assert 'data-producer="D"' in back and 'data-at="live"' in back
    for ws in (scrubber, other):
        await ws.disconnect()


@pytest.mark.parametrize("step", [-1, "x", None, 1.5, True, [1], "9" * 12])
async def test_it_answers_a_bad_step_with_an_error_frame(free_session, step):
    ws, _ = await _open(free_session.id)
    await ws.send_to(text_data=json.dumps({"type": "at", "step": step}))
    assert 'id="ws-error"' in await ws.receive_from(timeout=5)
    await ws.disconnect()


async def test_it_goes_back_to_live_when_the_step_is_not_in_the_log(free_session):
    ws, _ = await _open(free_session.id)
    await ws.send_to(text_data=json.dumps({"type": "at", "step": 7}))
    assert 'id="ws-error"' in await ws.receive_from(timeout=5)
    assert 'data-at="live"' in await ws.receive_from(timeout=5)
    await ws.disconnect()


async def test_it_takes_over_a_run_whose_runner_stopped_beating(fencing_session, settings):
    """A process that ran a "run" died: its heartbeat is stale; the watchdog of a process serving the page claims
    the run once, and the steps go on."""
    from datetime import timedelta

    from django.utils import timezone

    from playground.session import runner

    settings.PLAYGROUND_RUN_STEP_MS = 20
    sid = fencing_session.id
    await database_sync_to_async(session.set_running)(sid, True)  # "run" pressed in a process that then died
    stale = timezone.now() - timedelta(seconds=runner.RUNNER_STALE_S + 1)
    await database_sync_to_async(Session.objects.filter(pk=sid).update)(runner_at=stale)
    assert await database_sync_to_async(runner.orphaned_runs)() == [sid]
    assert await database_sync_to_async(runner.orphaned_runs)() == []  # claimed once: nobody else takes it
    runner.ensure_runner(sid)
    total = len((await database_sync_to_async(session.load)(sid)).steps)
    for _ in range(200):
        row = await database_sync_to_async(Session.objects.get)(pk=sid)
        if not row.running:
            break
        await asyncio.sleep(0.05)
    assert not row.running and row.length == total


async def test_it_forwards_an_update_to_each_viewer_without_a_thread_hop(free_session, hops):
    """Channels' dispatch would send every message to the database thread first (aclose_old_connections): a
    session's 100 viewers made 100 trips per update, queued one behind the other (consumers.Consumer)."""
    from channels.layers import get_channel_layer

    sid = free_session.id
    viewers = [(await _open(sid))[0] for _ in range(3)]
    hops.clear()
    update = {"type": "session.update", "version": 1, "html": {"en": '<span id="x">1</span>'}, "scrub": {}}
    await get_channel_layer().group_send(session.group_name(sid), update)
    assert [await v.receive_from(timeout=5) for v in viewers] == ['<span id="x">1</span>'] * 3
    assert hops == []
    # what does touch the database still goes through database_sync_to_async (a snapshot on request)
    await viewers[0].send_to(text_data=json.dumps({"type": "snapshot"}))
    assert 'id="p-header"' in await viewers[0].receive_from(timeout=5)
    assert hops == ["SessionConsumer._snapshot"]
    for v in viewers:
        await v.disconnect()


def test_it_reaches_the_database_from_a_socket_only_through_database_sync_to_async():
    """What makes dropping Channels' hop safe (consumers.Consumer): a socket's database work goes through
    database_sync_to_async, which closes old connections around each call. A plain sync_to_async in a consumer's
    module is only for work without the database (the inspector's hub: thread_sensitive=False)."""
    import ast
    from pathlib import Path

    web = Path(__file__).resolve().parents[2] / "playground" / "web"
    for name in ("consumers.py", "inspectviews.py"):
        for node in ast.walk(ast.parse((web / name).read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "sync_to_async":
                kw = {k.arg: k.value for k in node.keywords}
                sensitive = kw.get("thread_sensitive")
                assert isinstance(sensitive, ast.Constant) and sensitive.value is False, f"{name}:{node.lineno}"
