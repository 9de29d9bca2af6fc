"""The SQL sandbox's bounds (playground/scenario/database.py): hostile statements with their time and memory measured,
every path under the same time limit (the tables' CHECK constraints and seed rows, the reconciliation, the loader's
check), rows and bytes, and the functions that would make a replay differ."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import time
from pathlib import Path

import cloudpickle
import pytest

from playground.scenario import check_text, sqlitec
from playground.scenario.database import Database, DatabaseSpec, SqlError, SqlLimits, Table
from tests.sqlhostile import HOSTILE, SPEC

ROOT = Path(__file__).resolve().parents[1]
# The statement time limit is 200 ms; a loaded 2-core machine may take longer to notice. Unbounded, the first of
# HOSTILE ran 87.7 s and took 1.17 GiB (6.3 s with SQLITE_LIMIT_LENGTH alone: printf's own loop).
STATEMENT_CAP_MS = 3000
CHECK_CAP_S = 5.0  # the loader's check of a whole database: block (the CHECK-printf one took 16.9 s)
# The most memory one statement may hold at once: SQLite's heap and Python's together, and the growth of the
# process's resident peak. Measured at most 4.5 MiB (json_array() of 32 escaped 16 KB strings, the 4 MiB of a full
# database); SQLite's own json_group_array() took 45-261 MiB in its 200 ms, a 64-column SELECT 191 MiB of Python.
STATEMENT_PEAK_CAP_KIB = 6 * 1024
# ...except the values a statement's text names at once, each of a value's bytes: 11.2-11.5 MiB measured
NAMED_AT_ONCE_PEAK_CAP_KIB = 16 * 1024
NAMED_AT_ONCE = {
    "as many big constants as the text names",
    "as many slices of a big constant",
    "an IN list of big constants",
}
SUITE_PEAK_CAP_KIB = 160 * 1024


@pytest.fixture(scope="module")
def measured():
    """Every hostile statement in a process of its own, so that the memory figures are the suite's alone."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.sqlhostile"], cwd=ROOT, capture_output=True, text=True, timeout=600, check=True
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    by_name = {line["name"]: line for line in lines[1:-1]}
    return by_name, lines[-1]["peak_kib"], lines[0]["sqlite_memory_used"]


@pytest.mark.parametrize("name", [h[0] for h in HOSTILE])
def test_it_bounds_a_hostile_statements_time_and_memory(measured, name):
    got = measured[0][name]
    cap_kib = NAMED_AT_ONCE_PEAK_CAP_KIB if name in NAMED_AT_ONCE else STATEMENT_PEAK_CAP_KIB
    assert got["outcome"] in got["expected"].split("|"), got
    assert got["ms"] < STATEMENT_CAP_MS, got
    assert got["sqlite_peak_kib"] + got["python_peak_kib"] < cap_kib, got
    assert got["resident_growth_kib"] < cap_kib, got
    assert got["rows"] == 2, got  # nothing of a refused write stays
    assert got["usable_after"] == "ok", got  # and the connection goes on


def test_it_keeps_the_whole_suites_peak_memory_small(measured):
    assert measured[1] < SUITE_PEAK_CAP_KIB


def test_it_measures_sqlites_heap(measured):
    assert measured[2] > 0  # SQLite keeps its memory statistics: the suite's figures are not zeros for want of them


def _text(tables: str, reconcile: str = "") -> str:
    return f"""format: 1
id: sql-bounds
title: SQL bounds
cluster:
  topics:
    orders: {{partitions: 1}}
actors:
  A: {{producer: {{transactional.id: t}}}}
database:
  tables:
{tables}
{reconcile}
steps:
  - app.sql: "UPDATE orders SET status = 'paid' WHERE id = 1"
"""


def _check(text: str) -> tuple[list[str], float]:
    started = time.perf_counter()
    scenario, errors = check_text(text)
    elapsed = time.perf_counter() - started
    assert scenario is None
    return [str(e) for e in errors], elapsed


def test_it_bounds_a_check_constraint_that_calls_printf_when_the_file_is_checked():
    text = _text(
        """    orders:
      columns: "id integer primary key, status text CHECK (length(printf('%.*c', 999999999, 'x')) > 0)"
      rows: [[1, new]]"""
    )
    errors, elapsed = _check(text)
    assert elapsed < CHECK_CAP_S and "database.tables.orders" in errors[0] and "SQL_LIMIT" not in errors[0]
    assert "over 16,384 bytes" in errors[0] and ":12:" in errors[0]  # the table's line


