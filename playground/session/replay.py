"""Rebuilding a session from its log: catching a process up, restoring step k from a checkpoint, moments.

Any process rebuilds a simulated session by replaying its log (the simulator is deterministic): before it applies or
renders anything it catches up, applying only the rows it has not applied yet. When the log was cut under it
("back" or "reset" in another process), it restores the nearest checkpoint still on the log and replays from there.

A *moment* is step k of a session, read-only: what a viewer scrubbing the time slider (or opening `?at=k`) sees.
It is built beside the head, never by changing it: from the nearest checkpoint at or before k, or by moving the
last moment built for that session forward when that is shorter. A real-cluster session cannot be rewound; its
moments are the simulator's replay of its log (the page says so).
"""

from __future__ import annotations

import copy
import logging
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from django.utils.translation import gettext as _

from playground.engine.backend import BackendError, ProfileError
from playground.engine.spec import ActorSpec, ClusterSpec
from playground.models import Command, Session
from playground.session import checkpoints, external, store
from playground.session.backends import DetachedBackend, build, cluster_problem, live_only
from playground.session.cache import CACHE, CHECKPOINT_EVERY, serving, thaw
from playground.session.history import MOMENT_CHECKED_MAX
from playground.session.live import (
    CommandError,
    Live,
    actor_from_entry,
    free_play_actors,
    free_play_cluster,
    is_command,
    step_from_entry,
)

log = logging.getLogger(__name__)


def _close(live: Live) -> None:
    try:
        live.backend.close()
    except Exception:
        log.exception("closing the backend of session %s", live.session_id)


CACHE.on_close = _close


def spec_of(row: Session) -> tuple[Any, ClusterSpec, dict[str, ActorSpec]]:
    if row.scenario_id:
        from playground.scenario import ScenarioError, parsed

        try:
            # its steps' outcomes and its expect block as stated for the session's profile
            scenario = parsed(row.scenario_source, f"{row.scenario_id}.yaml").for_profile(row.profile)
        except ScenarioError as exc:
            raise CommandError(
                _("This session's scenario no longer loads: %(e)s") % {"e": exc.said(_)}, status=422
            ) from exc
        return scenario, scenario.cluster, dict(scenario.actors)
    return None, free_play_cluster(), free_play_actors()


def owner_of(row: Session) -> str:
    """Whose per-client budgets the session spends (its commands, its reconciliation query): its creator's key."""
    return row.client_key or f"session:{row.pk}"


def _origin(row: Session) -> dict[str, Any] | None:
    return {"session": row.forked_from_id, "at": row.forked_at} if row.forked_at is not None else None


def _seat(row: Session) -> dict[str, Any] | None:
    return store.seat_of(row.id) if row.pk and not row._state.adding else None


def fresh(row: Session, *, creating: bool = True, backend_name: str | None = None, backend: Any = None) -> Live:
    """A new backend for the session's scenario (or free play), nothing applied yet (or `backend`, thawed)."""
    scenario, cluster, actors = spec_of(row)
    name = backend_name or row.backend
    profile = row.profile
    try:
        if backend is None:
            database = scenario.database if scenario is not None else None
            backend = build(name, cluster, actors, row.seed, database, profile)
    except ProfileError as exc:  # what is missing for this profile, said as it is: trying again will not help
        raise CommandError(
            _("%(profile)s cannot run here: %(e)s.") % {"profile": profile.label, "e": exc}, status=422
        ) from exc
    except BackendError as exc:
        log.warning("session %s: the %s backend did not start: %s", row.id, name, exc)
        raise CommandError(cluster_problem(exc, created=creating), status=503) from exc
    live = Live(
        row.id,
        name,
        row.seed,
        scenario,
        cluster,
        actors,
        backend,
        origin=_origin(row),
        seat=_seat(row),
        profile=profile,
    )
    live.owner = owner_of(row)
    return live


