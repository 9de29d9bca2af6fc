"""Pages and commands through Django's test client, on the fake backend."""

from __future__ import annotations

import re

import pytest

from playground import session
from playground.models import ScenarioText, Session

pytestmark = pytest.mark.django_db


def test_it_serves_the_gallery_with_free_play(client):
    r = client.get("/")
    assert r.status_code == 200
    assert "Free play" in r.content.decode()


def test_it_shows_a_free_play_session_with_every_panel(client, free_session):
    r = client.get(f"/s/{free_session.id}/")
    html = r.content.decode()
    assert r.status_code == 200
    for pid in (
        "p-header",
        "p-producers",
        "p-consumers",
        "p-logs",
        "p-coordinator",
        "p-timeline",
        "p-truth",
        "p-narrative",
        "p-cluster",
    ):
        assert f'id="{pid}"' in html
    assert f'ws-connect="/ws/s/{free_session.id}/' in html


def test_it_applies_commands_and_logs_them(client, free_session):
    sid = free_session.id
    assert client.post(f"/s/{sid}/add-producer/", {"mode": "new"}).status_code == 204
    assert client.post(f"/s/{sid}/action/", {"actor": "A", "action": "init_transactions"}).status_code == 204
    assert client.post(f"/s/{sid}/action/", {"actor": "A", "action": "begin_transaction"}).status_code == 204
    assert (
        client.post(
            f"/s/{sid}/produce/", {"actor": "A", "topic": "orders", "partition": "0", "value": "v1"}
        ).status_code
        == 204
    )
    assert client.post(f"/s/{sid}/action/", {"actor": "A", "action": "abort_transaction"}).status_code == 204
    row = Session.objects.get(pk=sid)
    assert [
        next(iter(e.get("step", e.get("add")).keys())) if isinstance(e.get("step", e.get("add")), dict) else e["step"]
        for e in row.commands
    ] == ["A", "A.init_transactions", "A.begin_transaction", "A.produce", "A.abort_transaction"]
    html = client.get(f"/s/{sid}/").content.decode()
    assert 'data-control="ABORT"' in html
    assert "hidden: aborted" in html


def test_it_answers_422_when_a_stored_scenario_no_longer_loads(client, fencing_session):
    # A text stored when the loader accepted it, refused by today's loader.
    broken = ScenarioText.store("format: 1\nid: broken\n", "broken")
    Session.objects.filter(pk=fencing_session.id).update(source=broken)
    session.CACHE.clear()
    r = client.get(f"/s/{fencing_session.id}/")
    assert r.status_code == 422
    assert "no longer loads" in r.content.decode()
    r = client.post(f"/s/{fencing_session.id}/step/")
    assert r.status_code == 422


def test_it_404s_an_unknown_session(client, db):
    assert client.get("/s/nope/").status_code == 404


def test_it_exports_the_command_log(client, free_session):
    client.post(f"/s/{free_session.id}/add-producer/", {"mode": "plain"})
    data = client.get(f"/s/{free_session.id}/log.json").json()
    assert data["commands"] == [{"add": {"A": {"producer": {"enable.idempotence": True}}}, "outcome": "ok"}]


def test_it_groups_the_gallery_basics_fencing_exactly_once_database_kafka_4_exercises(client):
    import re

    html = client.get("/").content.decode()
    groups = re.findall(r'<section class="group" data-group="([\w-]+)"', html)
    assert groups == ["basics", "fencing", "exactly-once", "database", "kafka-4", "exercises"]

    def cards(group: str) -> list[str]:
        section = html.split(f'data-group="{group}"', 1)[1].split("</section>", 1)[0]
        return re.findall(r'data-scenario="([\w-]+)"', section)

    assert "commit-and-abort" in cards("basics") and "zombie-fencing" in cards("fencing")
    assert cards("database") == ["db-incident-in-full", "db-transactional-outbox", "db-commit-kafka-then-database"]
    assert all(s.startswith("ex-") for s in cards("exercises")) and len(cards("exercises")) == 6
    assert "v2-epoch-bump-per-transaction" in cards("kafka-4")
    assert sum(len(cards(g)) for g in groups) == html.count('<article class="card" data-scenario=')
    assert 'id="gallery-filter"' in html and "js/gallery.js" in html
    footer = html.split('<footer class="foot">', 1)[1]
    # every release the simulator models (issue 33: 3.5 was left out)
    assert "Kafka 3.5.2 / 3.9.1 / 4.4.0," in footer and "KIP-890" in footer


def test_it_asks_again_for_a_session_waiting_on_the_java_build_without_an_inline_script(rf):
    from playground.web.views import _gallery

    request = rf.post("/new/", {"scenario": "commit-and-abort"})
    waiting = {"sentence": "The worker is being built.", "fields": [("scenario", "commit-and-abort")]}
    html = _gallery(request, status=202, waiting=waiting).content.decode()
    assert 'id="start-when-ready"' in html and "js/gallery.js" in html  # gallery.js submits it again after 5 s
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)  # the CSP refuses inline scripts
