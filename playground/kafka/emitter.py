"""The events a real-cluster session emits (playground/engine/events.py's vocabulary), their clock and the RPC
timeline view() shows.

Times count from the session's start, wall clock: what a worker logged carries the wall time it was logged at, and
the coordinator's TransactionStartTimeMs (DescribeTransactions) is an epoch in the coordinator's clock, put on the
same origin by `session_ms`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from playground.engine import events as ev

log = logging.getLogger(__name__)

TIMELINE_FIELDS = ("seq", "time_ms", "rpc", "src", "dst", "direction", "error", "detail")


class EventEmitter:
    def __init__(self, on_event: Callable[[Any], None] | None, *, timeline_max: int = 200) -> None:
        self.on_event = on_event
        self.t0_wall = time.time()
        self.seq = 0
        self.timeline: deque[dict[str, Any]] = deque(maxlen=timeline_max)

    def now_ms(self, t: float | None = None) -> int:
        return int(((t if t is not None else time.time()) - self.t0_wall) * 1000)

    def session_ms(self, epoch_ms: int | None) -> int | None:
        """A broker's wall-clock epoch in ms -> ms since the session began, the origin of view()["time_ms"] (the
        dashboard shows both as t=mm:ss.mmm). Only this session's transactional ids are described, so a time before
        the session began, or after now, is the coordinator's clock differing from this server's: shown as 0 or now,
        never as a negative time."""
        if epoch_ms is None or epoch_ms < 0:
            return None
        return max(0, min(self.now_ms(), self.now_ms(epoch_ms / 1000.0)))

    def emit(self, cls: type, t: float | None = None, **values: Any) -> None:
        self.seq += 1
        for f in dataclasses.fields(cls):  # a field the vocabulary gained that a real cluster cannot tell: None
            if f.name not in values and f.name not in ("seq", "time_ms"):
                values[f.name] = None
        event = cls(seq=self.seq, time_ms=self.now_ms(t), **values)
        if cls is ev.Rpc:
            self.timeline.append({k: v for k, v in event.to_dict().items() if k in TIMELINE_FIELDS})
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # a listener's bug must not break the session
                log.exception("on_event listener failed")
