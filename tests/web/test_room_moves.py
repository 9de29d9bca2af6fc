"""Rooms that move at once: a page opened at the session's current version gets no second rendering of every panel
over its websocket; follow-me's frame names the facilitator's session (the pages dock it without a reload) and a
move keeps it following; a run goes at the speed its page asks for."""

from __future__ import annotations

import re

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from playground import rooms, session
from playground.asgi import application
from playground.models import Counter, Seat, Session, Workshop
from playground.session import limits, runner

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


def _facilitator() -> tuple[Client, Workshop]:
    c = Client()
    r = c.post("/w/create/", {"title": "Tuesday", "scenario": ["ex-who-is-fenced", "zombie-fencing"]})
    assert r.status_code == 302, r.content
    return c, Workshop.objects.get(code=r["Location"].strip("/").split("/")[-2])


def _attendee(room: Workshop, name: str) -> tuple[Client, str]:
    c = Client()
    assert c.post("/w/join/", {"code": room.code, "name": name}).status_code == 302
    return c, c.get(f"/w/{room.code}/")["Location"].strip("/").split("/")[-1]


def _cookie(c: Client) -> bytes:
    return "; ".join(f"{k}={v.value}" for k, v in c.cookies.items()).encode()


def _socket_url(page: str) -> str:
    return re.search(r'ws-connect="(/ws/s/[^"]+)"', page).group(1).replace("&amp;", "&")


async def test_it_sends_a_page_opened_at_the_current_version_no_snapshot_and_a_stale_one_a_snapshot():
    _f, room = await database_sync_to_async(_facilitator)()
    ada, sid = await database_sync_to_async(_attendee)(room, "Ada")
    page = (await database_sync_to_async(ada.get)(f"/s/{sid}/")).content.decode()
    url = _socket_url(page)
    assert url.endswith("&v=0")
    ws = WebsocketCommunicator(application, url, headers=HEADERS)
    assert (await ws.connect(timeout=5))[0]
    first = await ws.receive_from(timeout=5)
    assert 'id="state-version" data-version="0"' in first and 'id="ws-moment"' in first
    assert 'id="p-logs"' not in first and len(first) < 300  # the page has every panel already
    await database_sync_to_async(session.step)(sid)  # after that, updates as ever
    assert 'data-version="1"' in await ws.receive_from(timeout=5)
    await ws.disconnect()
    stale = WebsocketCommunicator(application, url, headers=HEADERS)  # the page at version 0, the session at 1
    assert (await stale.connect(timeout=5))[0]
    snapshot = await stale.receive_from(timeout=5)
    assert 'id="p-logs"' in snapshot and 'data-version="1"' in snapshot
    await stale.disconnect()


async def test_it_docks_the_facilitators_session_on_every_page_without_a_reload():
    fac, room = await database_sync_to_async(_facilitator)()
    ada, ada_sid = await database_sync_to_async(_attendee)(room, "Ada")
    page = WebsocketCommunicator(
        application, f"/ws/w/{room.pk}/", headers=[*HEADERS, (b"cookie", await database_sync_to_async(_cookie)(ada))]
    )
    assert (await page.connect(timeout=5))[0]
    assert 'data-follow="off" data-follow-src=""' in await page.receive_from(timeout=5)
    assert (await database_sync_to_async(fac.post)(f"/w/{room.code}/follow/", {"on": "1"})).status_code == 204
    mine = await database_sync_to_async(rooms.facilitator_session)(room, 0)
    frame = await page.receive_from(timeout=5)
    assert f'data-follow="on" data-follow-src="/s/{mine}/?present=1&amp;embed=1"' in frame
    # the attendee's page, loaded now, has the panel docked; the facilitator's own page does not frame itself
    html = (await database_sync_to_async(ada.get)(f"/s/{ada_sid}/")).content.decode()
    assert re.search(rf'id="follow-panel"[^>]*>.*<iframe src="/s/{mine}/\?present=1&amp;embed=1"', html, re.S)
    own = (await database_sync_to_async(fac.get)(f"/s/{mine}/")).content.decode()
    assert re.search(r'id="follow-panel"[^>]* hidden>', own)
    embed = (await database_sync_to_async(ada.get)(f"/s/{mine}/?present=1&embed=1")).content.decode()
    assert re.search(r'<body[^>]*class="[^"]*\bembed\b', embed)
    # a move with follow-me on: the facilitator's session for the next item exists before the pages get there
    assert (await database_sync_to_async(fac.post)(f"/w/{room.code}/move/", {"item": "1"})).status_code == 204
    assert 'data-item="1"' in await page.receive_from(timeout=5)
    assert await database_sync_to_async(rooms.facilitator_session)(room, 1) is not None
    assert (await database_sync_to_async(fac.post)(f"/w/{room.code}/follow/", {"on": "0"})).status_code == 204
    assert 'data-follow="off" data-follow-src=""' in await page.receive_from(timeout=5)
    await page.disconnect()


