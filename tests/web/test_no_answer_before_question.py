"""No exercise shows a question's answer before its step has run (issue 33). An attendee of a room walks every step of
every exercise of the library with librdkafka and with the Java client, answering each question as it comes; at
every point, in English and in Chinese, what the page shows (the narrative and its notes, the header, the producers'
cards and badges, the consumers' cards and tables, the goal, the partitions' strips, the protocol timeline, the
time slider, the coordinator, groups, anomalies, app's-view and database panels), the session's timeline page and
its command log (log.json), the room's board card, the session's compare and the gallery's card hold none of the open question's answer as playground/scenario/answers.py names it, and the open
question's client shows nothing that tells what its step will do ("answer question N to see")."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator

import pytest
from django.test import Client
from django.utils import translation

from playground import session
from playground.models import Workshop
from playground.scenario import answers, library
from playground.scenario.exercise import is_exercise, reveal

pytestmark = pytest.mark.django_db(transaction=True)

EXERCISES = sorted(e.scenario.id for e in library.entries() if e.scenario and any(s.predict for s in e.scenario.steps))
CLIENTS = ("librdkafka", "java")
LANGS = {"en": "en", "zh": "zh-hans"}


def _text(fragment: str) -> str:
    """What a fragment says, its hover tips (a strip's cell, a timeline's arrow) included."""
    tips = " ".join(re.findall(r' (?:title|data-tip)="([^"]*)"', fragment))
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment) + " " + tips))


def _between(page: str, start: str, end: str) -> str:
    return page[page.index(start) : page.index(end, page.index(start))]


def _regions(page: str) -> Iterator[tuple[str, str]]:
    """What an attendee reads on the session page, region by region. Left out: the question being asked (its
    choices) and the partitions' own cursors (a strip's marks and a table's caption say where the LSO is: that is
    the state the question asks the attendee to reason from, not its answer)."""
    yield "header", _between(page, 'id="p-header"', "</fieldset>")
    yield "narrative", _between(page, 'id="p-narrative"', "</section>")
    yield "producers", _between(page, 'id="p-producers"', 'class="add-producer"')
    yield "consumers", re.sub(r"<caption>.*?</caption>", "", _consumers(page), flags=re.S)
    exercise = _between(page, 'id="p-exercise"', "</section>")
    yield "goal", re.sub(r'<div class="question".*?</div></div>', "", exercise, flags=re.S)
    yield "strips", _strips(_between(page, 'id="p-logs"', "</section>"))
    yield "timeline", _between(page, 'id="p-timeline"', "</section>")
    for panel in ("scrubber", "coordinator", "groups", "anomalies", "truth", "database"):  # where a session has it
        if f'id="p-{panel}"' in page:
            yield panel, _between(page, f'id="p-{panel}"', "</section>")


def _strips(fragment: str) -> str:
    """The partitions' strips without their cursors (HW, LSO, LEO: the marks by a strip's name and at its slots)."""
    fragment = re.sub(r'<small class="marks">.*?</small>', "", fragment, flags=re.S)
    return re.sub(r'<i class="cur cur-\w+">\w+</i>', "", fragment)


def _log(reader: Client, sid: str) -> list[dict]:
    """The session's command log as log.json gives it, every page of it."""
    out, href = [], f"/s/{sid}/log.json"
    while href:
        page = reader.get(href).json()
        out += page["commands"]
        href = page["next"]
    return out


def _consumers(page: str) -> str:
    return _between(page, 'id="p-consumers"', "</section>")


def _compare_menu(page: str) -> bool:
    return 'id="session-compare"' in page


def _room(scenario_id: str, client: str) -> tuple[Client, Workshop, dict[str, Client], str]:
    """A room with the exercise in `client`'s profile, its facilitator and one attendee, seen in both languages."""
    base = library.get(scenario_id).profile
    fac = Client()
    r = fac.post(
        "/w/create/",
        {"title": "Tuesday", "scenario": [scenario_id], f"profile-{scenario_id}": f"{base.kafka}-{client}"},
    )
    assert r.status_code == 302, r.content
    room = Workshop.objects.get(code=r["Location"].strip("/").split("/")[-2])
    ada = Client()
    ada.post("/w/join/", {"code": room.code, "name": "Ada"})
    sid = ada.get(f"/w/{room.code}/")["Location"].strip("/").split("/")[-1]
    readers = {}
    for lang, code in LANGS.items():
        reader = Client()
        reader.cookies.update(ada.cookies)
        reader.cookies["django_language"] = code
        readers[lang] = reader
    fac.cookies["django_language"] = "en"
    return fac, room, readers, sid


