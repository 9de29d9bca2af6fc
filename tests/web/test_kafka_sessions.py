"""Live dashboard sessions on a real cluster ("kafka" backend), through the views a browser uses.

The tests marked `kafka` need the real Apache Kafka that `make test` starts (KAFKA_BOOTSTRAP_SERVERS): without it
they FAIL with a message, they never skip. The others need no broker: the backend choice in the gallery, and the
session layer's handling of a backend that cannot be replayed (a stand-in registered as live-only).
"""

from __future__ import annotations

import os
import re
import time

import pytest
from django.test import Client

from playground import session
from playground.engine.backend import BackendError
from playground.models import Session

from .conftest import hold
from .fake_backend import FakeBackend

UNREACHABLE = "127.0.0.1:1"  # a closed loopback port: nothing listens there


def require_bootstrap() -> str:
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if not bootstrap:
        pytest.fail(
            "KAFKA_BOOTSTRAP_SERVERS is not set: the real-cluster web tests need a real Kafka. `make test` starts one; "
            "by hand: export KAFKA_BOOTSTRAP_SERVERS=$(bash tools/kafka/kafka.sh start --nodes 1 | tail -n 1)",
            pytrace=False,
        )
    return bootstrap


@pytest.fixture
def kafka(settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = require_bootstrap()
    settings.KAFKA_BROKER_CONTROL = ""  # never stop brokers of a shared cluster from these tests
    settings.DEBUG = False
    yield settings.KAFKA_BOOTSTRAP_SERVERS
    session.CACHE.clear()  # closes every backend: the sessions' topics are deleted


@pytest.fixture
def web(db, client):
    return client  # the client that creates a session holds its drive capability (conftest.hold)


def _new(web: Client, scenario: str = "", backend: str = "kafka"):
    return web.post("/new/", {"scenario": scenario, "backend": backend})


def _sid(response) -> str:
    assert response.status_code == 302, (response.status_code, response.content.decode()[:500])
    return re.search(r"/s/([^/]+)/", response["Location"]).group(1)


def _ok(response) -> None:
    assert response.status_code == 204, (response.status_code, response.content.decode()[:500])


def _page(web: Client, sid: str) -> str:
    r = web.get(f"/s/{sid}/")
    assert r.status_code == 200, r.status_code
    return r.content.decode()


def _session_topics(prefix: str, bootstrap: str) -> list[str]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    return sorted(t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix))


def _wait_gone(prefix: str, bootstrap: str, timeout_s: float = 15.0) -> list[str]:
    """The session's topics once deletion has reached the metadata (deleting is asynchronous on the brokers)."""
    deadline = time.monotonic() + timeout_s
    while (left := _session_topics(prefix, bootstrap)) and time.monotonic() < deadline:
        time.sleep(0.3)
    return left


def _play_one_transaction(web: Client, sid: str) -> None:
    _ok(web.post(f"/s/{sid}/add-producer/", {"mode": "new"}))  # A, transactional id txn-1
    for action in ("init_transactions", "begin_transaction"):
        _ok(web.post(f"/s/{sid}/action/", {"actor": "A", "action": action}))
    _ok(web.post(f"/s/{sid}/produce/", {"actor": "A", "topic": "orders", "partition": "0", "value": "A-1"}))
    _ok(web.post(f"/s/{sid}/produce/", {"actor": "A", "topic": "orders", "partition": "0", "value": "A-2"}))
    _ok(web.post(f"/s/{sid}/action/", {"actor": "A", "action": "commit_transaction"}))
    _ok(web.post(f"/s/{sid}/action/", {"actor": "rc", "action": "poll"}))


