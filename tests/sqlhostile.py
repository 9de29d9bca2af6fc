"""Hostile SQL against the application database's sandbox (playground/scenario/database.py), each statement with
the time it took and how much it raised the process's peak memory. Run as a script it prints one JSON line per
statement (tests/test_sql_sandbox.py runs it in a process of its own, so that the peak is this suite's alone):

    .venv/bin/python -m tests.sqlhostile
"""

from __future__ import annotations

import json
import sys
import time

from playground.scenario.database import Database, DatabaseSpec, Table

SPEC = DatabaseSpec(
    (Table("orders", "id integer primary key, status text", ((1, "new"), (2, "new"))),),
    "SELECT o.id, EXISTS (SELECT 1 FROM kafka_consumed c WHERE c.value = 'order-' || o.id) AS delivered FROM orders o",
)
BIG_X = "printf('%.*c', 15000, 'x')"  # just under a value's 16 KiB
COUNT_TO = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {n}) SELECT i FROM r"

# (name, statement, outcome)
HOSTILE: list[tuple[str, str, str]] = [
    ("printf %.*c of a billion", "SELECT length(printf('%.*c', 999999999, 'x'))", "SQL_LIMIT"),
    ("printf width of a billion", "SELECT printf('%999999999d', 1)", "SQL_LIMIT"),
    ("format %.*c of a billion", "SELECT length(format('%.*c', 999999999, 'x'))", "SQL_LIMIT"),
    ("printf width of 40 digits", "SELECT printf('%9999999999999999999999999999999999999999d', 1)", "SQL_LIMIT"),
    ("printf * from text", "SELECT printf('%*d', '999999999999', 1)", "SQL_LIMIT"),
    (
        "string doubling CTE",
        "WITH RECURSIVE r(x, n) AS (SELECT 'x', 0 UNION ALL SELECT x || x, n + 1 FROM r WHERE n < 30) "
        "SELECT max(length(x)) FROM r",
        "SQL_LIMIT",
    ),
    (
        "endless CTE",
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
        "SQL_TIMEOUT",
    ),
    (
        "cross join of CTEs",
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3000) "
        "SELECT count(*) FROM r a, r b, r c",
        "SQL_TIMEOUT",
    ),
    ("replace explosion", f"SELECT length(replace({BIG_X}, 'x', {BIG_X}))", "SQL_LIMIT"),
    (
        "group_concat of big strings",
        f"SELECT length(group_concat(s)) FROM (SELECT {BIG_X} AS s FROM ({COUNT_TO.format(n=1000)}))",
        "SQL_LIMIT",
    ),
    ("instr worst case", f"SELECT instr({BIG_X}, printf('%.*c', 7000, 'x') || 'y')", "ok"),
    ("like worst case", f"SELECT {BIG_X} LIKE printf('%.*c', 990, '%') || 'y'", "ok"),
    ("glob worst case", f"SELECT {BIG_X} GLOB printf('%.*c', 990, '*') || 'y'", "ok"),
    ("deep JSON", "SELECT json(printf('%.*c', 15000, '['))", "SQL_ERROR"),
    ("deep expression", "SELECT " + "(" * 500 + "1" + ")" * 500, "SQL_LIMIT"),
    ("a statement of 40 KB", "SELECT '" + "x" * 40_000 + "'", "SQL_LIMIT"),
    ("a 20 KB value", "INSERT INTO orders VALUES (3, printf('%.*c', 20000, 'x'))", "SQL_LIMIT"),
    # whichever bound they meet first: the time on a loaded machine (the 20,000 rows took 213 ms at load 60), the
    # database's rows or bytes on a quiet one
    (
        "a million rows",
        f"INSERT INTO orders SELECT i + 100, 'x' FROM ({COUNT_TO.format(n=1_000_000)})",
        "SQL_TIMEOUT|SQL_LIMIT",
    ),
    (
        "20,000 rows",
        f"INSERT INTO orders SELECT i + 100, 'x' FROM ({COUNT_TO.format(n=20_000)})",
        "SQL_LIMIT|SQL_TIMEOUT",
    ),
    (
        "400 rows of 15 KB",
        f"INSERT INTO orders SELECT i + 100, {BIG_X} FROM ({COUNT_TO.format(n=400)})",
        "SQL_LIMIT|SQL_TIMEOUT",
    ),
    ("zeroblob of a gigabyte", "SELECT zeroblob(1000000000)", "SQL_DENIED"),
    ("fts3_tokenizer's address", "SELECT fts3_tokenizer('simple')", "SQL_DENIED"),
    ("load_extension", "SELECT load_extension('/tmp/x.so')", "SQL_DENIED"),
    ("random()", "SELECT random()", "SQL_DENIED"),
    ("randomblob()", "SELECT randomblob(16)", "SQL_DENIED"),
    ("datetime('now')", "SELECT datetime('now')", "SQL_DENIED"),
    ("date() alone", "SELECT date()", "SQL_DENIED"),
    ("strftime without a time", "SELECT strftime('%s')", "SQL_DENIED"),
    ("the local time zone", "SELECT datetime('2024-05-01 12:00:00', 'localtime')", "SQL_DENIED"),
    ("current_timestamp", "SELECT current_timestamp", "SQL_DENIED"),
    ("now in a write", "UPDATE orders SET status = datetime('now') WHERE id = 1", "SQL_DENIED"),
    ("changes()", "SELECT changes()", "SQL_DENIED"),
    ("last_insert_rowid()", "SELECT last_insert_rowid()", "SQL_DENIED"),
    ("sqlite_version()", "SELECT sqlite_version()", "SQL_DENIED"),
    ("a pragma's table", "SELECT * FROM pragma_function_list", "SQL_DENIED"),
    ("a given date", "SELECT datetime('2024-05-01 12:00:00', '+1 day')", "ok"),
]


def peak_kib() -> int:
    """This process's peak resident memory since it started (VmHWM: the peak of its own memory map). Not
    getrusage's ru_maxrss: Linux carries the parent's peak into it across fork and exec, so a child of a large
    pytest process would report the parent's size."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def measure() -> list[dict[str, object]]:
    out = []
    for name, sql, outcome in HOSTILE:
        db = Database(SPEC)
        peak_before = peak_kib()
        started = time.perf_counter()
        got = db.apply("sql", {"sql": sql})
        elapsed_ms = (time.perf_counter() - started) * 1000
        peak_after = peak_kib()
        out.append(
            {
                "name": name,
                "outcome": got,
                "expected": outcome,
                "ms": round(elapsed_ms, 1),
                "peak_growth_kib": peak_after - peak_before,
                "rows": len(db.tables()["orders"]["rows"]),
            }
        )
    return out


def main() -> None:
    for line in measure():
        print(json.dumps(line), flush=True)
    print(json.dumps({"peak_kib": peak_kib()}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
