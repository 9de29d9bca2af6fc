"""The database side of a session: its row and its log of command rows.

Every change checks and bumps the session's `version` in the same database transaction as the rows it writes, so
two processes appending at once cannot both win: the loser finds the version moved, drops what it built, and tries
again on top. Appending costs the same at command 10 and at 20,000 (one UPDATE, one INSERT); "back", "reset" and
truncation mark rows `dropped` (one UPDATE) instead of rewriting the log.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from playground.models import Attendee, Command, CommandAnswer, Seat, Session, Workshop
from playground.models import Checkpoint as StoredCheckpoint
from playground.session import capability, external, limits
from playground.session.live import CommandError


def read(session_id: str) -> Session:
    """The session's row (every command reads it first, and every page). One raw statement by its key: compiling
    `Session.objects.get`'s queryset each time was more than half of the read's CPU (404 vs 176 us on SQLite); the
    row is the same model instance, Django's field converters applied."""
    rows = list(Session.objects.raw(_read_sql(), [str(session_id)]))
    if not rows:
        raise CommandError(_("No session %(id)s.") % {"id": session_id}, status=404)
    return cast(Session, rows[0])


@functools.cache
def _read_sql() -> str:
    quote = connection.ops.quote_name
    return f"SELECT * FROM {quote(Session._meta.db_table)} WHERE {quote(Session._meta.pk.column)} = %s"


def drive_key_of(session_id: str) -> str:
    """The digest of the session's drive capability, as read() would find it (a 404 for no such session): the check
    every command makes before the command reads the row itself. A session's drive key is written once: when it is
    created, or, for a seat made as its room moved on, when its owner first comes (`claim`). So a process keeps it
    once it is there; "" (nobody drives it, or not yet) is read again each time."""
    try:
        return _kept_drive_key(session_id)
    except _Unclaimed:
        return ""


class _Unclaimed(Exception):
    """Not kept: functools.lru_cache keeps no exception."""


@functools.lru_cache(maxsize=4096)
def _kept_drive_key(session_id: str) -> str:
    try:
        digest = str(Session.objects.values_list("drive_key", flat=True).get(pk=session_id))
    except (Session.DoesNotExist, ValueError):
        raise CommandError(_("No session %(id)s.") % {"id": session_id}, status=404) from None
    if not digest:
        raise _Unclaimed
    return digest


def claim(session_id: str, key: str) -> None:
    """A seat made as its room moved on gets its drive capability when its owner first comes: the owner's secret,
    from which a seat's capability derives, is known only then (only their browser holds it). Once: a session that
    has a drive key keeps it."""
    Session.objects.filter(pk=session_id, drive_key="").update(drive_key=capability.digest(key))


def drive_key(session_id: str) -> str:
    """The digest of the session's drive capability ("" when nobody holds one or there is no such session), kept
    per process as drive_key_of keeps it: a page asks whether its viewer drives."""
    try:
        return drive_key_of(session_id)
    except CommandError:
        return ""


def seat_of(session_id: str) -> dict[str, Any] | None:
    """Where a session sits in a workshop: {"room", "code", "attendee", "name", "item"} (None: not a room's session).
    A session only reads its seat; the rooms (playground.rooms) give seats out. One statement written once: every
    session built afresh asks (forty at once as a room moves on), and Django's queryset for it (two joins) cost more
    than the query."""
    with connection.cursor() as cursor:
        cursor.execute(_seat_sql(), [str(session_id)])
        row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip(("room", "code", "attendee", "name", "item"), row))


@functools.cache
def _seat_sql() -> str:
    q = connection.ops.quote_name
    seat, room, attendee = Seat._meta.db_table, Workshop._meta.db_table, Attendee._meta.db_table
    return (
        f"SELECT s.{q('workshop_id')}, w.{q('code')}, s.{q('attendee_id')}, a.{q('name')}, s.{q('item')} "
        f"FROM {q(seat)} s JOIN {q(room)} w ON w.{q('id')} = s.{q('workshop_id')} "
        f"LEFT JOIN {q(attendee)} a ON a.{q('id')} = s.{q('attendee_id')} WHERE s.{q('session_id')} = %s"
    )


def parse_langs(value: str) -> tuple[str, ...]:
    """Session.viewer_langs (",en,zh-hans,") as a tuple."""
    return tuple(lang for lang in value.split(",") if lang)


def _stored_langs(session_id: str) -> str | None:
    return cast(str | None, Session.objects.filter(pk=session_id).values_list("viewer_langs", flat=True).first())


def viewer_langs(session_id: str) -> tuple[str, ...]:
    """The languages the session's pages have been opened in (its updates are rendered in these)."""
    return parse_langs(_stored_langs(session_id) or "")


