"""The SQL sandbox's bounded JSON aggregates (playground/scenario/sqlitec.py): SQLite's own results, window frames
and JSON subtypes included, a text that stops at the connection's length limit as it grows, and nothing changed
for the process's other connections."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from playground.scenario import sqlitec

ROWS = [
    (1, "a", 1),
    (1, "b", 2.5),
    (1, "c", None),
    (1, "d", 'he said "hi"\n\\'),
    (2, "e", "\x01\t\x7f\u00e9\u20ac\U0001f600"),
    (2, None, 3),
    (2, 7, 1e300),
    (2, 1.5, -0.0),
    (3, "x", "a\x00b"),
    (3, "y\x00z", "q"),
    (4, "big", 2**63 - 1),
    (4, "neg", -1),
    (4, "third", 1 / 3),
]
QUERIES = [
    "SELECT g, json_group_array(v) FROM t GROUP BY g",
    "SELECT g, json_group_object(k, v) FROM t GROUP BY g",
    "SELECT json_group_array(v), json_group_object(k, v) FROM t WHERE 0",
    "SELECT g, json_group_array(json_object('k', k, 'v', v)) FROM t GROUP BY g",
    "SELECT g, json_group_object(k, json_array(v, v)) FROM t GROUP BY g",
    "SELECT json_group_array(j) FROM (SELECT json_group_array(v) AS j FROM t GROUP BY g)",
    "SELECT json_group_array(v -> '$'), json_group_array(v ->> '$'), json_group_array(json(v)) "
    "FROM (SELECT json_quote(v) AS v FROM t)",
    "SELECT json_group_array(DISTINCT g), json_group_array(v) FILTER (WHERE g > 2) FROM t",
    "SELECT json_group_array(x'00ff') FROM t",
    "SELECT json_group_object(k, x'00') FROM t",
    "SELECT json_group_object(x'6162', 1), json_group_array(CAST(x'ff' AS TEXT))",
    "SELECT json_group_array(1, 2)",
    "SELECT rowid, json_group_array(v) OVER (ORDER BY rowid ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t",
    "SELECT rowid, json_group_array(v) OVER (ORDER BY rowid ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) FROM t",
    "SELECT rowid, json_group_array(v) OVER (ORDER BY rowid ROWS BETWEEN 3 PRECEDING AND 2 PRECEDING) FROM t",
    "SELECT rowid, json_group_array(v) OVER (ORDER BY rowid ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM t",
    "SELECT rowid, json_group_object(k, v) OVER (PARTITION BY g ORDER BY rowid ROWS BETWEEN 1 PRECEDING AND 1 "
    "FOLLOWING) FROM t",
    "SELECT rowid, json_group_array(v) OVER (ORDER BY g GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t",
    "SELECT rowid, json_group_array(v) OVER (ORDER BY g RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE "
    "CURRENT ROW) FROM t",
    "SELECT rowid, json_group_array(json_object('a', v)) OVER (ORDER BY rowid ROWS 1 PRECEDING) FROM t",
]
# The frames of a window near the limit: where SQLite's own aggregate returns its text, so do these
NEAR_THE_LIMIT = [
    "SELECT i % 5, json_group_array(s) FROM u GROUP BY 1",
    "SELECT i, json_group_array(s) OVER (ORDER BY i ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM u",
    "SELECT i, json_group_array(s) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM u",
    "SELECT i, json_group_array(s) OVER (ORDER BY i ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) FROM u",
    "SELECT i, json_group_array(s) OVER (ORDER BY i ROWS BETWEEN 1 FOLLOWING AND 2 FOLLOWING) FROM u",
    "SELECT i, json_group_object(i, s) OVER (ORDER BY i ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM u",
    "SELECT i, json_group_array(s) OVER (ORDER BY i / 3 GROUPS CURRENT ROW) FROM u",
    "SELECT i, json_group_array(s) OVER (ORDER BY i ROWS BETWEEN 4 PRECEDING AND CURRENT ROW EXCLUDE GROUP) FROM u",
]
ENDLESS = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r"


def _pair() -> tuple[sqlite3.Connection, sqlite3.Connection]:
    """SQLite's own aggregates, and the bounded ones, over the same tables."""
    plain, bounded = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    assert sqlitec.bound_json_aggregates(bounded)
    for conn in (plain, bounded):
        conn.execute("CREATE TABLE t (g, k, v)")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", ROWS)
        conn.execute("CREATE TABLE u (i, s)")
        conn.executemany("INSERT INTO u VALUES (?, ?)", [(i, "x" * (i % 7) * 3) for i in range(40)])
    return plain, bounded


