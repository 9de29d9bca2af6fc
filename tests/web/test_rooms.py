"""Workshops: a facilitator's room, attendees joining by code with a display name, a session each per agenda item,
the room moved from item to item, the board's cards and the room's answers, and who may do what."""

from __future__ import annotations

import re

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from playground import rooms, session
from playground.asgi import application
from playground.engine.spec import Profile
from playground.models import Attendee, Seat, Workshop

pytestmark = pytest.mark.django_db(transaction=True)

AGENDA = ["ex-who-is-fenced", "zombie-fencing"]


def _facilitator(agenda: list[str] = AGENDA) -> tuple[Client, Workshop]:
    c = Client()
    r = c.post("/w/create/", {"title": "Tuesday", "scenario": agenda})
    assert r.status_code == 302, r.content
    code = r["Location"].strip("/").split("/")[-2]
    return c, Workshop.objects.get(code=code)


def _attendee(room: Workshop, name: str) -> tuple[Client, str]:
    c = Client()
    r = c.post("/w/join/", {"code": room.code.lower(), "name": name})
    assert r.status_code == 302, r.content
    r = c.get(r["Location"])
    assert r.status_code == 302 and r["Location"].startswith("/s/")
    return c, r["Location"].strip("/").split("/")[-1]


def test_it_gives_a_room_a_six_character_code_without_look_alikes():
    _c, room = _facilitator()
    assert len(room.code) == 6 and not set(room.code) & set("IL1O0")
    assert [a["id"] for a in room.agenda] == AGENDA


def test_it_gives_each_attendee_a_session_of_their_own_that_only_they_drive():
    _f, room = _facilitator()
    ada, ada_sid = _attendee(room, "Ada")
    lin, lin_sid = _attendee(room, "Lin")
    assert ada_sid != lin_sid and session.load(ada_sid).scenario.id == "ex-who-is-fenced"
    assert ada.post(f"/s/{ada_sid}/step/").status_code == 204
    assert lin.post(f"/s/{ada_sid}/step/").status_code == 403  # attendees cannot act on each other's sessions
    again = ada.get(f"/w/{room.code}/")  # the same browser comes back: the same session, still hers to drive
    assert again["Location"] == f"/s/{ada_sid}/"
    assert ada.post(f"/s/{ada_sid}/step/").status_code == 204


def test_it_moves_the_room_only_for_the_facilitator():
    fac, room = _facilitator()
    ada, ada_sid = _attendee(room, "Ada")
    assert ada.post(f"/w/{room.code}/move/", {"item": "1"}).status_code == 403
    assert ada.get(f"/w/{room.code}/board/").status_code == 403
    assert fac.post(f"/w/{room.code}/move/", {"item": "1"}).status_code == 204
    r = ada.get(f"/w/{room.code}/")
    new_sid = r["Location"].strip("/").split("/")[-1]
    assert new_sid != ada_sid and session.load(new_sid).scenario.id == "zombie-fencing"
    assert fac.post(f"/w/{room.code}/move/", {"item": "7"}).status_code == 404


def test_it_refuses_a_taken_name_and_a_name_of_nothing():
    _f, room = _facilitator()
    _attendee(room, "Ada")
    r = Client().post("/w/join/", {"code": room.code, "name": "Ada"})
    assert r.status_code == 409 and "already called" in r.content.decode()
    assert Client().post("/w/join/", {"code": room.code, "name": "   "}).status_code == 400
    assert Attendee.objects.filter(workshop=room).count() == 1


def test_it_rate_limits_wrong_join_codes_per_client_but_lets_the_right_code_through():
    c = Client()
    for i in range(rooms.wrong_codes_per_minute()):
        assert (
            c.post("/w/join/", {"code": "ZZZZZ" + "23456789ABCDEFGHJKMNPQRSTUVWXY"[i], "name": "x"}).status_code == 404
        )
    assert c.post("/w/join/", {"code": "ZZZZZZ", "name": "x"}).status_code == 429
    _f, room = _facilitator()
    # one attendee guessing does not lock the room out for everyone behind the same address
    assert c.post("/w/join/", {"code": room.code, "name": "late"}).status_code == 302


