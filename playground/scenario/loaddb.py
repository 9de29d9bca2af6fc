"""Loading a scenario's `database:` block: its tables, their seed rows and the reconciliation, each built in the
sandbox (database.py) as the file is loaded, so that a wrong column or row is an error with its line; part of the
loader (loader.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import yaml

from playground.scenario.messages import _
from playground.scenario.reader import INT, Reader, join_field, unknown_name

_SQL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
MAX_TABLES = 16  # a database's tables (each is built, with its seed rows, when the file is checked)


if TYPE_CHECKING:
    from playground.scenario.database import DatabaseSpec


def _parse_database(r: Reader, node: yaml.Node) -> DatabaseSpec:
    """`database: {tables: {NAME: {columns: "id integer primary key, ...", rows: [[1, new], ...]}}, reconcile: {...}}`:
    the application's tables, built once here in a scratch database so that a wrong column or row is this file's
    error (with its line), not a step's surprise."""
    from playground.scenario.database import Database, DatabaseSpec, SqlError, Table

    pairs = r.mapping(node, "database")
    for key, (key_node, _v) in pairs.items():
        if key not in ("tables", "reconcile"):
            raise r.fail(key_node, join_field("database", key), unknown_name(_("key"), key, ("tables", "reconcile")))
    if "tables" not in pairs:
        raise r.fail(node, "database.tables", _("missing: name at least one table"))
    tables = []
    table_nodes: dict[str, yaml.Node] = {}
    declared = r.mapping(pairs["tables"][1], "database.tables")
    if len(declared) > MAX_TABLES:
        raise r.fail(
            pairs["tables"][1],
            "database.tables",
            _("at most %(max)s tables, found %(n)s") % {"max": MAX_TABLES, "n": len(declared)},
        )
    for name, (name_node, table_node) in declared.items():
        where = join_field("database.tables", name)
        if not _SQL_NAME.match(name) or name.lower().startswith(("sqlite_", "kafka_", "playground_")):
            raise r.fail(
                name_node,
                where,
                _(
                    "%(name)s is not a table name this database allows (letters, digits, '_'; not sqlite_*, kafka_*, "
                    "playground_*)"
                )
                % {"name": repr(name)},
            )
        spec = r.mapping(table_node, where)
        for key, (key_node, _v) in spec.items():
            if key not in ("columns", "rows"):
                raise r.fail(key_node, join_field(where, key), unknown_name(_("key"), key, ("columns", "rows")))
        if "columns" not in spec:
            raise r.fail(
                table_node,
                join_field(where, "columns"),
                _('missing: the column definitions as SQL, e.g. "id integer primary key, status text"'),
            )
        columns = r.string(spec["columns"][1], join_field(where, "columns"))
        rows = []
        for i, row_node in enumerate(r.sequence(spec["rows"][1], join_field(where, "rows")) if "rows" in spec else []):
            cells = r.sequence(row_node, join_field(join_field(where, "rows"), i))
            rows.append(tuple(_sql_value(r, c) for c in cells))
        tables.append(Table(name, columns, tuple(rows)))
        table_nodes[name] = table_node
    # Built once, as a session builds it (one statement's time for all the tables and their rows, within the
    # rows and bytes a session's database may hold): a wrong column or row is the table's error, with its line.
    try:
        Database(DatabaseSpec(tuple(tables)))
    except SqlError as exc:
        name = exc.table or tables[-1].name
        raise r.fail(
            table_nodes.get(name, pairs["tables"][1]),
            join_field("database.tables", name),
            _("the database refuses this table: %(e)s") % {"e": exc},
        ) from None
    reconcile, title = None, {}
    if "reconcile" in pairs:
        rec = r.mapping(pairs["reconcile"][1], "database.reconcile")
        for key, (key_node, _v) in rec.items():
            if key not in ("title", "sql", "checks"):
                raise r.fail(
                    key_node,
                    join_field("database.reconcile", key),
                    unknown_name(_("key"), key, ("title", "sql", "checks")),
                )
        if "sql" not in rec:
            raise r.fail(pairs["reconcile"][1], "database.reconcile.sql", _("missing: the reconciliation query"))
        reconcile = r.string(rec["sql"][1], "database.reconcile.sql")
        title = r.texts(rec["title"][1], "database.reconcile.title") if "title" in rec else {}
        checks = (
            tuple(
                r.string(n, join_field("database.reconcile.checks", i))
                for i, n in enumerate(r.sequence(rec["checks"][1], "database.reconcile.checks"))
            )
            if "checks" in rec
            else ()
        )
        probe = Database(DatabaseSpec(tuple(tables), reconcile, title, checks)).reconcile({})
        assert probe is not None  # the spec has a query: `reconcile` is not empty
        if probe["error"]:
            raise r.fail(rec["sql"][1], "database.reconcile.sql", probe["error"])
        missing = [c for c in checks if c not in probe["columns"]]
        if missing:
            raise r.fail(
                rec["checks"][1],
                "database.reconcile.checks",
                _("no column %(missing)s in the query's result (%(columns)s)")
                % {"missing": ", ".join(missing), "columns": ", ".join(probe["columns"])},
            )
    return DatabaseSpec(tuple(tables), reconcile, title, checks if "reconcile" in pairs else ())


def _sql_value(r: Reader, node: yaml.Node) -> Any:
    """A cell of a table's rows: a whole number stays a number, null stays NULL, anything else is text."""
    if r.is_null(node):
        return None
    text = r.string(node, "database", non_empty=False)
    if INT.match(text) and not node.style:
        value = int(text) if len(text) <= 20 else None
        if value is None or not -(2**63) <= value < 2**63:
            raise r.fail(
                node,
                "database",
                _("%(text)s is not a 64-bit integer (quote it to keep it as text)")
                % {"text": text[:24] + ("..." if len(text) > 24 else "")},
            )
        return value
    return text
