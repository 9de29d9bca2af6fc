"""An exercise does not give its answers away: on an attendee's page at step 0 of "Who is fenced" and "Isolation
levels", no step's `expect`, no note that explains a question and no goal value is readable before the question is
answered and its step has run; then they are. A scenario that is not an exercise keeps showing everything. The
room's board shows a question's right answer only once its step has run for most of the room, or when the
facilitator reveals it."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from playground import rooms, session
from playground.models import Workshop
from playground.scenario import library

pytestmark = pytest.mark.django_db(transaction=True)


def _page(c: Client, sid: str) -> str:
    r = c.get(f"/s/{sid}/")
    assert r.status_code == 200
    return r.content.decode()


def _narrative(page: str) -> str:
    return html.unescape(page[page.index('id="p-narrative"') : page.index('id="h-time"')])


def _exercise_panel(page: str) -> str:
    return html.unescape(page[page.index('id="p-exercise"') : page.index('id="h-coord"')])


def _start(scenario_id: str) -> tuple[Client, str]:
    c = Client()
    r = c.post("/new/", {"scenario": scenario_id})
    assert r.status_code == 302, r.content
    return c, r["Location"].strip("/").split("/")[-1]


def _walk_to_question(sid: str) -> int:
    live = session.load(sid)
    while not live.steps[live.cursor].predict:
        session.step(sid)
        live = session.load(sid)
    return live.cursor


def test_it_keeps_the_answers_of_who_is_fenced_off_the_page_at_step_0():
    c, sid = _start("ex-who-is-fenced")
    html = _page(c, sid)
    narrative, panel = _narrative(html), _exercise_panel(html)
    # the questions' answers: the fence's error at the partition leader, the fatal _FENCED at commit
    assert "INVALID_PRODUCER_EPOCH" not in narrative and "_FENCED" not in narrative and "expect" not in narrative
    # the notes that explain an answer ("bumped the epoch to 1 and aborted A's transaction")
    assert "bumped the epoch" not in narrative and "shown once the question before it is answered" in narrative
    # the goal names what to reach, not what it will hold
    assert "a-1, ABORT" not in panel and "epoch 2" not in panel and "CompleteCommit" not in panel
    assert "what orders-0 holds" in panel and "how the transaction of order-pay ends" in panel
    # the note before the first question is the story so far: shown
    assert "A second instance, B, starts with the same transactional.id" in narrative


def test_it_keeps_the_goal_of_isolation_levels_from_answering_its_questions():
    c, sid = _start("ex-isolation-levels")
    panel = _exercise_panel(_page(c, sid))
    assert "t1-p0" not in panel and "t3-p0" not in panel and "what rc reads from events-0" in panel


def test_it_reveals_a_question_s_note_and_expect_once_it_is_answered_and_its_step_has_run():
    c, sid = _start("ex-who-is-fenced")
    q = _walk_to_question(sid)
    session.predict(sid, q, 1)
    narrative = _narrative(_page(c, sid))
    assert "bumped the epoch" not in narrative  # answered, but its step has not run yet
    session.step(sid)
    narrative = _narrative(_page(c, sid))
    assert "bumped the epoch to 1 and aborted A" in narrative
    # the next question's note and expect stay held
    assert "INVALID_PRODUCER_EPOCH" not in narrative and "refuses epoch 0" not in narrative
    q2 = _walk_to_question(sid)
    session.predict(sid, q2, -1)  # skipped counts as answered
    session.step(sid)
    narrative = _narrative(_page(c, sid))
    assert "INVALID_PRODUCER_EPOCH" in narrative and "refuses epoch 0 with INVALID_PRODUCER_EPOCH" in narrative


def test_it_shows_the_goal_s_values_once_every_question_has_been_revealed():
    c, sid = _start("ex-who-is-fenced")
    steps = session.load(sid).steps
    for s in steps:
        if s.predict:
            session.predict(sid, s.index, s.predict["answer"])
        session.step(sid)
    panel = _exercise_panel(_page(c, sid))
    assert "a-1, ABORT, b-1, COMMIT" in panel and "epoch 2" in panel and "held" not in panel


def test_it_keeps_showing_everything_in_a_scenario_that_is_not_an_exercise():
    scenario = library.get("zombie-fencing")
    assert not any(s.predict for s in scenario.steps) and not scenario.goal
    c, sid = _start("zombie-fencing")
    narrative = _narrative(_page(c, sid))
    expects = [s for s in scenario.steps if s.expect and s.expect != ("ok",)]
    assert expects and all(f"expect {' / '.join(s.expect)}" in narrative for s in expects)
    last_note = [s for s in scenario.steps if s.is_note][-1].args["text"]["en"]
    assert last_note.split(".")[0] in narrative and "shown once the question" not in narrative


def test_it_names_whose_answer_a_watcher_sees_and_says_your_answer_to_the_driver():
    fac = Client()
    r = fac.post("/w/create/", {"title": "Tuesday", "scenario": ["ex-who-is-fenced"]})
    room = Workshop.objects.get(code=r["Location"].strip("/").split("/")[-2])
    ada = Client()
    ada.post("/w/join/", {"code": room.code, "name": "Ada"})
    sid = ada.get(f"/w/{room.code}/")["Location"].strip("/").split("/")[-1]
    q = _walk_to_question(sid)
    session.predict(sid, q, 0)
    session.step(sid)
    own, spotlight = _page(ada, sid), _page(fac, sid)
    assert 'class="session scenario' in own and "watch" not in own.split("<body", 1)[1].split(">", 1)[0]
    assert "Ada’s answer" in spotlight and '<span class="whose" id="whose">Ada’s session</span>' in spotlight
    assert re.search(r"<body[^>]*class=\"[^\"]*\bwatch\b", spotlight)  # the stylesheet shows "Ada's answer" there


# ------------------------------------------------------------------------------------------------ the board
def _room_with(names: list[str]) -> tuple[Client, Workshop, list[str]]:
    fac = Client()
    r = fac.post("/w/create/", {"title": "Tuesday", "scenario": ["ex-who-is-fenced"]})
    room = Workshop.objects.get(code=r["Location"].strip("/").split("/")[-2])
    sids = []
    for name in names:
        c = Client()
        c.post("/w/join/", {"code": room.code, "name": name})
        sids.append(c.get(f"/w/{room.code}/")["Location"].strip("/").split("/")[-1])
    return fac, room, sids


def test_it_marks_the_right_answer_on_the_board_only_once_most_of_the_room_has_run_the_step():
    fac, room, sids = _room_with(["Ada", "Lin", "Bo"])
    q = _walk_to_question(sids[0])
    for sid in sids[1:]:
        _walk_to_question(sid)
    for sid in sids:
        session.predict(sid, q, 1)
    (first, *_rest) = rooms.questions(Workshop.objects.get(pk=room.pk), 0)
    assert first["answer"] is None and not first["revealed"] and first["dist"]["counts"][1] == 3
    board = fac.get(f"/w/{room.code}/board/").content.decode()
    assert "<b>✓</b>" not in board and "reveal the answer" in board
    session.step(sids[0])  # 1 of 3: not most of the room
    assert not rooms.questions(Workshop.objects.get(pk=room.pk), 0)[0]["revealed"]
    session.step(sids[1])  # 2 of 3
    first = rooms.questions(Workshop.objects.get(pk=room.pk), 0)[0]
    assert first["revealed"] and first["answer"] == 1 and first["ran"] == 2 and first["seated"] == 3
    assert "<b>✓</b>" in fac.get(f"/w/{room.code}/board/").content.decode()


def test_it_counts_as_seated_on_an_item_only_who_has_opened_it_since_the_room_moved_there():
    fac = Client()
    r = fac.post("/w/create/", {"title": "Tuesday", "scenario": ["zombie-fencing", "ex-who-is-fenced"]})
    room = Workshop.objects.get(code=r["Location"].strip("/").split("/")[-2])
    people = []
    for name in ("Ada", "Lin", "Bo"):
        c = Client()
        c.post("/w/join/", {"code": room.code, "name": name})
        people.append(c)
    rooms.move(room, 1)  # a seat made for each of them; none of them has come yet
    assert rooms.questions(Workshop.objects.get(pk=room.pk), 1)[0]["seated"] == 0
    assert "its step has run for" not in fac.get(f"/w/{room.code}/board/").content.decode()  # not "0 of 0" yet
    sid = people[0].get(f"/w/{room.code}/")["Location"].strip("/").split("/")[-1]
    assert rooms.questions(Workshop.objects.get(pk=room.pk), 1)[0]["seated"] == 1
    assert "its step has run for 0 of 1" in fac.get(f"/w/{room.code}/board/").content.decode()
    q = _walk_to_question(sid)
    session.predict(sid, q, 1)
    session.step(sid)  # 1 of the 1 who came: most of the room that is here
    assert rooms.questions(Workshop.objects.get(pk=room.pk), 1)[0]["revealed"]


def test_it_lets_only_the_facilitator_reveal_an_answer_early():
    fac, room, sids = _room_with(["Ada"])
    q = next(s.index for s in session.load(sids[0]).steps if s.predict)
    ada = Client()
    assert ada.post(f"/w/{room.code}/reveal/", {"n": q}).status_code == 403
    assert fac.post(f"/w/{room.code}/reveal/", {"n": 0}).status_code == 404  # step 1 asks nothing
    assert fac.post(f"/w/{room.code}/reveal/", {"n": q}).status_code == 204
    first = rooms.questions(Workshop.objects.get(pk=room.pk), 0)[0]
    assert first["revealed"] and first["answer"] == 1 and first["ran"] == 0
    assert Workshop.objects.get(pk=room.pk).revealed == {"0": [q]}


def test_it_counts_the_live_predictions_of_the_room_s_seated_attendees_on_the_item_only():
    fac, room, sids = _room_with(["Ada", "Lin", "Bo"])
    _fac2, other, other_sids = _room_with(["Kim"])
    own = fac.get(f"/w/{room.code}/")["Location"].strip("/").split("/")[-1]  # the facilitator's own seat
    q = _walk_to_question(sids[0])
    for sid in [*sids, own, *other_sids]:
        _walk_to_question(sid)
    session.predict(sids[0], q, 1)
    session.predict(sids[1], q, 2)
    session.back(sids[1])  # Lin takes hers back: the prediction's row is dropped
    session.predict(sids[2], q, 0)
    session.predict(own, q, 2)  # not an attendee's
    session.predict(other_sids[0], q, 2)  # another room's
    answers = rooms.room_answers(room.pk, 0, [q, q + 1])
    assert {n: sorted(choices) for n, choices in answers.items()} == {q: [0, 1], q + 1: []}
    assert rooms.room_answers(room.pk, 1, [q]) == {q: []}  # no such item: nobody seated there
    assert rooms.room_answers(other.pk, 0, [q]) == {q: [2]}


def test_the_frame_that_reveals_the_last_answer_offers_compare_without_a_reload():
    """Issue 33: compare (every outcome, side by side) appeared after the last question only on reload. The page
    holds an empty slot while a question is open; the websocket frame of the step that passes the last question
    swaps the menu into it, and no frame before it carries the menu."""
    from playground.web import broadcast

    c, sid = _start("ex-who-is-fenced")
    page = _page(c, sid)
    assert '<span id="compare-slot" hidden></span>' in page and 'id="compare-menu"' not in page and "{#" not in page
    broadcast.fragments(session.load(sid), ["en"])  # what the viewers were sent last: the page as it is
    steps = session.load(sid).steps
    last = max(s.index for s in steps if s.predict)
    for s in steps[: last + 1]:
        if s.predict:
            session.predict(sid, s.index, s.predict["answer"])
        session.step(sid)
        frame = broadcast.fragments(session.load(sid), ["en"])[0]["en"]
        if s.index < last:
            assert 'id="compare-menu"' not in frame, f"compare offered while question {last} is open"
    assert re.search(
        r'<details class="links compare-menu" id="compare-menu" hx-swap-oob="outerHTML:#compare-slot">', frame
    )
    assert f'action="/s/{sid}/compare/"' in frame
    page = _page(c, sid)
    assert 'id="compare-menu"' in page and 'id="compare-slot"' not in page
