"""The application's database beside Kafka: the tables a scenario declares, the SQL its steps run (`app.sql`,
`app.db_begin` / `app.db_commit` / `app.db_rollback`, `app.crash`), and the reconciliation query that compares it
with what Kafka holds and what consumers received.

It is a real SQL database: SQLite, in memory, one per session, rebuilt by replaying the session's log like
everything else (the statements are steps of the log; a checkpoint keeps the database's bytes). Statements are
sandboxed, and every resource they can spend is bounded (`SqlLimits`; the server's settings override the defaults,
playground/session/limits.py):
- an authorizer lets them read and write the scenario's own tables only (no ATTACH, no PRAGMA, no schema changes,
  nothing of the playground's own database, which is another connection altogether), and call only the SQL
  functions of ALLOWED_FUNCTIONS: none that makes a replay differ (random(), randomblob(), datetime('now'),
  current_timestamp, changes(), ...) or tells about the machine (sqlite_version(), fts3_tokenizer()'s address);
- `sqlite3.Connection.setlimit` bounds a string, a blob, a row and a statement's text (SQLITE_LIMIT_LENGTH and
  the others of LIMITS below), and `max_page_count` the bytes the tables take; a statement that would leave more
  than `rows` rows in them is undone;
- every statement of every path (the tables' creation with their CHECK constraints and seed rows, app steps, the
  reconciliation, the loader's check of a `database:` block) runs under the same time limit, a progress handler
  that stops it after `statement_ms`. The handler runs between the VM's opcodes, so a single call that could run
  long inside one opcode is bounded by its arguments instead: printf()'s widths and precisions (SQLite's own
  printf runs 999,999,999 iterations for `%.*c` even when its result is refused as too big), and every other
  function by SQLITE_LIMIT_LENGTH.

What one statement holds in memory at once follows from those bounds, each where SQLite (or this module) holds it:
- a value any function or operator makes (printf, replace, ||, substr, hex, quote, concat, the json_* functions,
  ...), a stored row and group_concat()'s text: SQLITE_LIMIT_LENGTH, which SQLite checks as it makes them;
- json_group_array()'s and json_group_object()'s text: SQLite's own grow it without that check until they return
  it, so a statement grew it until its time was up (+261 MiB in 200 ms); every sandbox connection has bounded ones
  instead, with SQLite's results, JSON subtypes and window frames included (sqlitec.py; about 7 us a row where
  SQLite's take 0.3), and refuses the two where they cannot be had;
- sorters, DISTINCT, GROUP BY, UNION, IN lists, subqueries made into tables, a window's partition, a recursive
  CTE's queue: temporary tables in SQLite's page cache (its default 2 MiB), spilt to temporary files past it;
- the values a statement names at once (its constants, a function's arguments): as many as a statement's text
  can name, each of a value's bytes (a 16 KiB text: 800 values, 12 MiB);
- the rows it returns: at most MAX_ROWS_SHOWN + 1 held, each within a value's bytes as a stored row is (a SELECT of
  64 columns of 16 KiB held 190 MiB of Python strings in its 201 rows).
tests/sqlhostile.py measures each class: at most 12 MiB of SQLite's heap and Python's for one statement.
Not a heap limit: sqlite3_hard_heap_limit64() and sqlite3_soft_heap_limit64() are the process's, shared with the
server's own database (which may be SQLite in the same process) and every other session's statements running on
other threads, so one statement near the limit would fail theirs; nor a progress handler that watches
sqlite3_memory_used(), which counts the whole process too, so a statement would be failed for what others hold at
the moment, and a replay's outcome would depend on what else ran. SQLite has no heap figure per connection.

For the reconciliation query, what Kafka holds is offered as two read-only tables, refreshed before it runs:
`kafka_records(topic, partition, offset, key, value, fate)` (fate: committed, aborted, open, plain) and
`kafka_consumed(consumer, topic, partition, offset, key, value)`.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from playground.engine.backend import Backend
from playground.engine.spec import ActorSpec, Step
from playground.scenario import sqlitec

OK = "ok"
MAX_ROWS_SHOWN = 200
KAFKA_TABLES = ("kafka_records", "kafka_consumed")
MAX_KAFKA_ROWS = 50_000  # records and consumed records the reconciliation reads (a bigger history is its error)


@dataclass(frozen=True)
class SqlLimits:
    statement_ms: int = 200  # one statement (building the tables and their seed rows counts as one)
    value_bytes: int = 16 * 1024  # a string, a blob, a row, a statement's text (SQLITE_LIMIT_LENGTH, _SQL_LENGTH)
    rows: int = 10_000  # rows in the scenario's tables together
    bytes: int = 4 * 1024 * 1024  # what the scenario's tables take (max_page_count x page_size)


DEFAULT_LIMITS = SqlLimits()
# What a Database built without explicit limits takes: the defaults here; a server's settings (playground/session/
# limits.py sets this when it is imported).
limits_in_force: Callable[[], SqlLimits] = lambda: DEFAULT_LIMITS  # noqa: E731

# The other SQLite limits, fixed: what a scenario's SQL needs, far below SQLite's defaults.
LIMITS = {
    sqlite3.SQLITE_LIMIT_COLUMN: 64,
    sqlite3.SQLITE_LIMIT_EXPR_DEPTH: 100,
    sqlite3.SQLITE_LIMIT_COMPOUND_SELECT: 50,
    sqlite3.SQLITE_LIMIT_VDBE_OP: 100_000,
    sqlite3.SQLITE_LIMIT_FUNCTION_ARG: 32,
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 1_000,
    sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER: 100,
    sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH: 1,
    sqlite3.SQLITE_LIMIT_WORKER_THREADS: 0,
}

# The SQL functions a scenario may call: SQLite's core, aggregate, window, date and JSON functions, minus those
# that make a replay differ or tell about the machine. printf/format and the date functions are SQLite's own behind
# a check of their arguments (_bounded_printf, _dated).
# fmt: off
ALLOWED_FUNCTIONS = frozenset({
    "abs", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "ifnull", "iif", "instr", "length",
    "like", "likelihood", "likely", "lower", "ltrim", "max", "min", "nullif", "octet_length", "printf", "quote",
    "replace", "round", "rtrim", "sign", "soundex", "substr", "substring", "trim", "typeof", "unhex", "unicode",
    "unlikely", "upper",
    "avg", "count", "group_concat", "string_agg", "sum", "total",
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value",
    "last_value", "nth_value",
    "date", "time", "datetime", "julianday", "strftime", "unixepoch",
    "json", "json_array", "json_array_length", "json_extract", "json_insert", "json_object", "json_patch",
    "json_remove", "json_replace", "json_set", "json_type", "json_valid", "json_quote", "json_group_array",
    "json_group_object", "->", "->>",
    "ceil", "ceiling", "floor", "trunc", "mod", "pow", "power", "sqrt", "exp", "ln", "log", "log2", "log10", "pi",
})
# fmt: on
# Every other function SQLite has: refused by the authorizer where a statement names it, and replaced by one that
# refuses where the authorizer does not look (a column's DEFAULT is compiled into the INSERT that needs it).
with sqlite3.connect(":memory:") as _probe:
    REFUSED_FUNCTIONS = (
        frozenset(
            {str(r[0]) for r in _probe.execute("SELECT name FROM pragma_function_list WHERE builtin = 1")}
            | {"fts3_tokenizer", "load_extension", "random", "randomblob", "current_timestamp", "current_date"}
        )
        - ALLOWED_FUNCTIONS
    )
_probe.close()
JSON_AGGREGATES = ("json_group_array", "json_group_object")  # bounded as they grow (sqlitec.py), or refused
DATE_FUNCTIONS = ("date", "time", "datetime", "julianday", "strftime", "unixepoch")
# Date arguments whose answer depends on when or where the statement runs: the clock, and the machine's time zone.
_NOT_REPLAYABLE = frozenset({"now", "localtime", "utc"})
_PRINTF_SPEC = re.compile(r"%([-+ 0#,!]*)(\*|[0-9]+)?(?:\.(\*|[0-9]*))?(l{0,2})(.)", re.S)
_LEADING_INT = re.compile(r"\s*[-+]?([0-9]+)")

# sqlite3 authorizer action codes (sqlite3.h) a statement of the application may use on its own tables.
_DATA = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_INSERT,
    sqlite3.SQLITE_UPDATE,
    sqlite3.SQLITE_DELETE,
    sqlite3.SQLITE_RECURSIVE,
}
_WRITES = {sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE}
# Opening and closing transactions: only through app.db_begin / app.db_commit / app.db_rollback (the outcome of the
# step), and savepoints are the database's own business.
_TRANSACTION = {sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT}
_SCHEMA = "sqlite_master"


class _Refused(Exception):
    """A function's arguments were refused (raised inside SQLite; the statement then fails with `outcome`)."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome


_helpers = threading.local()


def _sqlite_itself(cap: int) -> sqlite3.Connection:
    """A plain connection (one per thread) whose printf and date functions are SQLite's own, for the checked
    versions to hand their arguments to once they pass."""
    conn: sqlite3.Connection | None = getattr(_helpers, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        _helpers.conn = conn
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, cap)
    return conn


def _int_arg(value: Any) -> int | None:
    """What SQLite reads as a whole number from a printf argument (None: more digits than any limit allows)."""
    if value is None:
        return 0
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        m = _LEADING_INT.match(value)
        if not m:
            return 0
        return int(m.group(1)) if len(m.group(1)) <= 12 else None
    try:
        return abs(int(value))
    except (OverflowError, ValueError):
        return None


def _bounded_printf(cap: int) -> Callable[..., Any]:
    def printf(*args: Any) -> Any:
        if not args:
            return None
        fmt, rest = args[0], args[1:]
        if isinstance(fmt, str):
            i = 0
            for m in _PRINTF_SPEC.finditer(fmt):
                if m.group(5) == "%":
                    continue
                for part in (m.group(2), m.group(3)):
                    if part == "*":
                        n = _int_arg(rest[i]) if i < len(rest) else 0
                        i += 1
                    elif part:
                        n = int(part) if len(part) <= 12 else None
                    else:
                        continue
                    if n is None or n > cap:
                        raise _Refused(
                            "SQL_LIMIT", f"printf: a width or precision of {m.group(0)!r} is over {cap:,} bytes"
                        )
                i += 1
        marks = ", ".join("?" * len(args))
        return _sqlite_itself(cap).execute(f"SELECT printf({marks})", args).fetchone()[0]

    return printf