def _outcome(conn: sqlite3.Connection, sql: str) -> tuple[str, object]:
    try:
        return "ok", conn.execute(sql).fetchall()
    except sqlite3.Error as exc:  # the bounded ones name themselves when the text is too big
        return type(exc).__name__, str(exc).removeprefix("json_group_array(): ").removeprefix("json_group_object(): ")


@pytest.mark.parametrize("sql", QUERIES)
def test_it_gives_what_sqlites_own_json_aggregates_give(sql):
    plain, bounded = _pair()
    assert _outcome(bounded, sql) == _outcome(plain, sql)
    assert not sqlitec._texts  # every group's text let go


def test_it_gives_what_sqlites_own_give_near_the_limit_in_every_window_frame():
    plain, bounded = _pair()
    outcomes = set()
    for limit in range(30, 400, 11):
        for conn in (plain, bounded):
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
        for sql in NEAR_THE_LIMIT:
            expected = _outcome(plain, sql)
            assert _outcome(bounded, sql) == expected, (limit, sql)
            outcomes.add(expected[0])
    assert outcomes == {"ok", "DataError"}  # both sides of the limit were tried
    assert not sqlitec._texts


@pytest.mark.parametrize(
    "sql",
    [
        f"SELECT length(json_group_array(i)) FROM ({ENDLESS})",
        f"SELECT length(json_group_object(i, printf('%.*c', 900, char(1)))) FROM ({ENDLESS})",
        f"SELECT length(json_group_array(json_object('i', i))) FROM ({ENDLESS})",
        f"SELECT count(*) FROM (SELECT json_group_array(i) OVER (ROWS UNBOUNDED PRECEDING) FROM ({ENDLESS}))",
    ],
)
def test_it_stops_the_text_as_it_passes_the_connections_length_limit(sql):
    _plain, bounded = _pair()
    bounded.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 4096)
    with pytest.raises(sqlite3.DataError, match=r"^json_group_(array|object)\(\): string or blob too big$"):
        bounded.execute(sql).fetchall()  # SQLite's own would run for ever, growing its text
    assert bounded.execute("SELECT json_group_array(v) FROM t WHERE g = 4").fetchone() == (
        "[9223372036854775807,-1,0.333333333333333]",
    )
    assert not sqlitec._texts


def test_it_lets_go_of_a_window_left_unfinished():
    _plain, bounded = _pair()
    cursor = bounded.execute("SELECT json_group_array(v) OVER (ORDER BY rowid ROWS 1 PRECEDING) FROM t")
    assert cursor.fetchone() == ("[1]",)
    assert sqlitec._texts
    cursor.close()
    assert not sqlitec._texts


def test_it_leaves_the_processs_other_connections_their_own_aggregates():
    _plain, bounded = _pair()
    other = sqlite3.connect(":memory:")
    for conn in (bounded, other):
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 4096)
    sql = f"SELECT json_group_array(i) FROM ({ENDLESS} LIMIT 100000)"
    with pytest.raises(sqlite3.DataError, match=r"^json_group_array\(\): string or blob too big$"):
        bounded.execute(sql).fetchone()
    with pytest.raises(sqlite3.DataError, match=r"^string or blob too big$"):  # SQLite's own, past its 588,896 bytes
        other.execute(sql).fetchone()
    other.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1_000_000)
    assert len(other.execute(sql).fetchone()[0]) == 588_896


def test_it_keeps_each_threads_groups_apart():
    def texts_of(thread: int) -> list[str]:
        conn = sqlite3.connect(":memory:")
        assert sqlitec.bound_json_aggregates(conn)
        sql = f"SELECT json_group_array('{thread}-' || i) FROM ({ENDLESS} LIMIT 300)"
        return [conn.execute(sql).fetchone()[0] for _ in range(20)]

    results: dict[int, list[str]] = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, texts_of(n))) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(results) == [0, 1, 2, 3]
    for n, texts in results.items():
        assert texts == ["[" + ",".join(f'"{n}-{i}"' for i in range(1, 301)) + "]"] * 20
    assert not sqlitec._texts


def test_it_reads_sqlites_own_heap_figures():
    conn = sqlite3.connect(":memory:")
    conn.execute("SELECT 1")
    assert sqlitec.memory_used() > 0  # SQLite's memory statistics are on (the suite's measures depend on them)
    sqlitec.memory_highwater(reset=True)
    conn.execute("SELECT length(printf('%.*c', 1000000, 'x'))").fetchone()
    assert sqlitec.memory_highwater() - sqlitec.memory_used() >= 1_000_000
