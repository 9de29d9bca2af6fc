"""The "run" button: an event loop applies the remaining scenario steps, one every PLAYGROUND_RUN_STEP_MS, until
the end or until "pause" (from any process) clears the session's running flag.

A runner beats (`Session.runner_at`) at every step. When the process running it dies, the beat goes stale: the
watchdog of any other process serving pages (started with the first websocket it accepts) claims the session
with one conditional UPDATE, so exactly one process takes the run over, within RUNNER_STALE_S plus a watchdog
round. If nobody claims it (no other process), the run stays as it was until someone opens the session.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import timezone

from playground.models import Session
from playground.session.commands import run_one, set_running
from playground.session.limits import LimitExceeded
from playground.session.live import CommandError

log = logging.getLogger(__name__)

_RUNNERS: dict[str, Any] = {}
_WATCHDOG: dict[str, Any] = {}
RUNNER_STALE_S = 5.0
WATCHDOG_EVERY_S = 2.0
# The speeds a viewer may choose (Session.run_step_ms): a presenter slows a run down to talk over it.
RUN_STEP_MS_MIN, RUN_STEP_MS_MAX = 100, 10_000


RUN_SPEEDS_MS = (300, 800, 1600, 3000, 6000)  # the page's choices (and the server's default, when another)


def run_delay_s() -> float:
    return float(getattr(settings, "PLAYGROUND_RUN_STEP_MS", 800)) / 1000.0


def run_speeds() -> tuple[int, list[tuple[int, str]]]:
    """The default time between a run's steps (ms) and the choices: (ms, "0.8 s")."""
    default = round(run_delay_s() * 1000)
    return default, [(ms, f"{ms / 1000:g} s") for ms in sorted({*RUN_SPEEDS_MS, default})]


def _beat(session_id: str) -> float:
    """The runner's heartbeat; and the time to wait before the next step, as the session's speed says now (the
    viewer may change it while the run goes on, from any process)."""
    Session.objects.filter(pk=session_id, running=True).update(runner_at=timezone.now())
    ms = Session.objects.filter(pk=session_id).values_list("run_step_ms", flat=True).first()
    return ms / 1000.0 if ms else run_delay_s()


def set_speed(session_id: str, step_ms: int) -> None:
    Session.objects.filter(pk=session_id).update(run_step_ms=max(RUN_STEP_MS_MIN, min(RUN_STEP_MS_MAX, step_ms)))


async def run_loop(session_id: str) -> None:
    try:
        while True:
            started = time.monotonic()
            delay_s = await database_sync_to_async(_beat)(session_id)
            more = await database_sync_to_async(run_one)(session_id)
            if not more:
                break
            await asyncio.sleep(max(0.0, delay_s - (time.monotonic() - started)))
    except (CommandError, LimitExceeded) as exc:
        log.info("session %s: run stopped: %s", session_id, exc)
        await database_sync_to_async(_stop_quietly)(session_id)
    except Exception:
        log.exception("session %s: run failed", session_id)
        await database_sync_to_async(_stop_quietly)(session_id)
    finally:
        _RUNNERS.pop(session_id, None)


def _stop_quietly(session_id: str) -> None:
    try:
        set_running(session_id, False)
    except Exception:
        log.exception("session %s: could not clear running", session_id)


def ensure_runner(session_id: str) -> None:
    """Start this process's runner for the session unless one is going (call from the event loop)."""
    task = _RUNNERS.get(session_id)
    if task is not None and not task.done():
        return
    _RUNNERS[session_id] = asyncio.get_running_loop().create_task(run_loop(session_id))
    ensure_watchdog()


def orphaned_runs() -> list[str]:
    """Running sessions whose runner stopped beating, claimed for this process (one UPDATE each: of two
    processes looking at once, one wins)."""
    now = timezone.now()
    stale = now - timedelta(seconds=RUNNER_STALE_S)
    claimed = []
    for sid, beat in Session.objects.filter(running=True, runner_at__lt=stale).values_list("pk", "runner_at")[:50]:
        if sid in _RUNNERS:
            continue
        if Session.objects.filter(pk=sid, running=True, runner_at=beat).update(runner_at=now):
            log.warning("session %s: its runner stopped beating at %s; this process takes the run over", sid, beat)
            claimed.append(sid)
    return claimed


async def _watch() -> None:
    while True:
        try:
            for sid in await database_sync_to_async(orphaned_runs)():
                ensure_runner(sid)
        except Exception:
            log.exception("the runner watchdog failed a round")
        await asyncio.sleep(WATCHDOG_EVERY_S)


def ensure_watchdog() -> None:
    """Start this process's watchdog (call from the event loop): it takes over runs whose process died."""
    loop = asyncio.get_running_loop()
    task = _WATCHDOG.get("task")
    if task is not None and not task.done() and task.get_loop() is loop:
        return
    _WATCHDOG["task"] = loop.create_task(_watch())
