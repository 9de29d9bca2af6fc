"""The dashboard on the real simulator: every library scenario, stepped to the end through the session layer,
renders every panel in both languages; and a free-play session on the simulator."""

from __future__ import annotations

import pytest

from playground import session
from playground.engine.spec import Step
from playground.scenario import library
from playground.web import broadcast

pytestmark = pytest.mark.django_db

SCENARIOS = [e.scenario.id for e in library.entries() if e.scenario is not None]


def test_it_has_scenarios_in_the_library():
    assert "zombie-fencing" in SCENARIOS and "shared-id-incident" in SCENARIOS


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_it_plays_every_library_scenario_on_the_simulator(scenario_id):
    entry = library.find(scenario_id)
    row = session.create(entry.scenario, source=entry.scenario.source, backend="sim")
    live = session.load(row.id)
    for step in live.steps:
        if step.predict:  # an exercise asks first: answered right, as a careful attendee would
            session.predict(row.id, step.index, step.predict["answer"])
        live, outcome = session.step(row.id)
        if step.expect is not None and not step.is_note:
            assert outcome in step.expect, (
                f"{scenario_id} step {step.index} {step.label}: {outcome} not in {step.expect}"
            )
    for lang in ("en", "zh-hans"):
        html = broadcast.snapshot(live, lang)
        assert 'id="p-logs"' in html and 'id="p-coordinator"' in html
    # A share link replays exactly: rebuild from the log alone and compare what the dashboard shows.
    before = live.backend.view()
    session.CACHE.clear()
    assert session.load(row.id).backend.view() == before


def test_it_plays_free_play_on_the_simulator():
    row = session.create(None, backend="sim")
    sid = row.id
    session.add_producer(sid, "new")
    session.add_producer(sid, "share", "txn-1")
    for step in (
        Step("A", "init_transactions"),
        Step("A", "begin_transaction"),
        Step("A", "produce", {"topic": "orders", "partition": 0, "value": "a-1"}),
        Step("B", "init_transactions"),
        Step("A", "commit_transaction"),
        Step("rc", "poll"),
        Step("ru", "poll"),
    ):
        live, outcome = session.apply_step(sid, step)
    assert outcome == "ok"
    view = live.backend.view()
    assert view["producers"]["A"]["fenced"] or view["producers"]["A"]["last_error"]
    html = broadcast.snapshot(live, "en")
    assert 'data-control="ABORT"' in html
    assert "hidden: aborted" in html


def test_it_marks_what_read_committed_holds_back_behind_the_lso():
    entry = library.find("hanging-transaction-blocks-lso")
    row = session.create(entry.scenario, source=entry.scenario.source, backend="sim")
    live = session.load(row.id)
    for step in live.steps:
        live, _ = session.step(row.id)
        if step.label == "ru.poll":
            break
    html = broadcast.snapshot(live, "en")
    table = html[html.index('data-tp="orders-0"') :]
    assert "held: behind LSO 0" in table  # c-1, c-2 (committed) and n-1 (plain) wait behind stuck's open h-1
    assert table.count("held: behind LSO") >= 4
    assert "✓" in table  # read_uncommitted got them


@pytest.mark.parametrize(("scenario_id", "gap"), [("db-incident-in-full", 4), ("shared-id-incident", 4)])
def test_it_counts_in_the_gap_only_sends_to_topics_a_read_committed_consumer_reads(scenario_id, gap):
    """The incident's gap is pay's four orders: not audit's five records nor monitor's metric, which no
    read_committed consumer reads."""
    from playground.web import apppanels as panels

    entry = library.find(scenario_id)
    row = session.create(entry.scenario, source=entry.scenario.source, backend="sim")
    for _step in entry.scenario.steps:
        live, _outcome = session.step(row.id)
    truth = panels.truth(live, broadcast.view_of(live))
    assert truth["gap"] == gap and {r["name"]: r["gap"] for r in truth["rows"] if r["gap"]} == {"pay": gap}
    assert sum(r["sent"] - r["got"] for r in truth["rows"]) > gap or scenario_id == "shared-id-incident"
    assert f"{gap} sends the applications believe succeeded, to topics a read_committed" in broadcast.snapshot(
        live, "en"
    )


