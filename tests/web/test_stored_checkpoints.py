"""A session opens anywhere with a bounded replay (issue 30, item 3): checkpoints are stored with the command log
every so much of replay (session/checkpoints.py), and any process (another server, a restart, a watcher, `?at=k`, a
fork) thaws the nearest one and replays only the tail after it; what external clients sent lives in the rows'
payloads, not in the log a process keeps in memory. Runs on SQLite and, in `make test`, on PostgreSQL."""

from __future__ import annotations

import os
import time

import pytest

from playground import session
from playground.engine.spec import Step
from playground.models import Checkpoint as StoredCheckpoint
from playground.models import Command
from playground.session import checkpoints, external

from .conftest import hold
from .test_storage import CountingBackend

pytestmark = pytest.mark.django_db


@pytest.fixture
def counting(settings):
    session.BACKEND_FACTORIES["counting"] = CountingBackend
    CountingBackend.applied = 0
    yield CountingBackend
    session.BACKEND_FACTORIES.pop("counting", None)


def polls(sid: str, n: int) -> None:
    for _ in range(n):
        session.apply_step(sid, Step("rc", "poll"))


def another_process() -> None:
    """What another server process has of the session: nothing but the database."""
    session.CACHE.clear()


def stored_lengths(sid: str) -> list[int]:
    return list(StoredCheckpoint.objects.filter(session_id=sid).order_by("length").values_list("length", flat=True))


def test_it_stores_a_checkpoint_with_the_log_once_so_much_replay_has_passed(counting, settings):
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 0.0  # every command: each costs something
    row = session.create(None, backend="counting")
    polls(row.id, 5)
    assert stored_lengths(row.id) == [1, 2, 3, 4, 5]
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 1e12
    polls(row.id, 3)
    assert stored_lengths(row.id) == [1, 2, 3, 4, 5]


def test_another_process_opens_a_session_from_its_newest_stored_checkpoint_and_replays_only_the_tail(
    counting, settings
):
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 0.0
    row = session.create(None, backend="counting")
    polls(row.id, 30)
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 1e12
    polls(row.id, 7)  # after the newest stored one
    head = session.load(row.id)
    view, entries = head.backend.view(), list(head.commands)
    another_process()
    counting.applied = 0
    opened = session.load(row.id)
    assert counting.applied == 7  # the tail only, not 37 commands
    assert opened.backend.view() == view
    assert opened.commands == entries and opened.length == 37 and opened.step_count == head.step_count


def test_a_process_far_behind_thaws_the_newest_stored_checkpoint_rather_than_replay_up_to_it(counting, settings):
    row = session.create(None, backend="counting")
    polls(row.id, 1)
    (behind,) = session.CACHE.take(lambda live: live.session_id == row.id)  # this process's copy, at one command
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 0.0
    polls(row.id, 30)  # in "another process": its checkpoints stored with the log
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 1e12
    polls(row.id, 4)
    view = session.load(row.id).backend.view()
    session.CACHE.take(lambda live: live.session_id == row.id)
    session.CACHE.put(behind)  # back in this process, which saw none of it
    counting.applied = 0
    opened = session.load(row.id)
    assert counting.applied == 4  # the tail after the newest stored checkpoint, not 34 commands
    assert opened.backend.view() == view and opened.length == 35


def test_it_stores_no_checkpoint_where_one_is_stored_already(counting, settings):
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 0.0
    row = session.create(None, backend="counting")
    polls(row.id, 3)
    live = session.load(row.id)
    live.replay_ms = 1.0  # as if this process had replayed the third command after the one that stored it
    assert not checkpoints.maybe_store(live)
    assert stored_lengths(row.id) == [1, 2, 3]


def test_a_step_before_the_head_opens_from_the_nearest_stored_checkpoint(counting, settings):
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 0.0
    row = session.create(None, backend="counting")
    polls(row.id, 20)
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 1e12
    expected = session.moment(row.id, 12).backend.view()
    another_process()
    session.load(row.id)
    counting.applied = 0
    assert session.moment(row.id, 12).backend.view() == expected
    assert counting.applied == 0  # the checkpoint stored at 12, thawed


def test_going_back_drops_the_stored_checkpoints_past_the_log_and_the_rest_still_open_it(counting, settings):
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 0.0
    row = session.create(None, backend="counting")
    polls(row.id, 10)
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 1e12
    session.back(row.id)
    session.back(row.id)
    assert stored_lengths(row.id)[-1] == 8
    polls(row.id, 2)
    view = session.load(row.id).backend.view()
    another_process()
    counting.applied = 0
    assert session.load(row.id).backend.view() == view
    assert counting.applied == 2


def test_a_checkpoint_of_other_code_is_never_thawed(counting, settings, monkeypatch):
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 0.0
    row = session.create(None, backend="counting")
    polls(row.id, 6)
    StoredCheckpoint.objects.filter(session_id=row.id).update(code="another version of the code")
    another_process()
    counting.applied = 0
    assert session.load(row.id).length == 6
    assert counting.applied == 6  # replayed from the start