def _leaks(text: str, facts: list[answers.Fact]) -> list[str]:
    return [f.text for f in facts if f.found_in(text)]


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("scenario_id", EXERCISES)
def test_it_shows_no_question_s_answer_before_its_step_has_run(scenario_id, client):
    fac, room, readers, sid = _room(scenario_id, client)
    live = session.load(sid)
    assert live.profile.client == client and is_exercise(live.scenario)
    found: list[str] = []
    walked = 0
    while live.cursor < len(live.steps):
        open_q = reveal(live).open_question
        if open_q is not None:
            number = answers.number(live.steps, open_q)
            asking = live.cursor == open_q and open_q not in live.predictions
            for lang, reader in readers.items():
                facts = answers.open_facts(live.steps, open_q, lang)
                page = reader.get(f"/s/{sid}/").content.decode()
                where = f"step {live.cursor}, question {number} open, {lang}"
                for region, fragment in _regions(page):
                    found += [f"{where}, {region}: {leak}" for leak in _leaks(_text(fragment), facts)]
                found += _client_tells(page, live.steps[open_q], number, where)
                timeline = _between(
                    reader.get(f"/s/{sid}/timeline/").content.decode(), '<nav class="pager">', "</main>"
                )
                found += [f"{where}, timeline page: {leak}" for leak in _leaks(_text(timeline), facts)]
                log = _log(reader, sid)
                found += [f"{where}, log.json: {leak}" for leak in _leaks(json.dumps(log, ensure_ascii=False), facts)]
                found += _fenced_tells(page, log, live.steps[open_q].actor, lang, where)
                if asking:
                    if _compare_menu(page):
                        found.append(f"{where}: the session's compare menu is offered")
                    compare = reader.get(f"/s/{sid}/compare/").content.decode()
                    found += [f"{where}, compare: {leak}" for leak in _leaks(_text(compare), facts)]
                    if lang == "en":
                        board = fac.get(f"/w/{room.code}/board/").content.decode()
                        seat = _between(board, 'class="seat', "</article>")
                        found += [f"{where}, board card: {leak}" for leak in _leaks(_text(seat), facts)]
            if asking:
                session.predict(sid, open_q, live.steps[open_q].predict["answer"])
                walked += 1
        session.step(sid)
        live = session.load(sid)
    assert walked == len(answers.questions(live.steps))
    assert not found, "an answer shown before its question's step ran:\n" + "\n".join(dict.fromkeys(found))


def _client_tells(page: str, step, number: int, where: str) -> list[str]:
    """The open question's client says nothing of what its step will do: a producer shows no error state, a consumer
    no reason for a record it has not got (each says "answer question N to see" instead)."""
    out = []
    if f'data-producer="{step.actor}"' in page:
        card = _between(page, f'data-producer="{step.actor}"', "</article>")
        if re.search(r'class="badge tone-(bad|warn)"|class="lasterr"', card):
            out.append(f"{where}: {step.actor}'s card shows an error state")
    columns = re.findall(r"<th class=\"r[uc]\">([^<]+)<small>", page)
    if step.actor in columns:
        i = columns.index(step.actor)
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", _consumers(page), re.S):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            if len(cells) == len(columns) + 2:
                cell = cells[2 + i]
                if "✓" not in cell and "—" not in cell and f'data-ask="{number}"' not in cell:
                    out.append(f"{where}: {step.actor}'s column says {_text(cell).strip()!r}")
    return out


def _fenced_tells(page: str, log: list[dict], actor: str, lang: str, where: str) -> list[str]:
    """The open question's client is not said to be fenced: not in log.json's entries (`fenced`), not on the time
    slider's marks ("(fenced A)"): a client fenced before its step runs tells what the step will do (the fatal
    _FENCED of librdkafka's commit), as its card's FENCED badge would."""
    out = [
        f"{where}: log.json's entry {e.get('step')!r} says {actor} was fenced"
        for e in log
        if actor in e.get("fenced", ())
    ]
    with translation.override(LANGS[lang]):
        before, _, after = (translation.gettext("fenced %(who)s") % {"who": "\0"}).partition("\0")
    who = r"[^()]*?(?<![\w-])" + re.escape(actor) + r"(?![\w-])[^()]*?"
    for tip in re.findall(r'data-tip="([^"]*)"', _between(page, 'id="p-scrubber"', "</svg>")):
        if re.search(re.escape(before) + who + re.escape(after) + r"\)", html.unescape(tip)):
            out.append(f"{where}: the time slider says {html.unescape(tip)!r}")
    return out


