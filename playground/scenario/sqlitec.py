"""SQLite's C interface where Python's sqlite3 module does not reach, through ctypes on the very library that module
links (the symbols are looked up through `_sqlite3`'s own handle, and its version must be the module's): part of
the SQL sandbox (database.py).

- `bound_json_aggregates(conn)`: json_group_array() and json_group_object() for one connection, whose text stays
  within the connection's SQLITE_LIMIT_LENGTH as it grows. SQLite's own (json.c: jsonArrayStep, jsonObjectStep)
  append to a buffer that nothing bounds until the result is handed back, so a statement grows it until its time
  is up: in 200 ms, +121 MiB for json_group_object(i, <15,000 bytes>), +261 MiB for json_group_array() of
  json_object()s of 2,700 control characters (each escaped to six bytes). These keep SQLite's semantics, the JSON
  subtype included, which a function made with `Connection.create_aggregate` cannot (Python's sqlite3 hands it
  values without their subtype, so json_group_array(json_object(...)) would nest strings instead of objects):
  each value's text is the one SQLite's own aggregate makes of it alone (`SELECT json_group_array(?1)` on a helper
  connection, the value bound with sqlite3_bind_value: exact for every type, in every version), a value with the
  JSON subtype or an integer is appended as it is (as SQLite does), and a window's inverse step removes the first
  element (SQLite removes the text up to the first comma outside a string or a nesting: the same, for the values
  SQLite renders). A step that would take the text past the limit fails the statement with "string or blob too
  big", as SQLite's own aggregate does once it returns the text. The price: about 7 us a row, where SQLite's take
  0.3 (a json_group_array() of 3,000 integers: 21 ms).
- `memory_used()` / `memory_highwater(reset)`: SQLite's heap figures (sqlite3_memory_used, ..._highwater), for
  the hostile SQL suite (tests/sqlhostile.py). They count the whole process: they bound nothing here.

The connection's handle (`sqlite3*`) is the first field after the object header of CPython's pysqlite_Connection
(Modules/_sqlite/connection.h: `PyObject_HEAD` then `sqlite3 *db`); it is taken only when SQLite reads the
connection's own limits through it. Without it (another Python, or a module linked to SQLite statically without its symbols) the
two aggregates are not bounded and `bound_json_aggregates` says so: the sandbox then refuses them.
"""

from __future__ import annotations

import _sqlite3
import ctypes
import itertools
import sqlite3
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

SQLITE_OK, SQLITE_ROW, SQLITE_TOOBIG = 0, 100, 18
SQLITE_INTEGER, SQLITE_TEXT, SQLITE_NULL = 1, 3, 5
SQLITE_LIMIT_LENGTH = 0
_OPEN = 0x02 | 0x04  # SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
# SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_SUBTYPE (reads its arguments' subtypes: a window function without
# it may be handed values stripped of theirs) | SQLITE_RESULT_SUBTYPE (3.45+; older versions ignore the bit)
_FLAGS = 1 | 0x800 | 0x100000 | 0x1000000
JSON_SUBTYPE = 74  # 'J', json.c
_TRANSIENT = ctypes.c_void_p(-1)  # SQLITE_TRANSIENT: SQLite copies the text before the call returns

_P = ctypes.c_void_p
_STEP = ctypes.CFUNCTYPE(None, _P, ctypes.c_int, ctypes.POINTER(_P))
_FINAL = ctypes.CFUNCTYPE(None, _P)


def _library() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(getattr(_sqlite3, "__file__", None))
        lib.sqlite3_libversion.restype = ctypes.c_char_p
        if lib.sqlite3_libversion().decode() != sqlite3.sqlite_version:
            return None
    except (OSError, AttributeError):
        return None
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "sqlite3_limit": (ctypes.c_int, [_P, ctypes.c_int, ctypes.c_int]),
        "sqlite3_create_window_function": (
            ctypes.c_int,
            [_P, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, _P, _STEP, _FINAL, _FINAL, _STEP, _P],
        ),
        "sqlite3_aggregate_context": (_P, [_P, ctypes.c_int]),
        "sqlite3_context_db_handle": (_P, [_P]),
        "sqlite3_value_subtype": (ctypes.c_uint, [_P]),
        "sqlite3_value_type": (ctypes.c_int, [_P]),
        "sqlite3_value_text": (_P, [_P]),
        "sqlite3_value_bytes": (ctypes.c_int, [_P]),
        "sqlite3_result_text": (None, [_P, ctypes.c_char_p, ctypes.c_int, _P]),
        "sqlite3_result_subtype": (None, [_P, ctypes.c_uint]),
        "sqlite3_result_error": (None, [_P, ctypes.c_char_p, ctypes.c_int]),
        "sqlite3_result_error_code": (None, [_P, ctypes.c_int]),
        "sqlite3_result_error_nomem": (None, [_P]),
        "sqlite3_open_v2": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P), ctypes.c_int, _P]),
        "sqlite3_close_v2": (ctypes.c_int, [_P]),
        "sqlite3_prepare_v2": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(_P), _P]),
        "sqlite3_bind_value": (ctypes.c_int, [_P, ctypes.c_int, _P]),
        "sqlite3_step": (ctypes.c_int, [_P]),
        "sqlite3_column_text": (_P, [_P, ctypes.c_int]),
        "sqlite3_column_bytes": (ctypes.c_int, [_P, ctypes.c_int]),
        "sqlite3_reset": (ctypes.c_int, [_P]),
        "sqlite3_finalize": (ctypes.c_int, [_P]),
        "sqlite3_errmsg": (ctypes.c_char_p, [_P]),
        "sqlite3_memory_used": (ctypes.c_int64, []),
        "sqlite3_memory_highwater": (ctypes.c_int64, [ctypes.c_int]),
    }
    try:
        for name, (restype, argtypes) in signatures.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
    except AttributeError:
        return None
    return lib


