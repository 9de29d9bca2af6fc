"""A session's profile (Kafka version x client): chosen on the gallery card, in the editor and on a shared scenario's
page, stored on the session's row, shown in its header, kept by forks, links and a session written back out."""

from __future__ import annotations

import re

import pytest

from playground import session
from playground.engine.backend import ProfileError
from playground.engine.spec import Profile
from playground.models import ScenarioText, Session
from playground.scenario import library, parse_scenario
from playground.web.views import EXAMPLE

from .fake_backend import FakeBackend

pytestmark = pytest.mark.django_db

TEXT_IN_4 = EXAMPLE.replace("\ncluster:", '\nprofile: {kafka: "4"}\ncluster:', 1)


def _created(response) -> Session:
    assert response.status_code == 302, response.content
    return Session.objects.get(pk=response["Location"].rstrip("/").rsplit("/", 1)[-1])


def test_it_creates_a_session_in_the_profile_chosen_on_the_gallery_card(client):
    row = _created(
        client.post("/new/", {"scenario": "zombie-fencing", "backend": "sim", "kafka": "4", "client": "librdkafka"})
    )
    assert (row.kafka, row.client) == ("4", "librdkafka") and row.profile == Profile("4")
    assert session.load(row.id).backend.profile == Profile("4")
    free = _created(client.post("/new/", {"scenario": "", "backend": "sim", "kafka": "4"}))
    assert free.profile == Profile("4", "librdkafka")


def test_it_keeps_the_scenarios_own_profile_when_the_form_names_none(client):
    assert _created(client.post("/new/", {"scenario": "zombie-fencing"})).profile == Profile("3.9", "librdkafka")
    assert _created(client.post("/editor/play/", {"text": TEXT_IN_4})).profile == Profile("4")
    assert _created(client.post("/editor/play/", {"text": TEXT_IN_4, "kafka": "3.9"})).profile == Profile("3.9")


@pytest.mark.parametrize(("field", "value"), [("kafka", "5"), ("kafka", "4.0"), ("client", "jvm"), ("client", "JAVA")])
def test_it_answers_400_naming_the_field_of_a_profile_value_outside_the_allowed_set(client, field, value):
    shared = ScenarioText.store(EXAMPLE, "my-scenario", shared=True)
    for url, data in (
        ("/new/", {"scenario": "zombie-fencing"}),
        ("/editor/play/", {"text": EXAMPLE}),
        (f"/sc/{shared.id}/play/", {}),
    ):
        r = client.post(url, {**data, field: value})
        assert r.status_code == 400, (url, r.status_code)
        assert r.content.decode().startswith(f"{field}: "), r.content
    assert Session.objects.count() == 0


def test_it_shows_the_profile_in_the_session_header(client):
    row = _created(client.post("/new/", {"scenario": "zombie-fencing", "backend": "sim", "kafka": "4"}))
    page = client.get(f"/s/{row.id}/").content.decode()
    assert re.search(r'Kafka 4\.4\.0 · librdkafka · transaction\.version <b class="tv">2/1</b>', page)
    row = _created(client.post("/new/", {"scenario": "zombie-fencing", "backend": "sim"}))
    assert (
        'Kafka 3.9.1 · librdkafka · transaction.version <b class="tv">0/1</b>'
        in client.get(f"/s/{row.id}/").content.decode()
    )


def test_it_offers_the_profile_on_every_play_form_with_the_scenarios_own_selected(client):
    gallery = client.get("/").content.decode()
    card = gallery[gallery.index('data-scenario="zombie-fencing"') :]
    card = card[: card.index("</article>")]
    assert '<option value="3.9" selected>Kafka 3.9.1</option><option value="4">Kafka 4.4.0</option>' in card
    assert '<option value="librdkafka" selected>librdkafka</option><option value="java">java</option>' in card
    editor = client.get("/editor/").content.decode()
    assert '<option value="" selected>Kafka as the file says</option>' in editor
    shared = ScenarioText.store(TEXT_IN_4, "my-scenario", shared=True)
    assert '<option value="4" selected>Kafka 4.4.0</option>' in client.get(f"/sc/{shared.id}/").content.decode()