def add_viewer_lang(session_id: str, lang: str, stored: str | None = None) -> None:
    """A page of the session opened in `lang`: its updates are rendered in it from now on (a write only the first
    time; compare-and-set, so that two pages opening at once in two languages both count). `stored`: the languages
    the caller has just read."""
    now = _stored_langs(session_id) if stored is None else stored
    for _attempt in range(5):
        if now is None or lang in parse_langs(now):
            return
        if Session.objects.filter(pk=session_id, viewer_langs=now).update(viewer_langs=f"{now or ','}{lang},"):
            return
        now = _stored_langs(session_id)


def live_rows(session_id: str, start: int = 0, stop: int | None = None, *, payloads: bool = True) -> list[Command]:
    """The live rows from `start` (to `stop`), in order; without `payloads`, their payloads are not read (a log in
    memory never holds them: only a replay of the row needs its payload)."""
    rows = Command.objects.filter(session_id=session_id, dropped=False, seq__gte=start)
    if stop is not None:
        rows = rows.filter(seq__lt=stop)
    if not payloads:
        rows = rows.defer("payload")
    return list(rows.order_by("seq"))


def payloads(row_ids: Iterable[int]) -> dict[int, bytes]:
    """Row id -> its payload, for the rows that have one (external clients' entries about to be replayed)."""
    wanted = list(row_ids)
    out: dict[int, bytes] = {}
    for start in range(0, len(wanted), 500):  # a bounded IN list
        rows = Command.objects.filter(pk__in=wanted[start : start + 500], payload__isnull=False)
        out.update((pk, bytes(data)) for pk, data in rows.values_list("id", "payload"))
    return out


def first_commands(session_id: str, first: int) -> tuple[list[dict[str, Any]], int]:
    """The first `first` commands of the live log (steps and actors added; not an exercise's answers, hints or
    switches), and how many commands it has: what a comparison re-runs, read without replaying anything."""
    rows = Command.objects.filter(session_id=session_id, dropped=False)
    commands = rows.filter(Q(entry__has_key="step") | Q(entry__has_key="add"))
    entries = list(commands.order_by("seq").values_list("entry", flat=True)[:first])
    return entries, commands.count() if len(entries) == first else len(entries)


def ids_at(session_id: str, seqs: Iterable[int]) -> dict[int, int]:
    """seq -> row id of the live rows at those positions."""
    wanted = [s for s in seqs if s >= 0]
    if not wanted:
        return {}
    rows = Command.objects.filter(session_id=session_id, dropped=False, seq__in=wanted).values_list("seq", "id")
    return dict(rows)


def _split(entry: Mapping[str, Any]) -> tuple[dict[str, Any], str, bytes | None]:
    """(the entry as its row's JSON holds it, its outcome, its payload)."""
    payload = external.payload_of(entry) if external.EXT in entry else None
    body = {k: v for k, v in external.without_payload(dict(entry)).items() if k != "outcome"}
    return body, str(entry.get("outcome") or "ok"), payload


def _create(session_id: str, seq: int, entry: Mapping[str, Any]) -> int:
    body, outcome, payload = _split(entry)
    row = Command.objects.create(session_id=session_id, seq=seq, entry=body, outcome=outcome, payload=payload)
    return int(row.id)


def _bump(row: Session, **fields: Any) -> bool:
    """The session's version moves from row.version to row.version + 1, or nothing happens (someone was first).
    Every command does this: one statement per set of fields, written once (the queryset's update compiled its SQL
    each time: 450 vs 90 us on SQLite), the values prepared by their fields as Django's update prepares them."""
    fields.setdefault("updated_at", timezone.now())
    if fields.get("running") is True:
        fields.setdefault("runner_at", fields["updated_at"])  # a run starts beating now (see runner.py)
    names = tuple(sorted(fields))
    values = [Session._meta.get_field(name).get_db_prep_save(fields[name], connection) for name in names]
    with connection.cursor() as cursor:
        cursor.execute(_bump_sql(names), [*values, row.pk, row.version])
        return bool(cursor.rowcount == 1)


@functools.lru_cache(maxsize=32)
def _bump_sql(names: tuple[str, ...]) -> str:
    quote = connection.ops.quote_name
    meta = Session._meta
    version = quote(meta.get_field("version").column)
    assignments = "".join(f", {quote(meta.get_field(name).column)} = %s" for name in names)
    return (
        f"UPDATE {quote(meta.db_table)} SET {version} = {version} + 1{assignments} "
        f"WHERE {quote(meta.pk.column)} = %s AND {version} = %s"
    )