_lib = _library()


def memory_used() -> int:
    """Bytes SQLite has allocated in this process now (0 without the library, or with its statistics off)."""
    return int(_lib.sqlite3_memory_used()) if _lib is not None else 0


def memory_highwater(reset: bool = False) -> int:
    """The most bytes SQLite had allocated at once in this process since the last reset (then resets it to now)."""
    return int(_lib.sqlite3_memory_highwater(1 if reset else 0)) if _lib is not None else 0


def handle(conn: sqlite3.Connection) -> int | None:
    """The connection's sqlite3*, when it can be found and is right (SQLite reads this connection's limits there)."""
    if _lib is None or sys.implementation.name != "cpython":
        return None
    db = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value
    if not db:
        return None
    kinds = (sqlite3.SQLITE_LIMIT_LENGTH, sqlite3.SQLITE_LIMIT_SQL_LENGTH, sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH)
    if any(_lib.sqlite3_limit(db, kind, -1) != conn.getlimit(kind) for kind in kinds):
        return None
    return int(db)


# ---- the bounded JSON aggregates
class _Failed(Exception):
    """A step's error, as SQLite's own aggregate reports it (its message, and SQLite's error code)."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class _Renderer:
    """A helper connection whose json_group_array()/json_group_object() render one value each: the text SQLite's
    own aggregate makes of it. One per thread (closed with it)."""

    SQL = (b"SELECT json_group_array(?1)", b"SELECT json_group_object(?1, ?2)", b"SELECT json_group_object(?1, NULL)")

    def __init__(self) -> None:
        assert _lib is not None
        self.db, self.statements = _P(), {}
        if _lib.sqlite3_open_v2(b":memory:", ctypes.byref(self.db), _OPEN, None) != SQLITE_OK:
            raise _Failed("cannot open SQLite's JSON helper connection")
        for sql in self.SQL:
            stmt = _P()
            if _lib.sqlite3_prepare_v2(self.db, sql, -1, ctypes.byref(stmt), None) != SQLITE_OK:
                raise _Failed(_lib.sqlite3_errmsg(self.db).decode("utf-8", "replace"))
            self.statements[sql] = stmt

    def render(self, sql: bytes, *values: int) -> bytes:
        """The one row's text of `sql` over the values (sqlite3_value*, bound as they are)."""
        assert _lib is not None
        stmt = self.statements[sql]
        try:
            for i, value in enumerate(values, 1):
                _lib.sqlite3_bind_value(stmt, i, value)
            if _lib.sqlite3_step(stmt) != SQLITE_ROW:
                raise _Failed(_lib.sqlite3_errmsg(self.db).decode("utf-8", "replace"))
            return ctypes.string_at(_lib.sqlite3_column_text(stmt, 0), _lib.sqlite3_column_bytes(stmt, 0))
        finally:
            _lib.sqlite3_reset(stmt)  # (the bindings stay until the next: a value of at most the limit's bytes)

    def __del__(self) -> None:
        if _lib is not None and self.db:
            for stmt in self.statements.values():
                _lib.sqlite3_finalize(stmt)
            _lib.sqlite3_close_v2(self.db)


_per_thread = threading.local()


def _render(sql: bytes, *values: int) -> bytes:
    renderer: _Renderer | None = getattr(_per_thread, "renderer", None)
    if renderer is None:
        renderer = _per_thread.renderer = _Renderer()
    return renderer.render(sql, *values)


@dataclass
class _Text:
    """One group's JSON text as its elements (without the brackets and the commas between them)."""

    limit: int  # the connection's SQLITE_LIMIT_LENGTH
    elements: deque[bytes] = field(default_factory=deque)
    size: int = 0  # bytes of the elements together

    def bytes_with(self, element: bytes) -> int:
        """The length of the whole text (brackets and commas too) with one more element."""
        return 2 + self.size + len(element) + len(self.elements)

    def text(self, brackets: bytes) -> bytes:
        return brackets[:1] + b",".join(self.elements) + brackets[1:]


