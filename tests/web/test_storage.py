"""A session is an append-only log of rows: one row per command, appended in the transaction that bumps the
session's version; back, reset and truncation mark rows instead of rewriting; checkpoints bound every replay."""

from __future__ import annotations

import pytest

from playground import session
from playground.engine.spec import Step
from playground.models import Command, Session
from playground.session import CHECKPOINT_EVERY, limits, store

from .fake_backend import FakeBackend

pytestmark = pytest.mark.django_db


class CountingBackend(FakeBackend):
    """The fake backend, counting every step it applies (replays included)."""

    applied = 0

    def apply(self, step):
        CountingBackend.applied += 1
        return super().apply(step)


@pytest.fixture
def counting(settings):
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 1e12  # only this process's checkpoints: the counts are theirs
    session.BACKEND_FACTORIES["counting"] = CountingBackend
    CountingBackend.applied = 0
    yield CountingBackend
    session.BACKEND_FACTORIES.pop("counting", None)


def _polls(sid: str, n: int) -> None:
    for _ in range(n):
        session.apply_step(sid, Step("rc", "poll"))


def _rows(sid: str) -> list[Command]:
    return list(Command.objects.filter(session_id=sid).order_by("id"))


def test_it_appends_one_row_per_command_in_order(free_session):
    sid = free_session.id
    session.add_producer(sid, "new")
    session.apply_step(sid, Step("A", "init_transactions"))
    session.apply_step(sid, Step("rc", "poll"))
    rows = _rows(sid)
    assert [r.seq for r in rows] == [0, 1, 2]
    assert rows[1].entry == {"step": "A.init_transactions"} and rows[1].outcome == "ok"
    row = Session.objects.get(pk=sid)
    assert (row.length, row.version) == (3, 3)


def test_it_marks_rows_dropped_when_going_back_instead_of_rewriting(fencing_session):
    sid = fencing_session.id
    for _ in range(5):
        session.step(sid)
    before = [(r.id, r.entry) for r in _rows(sid)]
    session.back(sid)
    rows = _rows(sid)
    assert [(r.id, r.entry) for r in rows] == before  # nothing rewritten
    assert [r.dropped for r in rows] == [False] * 4 + [True]
    session.step(sid)
    rows = _rows(sid)
    assert len(rows) == 6 and rows[-1].seq == 4 and not rows[-1].dropped  # a new row takes the position
    assert Session.objects.get(pk=sid).length == 5


def test_it_keeps_a_resets_rows_for_the_record(free_session):
    sid = free_session.id
    session.add_producer(sid, "new")
    _polls(sid, 2)
    session.reset(sid)
    rows = _rows(sid)
    assert [r.dropped for r in rows] == [True, True, True, False]  # free play keeps the producer it added
    assert rows[-1].entry == {"add": {"A": {"producer": {"transactional.id": "txn-1", "enable.idempotence": True}}}}
    assert session.load(sid).length == 1


def test_it_refuses_an_append_when_another_process_was_first(free_session):
    stale = Session.objects.get(pk=free_session.id)
    assert store.append(Session.objects.get(pk=free_session.id), [{"step": "rc.poll", "outcome": "ok"}]) is not None
    assert store.append(stale, [{"step": "ru.poll", "outcome": "ok"}]) is None
    assert [r.entry for r in _rows(free_session.id)] == [{"step": "rc.poll"}]


def test_it_bumps_the_version_with_the_fields_given_or_changes_nothing_for_a_stale_row(free_session):
    row = Session.objects.get(pk=free_session.id)
    assert store.set_running(row, True)
    now = Session.objects.get(pk=row.pk)
    assert (now.version, now.running) == (row.version + 1, True)
    assert now.runner_at == now.updated_at and now.updated_at > row.updated_at  # a run starts beating now
    assert not store.set_running(row, False)  # read before the bump: someone was first
    assert not store.truncate(row, 0)
    assert Session.objects.get(pk=row.pk).running and Session.objects.get(pk=row.pk).version == row.version + 1


