"""The data migration from one JSON log per session to one row per command, on a database holding old-style rows
(and back). Runs on SQLite and, in `make test`, on PostgreSQL too."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from playground import session
from playground.engine.spec import Profile
from playground.models import Command, ScenarioText, Session, text_id
from playground.scenario import library

pytestmark = pytest.mark.django_db(transaction=True)

OLD = [("playground", "0001_initial")]


def _latest():
    executor = MigrationExecutor(connection)
    return [node for node in executor.loader.graph.leaf_nodes() if node[0] == "playground"]


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.fixture
def old_apps():
    apps = _migrate(OLD)
    yield apps
    _migrate(_latest())


def test_it_moves_old_json_logs_into_rows_and_they_replay(old_apps):
    OldSession = old_apps.get_model("playground", "Session")
    source = library.find("zombie-fencing").scenario.source
    log = [
        {"step": {"note": {"en": "start"}}, "n": 0, "outcome": "ok"},
        {"step": "A.init_transactions", "n": 1, "outcome": "ok"},
        {"step": "A.begin_transaction", "n": 2, "outcome": "ok"},
    ]
    OldSession.objects.create(
        id="old-scenario", scenario_id="zombie-fencing", scenario_source=source, commands=log, version=3
    )
    OldSession.objects.create(
        id="old-free",
        commands=[
            {"add": {"A": {"producer": {"transactional.id": "t"}}}, "outcome": "ok"},
            {"step": "A.init_transactions", "outcome": "_FATAL"},
        ],
        version=2,
    )
    OldSession.objects.create(id="old-empty", scenario_id="zombie-fencing", scenario_source=source, commands=[])

    _migrate(_latest())

    row = Session.objects.get(pk="old-scenario")
    assert row.length == 3 and row.source_id == text_id(source) and row.drive_key == ""
    assert row.commands == log
    assert [c.seq for c in Command.objects.filter(session=row).order_by("seq")] == [0, 1, 2]
    free = Session.objects.get(pk="old-free")
    assert free.source is None and free.commands[1] == {"step": "A.init_transactions", "outcome": "_FATAL"}
    assert Session.objects.get(pk="old-empty").source_id == row.source_id  # one text, stored once
    assert ScenarioText.objects.count() == 1
    # They load and replay on the simulator like any session; nobody holds a drive capability for them.
    session.CACHE.clear()
    old = Session.objects.get(pk="old-scenario")
    old.backend = "sim"
    old.save(update_fields=["backend"])
    live = session.load("old-scenario")
    assert live.cursor == 3 and live.backend.view()["producers"]["A"]["state"] == "IN_TRANSACTION"
    session.CACHE.clear()


def test_it_migrates_back_to_one_json_log(old_apps):
    OldSession = old_apps.get_model("playground", "Session")
    OldSession.objects.create(id="round-trip", commands=[{"step": "rc.poll", "outcome": "ok"}])
    _migrate(_latest())
    apps = _migrate([("playground", "0001_initial")])
    again = apps.get_model("playground", "Session").objects.get(pk="round-trip")
    assert again.commands == [{"step": "rc.poll", "outcome": "ok"}]


def test_it_gives_sessions_stored_before_profiles_kafka_3_9_with_librdkafka():
    apps = _migrate([("playground", "0006_runner_heartbeat")])
    apps.get_model("playground", "Session").objects.create(id="before-profiles", backend="sim")
    _migrate(_latest())
    row = Session.objects.get(pk="before-profiles")
    assert (row.kafka, row.client) == ("3.9", "librdkafka") and row.profile == Profile("3.9", "librdkafka")


def test_it_moves_external_clients_requests_out_of_the_logs_json_into_the_rows_payload_and_back():
    import base64

    packed = b"\x78\x9c packed inputs"
    apps = _migrate([("playground", "0011_compared")])
    OldSession = apps.get_model("playground", "Session")
    OldCommand = apps.get_model("playground", "Command")
    old = OldSession.objects.create(id="with-clients", backend="sim", length=2)
    body = {"t": 5, "end": 9, "n": 1, "in": base64.b64encode(packed).decode(), "sum": [["app", "Metadata", 1]]}
    OldCommand.objects.create(session=old, seq=0, entry={"ext": body}, outcome="ok")
    OldCommand.objects.create(session=old, seq=1, entry={"step": "rc.poll"}, outcome="ok")
    _migrate(_latest())
    first, second = Command.objects.filter(session_id="with-clients").order_by("seq")
    assert (
        bytes(first.payload) == packed and "in" not in first.entry["ext"] and first.entry["ext"]["size"] == len(packed)
    )
    assert second.payload is None and second.entry == {"step": "rc.poll"}
    apps = _migrate([("playground", "0011_compared")])
    back = apps.get_model("playground", "Command").objects.get(session_id="with-clients", seq=0)
    assert base64.b64decode(back.entry["ext"]["in"]) == packed
    _migrate(_latest())