def _refused(name: str) -> Callable[..., Any]:
    def refused(*args: Any) -> Any:
        raise _Refused("SQL_DENIED", f"{name}() is not one of the functions a scenario's SQL may call")

    return refused


def _unbounded(name: str) -> Callable[..., Any]:
    def unbounded(*args: Any) -> Any:
        raise _Refused(
            "SQL_DENIED",
            f"{name}() is not available on this server: its text could not be bounded (playground/scenario/sqlitec.py)",
        )

    return unbounded


def _dated(name: str, cap: int) -> Callable[..., Any]:
    least = 2 if name == "strftime" else 1  # strftime(format) alone, or date() with nothing, means "now"

    def dated(*args: Any) -> Any:
        if len(args) < least or any(isinstance(a, str) and a.strip().lower() in _NOT_REPLAYABLE for a in args):
            raise _Refused(
                "SQL_DENIED",
                f"{name}() of 'now', 'localtime' or 'utc' (or of no time at all) would differ when the session is "
                "replayed: give the time, e.g. datetime('2024-05-01 12:00:00', '+1 day')",
            )
        marks = ", ".join("?" * len(args))
        return _sqlite_itself(cap).execute(f"SELECT {name}({marks})", args).fetchone()[0]

    return dated


def _bytes_of(value: Any) -> int:
    """A value's bytes as SQLite counts them (text in UTF-8; a number as the 8 bytes it is stored in)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    return 0 if value is None else 8


class SqlError(Exception):
    """What the application would get from its database driver: the outcome's name and the database's message
    (and, for an error building the tables, which table)."""

    def __init__(self, outcome: str, message: str, table: str | None = None) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.table = table


@dataclass(frozen=True)
class Table:
    name: str
    columns: str  # the column definitions as SQL: "id integer primary key, status text"
    rows: tuple[tuple[Any, ...], ...] = ()


@dataclass(frozen=True)
class DatabaseSpec:
    tables: tuple[Table, ...]
    reconcile: str | None = None  # the reconciliation query (SQL)
    reconcile_title: Mapping[str, str] = field(default_factory=dict)
    # The result's columns that are checks (1 holds, 0 is a gap); none named: every column whose values are all 0/1.
    checks: tuple[str, ...] = ()


class Reconciliation(TypedDict):
    """The reconciliation query's result as the database panel and the anomaly checker read it."""

    columns: list[str]
    rows: list[list[Any]]
    error: str | None  # "SQL_ERROR: ..." when the query failed (no rows then)
    checks: NotRequired[list[int]]  # the columns that are checks (1 holds, 0 is a gap); absent on an error


