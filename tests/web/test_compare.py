"""The compare view: one scenario (or a session's command log) in two profiles, side by side on the simulator,
stepped together, the differences lit; its entry points on the gallery's cards, a shared scenario's page and the
session page; bad input answered with a sentence naming what is wrong; a session's compare needs no capability and
shows none."""

from __future__ import annotations

import re
from html import unescape as html_unescape

import pytest
from django.test import Client

from playground import session
from playground.engine.spec import Profile
from playground.models import Compared, ScenarioText, Session
from playground.scenario import library, loader, parse_scenario
from playground.scenario.exercise import is_exercise
from playground.session import capability, compare, limits
from playground.web.views import EXAMPLE

pytestmark = pytest.mark.django_db

ZOMBIE = "/compare/?scenario=zombie-fencing&a=3.9-librdkafka&b=4-java"
FENCED_COMMIT = 7  # the zombie's A.commit_transaction: step 7 of scenarios/02-zombie-fencing.yaml (notes are steps)


@pytest.fixture(autouse=True)
def _fresh_cache():
    compare.kept._cache.clear()
    yield
    compare.kept._cache.clear()


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


def test_it_offers_compare_with_the_profile_pair_on_every_gallery_card_but_an_exercise_s(client):
    html = client.get("/").content.decode()
    cards = html.count('<article class="card" data-scenario=')
    exercises = sum(1 for e in library.entries() if is_exercise(e.scenario))
    assert cards > 10 and exercises and html.count('<details class="compare-entry">') == cards - exercises
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


@pytest.fixture
def runs(monkeypatch):
    """The profile pairs each comparison was run for (a lookup runs none)."""
    ran = []
    real = compare.run
    monkeypatch.setattr(
        compare.kept, "run", lambda what, a, b, client="": ran.append((a.key, b.key)) or real(what, a, b, client)
    )
    return ran


def test_it_runs_a_comparison_once_and_steps_through_it_from_the_cache(client, runs):
    for k in (0, 1, 2, 5):
        assert client.get(f"{ZOMBIE}&at={k}").status_code == 200
    assert runs == [("3.9-librdkafka", "4-java")]


def test_it_compares_two_stages_of_an_upgrade_named_by_their_triples(client):
    r = client.get("/compare/?scenario=rolling-upgrade&a=3.5-java&b=3.9-java:3.5")
    assert r.status_code == 200, r.content
    html = r.content.decode()
    assert "Kafka 3.5.2 · java" in html and "Kafka 3.9.1 · java 3.5.2" in html


# ------------------------------------------------------------------------- bounded, and computed once (issue 30)
SPIN = (
    "(SELECT count(*) FROM (WITH RECURSIVE spin(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM spin "
    "WHERE i < 1000000000 * (SELECT count(*) FROM kafka_records)) SELECT i FROM spin)) > 0"
)
# Runs until the statement limit stops it once Kafka holds a record; at once over empty Kafka tables (the loader's
# check of the query).
COSTLY_RECONCILE = (
    f"SELECT o.id, EXISTS (SELECT 1 FROM kafka_records r WHERE r.value = o.v) AS sent FROM orders o WHERE {SPIN}"
)
ENDLESS = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"
TRANSACTION = [
    "A.begin_transaction",
    "A.produce: {topic: orders, partition: 0, value: order-1}",
    "A.commit_transaction",
]


def _db_text(steps: list[str], reconcile: str = "", name: str = "db-compare") -> str:
    block = f'  reconcile:\n    sql: "{reconcile}"\n' if reconcile else ""
    return (
        f"format: 1\nid: {name}\ntitle: {name}\ncluster:\n  topics:\n    orders: {{partitions: 1}}\n"
        "actors:\n  A: {producer: {transactional.id: t}}\n"
        "  rc: {consumer: {group.id: g, isolation.level: read_committed, topics: [orders]}}\n"
        'database:\n  tables:\n    orders:\n      columns: "id integer primary key, v text"\n'
        "      rows: [[1, order-1]]\n" + block + "steps:\n" + "".join(f"  - {s}\n" for s in steps)
    )


def _shared(text: str) -> str:
    return ScenarioText.store(text, "db-compare", shared=True).id


def _limit_note(html: str) -> str:
    m = re.search(r'<p class="notice cmp-limit" role="status">([^<]*)</p>', html)
    return html_unescape(m.group(1)) if m else ""