def apply_entry(live: Live, entry: Mapping[str, Any]) -> str:
    """Apply one logged entry to the backend (an actor added, or a step) and return the outcome it gives now."""
    if external.is_external(entry):
        return external.apply(live.backend, entry, live.length)  # what external clients did (session/external.py)
    if not is_command(entry):
        return "ok"  # an exercise's answer or hint: nothing for the backend
    external.before_step(live.backend, entry, live.length)  # the time that passed while clients were connected
    if "add" in entry:
        spec = actor_from_entry(entry["add"])
        live.backend.add_actor(spec)
        live.actors[spec.name] = spec
        return "ok"
    step = step_from_entry(entry["step"], int(entry.get("n", 0)))
    elapsed = int(entry.get("elapsed_ms") or 0)
    pass_time = getattr(live.backend, "pass_time", None)
    if elapsed > 0 and pass_time is not None and not step.is_note:
        pass_time(elapsed)  # the time the user took before it, as recorded (see run_entry)
    outcome = live.backend.apply(step)
    external.after_step(live.backend)
    return outcome


def replay(live: Live, entries: Iterable[tuple[dict[str, Any], int]]) -> None:
    """Apply logged entries (entry with outcome, row id; an external clients' entry with its payload) on top of
    `live`, taking checkpoints on the way: in memory, and stored with the log every STORED_EVERY_MS of replay."""
    for entry, row_id in entries:
        started = time.perf_counter()
        outcome = apply_entry(live, entry)
        checkpoints.charge(live, (time.perf_counter() - started) * 1000)
        if entry.get("outcome") not in (None, outcome):
            label = next(iter(entry["step"])) if isinstance(entry.get("step"), dict) else entry.get("step", "add")
            log.warning(
                "session %s replay: %s gave %s, the log says %s", live.session_id, label, outcome, entry["outcome"]
            )
        live.record(entry, row_id)
        CACHE.keep_checkpoint(live, live.length)
        checkpoints.maybe_store(live)


def _rows(rows: Iterable[Command]) -> Iterator[tuple[dict[str, Any], int]]:
    """The rows as entries to replay: an external clients' entry with its payload."""
    for row in rows:
        entry = row.as_entry()
        if external.EXT in entry and "payload" not in row.get_deferred_fields():
            entry[external.PAYLOAD] = bytes(row.payload)
        yield entry, row.id


def with_payloads(entries: Sequence[dict[str, Any]], row_ids: Sequence[int]) -> Iterator[tuple[dict[str, Any], int]]:
    """Entries of a log in memory (which holds no payloads) to replay: the external clients' ones get theirs from
    their rows."""
    wanted = [row_id for entry, row_id in zip(entries, row_ids) if external.EXT in entry]
    found = store.payloads(wanted) if wanted else {}
    for entry, row_id in zip(entries, row_ids):
        if external.EXT in entry and row_id in found:
            yield {**entry, external.PAYLOAD: found[row_id]}, row_id
        else:
            yield entry, row_id


# --------------------------------------------------------------------------------------------- restoring step k
def _nearest_checkpoint(live: Live, k: int) -> int:
    return max((c for c in live.checkpoints if c <= k), default=0)


def restore(head: Live, k: int, *, as_moment: bool = False, checked: bool = False) -> Live:
    """A new Live at step k of `head`'s log: the nearest checkpoint at or before k (this process's, or one stored with
    the log), then the commands after it. `head` is not changed. Only for sessions the simulator (or a fake) replays.
    A moment takes no checkpoints; `checked`: it goes on from the anomaly checker the checkpoint froze, if any
    (session/history.py)."""
    c = _nearest_checkpoint(head, k)
    cp = head.checkpoints.get(c)
    stored = checkpoints.nearest(head, k, c) if not (live_only(head.backend_name) or head.replica) else None
    if stored is not None:
        loaded = checkpoints.load(head.session_id, stored, head.row_ids[stored - 1])
        if loaded is not None:
            c, cp = stored, loaded
    database = head.scenario.database if head.scenario is not None else None
    backend = (
        thaw(cp.state)
        if cp
        else build(head.backend_name, head.cluster, _declared_actors(head), head.seed, database, head.profile)
    )
    live = Live(
        head.session_id,
        head.backend_name,
        head.seed,
        head.scenario,
        head.cluster,
        _declared_actors(head),
        backend,
        version=head.version,
        origin=head.origin,
        moment=k if as_moment else None,
        seat=head.seat,
        profile=head.profile,
    )
    live.owner = head.owner
    if cp:
        live.resume(head, c, cp)
        if checked and cp.checker is not None:
            live.anomalies = thaw(cp.checker)
    if as_moment:
        # Read-only, and nobody serves it: once the Live is let go (the next scrub keeps another moment), nothing
        # reaches its backend any more. Discarded then, it is freed at once; left to the collector, every scrub of a
        # 10,000-command session left ~40,000 objects for it, and its full passes (~150 ms) fell into later requests.
        weakref.finalize(live, backend.discard)
    else:
        live.checkpoints = {p: data for p, data in head.checkpoints.items() if p <= k}
    replay(live, with_payloads(head.commands[c:k], head.row_ids[c:k]))
    return live