# --------------------------------------------------------------------------------------- with the real cluster
@pytest.mark.kafka
def test_it_plays_a_free_play_session_on_the_real_cluster_through_the_views(kafka, web):
    from playground.web import broadcast

    sid = _sid(_new(web))
    live = session.load(sid)
    assert live.backend_name == "kafka" and not live.detached
    prefix = live.backend.prefix
    assert _session_topics(prefix, kafka) == [prefix + "orders"]

    _play_one_transaction(web, sid)
    log = web.get(f"/s/{sid}/log.json").json()
    assert [e.get("outcome") for e in log["commands"]] == ["ok"] * 7, log["commands"]

    html = _page(web, sid)
    strip = html[html.index('data-tp="orders-0"') :]
    assert "A-1" in strip and "A-2" in strip
    assert 'data-control="COMMIT"' in html  # the COMMIT marker, read from the partition's log
    assert "real cluster" in html and prefix in html  # the header says where this runs
    assert "not observable here" in html and "WriteTxnMarkers" in html  # view()["unobservable"], said in the UI
    # the live fragments a viewer receives show the same
    frag = broadcast.snapshot(session.load(sid), "zh-hans")
    assert 'data-control="COMMIT"' in frag and "A-2" in frag and "WriteTxnMarkers" in frag
    # going back is not possible on a real cluster, and says why
    r = web.post(f"/s/{sid}/back/")
    assert r.status_code == 409 and "rewound" in r.content.decode()

    # ending the session closes its backend: its topics are deleted, the log stays and is shown
    _ok(web.post(f"/s/{sid}/end/"))
    assert _wait_gone(prefix, kafka) == []
    html = _page(web, sid)
    assert 'data-detached="ended"' in html and "re-run on fresh topics" in html
    assert "A.commit_transaction" in html  # the stored log, in "Your commands"


@pytest.mark.kafka
def test_it_resets_a_real_session_onto_fresh_topics_and_deletes_the_old_ones(kafka, web):
    sid = _sid(_new(web))
    _play_one_transaction(web, sid)
    old = session.load(sid).backend.prefix
    _ok(web.post(f"/s/{sid}/reset/"))
    live = session.load(sid)
    assert live.backend.prefix != old and not live.detached
    assert [next(iter(e["add"])) for e in live.commands] == ["A"]  # free play keeps the producer it added
    assert _wait_gone(old, kafka) == []
    html = _page(web, sid)
    assert "A-1" not in html[html.index('id="p-logs"') :]
    _ok(web.post(f"/s/{sid}/action/", {"actor": "A", "action": "init_transactions"}))


@pytest.mark.kafka
def test_it_plays_a_library_scenario_on_the_real_cluster_step_by_step(kafka, web):
    sid = _sid(_new(web, "zombie-fencing"))
    for _ in range(60):
        live = session.load(sid)
        if live.cursor >= len(live.steps):
            break
        _ok(web.post(f"/s/{sid}/step/"))
    live = session.load(sid)
    assert live.cursor == len(live.steps)
    wrong = [
        (e["step"], e["outcome"], live.steps[e["n"]].expect)
        for e in live.commands
        if live.steps[e["n"]].expect and e["outcome"] not in live.steps[e["n"]].expect
    ]
    assert not wrong, wrong
    html = _page(web, sid)
    assert "_FENCED" in html or "FENCED" in html