def test_it_bounds_the_seed_rows_and_their_check_constraints_together():
    rows = ", ".join(f"[{i}, new]" for i in range(2000))
    slow = "CHECK (instr(printf('%.*c', 15000, 'x'), printf('%.*c', 7000, 'x') || status) = 0)"  # ~1 ms a row
    errors, elapsed = _check(
        _text(f'    orders:\n      columns: "id integer primary key, status text {slow}"\n      rows: [{rows}]')
    )
    assert elapsed < CHECK_CAP_S and "ran longer than 200 ms" in errors[0]


def test_it_refuses_seed_rows_over_the_rows_a_database_holds():
    db = Database(SPEC, SqlLimits(rows=5))
    assert db.apply("sql", {"sql": "INSERT INTO orders VALUES (3, 'x'), (4, 'x'), (5, 'x')"}) == "ok"
    assert db.apply("sql", {"sql": "INSERT INTO orders VALUES (6, 'x')"}) == "SQL_LIMIT"
    with pytest.raises(SqlError, match="at most 5 rows"):
        Database(DatabaseSpec((Table("t", "n int", tuple((i,) for i in range(6))),)), SqlLimits(rows=5))


def test_it_bounds_the_reconciliation_query_when_the_file_is_checked():
    slow = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) AS n FROM r"
    errors, elapsed = _check(
        _text('    orders:\n      columns: "id integer primary key, status text"', f'  reconcile:\n    sql: "{slow}"')
    )
    assert elapsed < CHECK_CAP_S and "database.reconcile.sql" in errors[0] and "SQL_TIMEOUT" in errors[0]


def test_it_refuses_a_function_a_replay_cannot_repeat_in_a_columns_default_too():
    db = Database(
        DatabaseSpec((Table("t", "id integer primary key, at text DEFAULT (random()), day text DEFAULT CURRENT_DATE"),))
    )
    assert db.apply("sql", {"sql": "INSERT INTO t (id, day) VALUES (1, '2024-05-01')"}) == "SQL_DENIED"
    assert db.apply("sql", {"sql": "INSERT INTO t (id, at) VALUES (1, 'x')"}) == "SQL_DENIED"
    assert db.apply("sql", {"sql": "INSERT INTO t VALUES (1, 'x', '2024-05-01')"}) == "ok"


def test_it_undoes_only_the_statement_over_the_rows_inside_a_transaction():
    db = Database(SPEC, SqlLimits(rows=3))
    assert db.apply("db_begin", {}) == "ok"
    assert db.apply("sql", {"sql": "UPDATE orders SET status = 'paid' WHERE id = 1"}) == "ok"
    assert db.apply("sql", {"sql": "INSERT INTO orders VALUES (3, 'x'), (4, 'x')"}) == "SQL_LIMIT"
    assert db.in_transaction and db.apply("db_commit", {}) == "ok"
    assert db.tables()["orders"]["rows"] == [[1, "paid"], [2, "new"]]


def test_it_rolls_the_transaction_back_when_a_write_in_it_times_out_as_sqlite_does():
    db = Database(SPEC, SqlLimits(statement_ms=50))
    db.apply("db_begin", {})
    db.apply("sql", {"sql": "UPDATE orders SET status = 'paid' WHERE id = 1"})
    endless = "INSERT INTO orders SELECT i + 10, 'x' FROM (WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r)"
    assert db.apply("sql", {"sql": endless}) in ("SQL_TIMEOUT", "SQL_LIMIT")
    assert not db.in_transaction and db.apply("db_commit", {}) == "_STATE"
    assert db.tables()["orders"]["rows"] == [[1, "new"], [2, "new"]]


