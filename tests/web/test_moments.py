"""Scrubbing and forking on the simulator: step k of a session, however it is reached (a moment built from a
checkpoint, a moment moved forward, a fork), equals a fresh replay of the session's first k commands."""

from __future__ import annotations

import gc
import json
import random
import weakref

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from playground import session
from playground.engine.spec import Step
from playground.models import Session
from playground.session import CHECKPOINT_EVERY
from playground.session.history import findings
from playground.session.live import actor_from_entry, step_from_entry
from playground.session.replay import restore
from playground.sim.driver import SimBackend

pytestmark = pytest.mark.django_db

PRODUCERS = ("A", "B")
ACTIONS = (
    [
        Step(p, a)
        for p in PRODUCERS
        for a in (
            "init_transactions",
            "begin_transaction",
            "commit_transaction",
            "abort_transaction",
            "crash",
            "restart",
        )
    ]
    + [Step(p, "produce", {"topic": "orders", "partition": n, "value": f"{p}{n}"}) for p in PRODUCERS for n in range(3)]
    + [Step("A", "produce", {"topic": "orders", "partition": 1, "value": "ff", "await": False})]
    + [Step("rc", "poll"), Step("ru", "poll"), Step("clock", "advance", {"ms": 61_000})]
)


def _fresh_view(live, k: int) -> str:
    """The first k commands replayed on a new simulator: the reference."""
    actors = session.free_play_actors()
    backend = SimBackend(live.cluster, actors, seed=live.seed)
    for entry in live.commands[:k]:
        if "add" in entry:
            backend.add_actor(actor_from_entry(entry["add"]))
        else:
            backend.apply(step_from_entry(entry["step"]))
    return json.dumps(backend.view(10_000), sort_keys=True, default=str)


def _view(live) -> str:
    return json.dumps(live.backend.view(10_000), sort_keys=True, default=str)


def _play(commands: list[Step]) -> str:
    row = session.create(None, backend="sim")
    session.add_producer(row.id, "new")
    session.add_producer(row.id, "share", "txn-1")
    for step in commands:
        try:
            session.apply_step(row.id, step)
        except session.CommandError:
            pass  # e.g. a crashed producer's step: refused, not logged
    return row.id


@hsettings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(commands=st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=40), data=st.data())
def test_it_shows_step_k_as_a_fresh_replay_of_the_first_k_commands(commands, data):
    sid = _play(commands)
    head = session.load(sid)
    for k in data.draw(st.lists(st.integers(0, head.length), min_size=1, max_size=4)):
        assert _view(session.moment(sid, k)) == _fresh_view(head, k), k
    k = data.draw(st.integers(0, head.length))
    fork = session.fork(sid, k, backend="sim")
    forked = session.load(fork.id)
    assert forked.length == k and forked.origin == {"session": sid, "at": k}
    assert _view(forked) == _fresh_view(head, k)
    session.CACHE.clear()  # another process: the fork replays from its own rows
    assert _view(session.load(fork.id)) == _fresh_view(head, k)


def test_it_restores_moments_from_checkpoints_across_a_long_log():
    steps = [
        Step("A", "begin_transaction"),
        Step("A", "produce", {"topic": "orders", "partition": 0, "value": "v"}),
        Step("A", "commit_transaction"),
        Step("rc", "poll"),
    ]
    sid = _play([Step("A", "init_transactions")] + steps * 60)  # 243 commands: a checkpoint every CHECKPOINT_EVERY
    head = session.load(sid)
    assert sorted(head.checkpoints) == list(range(CHECKPOINT_EVERY, head.length + 1, CHECKPOINT_EVERY))
    for k in (0, 99, 100, 101, 150, 151, 199, 200, 242, head.length):
        assert _view(session.moment(sid, k)) == _fresh_view(head, k), k
    assert session.load(sid) is head and head.length == 243  # the head was never touched


