"""Client quotas as a broker enforces them: a rate over sampled windows, and the throttle time that brings it back
under the bound.

Follows clients/src/main/java/org/apache/kafka/common/metrics/stats/SampledStat.java, Rate.java and WindowedSum.java
(the measured rate), Sensor.checkQuotas (a value over the bound is a violation), and
core/src/main/scala/kafka/server/ClientQuotaManager.scala (3.9; server/.../quota/ClientQuotaManager.java in 4.x):
`quota.window.num` (11) samples (one more kept while it overlaps the window) of `quota.window.size.seconds` (1 s); the throttle time for an observed rate O over a
bound T measured over a window W is (O - T) / T * W, the time it takes for the rate to fall back to T if nothing more
is recorded; the most a quota lets through in one go is T * (samples - 1) * window (getMaxValueInQuotaWindow, which
bounds a Fetch's size). The request quota's throttle is at most one window (ClientRequestQuotaManager.throttleTime:
QuotaUtils.boundedThrottleTime with maxThrottleTimeMs = quota.window.size.seconds); the byte quotas' are not bounded.
The connection creation rate (KIP-612, `max.connection.creation.rate`) is a quota of the acceptor's: see AcceptQuota.

Pure and deterministic: time is whatever the caller says (the simulator's virtual clock for the byte quotas of the
protocol server; a monotonic clock for the request quota of a session's listener, which measures CPU time).
"""

from __future__ import annotations

from dataclasses import dataclass

SAMPLES = 11  # quota.window.num
WINDOW_MS = 1000  # quota.window.size.seconds


@dataclass
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0


class QuotaSensor:
    """One quota: `bound` units per second (bytes/s, or percent of a thread's time), measured as Kafka's Rate."""

    def __init__(self, bound: float, samples: int = SAMPLES, window_ms: int = WINDOW_MS) -> None:
        if bound <= 0:
            raise ValueError("a quota's bound must be positive")
        self.bound = float(bound)
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    # ---- SampledStat ---------------------------------------------------------------------------------------
    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # one sample more than `samples` is kept: the oldest may still overlap the measured window (purge)
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms, now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        """Samples with no event within the measured window are obsolete (they start again, empty)."""
        expire_ms = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_ms:
                sample.reset(now_ms)

    def _add(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    # ---- Rate ----------------------------------------------------------------------------------------------
    def window_size_ms(self, now_ms: int) -> int:
        """Rate.windowSize: the time the samples span, at least `samples - 1` whole windows."""
        self._purge(now_ms)
        oldest = min((s.start_ms for s in self._samples), default=now_ms)
        elapsed_ms = now_ms - oldest
        full_windows = elapsed_ms // self.window_ms
        if full_windows < self.samples - 1:
            elapsed_ms += (self.samples - 1 - full_windows) * self.window_ms
        return max(elapsed_ms, 1)

    def rate(self, now_ms: int) -> float:
        """Units per second over the sampled windows."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000.0)

    # ---- ClientQuotaManager --------------------------------------------------------------------------------
    def record(self, value: float, now_ms: int, max_throttle_ms: int | None = None) -> int:
        """Record `value` at `now_ms`; the throttle time in ms (0 when the rate stays within the bound), at most
        `max_throttle_ms` when given (boundedThrottleTime)."""
        self._add(value, now_ms)
        observed = self.rate(now_ms)
        if observed <= self.bound:
            return 0
        throttle_ms = round((observed - self.bound) / self.bound * self.window_size_ms(now_ms))
        return throttle_ms if max_throttle_ms is None else min(throttle_ms, max_throttle_ms)

    def unrecord(self, value: float, now_ms: int) -> None:
        """A throttled Fetch returns nothing: what was recorded for it is taken back (unrecordQuotaSensor)."""
        self._add(-value, now_ms)

    def max_value_in_window(self) -> int:
        """The most one request may record without being throttled for sure (getMaxValueInQuotaWindow)."""
        return int(self.bound * (self.samples - 1) * self.window_ms / 1000)


class AcceptQuota:
    """`max.connection.creation.rate`, connections a second: the acceptor records each connection it accepts and,
    over the rate, waits the throttle time (at most one window) before it hands that connection to a processor,
    accepting nothing meanwhile (kafka.network.ConnectionQuotas: waitForConnectionSlot and
    recordConnectionAndGetThrottleTimeMs). So a connection over the rate is connected, and not read until its turn."""

    def __init__(self, rate: float) -> None:
        self.sensor = QuotaSensor(rate)
        self.free_at_ms = 0  # when the acceptor takes the next connection

    def admit(self, now_ms: int) -> int:
        """A connection arrived at `now_ms`: the milliseconds until it is handed over (0: at once)."""
        at_ms = max(now_ms, self.free_at_ms)
        self.free_at_ms = at_ms + self.sensor.record(1.0, at_ms, max_throttle_ms=self.sensor.window_ms)
        return self.free_at_ms - now_ms