def test_it_counts_the_same_wrong_code_typed_again_once():
    c = Client()
    for _ in range(rooms.wrong_codes_per_minute() + 5):
        assert c.post("/w/join/", {"code": "ZZZZZZ", "name": "x"}).status_code == 404


def test_it_looks_a_wrong_code_up_once():
    # a guesser's requests are nearly all wrong codes: each one is a single query for the room
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as seen:
        assert Client().post("/w/join/", {"code": "ZZZZZZ", "name": "x"}).status_code == 404
    lookups = [q["sql"] for q in seen.captured_queries if Workshop._meta.db_table in q["sql"]]
    assert len(lookups) == 1, lookups


def test_it_never_hits_the_session_creation_limit_when_a_room_joins(settings):
    settings.PLAYGROUND_LIMITS = {"sessions_per_minute": 2}
    _f, room = _facilitator()
    for i in range(6):  # a room behind one address (one NAT)
        _attendee(room, f"attendee {i}")
    assert Seat.objects.filter(workshop=room).count() == 6


def test_it_escapes_display_names_on_the_board_and_the_pages():
    fac, room = _facilitator()
    name = "<script>alert(1)</script>"
    c, sid = _attendee(room, name)
    board = fac.get(f"/w/{room.code}/board/").content.decode()
    page = c.get(f"/s/{sid}/").content.decode()
    for html in (board, page):
        assert name not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_it_counts_the_rooms_answers_for_the_board():
    _f, room = _facilitator()
    sids = [_attendee(room, n)[1] for n in ("Ada", "Lin", "Bo")]
    steps = session.load(sids[0]).steps
    q = next(s for s in steps if s.predict)
    for sid, choice in zip(sids, (q.predict["answer"], q.predict["answer"], -1)):
        for _ in range(q.index):
            session.step(sid)
        session.predict(sid, q.index, choice)
    (first, *_rest) = rooms.questions(Workshop.objects.get(pk=room.pk), 0)
    assert first["n"] == q.index and first["dist"]["counts"][q.predict["answer"]] == 2 and first["dist"]["skipped"] == 1
    session.step(sids[0])
    from playground.web import broadcast, panels

    live = session.load(sids[0])
    (asked,) = [a for a in panels.exercise(live, broadcast.view_of(live))["asked"] if a["n"] == q.index]
    assert asked["dist"]["total"] == 3  # the attendee sees the whole room's answers once the step ran


def test_it_shows_on_the_board_how_many_rows_the_database_and_kafka_disagree_on():
    fac, room = _facilitator(["db-incident-in-full"])
    _ada, sid = _attendee(room, "Ada")
    board = fac.get(f"/w/{room.code}/board/").content.decode()
    assert "no gap" in board  # nothing paid yet: nothing to reconcile
    for _ in session.load(sid).steps:
        session.step(sid)
    board = fac.get(f"/w/{room.code}/board/").content.decode()
    assert '<span class="gaps">4 gaps</span> database vs Kafka' in board  # orders 102 to 105: paid, never delivered


def test_it_survives_a_restart():
    _f, room = _facilitator()
    ada, sid = _attendee(room, "Ada")
    ada.post(f"/s/{sid}/step/")
    session.CACHE.clear()  # what a restarted server has: the database
    assert ada.get(f"/w/{room.code}/")["Location"] == f"/s/{sid}/"
    assert session.load(sid).cursor == 1 and session.load(sid).seat["name"] == "Ada"


async def test_it_shows_the_board_each_attendees_progress_live():
    fac, room = await database_sync_to_async(_facilitator)()
    _ada, sid = await database_sync_to_async(_attendee)(room, "Ada")
    cookie = "; ".join(f"{k}={v.value}" for k, v in fac.cookies.items())
    board = WebsocketCommunicator(
        application,
        f"/ws/w/{room.pk}/",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie.encode())],
    )
    assert (await board.connect(timeout=5))[0]
    assert 'data-item="0"' in await board.receive_from(timeout=5)  # where the room is: a late page follows it
    await database_sync_to_async(session.step)(sid)
    frame = await board.receive_from(timeout=5)
    assert 'id="seat-' in frame and "Ada" in frame and "1/" in frame
    stranger = WebsocketCommunicator(
        application, f"/ws/w/{room.pk}/", headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    )
    connected, code = await stranger.connect(timeout=5)
    assert not connected and code == 4403  # neither the facilitator nor an attendee
    await database_sync_to_async(rooms.move)(room, 1)
    # The facilitator's pages: the board goes to the board, the facilitator's own session tab to their session for
    # the new item (/w/<code>/ seats them); rooms.js picks by the page it is on.
    moved = await board.receive_from(timeout=5)
    assert f'data-goto="/w/{room.code}/"' in moved and f'data-board="/w/{room.code}/board/"' in moved
    await board.disconnect()


