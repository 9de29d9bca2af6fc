"""Every resource a visitor can spend, bounded (design.md, principle 10): one table of the bounds, how each is
counted, and the sentence a user gets when one is reached.

Each bound has a default here and an override in settings (`PLAYGROUND_LIMITS = {"producers": 4, ...}`, or the
environment's `PLAYGROUND_LIMITS="producers=4,db_rows=5000"`); README.md's "Limits" table is `readme_table()` (a
test keeps them equal). A breach raises `LimitExceeded` with a sentence a user understands, which the views turn
into a 4xx (429 for a rate, 422 or 400 for a size).

Counts (sessions a client starts in a minute, wrong join codes, a room's attendees, ...) are kept in the database,
a row per (bound, who), and taken with one conditional UPDATE (`... SET used = used + 1 WHERE used < limit`, with
the drain of a count over time computed in the same statement): atomic on SQLite (one writer at a time) and on
PostgreSQL (the row is locked and the condition checked again on its newest version), so that concurrent requests
to several server processes cannot pass a limit together.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.signals import setting_changed
from django.db import IntegrityError, connection, transaction
from django.utils.translation import gettext as _

from playground.scenario import database as sql
from playground.simserver.bounds import Bounds


@dataclass(frozen=True)
class Bound:
    name: str
    default: int
    per: str  # who or what it bounds: "session", "client", "server", "room", "room's creator", "process", ...
    what: str  # what is bounded, for the README's table (English)
    window_s: int = 0  # counted per window of this many seconds (0: a size or a count that does not expire)


MINUTE_S, HOUR_S = 60, 3600

BOUNDS: tuple[Bound, ...] = (
    # ---- what one session holds
    Bound("producers", 12, "session", "producers (the scenario's actors included)"),
    Bound("consumers", 12, "session", "consumers"),
    Bound("records_per_action", 1000, "command", "records one command may write or poll"),
    Bound("value_bytes", 1024, "record", "bytes of a record's value (UTF-8)"),
    Bound("key_bytes", 256, "record", "bytes of a record's key"),
    Bound("name_chars", 40, "name", "characters of an actor's name, a transactional id, a group id"),
    Bound("clock_advance_s", 7 * 24 * 3600, "command", "seconds one clock.advance moves the clock"),
    Bound("commands", 20_000, "session", "commands in the live log"),
    Bound("dropped_commands", 1_000, "session", "undone commands kept beside the log (back, reset); older ones go"),
    Bound("idempotency_keys", 200, "session", "answers kept for Idempotency-Key retries (the newest)"),
    # ---- the application's database (playground/scenario/database.py)
    Bound("db_statement_ms", sql.DEFAULT_LIMITS.statement_ms, "SQL statement", "milliseconds of one statement"),
    Bound(
        "db_value_bytes",
        sql.DEFAULT_LIMITS.value_bytes,
        "SQL value",
        "bytes of a string, a blob, a row (stored or returned), a JSON aggregate's text or SQL text",
    ),
    Bound("db_rows", sql.DEFAULT_LIMITS.rows, "session", "rows in the scenario's tables"),
    Bound("db_bytes", sql.DEFAULT_LIMITS.bytes, "session", "bytes the scenario's tables take"),
    Bound(
        "db_session_ms",
        1_000,
        "session, or side of a comparison",
        "milliseconds its app.sql statements may take in all (each replay pays them; a comparison's side: with "
        "its reconciliation queries)",
    ),
    Bound(
        "db_ms_per_minute",
        5_000,
        "session's creator or comparing client",
        "milliseconds of app.sql statements and reconciliation queries",
        MINUTE_S,
    ),
    # ---- comparing two profiles (playground/session/compare/): each side spends a session's SQL budgets too
    Bound(
        "compare_steps",
        500,
        "comparison",
        "steps both profiles run (a longer scenario or log: its first ones, said on the page)",
    ),
    Bound(
        "compare_values",
        50_000,
        "comparison",
        "values both profiles read (each side's fields after every step: a big cluster stops it sooner, said)",
    ),
    Bound("compares_kept", 1_000, "server", "comparisons kept for every process to show again (least recent go)"),
    # ---- what a page or a live update carries
    Bound(
        "cell_chars",
        200,
        "database cell, record's key or value",
        "characters shown on a page (\u201cshow all\u201d has the rest)",
    ),
    Bound("db_page_chars", 60_000, "page", "characters of database cells on a page or in an update"),
    Bound(
        "page_actors",
        24,
        "page",
        "applications' producers, consumers and clients, and transactional ids, drawn on a session's page (the "
        "list pages have the rest)",
    ),
    Bound("log_page_bytes", 512 * 1024, "log.json page", "bytes of a page of the command log (`next` has the rest)"),
    Bound(
        "frame_bytes",
        512 * 1024,
        "websocket frame",
        "bytes of a frame (an update is cut into frames between its parts)",
    ),
    # ---- creating things
    Bound("sessions_per_minute", 10, "client", "sessions started or forked", MINUTE_S),
    Bound("texts_per_hour", 30, "client", "new scenario texts stored (saved, or played from the editor)", HOUR_S),
    Bound("texts_per_hour_server", 600, "server", "new scenario texts stored, all clients together", HOUR_S),
    Bound("rooms_per_hour", 10, "client", "workshop rooms created", HOUR_S),
    Bound("room_items", 20, "room", "agenda items"),
    Bound("room_attendees", 100, "room", "attendees"),
    Bound("room_sessions_per_hour", 1_000, "room's creator", "sessions made through the creator's rooms", HOUR_S),
    # ---- guessing
    Bound("join_codes_per_minute", 20, "client", "different wrong join codes (a right one always joins)", MINUTE_S),
    Bound("join_codes_per_minute_server", 600, "server", "wrong join codes, all clients together", MINUTE_S),
    Bound("inspector_keys_per_minute", 10, "client", "different wrong inspector keys (the right one opens)", MINUTE_S),
    # ---- connections
    Bound("requests_per_client", 4, "client and process", "requests carried out at once (the next ones wait)"),
    Bound("queued_per_client", 100, "client and process", "requests waiting their turn (past them: 429)"),
    Bound(
        "requests_in_django_per_client",
        1,
        "client and process",
        "its requests in Django at once, the next ones in turn",
    ),
    Bound("requests_at_once", 4, "process", "requests in Django at once, let in from each client in turn"),
    Bound("websockets_per_client", 150, "client and process", "open websockets (a room of 40 behind one NAT: ~120)"),
    Bound("websockets", 4_000, "process", "open websockets"),
    # ---- connect your own app (session/listener.py): a listener is a set of sockets in one server process
    Bound("listeners_per_client", 2, "client and process", "sessions listening for the client's own applications"),
    Bound("listeners", 20, "process", "sessions listening for applications"),
    Bound("listener_connections", 64, "listener", "open connections of applications"),
    Bound("listener_idle_s", 15 * 60, "listener", "seconds it stays open without a connected application"),
    # ---- what an application sends to a session, bounded as a broker bounds it (Kafka's settings in brackets;
    # playground/simserver/bounds.py), answered with Kafka's own errors
    Bound("kafka_batch_bytes", 1_048_588, "record batch", "bytes of a record batch (message.max.bytes)"),
    Bound("kafka_request_bytes", 4 * 1024 * 1024, "request", "bytes of a request (socket.request.max.bytes)"),
    Bound(
        "kafka_queued_request_bytes",
        32 * 1024 * 1024,
        "process",
        "bytes of applications' requests being read at once (queued.max.request.bytes)",
    ),
    Bound(
        "kafka_produce_bytes_per_s", 256 * 1024, "session and broker", "bytes produced a second (producer_byte_rate)"
    ),
    Bound("kafka_fetch_bytes_per_s", 1024 * 1024, "session and broker", "bytes fetched a second (consumer_byte_rate)"),
    Bound("kafka_request_cpu_percent", 10, "session", "percent of a core its requests take (request_percentage)"),
    Bound(
        "kafka_connections_per_s", 20, "broker", "connections a broker accepts a second (max.connection.creation.rate)"
    ),
    Bound("kafka_partitions_per_topic", 64, "topic", "partitions of a topic an application makes (policy)"),
    Bound("kafka_partitions", 128, "session", "partitions in all (policy)"),
    Bound("kafka_topics", 32, "session", "topics (policy)"),
    Bound("kafka_retention_bytes", 2 * 1024 * 1024, "partition", "bytes a partition keeps (log.retention.bytes)"),
    # at least a batch (RECORD_LIST_TOO_LARGE past it): librdkafka's batch.size is 1,000,000
    Bound("kafka_segment_bytes", 1_048_588, "partition", "bytes of a log segment (log.segment.bytes)"),
    Bound("kafka_retained_bytes", 24 * 1024 * 1024, "session", "bytes of records it keeps in all (past them: refused)"),
    Bound("kafka_log_bytes", 64 * 1024 * 1024, "session", "bytes of applications' requests its log stores"),
    Bound("kafka_idle_ms", 600_000, "connection", "milliseconds without traffic (connections.max.idle.ms)"),
)
BY_NAME = {b.name: b for b in BOUNDS}
HELD = frozenset({"listeners_per_client", "listeners"})  # held for a while, then given back: 429, try again later
DEFAULTS = {b.name: b.default for b in BOUNDS}


@dataclass(frozen=True)
class LimitExceeded(Exception):
    name: str
    limit: int
    message: str

    def __str__(self) -> str:
        return self.message

    @property
    def status(self) -> int:
        """429 for a count over time (wait and try again), 422 for a size or a total."""
        bound = BY_NAME.get(self.name)
        return 429 if bound is not None and (bound.window_s or self.name in HELD) else 422


_bounds: dict[str, int] | None = None  # DEFAULTS with the settings' overrides, merged when first asked


def limit(name: str) -> int:
    # Asked hundreds of times per update (every name a page draws is cut to `name_chars`): the overrides are merged
    # once, and again after a setting changes (tests change them).
    global _bounds
    if _bounds is None:
        _bounds = {**DEFAULTS, **(getattr(settings, "PLAYGROUND_LIMITS", {}) or {})}
    return int(_bounds[name])


def _settings_changed(**_: object) -> None:
    global _bounds
    _bounds = None


setting_changed.connect(_settings_changed, dispatch_uid="limits-bounds")


def sql_limits() -> sql.SqlLimits:
    """The SQL sandbox's bounds as the settings say (the scenario layer knows only its defaults)."""
    return sql.SqlLimits(
        statement_ms=limit("db_statement_ms"),
        value_bytes=limit("db_value_bytes"),
        rows=limit("db_rows"),
        bytes=limit("db_bytes"),
    )


