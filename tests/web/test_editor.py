"""Writing scenarios in the browser: validation as you type, play, save and share under a content address, the
shared page, and a session written back out as a scenario. Bad input gets a line-numbered message and stores
nothing; the endpoints are fuzzed."""

from __future__ import annotations

import html
import json
import re

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from playground import session
from playground.models import ScenarioText, Session, text_id
from playground.scenario import library, parse_scenario, run_scenario
from playground.web.views import EXAMPLE

pytestmark = pytest.mark.django_db

FUZZ = hsettings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _check(client, text: str) -> dict:
    r = client.post("/editor/check/", {"text": text})
    assert r.status_code in (200, 400), r.content
    return json.loads(r.content)


def test_it_answers_the_editors_check_with_every_error_and_its_line(client):
    text = EXAMPLE.replace("A.begin_transaction", "A.begin_transactoin").replace(
        "isolation.level: read_uncommitted", "isolation: read_uncommitted"
    )
    data = _check(client, text)
    assert not data["ok"]
    lines = {e["line"]: e for e in data["errors"]}
    assert set(lines) == {11, 15}
    assert "did you mean 'begin_transaction'" in lines[15]["message"]
    ok = _check(client, EXAMPLE)
    assert (
        ok["ok"]
        and ok["errors"] == []
        and ok["scenario"]["steps"] == 8
        and ok["scenario"]["actors"] == ["A", "rc", "ru"]
    )


def test_it_plays_the_editors_text_as_a_new_session_the_player_drives(client):
    r = client.post("/editor/play/", {"text": EXAMPLE})
    assert r.status_code == 302
    sid = r["Location"].rstrip("/").rsplit("/", 1)[-1]
    assert client.post(f"/s/{sid}/step/").status_code == 204
    row = Session.objects.get(pk=sid)
    assert row.scenario_id == "my-scenario" and row.source.text == EXAMPLE and not row.source.shared
    assert client.get(f"/sc/{row.source_id}/").status_code == 404  # played, not shared


def test_it_saves_under_a_content_address_so_the_same_text_gives_the_same_link(client):
    first = client.post("/editor/save/", {"text": EXAMPLE})
    again = client.post("/editor/save/", {"text": EXAMPLE.replace("\n", "  \r\n")})  # line ends do not count
    assert (
        first.status_code == again.status_code == 302
        and first["Location"] == again["Location"] == f"/sc/{text_id(EXAMPLE)}/"
    )
    other = client.post("/editor/save/", {"text": EXAMPLE.replace("order-1", "order-2")})
    assert other["Location"] != first["Location"]
    assert ScenarioText.objects.filter(shared=True).count() == 2


def test_it_shows_a_shared_scenario_with_play_edit_and_download(client):
    link = client.post("/editor/save/", {"text": EXAMPLE})["Location"]
    page = client.get(link).content.decode()
    assert "My scenario" in page and "A.produce" in page and "orders-0 &quot;order-1&quot;" in page
    tid = link.strip("/").split("/")[-1]
    assert f"/editor/?sc={tid}" in page and f"/sc/{tid}.yaml" in page
    download = client.get(f"/sc/{tid}.yaml")
    assert (
        download["Content-Disposition"] == 'attachment; filename="my-scenario.yaml"'
        and download.content.decode() == EXAMPLE
    )
    assert EXAMPLE.split("\n")[0] in client.get(f"/editor/?sc={tid}").content.decode()
    played = client.post(f"/sc/{tid}/play/")
    sid = played["Location"].rstrip("/").rsplit("/", 1)[-1]
    assert session.load(sid).scenario.id == "my-scenario"


def test_it_opens_a_copy_of_a_library_scenario_in_the_editor(client):
    html = client.get("/editor/?from=zombie-fencing").content.decode()
    assert "id: zombie-fencing" in html
    assert client.get("/editor/?from=nope").status_code == 404
    assert client.get("/editor/?sc=nope").status_code == 404
    assert client.get("/editor/?session=nope").status_code == 404


def _bomb() -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]"
        for i in range(9)
    ]
    return "\n".join(lines) + "\n"


def _many(kind: str, n: int) -> str:
    text = EXAMPLE
    if kind == "actors":
        extra = "".join(f"  c{i}: {{consumer: {{topics: [orders]}}}}\n" for i in range(n))
        return text.replace("steps:\n", extra + "steps:\n")
    return text.replace("expect:\n", "".join("  - rc.poll\n" for _ in range(n)) + "expect:\n")


