"""The application's database beside Kafka: the tables a scenario declares, the SQL its steps run (`app.sql`,
`app.db_begin` / `app.db_commit` / `app.db_rollback`, `app.crash`), and the reconciliation query that compares it
with what Kafka holds and what consumers received.

It is a real SQL database: SQLite, in memory, one per session, rebuilt by replaying the session's log like
everything else (the statements are steps of the log; a checkpoint keeps the database's bytes). Statements are
sandboxed: an authorizer lets them read and write the scenario's own tables only (no ATTACH, no PRAGMA, no schema
changes, nothing of the playground's own database, which is another connection altogether), and a progress
handler stops any statement that runs longer than STATEMENT_LIMIT_MS.

For the reconciliation query, what Kafka holds is offered as two read-only tables, refreshed before it runs:
`kafka_records(topic, partition, offset, key, value, fate)` (fate: committed, aborted, open, plain) and
`kafka_consumed(consumer, topic, partition, offset, key, value)`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from playground.engine.backend import Backend
from playground.engine.spec import ActorSpec, Step

OK = "ok"
STATEMENT_LIMIT_MS = 200
MAX_ROWS_SHOWN = 200
KAFKA_TABLES = ("kafka_records", "kafka_consumed")

# sqlite3 authorizer action codes (sqlite3.h) a statement of the application may use on its own tables.
_DATA = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_INSERT,
    sqlite3.SQLITE_UPDATE,
    sqlite3.SQLITE_DELETE,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
}
# Opening and closing transactions: only through app.db_begin / app.db_commit / app.db_rollback (the outcome of the
# step), and savepoints are the database's own business.
_TRANSACTION = {sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT}


class SqlError(Exception):
    """What the application would get from its database driver: the outcome's name and the database's message."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome


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

    def __init__(self, spec: DatabaseSpec) -> None:
        self.spec = spec
        self.names = tuple(t.name for t in spec.tables)
        self.in_transaction = False
        self.pending: list[str] = []  # the statements of the open transaction (a checkpoint redoes them)
        self._open(None)

    # ---- the connection, and its sandbox
    def _open(self, image: bytes | None) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        if image is not None:
            self.conn.deserialize(image)
            self.in_transaction = False
        else:
            for t in self.spec.tables:
                self.conn.execute(f'CREATE TABLE "{t.name}" ({t.columns})')
                if t.rows:
                    marks = ", ".join("?" * len(t.rows[0]))
                    self.conn.executemany(f'INSERT INTO "{t.name}" VALUES ({marks})', t.rows)
        self._kafka_tables()
        self.conn.set_authorizer(self._authorize)

    def _kafka_tables(self) -> None:
        self.conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS kafka_records (topic TEXT, partition INTEGER, offset INTEGER, key TEXT, value TEXT, fate TEXT)"
        )
        self.conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS kafka_consumed (consumer TEXT, topic TEXT, partition INTEGER, offset INTEGER, key TEXT, value TEXT)"
        )

    def _authorize(self, action: int, arg1: Any, arg2: Any, db_name: Any, trigger: Any) -> int:
        if action in _DATA:
            if (
                action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE)
                and arg1 not in self.names
            ):
                return sqlite3.SQLITE_DENY  # the Kafka tables are read-only, and nothing else exists
            # Reads of any name: this connection holds nothing but the scenario's tables, the Kafka tables and the
            # schema (no ATTACH), and a WITH clause's names are read like tables.
            return sqlite3.SQLITE_OK
        if action in _TRANSACTION and self._admin:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    _admin = False

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        deadline = time.monotonic() + STATEMENT_LIMIT_MS / 1000.0

        def too_long() -> int:
            return 1 if time.monotonic() > deadline else 0

        self.conn.set_progress_handler(too_long, 1000)
        try:
            cursor = self.conn.execute(sql, params)
            columns = [d[0] for d in cursor.description or ()]
            return columns, cursor.fetchmany(MAX_ROWS_SHOWN + 1)
        except sqlite3.IntegrityError as exc:
            raise SqlError("SQL_CONSTRAINT", str(exc)) from None
        except (sqlite3.Error, ValueError) as exc:
            if "interrupted" in str(exc):
                raise SqlError("SQL_TIMEOUT", f"the statement ran longer than {STATEMENT_LIMIT_MS} ms") from None
            if "not authorized" in str(exc) or "prohibited" in str(exc):
                raise SqlError("SQL_DENIED", f"{exc}: a scenario's SQL reads and writes its own tables only") from None
            raise SqlError("SQL_ERROR", str(exc)) from None
        finally:
            self.conn.set_progress_handler(None, 0)

    def _control(self, sql: str) -> None:
        self._admin = True
        try:
            self.conn.execute(sql)
        finally:
            self._admin = False

    # ---- the steps
    def apply(self, action: str, args: Mapping[str, Any]) -> str:
        """One `app.*` step: "ok", or the error the application's driver would raise (SQL_ERROR, SQL_DENIED,
        SQL_TIMEOUT, SQL_CONSTRAINT, or _STATE for a transaction step out of order)."""
        try:
            if action == "sql":
                self._run(str(args["sql"]))
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
        self._load_kafka(kafka)
        try:
            columns, rows = self._run(self.spec.reconcile)
        except SqlError as exc:
            return {"columns": [], "rows": [], "error": f"{exc.outcome}: {exc}"}
        named = [i for i, c in enumerate(columns) if c in self.spec.checks]
        checks = (
            named
            if self.spec.checks
            else [i for i in range(len(columns)) if rows and all(r[i] in (0, 1) for r in rows)]
        )
        return {"columns": columns, "rows": [list(r) for r in rows[:MAX_ROWS_SHOWN]], "error": None, "checks": checks}

    def _load_kafka(self, kafka: Mapping[str, Any]) -> None:
        self._admin = True  # only the temp tables are written here
        try:
            self.conn.set_authorizer(None)
            self.conn.execute("DELETE FROM kafka_records")
            self.conn.execute("DELETE FROM kafka_consumed")
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
            self.conn.executemany("INSERT INTO kafka_records VALUES (?, ?, ?, ?, ?, ?)", records)
            consumed = [
                (name, tp.rpartition("-")[0], int(tp.rpartition("-")[2]), r.get("offset"), r.get("key"), r.get("value"))
                for name, c in kafka.get("consumers", {}).items()
                for tp, rs in (c.get("received") or {}).items()
                for r in rs
            ]
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
        if not self.in_transaction:
            return {"spec": self.spec, "image": self._image(), "pending": None}
        # An image taken inside a transaction would hold its uncommitted rows as if committed: take the committed
        # one, then put the transaction back as it was (its statements are deterministic).
        self._control("ROLLBACK")
        image = self._image()
        self._redo(self.pending)
        return {"spec": self.spec, "image": image, "pending": list(self.pending)}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.spec = state["spec"]
        self.names = tuple(t.name for t in self.spec.tables)
        self.in_transaction, self.pending = False, []
        self._open(state["image"])
        if state["pending"] is not None:
            self._redo(state["pending"])

    def _redo(self, statements: list[str]) -> None:
        self._control("BEGIN")
        self.in_transaction, self.pending = True, []
        for sql in statements:
            self._run(sql)
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

    def close(self) -> None:
        self.inner.close()

    def apply(self, step: Step) -> str:
        if step.actor == "app":
            return self.db.apply(step.action, step.args)
        return self.inner.apply(step)

    def _database(self, kafka: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "tables": self.db.tables(),
            "reconcile": self.db.reconcile(kafka),
            "in_transaction": self.db.in_transaction,
            "reconcile_title": dict(self.db.spec.reconcile_title),
        }

    def view(self, log_limit: int = 200) -> dict[str, Any]:
        out = self.inner.view(log_limit)
        # The reconciliation reads every record and everything consumed, not the dashboard's window of them.
        kafka = out if log_limit >= RECONCILE_LOG_LIMIT else self.inner.view(RECONCILE_LOG_LIMIT)
        out["database"] = self._database(kafka)
        return out

    def observe(self) -> dict[str, Any]:
        out = self.inner.observe()
        out["database"] = self._database(self.inner.view(RECONCILE_LOG_LIMIT))
        return out

    def __getstate__(self) -> dict[str, Any]:
        return {"inner": self.inner, "db": self.db}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.inner, self.db = state["inner"], state["db"]


RECONCILE_LOG_LIMIT = 10_000


def with_database(backend: Backend, spec: DatabaseSpec | None) -> Backend:
    return backend if spec is None else WithDatabase(backend, spec)