def test_it_runs_at_the_speed_the_page_asks_for():
    c = Client()
    sid = c.post("/new/", {"scenario": "ex-who-is-fenced"})["Location"].strip("/").split("/")[-1]
    assert c.post(f"/s/{sid}/run/", {"ms": "3000"}).status_code == 204
    assert Session.objects.get(pk=sid).run_step_ms == 3000
    assert runner._beat(sid) == 3.0
    assert c.post(f"/s/{sid}/run/", {"ms": "5"}).status_code == 400  # below the fastest speed offered
    assert c.post(f"/s/{sid}/run/", {"ms": "1600"}).status_code == 204  # changed while it runs
    assert Session.objects.get(pk=sid).run_step_ms == 1600
    default_ms, speeds = runner.run_speeds()
    assert (default_ms, f"{default_ms / 1000:g} s") in speeds
    page = c.get(f"/s/{sid}/").content.decode()
    assert 'id="run-speed"' in page and f'data-run="/s/{sid}/run/"' in page


def _own_values(page: str) -> str:
    """A page without what belongs to one request (its CSRF token and CSP nonce)."""
    for pattern in (r'(csrf-token" content=")[^"]+', r'(X-CSRFToken": ")[^"]+', r'(csrfmiddlewaretoken" value=")[^"]+'):
        page = re.sub(pattern, r"\1-", page)
    return re.sub(r'(csp-nonce" content=")[^"]+', r"\1-", page)


def test_it_renders_a_page_alike_for_the_whole_room_once_and_gives_each_attendee_their_own():
    from playground.web import pagecache

    fac, room = _facilitator()
    pages = {}
    for name in ("Ada", "Bob <b>&'x'"):
        c, sid = _attendee(room, name)
        pages[name] = (c, sid)
    pagecache.clear()
    shown = {name: c.get(f"/s/{sid}/").content.decode() for name, (c, sid) in pages.items()}
    assert len(pagecache._pages) == 1  # two fresh sessions of the same item: one rendering
    for name, (c, sid) in pages.items():
        assert f'ws-connect="/ws/s/{sid}/' in shown[name] and f"/s/{sid}/step/" in shown[name]
        pagecache.clear()
        assert _own_values(c.get(f"/s/{sid}/").content.decode()) == _own_values(shown[name])  # as rendered alone
    assert "you are Bob &lt;b&gt;&amp;&#x27;x&#x27;" in shown["Bob <b>&'x'"] and "you are Ada" in shown["Ada"]
    ada_sid, bob_sid = pages["Ada"][1], pages["Bob <b>&'x'"][1]
    assert bob_sid not in shown["Ada"] and ada_sid not in shown["Bob <b>&'x'"]
    # follow-me: the facilitator's session, the same page for everyone watching it
    assert fac.post(f"/w/{room.code}/follow/", {"on": "1"}).status_code == 204
    mine = rooms.facilitator_session(room, 0)
    pagecache.clear()
    watched = [c.get(f"/s/{mine}/?present=1&embed=1").content.decode() for c, _sid in pages.values()]
    assert len(pagecache._pages) == 1 and _own_values(watched[0]) == _own_values(watched[1])
    assert "copy drive link" not in watched[0]
    assert fac.get(f"/w/{room.code}/")["Location"] == f"/s/{mine}/"  # the facilitator's browser drives it
    own = fac.get(f"/s/{mine}/").content.decode()  # its driver's page is another one
    assert "copy drive link" in own and len(pagecache._pages) == 2
    # a step later, the session's page is rendered anew
    session.step(ada_sid)
    after = pages["Ada"][0].get(f"/s/{ada_sid}/").content.decode()
    assert 'data-version="1"' in after and len(pagecache._pages) == 3


def test_it_seats_everyone_as_the_room_moves_and_each_drives_only_their_own():
    fac, room = _facilitator()
    people = [_attendee(room, name) for name in ("Ada", "Bo", "Cy")]
    rooms.move(room, 1)
    seats = dict(Seat.objects.filter(workshop=room, item=1).values_list("attendee__name", "session_id"))
    assert set(seats) == {None, "Ada", "Bo", "Cy"}  # the facilitator's seat too
    assert set(Session.objects.filter(pk__in=seats.values()).values_list("drive_key", flat=True)) == {""}
    (ada, _), (bo, _) = people[:2]
    with CaptureQueriesContext(connection) as made:
        r = ada.get(f"/w/{room.code}/")
    assert r["Location"] == f"/s/{seats['Ada']}/"  # found: nothing made on the way
    assert not [q["sql"] for q in made if q["sql"].lstrip().upper().startswith("INSERT")]
    assert ada.post(f"/s/{seats['Ada']}/step/").status_code == 204  # hers now
    assert bo.post(f"/s/{seats['Ada']}/step/").status_code == 403  # nobody else's
    assert Client().post(f"/s/{seats['Bo']}/step/").status_code == 403  # unclaimed: nobody drives it yet
    assert bo.get(f"/w/{room.code}/")["Location"] == f"/s/{seats['Bo']}/"
    assert bo.post(f"/s/{seats['Bo']}/step/").status_code == 204
    assert fac.get(f"/w/{room.code}/")["Location"] == f"/s/{seats[None]}/"
    assert fac.post(f"/s/{seats[None]}/step/").status_code == 204
    assert Session.objects.get(pk=seats["Cy"]).drive_key == ""  # Cy has not come yet