def test_it_keeps_the_profile_in_forks_links_and_a_session_written_back(client):
    row = _created(client.post("/new/", {"scenario": "zombie-fencing", "backend": "sim", "kafka": "4"}))
    for _ in range(3):
        session.step(row.id)
    fork = session.fork(row.id, 2)
    assert fork.profile == Profile("4") and session.load(fork.id).backend.profile == Profile("4")
    assert client.get(f"/s/{row.id}/log.json").json()["profile"] == {"kafka": "4", "client": "librdkafka"}
    session.CACHE.clear()  # a link opened by another process: rebuilt from the row, in its profile
    assert session.load(row.id).backend.profile == Profile("4")
    text = client.get(f"/s/{row.id}/scenario.yaml").content.decode()
    assert 'profile: {kafka: "4", client: librdkafka}' in text
    assert parse_scenario(text, "written.yaml").profile == Profile("4")


def test_it_writes_no_profile_for_a_session_in_the_default_one(client):
    row = _created(client.post("/new/", {"scenario": "zombie-fencing", "backend": "sim"}))
    assert "profile:" not in client.get(f"/s/{row.id}/scenario.yaml").content.decode()


class _NoJava(FakeBackend):
    def __init__(self, *args, profile=None, **kwargs):
        if profile is not None and profile.client == "java":
            raise ProfileError("the fake backend has no java client")
        super().__init__(*args, profile=profile, **kwargs)


def test_it_answers_a_profile_the_backend_cannot_run_with_what_is_missing_and_creates_nothing(client):
    session.BACKEND_FACTORIES["nojava"] = _NoJava
    try:
        entry = library.find("zombie-fencing")
        with pytest.raises(session.CommandError) as info:
            session.create(entry.scenario, backend="nojava", profile=Profile("4", "java"))
    finally:
        del session.BACKEND_FACTORIES["nojava"]
    assert info.value.status == 422
    assert str(info.value) == "Kafka 4.4.0 · java cannot run here: the fake backend has no java client."
    assert Session.objects.count() == 0


def test_it_says_which_setting_is_missing_for_a_real_session_of_a_version_without_a_cluster(client, settings):
    settings.KAFKA_BOOTSTRAP_SERVERS, settings.KAFKA4_BOOTSTRAP_SERVERS = "127.0.0.1:1", ""
    r = client.post("/new/", {"scenario": "zombie-fencing", "backend": "kafka", "kafka": "4"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 400
    assert r.content.decode() == (
        "This server has no Kafka 4.4.0 cluster configured (KAFKA4_BOOTSTRAP_SERVERS). Choose the simulator."
    )


def test_it_runs_a_session_with_kafka_clients_of_another_release_and_says_so_in_the_header(client):
    # issue 20: the client's release is the profile's third coordinate, stored in the client column as java:3.5
    row = _created(
        client.post("/new/", {"scenario": "zombie-fencing", "backend": "sim", "kafka": "3.9", "client": "java:3.5"})
    )
    assert (row.kafka, row.client) == ("3.9", "java:3.5") and row.profile == Profile("3.9", "java", "3.5")
    assert session.load(row.id).backend.profile == Profile("3.9", "java", "3.5")
    page = client.get(f"/s/{row.id}/").content.decode()
    assert 'data-client="java:3.5"' in page and "Kafka 3.9.1 · java 3.5.2 · transaction.version" in page
    kafka35 = _created(client.post("/new/", {"scenario": "zombie-fencing", "backend": "sim", "kafka": "3.5"}))
    assert "Kafka 3.5.2 · librdkafka" in client.get(f"/s/{kafka35.id}/").content.decode()
