"""The live cache of this process: the sessions' heads (`Live`), their simulator checkpoints, and recent moments.

Checkpoints: after every CHECKPOINT_EVERY commands of a simulated session (and after every SQL_CHECKPOINT_MS of its
database's statements), the backend's whole state is kept as compressed bytes (cloudpickle: the simulator's
scheduled callbacks are closures, which plain pickle refuses), so that reaching step k ("back", scrubbing, `?at=k`,
a fork) replays at most the commands since the nearest checkpoint instead of the whole log. They are bounded in memory (PLAYGROUND_CHECKPOINT_MB for the process): a
session holds at most a quarter of it (its oldest go first), the least recently used sessions lose theirs first, and
rebuild them the next time they replay (from the checkpoints stored with the log, session/checkpoints.py).

Moments: the last few read-only states built for scrubbing, so that dragging forward from step k to k+1 applies
one command instead of restoring a checkpoint again.
"""

from __future__ import annotations

import gc
import io
import logging
import threading
import time
import zlib
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import cloudpickle
from django.conf import settings

if TYPE_CHECKING:
    from playground.session.live import Live

log = logging.getLogger(__name__)

# Scrubbing to step k thaws the nearest checkpoint and replays up to CHECKPOINT_EVERY - 1 commands after it (about
# 0.2 ms each at 10,000 commands): 50 keeps a scrub's replay under ~10 ms for a freeze every 50 commands.
CHECKPOINT_EVERY = 50
SQL_CHECKPOINT_MS = 50.0
SESSION_SHARE = 0.25  # of PLAYGROUND_CHECKPOINT_MB one session's checkpoints may hold


class _Pickler(cloudpickle.Pickler):  # type: ignore[misc]  # cloudpickle ships no types: its Pickler is Any here
    # cloudpickle's dispatch table is a ChainMap, and its lookup (once per object of a 10,000-command session)
    # is the bulk of a dump; a plain dict answers the same.
    def __init__(self, file: Any) -> None:
        super().__init__(file, protocol=5)
        self.dispatch_table: dict[type, Any] = dict(self.dispatch_table)


class _Compressing:
    """What the pickler writes to: compressed as it comes, so that the pickle itself (as big as the state: a flooded
    session's records) is never held whole beside its compressed copy."""

    def __init__(self) -> None:
        self._zlib = zlib.compressobj(1)
        # one buffer grown in place, whose bytes getvalue() hands over without a copy: a list of parts joined at the
        # end held the state twice at once (48 MiB for a flooded session's 24 MiB, tracemalloc)
        self._out = io.BytesIO()

    def write(self, data: Any) -> int:
        self._out.write(self._zlib.compress(data))
        return len(data)

    def getvalue(self) -> bytes:
        self._out.write(self._zlib.flush())
        return self._out.getvalue()


class _Decompressing(io.RawIOBase):
    """What the unpickler reads from: decompressed as it is read (the state's pickle is never held whole)."""

    def __init__(self, data: bytes) -> None:
        self._zlib = zlib.decompressobj()
        self._data = memoryview(data)
        self._pos = 0
        self._out = bytearray()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while len(self._out) < len(buffer) and (self._pos < len(self._data) or self._zlib.unconsumed_tail):
            chunk = self._zlib.unconsumed_tail or self._data[self._pos : self._pos + 65536]
            if not self._zlib.unconsumed_tail:
                self._pos += len(chunk)
            self._out += self._zlib.decompress(chunk, max(len(buffer) - len(self._out), 65536))
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        del self._out[:n]
        return n


def freeze(backend: Any) -> bytes:
    """The backend's whole state, pickled and compressed (zlib, level 1) in one pass."""
    out = _Compressing()
    enabled = gc.isenabled()
    gc.disable()  # a dump allocates nothing worth collecting; collections in it only cost time
    try:
        _Pickler(out).dump(backend)
    finally:
        if enabled:
            gc.enable()
    return out.getvalue()


def thaw(data: bytes) -> Any:
    import pickle

    enabled = gc.isenabled()
    gc.disable()  # tens of thousands of new objects, none garbage: the collector would only walk them
    try:
        return pickle.load(io.BufferedReader(_Decompressing(data), 1 << 16))
    finally:
        if enabled:
            gc.enable()


def checkpoint_budget_bytes() -> int:
    return int(float(getattr(settings, "PLAYGROUND_CHECKPOINT_MB", 256)) * 1024 * 1024)


def serving(live: Live) -> bool:
    """Whether this process feeds the session's external clients: its backend holds what the log does not yet."""
    from playground.session.external import OWNER

    return bool(live.pending or live.ext_inputs or (live.listen and live.listen.get("owner") == OWNER))


def _checker(live: Live, length: int) -> bytes | None:
    """The session's anomaly checker at this checkpoint, frozen (session/history.py), or None."""
    from playground.session.history import frozen_checker

    try:
        return frozen_checker(live, freeze)
    except Exception:
        log.warning("session %s: no anomaly checker kept at %d", live.session_id, length, exc_info=True)
        return None