@pytest.mark.parametrize("scenario_id", EXERCISES)
def test_it_offers_no_compare_of_an_exercise_from_the_gallery_or_its_url(client, scenario_id):
    gallery = client.get("/").content.decode()
    card = _between(gallery, f'data-scenario="{scenario_id}"', "</article>")
    assert "compare-entry" not in card and "/compare/" not in card
    r = client.get(f"/compare/?scenario={scenario_id}&a=3.9-librdkafka&b=4-java")
    assert r.status_code == 403
    facts = [
        f
        for q in answers.questions(library.get(scenario_id).steps)
        for f in answers.facts(library.get(scenario_id).steps, q.index, "en")
    ]
    assert not _leaks(_text(r.content.decode()), facts)


def test_it_still_compares_a_scenario_that_asks_nothing_from_the_gallery(client):
    gallery = client.get("/").content.decode()
    assert "compare-entry" in _between(gallery, 'data-scenario="zombie-fencing"', "</article>")
    assert client.get("/compare/?scenario=zombie-fencing&a=3.9-librdkafka&b=4-java").status_code == 200


def _to_question(sid: str, n: int) -> None:
    """Steps the session on, answering each question before question `n` rightly, until question `n` is asked."""
    live = session.load(sid)
    while True:
        k = live.cursor
        if live.steps[k].predict and k not in live.predictions:
            if answers.number(live.steps, k) == n:
                return
            session.predict(sid, k, live.steps[k].predict["answer"])
        session.step(sid)
        live = session.load(sid)


def test_it_tells_a_fenced_producer_s_badge_once_the_question_about_its_commit_has_run():
    _fac, _w, readers, sid = _room("ex-who-is-fenced", "librdkafka")
    _to_question(sid, 3)
    card = _between(readers["en"].get(f"/s/{sid}/").content.decode(), 'data-producer="A"', "</article>")
    assert "answer question 3 to see" in _text(card) and "FENCED" not in card and "lasterr" not in card
    zh = _between(readers["zh"].get(f"/s/{sid}/").content.decode(), 'data-producer="A"', "</article>")
    assert "回答第 3 题后可见" in _text(zh)
    live = session.load(sid)
    session.predict(sid, live.cursor, 1)
    session.step(sid)
    card = _between(readers["en"].get(f"/s/{sid}/").content.decode(), 'data-producer="A"', "</article>")
    assert "answer question" not in card and "FENCED" in _text(card) and "_FENCED" in _text(card)


def test_it_tells_why_a_consumer_has_nothing_once_the_question_about_its_poll_has_run():
    _fac, _w, readers, sid = _room("ex-isolation-levels", "java")
    _to_question(sid, 1)
    page = readers["en"].get(f"/s/{sid}/").content.decode()
    assert _text(_consumers(page)).count("answer question 1 to see") == 3  # rc's cell of each partition's record
    assert "held: behind LSO" not in _text(_consumers(page)) and "not polled yet" in _text(_consumers(page))  # ru's
    session.predict(sid, session.load(sid).cursor, 0)
    session.step(sid)
    page = readers["en"].get(f"/s/{sid}/").content.decode()
    assert "answer question 1" not in page and _text(_consumers(page)).count("held: behind LSO 0") == 3
    assert _text(_consumers(page)).count("answer question 2 to see") == 3  # now ru's poll is the one asked about


def test_it_tells_in_log_json_and_on_the_slider_that_a_producer_was_fenced_once_its_question_has_run():
    _fac, _w, readers, sid = _room("ex-who-is-fenced", "librdkafka")
    _to_question(sid, 3)
    produce = [e for e in _log(readers["zh"], sid) if "A.produce" in str(e.get("step"))][-1]
    assert produce["outcome"] == "INVALID_PRODUCER_EPOCH"  # question 2's answer, told
    assert "fenced" not in produce and produce["held_back"] == "回答第 3 题后可见"
    page = readers["en"].get(f"/s/{sid}/").content.decode()
    assert "(fenced A)" not in _between(page, 'id="p-scrubber"', "</svg>")
    live = session.load(sid)
    session.predict(sid, live.cursor, 1)
    session.step(sid)
    produce = [e for e in _log(readers["en"], sid) if "A.produce" in str(e.get("step"))][-1]
    assert produce["fenced"] == ["A"] and "held_back" not in produce
    page = readers["en"].get(f"/s/{sid}/").content.decode()
    assert "(fenced A)" in _between(page, 'id="p-scrubber"', "</svg>")