def _length(html: str) -> int:
    return int(re.search(r'data-length="(\d+)"', html).group(1))


def test_it_stops_a_comparison_whose_side_spent_a_sessions_sql_budget_and_says_which_before_which_step(
    client, settings
):
    settings.PLAYGROUND_LIMITS = {"db_statement_ms": 30, "db_session_ms": 100}
    steps = ["A.init_transactions"] + [f'app.sql: "{ENDLESS}"'] * 12
    html = client.get(f"/sc/{_shared(_db_text(steps))}/compare/?a=3.9-librdkafka&b=4-java").content.decode()
    note = _limit_note(html)
    m = re.match(
        r"Side (A|B) \((Kafka [^)]+)\) stopped before step (\d+): its SQL statements and reconciliation "
        r"queries took 100 ms in all, a session's limit \(db_session_ms\)",
        note,
    )
    assert m, note
    # each statement spends its 30 ms or more (on a loaded machine): after one to four of them, the next is not run
    assert 3 <= int(m.group(3)) <= 6 and _length(html) == int(m.group(3)) - 1
    assert m.group(2) == {"A": "Kafka 3.9.1 · librdkafka", "B": "Kafka 4.4.0 · java"}[m.group(1)]


def test_it_counts_the_reconciliation_query_against_a_comparisons_budget(client, settings):
    settings.PLAYGROUND_LIMITS = {"db_statement_ms": 30, "db_session_ms": 100}
    steps = ["A.init_transactions"] + TRANSACTION * 6  # no app.sql: only the query after each step spends
    url = f"/sc/{_shared(_db_text(steps, COSTLY_RECONCILE))}/compare/?a=3.9-librdkafka&b=4-java"
    html = client.get(url).content.decode()
    m = re.match(r"Side (A|B) \(Kafka [^)]+\) stopped before step (\d+): ", _limit_note(html))
    assert m, _limit_note(html)
    assert int(m.group(2)) < len(steps) and _length(html) == int(m.group(2)) - 1
    last = client.get(f"{url}&at={_length(html)}").content.decode()
    assert "SQL_TIMEOUT: the statement ran longer than 30 ms" in _row(last, "db.error")  # it ran to its limit


def test_it_charges_a_comparisons_sql_to_the_client_and_stops_then_refuses_when_its_minute_is_spent(client, settings):
    settings.PLAYGROUND_LIMITS = {"db_statement_ms": 30, "db_session_ms": 10_000, "db_ms_per_minute": 100}
    text_id = _shared(_db_text(["A.init_transactions"] + [f'app.sql: "{ENDLESS}"'] * 12))
    me = session.client_key("127.0.0.1")
    html = client.get(f"/sc/{text_id}/compare/?a=3.9-librdkafka&b=4-java").content.decode()
    note = _limit_note(html)
    assert re.match(r"Stopped before step \d+: your SQL statements took 100 ms in the last minute, the limit", note)
    assert limits.remaining("db_ms_per_minute", me) < 1
    assert not Compared.objects.exists()  # another client, or this one a minute later, gets all of it
    r = client.get(f"/sc/{text_id}/compare/?a=3.9-librdkafka&b=4-java")
    assert r.status_code == 429 and "in the last minute" in r.content.decode()
    assert Client(REMOTE_ADDR="10.0.0.7").get(f"/sc/{text_id}/compare/?a=3.9-librdkafka&b=4-java").status_code == 200


def test_it_counts_a_live_sessions_reconciliation_query_against_its_creators_minute(client, settings):
    settings.PLAYGROUND_LIMITS = {"db_statement_ms": 30, "db_ms_per_minute": 100}
    text = _db_text(["A.init_transactions", *TRANSACTION, 'app.sql: "UPDATE orders SET v = v"'], COSTLY_RECONCILE)
    row = session.create(parse_scenario(text), source=text, backend="sim", client="creator-1")
    for _ in range(4):  # init, begin, produce, commit: Kafka holds a record, the query runs to its limit from now on
        session.step(row.id)
    pages = []
    for _ in range(8):
        pages.append(client.get(f"/s/{row.id}/").content.decode())
        if "the reconciliation query waits" in pages[-1]:
            break
    assert "SQL_TIMEOUT" in pages[0]  # it ran, 30 ms, charged to the session's creator
    assert 2 <= len(pages) <= 6 and "in the last minute" in pages[-1]  # ~30 ms a page: the minute's 100 ms spent
    assert limits.remaining("db_ms_per_minute", "creator-1") < 1
    assert limits.remaining("db_ms_per_minute", session.client_key("127.0.0.1")) == 100  # not the viewer's
    with pytest.raises(limits.LimitExceeded, match="in the last minute"):
        session.step(row.id)  # the creator's next statement: the same minute