_texts: dict[int, _Text] = {}  # every group being aggregated in the process, by the key in its aggregate context
_keys = itertools.count(1)


def _text_of(ctx: int, create: bool) -> tuple[int, _Text] | None:
    assert _lib is not None
    slot = _lib.sqlite3_aggregate_context(ctx, 8 if create else 0)
    if not slot:
        if create:
            raise MemoryError
        return None
    key = ctypes.c_uint64.from_address(slot)
    if key.value == 0:  # SQLite zeroes the context when it first allocates it
        key.value = next(_keys)
        _texts[key.value] = _Text(_lib.sqlite3_limit(_lib.sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1))
    text = _texts.get(key.value)
    return (key.value, text) if text is not None else None


def _element(name: str, argv: Any) -> bytes:
    assert _lib is not None
    if name == "json_group_array":
        kind = _lib.sqlite3_value_type(argv[0])
        if kind == SQLITE_INTEGER or (kind == SQLITE_TEXT and _lib.sqlite3_value_subtype(argv[0]) == JSON_SUBTYPE):
            return _raw(argv[0])  # as SQLite appends them (json.c: jsonAppendValue, jsonAppendSqlValue)
        if kind == SQLITE_NULL:
            return b"null"
        return _render(b"SELECT json_group_array(?1)", argv[0])[1:-1]
    if _lib.sqlite3_value_subtype(argv[1]) == JSON_SUBTYPE:
        label = _render(b"SELECT json_group_object(?1, NULL)", argv[0])[1 : -len(b":null}")]
        return label + b":" + _raw(argv[1])
    return _render(b"SELECT json_group_object(?1, ?2)", argv[0], argv[1])[1:-1]


def _raw(value: int) -> bytes:
    assert _lib is not None
    text = _lib.sqlite3_value_text(value)
    return ctypes.string_at(text, _lib.sqlite3_value_bytes(value)) if text else b""


def _fail(ctx: int, name: str, exc: BaseException) -> None:
    assert _lib is not None
    if isinstance(exc, MemoryError):
        _lib.sqlite3_result_error_nomem(ctx)
        return
    _lib.sqlite3_result_error(ctx, str(exc).encode(), -1)
    if isinstance(exc, _Failed) and exc.code:
        _lib.sqlite3_result_error_code(ctx, exc.code)


def _callbacks(name: str, brackets: bytes) -> tuple[Any, Any, Any, Any]:
    def step(ctx: int, argc: int, argv: Any) -> None:
        assert _lib is not None
        try:
            found = _text_of(ctx, create=True)
            if found is None:
                raise MemoryError
            text = found[1]
            element = _element(name, argv)
            if text.bytes_with(element) > text.limit:
                raise _Failed(f"{name}(): string or blob too big", SQLITE_TOOBIG)
            text.elements.append(element)
            text.size += len(element)
        except Exception as exc:
            _fail(ctx, name, exc)

    def inverse(ctx: int, argc: int, argv: Any) -> None:
        try:
            found = _text_of(ctx, create=False)
            if found is not None and found[1].elements:
                found[1].size -= len(found[1].elements.popleft())
        except Exception as exc:
            _fail(ctx, name, exc)

    def result(ctx: int, final: bool) -> None:
        assert _lib is not None
        try:
            found = _text_of(ctx, create=False)
            out = found[1].text(brackets) if found is not None else brackets
            if final and found is not None:
                _texts.pop(found[0], None)
            _lib.sqlite3_result_text(ctx, out, len(out), _TRANSIENT)
            _lib.sqlite3_result_subtype(ctx, JSON_SUBTYPE)
        except Exception as exc:
            _fail(ctx, name, exc)

    return (
        _STEP(step),
        _FINAL(lambda ctx: result(ctx, True)),
        _FINAL(lambda ctx: result(ctx, False)),
        _STEP(inverse),
    )


# Kept for the life of the process: SQLite calls them through these pointers.
_AGGREGATES = {
    b"json_group_array": (1, _callbacks("json_group_array", b"[]")),
    b"json_group_object": (2, _callbacks("json_group_object", b"{}")),
}


def bound_json_aggregates(conn: sqlite3.Connection) -> bool:
    """Replace json_group_array() and json_group_object() on `conn` with the bounded ones; False when they could
    not be (no handle: see the module's docstring)."""
    db = handle(conn)
    if db is None or _lib is None:
        return False
    for name, (args, (step, final, value, inverse)) in _AGGREGATES.items():
        rc = _lib.sqlite3_create_window_function(db, name, args, _FLAGS, None, step, final, value, inverse, None)
        if rc != SQLITE_OK:
            return False
    return True