def _declared_actors(live: Live) -> dict[str, ActorSpec]:
    """The actors the session starts with (the scenario's, or free play's), before any was added."""
    if live.scenario is not None:
        return dict(live.scenario.actors)
    return free_play_actors()


# -------------------------------------------------------------------------------------------------- catching up
def _catch_up_live_only(row: Session) -> Live:
    """A real-cluster session: the live backend of this process if it is current, else a detached view (never a
    replay against the cluster)."""
    live = CACHE.get(row.id)
    reason = "not_here"
    if live is not None and not live.detached:
        if live.version == row.version:
            live.running = row.running
            return live
        # The log changed in another process (a re-run or a reset there): that process holds the cluster state now.
        CACHE.evict(row.id)  # closes ours: our topics are deleted
        live, reason = None, "moved"
    if live is not None and live.version == row.version:
        live.running = row.running
        return live
    if live is not None:
        reason = live.detached
    live = detached(row, reason)
    CACHE.put(live)
    return live


def detached(row: Session, reason: str) -> Live:
    """What another process shows of a real-cluster session: its actors and its stored log, no cluster state."""
    scenario, cluster, actors = spec_of(row)
    entries = list(_rows(store.live_rows(row.id)))
    for entry, _row_id in entries:
        if "add" in entry:
            spec = actor_from_entry(entry["add"])
            actors[spec.name] = spec
    live = Live(
        row.id,
        row.backend,
        row.seed,
        scenario,
        cluster,
        actors,
        DetachedBackend(cluster, actors, backend_name=row.backend, profile=row.profile),
        version=row.version,
        running=row.running,
        detached=reason or "not_here",
        origin=_origin(row),
        profile=row.profile,
    )
    live.owner = owner_of(row)
    for entry, row_id in entries:
        live.record(entry, row_id)
    return live


def _rebuilt(live: Live, row: Session) -> Live:
    """Our head's log was cut under us (another process went back or reset): restore the latest checkpoint that is
    still on the log, then replay what follows it."""
    valid = store.ids_at(row.id, [c - 1 for c in live.checkpoints if c <= row.length])
    usable = [c for c in live.checkpoints if c <= row.length and valid.get(c - 1) == live.row_ids[c - 1]]
    c = max(usable, default=0)
    CACHE.evict(row.id)
    if c:
        base = restore(live, c)
    else:
        base = _from_stored(row) or fresh(row)
        c = base.length
    base.origin = _origin(row)
    replay(base, _rows(store.live_rows(row.id, start=c)))
    return base


def _from_stored(row: Session, found: tuple[int, int] | None = None) -> Live | None:
    """The session at its newest checkpoint stored with the log (or at `found`; None: none is, or none thaws): the
    backend thawed, the log before it read (without payloads) and recorded as it was when the checkpoint was taken."""
    if not row.length:
        return None
    found = found or checkpoints.latest_valid(row.id, row.length)
    if found is None:
        return None
    length, last_row = found
    cp = checkpoints.load(row.id, length, last_row)
    if cp is None:
        return None
    try:
        live = fresh(row, backend=thaw(cp.state))
    except Exception:
        log.warning("session %s: the checkpoint stored at %d does not thaw", row.id, length, exc_info=True)
        return None
    for entry, row_id in _rows(store.live_rows(row.id, stop=length, payloads=False)):
        live.record(entry, row_id)
    live.actors = dict(cp.actors)
    live.derived = copy.deepcopy(dict(cp.derived))
    live.sql_checkpointed_ms = float(getattr(getattr(live.backend, "db", None), "spent_ms", 0.0))
    live.checkpoints = {length: cp}
    return live