@pytest.mark.parametrize(
    "text, line, needle",
    [
        ("x: " + "y" * 70_000, 1, "too large"),
        (EXAMPLE + "# pad\n" * 12_000, None, "too large"),  # the line that crosses 64 KB
        (_bomb(), 1, "anchors and aliases"),
        ("[" * 40 + "]" * 40, 1, "nested more than"),
        (_many("actors", 10), 9, "at most 12 actors"),
        (_many("steps", 1_995), 2013, "at most 2,000 steps"),  # the 2,001st step
        (EXAMPLE.replace("summary:", "colour: red\nsummary:"), 4, "unknown top-level key 'colour'"),
    ],
    ids=["one-long-line", "many-lines", "alias-bomb", "deep", "13-actors", "2003-steps", "unknown-key"],
)
def test_it_refuses_bad_text_with_a_line_numbered_message_and_stores_nothing(client, text, line, needle):
    line = line or text.encode()[: 64 * 1024].count(b"\n") + 1
    for endpoint in ("save", "play"):
        r = client.post(f"/editor/{endpoint}/", {"text": text})
        assert r.status_code == 400, (endpoint, r.status_code)
        assert needle in html.unescape(r.content.decode())
    errors = _check(client, text)["errors"]
    assert errors[0]["line"] == line and needle in errors[0]["message"], errors[0]
    assert ScenarioText.objects.count() == 0 and Session.objects.count() == 0


@FUZZ
@given(text=st.one_of(st.text(max_size=400), st.sampled_from([EXAMPLE[:n] for n in range(0, len(EXAMPLE), 37)])))
def test_it_never_fails_with_a_500_on_any_editor_text(client, text):
    stored = ScenarioText.objects.count()
    for endpoint in ("check", "save"):
        r = client.post(f"/editor/{endpoint}/", {"text": text})
        assert r.status_code in (200, 302, 400), (endpoint, r.status_code, text)
    assert ScenarioText.objects.count() - stored <= 1


@FUZZ
@given(at=st.one_of(st.text(max_size=30), st.integers(-5, 50).map(str)))
def test_it_never_fails_with_a_500_on_any_at_parameter(client, free_session, at):
    before = Session.objects.get(pk=free_session.id)
    r = client.get(f"/s/{free_session.id}/", {"at": at})
    assert r.status_code in (200, 400, 404), (r.status_code, at)
    after = Session.objects.get(pk=free_session.id)
    assert (after.version, after.length) == (before.version, before.length)


@pytest.mark.parametrize("entry", [e for e in library.entries() if e.scenario is not None], ids=lambda e: e.id)
def test_it_writes_a_played_session_back_as_a_scenario_whose_expectations_hold(client, entry):
    row = session.create(entry.scenario, source=entry.scenario.source, backend="sim")
    for step in entry.scenario.steps:
        if step.predict:
            session.predict(row.id, step.index, -1)  # an exercise's question: skipped
        session.step(row.id)
    text = client.get(f"/s/{row.id}/scenario.yaml").content.decode()
    written = parse_scenario(text, "written.yaml")
    assert len([s for s in written.steps if not s.is_note]) == len([s for s in entry.scenario.steps if not s.is_note])
    observation = run_scenario(written, "sim")
    assert observation["expect"]["failed"] == 0, observation["expect"]["failures"]
    assert observation["expect"]["passed"] >= 1


def test_it_writes_free_play_as_a_scenario_with_its_added_actors_and_empty_notes(client, db):
    row = session.create(None, backend="sim")
    session.add_producer(row.id, "new")
    session.add_producer(row.id, "share", "txn-1")
    for actor, action in (
        ("A", "init_transactions"),
        ("A", "begin_transaction"),
        ("B", "init_transactions"),
        ("A", "commit_transaction"),
    ):
        session.apply_step(row.id, session.step_from_entry(f"{actor}.{action}"))
    page = client.get(f"/editor/?session={row.id}").content.decode()
    assert "B.init_transactions" in page and "A.commit_transaction: {expect: _FENCED}" in page
    text = client.get(f"/s/{row.id}/scenario.yaml").content.decode()
    assert re.search(r"^  A: \{producer: \{transactional\.id: txn-1", text, re.M) and 'note: ""' in text
    assert run_scenario(parse_scenario(text), "sim")["expect"]["failed"] == 0


def test_it_links_a_session_started_in_the_editor_back_to_its_text(client):
    text = EXAMPLE.replace("order-1", "order-7")
    sid = client.post("/editor/play/", {"text": text})["Location"].rstrip("/").rsplit("/", 1)[-1]
    page = client.get(f"/s/{sid}/").content.decode()
    link = re.search(r'<a href="([^"]+)" id="edit-scenario">edit this scenario</a>', page).group(1)
    editor = client.get(link.replace("&amp;", "&")).content.decode()
    assert "order-7" in editor and "order-1" not in editor
    row = Session.objects.get(pk=sid)
    assert f'data-draft="text:{row.source_id}"' in editor  # its own draft, not the empty editor's
    assert client.get("/editor/?source=no-such-session").status_code == 404


def test_it_answers_play_with_errors_on_the_editor_keeping_the_draft_key(client):
    r = client.post("/editor/play/", {"text": "format: 1\nid: x\n", "draft": "from:zombie-fencing"})
    html = r.content.decode()
    assert r.status_code == 400 and 'id="editor-form"' in html
    assert 'data-draft="from:zombie-fencing"' in html and 'data-restore="false"' in html  # the posted text shows
    forged = client.post("/editor/play/", {"text": "x", "draft": '"><script>'}).content.decode()
    assert 'data-draft="new"' in forged