class Cache:
    """Live sessions of this process, least recently used first; bounded in count and in checkpoint bytes."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, Live] = OrderedDict()
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()
        self._moments: OrderedDict[str, Live] = OrderedDict()
        self.on_close: Any = None  # set by replay.py: how a dropped Live releases its backend

    def lock(self, session_id: str) -> threading.RLock:
        with self._guard:
            return self._locks.setdefault(session_id, threading.RLock())

    def get(self, session_id: str) -> Live | None:
        self.reap_idle()
        with self._guard:
            live = self._items.get(session_id)
            if live is not None:
                self._items.move_to_end(session_id)
                live.last_used = time.monotonic()
            return live

    def peek(self, session_id: str) -> Live | None:
        """The session if this process holds it, without closing idle real-cluster sessions on the way (a caller
        outside Django's threads: the listeners' loop)."""
        with self._guard:
            return self._items.get(session_id)

    def put(self, live: Live) -> None:
        size = int(getattr(settings, "PLAYGROUND_LIVE_SESSIONS", 200))
        evicted: list[Live] = []
        with self._guard:
            live.last_used = time.monotonic()
            old = self._items.get(live.session_id)
            if old is not None and old is not live:
                evicted.append(old)
            self._items[live.session_id] = live
            self._items.move_to_end(live.session_id)
            # a session whose external clients this process serves is kept: its backend holds what they sent
            # that the log does not hold yet (session/listener.py)
            for sid in [s for s, lv in self._items.items() if not serving(lv)][: max(0, len(self._items) - size)]:
                evicted.append(self._items.pop(sid))
        for old in evicted:
            self._close(old)

    def items(self) -> list[Live]:
        with self._guard:
            return list(self._items.values())

    def take(self, predicate: Any) -> list[Live]:
        """Remove and return the Lives the predicate picks (the caller closes them)."""
        with self._guard:
            chosen = [sid for sid, lv in self._items.items() if predicate(lv)]
            return [self._items.pop(sid) for sid in chosen]

    def reap_idle(self) -> None:
        """A real-cluster session nobody touched for PLAYGROUND_KAFKA_IDLE_S has ended: close it (its topics are
        deleted); it shows as detached afterwards and can be re-run."""
        from playground.session.backends import live_only

        idle = float(getattr(settings, "PLAYGROUND_KAFKA_IDLE_S", 3600))
        now = time.monotonic()
        for lv in self.take(lambda lv: live_only(lv.backend_name) and not lv.detached and now - lv.last_used > idle):
            log.info("session %s: idle for %.0f s, closing its real-cluster backend", lv.session_id, now - lv.last_used)
            self._close(lv)

    def evict(self, session_id: str) -> None:
        with self._guard:
            live = self._items.pop(session_id, None)
            self._moments.pop(session_id, None)
        if live is not None:
            self._close(live)

    def clear(self) -> None:
        with self._guard:
            items = list(self._items.values())
            self._items.clear()
            self._moments.clear()
        for live in items:
            self._close(live)

    def _close(self, live: Live) -> None:
        if self.on_close is not None:
            self.on_close(live)

    # ---- checkpoints ----------------------------------------------------------------------------------------
    def keep_checkpoint(self, live: Live, length: int) -> None:
        """Freeze the backend of `live` (which reflects its first `length` commands) if a checkpoint is due: every
        CHECKPOINT_EVERY commands, and after SQL_CHECKPOINT_MS of the scenario database's statements since the
        last one, so that reaching a step never runs more than that of SQL again (a session's statements may take
        a second in all: without these, each `?at=` after them would pay it again)."""
        if length == 0 or length in live.checkpoints or live.moment is not None:
            return
        sql_ms = float(getattr(getattr(live.backend, "db", None), "spent_ms", 0.0))
        if length % CHECKPOINT_EVERY and sql_ms - live.sql_checkpointed_ms < SQL_CHECKPOINT_MS:
            return
        try:
            state = freeze(live.backend)
        except Exception:
            log.warning(
                "session %s: no checkpoint at %d (the backend cannot be frozen)", live.session_id, length, exc_info=True
            )
            return
        live.checkpoints[length] = live.checkpoint(state, _checker(live, length))
        live.sql_checkpointed_ms = sql_ms
        self._trim_checkpoints(keep=live.session_id)

    def _trim_checkpoints(self, keep: str) -> None:
        budget = checkpoint_budget_bytes()
        with self._guard:
            lives = list(self._items.values())
            own = self._items.get(keep)
        if own is not None:
            # one session holds at most SESSION_SHARE of the budget, its oldest going first: a session that grows
            # fast (an application flooding it) must not take the checkpoints every other session scrubs with
            share = sum(cp.size for cp in own.checkpoints.values())
            for length in sorted(own.checkpoints)[:-1]:
                if share <= budget * SESSION_SHARE:
                    break
                share -= own.checkpoints.pop(length).size
        total = sum(cp.size for lv in lives for cp in lv.checkpoints.values())
        for lv in lives:  # least recently used first
            if total <= budget:
                break
            if lv.session_id == keep or not lv.checkpoints:
                continue
            total -= sum(cp.size for cp in lv.checkpoints.values())
            lv.checkpoints = {}

    def checkpoint_bytes(self) -> int:
        return sum(cp.size for lv in self.items() for cp in lv.checkpoints.values())

    # ---- moments --------------------------------------------------------------------------------------------
    def moment(self, session_id: str) -> Live | None:
        with self._guard:
            return self._moments.get(session_id)

    def keep_moment(self, live: Live) -> None:
        size = int(getattr(settings, "PLAYGROUND_MOMENTS", 8))
        with self._guard:
            self._moments[live.session_id] = live
            self._moments.move_to_end(live.session_id)
            while len(self._moments) > size:
                self._moments.popitem(last=False)

    def drop_moment(self, session_id: str) -> None:
        with self._guard:
            self._moments.pop(session_id, None)


CACHE = Cache()
