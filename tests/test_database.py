"""The application's database beside Kafka: a real SQLite, sandboxed to the scenario's own tables, with a time
limit; its transactions and the application's crash; kept across checkpoints (frozen and thawed mid-transaction)."""

from __future__ import annotations

import pickle

import cloudpickle
import pytest

from playground.scenario.database import Database, DatabaseSpec, Table

SPEC = DatabaseSpec(
    (Table("orders", "id integer primary key, status text", ((1, "new"), (2, "new"))),),
    "SELECT o.id, EXISTS (SELECT 1 FROM kafka_consumed c WHERE c.value = 'order-' || o.id) AS delivered FROM orders o WHERE o.status = 'paid'",
)


def _db() -> Database:
    return Database(SPEC)


@pytest.mark.parametrize(
    "sql, outcome",
    [
        ("ATTACH DATABASE '/tmp/elsewhere.db' AS x", "SQL_DENIED"),
        ("PRAGMA writable_schema = 1", "SQL_DENIED"),
        ("DROP TABLE orders", "SQL_DENIED"),
        ("CREATE TABLE playground_session (id text)", "SQL_DENIED"),
        ("ALTER TABLE orders ADD COLUMN x int", "SQL_DENIED"),
        ("INSERT INTO kafka_records VALUES ('t', 0, 0, null, 'forged', 'committed')", "SQL_DENIED"),
        ("BEGIN", "SQL_DENIED"),
        ("SELECT load_extension('/tmp/x.so')", "SQL_DENIED"),
        ("SELECT * FROM playground_session", "SQL_ERROR"),
        ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r", "SQL_TIMEOUT"),
        ("INSERT INTO orders VALUES (1, 'again')", "SQL_CONSTRAINT"),
        ("UPDATE orders SET status = 'paid' WHERE id = 1", "ok"),
    ],
)
def test_it_keeps_hostile_statements_to_the_scenarios_own_tables(sql, outcome):
    db = _db()
    assert db.apply("sql", {"sql": sql}) == outcome
    assert db.tables()["orders"]["rows"][1] == [2, "new"]


def test_it_rolls_back_the_open_transaction_when_the_application_dies():
    db = _db()
    assert db.apply("db_begin", {}) == "ok"
    db.apply("sql", {"sql": "UPDATE orders SET status = 'paid' WHERE id = 1"})
    assert db.apply("db_begin", {}) == "_STATE"
    db.apply("crash", {})
    assert db.tables()["orders"]["rows"][0] == [1, "new"] and db.apply("db_commit", {}) == "_STATE"


def test_it_reconciles_with_what_consumers_received():
    db = _db()
    db.apply("sql", {"sql": "UPDATE orders SET status = 'paid'"})
    kafka = {
        "consumers": {"inventory": {"received": {"events-0": [{"offset": 0, "value": "order-1"}]}}},
        "partitions": {},
    }
    assert db.reconcile(kafka)["rows"] == [[1, 1], [2, 0]]


def test_it_survives_a_checkpoint_taken_inside_a_transaction():
    db = _db()
    db.apply("db_begin", {})
    db.apply("sql", {"sql": "UPDATE orders SET status = 'paid' WHERE id = 2"})
    copy = pickle.loads(cloudpickle.dumps(db))
    assert db.in_transaction and copy.in_transaction
    assert copy.apply("db_rollback", {}) == "ok" and copy.tables()["orders"]["rows"][1] == [2, "new"]
    assert db.apply("db_commit", {}) == "ok" and db.tables()["orders"]["rows"][1] == [2, "paid"]


def test_it_writes_a_database_back_out_as_the_loader_reads_it():
    from playground.scenario import parse_scenario
    from playground.scenario.writer import _database_lines

    spec = DatabaseSpec(
        (
            Table(
                "t",
                "id integer primary key, code text, note text",
                ((1, "007", None), (2, "null", "a: b"), (3, "-5", "yes")),
            ),
        ),
        "SELECT id, 1 AS ok FROM t",
        {"en": "Rows", "zh": "行"},
        ("ok",),
    )
    text = "\n".join(
        [
            "format: 1",
            "id: x",
            "title: x",
            "cluster: {topics: {t: {partitions: 1}}}",
            "actors: {A: {producer: {}}}",
            *_database_lines(spec),
            "steps: [note: x]",
        ]
    )
    assert parse_scenario(text, "x.yaml").database == spec