async def test_it_follows_a_move_and_a_follow_switch_made_while_the_page_connects(monkeypatch):
    """The room moves (and follow-me switches on) while the socket checks who is connecting, after it has read
    where the room was: the page still learns where the room is now (its group's messages, after the state read)."""
    _f, room = await database_sync_to_async(_facilitator)()
    ada, _sid = await database_sync_to_async(_attendee)(room, "Ada")
    checked = rooms.attendee_of

    def attendee_of_then_the_facilitator_acts(*args, **kwargs):
        found = checked(*args, **kwargs)
        rooms.move(room, 1)
        rooms.set_follow(room, True)
        return found

    monkeypatch.setattr(rooms, "attendee_of", attendee_of_then_the_facilitator_acts)
    cookie = "; ".join(f"{k}={v.value}" for k, v in ada.cookies.items())
    page = WebsocketCommunicator(
        application,
        f"/ws/w/{room.pk}/",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie.encode())],
    )
    assert (await page.connect(timeout=5))[0]
    frames = [await page.receive_from(timeout=5)]
    while not await page.receive_nothing(timeout=0.3):
        frames.append(await page.receive_from())
    items = re.findall(r'data-item="(\d+)"', "".join(frames))
    follows = re.findall(r'data-follow="(\w+)" data-follow-src="([^"]*)"', "".join(frames))
    mine = await database_sync_to_async(rooms.facilitator_session)(room, 1)  # seated as the room moved
    assert items[-1] == "1" and follows[-1] == ("on", f"/s/{mine}/?present=1&amp;embed=1")
    assert "data-board" not in "".join(frames)  # an attendee's page is never sent to the board
    await page.disconnect()


def test_it_numbers_an_attendees_step_on_the_board_as_their_own_page_does():
    """Step k is the session after its first k commands (a command of the attendee's own counts too): the card says
    what the attendee's header says, not how far the scenario's cursor is."""
    import re

    fac, room = _facilitator()
    ada, sid = _attendee(room, "Ada")
    for _ in range(3):
        assert ada.post(f"/s/{sid}/step/").status_code == 204
    assert ada.post(f"/s/{sid}/add-producer/", {"mode": "plain"}).status_code == 204  # a command of her own
    live = session.load(sid)
    assert live.step_count == live.cursor + 1  # the scenario's cursor does not count it; the steps do
    page = ada.get(f"/s/{sid}/").content.decode()
    shown = re.search(r'class="cursor" data-step="(\d+)">\d+ / (\d+)<', page)
    assert shown is not None
    board = fac.get(f"/w/{room.code}/board/").content.decode()
    card = board[board.index(f'data-session="{sid}"') :]
    assert f"{shown.group(1)}/{shown.group(2)}</p>" in card[: card.index("</p>") + 4]
    assert int(shown.group(1)) == live.step_count


async def test_it_renders_the_board_in_the_facilitators_language():
    fac, room = await database_sync_to_async(_facilitator)()
    board = await _board(fac, room, lang="zh-hans")
    _ada, sid = await database_sync_to_async(_attendee)(room, "Ada")
    joined = await board.receive_from(timeout=5)
    assert "Ada" in joined and "尚未开始" in joined and 'id="seat-count"' in joined
    await database_sync_to_async(session.step)(sid)
    stepped = await board.receive_from(timeout=5)
    assert "Ada" in stepped and "步骤 1/" in stepped
    await board.disconnect()