def test_it_finds_at_step_k_what_a_checker_reading_the_first_k_commands_at_once_finds():
    """A moment of an early step goes on from the anomaly checker its checkpoint froze instead of reading its whole
    history again: it finds the same."""
    rng = random.Random(5)
    # A's sends committed twice (written_twice), A fenced by B mid-transaction and told at its commit (aborted_told)
    produce = {p: Step(p, "produce", {"topic": "orders", "partition": 0, "value": f"{p}0"}) for p in PRODUCERS}
    cycle = [Step("A", "init_transactions"), Step("A", "begin_transaction"), produce["A"]]
    cycle += [Step("A", "commit_transaction"), Step("rc", "poll"), Step("A", "begin_transaction"), produce["A"]]
    cycle += [Step("B", "init_transactions"), Step("A", "commit_transaction"), Step("B", "begin_transaction")]
    cycle += [produce["B"], Step("B", "commit_transaction"), Step("rc", "poll"), rng.choice(ACTIONS)]
    sid = _play(cycle * (3 * CHECKPOINT_EVERY // len(cycle) + 1))
    head = session.load(sid)
    assert all(cp.checker for cp in head.checkpoints.values())
    found_any = False
    for k in sorted(rng.sample(range(CHECKPOINT_EVERY, head.step_count + 1), 8)):
        session.CACHE.drop_moment(sid)  # from its checkpoint, not moved on from the last moment
        at = session.moment(sid, k)
        assert at.anomalies is not None, k
        whole = restore(head, head.entries_at(k), as_moment=True)  # no checker: it reads the first k commands
        expected = [f.as_dict() for f in findings(whole)]
        assert [f.as_dict() for f in findings(at)] == expected, k
        found_any = found_any or bool(expected)
    assert found_any


def test_it_refuses_a_step_outside_the_log(free_session):
    with pytest.raises(session.CommandError) as info:
        session.moment(free_session.id, 5)
    assert info.value.status == 404
    with pytest.raises(session.CommandError):
        session.fork(free_session.id, 1)


def test_it_page_opens_a_session_at_a_step_read_only(client, fencing_session):
    sid = fencing_session.id
    for _ in range(6):
        session.step(sid)
    html = client.get(f"/s/{sid}/?at=3").content.decode()
    assert "moment" in html.split("<body", 1)[1].split(">", 1)[0]
    assert 'data-at="3"' in html and "&amp;at=3" in html  # the slider and the websocket start at step 3
    assert html.count('<fieldset class="ctl" disabled>') == 3  # a moment is read-only, even for the driver
    for bad, status in (("x", 400), ("-1", 400), ("99", 404), ("1" * 20, 400), ("3.5", 400)):
        assert client.get(f"/s/{sid}/?at={bad}").status_code == status, bad
    assert Session.objects.get(pk=sid).length == 6


def test_it_forks_a_scenario_session_with_a_line_saying_where_from(client, fencing_session):
    sid = fencing_session.id
    for _ in range(4):
        session.step(sid)
    r = client.post(f"/s/{sid}/fork/", {"at": "3"})
    fork = r["Location"].rstrip("/").rsplit("/", 1)[-1]
    live = session.load(fork)
    assert live.cursor == 3 and live.scenario.id == "zombie-fencing"
    html = client.get(f"/s/{fork}/").content.decode()
    assert f'href="/s/{sid}/?at=3"' in html and "forked from" in html
    assert client.post(f"/s/{fork}/step/").status_code == 204  # the forker drives the fork
    assert Session.objects.get(pk=sid).length == 4  # the original is unchanged


def test_it_frees_a_moment_scrubbed_past_by_reference_counting():
    """The moment a scrub lets go is discarded: nothing of its simulator waits for the garbage collector."""
    sid = _play([Step("A", "init_transactions"), Step("A", "begin_transaction"), Step("rc", "poll")] * 40)
    gc.collect()
    gc.disable()
    try:
        first = session.moment(sid, 50)
        cluster = weakref.ref(first.backend.cluster)
        del first
        session.moment(sid, 20)  # further back: a new moment, from the start; the cache lets the first one go
        assert cluster() is None
    finally:
        gc.enable()