@pytest.mark.kafka
def test_it_says_clearly_when_the_cluster_is_unreachable_and_a_retry_works(kafka, web, settings):
    before = Session.objects.count()
    settings.KAFKA_BOOTSTRAP_SERVERS = UNREACHABLE
    t0 = time.monotonic()
    r = _new(web)
    took = time.monotonic() - t0
    body = r.content.decode()
    assert r.status_code == 503, (r.status_code, body[:300])
    assert took < 10, f"the error took {took:.1f} s"
    assert "cannot be reached" in body and "No session was started" in body  # the gallery again, with the sentence
    assert 'value="kafka" selected' in body  # the same choice, one click to retry
    assert Session.objects.count() == before

    settings.KAFKA_BOOTSTRAP_SERVERS = kafka  # the cluster is back: the same request works
    sid = _sid(_new(web))
    _play_one_transaction(web, sid)

    # The server restarts (this process forgets its live backends, which deletes their topics): the session shows
    # its stored log and says the cluster state is not re-run; commands are refused with that sentence.
    session.CACHE.clear()
    stored = Session.objects.get(pk=sid)
    html = _page(web, sid)
    assert 'data-detached="not_here"' in html and "not re-run against the cluster" in html
    assert "A.commit_transaction" in html
    r = web.post(f"/s/{sid}/action/", {"actor": "A", "action": "begin_transaction"})
    assert r.status_code == 409 and "re-run" in r.content.decode()

    # Re-running while the cluster is unreachable: a clear error within seconds, the session unchanged.
    settings.KAFKA_BOOTSTRAP_SERVERS = UNREACHABLE
    t0 = time.monotonic()
    r = web.post(f"/s/{sid}/rerun/")
    took = time.monotonic() - t0
    assert r.status_code == 503 and "nothing was changed" in r.content.decode(), r.content.decode()
    assert took < 10, f"the error took {took:.1f} s"
    after = Session.objects.get(pk=sid)
    assert (after.commands, after.version) == (stored.commands, stored.version)
    assert 'data-detached="not_here"' in _page(web, sid)

    # Retry once the cluster answers: the log re-run on fresh topics, live again.
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka
    _ok(web.post(f"/s/{sid}/rerun/"))
    live = session.load(sid)
    assert not live.detached and [e.get("outcome") for e in live.commands] == ["ok"] * 7
    html = _page(web, sid)
    assert 'data-control="COMMIT"' in html and "A-2" in html and "data-detached" not in html
    _ok(web.post(f"/s/{sid}/action/", {"actor": "A", "action": "begin_transaction"}))