def test_it_leaves_seating_to_each_page_when_the_rooms_budget_cannot_take_them_all(settings):
    _f, room = _facilitator()
    ada, _ = _attendee(room, "Ada")
    bo, _ = _attendee(room, "Bo")
    settings.PLAYGROUND_LIMITS = {"room_sessions_per_hour": Session.objects.count() + 2}  # three to make: the
    rooms.move(room, 1)  # facilitator's and two attendees'
    assert not Seat.objects.filter(workshop=room, item=1).exists()
    assert ada.get(f"/w/{room.code}/").status_code == 302 and bo.get(f"/w/{room.code}/").status_code == 302
    assert Seat.objects.filter(workshop=room, item=1).count() == 2


def test_it_leaves_a_seat_made_meanwhile_as_it_is():
    _f, room = _facilitator()
    ada, _ = _attendee(room, "Ada")
    _attendee(room, "Bo")
    Workshop.objects.filter(pk=room.pk).update(current=1)
    room.refresh_from_db()
    mine = ada.get(f"/w/{room.code}/")["Location"]  # Ada's page was quicker than the move
    rooms.move(room, 1)
    assert Seat.objects.filter(workshop=room, item=1).count() == 3
    assert ada.get(f"/w/{room.code}/")["Location"] == mine and ada.post(f"{mine}step/").status_code == 204


def test_it_makes_none_when_a_page_seats_itself_while_the_room_is_being_seated(monkeypatch):
    _f, room = _facilitator()
    ada, _ = _attendee(room, "Ada")
    bo, _ = _attendee(room, "Bo")
    Workshop.objects.filter(pk=room.pk).update(current=1)
    room.refresh_from_db()
    take = limits.take
    mine = []

    def and_adas_page_meanwhile(name, who="", amount=1):
        taken = take(name, who, amount)
        if amount > 1:  # the move's: Ada's page seats her between the move's read of the seats and its insert
            mine.append(ada.get(f"/w/{room.code}/")["Location"])
        return taken

    monkeypatch.setattr(limits, "take", and_adas_page_meanwhile)
    budget = "room_sessions_per_hour:" + (room.client_key or f"room:{room.pk}")
    used = Counter.objects.get(bucket=budget).used
    rooms.move(room, 1)
    assert list(Seat.objects.filter(workshop=room, item=1).values_list("attendee__name", flat=True)) == ["Ada"]
    assert Counter.objects.get(bucket=budget).used == pytest.approx(used + 1, abs=0.5)  # Ada's, not the move's
    assert ada.get(f"/w/{room.code}/")["Location"] == mine[0] and ada.post(f"{mine[0]}step/").status_code == 204
    assert bo.get(f"/w/{room.code}/").status_code == 302  # Bo's made when he comes, as before


def test_it_loads_one_session_for_the_boards_cards_of_a_room_that_has_just_moved(monkeypatch):
    fac, room = _facilitator()
    for i in range(6):
        _attendee(room, f"A{i}")
    rooms.move(room, 1)
    loads = []
    real = session.load
    monkeypatch.setattr(session, "load", lambda sid, *a, **k: loads.append(sid) or real(sid, *a, **k))
    page = fac.get(f"/w/{room.code}/board/").content.decode()
    assert len(loads) == 1
    for sid in Seat.objects.filter(workshop=room, item=1, attendee__isnull=False).values_list("session_id", flat=True):
        assert f'data-session="{sid}"' in page
    steps = re.findall(r'class="progress">([^<]*)</p>', page)
    assert len(steps) == 6 and len(set(steps)) == 1 and steps[0].startswith("step 0/")  # the scenario as it starts


def test_it_tells_a_session_where_it_sits_and_a_session_outside_a_room_nothing():
    fac, room = _facilitator()
    _ada, sid = _attendee(room, "Ada")
    ada = Seat.objects.get(session_id=sid).attendee_id
    assert session.store.seat_of(sid) == {"room": room.pk, "code": room.code, "attendee": ada, "name": "Ada", "item": 0}
    mine = fac.get(f"/w/{room.code}/")["Location"].strip("/").split("/")[-1]
    assert session.store.seat_of(mine) == {
        "room": room.pk,
        "code": room.code,
        "attendee": None,
        "name": None,
        "item": 0,
    }
    alone = Client().post("/new/", {"scenario": "zombie-fencing"})["Location"].strip("/").split("/")[-1]
    assert session.store.seat_of(alone) is None
