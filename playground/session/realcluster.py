"""Real-cluster sessions: starting again on fresh topics (reset, re-run) and ending one (its topics deleted).

A real cluster's state cannot be rebuilt from the log behind the user's back (see backends.py), so these replace
the backend: a fresh one (new topics under a new prefix), the kept entries run again against the cluster and their
new outcomes stored, the old backend closed (its topics deleted). If the cluster does not answer, nothing changes
and the user can try again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext as _

from playground.engine.backend import BackendError
from playground.session import signals, store
from playground.session.backends import cluster_problem, detached_message, live_only
from playground.session.cache import CACHE
from playground.session.live import CommandError, Live, run_entry
from playground.session.replay import _close, catch_up, detached, fresh

log = logging.getLogger(__name__)


def _publish(live: Live) -> None:
    signals.changed.send(sender=Live, live=live, langs=None)


def run_again(live: Live, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run logged entries again on a fresh backend; the entries with the outcomes they gave this time. On failure
    the backend is closed and the user gets a sentence (503 for the cluster, 422 for a bug)."""
    try:
        return [run_entry(live, entry) for entry in entries]
    except BackendError as exc:
        _close(live)
        log.warning("session %s: re-running on the cluster failed: %s", live.session_id, exc)
        raise CommandError(cluster_problem(exc), status=503) from exc
    except Exception as exc:
        _close(live)
        log.exception("session %s: re-running failed", live.session_id)
        raise CommandError(_("The backend failed on this command: %(e)s") % {"e": exc}, status=422) from exc


def restart(
    session_id: str, entries_of: Callable[[Live], list[dict[str, Any]]], *, need_detached: bool = False
) -> Live:
    with CACHE.lock(session_id):
        row = store.read(session_id)
        old = catch_up(row)
        if need_detached and not old.detached:
            raise CommandError(_("This session is live here already: nothing to re-run."), status=409)
        live = fresh(row, creating=False)  # an unreachable cluster: CommandError 503, nothing changed
        entries = run_again(live, entries_of(old))
        ids = store.replace(row, entries, running=False)
        if ids is None:
            _close(live)
            raise CommandError(_("The session is busy; try again."), status=409)
        for entry, row_id in zip(entries, ids):
            live.record(entry, row_id)
        live.version, live.running = row.version + 1, False
        CACHE.evict(session_id)  # the old backend, if this process had one: closed, its topics deleted
        CACHE.put(live)
    _publish(live)
    return live


def rerun(session_id: str) -> Live:
    """A detached real-cluster session, live again here: its whole log re-run on fresh topics (the user asked)."""
    if not live_only(store.read(session_id).backend):
        raise CommandError(_("Only a real-cluster session is re-run: this one replays by itself."), status=409)
    return restart(session_id, lambda live: list(live.commands), need_detached=True)


def end(session_id: str) -> Live:
    """End a real-cluster session: close its backend (its topics and groups are deleted). The log stays; the
    session shows as ended and can be re-run or reset."""
    with CACHE.lock(session_id):
        row = store.read(session_id)
        if not live_only(row.backend):
            raise CommandError(_("Only a real-cluster session has topics to delete."), status=409)
        live = catch_up(row)
        if live.detached:
            raise CommandError(detached_message(live.detached), status=409)
        if row.running and store.set_running(row, False):
            row = store.read(session_id)
        CACHE.evict(session_id)
        live = detached(row, "ended")
        CACHE.put(live)
    _publish(live)
    return live


def close_all_at_exit() -> None:
    """A server that stops ends its real-cluster sessions: their topics are deleted (best effort)."""
    for live in CACHE.take(lambda lv: live_only(lv.backend_name) and not lv.detached):
        _close(live)