def test_it_serves_a_kept_comparison_to_another_process_without_running_it(client, runs):
    assert client.get(f"{ZOMBIE}&at=3").status_code == 200
    assert Compared.objects.count() == 1
    compare.kept._cache.clear()  # what another process has: the database, nothing of this one's memory
    loader.parsed.cache_clear()
    html = client.get(f"{ZOMBIE}&at={FENCED_COMMIT}").content.decode()
    assert "EndTxn INVALID_PRODUCER_EPOCH (47)" in _side(html, "a") and "EndTxn PRODUCER_FENCED (90)" in _side(
        html, "b"
    )
    assert runs == [("3.9-librdkafka", "4-java")]


def test_it_runs_a_comparison_once_for_every_language(client, runs):
    english = client.get(f"{ZOMBIE}&at=11", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    compare.kept._cache.clear()
    chinese = client.get(f"{ZOMBIE}&at=11", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert runs == [("3.9-librdkafka", "4-java")]
    assert "this step" in english and "本步" in chinese and "本步" not in english
    assert _row(english, "producer.B.epoch").split("</th>")[1] == _row(chinese, "producer.B.epoch").split("</th>")[1]


def test_it_shows_a_stored_comparison_as_it_was_computed(client):
    scenario = library.find("db-incident-in-full").scenario
    c = compare.run(
        compare.Subject(
            scenario.title,
            scenario.cluster,
            scenario.actors,
            scenario.database,
            scenario.seed,
            compare.commands_of_steps(scenario.steps),
            len(scenario.steps),
        ),
        Profile("3.9", "librdkafka"),
        Profile("4", "java"),
    )
    back = compare.decode(compare.encode(c))
    assert back.length == c.length == len(scenario.steps) and back.total == c.total
    for k in range(c.length + 1):
        assert back.rows(k) == c.rows(k), k
        assert back.outcomes(k) == c.outcomes(k)
    assert back.differing == c.differing and back.new == c.new
    assert len(compare.encode(c)) < 20_000  # what changes at each step, compressed


def test_it_shows_a_long_history_as_its_length_its_newest_items_and_a_digest_read_a_step_at_a_time():
    plain = [f"P.produce: {{topic: orders, partition: 0, value: v{i}}}" for i in range(1, 31)]
    steps = ["A.init_transactions", *plain[:10], "rc.poll", *TRANSACTION * 22, *plain[10:], "rc.poll"]
    scenario = parse_scenario(_db_text(steps).replace("  rc:", "  P: {producer: {}}\n  rc:"))
    c = compare.run(
        compare.Subject(
            None, scenario.cluster, scenario.actors, None, 0, compare.commands_of_steps(scenario.steps), len(steps)
        ),
        Profile("3.9", "librdkafka"),
        Profile("4", "java"),
    )
    at = {r.field.key: r for r in c.rows(c.length)}
    got = at["consumer.rc.got"].a
    # 30 plain records and 22 committed transactions' records: read_committed got all 52, the newest 20 shown
    assert re.fullmatch(r"orders-0: \(52\) …, v11, v12, .*, v30 #[0-9a-f]{8}", got), got
    markers = at["log.orders-0.markers"]
    assert markers.a.startswith("(22) …; COMMIT @") and markers.a.count("COMMIT @") == 20
    assert markers.differs  # transaction protocol 2 bumps the epoch at every commit: 20 newest and the digest differ
    first = {r.field.key: r for r in c.rows(12)}["consumer.rc.got"].a
    assert first == "orders-0: v1, v2, v3, v4, v5, v6, v7, v8, v9, v10"  # a short list as it is


def test_it_keeps_a_long_value_as_its_beginning_and_a_digest():
    long_a, long_b = "x" * 600 + "a", "x" * 600 + "b"
    assert compare.reading._bounded("short") == "short"
    shown_a, shown_b = compare.reading._bounded(long_a), compare.reading._bounded(long_b)
    assert shown_a.startswith("x" * 500 + "… (+101) #") and len(shown_a) < 530
    assert shown_a != shown_b  # a difference past what is shown still shows


def test_it_keeps_the_most_recently_shown_comparisons_up_to_its_bound(client, settings):
    settings.PLAYGROUND_LIMITS = {"compares_kept": 2}
    for a, b in (("3.9-librdkafka", "4-java"), ("3.9-java", "4-java"), ("4-librdkafka", "4-java")):
        assert client.get(f"/compare/?scenario=zombie-fencing&a={a}&b={b}").status_code == 200
    assert Compared.objects.count() == 2
    compare.kept._cache.clear()
    kept = {compare.decode(bytes(body)).a.key for body in Compared.objects.values_list("body", flat=True)}
    assert kept == {"3.9-java", "4-librdkafka"}  # the least recently shown went


def test_it_compares_the_first_steps_of_a_longer_scenario_and_says_so(client, settings):
    settings.PLAYGROUND_LIMITS = {"compare_steps": 10}
    html = client.get(ZOMBIE).content.decode()
    assert _length(html) == 10
    assert _limit_note(html) == "This comparison runs the first 10 of 32 steps, its limit (compare_steps)."
    r = client.get(f"{ZOMBIE}&at=11")
    assert r.status_code == 404 and "steps 0 to 10" in r.content.decode()


def test_it_stops_a_comparison_that_has_read_its_values_and_says_so(client, settings):
    settings.PLAYGROUND_LIMITS = {"compare_values": 200}  # zombie-fencing reads some 20 values a side and step
    html = client.get(ZOMBIE).content.decode()
    m = re.match(
        r"Stopped before step (\d+): both sides have read 200 values \(each field after every step\), the most "
        r"one comparison reads \(compare_values\)\.",
        _limit_note(html),
    )
    assert m, _limit_note(html)
    assert 3 <= int(m.group(1)) <= 8 and _length(html) == int(m.group(1)) - 1


def test_it_runs_a_sessions_comparison_once_per_log_version_without_replaying_the_session(client, runs):
    sid = _new(client, backend="sim")
    for _ in range(3):
        client.post(f"/s/{sid}/step/")
    session.CACHE.clear()
    assert client.get(f"/s/{sid}/compare/?at=1").status_code == 200
    assert client.get(f"/s/{sid}/compare/?at=3").status_code == 200
    assert session.CACHE.get(sid) is None  # the log's rows were read; the session was not replayed
    assert len(runs) == 1
    client.post(f"/s/{sid}/step/")
    assert 'data-length="4"' in client.get(f"/s/{sid}/compare/").content.decode()
    assert len(runs) == 2


def test_it_compares_the_first_steps_of_a_longer_session_log_and_says_so(client, settings):
    settings.PLAYGROUND_LIMITS = {"compare_steps": 4}
    sid = _new(client, backend="sim")
    for _ in range(6):
        client.post(f"/s/{sid}/step/")
    html = client.get(f"/s/{sid}/compare/").content.decode()
    assert _length(html) == 4 and "runs the first 4 of 6 steps" in _limit_note(html)


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("a=3.9-librdkafka&b=5-java", "b: 5-java is not a profile of this playground"),
        ("a=3.9-java:2.8&b=4-java", "a: 3.9-java:2.8 is not a profile"),
        ("a=" + "x" * 5000 + "&b=4-java", "a: " + "x" * 40 + " is not a profile"),
        ("a=4-java&b=4-java:4", "a and b are both 4-java: choose two different profiles"),  # one profile, two names
    ],
)
def test_it_answers_a_pair_that_is_not_two_profiles_with_400_on_every_compare_page_and_runs_nothing(
    client, runs, query, says
):
    sid = _new(client, backend="sim")
    text_id = ScenarioText.store(EXAMPLE, "my-scenario", shared=True).id
    for base in ("/compare/?scenario=zombie-fencing&", f"/sc/{text_id}/compare/?", f"/s/{sid}/compare/?"):
        r = client.get(base + query)
        assert r.status_code == 400 and says in r.content.decode(), (base, r.status_code, r.content[:200])
    assert runs == [] and not Compared.objects.exists()