def test_a_session_keeps_a_bounded_number_of_stored_checkpoints_spread_over_its_log(counting, settings):
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 0.0
    row = session.create(None, backend="counting")
    polls(row.id, 60)
    lengths = stored_lengths(row.id)
    assert len(lengths) == checkpoints.STORED_KEPT
    assert lengths[-1] == 60  # the newest: what opening the head thaws
    gaps = [b - a for a, b in zip([0, *lengths], lengths)]
    assert max(gaps) <= 2 * 60 / checkpoints.STORED_KEPT + 1


def test_a_fork_takes_the_stored_checkpoints_within_it(counting, settings):
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 0.0
    row = session.create(None, backend="counting")
    polls(row.id, 10)
    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 1e12
    fork = session.fork(row.id, 7)
    assert stored_lengths(fork.id) == [1, 2, 3, 4, 5, 6, 7][-len(stored_lengths(fork.id)) :]
    view = session.load(fork.id).backend.view()
    another_process()
    counting.applied = 0
    assert session.load(fork.id).backend.view() == view
    assert counting.applied == 0


def test_an_external_clients_entry_keeps_its_payload_in_its_row_and_out_of_the_log_in_memory(settings):
    from playground.session.live import Live

    row = session.create(None, backend="sim")
    entry = {
        "ext": {"t": 0, "end": 5, "n": 0, "size": 3, "sum": [], "wall_ms": 0},
        external.PAYLOAD: b"abc",
        "outcome": "ok",
    }
    from playground.session import store

    (row_id,) = store.append(row, [entry])
    stored = Command.objects.get(pk=row_id)
    assert bytes(stored.payload) == b"abc" and "in" not in stored.entry["ext"] and "payload" not in stored.entry
    live = Live("x", "sim", 0, None, session.free_play_cluster(), {}, backend=None)
    live.record(entry, row_id)
    assert external.PAYLOAD not in live.commands[0]
    assert session.payloads([row_id]) == {row_id: b"abc"}


def metadata_request(correlation: int) -> bytes:
    from playground.protocol import messages

    cls = messages.request_class(3, 12)
    body = messages.build(
        cls,
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    )
    return messages.encode_request(3, 12, correlation, "chatty", body)


def test_a_session_of_many_client_requests_opens_elsewhere_replaying_only_what_followed_its_last_checkpoint(
    settings, monkeypatch
):
    from playground.session.commands import Change, commit
    from playground.session.live import run_entry

    settings.PLAYGROUND_STORED_CHECKPOINT_MS = 20.0
    sid = session.create(None, backend="sim").id
    listen = {external.LISTEN: {"brokers": {"1": ["127.0.0.1", 1]}, "owner": external.OWNER, "wall_ms": 0}}
    commit(sid, lambda live: Change(append=[run_entry(live, listen)]))
    correlation = 0
    for _row in range(20):  # as a listener cuts them: rows of a few hundred requests
        with session.CACHE.lock(sid):
            live = session.CACHE.peek(sid)
            started = time.perf_counter()
            for _ in range(100):
                correlation += 1
                external.receive(live, 1, 1, metadata_request(correlation))
            checkpoints.charge(live, (time.perf_counter() - started) * 1000)  # as the listener counts its feeding
        commit(sid, lambda live: Change())
    head = session.load(sid)
    assert head.length == 21 and sum(e["ext"]["n"] for e in head.commands if "ext" in e) == 2_000
    assert not any(external.PAYLOAD in e or "in" in e.get("ext", {}) for e in head.commands)
    newest = stored_lengths(sid)[-1]
    assert newest > 1
    digest = head.backend.view()["partitions"], len(external.core_of(head.backend).clients.actors)
    another_process()
    applied: list[int] = []
    original = external.apply
    monkeypatch.setattr(external, "apply", lambda *a, **k: applied.append(1) or original(*a, **k))
    opened = session.load(sid)
    assert len(applied) == opened.length - newest  # the tail after the newest stored checkpoint, no more
    assert (opened.backend.view()["partitions"], len(external.core_of(opened.backend).clients.actors)) == digest


def test_it_stores_a_flooded_sessions_checkpoint_holding_one_more_copy_of_its_state_at_a_time(db, client):
    """A listener's session may hold 24 MiB of incompressible records: packing its checkpoint copies that state once
    (the stored bytes), and the database driver at most once more (psycopg's binary parameter); Django's own binding
    spells it as a hex literal on PostgreSQL, six times its size at once, in the process that serves the session
    (issue 30: a Daphne's memory). Counted in bytes allocated (tracemalloc), not timed."""
    import tracemalloc

    row = hold(client, session.create(None, backend="sim"))
    live = session.load(row.id)
    state = os.urandom(8 << 20)
    cp = live.checkpoint(state)
    tracemalloc.start()
    try:
        blob = checkpoints.pack(cp)
        packed = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        checkpoints._insert(row.id, 1, 1, blob)
        inserted = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert packed < 1.25 * len(state), packed
    assert inserted < 1.5 * len(state), inserted
    stored = StoredCheckpoint.objects.get(session_id=row.id, length=1)
    again = checkpoints.unpack(stored.state)
    assert again is not None and again.state == state and again.actors == cp.actors and stored.size == len(blob)