async def test_it_shows_the_board_an_attendee_as_they_join():
    fac, room = await database_sync_to_async(_facilitator)()
    board = await _board(fac, room)
    await database_sync_to_async(_attendee)(room, "Ada")
    frame = await board.receive_from(timeout=5)
    assert 'id="seat-' in frame and "Ada" in frame and "not started" in frame
    assert 'id="seat-count" hx-swap-oob="true">1 attendee<' in frame
    await board.disconnect()


async def test_it_shows_the_board_a_room_answering_at_once_in_one_render(monkeypatch):
    from playground.web import consumers

    # a window the three answers fall in however busy the machine (the server's is 250 ms: a room answers within it)
    monkeypatch.setattr(consumers, "ANSWERS_COALESCE_MS", 3000)
    fac, room = await database_sync_to_async(_facilitator)()
    sids = [(await database_sync_to_async(_attendee)(room, n))[1] for n in ("Ada", "Lin", "Bo")]
    q = next(s for s in (await database_sync_to_async(session.load)(sids[0])).steps if s.predict)

    def walk_to_the_question(sid):
        for _ in range(q.index):
            session.step(sid)

    for sid in sids:
        await database_sync_to_async(walk_to_the_question)(sid)
    board = await _board(fac, room)
    for sid in sids:
        await database_sync_to_async(session.predict)(sid, q.index, q.predict["answer"])
    frames = []
    while not await board.receive_nothing(timeout=5.0):
        frames.append(await board.receive_from())
    questions = [f for f in frames if 'id="room-questions"' in f]
    assert len(questions) == 1 and len(frames) == 4  # three cards and one render of the answers (all three)
    assert "3 answers" in questions[0]
    await board.disconnect()


async def _board(fac, room, lang: str = "en") -> WebsocketCommunicator:
    cookie = "; ".join(f"{k}={v.value}" for k, v in fac.cookies.items())
    board = WebsocketCommunicator(
        application,
        f"/ws/w/{room.pk}/?lang={lang}",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie.encode())],
    )
    assert (await board.connect(timeout=5))[0]
    assert 'data-item="0"' in await board.receive_from(timeout=5)
    return board


def test_it_limits_wrong_codes_per_forwarded_client_only_behind_a_trusted_proxy(settings):
    """Behind a reverse proxy every request comes from the proxy's address: trusted, the client's forwarded address
    is what is limited (a room's attendees are not lumped together); not trusted, a forged header changes nothing."""
    settings.PLAYGROUND_TRUSTED_PROXIES = "127.0.0.1"
    for i in range(rooms.wrong_codes_per_minute()):
        Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7").post(
            "/w/join/", {"code": f"ZZZZ{i:02d}", "name": "x"}
        )
    assert (
        Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7")
        .post("/w/join/", {"code": "ZZZZZZ", "name": "x"})
        .status_code
        == 429
    )
    assert (
        Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.8")
        .post("/w/join/", {"code": "ZZZZZZ", "name": "x"})
        .status_code
        == 404
    )
    settings.PLAYGROUND_TRUSTED_PROXIES = ""
    for i in range(rooms.wrong_codes_per_minute()):
        Client(REMOTE_ADDR="198.51.100.1", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").post(
            "/w/join/", {"code": f"ZZZZ{i:02d}", "name": "x"}
        )
    assert (
        Client(REMOTE_ADDR="198.51.100.1", HTTP_X_FORWARDED_FOR="203.0.113.99")
        .post("/w/join/", {"code": "ZZZZZZ", "name": "x"})
        .status_code
        == 429
    )


def test_it_gives_two_pages_opening_the_same_item_at_once_the_same_seat(monkeypatch):
    """The follow-me frame and the page around it can open the next item together: one seat, one session."""
    _f, room = _facilitator()
    _c, _first = _attendee(room, "Ada")
    ada = Attendee.objects.get(workshop=room, name="Ada")
    real_create = session.create
    winner = {}

    def racing_create(*args, **kwargs):
        row = real_create(*args, **kwargs)
        if not winner:  # the other page's request lands its seat while this one builds its session
            other = real_create(*args, **kwargs)
            Seat.objects.create(workshop=room, attendee=ada, item=1, session_id=other.id)
            winner["sid"] = other.id
        return row

    monkeypatch.setattr(session, "create", racing_create)
    sid, _key = rooms.seat(room, ada, 1, "secret")
    assert sid == winner["sid"] and Seat.objects.filter(workshop=room, attendee=ada, item=1).count() == 1
    from playground.models import Session

    assert Session.objects.filter(seat__isnull=True, scenario_id="zombie-fencing").count() == 0  # the loser's is gone


