"""Every resource bounded (issue 18), through the pages: each attack the issue reproduced, and the bound that now
holds. The concurrent ones (real requests at a real Daphne) are in test_limits_daphne.py; the SQL sandbox's hostile
statements in tests/test_sql_sandbox.py."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from playground import rooms, session
from playground.deploy import production
from playground.models import Attendee, Command, CommandAnswer, ScenarioText, Session, Workshop
from playground.routing import websocket_urlpatterns
from playground.scenario import parse_scenario
from playground.scenario.database import Database
from playground.session import limits
from playground.web import broadcast
from playground.web.slots import RequestSlots, WebsocketSlots
from tests.waiting import until

from .conftest import hold

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
BIG = "9" * 5000


def test_it_keeps_the_readmes_limits_table_equal_to_the_bounds_in_force():
    assert limits.readme_table() in (ROOT / "README.md").read_text()


# ----------------------------------------------------------------------------------------- 1. the SQL sandbox
def _db_scenario(columns: str, steps: str = "", rows: str = "") -> str:
    return f"""format: 1
id: db-limits
title: DB limits
cluster:
  topics:
    orders: {{partitions: 1}}
actors:
  A: {{producer: {{transactional.id: t}}}}
database:
  tables:
    blobs:
      columns: "{columns}"
{rows}
steps:
  - A.init_transactions
{steps}
"""


def test_it_answers_the_editors_check_of_a_printf_check_constraint_at_once(client):
    text = _db_scenario(
        "id integer primary key, v text CHECK (length(printf('%.*c', 999999999, 'x')) > 0)", rows="      rows: [[1, a]]"
    )
    started = time.perf_counter()
    r = client.post("/editor/check/", {"text": text})
    elapsed = time.perf_counter() - started
    assert r.status_code == 200 and elapsed < 5  # was 16.9 s
    error = r.json()["errors"][0]
    assert error["field"] == "database.tables.blobs" and "16,384 bytes" in error["message"]


def test_it_answers_the_editors_check_of_a_json_aggregate_that_grows_without_end_at_once(client):
    rows = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r"
    bomb = f"SELECT length(json_group_object(i, printf('%.*c', 15000, 'x'))) AS n FROM ({rows})"
    text = _db_scenario("id integer primary key", rows=f'  reconcile:\n    sql: "{bomb}"')
    r = client.post("/editor/check/", {"text": text})
    assert r.status_code == 200  # was a 200 ms statement holding 121 MiB more with each check
    error = r.json()["errors"][0]
    assert error["field"] == "database.reconcile.sql"
    assert "json_group_object(): string or blob too big" in error["message"] and "16,384 bytes" in error["message"]


ENDLESS = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"


def _endless_sessions(client, creators: list[str]) -> list[str]:
    text = _db_scenario("id integer primary key", "\n".join(f'  - app.sql: "{ENDLESS}"' for _ in range(8)))
    scenario = parse_scenario(text)
    return [hold(client, session.create(scenario, source=text, client=who)).id for who in creators]


def _spent_then_refused(codes: list[int], refused: int) -> bool:
    """A.init_transactions and the first statement run (nothing spent before them); then each statement spends its 30
    ms or more (more on a loaded machine: the deadline is checked between the VM's opcodes), so the budget of 100 ms
    runs out after one to four of them, and from then on every step is refused."""
    first_refused = codes.index(refused) if refused in codes else len(codes)
    return codes[:2] == [204, 204] and set(codes[first_refused:]) == {refused} and set(codes[:first_refused]) == {204}


def test_it_bounds_the_sql_time_a_session_spends_in_all(client, settings):
    settings.PLAYGROUND_LIMITS = {"db_statement_ms": 30, "db_session_ms": 100}
    (sid,) = _endless_sessions(client, ["c-1"])
    codes = [client.post(f"/s/{sid}/step/").status_code for _ in range(8)]
    assert _spent_then_refused(codes, 422) and codes[-1] == 422, codes
    assert "took 100 ms in all" in client.post(f"/s/{sid}/step/").content.decode()


def test_it_bounds_the_sql_time_a_creators_sessions_spend_in_a_minute(client, settings):
    settings.PLAYGROUND_LIMITS = {"db_statement_ms": 30, "db_ms_per_minute": 100}
    first, second, elsewhere = _endless_sessions(client, ["c-1", "c-1", "c-2"])
    codes = [client.post(f"/s/{first}/step/").status_code for _ in range(8)]
    assert _spent_then_refused(codes, 429) and codes[-1] == 429, codes
    client.post(f"/s/{second}/step/")  # A.init_transactions: no SQL
    r = client.post(f"/s/{second}/step/")
    assert r.status_code == 429 and "in the last minute" in r.content.decode()  # the same creator's minute
    client.post(f"/s/{elsewhere}/step/")
    assert client.post(f"/s/{elsewhere}/step/").status_code == 204  # another creator's is its own


def test_it_keeps_a_checkpoint_after_costly_sql_so_that_no_step_of_it_is_paid_again(client, settings, monkeypatch):
    settings.PLAYGROUND_LIMITS = {"db_statement_ms": 60}
    endless = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"
    cheap = "UPDATE blobs SET id = id"
    steps = [cheap, endless, cheap, cheap, endless, cheap, cheap]
    text = _db_scenario("id integer primary key", "\n".join(f'  - app.sql: "{s}"' for s in steps))
    row = hold(client, session.create(parse_scenario(text), source=text))
    for _ in range(len(steps) + 1):
        session.step(row.id)
    head = session.load(row.id)
    assert sorted(head.checkpoints) == [3, 6]  # right after each timed-out statement
    ran: list[str] = []
    statement = Database._statement

    def counted(db: Database, sql: str) -> None:
        ran.append(sql)
        statement(db, sql)

    monkeypatch.setattr(Database, "_statement", counted)
    session.moment(row.id, 7)  # one step before the head: built from the checkpoint at 6
    assert ran == [cheap]  # from there: the cheap statement only (counted, not timed: a busy machine is slow)


# ------------------------------------------------------------------------------------------ 2. page and frames
def _ten_big_rows(client) -> str:
    steps = "\n".join(f"  - app.sql: \"INSERT INTO blobs VALUES ({i}, printf('%.*c', 16000, 'x'))\"" for i in range(10))
    text = _db_scenario("id integer primary key, v text", steps)
    scenario = parse_scenario(text)
    row = hold(client, session.create(scenario, source=text, backend="sim"))
    for _ in range(11):
        session.step(row.id)
    return row.id


def test_it_keeps_a_page_of_big_database_rows_small_and_shows_each_in_full_on_demand(client):
    sid = _ten_big_rows(client)
    r = client.get(f"/s/{sid}/")
    page = r.content.decode()
    assert r.status_code == 200 and len(r.content) < 400_000  # ten 5 MB rows once made a 100 MB page
    links = re.findall(r'href="(/s/[^"]+/cell/\?[^"]+)"', page)
    assert len(links) == 10 and "show all (+15800 characters)" in page
    full = client.get(links[3].replace("&amp;", "&"))
    assert full.status_code == 200 and full.content.decode() == "x" * 16000
    assert client.get(f"/s/{sid}/cell/?table=blobs&row=99&col=1").status_code == 404
    assert client.get(f"/s/{sid}/cell/?table=blobs&row=1&col=1&at=5").content.decode() == "x" * 16000
    assert client.get(f"/s/{sid}/cell/?table=blobs&row=9&col=1&at=5").status_code == 404  # not yet at step 5


def test_it_cuts_an_update_into_frames_between_its_parts(client, settings):
    sid = _ten_big_rows(client)
    text = broadcast.snapshot(session.load(sid), "en")
    frames = broadcast.frames(text, 8_000)
    assert len(frames) > 1 and all(len(f.encode()) <= 8_000 for f in frames)
    assert "".join(frames) == text.replace(broadcast.SEP, "") or "too large to show live" in "".join(frames)
    assert 'id="state-version"' in frames[-1]  # the version comes last: the page checks it once all is swapped
    huge = broadcast.frames("a" * 30_000 + broadcast.SEP + "<b>ok</b>", 20_000)
    assert huge == [huge[0]] and "too large to show live" in huge[0] and huge[0].endswith("<b>ok</b>")


def test_it_gives_a_cluster_of_many_partitions_shorter_strips():
    text = _db_scenario("id integer primary key").replace(
        "orders: {partitions: 1}", "orders: {partitions: 64}\n    more: {partitions: 64}"
    )
    assert parse_scenario(text).cluster.topics[1].partitions == 64
    too_many = text.replace("more: {partitions: 64}", "more: {partitions: 64}\n    one: {partitions: 1}")
    with pytest.raises(Exception, match="at most 128 partitions"):
        parse_scenario(too_many)


# --------------------------------------------------------------------------- 3. sessions per client, and rooms
def _room(client, code_client: str = "198.51.100.9") -> Workshop:
    c = Client(REMOTE_ADDR=code_client)
    r = c.post("/w/create/", {"title": "T", "scenario": ["zombie-fencing", "commit-and-abort"]})
    assert r.status_code == 302, r.content
    return Workshop.objects.latest("created_at")


def test_it_counts_sessions_made_through_a_room_against_its_creator(settings):
    settings.PLAYGROUND_LIMITS = {"room_sessions_per_hour": 3}
    room = _room(Client())
    codes = []
    for i in range(4):
        c = Client()
        c.post("/w/join/", {"code": room.code, "name": f"attendee {i}"})
        codes.append(c.get(f"/w/{room.code}/").status_code)
    assert codes == [302, 302, 302, 429] and Session.objects.count() == 3


def test_it_caps_rooms_per_client_and_a_rooms_attendees_and_items(settings):
    settings.PLAYGROUND_LIMITS = {"rooms_per_hour": 2, "room_attendees": 2, "room_items": 1}
    c = Client(REMOTE_ADDR="203.0.113.50")
    assert c.post("/w/create/", {"title": "T", "scenario": ["zombie-fencing", "commit-and-abort"]}).status_code == 400
    assert [c.post("/w/create/", {"title": "T", "scenario": ["zombie-fencing"]}).status_code for _ in range(3)] == [
        302,
        302,
        429,
    ]
    room = Workshop.objects.latest("created_at")
    joins = [Client().post("/w/join/", {"code": room.code, "name": f"n{i}"}).status_code for i in range(3)]
    assert joins == [302, 302, 422] and Attendee.objects.filter(workshop=room).count() == 2


@pytest.mark.parametrize("alike", ["EVE", "ｅｖｅ", "e\u0301ve", " Eve  "])
def test_it_refuses_a_display_name_that_looks_like_one_in_the_room(alike):
    room = _room(Client())
    assert Client().post("/w/join/", {"code": room.code, "name": "eve"}).status_code == 302
    r = Client().post("/w/join/", {"code": room.code, "name": alike})
    assert r.status_code == 409 and "looks the same" in r.content.decode()


# ---------------------------------------------------------------------------------------- 4. scenario texts
def _text(n: int) -> str:
    return _db_scenario("id integer primary key").replace("title: DB limits", f"title: Text {n}")


def test_it_limits_new_scenario_texts_per_client_and_per_server(settings):
    settings.PLAYGROUND_LIMITS = {"texts_per_hour": 2, "texts_per_hour_server": 3}
    c = Client(REMOTE_ADDR="203.0.113.60")
    assert [c.post("/editor/save/", {"text": _text(i)}).status_code for i in range(3)] == [302, 302, 429]
    assert c.post("/editor/save/", {"text": _text(0)}).status_code == 302  # the same text again: nothing new
    assert c.post("/editor/play/", {"text": _text(7)}).status_code == 429  # a Play stores its text too
    other = Client(REMOTE_ADDR="203.0.113.61")
    assert [other.post("/editor/save/", {"text": _text(10 + i)}).status_code for i in range(2)] == [302, 429]
    assert ScenarioText.objects.count() == 3


def test_it_stores_nothing_for_a_play_that_fails(client, settings, monkeypatch):
    create = sys.modules["playground.session.create"]

    def refuse(*args, **kwargs):
        raise session.CommandError("the backend did not start", status=503)

    monkeypatch.setattr(create, "fresh", refuse)
    settings.PLAYGROUND_LIMITS = {"sessions_per_minute": 1, "texts_per_hour": 1}
    for _ in range(3):
        assert client.post("/editor/play/", {"text": _text(1), "backend": "sim"}).status_code == 503
    assert ScenarioText.objects.count() == 0 and Session.objects.count() == 0
    monkeypatch.undo()
    assert client.post("/editor/play/", {"text": _text(1), "backend": "sim"}).status_code == 302  # nothing was spent


# ------------------------------------------------------------------------------------ 5. rows a session keeps
def test_it_bounds_the_rows_back_and_reset_leave_behind(client, free_session, settings):
    settings.PLAYGROUND_LIMITS = {"dropped_commands": 5}
    sid = free_session.id
    session.add_producer(sid, "plain")
    for _ in range(8):
        client.post(f"/s/{sid}/action/", {"actor": "rc", "action": "poll"})
        client.post(f"/s/{sid}/action/", {"actor": "rc", "action": "poll"})
        client.post(f"/s/{sid}/back/")
        client.post(f"/s/{sid}/reset/")
    live = Command.objects.filter(session_id=sid, dropped=False).count()
    assert live == 1 and Command.objects.filter(session_id=sid).count() <= live + 5


# -------------------------------------------------------------------------------------------- 6. no more 500s
@pytest.mark.parametrize(
    "where, text",
    [
        ("partitions", "orders: {partitions: 1}"),
        ("seed", "format: 1"),
        ("clock", "  - A.init_transactions"),
        ("partition", "  - A.init_transactions"),
    ],
)
def test_it_answers_a_number_of_5000_digits_with_a_line_numbered_message(client, where, text):
    body = _db_scenario("id integer primary key")
    body = {
        "partitions": body.replace("partitions: 1", f"partitions: {BIG}"),
        "seed": body.replace("format: 1", f"format: 1\nseed: {BIG}"),
        "clock": body + f"  - clock.advance: {BIG}s\n",
        "partition": body + f"  - A.produce: {{topic: orders, partition: {BIG}, value: x}}\n",
    }[where]
    r = client.post("/editor/check/", {"text": body})
    assert r.status_code == 200 and r.json()["errors"][0]["line"] > 0, r.content[:300]


def test_it_refuses_a_seed_past_what_a_session_stores_when_played_and_when_shared(client):
    text = _db_scenario("id integer primary key").replace("format: 1", f"format: 1\nseed: {2**63}")
    r = client.post("/editor/play/", {"text": text})
    assert r.status_code == 400 and "<code>seed</code>: must be between 0 and 2147483647" in r.content.decode()
    stored = ScenarioText.store(text, "db-limits", shared=True)  # saved before the loader said so
    r = client.post(f"/sc/{stored.id}/play/")
    assert r.status_code == 422 and "no longer loads" in r.content.decode()


def test_it_orders_a_rooms_agenda_by_what_is_a_number_only(client):
    r = client.post("/w/create/", {"title": "T", "scenario": ["zombie-fencing"], "order-zombie-fencing": "²"})
    assert r.status_code == 302


# -------------------------------------------------------------------------------- 7. the inspector's key
def test_it_limits_wrong_inspector_keys_but_never_refuses_the_right_one(settings):
    settings.INSPECTOR_KEY = "k" * 40
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:1"
    c = Client(REMOTE_ADDR="203.0.113.70")
    assert [c.post("/inspect/key/", {"key": f"guess {i % 9}"}).status_code for i in range(18)] == [403] * 18
    assert c.post("/inspect/key/", {"key": "guess 9"}).status_code == 403  # the same guess again counted once
    assert c.post("/inspect/key/", {"key": "guess 10"}).status_code == 429
    assert c.post("/inspect/key/", {"key": "k" * 40}).status_code == 302


# ------------------------------------------------------------------------------------------ 8. Idempotency-Key
def test_it_answers_a_retried_command_as_the_first_time_and_stores_nothing_new(client, free_session):
    sid = free_session.id
    first = client.post(f"/s/{sid}/add-producer/", {"mode": "plain"}, HTTP_IDEMPOTENCY_KEY="click-1")
    again = client.post(f"/s/{sid}/add-producer/", {"mode": "plain"}, HTTP_IDEMPOTENCY_KEY="click-1")
    assert first.status_code == again.status_code == 204 and again["Idempotent-Replayed"] == "true"
    assert Command.objects.filter(session_id=sid).count() == 1
    bad = client.post(
        f"/s/{sid}/produce/", {"actor": "Nope", "topic": "orders", "value": "x"}, HTTP_IDEMPOTENCY_KEY="k2"
    )
    bad_again = client.post(
        f"/s/{sid}/produce/", {"actor": "A", "topic": "orders", "value": "x"}, HTTP_IDEMPOTENCY_KEY="k2"
    )
    assert bad.status_code == bad_again.status_code == 400 and bad.content == bad_again.content
    assert client.post(f"/s/{sid}/add-producer/", {"mode": "plain"}, HTTP_IDEMPOTENCY_KEY="click-3").status_code == 204
    assert Command.objects.filter(session_id=sid).count() == 2 and CommandAnswer.objects.count() == 3
    assert client.post(f"/s/{sid}/step/", HTTP_IDEMPOTENCY_KEY="not a key!").status_code == 400


def test_it_stores_no_key_for_a_watcher(free_session):
    r = Client().post(f"/s/{free_session.id}/add-producer/", {"mode": "plain"}, HTTP_IDEMPOTENCY_KEY="w-1")
    assert r.status_code == 403 and CommandAnswer.objects.count() == 0


def test_it_keeps_the_newest_answers_of_a_session_only(client, free_session, settings):
    settings.PLAYGROUND_LIMITS = {"idempotency_keys": 3}
    for i in range(6):
        client.post(f"/s/{free_session.id}/action/", {"actor": "rc", "action": "poll"}, HTTP_IDEMPOTENCY_KEY=f"p{i}")
    assert sorted(CommandAnswer.objects.values_list("key", flat=True)) == ["p3", "p4", "p5"]


@pytest.mark.django_db(transaction=True)
async def test_it_answers_a_retried_websocket_command_as_the_first_time(free_session):
    from channels.db import database_sync_to_async

    from playground.asgi import application
    from playground.session import capability

    sid = free_session.id
    cookie = f"{capability.cookie_name(sid)}={free_session.drive_secret}".encode()
    ws = WebsocketCommunicator(
        application,
        f"/ws/s/{sid}/",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie)],
    )
    assert (await ws.connect(timeout=5))[0]
    await ws.receive_from(timeout=5)
    message = {"type": "command", "command": "add-producer", "data": {"mode": "plain"}, "idempotency_key": "ws-1"}
    for _ in range(2):
        await ws.send_json_to(message)
    await ws.receive_from(timeout=5)  # the update of the one producer added
    assert await ws.receive_nothing(timeout=0.5)
    count = await database_sync_to_async(lambda: Command.objects.filter(session_id=sid).count())()
    assert count == 1
    await ws.disconnect()


# ----------------------------------------------------------------------------- 9. headers, keys and sockets
def test_it_sends_a_content_security_policy_with_every_page(client, free_session):
    for path in ("/", "/editor/", f"/s/{free_session.id}/", "/w/", "/w/new/"):
        policy = client.get(path)["Content-Security-Policy"]
        assert "script-src 'self';" in policy and "'unsafe-eval'" not in policy, path
        assert re.search(r"style-src 'self' 'nonce-[\w-]{20,}'", policy)


def test_it_refuses_a_production_secret_key_under_50_characters(tmp_path):
    with pytest.raises(ImproperlyConfigured, match="at least 50"):
        production.secret_key(tmp_path, {"DJANGO_SECRET_KEY": "s3cret-but-only-thirty-chars-x"})
    with pytest.raises(ImproperlyConfigured, match="5 different"):
        production.secret_key(tmp_path, {"DJANGO_SECRET_KEY": "ab" * 40})
    assert production.secret_key(tmp_path, {"DJANGO_SECRET_KEY": "k" * 30 + "-a-key-of-sixty-characters-x"}) and True
    (tmp_path / "secret_key").write_text("short\n")
    (tmp_path / "secret_key").chmod(0o600)
    with pytest.raises(ImproperlyConfigured, match="secret_key has 5 characters"):
        production.secret_key(tmp_path, {})


async def _socket(app, address: str) -> tuple[WebsocketCommunicator, bool]:
    ws = WebsocketCommunicator(app, "/ws/s/no-such-session/")
    ws.scope["client"] = (address, 40000)
    connected, _code = await ws.connect(timeout=5)
    return ws, connected


@pytest.mark.django_db(transaction=True)
async def test_it_caps_the_websockets_one_client_holds_open(settings):
    settings.PLAYGROUND_LIMITS = {"websockets_per_client": 3, "websockets": 5}
    slots = WebsocketSlots(URLRouter(websocket_urlpatterns))

    async def hold_open(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        while (await receive())["type"] != "websocket.disconnect":
            pass

    slots.app = hold_open  # sockets that stay open, as a page's do
    mine = [await _socket(slots, "198.51.100.1") for _ in range(4)]
    assert [c for _ws, c in mine] == [True, True, True, False]
    others = [await _socket(slots, "198.51.100.2") for _ in range(3)]
    assert [c for _ws, c in others] == [True, True, False]  # 5 in all
    await mine[0][0].disconnect()
    assert (await _socket(slots, "198.51.100.1"))[1] is True  # a closed one frees its place
    assert slots.open == {"198.51.100.1": 3, "198.51.100.2": 2} and slots.total == 5


def test_it_knows_the_limits_of_a_room_join_code_by_heart():
    assert rooms.wrong_codes_per_minute() == 20 and len(Workshop().code) == 6


async def _request(slots: RequestSlots, address: str) -> int:
    """A request of `address` through the slots: its answer's status."""
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    await slots({"type": "http", "path": "/s/x/step/", "client": (address, 1), "headers": []}, None, send)
    return sent[0]["status"]


async def test_it_lets_a_client_run_a_few_requests_at_once_and_queues_the_rest_without_holding_up_others(settings):
    import asyncio

    settings.PLAYGROUND_LIMITS = {
        "requests_per_client": 2,
        "queued_per_client": 3,
        "requests_in_django_per_client": 10,
        "requests_at_once": 10,
    }
    release = asyncio.Event()
    started: list[str] = []

    async def view(scope, receive, send):
        started.append(scope["client"][0])
        await release.wait()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    slots = RequestSlots(view)
    burst = [asyncio.create_task(_request(slots, "198.51.100.1")) for _ in range(6)]
    other = asyncio.create_task(_request(slots, "198.51.100.2"))
    await asyncio.sleep(0.05)
    assert started == ["198.51.100.1", "198.51.100.1", "198.51.100.2"]  # two at once; the other client is not held up
    release.set()
    assert sorted([await t for t in burst]) == [204] * 5 + [429]  # 2 running, 3 waiting, the 6th refused
    assert await other == 204 and slots.clients == {}


async def test_it_lets_each_client_into_django_in_turn_so_a_burst_does_not_keep_others_waiting(settings):
    """One request in Django at a time here: a client with four running and another with two are let in
    alternately, not in the order they came (all of the first's before any of the second's)."""
    import asyncio

    settings.PLAYGROUND_LIMITS = {"requests_per_client": 4, "requests_at_once": 1}
    started: list[str] = []
    inside = [0]

    async def view(scope, receive, send):
        inside[0] += 1
        assert inside[0] == 1, "two requests in Django at once"
        started.append(scope["client"][0])
        for _ in range(3):
            await asyncio.sleep(0)
        inside[0] -= 1
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    slots = RequestSlots(view)
    burst = [asyncio.create_task(_request(slots, "198.51.100.1")) for _ in range(4)]
    await asyncio.sleep(0)
    others = [asyncio.create_task(_request(slots, "198.51.100.2")) for _ in range(2)]
    assert [await t for t in burst + others] == [204] * 6
    a, b = "198.51.100.1", "198.51.100.2"
    assert started == [a, a, b, a, b, a]
    assert slots.clients == {} and slots.admitted == 0 and not slots.rotation


async def test_it_lets_another_clients_request_into_django_while_one_client_has_its_own_inside(settings):
    """A client's requests go into Django one at a time; another client's goes in beside them at once, without
    waiting for the first client's to end (each request runs its view on a thread of its own)."""
    import asyncio

    settings.PLAYGROUND_LIMITS = {"requests_per_client": 4, "requests_in_django_per_client": 1, "requests_at_once": 4}
    a, b = "198.51.100.1", "198.51.100.2"
    release = {a: asyncio.Event(), b: asyncio.Event()}
    started: list[str] = []

    async def view(scope, receive, send):
        started.append(scope["client"][0])
        await release[scope["client"][0]].wait()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    slots = RequestSlots(view)
    burst = [asyncio.create_task(_request(slots, a)) for _ in range(3)]
    await asyncio.sleep(0)
    other = asyncio.create_task(_request(slots, b))
    await until(lambda: started == [a, b], every_s=0.001)
    release[b].set()
    assert await asyncio.wait_for(other, 5) == 204 and started == [a, b]  # done while a's first is still inside
    release[a].set()
    assert [await t for t in burst] == [204] * 3
    assert started == [a, b, a, a] and slots.clients == {} and slots.admitted == 0 and not slots.rotation


async def test_it_lets_no_more_than_requests_at_once_into_django_and_the_next_clients_in_their_order(settings):
    import asyncio

    settings.PLAYGROUND_LIMITS = {"requests_in_django_per_client": 1, "requests_at_once": 2}
    release = asyncio.Event()
    started: list[str] = []
    inside = [0, 0]  # now, most

    async def view(scope, receive, send):
        started.append(scope["client"][0])
        inside[0] += 1
        inside[1] = max(inside)
        await release.wait()
        inside[0] -= 1
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    slots = RequestSlots(view)
    clients = [f"198.51.100.{n}" for n in range(1, 6)]
    tasks = []
    for who in clients:
        tasks.append(asyncio.create_task(_request(slots, who)))
        await asyncio.sleep(0)
    await until(lambda: len(started) == 2, every_s=0.001)
    await asyncio.sleep(0.01)
    assert started == clients[:2]
    release.set()
    assert [await t for t in tasks] == [204] * 5
    assert started == clients and inside[1] == 2 and slots.admitted == 0 and not slots.rotation


async def test_it_passes_a_place_in_django_on_when_a_waiting_client_goes_away(settings):
    import asyncio

    settings.PLAYGROUND_LIMITS = {"requests_at_once": 1}
    release = asyncio.Event()

    async def view(scope, receive, send):
        await release.wait()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    slots = RequestSlots(view)
    first = asyncio.create_task(_request(slots, "198.51.100.1"))
    await asyncio.sleep(0)
    gone = asyncio.create_task(_request(slots, "198.51.100.2"))
    last = asyncio.create_task(_request(slots, "198.51.100.3"))
    await asyncio.sleep(0.01)
    gone.cancel()
    release.set()
    await first
    await asyncio.wait_for(last, 5)
    assert gone.cancelled() and slots.admitted == 0 and slots.clients == {}