def catch_up(row: Session) -> Live:
    """The live session for a database row, replaying whatever this process has not applied yet."""
    if live_only(row.backend):
        return _catch_up_live_only(row)
    live = CACHE.get(row.id)
    if live is not None and live.version == row.version:
        live.running, live.listener_at = row.running, _beat(row)
        return live
    try:
        # Another process went on and stored a checkpoint past our position: thawing it bounds what we replay as it
        # bounds a first opening (ours could be thousands of requests behind: the whole log, after a kill -9 there).
        ahead = (
            None if live is None or serving(live) else checkpoints.latest_valid(row.id, row.length, after=live.length)
        )
        if ahead is not None:
            CACHE.evict(row.id)
            live = None
        if live is None:
            live = _from_stored(row, ahead)
            if live is not None:
                replay(live, _rows(store.live_rows(row.id, start=live.length)))
            else:
                live = fresh(row)
                if row.length:  # a session with no command yet has no row to read
                    replay(live, _rows(store.live_rows(row.id)))
        else:
            # The row at our last position tells whether our prefix is still the log (it was only appended to).
            start = max(0, live.length - 1)
            rows = store.live_rows(row.id, start=start)
            if live.length and (not rows or rows[0].id != live.row_ids[-1]):
                live = _rebuilt(live, row)
            else:
                replay(live, _rows(rows[1:] if live.length else rows))
            live.stored_checkpoints = None  # the other process may have stored some: read them again when wanted
    except Exception:
        CACHE.evict(row.id)
        if live is not None:
            _close(live)  # a half-replayed backend is dropped (closing twice is harmless)
        raise
    live.version = row.version
    live.running, live.listener_at = row.running, _beat(row)
    CACHE.put(live)
    return live


def _beat(row: Session) -> float | None:
    return row.listener_at.timestamp() if row.listener_at is not None else None


def load(session_id: str) -> Live:
    """The session as it is now in the database (replayed in this process if needed)."""
    with CACHE.lock(session_id):
        return catch_up(store.read(session_id))


def exists(session_id: str) -> bool:
    return bool(session_id) and Session.objects.filter(pk=session_id).exists()


# --------------------------------------------------------------------------------------------------- moments
def _replica(head: Live, row: Session) -> Live:
    """What moments of a session are built from: the head itself (simulated sessions), or for a real-cluster
    session the simulator's replay of its log, kept as a moment of its own (with checkpoints) per log version."""
    if not live_only(head.backend_name):
        return head
    shadow = CACHE.moment(f"{head.session_id}/sim")
    if shadow is None or shadow.version != head.version:
        shadow = fresh(row, backend_name="sim")
        shadow.session_id = f"{head.session_id}/sim"
        shadow.replica = True  # the simulator's replay of a real cluster's log: none of its checkpoints is stored
        replay(shadow, zip(head.commands, head.row_ids))
        shadow.version = head.version
        CACHE.keep_moment(shadow)
    return shadow


def _same_prefix(moment: Live, source: Live) -> bool:
    """Whether the log up to the moment's step is still the source's (it only grew since, or nothing changed)."""
    n = moment.length
    return n == 0 or (n <= source.length and moment.row_ids[n - 1] == source.row_ids[n - 1])


def moment(session_id: str, k: int) -> Live:
    """Step k of the session (0 = before any command; see live.py for what a step is), read-only. The last step is
    the head itself, except for a real-cluster session (its moments are always the simulator's replay)."""
    with CACHE.lock(session_id):
        row = store.read(session_id)
        head = catch_up(row)
        if not 0 <= k <= head.step_count:
            raise CommandError(
                _("Step %(k)s is not in this session: it has steps 0 to %(n)d.") % {"k": k, "n": head.step_count},
                status=404,
            )
        if k == head.step_count and not live_only(head.backend_name):
            return head
        source = _replica(head, row)
        entries = source.entries_at(k)
        last = CACHE.moment(session_id)
        if (
            last is not None
            and last.moment is not None
            and last.length <= entries <= source.length
            and entries - last.length < entries - _nearest_checkpoint(source, entries)
            and _same_prefix(last, source)
        ):
            at = last
            replay(at, zip(source.commands[at.length : entries], source.row_ids[at.length : entries]))
        else:
            at = restore(source, entries, as_moment=True, checked=k <= MOMENT_CHECKED_MAX)
        at.moment, at.head_length, at.version = k, head.step_count, head.version
        at.running, at.detached, at.replica = False, "", source is not head
        at.session_id = session_id
        CACHE.keep_moment(at)
        return at


__all__ = [
    "CHECKPOINT_EVERY",
    "apply_entry",
    "catch_up",
    "detached",
    "exists",
    "fresh",
    "load",
    "moment",
    "replay",
    "restore",
    "spec_of",
]