def test_it_keeps_its_limits_and_the_time_spent_across_a_checkpoint():
    db = Database(SPEC, SqlLimits(rows=4, value_bytes=2048))
    db.apply("db_begin", {})
    db.apply("sql", {"sql": "INSERT INTO orders VALUES (3, 'x')"})
    spent = db.spent_ms
    copy = pickle.loads(cloudpickle.dumps(db))
    assert copy.limits == db.limits and copy.spent_ms == spent and db.spent_ms == spent
    assert copy.apply("sql", {"sql": "INSERT INTO orders VALUES (4, 'x'), (5, 'x')"}) == "SQL_LIMIT"
    assert copy.apply("sql", {"sql": "SELECT printf('%.*c', 4096, 'x')"}) == "SQL_LIMIT"
    assert copy.apply("db_commit", {}) == "ok" and len(copy.tables()["orders"]["rows"]) == 3


def test_it_gives_the_same_dates_to_every_replay():
    db = Database(SPEC)
    sql = "UPDATE orders SET status = strftime('%Y-%m-%d %H:%M', '2024-05-01 12:00:00', '+90 minutes') WHERE id = 1"
    assert db.apply("sql", {"sql": sql}) == "ok"
    assert db.tables()["orders"]["rows"][0] == [1, "2024-05-01 13:30"]


def test_it_bounds_a_json_aggregate_as_it_grows_and_keeps_the_transaction():
    # the size bound, not the clock, must stop these: 3,000 integers take 21 ms, over 200 once on a busy CI machine
    db = Database(SPEC, SqlLimits(statement_ms=20_000))
    endless = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r"
    assert db.apply("db_begin", {}) == "ok"
    assert db.apply("sql", {"sql": "UPDATE orders SET status = 'paid' WHERE id = 1"}) == "ok"
    with pytest.raises(SqlError, match=r"^json_group_object\(\): string or blob too big: .* at most 16,384 bytes"):
        db._statement(f"SELECT length(json_group_object(i, printf('%.*c', 15000, 'x'))) FROM ({endless})")
    assert db.apply("sql", {"sql": f"SELECT json_group_array(i) FROM ({endless})"}) == "SQL_LIMIT"
    assert db.in_transaction and db.apply("db_commit", {}) == "ok"
    assert db.tables()["orders"]["rows"] == [[1, "paid"], [2, "new"]]
    copy = pickle.loads(cloudpickle.dumps(db))  # a checkpoint's database is bounded the same
    assert copy.apply("sql", {"sql": f"SELECT json_group_array(i) FROM ({endless})"}) == "SQL_LIMIT"
    assert copy.apply("sql", {"sql": "SELECT json_group_array(json_object('id', id)) FROM orders"}) == "ok"


def test_it_bounds_a_json_aggregate_in_the_reconciliation_when_the_file_is_checked():
    endless = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r"
    bomb = f"SELECT length(json_group_array(printf('%.*c', 2700, char(1)))) AS n FROM ({endless})"
    errors, elapsed = _check(
        _text('    orders:\n      columns: "id integer primary key, status text"', f'  reconcile:\n    sql: "{bomb}"')
    )
    assert elapsed < CHECK_CAP_S and "database.reconcile.sql" in errors[0]
    assert "SQL_LIMIT: json_group_array(): string or blob too big" in errors[0] and "16,384 bytes" in errors[0]


def test_it_refuses_the_json_aggregates_where_they_cannot_be_bounded(monkeypatch):
    monkeypatch.setattr(sqlitec, "bound_json_aggregates", lambda conn: False)
    db = Database(SPEC)
    with pytest.raises(SqlError, match=r"json_group_array\(\) is not available on this server"):
        db._statement("SELECT json_group_array(id) FROM orders")
    assert db.apply("sql", {"sql": "SELECT json_group_object(id, status) FROM orders"}) == "SQL_DENIED"
    assert db.apply("sql", {"sql": "SELECT json_array(id, status) FROM orders"}) == "ok"


def test_it_refuses_a_result_row_over_a_values_bytes():
    wide = "SELECT printf('%.*c', 9000, 'x') AS a, printf('%.*c', 9000, 'y') AS b FROM orders"
    db = Database(DatabaseSpec(SPEC.tables, wide))
    got = db.reconcile({})
    assert got is not None and got["rows"] == []
    assert got["error"] == (
        "SQL_LIMIT: a row of the result holds 18,000 bytes: a value, a row or a statement is at most 16,384 bytes"
    )
    assert db.apply("sql", {"sql": wide}) == "SQL_LIMIT"
    assert db.apply("sql", {"sql": wide.replace("9000", "8000")}) == "ok"