class Database:
    """One session's application database."""

    def __init__(self, spec: DatabaseSpec, limits: SqlLimits | None = None) -> None:
        self.spec = spec
        self.limits = limits or limits_in_force()
        self.names = tuple(t.name for t in spec.tables)
        self.in_transaction = False
        self.pending: list[str] = []  # the statements of the open transaction (a checkpoint redoes them)
        self.spent_ms = 0.0  # the time app.sql statements took in all (session/commands.py bounds it)
        self._reconciling()
        self._open(None)

    def _reconciling(self) -> None:
        # The reconciliation query runs whenever the session is shown, not when its log is replayed: its time is
        # kept apart from spent_ms (and from checkpoints), for whoever shows it to count (session/sqltime.py).
        self.reconcile_ms = 0.0
        # While set, the query is not run and its result is this error (the budget it would spend is spent).
        self.reconcile_refused: str | None = None

    # ---- the connection, and its sandbox
    def _open(self, image: bytes | None) -> None:
        self._setup = True  # building the tables: CREATE TABLE and the seed rows' INSERTs pass the authorizer
        self._refused: _Refused | None = None
        self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.limits.value_bytes)
        self.conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, self.limits.value_bytes)
        for kind, value in LIMITS.items():
            self.conn.setlimit(kind, value)
        if not sqlitec.bound_json_aggregates(self.conn):
            for name in JSON_AGGREGATES:
                self.conn.create_function(name, -1, self._checked(_unbounded(name)), deterministic=True)
        self.conn.create_function(
            "printf", -1, self._checked(_bounded_printf(self.limits.value_bytes)), deterministic=True
        )
        self.conn.create_function(
            "format", -1, self._checked(_bounded_printf(self.limits.value_bytes)), deterministic=True
        )
        for name in DATE_FUNCTIONS:
            self.conn.create_function(
                name, -1, self._checked(_dated(name, self.limits.value_bytes)), deterministic=True
            )
        for name in REFUSED_FUNCTIONS:
            self.conn.create_function(name, -1, self._checked(_refused(name)), deterministic=True)
        if image is not None:
            self.conn.deserialize(image)
            self.in_transaction = False
        # Before the authorizer, which refuses every PRAGMA (and after deserialize, which resets it).
        page_size = int(self.conn.execute("PRAGMA page_size").fetchone()[0])
        self.conn.execute(f"PRAGMA max_page_count = {max(8, self.limits.bytes // page_size)}")
        self._kafka_tables()
        self.conn.set_authorizer(self._authorize)
        try:
            if image is None:
                self._build()
        finally:
            self._setup = False

    def _build(self) -> None:
        """The declared tables and their seed rows: one statement's time, and within the rows and bytes."""

        building = ""

        def build() -> None:
            nonlocal building
            for t in self.spec.tables:
                building = t.name
                self.conn.execute(f'CREATE TABLE "{t.name}" ({t.columns})')
                if t.rows:
                    marks = ", ".join("?" * len(t.rows[0]))
                    self.conn.executemany(f'INSERT INTO "{t.name}" VALUES ({marks})', t.rows)

        try:
            self._timed(build)
            self._check_rows()
        except SqlError as exc:
            exc.table = building
            raise

    def _kafka_tables(self) -> None:
        self.conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS kafka_records (topic TEXT, partition INTEGER, offset INTEGER, key TEXT, value TEXT, fate TEXT)"
        )
        self.conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS kafka_consumed (consumer TEXT, topic TEXT, partition INTEGER, offset INTEGER, key TEXT, value TEXT)"
        )

    def _authorize(self, action: int, arg1: Any, arg2: Any, db_name: Any, trigger: Any) -> int:
        if action == sqlite3.SQLITE_FUNCTION:
            # Also while building: a CHECK constraint's or a default's functions are authorized when its table is.
            return sqlite3.SQLITE_OK if str(arg2).lower() in ALLOWED_FUNCTIONS else sqlite3.SQLITE_DENY
        if self._setup and (
            (action == sqlite3.SQLITE_CREATE_TABLE and arg1 in self.names)
            or (action == sqlite3.SQLITE_CREATE_INDEX and arg2 in self.names)  # a PRIMARY KEY's or UNIQUE's own
            or (action in _WRITES and arg1 == _SCHEMA)
        ):
            return sqlite3.SQLITE_OK
        if action in _DATA:
            if action in _WRITES and arg1 not in self.names:
                return sqlite3.SQLITE_DENY  # the Kafka tables are read-only, and nothing else exists
            # Reads of any name: this connection holds nothing but the scenario's tables, the Kafka tables and the
            # schema (no ATTACH), and a WITH clause's names are read like tables.
            return sqlite3.SQLITE_OK
        if action in _TRANSACTION and self._admin:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    _admin = False

    def _checked(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A checked function: its refusal is kept for _error, SQLite only says "user-defined function raised"."""

        def call(*args: Any) -> Any:
            try:
                return fn(*args)
            except _Refused as exc:
                self._refused = exc
                raise

        return call

    def _timed(self, work: Callable[[], Any]) -> Any:
        """`work` (statements on this connection) stopped once it has run statement_ms, every error as SqlError."""
        deadline = time.monotonic() + self.limits.statement_ms / 1000.0

        def too_long() -> int:
            return 1 if time.monotonic() > deadline else 0

        self._refused = None
        self.conn.set_progress_handler(too_long, 1000)
        try:
            return work()
        except (sqlite3.Error, ValueError, OverflowError) as exc:
            raise self._error(exc) from None
        finally:
            self.conn.set_progress_handler(None, 0)
            if self.in_transaction and not self.conn.in_transaction:
                # SQLite rolls a whole transaction back when a write in it is interrupted or finds the database
                # full: so does the application's driver tell it.
                self.in_transaction, self.pending = False, []

    def _error(self, exc: Exception) -> SqlError:
        text = str(exc)
        if self._refused is not None:
            return SqlError(self._refused.outcome, str(self._refused))
        if isinstance(exc, sqlite3.IntegrityError):
            return SqlError("SQL_CONSTRAINT", text)
        if "interrupted" in text:
            return SqlError("SQL_TIMEOUT", f"the statement ran longer than {self.limits.statement_ms} ms")
        if any(words in text for words in ("too big", "too large", "too long", "too many", "stack overflow")):
            return SqlError(
                "SQL_LIMIT", f"{text}: a value, a row or a statement is at most {self.limits.value_bytes:,} bytes"
            )
        if "full" in text:
            return SqlError("SQL_LIMIT", f"the database holds at most {self.limits.bytes:,} bytes")
        if isinstance(exc, OverflowError):
            return SqlError("SQL_LIMIT", f"{text}: SQLite's integers are 64-bit")
        if "not authorized" in text or "prohibited" in text:
            return SqlError("SQL_DENIED", f"{text}: a scenario's SQL reads and writes its own tables only")
        return SqlError("SQL_ERROR", text)

    def _check_row(self, row: tuple[Any, ...]) -> None:
        size = sum(_bytes_of(v) for v in row)
        if size > self.limits.value_bytes:
            raise SqlError(
                "SQL_LIMIT",
                f"a row of the result holds {size:,} bytes: a value, a row or a statement is at most "
                f"{self.limits.value_bytes:,} bytes",
            )

    def _rows(self) -> int:
        return sum(int(self.conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]) for name in self.names)

    def _check_rows(self) -> None:
        if self._rows() > self.limits.rows:
            raise SqlError("SQL_LIMIT", f"the tables hold at most {self.limits.rows:,} rows together")

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        """The statement's columns and its first rows (MAX_ROWS_SHOWN and one), each within a value's bytes as a
        stored row is: the rows held at once stay small even when every column of a row is a value of the most
        bytes (64 such columns are 1 MiB a row)."""

        def run() -> tuple[list[str], list[tuple[Any, ...]]]:
            cursor = self.conn.execute(sql, params)
            try:
                columns = [d[0] for d in cursor.description or ()]
                rows = []
                for row in itertools.islice(cursor, MAX_ROWS_SHOWN + 1):
                    self._check_row(row)
                    rows.append(row)
                return columns, rows
            finally:
                cursor.close()  # the statement lets go of its values (and a window its groups) now

        result: tuple[list[str], list[tuple[Any, ...]]] = self._timed(run)
        return result

    def _statement(self, sql: str) -> None:
        """An app.sql statement, undone when it leaves the tables over their rows (a savepoint around it: inside a
        db_begin it undoes only the statement; outside, it is the statement's own transaction)."""
        started = time.monotonic()
        before = self.conn.total_changes
        self._control("SAVEPOINT app_statement")
        try:
            self._run(sql)
            if self.conn.total_changes != before:
                self._check_rows()
        except SqlError:
            if self.conn.in_transaction:  # not rolled back whole by SQLite already
                self._control("ROLLBACK TO app_statement")
                self._control("RELEASE app_statement")
            raise
        finally:
            self.spent_ms += (time.monotonic() - started) * 1000.0
        self._control("RELEASE app_statement")

    def _control(self, sql: str) -> None:
        self._admin = True
        try:
            self.conn.execute(sql)
        finally:
            self._admin = False

    # ---- the steps
    def apply(self, action: str, args: Mapping[str, Any]) -> str:
        """One `app.*` step: "ok", or the error the application's driver would raise (SQL_ERROR, SQL_DENIED,
        SQL_TIMEOUT, SQL_CONSTRAINT, SQL_LIMIT, or _STATE for a transaction step out of order)."""
        try:
            if action == "sql":
                self._statement(str(args["sql"]))
                if self.in_transaction:
                    self.pending.append(str(args["sql"]))
            elif action == "db_begin":
                if self.in_transaction:
                    return "_STATE"
                self._control("BEGIN")
                self.in_transaction, self.pending = True, []
            elif action in ("db_commit", "db_rollback"):
                if not self.in_transaction:
                    return "_STATE"
                self._control("COMMIT" if action == "db_commit" else "ROLLBACK")
                self.in_transaction = False
            elif action == "crash":
                # The application dies: its connection goes, and the database rolls its open transaction back.
                if self.in_transaction:
                    self._control("ROLLBACK")
                    self.in_transaction = False
            else:
                raise ValueError(f"app has no action {action!r}")
        except SqlError as exc:
            return exc.outcome
        return OK

    # ---- what the panel shows
    def tables(self) -> dict[str, dict[str, Any]]:
        out = {}
        for name in self.names:
            cursor = self.conn.execute(f'SELECT * FROM "{name}"')
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchmany(MAX_ROWS_SHOWN)
            out[name] = {"columns": columns, "rows": [list(r) for r in rows]}
        return out

    def reconcile(self, kafka: Mapping[str, Any]) -> Reconciliation | None:
        """The scenario's reconciliation query over the tables and what Kafka holds now (a view's partitions and
        consumers): its columns and rows. A column whose values are 0/1 is a check: 0 is a gap."""
        if not self.spec.reconcile:
            return None
        if self.reconcile_refused is not None:
            return {"columns": [], "rows": [], "error": self.reconcile_refused}
        started = time.monotonic()
        try:
            self._load_kafka(kafka)
            columns, rows = self._run(self.spec.reconcile)
        except SqlError as exc:
            return {"columns": [], "rows": [], "error": f"{exc.outcome}: {exc}"}
        finally:
            self.reconcile_ms += (time.monotonic() - started) * 1000.0
        named = [i for i, c in enumerate(columns) if c in self.spec.checks]
        checks = (
            named
            if self.spec.checks
            else [i for i in range(len(columns)) if rows and all(r[i] in (0, 1) for r in rows)]
        )
        return {"columns": columns, "rows": [list(r) for r in rows[:MAX_ROWS_SHOWN]], "error": None, "checks": checks}

    def _load_kafka(self, kafka: Mapping[str, Any]) -> None:
        records = [
            (
                tp.rpartition("-")[0],
                int(tp.rpartition("-")[2]),
                e["offset"],
                e.get("key"),
                e.get("value"),
                e.get("fate") or ("plain" if not e.get("transactional") else "committed"),
            )
            for tp, part in kafka.get("partitions", {}).items()
            for e in part.get("log", [])
            if not e.get("control")
        ]
        consumed = [
            (name, tp.rpartition("-")[0], int(tp.rpartition("-")[2]), r.get("offset"), r.get("key"), r.get("value"))
            for name, c in kafka.get("consumers", {}).items()
            for tp, rs in (c.get("received") or {}).items()
            for r in rs
        ]
        if len(records) + len(consumed) > MAX_KAFKA_ROWS:
            raise SqlError(
                "SQL_LIMIT", f"the reconciliation reads at most {MAX_KAFKA_ROWS:,} records and consumed records"
            )
        self._admin = True  # only the temp tables are written here
        try:
            self.conn.set_authorizer(None)
            self.conn.execute("DELETE FROM kafka_records")
            self.conn.execute("DELETE FROM kafka_consumed")
            self.conn.executemany("INSERT INTO kafka_records VALUES (?, ?, ?, ?, ?, ?)", records)
            self.conn.executemany("INSERT INTO kafka_consumed VALUES (?, ?, ?, ?, ?, ?)", consumed)
        finally:
            self._admin = False
            self.conn.set_authorizer(self._authorize)

    # ---- checkpoints: the committed bytes and the open transaction's statements, not the connection
    def _image(self) -> bytes:
        self.conn.set_authorizer(None)  # serializing reads the schema with statements of its own
        try:
            return self.conn.serialize()
        finally:
            self.conn.set_authorizer(self._authorize)

    def __getstate__(self) -> dict[str, Any]:
        spent_ms = self.spent_ms
        state = {"spec": self.spec, "limits": self.limits, "spent_ms": spent_ms}
        if not self.in_transaction:
            return {**state, "image": self._image(), "pending": None}
        # An image taken inside a transaction would hold its uncommitted rows as if committed: take the committed
        # one, then put the transaction back as it was (its statements are deterministic).
        self._control("ROLLBACK")
        self.in_transaction = False
        image = self._image()
        self._redo(self.pending)
        self.spent_ms = spent_ms  # the redo is the checkpoint's cost, not the session's statements'
        return {**state, "image": image, "pending": list(self.pending)}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.spec = state["spec"]
        self.limits = state.get("limits") or limits_in_force()
        self.names = tuple(t.name for t in self.spec.tables)
        self.in_transaction, self.pending, self.spent_ms = False, [], 0.0
        self._reconciling()
        self._open(state["image"])
        if state["pending"] is not None:
            self._redo(state["pending"])
        self.spent_ms = state.get("spent_ms", 0.0)

    def _redo(self, statements: list[str]) -> None:
        self._control("BEGIN")
        self.in_transaction, self.pending = True, []
        for sql in statements:
            try:
                self._statement(sql)
            except SqlError:
                pass  # it passed the first time; slower here (the time limit is wall-clock): the log's outcome stands
            if not self.in_transaction:
                break  # ...and its time-out rolled the transaction back here
            self.pending.append(sql)


class WithDatabase(Backend):
    """A backend (the simulator or a real cluster) with the application's database beside it: `app.*` steps go to
    the database, every other step to the backend; view() and observe() gain "database" (its tables and the
    reconciliation query's rows). It behaves as the Backend it wraps in everything else."""

    def __init__(self, inner: Backend, spec: DatabaseSpec) -> None:
        self.inner = inner
        self.db = Database(spec)

    def __getattr__(self, name: str) -> Any:  # name, prefix, profile, transaction_version, ...
        if name in ("inner", "db") or name.startswith("__"):
            raise AttributeError(name)  # not set yet (unpickling): never ask `inner` for itself
        return getattr(self.inner, name)

    # The interface's methods that have a default in Backend are found there before __getattr__: pass them on.
    def add_actor(self, actor: ActorSpec) -> None:
        self.inner.add_actor(actor)

    def fenced_actors(self) -> frozenset[str]:
        return self.inner.fenced_actors()

    def polled(self, actor: str) -> list[tuple[str, int]]:
        return self.inner.polled(actor)

    def stable_offsets(self) -> dict[str, int]:
        return self.inner.stable_offsets()

    def log_entries(self, since: Mapping[str, int]) -> dict[str, list[dict[str, Any]]]:
        return self.inner.log_entries(since)

    def coordinator_timers(self) -> dict[str, Any]:
        return self.inner.coordinator_timers()

    def close(self) -> None:
        self.inner.close()

    def discard(self) -> None:
        self.inner.discard()

    def apply(self, step: Step) -> str:
        if step.actor == "app":
            return self.db.apply(step.action, step.args)
        return self.inner.apply(step)

    def _database(self, kafka: Callable[[], Mapping[str, Any]]) -> dict[str, Any]:
        return {
            "tables": self.db.tables(),
            "reconcile": self._reconciled(kafka),
            "in_transaction": self.db.in_transaction,
            "reconcile_title": dict(self.db.spec.reconcile_title),
        }

    def _reconciled(self, kafka: Callable[[], Mapping[str, Any]]) -> Reconciliation | None:
        """The reconciliation query over what Kafka holds: `kafka()` is read only when the query runs, and reading
        it is part of the query's time (Database.reconcile_ms)."""
        db = self.db
        if not db.spec.reconcile or db.reconcile_refused is not None:
            return db.reconcile({})  # nothing to run, or not now: nothing read
        started = time.monotonic()
        held = kafka()
        db.reconcile_ms += (time.monotonic() - started) * 1000.0
        return db.reconcile(held)

    def view(self, log_limit: int = 200) -> dict[str, Any]:
        out = self.inner.view(log_limit)
        # The reconciliation reads every record and everything consumed, not the dashboard's window of them.
        out["database"] = self._database(
            lambda: out if log_limit >= RECONCILE_LOG_LIMIT else self.inner.view(RECONCILE_LOG_LIMIT)
        )
        return out

    def observe(self) -> dict[str, Any]:
        out = self.inner.observe()
        out["database"] = self._database(lambda: self.inner.view(RECONCILE_LOG_LIMIT))
        return out

    def __getstate__(self) -> dict[str, Any]:
        return {"inner": self.inner, "db": self.db}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.inner, self.db = state["inner"], state["db"]


RECONCILE_LOG_LIMIT = 10_000


def with_database(backend: Backend, spec: DatabaseSpec | None) -> Backend:
    return backend if spec is None else WithDatabase(backend, spec)