def test_it_starts_a_new_workshop_with_nothing_ticked_and_a_profile_choice_per_item():
    page = Client().get("/w/new/").content.decode()
    assert 'name="scenario"' in page and "checked" not in page
    assert 'id="agenda-list"' in page and '<option value="4-java">Kafka 4.4.0 · java</option>' in page


def test_it_runs_each_agenda_item_in_the_profile_chosen_for_it():
    fac = Client()
    r = fac.post(
        "/w/create/",
        {
            "title": "Tuesday",
            "scenario": AGENDA,
            "order-zombie-fencing": "1",
            "order-ex-who-is-fenced": "2",
            "profile-zombie-fencing": "4-java",
        },
    )
    assert r.status_code == 302, r.content
    room = Workshop.objects.get(code=r["Location"].strip("/").split("/")[-2])
    assert [a["id"] for a in room.agenda] == ["zombie-fencing", "ex-who-is-fenced"]
    ada, first = _attendee(room, "Ada")
    assert session.load(first).profile == Profile("4", "java")
    assert "Kafka 4.4.0 · java" in fac.get(f"/w/{room.code}/board/").content.decode()  # the board says so
    assert fac.post(f"/w/{room.code}/move/", {"item": "1"}).status_code == 204
    second = ada.get(f"/w/{room.code}/")["Location"].strip("/").split("/")[-1]
    assert second != first and session.load(second).profile == session.load(second).scenario.profile


def test_it_refuses_an_agenda_item_profile_that_is_not_one_of_the_playground():
    r = Client().post("/w/create/", {"title": "T", "scenario": AGENDA, "profile-zombie-fencing": "2.8-java"})
    assert r.status_code == 400 and "profile-zombie-fencing" in r.content.decode()
    assert not Workshop.objects.exists()


def test_it_links_the_gallery_to_workshops_and_the_inspector():
    page = Client().get("/").content.decode()
    for link in ('href="/w/" id="to-join"', 'href="/w/new/" id="to-room-new"', 'href="/inspect/" id="to-inspect"'):
        assert link in page


def test_it_says_the_new_workshop_page_and_the_gallery_links_in_chinese():
    c = Client()
    c.cookies["django_language"] = "zh-hans"
    page = c.get("/w/new/").content.decode()
    for zh in ("议程", "还没有内容：勾选一个场景或练习。", "从议程中移除", "按场景自身的运行环境"):
        assert zh in page
    assert "remove from the agenda" not in page and "Nothing yet" not in page
    gallery = c.get("/").content.decode()
    assert "加入工作坊" in gallery and "检查一个集群" in gallery and "join a workshop" not in gallery


def test_the_boards_card_names_each_partition_and_counts_its_records_in_words_in_both_languages(settings):
    """Issue 33: the card's drawing of a seat's logs was a row of 9 px squares without a name; now each partition says
    its name, draws its last records (a marker's letter in its cell) and counts them by fate in the board's words."""
    fac, room = _facilitator(["zombie-fencing"])
    ada, sid = _attendee(room, "Ada")
    for _ in range(6):
        assert ada.post(f"/s/{sid}/step/").status_code == 204
    board = fac.get(f"/w/{room.code}/board/").content.decode()
    card = re.search(r'<article id="seat-[^"]+".*?</article>', board, re.S).group(0)
    names = re.findall(r'<span class="mini-tp" translate="no">([^<]+)</span>', card)
    assert "orders-0" in names and len(names) == len(set(names))
    strip = re.search(r'class="mini-tp" translate="no">orders-0</span>(.*?)</div>', card, re.S).group(1)
    assert re.search(r'<i class="mc f-marker m-A">A</i>', strip) and re.search(
        r'class="mn f-aborted">\d+ aborted<', strip
    )
    assert "no record yet" in card  # a partition still empty says so
    fac.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    zh = fac.get(f"/w/{room.code}/board/").content.decode()
    assert re.search(r'class="mn f-aborted">\d+ 已中止<', zh) and "还没有消息" in zh
