"""Waiting for a condition in a test's event loop: polled, with a generous cap (never a tight fixed timeout)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

CAP_S = 30.0  # a generous cap for what must happen soon


async def until(condition: Callable[[], object], cap_s: float = CAP_S, every_s: float = 0.02) -> None:
    deadline = asyncio.get_running_loop().time() + cap_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "the condition did not come within the cap"
        await asyncio.sleep(every_s)