# ------------------------------------------------------------------------------------------- no broker needed
def test_it_offers_the_backend_choice_only_when_a_cluster_is_configured(web, settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = ""
    settings.KAFKA4_BOOTSTRAP_SERVERS = ""  # a Kafka 4.x cluster alone would offer the choice too
    html = web.get("/").content.decode()
    assert 'name="backend"' not in html and 'value="kafka"' not in html
    r = _new(web, backend="kafka")
    assert r.status_code == 400 and "KAFKA_BOOTSTRAP_SERVERS" in r.content.decode()
    r = _new(web, "zombie-fencing", backend="kafka")
    assert r.status_code == 400 and "KAFKA_BOOTSTRAP_SERVERS" in r.content.decode()
    assert Session.objects.count() == 0
    # A configured cluster (never contacted to draw the gallery) shows the choice.
    settings.KAFKA_BOOTSTRAP_SERVERS = UNREACHABLE
    html = web.get("/").content.decode()
    assert 'name="backend"' in html and 'value="kafka"' in html
    assert UNREACHABLE not in html  # the address is the server's business


class FlakyLiveOnly(FakeBackend):
    """The fake, declared live-only (like a real cluster) and able to lose its cluster."""

    down = False
    built = 0

    def __init__(self, *args, **kwargs):
        if FlakyLiveOnly.down:
            raise BackendError("cannot reach the stand-in cluster")
        FlakyLiveOnly.built += 1
        super().__init__(*args, **kwargs)

    def apply(self, step):
        if FlakyLiveOnly.down:
            raise BackendError("the stand-in cluster does not answer")
        return super().apply(step)


@pytest.fixture
def flaky(db):
    session.BACKEND_FACTORIES["flaky"] = FlakyLiveOnly
    session.LIVE_ONLY_BACKENDS.add("flaky")
    FlakyLiveOnly.down, FlakyLiveOnly.built = False, 0
    yield FlakyLiveOnly
    session.LIVE_ONLY_BACKENDS.discard("flaky")
    session.BACKEND_FACTORIES.pop("flaky", None)
    FlakyLiveOnly.down = False


def test_it_never_replays_a_live_only_session_behind_the_users_back(flaky, web):
    sid = hold(web, session.create(None, backend="flaky")).id
    session.add_producer(sid, "new")
    _ok(web.post(f"/s/{sid}/action/", {"actor": "A", "action": "init_transactions"}))
    assert flaky.built == 1

    # the cluster stops answering: a 503 with a sentence, the session as it was, the same backend kept
    flaky.down = True
    version = Session.objects.get(pk=sid).version
    r = web.post(f"/s/{sid}/action/", {"actor": "A", "action": "begin_transaction"})
    assert r.status_code == 503 and "nothing was changed" in r.content.decode()
    assert Session.objects.get(pk=sid).version == version
    flaky.down = False
    _ok(web.post(f"/s/{sid}/action/", {"actor": "A", "action": "begin_transaction"}))
    assert flaky.built == 1

    # another process (here: a cleared cache) never rebuilds it by replaying: it shows the log, detached
    session.CACHE.clear()
    html = _page(web, sid)
    assert flaky.built == 1 and 'data-detached="not_here"' in html and "A.begin_transaction" in html
    for path, data in (
        ("action/", {"actor": "A", "action": "abort_transaction"}),
        ("step/", {}),
        ("add-producer/", {"mode": "plain"}),
        ("back/", {}),
    ):
        r = web.post(f"/s/{sid}/{path}", data)
        assert 400 <= r.status_code < 500, (path, r.status_code)
    assert Session.objects.get(pk=sid).version == version + 1

    # re-run on demand: a fresh backend, the whole log applied again
    _ok(web.post(f"/s/{sid}/rerun/"))
    assert flaky.built == 2 and not session.load(sid).detached
    r = web.post(f"/s/{sid}/rerun/")
    assert r.status_code == 409  # live here already

    # a change made by another process (the log moved on): this one lets go of its backend
    Session.objects.filter(pk=sid).update(version=Session.objects.get(pk=sid).version + 1)
    assert session.load(sid).detached == "moved"


def test_it_rerun_and_end_are_for_real_cluster_sessions_only(free_session, web):
    assert web.post(f"/s/{free_session.id}/rerun/").status_code == 409
    assert web.post(f"/s/{free_session.id}/end/").status_code == 409


@pytest.mark.kafka
def test_it_scrubs_and_forks_a_real_cluster_session_on_the_simulator_or_fresh_topics(kafka, web):
    sid = _sid(_new(web))
    _play_one_transaction(web, sid)
    # An earlier step of a real cluster's session is the simulator's replay of its log, and the page says so.
    html = web.get(f"/s/{sid}/?at=5").content.decode()
    assert "simulator's replay" in html.replace("’", "'")
    at = session.moment(sid, 5)
    assert at.backend_name == "sim" and [e["value"] for e in at.backend.view()["partitions"]["orders-0"]["log"]] == [
        "A-1",
        "A-2",
    ]
    # Forked onto the simulator: the simulator's own outcomes are stored, the original is untouched.
    r = web.post(f"/s/{sid}/fork/", {"at": "6", "backend": "sim"})
    fork = r["Location"].rstrip("/").rsplit("/", 1)[-1]
    forked = session.load(fork)
    assert forked.backend_name == "sim" and forked.origin == {"session": sid, "at": 6}
    assert [e["outcome"] for e in forked.commands] == ["ok"] * 6
    # Re-run up to there on fresh topics of the real cluster: a new prefix, live in this process.
    r = web.post(f"/s/{sid}/fork/", {"at": "6", "backend": "kafka"})
    rerun = r["Location"].rstrip("/").rsplit("/", 1)[-1]
    again = session.load(rerun)
    assert (
        again.backend_name == "kafka"
        and not again.detached
        and again.backend.prefix != session.load(sid).backend.prefix
    )
    assert [e["outcome"] for e in again.commands] == ["ok"] * 6
    for s in (sid, rerun):
        _ok(web.post(f"/s/{s}/end/"))


@pytest.mark.kafka
def test_it_checks_an_exercises_goal_and_questions_on_the_real_cluster(kafka, web):
    """The goal's checklist reads what the real cluster shows, as it does the simulator's."""
    from playground.scenario import exercise, library

    entry = library.find("ex-who-is-fenced")
    sid = hold(web, session.create(entry.scenario, source=entry.scenario.source, backend="kafka")).id
    try:
        for step in entry.scenario.steps:
            if step.predict:
                session.predict(sid, step.index, step.predict["answer"])
            session.step(sid)
        live = session.load(sid)
        assert live.predictions and all(i.ok for i in exercise.goal_items(live)), [
            i.as_dict() for i in exercise.goal_items(live)
        ]
    finally:
        _ok(web.post(f"/s/{sid}/end/"))