# Databases built in this server (sessions, the editor's check) take the settings' bounds.
sql.limits_in_force = sql_limits


def readme_table() -> str:
    """README.md's "Limits" table: every bound, its default and its setting (tests/web/test_limits.py checks it)."""
    lines = ["| Bound | Per | Default | Setting |", "|---|---|---|---|"]
    for b in BOUNDS:
        per = b.per + (f", per {'minute' if b.window_s == MINUTE_S else 'hour'}" if b.window_s else "")
        lines.append(f"| {b.what} | {per} | {b.default:,} | `{b.name}` |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------ sizes
def check_producers(count_after: int) -> None:
    n = limit("producers")
    if count_after > n:
        raise LimitExceeded("producers", n, _("A session holds at most %(n)d producers.") % {"n": n})


def check_consumers(count_after: int) -> None:
    n = limit("consumers")
    if count_after > n:
        raise LimitExceeded("consumers", n, _("A session holds at most %(n)d consumers.") % {"n": n})


def check_records(count: int) -> None:
    n = limit("records_per_action")
    if count > n:
        raise LimitExceeded(
            "records_per_action",
            n,
            _("One action writes at most %(n)d records; this one asks for %(c)d.") % {"n": n, "c": count},
        )


def check_value(value: str | None, field: str = "value") -> None:
    if value is None:
        return
    n = limit("key_bytes" if field == "key" else "value_bytes")
    size = len(value.encode("utf-8"))
    if size > n:
        raise LimitExceeded(
            f"{field}_bytes",
            n,
            _("A record %(field)s is at most %(n)d bytes; this one has %(s)d.") % {"field": field, "n": n, "s": size},
        )


def check_sql_time(spent_ms: float) -> None:
    n = limit("db_session_ms")
    if spent_ms >= n:
        raise LimitExceeded(
            "db_session_ms",
            n,
            _(
                "This session's SQL statements took %(n)d ms in all, its limit (every replay of the session takes "
                "them again): reset it or start a new one."
            )
            % {"n": n},
        )


def check_commands(count_after: int) -> None:
    n = limit("commands")
    if count_after > n:
        raise LimitExceeded(
            "commands",
            n,
            _("This session reached its limit of %(n)d commands: reset it or start a new one.") % {"n": n},
        )


def kafka_bounds() -> Bounds:
    """What a session's listener bounds in what applications send (recorded in its log: simserver/bounds.py)."""
    return Bounds(
        message_max_bytes=limit("kafka_batch_bytes"),
        socket_request_max_bytes=limit("kafka_request_bytes"),
        queued_max_request_bytes=limit("kafka_queued_request_bytes"),
        connections_max_idle_ms=limit("kafka_idle_ms"),
        log_segment_bytes=limit("kafka_segment_bytes"),
        log_retention_bytes=limit("kafka_retention_bytes"),
        producer_byte_rate=float(limit("kafka_produce_bytes_per_s")),
        consumer_byte_rate=float(limit("kafka_fetch_bytes_per_s")),
        request_percentage=float(limit("kafka_request_cpu_percent")),
        max_connection_creation_rate=float(limit("kafka_connections_per_s")),
        policy_max_partitions_per_topic=limit("kafka_partitions_per_topic"),
        policy_max_partitions=limit("kafka_partitions"),
        policy_max_topics=limit("kafka_topics"),
        policy_max_message_bytes=limit("kafka_batch_bytes"),
        retained_max_bytes=limit("kafka_retained_bytes"),
    )


def check_listeners(held_by_client: int, held_here: int) -> None:
    """Before a listener opens: the client's and this process's listeners held now (a listener is sockets in one
    process, so the counts are the process's own, not the database's)."""
    n = limit("listeners_per_client")
    if held_by_client >= n:
        raise LimitExceeded(
            "listeners_per_client",
            n,
            _("You have %(n)d sessions listening for your own apps, the limit: stop one first.") % {"n": n},
        )
    n = limit("listeners")
    if held_here >= n:
        raise LimitExceeded(
            "listeners",
            n,
            _("This server has %(n)d sessions listening for apps, its limit: try again later.") % {"n": n},
        )


# --------------------------------------------------------------------------------------------- counts over time
MESSAGES = {
    "sessions_per_minute": "You started %(n)d sessions in the last minute, the limit: wait a minute and try again.",
    "texts_per_hour": "You stored %(n)d new scenario texts in the last hour, the limit: wait and try again.",
    "texts_per_hour_server": "This server stored %(n)d new scenario texts in the last hour, its limit: try later.",
    "rooms_per_hour": "You created %(n)d workshop rooms in the last hour, the limit: wait and try again.",
    "room_sessions_per_hour": "The rooms of this room's facilitator made %(n)d sessions in the last hour, the "
    "limit: ask them, or wait.",
    "room_attendees": "This room is full: it has %(n)d attendees, the limit.",
    "join_codes_per_minute": "Too many wrong join codes from here in the last minute: check the code and try again "
    "in a minute.",
    "join_codes_per_minute_server": "Too many wrong join codes in the last minute: check the code and try again in "
    "a minute.",
    "inspector_keys_per_minute": "Too many wrong keys from here in the last minute: wait a minute.",
    "db_ms_per_minute": "The SQL of your sessions and comparisons took %(n)d ms in the last minute, the limit: wait a "
    "moment.",
}


def _message(name: str, n: int) -> str:
    return str(_(MESSAGES[name]) % {"n": n})


def reached(name: str) -> LimitExceeded:
    """The error for `name`'s limit, reached (for a caller that checked with `over`)."""
    n = limit(name)
    return LimitExceeded(name, n, _message(name, n))


# A count over time is a leaky bucket: `used` drains at limit/window per second, and one more is allowed while the
# drained count is at most limit - 1. So "10 a minute" is 10 at once, then one every 6 s: no window edge to time a
# burst on. A total (window 0) never drains. One UPDATE computes, checks and stores it; the row is created first.
_DRAINED = "(CASE WHEN used - (%s - stamp) * %s < 0 THEN 0 ELSE used - (%s - stamp) * %s END)"
_TAKE = f"UPDATE {{table}} SET used = {_DRAINED} + %s, stamp = %s, expires = %s WHERE bucket = %s AND {_DRAINED} <= %s"
_CHARGE = f"UPDATE {{table}} SET used = {_DRAINED} + %s, stamp = %s, expires = %s WHERE bucket = %s"
_GIVE_BACK = "UPDATE {table} SET used = (CASE WHEN used < %s THEN 0 ELSE used - %s END) WHERE bucket = %s"
_EPSILON = 1e-6  # float drain: 9.9999999 used of 10 is 9 and a bit, which must still leave room for one

_swept_at = 0.0
_sweep_lock = threading.Lock()
SWEEP_EVERY_S = 60.0


def _sweep(now: float) -> None:
    """Buckets that have drained empty go (a missing bucket is an empty one), at most once a minute per process."""
    global _swept_at
    from playground.models import Counter

    with _sweep_lock:
        if now - _swept_at < SWEEP_EVERY_S:
            return
        _swept_at = now
    Counter.objects.filter(expires__lt=now).delete()


def _bucket(name: str, who: str) -> str:
    return f"{name}:{who}"


def _rate(name: str, n: int) -> float:
    window_s = BY_NAME[name].window_s
    return n / window_s if window_s else 0.0


def take(name: str, who: str = "", amount: int = 1) -> str:
    """`amount` more of `name` for `who` (a client's key, a room's id; "" for the whole server), or LimitExceeded
    when that would pass its limit (nothing is counted then). Returns the bucket's name, for `give_back`."""
    from playground.models import Counter

    now = time.time()
    _sweep(now)
    n, bucket = limit(name), _bucket(name, who)
    rate = _rate(name, n)
    window_s = BY_NAME[name].window_s
    expires = now + window_s if window_s else None
    Counter.objects.bulk_create([Counter(bucket=bucket, used=0.0, stamp=now, expires=expires)], ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(
            _TAKE.format(table=Counter._meta.db_table),
            [now, rate, now, rate, amount, now, expires, bucket, now, rate, now, rate, n - amount + _EPSILON],
        )
        taken = cursor.rowcount == 1
    if not taken:
        raise LimitExceeded(name, n, _message(name, n))
    return bucket


def charge(name: str, who: str, amount: float) -> None:
    """Count `amount` (time spent, known only afterwards) against `who`'s `name`, whatever the limit: the next
    `over` tells whether it may spend more."""
    from playground.models import Counter

    now = time.time()
    n, bucket = limit(name), _bucket(name, who)
    rate = _rate(name, n)
    window_s = BY_NAME[name].window_s
    expires = now + window_s if window_s else None
    Counter.objects.bulk_create([Counter(bucket=bucket, used=0.0, stamp=now, expires=expires)], ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(
            _CHARGE.format(table=Counter._meta.db_table), [now, rate, now, rate, amount, now, expires, bucket]
        )


def give_back(bucket: str, amount: int = 1) -> None:
    """Undo a `take` of `amount` (what it counted was not made after all)."""
    from playground.models import Counter

    with connection.cursor() as cursor:
        cursor.execute(_GIVE_BACK.format(table=Counter._meta.db_table), [amount, amount, bucket])


def over(name: str, who: str = "") -> bool:
    """Is `who` at its limit of `name` now (nothing is counted)?"""
    from playground.models import Counter

    row = Counter.objects.filter(bucket=_bucket(name, who)).values_list("used", "stamp").first()
    if row is None:
        return False
    n = limit(name)
    used = max(0.0, float(row[0]) - (time.time() - float(row[1])) * _rate(name, n))
    return used > n - 1 + _EPSILON


def remaining(name: str, who: str = "") -> float:
    """How much of `name` `who` may still spend now (a count over time, drained; nothing is counted)."""
    from playground.models import Counter

    n = limit(name)
    row = Counter.objects.filter(bucket=_bucket(name, who)).values_list("used", "stamp").first()
    if row is None:
        return float(n)
    used = max(0.0, float(row[0]) - (time.time() - float(row[1])) * _rate(name, n))
    return max(0.0, n - used)


def first_time(name: str, who: str, what: str) -> bool:
    """True the first time `what` is seen for (`name`, `who`) within the bound's window (so that the same wrong code
    typed again counts once): a row per distinct thing, made by one INSERT or renewed once it has expired."""
    from playground.models import Counter

    now = time.time()
    bucket = "seen:" + _bucket(name, f"{who}:{what}")
    expires = now + (BY_NAME[name].window_s or HOUR_S)
    try:
        with transaction.atomic():
            Counter.objects.create(bucket=bucket, used=1.0, stamp=now, expires=expires)
    except IntegrityError:
        return bool(Counter.objects.filter(bucket=bucket, expires__lt=now).update(stamp=now, expires=expires))
    return True


def sessions_per_minute(client: str) -> str | None:
    """Count one session against the client's budget (nothing for an unnamed client: the tests' and the command
    line's sessions); the bucket, to give the session back when it is not made after all."""
    return take("sessions_per_minute", client) if client else None
