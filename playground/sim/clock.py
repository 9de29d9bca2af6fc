"""Virtual time: a deterministic discrete-event scheduler keyed by (time_ms, seq), and a tiny seeded PRNG.

Nothing here reads a wall clock. Two entries due at the same millisecond run in the order they were scheduled,
so the same inputs always give the same interleaving.

Entries are either *work* (an RPC in flight, a replication step, a client's linger timer or retry backoff: the
things that finish "by themselves" within milliseconds) or *timers* (the coordinator's periodic scans, session
and message timeouts: the things that change the story when they fire). `settle()` finishes work without firing
a timer that would act; that is what an observation waits for.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

WORK = "work"
TIMER = "timer"

_MASK64 = (1 << 64) - 1


class SplitMix64:
    """Sebastiano Vigna's SplitMix64: small, fast, and fully determined by its seed (the project's rule is one
    seeded generator handed down, never the global `random`)."""

    __slots__ = ("_state",)

    def __init__(self, seed: int = 0) -> None:
        self._state = seed & _MASK64

    def next_u64(self) -> int:
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK64
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def randrange(self, n: int) -> int:
        if n <= 0:
            raise ValueError("randrange() needs a positive bound")
        return self.next_u64() % n

    def random(self) -> float:
        return (self.next_u64() >> 11) / float(1 << 53)

    def choice(self, seq):  # type: ignore[no-untyped-def]
        return seq[self.randrange(len(seq))]

    def fork(self) -> SplitMix64:
        """An independent stream derived from this one (so adding a consumer of randomness in one component
        does not shift every other component's numbers)."""
        return SplitMix64(self.next_u64())


def _discarded() -> None:
    """What a discarded scheduler's entries call (nothing will run them)."""


class Entry:
    __slots__ = ("cancelled", "category", "fn", "inert", "label", "time_ms")

    def __init__(
        self, time_ms: int, fn: Callable[[], object], category: str, label: str, inert: Callable[[int], bool] | None
    ) -> None:
        self.time_ms = time_ms
        self.fn = fn
        self.category = category
        self.label = label
        self.inert = inert
        self.cancelled = False


class Scheduler:
    def __init__(self, start_ms: int = 0) -> None:
        self.now_ms = start_ms
        self._heap: list[tuple[int, int, Entry]] = []
        self._seq = 0
        self._work_pending = 0

    # -- scheduling -------------------------------------------------------------------------------------------
    def at(
        self,
        time_ms: int,
        fn: Callable[[], object],
        *,
        category: str = WORK,
        label: str = "",
        inert: Callable[[int], bool] | None = None,
    ) -> Entry:
        if time_ms < self.now_ms:
            time_ms = self.now_ms
        entry = Entry(time_ms, fn, category, label, inert)
        self._seq += 1
        heapq.heappush(self._heap, (time_ms, self._seq, entry))
        if category == WORK:
            self._work_pending += 1
        return entry

    def after(
        self,
        delay_ms: int,
        fn: Callable[[], object],
        *,
        category: str = WORK,
        label: str = "",
        inert: Callable[[int], bool] | None = None,
    ) -> Entry:
        # the hot path (every RPC hop, linger and replication step): the same as at(now + max(0, delay)), without
        # the second call
        time_ms = self.now_ms + max(0, int(delay_ms))
        entry = Entry(time_ms, fn, category, label, inert)
        self._seq += 1
        heapq.heappush(self._heap, (time_ms, self._seq, entry))
        if category == WORK:
            self._work_pending += 1
        return entry

    def cancel(self, entry: Entry | None) -> None:
        if entry is not None and not entry.cancelled:
            entry.cancelled = True
            if entry.category == WORK:
                self._work_pending -= 1

    def discard(self) -> None:
        # Backend.discard: an entry's callback refers back to the cluster, and whoever keeps the entry to cancel it
        # (a periodic scan) is referred to by the callback in turn
        for _, _, entry in self._heap:
            entry.fn, entry.inert = _discarded, None
        self._heap.clear()
        self._work_pending = 0

    @property
    def work_pending(self) -> int:
        return self._work_pending

    def next_entry(self) -> Entry | None:
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        return heap[0][2] if heap else None

    # -- running ----------------------------------------------------------------------------------------------
    def _run_next(self) -> None:
        _, _, entry = heapq.heappop(self._heap)
        if entry.category == WORK:
            self._work_pending -= 1
        entry.cancelled = True  # an entry runs once
        if entry.time_ms > self.now_ms:
            self.now_ms = entry.time_ms
        entry.fn()

    def run_until(self, done: Callable[[], bool], deadline_ms: int | None = None) -> bool:
        """Run entries in order until `done()`; stop at `deadline_ms` (time moves to the deadline)."""
        heap = self._heap
        while not done():
            # next_entry() and _run_next() inlined: this loop runs every entry of a blocking client call
            while heap and heap[0][2].cancelled:
                heapq.heappop(heap)
            if not heap or (deadline_ms is not None and heap[0][0] > deadline_ms):
                if deadline_ms is not None and deadline_ms > self.now_ms:
                    self.now_ms = deadline_ms
                return done()
            entry = heapq.heappop(heap)[2]
            if entry.category == WORK:
                self._work_pending -= 1
            entry.cancelled = True  # an entry runs once
            if entry.time_ms > self.now_ms:
                self.now_ms = entry.time_ms
            entry.fn()
        return True

    def advance(self, ms: int) -> None:
        """Move time forward by `ms`, running every entry that falls due on the way."""
        target = self.now_ms + max(0, int(ms))
        while True:
            entry = self.next_entry()
            if entry is None or entry.time_ms > target:
                break
            self._run_next()
        self.now_ms = max(self.now_ms, target)

    def settle(self, max_ms: int = 30_000, max_entries: int = 1_000_000) -> bool:
        """Finish in-flight work. Timers due on the way run only if they are inert (would do nothing), so that
        observing never makes, say, a transaction time out. Returns True when no work is left."""
        limit = self.now_ms + max_ms
        for _ in range(max_entries):
            if self._work_pending <= 0:
                return True
            entry = self.next_entry()
            if entry is None or entry.time_ms > limit:
                return False
            if entry.category != WORK and not (entry.inert is not None and entry.inert(entry.time_ms)):
                return False
            self._run_next()
        return False