def test_it_shows_when_an_open_transaction_times_out_and_when_the_abort_scan_aborts_it():
    """Free play: a producer's transaction left open. The coordinator panel says when it times out and at which
    tick of the abort scan it is aborted; the clock moved to 1 ms before that tick leaves it Ongoing, to the tick
    aborts it."""
    from playground.web import panels

    sid = session.create(None, backend="sim").id
    session.add_producer(sid, "new")
    for step in (
        Step("A", "init_transactions"),
        Step("A", "begin_transaction"),
        Step("A", "produce", {"topic": "orders", "partition": 0, "value": "a-1"}),
    ):
        live, _outcome = session.apply_step(sid, step)

    def entry(live):
        (e,) = panels.coordinator(live, broadcast.view_of(live))["entries"]
        return e

    e = entry(live)
    assert e["state"] == "Ongoing" and e["times_out_ms"] == e["txn_start_time_ms"] + e["timeout_ms"]
    assert e["times_out_ms"] < e["aborted_at_ms"] <= e["times_out_ms"] + 10_000 and e["scan_every_s"] == 10
    html = broadcast.snapshot(live, "en")
    assert f'data-aborted-at="{e["aborted_at_ms"]}"' in html and "the abort scan runs every 10 s" in html
    now = live.backend.view()["time_ms"]
    live, _ = session.apply_step(sid, Step("clock", "advance", {"ms": e["aborted_at_ms"] - now - 1}))
    assert entry(live)["state"] == "Ongoing"
    live, _ = session.apply_step(sid, Step("clock", "advance", {"ms": 1}))
    aborting = entry(live)  # the scan's tick: the coordinator has begun the abort (epoch bumped, PrepareAbort)
    assert aborting["pending"] == "PrepareAbort" and aborting["epoch"] == 1 and "times_out_ms" not in aborting


def test_it_shows_a_database_steps_sql_in_the_narrative_and_in_compare(client):
    entry = library.find("db-incident-in-full")
    row = session.create(entry.scenario, source=entry.scenario.source, backend="sim")
    live = session.load(row.id)
    html = broadcast.snapshot(live, "en")
    statement = "UPDATE orders SET status = &#x27;paid&#x27; WHERE id = 101"
    assert f'<code>app.sql</code> <span class="args">{statement}</span>' in html  # whole; a cut one's tooltip: JS
    page = client.get("/compare/?scenario=db-incident-in-full&a=3.9-librdkafka&b=4-java").content.decode()
    assert f"app.sql: {statement}" in page


def test_it_counts_a_moments_sends_per_topic_from_its_checkpoint_as_from_scratch(monkeypatch):
    """A moment goes on from what its checkpoint had counted (Live.derived): the same as counting its log anew."""
    from playground.session import cache
    from playground.web import apppanels as panels

    monkeypatch.setattr(cache, "CHECKPOINT_EVERY", 10)  # checkpoints inside this 37-step story

    entry = library.find("db-incident-in-full")
    row = session.create(entry.scenario, source=entry.scenario.source, backend="sim")
    for _step in entry.scenario.steps:
        live, _outcome = session.step(row.id)
        panels.sent_by_topic(live)  # as the truth panel does after each command
    assert any(cp.derived.get("sent_by_topic") for cp in session.load(row.id).checkpoints.values())
    for k in (13, 25, live.step_count - 1, 4):
        at = session.moment(row.id, k)
        counted = {a: dict(c) for a, c in panels.sent_by_topic(at).items()}
        at.derived.clear()
        assert counted == {a: dict(c) for a, c in panels.sent_by_topic(at).items()}, k


def test_it_does_not_say_none_under_what_the_application_was_told():
    """timeout-fences-producer ends with a notice (the application told its transaction aborted) and no alarm: the
    anomaly panel says nothing more is wrong, not "None" right under the notice (issue 33)."""
    entry = library.find("timeout-fences-producer")
    row = session.create(entry.scenario, source=entry.scenario.source, backend="sim")
    for _step in entry.scenario.steps:
        live, _outcome = session.step(row.id)
    page = broadcast.snapshot(live, "en")
    assert "Nothing more than what the application was told above" in page
    assert "None: every write" not in page
