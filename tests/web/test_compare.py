"""The compare view: one scenario (or a session's command log) in two profiles, side by side on the simulator,
stepped together, the differences lit; its entry points on the gallery's cards, a shared scenario's page and the
session page; bad input answered with a sentence naming what is wrong; a session's compare needs no capability and
shows none."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from playground import session
from playground.engine.spec import Profile
from playground.models import ScenarioText, Session
from playground.scenario import library
from playground.session import capability, compare
from playground.web.views import EXAMPLE

pytestmark = pytest.mark.django_db

ZOMBIE = "/compare/?scenario=zombie-fencing&a=3.9-librdkafka&b=4-java"
FENCED_COMMIT = 7  # the zombie's A.commit_transaction: step 7 of scenarios/02-zombie-fencing.yaml (notes are steps)


@pytest.fixture(autouse=True)
def _fresh_cache():
    compare._cache.clear()
    yield
    compare._cache.clear()


def _row(html: str, key: str) -> str:
    m = re.search(
        rf'<tr class="([^"]*)" data-key="{re.escape(key)}"><th scope="row">[^<]*</th><td>([^<]*)</td><td>([^<]*)</td>',
        html,
    )
    assert m, f"no row {key}"
    return m.group(0)


def _side(html: str, side: str) -> str:
    m = re.search(rf'<div class="cmp-side[^"]*" data-side="{side}">(.*?)</div>', html, re.S)
    assert m, f"no side {side}"
    return m.group(0)


def test_it_shows_both_profiles_labels_for_a_library_scenario(client):
    r = client.get(ZOMBIE)
    assert r.status_code == 200
    html = r.content.decode()
    assert "Kafka 3.9.1 · librdkafka" in html and "Kafka 4.4.0 · java" in html
    assert "zombie" in html.lower()
    assert "simulator" in html and "same seed" in html
    assert 'data-at="0"' in html and 'data-length="32"' in html


def test_it_defaults_to_the_scenarios_own_profile_against_kafka_4_with_the_java_client(client):
    html = client.get("/compare/?scenario=zombie-fencing").content.decode()
    assert '<th scope="col">Kafka 3.9.1 · librdkafka</th><th scope="col">Kafka 4.4.0 · java</th>' in html


def test_it_shows_the_fenced_commit_as_each_client_reports_it_and_lights_the_difference(client):
    html = client.get(f"{ZOMBIE}&at={FENCED_COMMIT}").content.decode()
    assert "<code>A.commit_transaction</code>" in html
    librdkafka, java = _side(html, "a"), _side(html, "b")
    assert "_FENCED" in librdkafka and "EndTxn INVALID_PRODUCER_EPOCH (47)" in librdkafka
    assert "ProducerFencedException" in java and "EndTxn PRODUCER_FENCED (90)" in java
    assert 'class="cmp-side differs"' in librdkafka and 'class="cmp-side differs"' in java
    row = _row(html, "producer.A.error")
    assert 'class="diff new"' in row and "<td>_FENCED</td><td>ProducerFencedException</td>" in row
    summary = html.split('class="cmp-summary"', 1)[1].split("</div>", 1)[0]
    assert "3 differences after this step" in summary
    assert "_FENCED</code> ≠ <code>ProducerFencedException" in summary
    assert "INVALID_PRODUCER_EPOCH (47)</code> ≠ <code>EndTxn PRODUCER_FENCED (90)" in summary
    # the step list lights that step, and the steps before it that changed nothing differ in nothing
    steps = html.split('class="cmp-steps', 1)[1].split("</nav>", 1)[0]
    assert re.search(r'<li class="current lit"><a [^>]*at=7"', steps)
    assert not re.search(r'<li class="[^"]*lit[^"]*"><a [^>]*at=[1-6]"', steps)


def test_it_lights_the_epoch_bumped_by_a_commit_under_transaction_protocol_2(client):
    html = client.get(f"{ZOMBIE}&at=11").content.decode()  # B.commit_transaction: ok on both sides
    assert "<code>B.commit_transaction</code>" in html
    assert 'class="cmp-side differs"' not in html  # the outcome is the same ...
    assert "<td>2</td><td>3</td>" in _row(html, "producer.B.epoch")  # ... the epoch is not
    assert 'class="diff new"' in _row(html, "txn.order-pay.epoch")
    markers = _row(html, "log.orders-0.markers")
    assert "COMMIT @3 · epoch 2" in markers and "COMMIT @3 · epoch 3" in markers


def test_it_explains_the_extra_epoch_bump_of_transaction_version_2_where_epochs_differ(client):
    html = client.get(f"{ZOMBIE}&at=11").content.decode()
    assert "Kafka 4.4.0 · java runs transaction.version 2 (KIP-890)" in html and "bumps the producer epoch" in html
    assert "transaction.version 2" not in client.get(f"{ZOMBIE}&at=4").content.decode()  # the epochs agree there


def test_it_names_transaction_version_as_a_sessions_header_does(client):
    html = client.get(f"{ZOMBIE}&at=2").content.decode()
    # the level the cluster finalized / the protocol the client runs: 3.9 finalizes none, librdkafka runs 1
    assert re.search(
        r'data-side="a">\s*<h3>Kafka 3.9.1 · librdkafka <small[^>]*>transaction.version <b class="tv">0/1</b>', html
    )
    assert re.search(
        r'data-side="b">\s*<h3>Kafka 4.4.0 · java <small[^>]*>transaction.version <b class="tv">2/2</b>', html
    )


def test_it_shows_what_read_committed_got_on_each_side(client):
    html = client.get(f"{ZOMBIE}&at=32").content.decode()
    row = _row(html, "consumer.rc.got")
    assert "<td>orders-0: b-1 · orders-1: —</td><td>orders-0: b-1 · orders-1: —</td>" in row
    assert "read_committed rc" in html and 'class=""' in row


def test_it_shows_the_reconciliation_between_the_database_and_kafka_on_each_side(client):
    scenario = library.find("db-incident-in-full").scenario
    c = compare.of_scenario(scenario, Profile("3.9", "librdkafka"), Profile("3.9", "java"), scenario.source)
    html = client.get(
        f"/compare/?scenario=db-incident-in-full&a=3.9-librdkafka&b=3.9-java&at={c.length}"
    ).content.decode()
    assert "database vs Kafka" in html
    gaps = _row(html, "db.gaps")
    assert int(re.search(r"<td>(\d+)</td>", gaps).group(1)) > 0  # the incident's orders that never reached inventory
    assert 'data-key="db.gap_rows"' in html


def test_it_steps_both_sides_together_with_the_buttons_links(client):
    html = client.get(f"{ZOMBIE}&at=5").content.decode()  # a note: a step like any other
    assert "<blockquote" in html
    nxt = re.search(r'id="cmp-next" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    prev = re.search(r'id="cmp-prev" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    nd = re.search(r'id="cmp-next-diff" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    assert nxt.endswith("at=6") and prev.endswith("at=4") and nd.endswith(f"at={FENCED_COMMIT}")
    assert "a=3.9-librdkafka" in nxt and "b=4-java" in nxt and "scenario=zombie-fencing" in nxt
    assert "<code>B.init_transactions</code>" in client.get(nxt).content.decode()
    assert "step 7 of 32" in client.get(nd).content.decode()
    first = client.get(f"{ZOMBIE}&at=0").content.decode()
    assert 'id="cmp-prev"' not in first and "Before the first step" in first
    last = client.get(f"{ZOMBIE}&at=32").content.decode()
    assert 'id="cmp-next"' not in last


def test_it_answers_an_htmx_step_with_the_body_only(client):
    r = client.get(f"{ZOMBIE}&at=6", HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and "HX-Request" in r["Vary"]
    html = r.content.decode()
    assert html.startswith('<main id="compare"') and "<html" not in html and 'data-at="6"' in html


@pytest.mark.parametrize(
    ("url", "status", "says"),
    [
        ("/compare/?scenario=no-such-scenario", 404, "No scenario no-such-scenario in the library."),
        ("/compare/", 400, "scenario: "),
        (ZOMBIE.replace("a=3.9-librdkafka", "a=5-java"), 400, "a: 5-java is not a profile"),
        (ZOMBIE.replace("b=4-java", "b=4-jvm"), 400, "b: 4-jvm is not a profile"),
        (
            ZOMBIE.replace("b=4-java", "b=java"),
            400,
            "choose one of 3.5-librdkafka, 3.5-java, 3.5-java:3.9, 3.5-java:4, 3.9-librdkafka, 3.9-java, 3.9-java:3.5, 3.9-java:4, 4-librdkafka, 4-java, 4-java:3.5, 4-java:3.9",
        ),
        (ZOMBIE.replace("b=4-java", "b=3.9-librdkafka"), 400, "a and b are both 3.9-librdkafka: choose two different"),
        ("/compare/?scenario=zombie-fencing&b=3.9-librdkafka", 400, "a and b are both 3.9-librdkafka"),  # A's default
        (f"{ZOMBIE}&at=33", 404, "Step 33 is not in this comparison: it has steps 0 to 32."),
        (f"{ZOMBIE}&at=-1", 400, "at= is a step number"),
        (f"{ZOMBIE}&at=two", 400, "at= is a step number"),
        ("/s/no-such-session/compare/", 404, "No such session."),
        ("/sc/no-such-text/compare/", 404, "No such shared scenario."),
    ],
)
def test_it_answers_bad_input_with_a_sentence_naming_what_is_wrong(client, url, status, says):
    r = client.get(url)
    assert r.status_code == status, (url, r.status_code, r.content)
    assert says in r.content.decode()


def test_it_compares_a_shared_scenario(client):
    row = ScenarioText.store(EXAMPLE, "my-scenario", shared=True)
    page = client.get(f"/sc/{row.id}/").content.decode()
    assert f'action="/sc/{row.id}/compare/"' in page
    html = client.get(f"/sc/{row.id}/compare/?a=4-librdkafka&b=4-java&at=7").content.decode()
    assert "Kafka 4.4.0 · librdkafka" in html and "Kafka 4.4.0 · java" in html
    assert "<code>A.commit_transaction</code>" in html
    assert "<td>0</td><td>1</td>" in _row(html, "producer.A.epoch")  # transaction protocol 2 bumps it at the commit


def test_it_offers_compare_with_the_profile_pair_on_every_gallery_card(client):
    html = client.get("/").content.decode()
    cards = html.count('<article class="card" data-scenario=')
    assert cards > 10 and html.count('<details class="compare-entry">') == cards
    form = re.search(r'<article class="card" data-scenario="zombie-fencing">.*?</article>', html, re.S).group(0)
    assert 'action="/compare/"' in form and 'name="scenario" value="zombie-fencing"' in form
    assert '<option value="3.9-librdkafka" selected>' in form and '<option value="4-java" selected>' in form


def _new(client: Client, **data: str) -> str:
    r = client.post("/new/", {"scenario": "zombie-fencing", **data})
    assert r.status_code == 302, r.content
    return r["Location"].rstrip("/").rsplit("/", 1)[-1]


def test_it_compares_a_sessions_command_log_under_the_other_profile(client):
    sid = _new(client, backend="sim")
    for _ in range(7):  # a note, init, begin, produce, a note, B's init, A's fenced commit
        assert client.post(f"/s/{sid}/step/").status_code == 204
    page = client.get(f"/s/{sid}/").content.decode()
    assert f'action="/s/{sid}/compare/"' in page and 'id="session-compare"' in page
    html = client.get(f"/s/{sid}/compare/?at=7").content.decode()
    assert 'data-length="7"' in html  # the session's seven steps, its notes included: ?at=7 is its step 7
    assert "Kafka 3.9.1 · librdkafka" in html and "Kafka 4.4.0 · java" in html
    assert "EndTxn INVALID_PRODUCER_EPOCH (47)" in _side(html, "a") and "EndTxn PRODUCER_FENCED (90)" in _side(
        html, "b"
    )
    assert f'href="/s/{sid}/"' in html


def test_it_lets_a_watcher_compare_a_session_and_neither_needs_nor_leaks_its_drive_capability(client):
    sid = _new(client)  # on the tests' fake backend: the compare re-runs the log on the simulator all the same
    key = client.cookies[capability.cookie_name(sid)].value
    client.post(f"/s/{sid}/step/")
    client.post(f"/s/{sid}/step/")
    before = Session.objects.get(pk=sid)
    watcher = Client()
    r = watcher.get(f"/s/{sid}/compare/?a=3.9-librdkafka&b=4-java&at=2")
    assert r.status_code == 200
    html = r.content.decode()
    assert "<code>A.init_transactions</code>" in html
    assert capability.cookie_name(sid) not in r.cookies
    for holder in (watcher, client):  # not for the watcher, and not even for the browser that holds it
        page = holder.get(f"/s/{sid}/compare/").content.decode()
        assert key not in page and "#drive=" not in page and "drive link" not in page
    after = Session.objects.get(pk=sid)
    assert (after.version, after.length) == (before.version, before.length)  # comparing changed nothing
    assert session.load(sid).profile == Profile()


def test_it_runs_a_comparison_once_and_steps_through_it_from_the_cache(client, monkeypatch):
    runs = []
    real = compare.run_side
    monkeypatch.setattr(compare, "run_side", lambda *a, **kw: runs.append(a[4]) or real(*a, **kw))
    for k in (0, 1, 2, 5):
        assert client.get(f"{ZOMBIE}&at={k}").status_code == 200
    assert runs == [Profile("3.9", "librdkafka"), Profile("4", "java")]


def test_it_compares_two_stages_of_an_upgrade_named_by_their_triples(client):
    r = client.get("/compare/?scenario=rolling-upgrade&a=3.5-java&b=3.9-java:3.5")
    assert r.status_code == 200, r.content
    html = r.content.decode()
    assert "Kafka 3.5.2 · java" in html and "Kafka 3.9.1 · java 3.5.2" in html