def test_it_allows_only_one_live_row_per_position(free_session):
    from django.db import IntegrityError, transaction

    Command.objects.create(session_id=free_session.id, seq=0, entry={"step": "rc.poll"})
    with pytest.raises(IntegrityError), transaction.atomic():
        Command.objects.create(session_id=free_session.id, seq=0, entry={"step": "ru.poll"})
    Command.objects.create(session_id=free_session.id, seq=0, entry={"step": "ru.poll"}, dropped=True)  # dropped: fine


def test_it_raises_the_command_limit_to_twenty_thousand():
    assert limits.DEFAULTS["commands"] >= 20_000


def test_it_goes_back_replaying_only_the_commands_since_the_nearest_checkpoint(counting, db):
    row = session.create(None, backend="counting")
    n = 2 * CHECKPOINT_EVERY + 30
    _polls(row.id, n)
    assert sorted(session.load(row.id).checkpoints) == [CHECKPOINT_EVERY, 2 * CHECKPOINT_EVERY]
    counting.applied = 0
    session.back(row.id)
    assert counting.applied == 29  # from the checkpoint at 200 to 229, not 229 commands from the start
    assert session.load(row.id).length == n - 1


def test_it_catches_up_from_a_checkpoint_when_another_process_cut_the_log(counting, db):
    row = session.create(None, backend="counting")
    _polls(row.id, CHECKPOINT_EVERY + 40)
    # Another process goes back 20 commands and appends one of its own.
    other = Session.objects.get(pk=row.id)
    assert store.truncate(other, CHECKPOINT_EVERY + 20)
    assert store.append(Session.objects.get(pk=row.id), [{"step": "ru.poll", "outcome": "ok"}])
    counting.applied = 0
    live = session.load(row.id)
    assert counting.applied == 21  # restored at 100, then the 20 kept commands and the new one
    assert live.length == CHECKPOINT_EVERY + 21 and live.commands[-1]["step"] == "ru.poll"
    fresh_view = FakeBackend(live.cluster, session.free_play_actors())
    for entry in live.commands:
        fresh_view.apply(session.step_from_entry(entry["step"]))
    assert live.backend.view() == fresh_view.view()


def test_it_bounds_checkpoint_memory_dropping_the_least_recently_used_sessions_first(counting, db, settings):
    first = session.create(None, backend="counting")
    _polls(first.id, CHECKPOINT_EVERY)
    size = session.load(first.id).checkpoints[CHECKPOINT_EVERY].size  # its backend and its anomaly checker
    settings.PLAYGROUND_CHECKPOINT_MB = 1.5 * size / (1024 * 1024)
    second = session.create(None, backend="counting")
    _polls(second.id, CHECKPOINT_EVERY)
    assert session.CACHE.get(first.id).checkpoints == {}
    assert list(session.CACHE.get(second.id).checkpoints) == [CHECKPOINT_EVERY]


def test_one_session_holds_at_most_a_quarter_of_the_checkpoint_memory_its_oldest_going_first(counting, db, settings):
    other = session.create(None, backend="counting")
    _polls(other.id, CHECKPOINT_EVERY)
    size = session.load(other.id).checkpoints[CHECKPOINT_EVERY].size
    settings.PLAYGROUND_CHECKPOINT_MB = 10 * size / (1024 * 1024)  # room for ten, a quarter of it two and a half
    busy = session.create(None, backend="counting")
    _polls(busy.id, 6 * CHECKPOINT_EVERY)
    kept = sorted(session.CACHE.get(busy.id).checkpoints)
    assert kept[-1] == 6 * CHECKPOINT_EVERY and len(kept) <= 3  # its newest, not its oldest
    assert list(session.CACHE.get(other.id).checkpoints) == [CHECKPOINT_EVERY]  # the other session keeps its own