def append(row: Session, entries: Sequence[Mapping[str, Any]], running: bool | None = None) -> list[int] | None:
    """Append entries (each with its outcome) after the log's last command. Returns the new rows' ids, or None
    when the session changed since `row` was read."""
    fields: dict[str, Any] = {"length": row.length + len(entries)}
    if running is not None:
        fields["running"] = running
    with transaction.atomic():
        if not _bump(row, **fields):
            return None
        ids = [_create(row.pk, row.length + i, entry) for i, entry in enumerate(entries)]
    return ids


def _forget_dropped(session_id: str) -> None:
    """Dropped rows beyond the newest `dropped_commands` go: "back" and "reset" over and over would otherwise grow
    a session's rows without end while its live log stays short (nothing reads a dropped row)."""
    kept = limits.limit("dropped_commands")
    oldest_kept = (
        Command.objects.filter(session_id=session_id, dropped=True)
        .order_by("-id")
        .values_list("id", flat=True)[kept : kept + 1]
        .first()
    )
    if oldest_kept is not None:
        Command.objects.filter(session_id=session_id, dropped=True, id__lte=oldest_kept).delete()


def truncate(row: Session, keep: int, running: bool | None = None) -> bool:
    """The log keeps its first `keep` commands; the rest are marked dropped."""
    fields: dict[str, Any] = {"length": keep}
    if running is not None:
        fields["running"] = running
    with transaction.atomic():
        if not _bump(row, **fields):
            return False
        Command.objects.filter(session_id=row.pk, dropped=False, seq__gte=keep).update(dropped=True)
        _forget_dropped(row.pk)
        StoredCheckpoint.objects.filter(session_id=row.pk, length__gt=keep).delete()
    return True


def replace(row: Session, entries: Sequence[Mapping[str, Any]], running: bool | None = None) -> list[int] | None:
    """A new log: every command dropped, then `entries` appended (reset, a re-run on fresh topics)."""
    fields: dict[str, Any] = {"length": len(entries)}
    if running is not None:
        fields["running"] = running
    with transaction.atomic():
        if not _bump(row, **fields):
            return None
        Command.objects.filter(session_id=row.pk, dropped=False).update(dropped=True)
        _forget_dropped(row.pk)
        StoredCheckpoint.objects.filter(session_id=row.pk).delete()
        ids = [_create(row.pk, i, entry) for i, entry in enumerate(entries)]
    return ids


def set_running(row: Session, running: bool) -> bool:
    with transaction.atomic():
        return _bump(row, running=running)


def copy_prefix(source_id: str, target_id: str, length: int) -> None:
    """The first `length` live commands of one session become the log of another (a fork), in one statement."""
    table = Command._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (session_id, seq, entry, outcome, created_at, dropped, payload) "
            f"SELECT %s, seq, entry, outcome, created_at, %s, payload FROM {table} "
            "WHERE session_id = %s AND dropped = %s AND seq < %s",
            [target_id, False, source_id, False, length],
        )


def row_ids(session_id: str) -> list[int]:
    return list(
        Command.objects.filter(session_id=session_id, dropped=False).order_by("seq").values_list("id", flat=True)
    )


# ------------------------------------------------------------------------------------------- Idempotency-Key
PENDING = 0


def reserve_answer(session_id: str, key: str) -> CommandAnswer | None:
    """The first request with `key` in this session reserves it (None: go ahead, then `keep_answer`); a request
    with a key already seen gets its row (its answer, or PENDING while the first one is still being carried out).
    The session keeps the newest `idempotency_keys` of them."""
    try:
        with transaction.atomic():
            CommandAnswer.objects.create(session_id=session_id, key=key, status=PENDING)
    except IntegrityError:
        return cast(CommandAnswer | None, CommandAnswer.objects.filter(session_id=session_id, key=key).first())
    kept = limits.limit("idempotency_keys")
    oldest_kept = (
        CommandAnswer.objects.filter(session_id=session_id)
        .order_by("-id")
        .values_list("id", flat=True)[kept : kept + 1]
        .first()
    )
    if oldest_kept is not None:
        CommandAnswer.objects.filter(session_id=session_id, id__lte=oldest_kept).delete()
    return None


def keep_answer(session_id: str, key: str, status: int, body: str) -> None:
    CommandAnswer.objects.filter(session_id=session_id, key=key).update(status=status, body=body[:4000])


def release_answer(session_id: str, key: str) -> None:
    """The first request failed before it had an answer (nothing of it was stored): the key may be tried again."""
    CommandAnswer.objects.filter(session_id=session_id, key=key, status=PENDING).delete()


def answer_of(session_id: str, key: str) -> tuple[int, str] | None:
    row = CommandAnswer.objects.filter(session_id=session_id, key=key).values_list("status", "body").first()
    return None if row is None else (int(row[0]), str(row[1]))
