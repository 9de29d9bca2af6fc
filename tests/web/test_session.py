"""The session layer: a session is its command log; replay, time travel, limits, bad input."""

from __future__ import annotations

import pytest

from playground import session
from playground.engine.spec import Step
from playground.models import Session
from playground.session import limits, store

pytestmark = pytest.mark.django_db


def _log(sid):
    return Session.objects.get(pk=sid).commands


def test_it_steps_through_a_scenario_and_records_outcomes(fencing_session):
    sid = fencing_session.id
    for _ in range(6):
        session.step(sid)
    live = session.load(sid)
    assert live.cursor == 6
    assert [e["n"] for e in _log(sid)] == [0, 1, 2, 3, 4, 5]
    assert _log(sid)[5] == {"step": "B.init_transactions", "n": 5, "outcome": "ok"}


def test_it_replays_a_session_from_its_log_after_a_restart(fencing_session):
    sid = fencing_session.id
    for _ in range(7):
        session.step(sid)
    before = session.load(sid).backend.view()
    session.CACHE.clear()  # what a server restart (or another process) has: only the database
    after = session.load(sid).backend.view()
    assert after["partitions"] == before["partitions"]
    assert after["producers"] == before["producers"]


def test_it_goes_back_one_step_by_rebuilding_from_the_log(fencing_session):
    sid = fencing_session.id
    for _ in range(4):
        session.step(sid)
    at3 = None
    session.back(sid)
    live = session.load(sid)
    assert live.cursor == 3
    assert len(_log(sid)) == 3
    at3 = live.backend.view()["partitions"]["orders-0"]["log"]
    assert [e["value"] for e in at3] == []  # A.produce (step 3) undone
    session.step(sid)
    assert [e["value"] for e in session.load(sid).backend.view()["partitions"]["orders-0"]["log"]] == ["a-1"]


def test_it_resets_to_a_new_empty_log(fencing_session):
    sid = fencing_session.id
    session.step(sid)
    session.step(sid)
    session.reset(sid)
    assert _log(sid) == []
    assert session.load(sid).cursor == 0


def test_it_refuses_a_step_past_the_end(fencing_session):
    sid = fencing_session.id
    n = len(session.load(sid).steps)
    for _ in range(n):
        session.step(sid)
    with pytest.raises(session.CommandError):
        session.step(sid)
    assert len(_log(sid)) == n


def test_it_keeps_the_scenario_source_so_a_link_replays_exactly(fencing_session):
    row = Session.objects.get(pk=fencing_session.id)
    assert row.scenario_id == "zombie-fencing"
    assert "id: zombie-fencing" in row.scenario_source


def test_it_interleaves_user_commands_with_the_narrative(fencing_session):
    sid = fencing_session.id
    session.step(sid)
    session.step(sid)  # A.init_transactions
    session.apply_step(sid, Step("rc", "poll"))
    session.step(sid)
    assert session.load(sid).cursor == 3
    assert "n" not in _log(sid)[2]


def test_it_adds_producers_sharing_or_not(free_session):
    sid = free_session.id
    _, a = session.add_producer(sid, "new")
    _, b = session.add_producer(sid, "share", "txn-1")
    _, c = session.add_producer(sid, "plain")
    live = session.load(sid)
    assert (a, b, c) == ("A", "B", "C")
    assert live.actors["B"].transactional_id == "txn-1"
    assert live.actors["C"].transactional_id is None
    with pytest.raises(session.CommandError):
        session.add_producer(sid, "share", "nobody-uses-this")


def test_it_limits_producers_per_session(free_session, settings):
    settings.PLAYGROUND_LIMITS = {"producers": 2}
    sid = free_session.id
    session.add_producer(sid, "new")
    session.add_producer(sid, "new")
    with pytest.raises(limits.LimitExceeded) as info:
        session.add_producer(sid, "plain")
    assert "at most 2 producers" in str(info.value)
    assert len(_log(sid)) == 2


def test_it_limits_commands_per_session(free_session, settings):
    settings.PLAYGROUND_LIMITS = {"commands": 3}
    sid = free_session.id
    for _ in range(3):
        session.apply_step(sid, Step("rc", "poll"))
    with pytest.raises(limits.LimitExceeded):
        session.apply_step(sid, Step("rc", "poll"))
    assert len(_log(sid)) == 3


def test_it_rejects_unknown_actors_topics_and_partitions_without_changing_anything(free_session):
    sid = free_session.id
    session.add_producer(sid, "plain")
    before = list(_log(sid))
    for bad in (
        Step("Z", "flush"),
        Step("A", "poll"),
        Step("A", "produce", {"topic": "nope", "value": "v"}),
        Step("A", "produce", {"topic": "orders", "partition": 3, "value": "v"}),
        Step("broker", "stop", {"broker": 9}),
        Step("clock", "advance", {"ms": 0}),
        Step("A", "send_offsets_to_transaction", {"consumer": "rc"}),  # rc has no group
    ):
        with pytest.raises(session.CommandError):
            session.apply_step(sid, bad)
    assert _log(sid) == before


def test_it_catches_up_when_another_process_appended(free_session):
    sid = free_session.id
    session.apply_step(sid, Step("rc", "poll"))
    live = session.load(sid)
    # Another process appends straight to the database.
    assert store.append(Session.objects.get(pk=sid), [{"add": {"A": {"producer": {}}}, "outcome": "ok"}]) is not None
    live2 = session.load(sid)
    assert "A" in live2.actors and live2 is live  # replayed on top, not rebuilt
