"""The brokers of the simulated cluster as a network: which are up (each with an incarnation, so that a broker that
stops forgets what it owed), the virtual clock and the event log they share, RPCs between clients and brokers in
virtual time, and a broker's periodic tasks. What the brokers do with a request is leaders.py's and cluster.py's.

Timing knobs (cluster config, all optional; Kafka itself ignores keys starting with `sim.`): sim.latency.ms,
sim.interbroker.latency.ms, sim.broker.N.latency.ms, sim.replication.latency.ms, sim.broker.N.replication.latency.ms
(cluster.py lists them with their defaults).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from playground.engine import events as ev
from playground.sim.clock import TIMER, Entry, Scheduler, SplitMix64
from playground.sim.effects import Reply

TIMELINE_KEPT = 200  # the last RPCs, for the view
# the pinned RPCs (events.pinned), kept apart from the last TIMELINE_KEPT, this many of each kind: a thousand EndTxn
# do not push out the fence, nor the InitProducerId that caused it
PINNED_KEPT = 64


class BrokerState:
    __slots__ = ("broker_id", "incarnation", "up")

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.up = True
        self.incarnation = 0


class Brokers:
    def __init__(
        self,
        brokers: int,
        config: Mapping[str, Any] | None,
        seed: int,
        *,
        on_event: Callable[[ev.Event], None] | None,
        keep_events: bool,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self.config: dict[str, Any] = dict(config or {})
        self.rng = SplitMix64(seed)
        self.scheduler = Scheduler()
        self.events: list[ev.Event] = []
        self.keep_events = keep_events
        # the last RPCs, for the view: events, or (seq, time_ms, fields) when nobody observes events (then the Rpc is
        # only built if the timeline is read; see `timeline`); and the pinned ones, by kind (`pinned_before`)
        self._timeline: deque[ev.Rpc | tuple[int, int, dict[str, Any]]] = deque(maxlen=TIMELINE_KEPT)
        self._pinned: dict[str, deque[ev.Rpc | tuple[int, int, dict[str, Any]]]] = {}
        self._listeners: list[Callable[[ev.Event], None]] = [on_event] if on_event else []
        self._watchers: list[tuple[frozenset[type[ev.Event]], Callable[[ev.Event], None]]] = []
        self._watched: frozenset[type[ev.Event]] = frozenset()
        self._seq = 0
        self._correlation = 0
        self.brokers: dict[int, BrokerState] = {b: BrokerState(b) for b in range(1, brokers + 1)}
        self.broker_ids = tuple(self.brokers)
        self.latency_ms = int(self.config.get("sim.latency.ms", 1))
        self.interbroker_latency_ms = int(self.config.get("sim.interbroker.latency.ms", 1))
        self.default_replication_ms = int(self.config.get("sim.replication.latency.ms", 1))
        self._extra_latency = {b: int(self.config.get(f"sim.broker.{b}.latency.ms", 0)) for b in self.broker_ids}
        self._replication = {
            b: int(self.config.get(f"sim.broker.{b}.replication.latency.ms", self.default_replication_ms))
            for b in self.broker_ids
        }
        # replies owed by each broker: correlation -> fail(), so a stopped broker's requests fail at once
        self._outstanding: dict[int, dict[int, Callable[[], None]]] = {b: {} for b in self.broker_ids}

    def discard(self) -> None:
        """Backend.discard: the callbacks scheduled, owed and listening all refer back to this cluster."""
        self.scheduler.discard()
        self._listeners.clear()
        self._watchers.clear()
        for owed in self._outstanding.values():
            owed.clear()

    # -- events -----------------------------------------------------------------------------------------------
    def subscribe(self, listener: Callable[[ev.Event], None]) -> None:
        self._listeners.append(listener)

    def watch(self, kinds: tuple[type[ev.Event], ...], listener: Callable[[ev.Event], None]) -> None:
        """Listen to events of these kinds only. Unlike `subscribe`, the others are not built for it: an event is
        built only when someone keeps or listens to it (`observed` stays as it was). Events a hot path leaves out when
        nobody observes them (a client's per-record Delivery) are not for watching."""
        self._watchers.append((frozenset(kinds), listener))
        self._watched |= frozenset(kinds)

    @property
    def observed(self) -> bool:
        """Whether events go anywhere (kept or listened to). Hot paths check it before assembling an event's
        fields; `emit` checks it too, so callers that do not bother stay correct."""
        return self.keep_events or bool(self._listeners)

    def skip_event(self) -> None:
        """Take the `seq` of an event that is not emitted because nobody observes it (see `observed`)."""
        self._seq += 1

    def emit(self, cls: type[ev.Event], **fields: Any) -> ev.Event | None:
        """Record an event. Its `seq` is taken even when nobody observes it, so that sequence numbers (visible
        in the RPC timeline) do not depend on whether events are kept. Returns None when the event was not
        built because nobody observes it (building the frozen dataclass is the bulk of an emit)."""
        self._seq += 1
        if not self.keep_events and not self._listeners:
            if cls is ev.Rpc:
                self._keep_rpc((self._seq, self.scheduler.now_ms, fields), fields)
            if cls not in self._watched:
                return None
            event = cls(seq=self._seq, time_ms=self.scheduler.now_ms, **fields)
        else:
            event = cls(seq=self._seq, time_ms=self.scheduler.now_ms, **fields)
            if self.keep_events:
                self.events.append(event)
            if cls is ev.Rpc:
                self._keep_rpc(event, fields)  # type: ignore[arg-type]
            for listener in self._listeners:
                listener(event)
        if cls in self._watched:
            for kinds, watcher in self._watchers:
                if cls in kinds:
                    watcher(event)
        return event

    def _keep_rpc(self, item: ev.Rpc | tuple[int, int, dict[str, Any]], fields: Mapping[str, Any]) -> None:
        self._timeline.append(item)
        kind = ev.pinned(fields)
        if kind is not None:
            self._pinned.setdefault(kind, deque(maxlen=PINNED_KEPT)).append(item)

    @property
    def timeline(self) -> list[ev.Rpc]:
        """The last TIMELINE_KEPT RPC events, oldest first."""
        return [_rpc(e) for e in self._timeline]

    def pinned_before(self, seq: int | None) -> list[ev.Rpc]:
        """The pinned RPC events (events.pinned, the last PINNED_KEPT of each kind) before the one numbered `seq`
        (all when None), oldest first."""
        kept = sorted((e for ring in self._pinned.values() for e in ring), key=_seq)
        return [_rpc(e) for e in kept if seq is None or _seq(e) < seq]

    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms

    # -- brokers ----------------------------------------------------------------------------------------------
    def broker_up(self, broker: int | None) -> bool:
        return broker is not None and broker in self.brokers and self.brokers[broker].up

    def any_up_broker(self) -> int | None:
        return next((b for b in self.broker_ids if self.brokers[b].up), None)

    def replication_ms(self, broker: int | None) -> int:
        return self._replication.get(broker, self.default_replication_ms) if broker is not None else 0

    def hop_ms(self, dst: int | None, src_broker: int | None = None) -> int:
        extra = self._extra_latency.get(dst, 0) if dst is not None else 0
        if src_broker is not None:
            return self.interbroker_latency_ms + extra + self._extra_latency.get(src_broker, 0)
        return self.latency_ms + extra

    # -- RPC --------------------------------------------------------------------------------------------------
    def rpc(
        self,
        name: str,
        src: str,
        dst_broker: int | None,
        dst_label: str,
        detail: str,
        handler: Callable[[int, Reply], None],
        on_response: Callable[[str | None, dict[str, Any]], None],
        *,
        src_alive: Callable[[], bool] = lambda: True,
        src_broker: int | None = None,
        version: int | None = None,
    ) -> int:
        """Send a request; `handler(broker, reply)` runs at the destination broker when it arrives, `reply(error, **result)`
        sends the answer back; `on_response(error, result)` runs at the source when the answer arrives (unless
        the source died meanwhile). A broker that is down, or stops before answering, yields `_TRANSPORT`.
        `version`: the request's ApiVersion, shown in the timeline as the real backend shows it ("v0, ...")."""
        self._correlation += 1
        corr = self._correlation
        prefix = f"v{version}" if version is not None else ""
        self.emit(
            ev.Rpc,
            rpc=name,
            src=src,
            dst=dst_label,
            direction="request",
            error=None,
            detail=_join_detail(prefix, detail),
            correlation=corr,
        )
        hop = self.hop_ms(dst_broker, src_broker)
        done = [False]

        def deliver(error: str | None, result: dict[str, Any]) -> None:
            if not src_alive():
                return
            self.emit(
                ev.Rpc,
                rpc=name,
                src=dst_label,
                dst=src,
                direction="response",
                error=error,
                detail=_join_detail(prefix, _describe(result)),
                correlation=corr,
            )
            on_response(error, result)

        def fail_transport() -> None:
            if done[0]:
                return
            done[0] = True
            self.scheduler.after(hop, lambda: deliver("_TRANSPORT", {}), label=f"{name} transport error")

        if dst_broker is None or not self.broker_up(dst_broker):
            self.scheduler.after(hop, lambda: deliver("_TRANSPORT", {}), label=f"{name} no broker")
            return corr
        incarnation = self.brokers[dst_broker].incarnation

        def reply(error: str | None = None, **result: Any) -> None:
            if done[0]:
                return
            if not self.broker_up(dst_broker) or self.brokers[dst_broker].incarnation != incarnation:
                return  # the broker died before answering; fail_transport already told the source
            done[0] = True
            self._outstanding[dst_broker].pop(corr, None)
            self.scheduler.after(hop, lambda: deliver(error, result), label=f"{name} response")

        def arrive() -> None:
            if not self.broker_up(dst_broker) or self.brokers[dst_broker].incarnation != incarnation:
                fail_transport()
                return
            self._outstanding[dst_broker][corr] = fail_transport
            handler(dst_broker, reply)

        self.scheduler.after(hop, arrive, label=f"{name} request")
        return corr

    # -- time -------------------------------------------------------------------------------------------------
    def advance(self, ms: int) -> None:
        before = self.now_ms
        self.scheduler.advance(ms)
        self.emit(ev.Clock, from_ms=before, to_ms=self.now_ms)

    def settle(self, max_ms: int = 30_000) -> bool:
        return self.scheduler.settle(max_ms)


class PeriodicScan:
    """A broker's periodic task (the coordinator's abort and expiry scans) on its fixed grid of ticks
    (broker start + k x interval), as Kafka's scheduler runs it. Ticks at which the scan would find nothing are
    skipped: the next tick is the first one at or after the earliest deadline the coordinator knows of, and a new
    deadline wakes the scan up earlier. Long clock jumps (7 days for expiry) stay cheap; behaviour is the same."""

    def __init__(
        self,
        cluster: Brokers,
        broker: int,
        interval_ms: int,
        label: str,
        task: Callable[[], None],
        would_act: Callable[[int], bool],
        next_deadline: Callable[[], int | None],
    ) -> None:
        self.c = cluster
        self.broker = broker
        self.interval_ms = interval_ms
        self.label = label
        self.task = task
        self.would_act = would_act
        self.next_deadline = next_deadline
        self.incarnation = cluster.brokers[broker].incarnation
        self.start_ms = cluster.now_ms
        self.entry: Entry | None = None
        self.scheduled_ms: int | None = None
        self._reschedule()

    def _alive(self) -> bool:
        state = self.c.brokers[self.broker]
        return state.up and state.incarnation == self.incarnation

    def _tick_after(self, t: int) -> int:
        """The first tick strictly after t."""
        k = (t - self.start_ms) // self.interval_ms + 1
        return self.start_ms + k * self.interval_ms

    def _schedule(self, tick: int) -> None:
        self.c.scheduler.cancel(self.entry)
        self.scheduled_ms = tick
        self.entry = self.c.scheduler.at(
            tick,
            self._run,
            category=TIMER,
            label=self.label,
            inert=lambda t: not self._alive() or not self.would_act(t),
        )

    def _reschedule(self) -> None:
        deadline = self.next_deadline()
        if deadline is None:
            self.c.scheduler.cancel(self.entry)
            self.entry = None
            self.scheduled_ms = None
            return
        self._schedule(max(self._tick_after(self.c.now_ms), self._tick_after(deadline - 1)))

    def wake(self, deadline_ms: int) -> None:
        if not self._alive():
            return
        tick = max(self._tick_after(self.c.now_ms), self._tick_after(deadline_ms - 1))
        if self.scheduled_ms is None or tick < self.scheduled_ms:
            self._schedule(tick)

    def _run(self) -> None:
        self.entry = None
        self.scheduled_ms = None
        if not self._alive():
            return
        self.task()
        self._reschedule()


def _join_detail(prefix: str, detail: str) -> str:
    """ ", ".join of the non-empty parts (without a generator: two of these per RPC)."""
    if prefix and detail:
        return f"{prefix}, {detail}"
    return prefix or detail


def _describe(result: dict[str, Any]) -> str:
    parts = []
    for key in ("producer_id", "producer_epoch", "base_offset", "coordinator", "member_id", "position"):
        if key in result and result[key] is not None:
            parts.append(f"{key.replace('_', ' ')} {result[key]}")
    if "records" in result:
        parts.append(f"{len(result['records'])} records")
    return ", ".join(parts)


def _rpc(e: ev.Rpc | tuple[int, int, dict[str, Any]]) -> ev.Rpc:
    return e if isinstance(e, ev.Rpc) else ev.Rpc(seq=e[0], time_ms=e[1], **e[2])


def _seq(e: ev.Rpc | tuple[int, int, dict[str, Any]]) -> int:
    return e.seq if isinstance(e, ev.Rpc) else e[0]
