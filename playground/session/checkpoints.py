"""Checkpoints stored with the command log: a session opens in any process, after a restart, for a watcher or at
`?at=k`, by thawing the nearest one and replaying the tail after it, whatever its history.

A process keeps its own checkpoints in memory (cache.py: every CHECKPOINT_EVERY commands, for scrubbing). Every
STORED_EVERY_MS of replay (the time applying the entries since the last stored one took, wherever they were
applied: commands, external clients' requests fed by a listener, a replay) one is also stored in the database with
the log (models.Checkpoint), so that no process ever replays more than about that much to reach the head, or a step
after it. A session keeps at most STORED_KEPT of them: past that, the one whose going leaves the smallest gap goes.

A stored checkpoint is the session's state only while the log's row at its length - 1 is still that row ("back" and
"reset" drop rows: those past the log's new end go with them) and while the code is the code that froze it: the
state is a pickle of the simulator's objects, so a checkpoint of another version of the code is not thawed at all
(`code_fingerprint`). The database is the server's own: what it holds is trusted as the code that wrote it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from playground.models import Checkpoint as StoredCheckpoint
from playground.session.backends import live_only
from playground.session.cache import freeze
from playground.session.live import Checkpoint, Live

log = logging.getLogger(__name__)

# Of replay since the last stored checkpoint: what opening a session replays at most (PLAYGROUND_STORED_CHECKPOINT_MS).
STORED_EVERY_MS = 500.0
STORED_KEPT = 12  # per session


@functools.cache
def code_fingerprint() -> str:
    """What froze a state: every source file of the project and the Python that ran it."""
    digest = hashlib.sha256(sys.version.encode())
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def charge(live: Live, spent_ms: float) -> None:
    """Applying entries to `live` took `spent_ms`: what a replay of them would take too."""
    live.replay_ms += spent_ms


def maybe_store(live: Live) -> bool:
    """Store a checkpoint of `live` at its length when STORED_EVERY_MS of replay has passed since the last one (never
    of a moment, nor of a session whose clients' inputs are not all in its log yet)."""
    every_ms = float(getattr(settings, "PLAYGROUND_STORED_CHECKPOINT_MS", STORED_EVERY_MS))
    if live.moment is not None or live.replica or live.replay_ms < every_ms or not live.row_ids:
        return False
    if live.ext_inputs or live.pending or live_only(live.backend_name):
        return False
    length = live.length
    if (length, live.row_ids[length - 1]) in index(live):
        live.replay_ms = 0.0  # another process stored it first: this one is replaying what that one did
        return False
    cp = live.checkpoints.get(length)
    try:
        if cp is None:
            cp = live.checkpoint(freeze(live.backend))
        blob = pack(cp)
    except Exception:
        log.warning("session %s: no checkpoint stored at %d", live.session_id, length, exc_info=True)
        live.replay_ms = 0.0
        return False
    _insert(live.session_id, length, live.row_ids[length - 1], blob)
    live.replay_ms = 0.0
    live.stored_checkpoints = None  # read again when wanted
    _thin(live.session_id)
    return True


def pack(cp: Checkpoint) -> bytes:
    """A stored checkpoint's bytes: the length of the pickle of what the session derived (4 bytes), that pickle, then
    the frozen state as it is. Pickling the state inside would copy it again while the pickler's buffer grows (36 MiB
    at once for a flooded session's 24 MiB, tracemalloc); this copies it once."""
    derived = pickle.dumps(dataclasses.replace(cp, state=b""), protocol=5)
    return b"".join((len(derived).to_bytes(4, "big"), derived, cp.state))


def unpack(blob: Any) -> Checkpoint | None:
    """What `pack` wrote (bytes, or the database's memoryview), or None when it is not a checkpoint."""
    view = memoryview(blob)
    n = int.from_bytes(view[:4], "big")
    derived = pickle.loads(view[4 : 4 + n])
    return dataclasses.replace(derived, state=bytes(view[4 + n :])) if isinstance(derived, Checkpoint) else None


def _insert(session_id: str, length: int, last_row: int, blob: bytes) -> None:
    """StoredCheckpoint.objects.create, the state sent as it is. On PostgreSQL Django binds parameters on the client,
    spelling a bytea as a hex literal inside the statement: six times the state's size at once (144 MiB for a
    flooded session's 24 MiB, tracemalloc), in the process that serves its page. A cursor that binds on the server
    sends it as a binary parameter instead (psycopg's %b), in the request's own transaction."""
    fields = {"session_id": session_id, "length": length, "last_row": last_row, "code": code_fingerprint()}
    if connection.vendor != "postgresql":
        StoredCheckpoint.objects.create(**fields, state=blob, size=len(blob))
        return
    import psycopg

    connection.ensure_connection()
    table = connection.ops.quote_name(StoredCheckpoint._meta.db_table)
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(
            f"INSERT INTO {table} (session_id, length, last_row, code, state, size, created_at) "
            "VALUES (%s, %s, %s, %s, %b, %s, %s)",
            [*fields.values(), blob, len(blob), timezone.now()],
        )


def _thin(session_id: str) -> None:
    rows = list(
        StoredCheckpoint.objects.filter(session_id=session_id).order_by("length", "id").values_list("id", "length")
    )
    while len(rows) > STORED_KEPT:
        # the newest stays (opening the head thaws it); of the others, the one between the closest neighbours goes
        gaps = [(rows[i + 1][1] - (rows[i - 1][1] if i else 0), i) for i in range(len(rows) - 1)]
        _gap, i = min(gaps)
        StoredCheckpoint.objects.filter(pk=rows[i][0]).delete()
        del rows[i]


def index(live: Live) -> list[tuple[int, int]]:
    """(length, last row) of the session's stored checkpoints of this code, oldest first (kept on the Live until one
    is stored)."""
    if live.stored_checkpoints is None:
        live.stored_checkpoints = list(
            StoredCheckpoint.objects.filter(session_id=live.session_id, code=code_fingerprint())
            .order_by("length")
            .values_list("length", "last_row")
        )
    return live.stored_checkpoints


def nearest(live: Live, entries: int, after: int) -> int | None:
    """The length of the latest stored checkpoint at or before `entries` and after `after` that is still on `live`'s
    log, or None."""
    best = None
    for length, last_row in index(live):
        if after < length <= entries and length <= live.length and live.row_ids[length - 1] == last_row:
            best = length
    return best


def load(session_id: str, length: int, last_row: int) -> Checkpoint | None:
    """The stored checkpoint at `length` whose last row is `last_row`, thawed as far as live.Checkpoint (its backend
    stays frozen until restored), or None."""
    started = time.perf_counter()
    blob = (
        StoredCheckpoint.objects.filter(
            session_id=session_id, length=length, last_row=last_row, code=code_fingerprint()
        )
        .values_list("state", flat=True)
        .first()
    )
    if blob is None:
        return None
    try:
        cp: Any = unpack(blob)
    except Exception:
        log.warning("session %s: the checkpoint stored at %d does not load", session_id, length, exc_info=True)
        return None
    log.debug("session %s: checkpoint at %d read in %.1f ms", session_id, length, (time.perf_counter() - started) * 1e3)
    return cp if isinstance(cp, Checkpoint) else None


def latest_valid(session_id: str, log_length: int, *, after: int = 0) -> tuple[int, int] | None:
    """(length, last row) of the newest stored checkpoint of this code past `after` entries whose last row is still
    live in the log of `log_length` entries, or None (the caller has no Live of that log: it checks against the
    database)."""
    from playground.session import store

    candidates = list(
        StoredCheckpoint.objects.filter(
            session_id=session_id, code=code_fingerprint(), length__gt=after, length__lte=log_length
        )
        .order_by("-length")
        .values_list("length", "last_row")[:STORED_KEPT]
    )
    if not candidates:
        return None
    live_ids = store.ids_at(session_id, [length - 1 for length, _row in candidates])
    for length, last_row in candidates:
        if live_ids.get(length - 1) == last_row:
            return length, last_row
    return None


def copy_for_fork(source_id: str, target_id: str, length: int) -> None:
    """A fork of the first `length` entries takes the source's stored checkpoints within them, each pointed at the
    fork's own copy of its last row. Copied inside the database: a flooded session's twelve states (24 MiB each) never
    pass through the process that forks it."""
    from playground.session import store

    rows = list(
        StoredCheckpoint.objects.filter(session_id=source_id, length__lte=length, code=code_fingerprint())
        .order_by("length")
        .values_list("id", "length", "last_row")
    )
    if not rows:
        return
    source_ids = store.ids_at(source_id, [n - 1 for _id, n, _row in rows])
    target_ids = store.ids_at(target_id, [n - 1 for _id, n, _row in rows])
    kept = [(pk, target_ids[n - 1]) for pk, n, row in rows if source_ids.get(n - 1) == row and n - 1 in target_ids]
    if not kept:
        return
    table = connection.ops.quote_name(StoredCheckpoint._meta.db_table)
    cases = " ".join("WHEN %s THEN %s" for _ in kept)
    ids = ", ".join("%s" for _ in kept)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (session_id, length, last_row, code, state, size, created_at) "
            f"SELECT %s, length, CASE id {cases} END, code, state, size, %s FROM {table} WHERE id IN ({ids})",
            [target_id, *(x for pair in kept for x in pair), now, *(pk for pk, _row in kept)],
        )
