"""The "run" button: this process's event loop applies the remaining scenario steps, one every
PLAYGROUND_RUN_STEP_MS, until the end or until "pause" (from any process) clears the session's running flag."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from playground.session.commands import run_one, set_running
from playground.session.live import CommandError

log = logging.getLogger(__name__)

_RUNNERS: dict[str, Any] = {}


def run_delay_s() -> float:
    return float(getattr(settings, "PLAYGROUND_RUN_STEP_MS", 800)) / 1000.0


async def run_loop(session_id: str) -> None:
    try:
        while True:
            started = time.monotonic()
            more = await database_sync_to_async(run_one)(session_id)
            if not more:
                break
            await asyncio.sleep(max(0.0, run_delay_s() - (time.monotonic() - started)))
    except CommandError as exc:
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
    except Exception:  # noqa: BLE001
        log.exception("session %s: could not clear running", session_id)


def ensure_runner(session_id: str) -> None:
    """Start this process's runner for the session unless one is going (call from the event loop)."""
    task = _RUNNERS.get(session_id)
    if task is not None and not task.done():
        return
    _RUNNERS[session_id] = asyncio.get_running_loop().create_task(run_loop(session_id))
