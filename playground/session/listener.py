"""A session's listener: its simulated brokers served over the Kafka protocol, so that a team points its own
application at the session and watches what Kafka does to it, live (issue 16). It lives in the server process that
started it.

What comes in goes into the session and into its command log (session/external.py): a request frame or a disconnect
is fed to the live session's protocol core under the session's lock, the answers go out at once, and the inputs are
cut into a row of the log by the commit loop: before any command of the session's own (the clients came first), and
on their own by a flush. A flush follows soon (within MIN_FLUSH_INTERVAL_S of the last) when the simulator did
something worth showing (an event: an append, a marker, a transition of the coordinator, a request of a
transaction), else after QUIET_FLUSH_S: a consumer that polls an idle topic ten times a second writes a row every
few seconds, not ten a second, and the page does not change meanwhile because nothing changed. Time: while a client
is connected, the simulator's clock follows the wall clock (timeouts, the abort scan, session timeouts happen in real
time), and a command of the session's own records the virtual time it ran at; with nobody connected it stops, and
moves only with the session's steps.

Threads: one asyncio loop in a thread of its own serves every listener of this process (sockets, timers, feeding
the core); what needs the database (the rows, catching a session up) runs in one worker thread. Django's ORM never
runs in the loop's thread.

Bounds (session/limits.py): listeners per client and per process, connections per listener, an idle time after
which a listener without clients closes itself. Off in production mode unless the server enables it
(PLAYGROUND_LISTEN); bound only to PLAYGROUND_LISTEN_HOST. What the applications send is bounded as a broker bounds
it (simserver/bounds.py, the `kafka_*` limits): the protocol core answers with Kafka's errors and quotas (the bounds
in force are recorded in the listen entry, so that a replay bounds the same way); here, in the sockets' layer, a
frame over `socket.request.max.bytes` closes its connection, the requests being read share one memory pool for the
process (`queued.max.request.bytes`), a connection that does not read its answers is not read (server.py), an idle
one is closed, and the session's requests may take `request_percentage` of a core (handling them, writing the answers,
their timers: KIP-124 counts the network threads' time too): past it every connection of the session is muted for
the throttle time, at most one quota window as Kafka bounds it (Kafka's request quota, measured in CPU time; the
answers' throttle_time_ms carries only the byte quotas, which the core keeps); each broker accepts
`max.connection.creation.rate` connections a second (server.admit). When the log holds `kafka_log_bytes` of the
clients' requests, the listener stops, as it does when the log is full.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections, reset_queries
from django.utils import timezone
from django.utils.translation import gettext as _

from playground.models import Session
from playground.session import checkpoints, external, limits, signals
from playground.session.cache import CACHE
from playground.session.commands import Change, commit
from playground.session.live import CommandError, Live, run_entry
from playground.session.replay import load
from playground.simserver.bounds import Bounds
from playground.simserver.core import Output, ServerCore
from playground.simserver.quotas import WINDOW_MS, AcceptQuota, QuotaSensor
from playground.simserver.server import QUOTA, Connection, MemoryPool, admit, after_core, close_idle

log = logging.getLogger(__name__)

QUIET_FLUSH_S = 5.0
MIN_FLUSH_INTERVAL_S = 0.1
MAX_BUFFERED_INPUTS = 500  # a row holds at most about this many inputs: a replay of one costs a bounded time
MAX_BUFFERED_BYTES = 1 << 20
IDLE_CHECK_S = 5.0
START_TIMEOUT_S = 10.0


# ---------------------------------------------------------------------------------------------------- the loop
class _Loop:
    """The asyncio loop every listener of this process runs in, and the worker thread for the database."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="session-listeners", daemon=True)
        self.thread.start()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="session-listeners-db")

    def run(self, coro: Coroutine[Any, Any, Any], timeout_s: float = START_TIMEOUT_S) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def soon(self, fn: Callable[[], None]) -> None:
        self.loop.call_soon_threadsafe(fn)

    def in_worker(self, fn: Callable[[], None]) -> None:
        def job() -> None:
            try:
                fn()
            except Exception:
                log.exception("a session listener's job failed")
            finally:
                # no request starts in this thread: with DEBUG on, Django would keep every statement's SQL (a
                # row of the clients' requests is a megabyte of parameters) until nine thousand of them
                reset_queries()
                close_old_connections()

        self.worker.submit(job)


_LOOP: _Loop | None = None
_LOOP_GUARD = threading.Lock()
LISTENERS: dict[str, SessionListener] = {}
_POOL: MemoryPool | None = None  # queued.max.request.bytes, for every listener of this process


def _pool() -> MemoryPool:
    global _POOL
    if _POOL is None:
        _POOL = MemoryPool(limits.limit("kafka_queued_request_bytes"))
    return _POOL


def _the_loop() -> _Loop:
    global _LOOP
    with _LOOP_GUARD:
        if _LOOP is None:
            _LOOP = _Loop()
        return _LOOP


class SessionListener:
    """One session's listener in this process (see the module's docstring)."""

    def __init__(self, sid: str, client: str, host: str, advertised: str, bounds: Bounds | None = None) -> None:
        self.sid = sid
        self.bounds = bounds or Bounds()
        # the request quota: CPU time its requests take, as a percentage of a core (monotonic milliseconds)
        rate = self.bounds.request_percentage
        self.request_quota = QuotaSensor(rate) if rate else None
        self.accept_quotas: dict[int, AcceptQuota] = {}  # per broker: max.connection.creation.rate
        self.unthrottle: asyncio.TimerHandle | None = None
        self.buffered_inputs = 0
        self.label = f"session {sid} "  # how the log names this listener's connections
        self.client = client
        self.host = host
        self.advertised = advertised
        self.servers: dict[int, asyncio.AbstractServer] = {}
        self.ports: dict[int, int] = {}
        self.conns: dict[int, Connection] = {}
        self.next_conn = 0
        self.core: ServerCore | None = None  # the core of the live session this listener feeds
        self.queued: list[tuple[int, int, int, bytes]] = []  # inputs waiting for the session to be caught up
        self.resyncing = False
        self.closed = False
        self.anchor_vt = 0
        self.anchor_wall = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.flush_at: asyncio.TimerHandle | None = None
        self.flushing = False
        self.last_flush = 0.0
        self.first_buffered: float | None = None
        self.buffered_bytes = 0
        self.events_flushed = -1
        self.urgent = False
        self.last_activity = time.monotonic()
        self.idle: asyncio.TimerHandle | None = None
        self.started_at = time.time()

    # -------------------------------------------------------------------------------------------- state
    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.advertised}:{p}" for _b, p in sorted(self.ports.items()))

    def state(self) -> dict[str, Any]:
        return {
            "state": "listening",
            "bootstrap_servers": self.bootstrap,
            "connections": len(self.conns),
            "host": self.host,
        }

    # -------------------------------------------------------------------------------------------- the clock
    def now(self) -> int:
        """The virtual time now: the clock follows the wall clock while clients are connected (registered in
        external.CLOCKS only then). A step that moved it further (clock.advance) is followed from there."""
        core = self.core
        vt = self.anchor_vt + int((time.monotonic() - self.anchor_wall) * 1000)
        if core is not None and core.now_ms > vt:
            self.anchor_vt, self.anchor_wall = core.now_ms, time.monotonic()
            vt = core.now_ms
        return vt

    def _follow(self, on: bool) -> None:
        if on and self.sid not in external.CLOCKS and self.core is not None:
            self.anchor_vt, self.anchor_wall = self.core.now_ms, time.monotonic()
            external.CLOCKS[self.sid] = self.now
        elif not on:
            external.CLOCKS.pop(self.sid, None)

    # -------------------------------------------------------------------------------------------- binding
    async def bind(self, brokers: list[int]) -> None:
        loop = asyncio.get_running_loop()
        candidates = _port_candidates()
        for broker in brokers:

            def factory(b: int = broker) -> Connection:
                self.next_conn += 1
                return Connection(self, b, self.next_conn, self.bounds.socket_request_max_bytes, _pool())

            last_error: OSError | None = None
            for port in candidates:
                try:
                    server = await loop.create_server(factory, self.host, port, reuse_address=True)
                except OSError as e:
                    last_error = e
                    if port == 0:
                        raise
                    continue
                self.servers[broker] = server
                self.ports[broker] = server.sockets[0].getsockname()[1]
                break
            else:
                raise last_error or OSError("no free port in PLAYGROUND_LISTEN_PORTS")
        self.idle = loop.call_later(IDLE_CHECK_S, self._idle_check)

    async def shut(self) -> None:
        """Close the listening sockets and every connection (nothing more is fed to the session)."""
        self.closed = True
        self._follow(False)
        for handle in (self.timer, self.flush_at, self.idle, self.unthrottle):
            if handle is not None:
                handle.cancel()
        for server in self.servers.values():
            server.close()
        for conn in list(self.conns.values()):
            conn.close()
        self.conns.clear()
        for server in self.servers.values():
            try:
                await asyncio.wait_for(server.wait_closed(), 2.0)
            except TimeoutError:
                pass

    # -------------------------------------------------------------------------------------------- the session
    def _locked(self, fn: Callable[[Live], None]) -> list[Output] | None:
        """Run `fn` on the live session under its lock and take what the core has to send; None when this process's
        session is not the one the listener fed (rebuilt, reset, evicted): catch up first."""
        if self.core is None:
            return None
        with CACHE.lock(self.sid):
            live = CACHE.peek(self.sid)
            if live is None or live.moment is not None or external.core_of(live.backend) is not self.core:
                return None
            if live.listen is None or live.listen.get("owner") != external.OWNER:
                return None
            fn(live)
            return self.core.take_output()

    def _feed(self, items: list[tuple[int, int, int, bytes]]) -> None:
        if self.closed:
            return
        if self.resyncing or self.core is None:
            self.queued.extend(items)
            return

        def go(live: Live) -> None:
            started = time.perf_counter()
            for kind, conn, broker, payload in items:
                if kind == external.REQUEST:
                    external.receive(live, conn, broker, payload)
                else:
                    external.disconnect(live, conn)
            checkpoints.charge(live, (time.perf_counter() - started) * 1000)  # what a replay of them takes
            if not self.conns:
                self._follow(False)

        cpu_s = time.thread_time()
        outputs = self._locked(go)
        if outputs is None:
            self.queued.extend(items)
            self._resync()
            return
        self._write(outputs)
        self.buffered_inputs += len(items)
        for kind, _conn, _broker, payload in items:
            self.buffered_bytes += len(payload)
            if self.first_buffered is None:
                self.first_buffered = time.monotonic()
            if kind == external.DISCONNECT:
                self.urgent = True  # a client went away: its card says so soon
        self._after()
        # the network thread's time counts as the handlers' does (KIP-124): writing the answers, the timers
        self._charge(time.thread_time() - cpu_s)

    def _charge(self, cpu_s: float) -> None:
        """The request quota: the CPU time the session's requests took; past `request_percentage` of a core, every
        connection of the session is muted for the throttle time (ClientRequestQuotaManager, by CPU not I/O threads)."""
        if self.request_quota is None or cpu_s <= 0:
            return
        now_ms = int(time.monotonic() * 1000)
        # percent of a core for a second; a throttle of one window at most, as Kafka's: an unbounded one grew to the
        # whole measured window times the overshoot (99 s at 100% of a core against 10%) on a busy machine, and every
        # client of the session, a new one too, waited that long
        throttle_ms = self.request_quota.record(cpu_s * 100.0, now_ms, max_throttle_ms=WINDOW_MS)
        if throttle_ms <= 0:
            return
        for conn in self.conns.values():
            conn.mute(QUOTA)
        if self.unthrottle is not None:
            self.unthrottle.cancel()
        self.unthrottle = asyncio.get_running_loop().call_later(throttle_ms / 1000, self._end_throttle)

    def _end_throttle(self) -> None:
        self.unthrottle = None
        for conn in list(self.conns.values()):
            conn.unmute(QUOTA)

    def _tick(self) -> None:
        self.timer = None
        if self.closed or self.resyncing:
            return
        cpu_s = time.thread_time()
        outputs = self._locked(external.tick)
        if outputs is None:
            self._resync()
            return
        self._write(outputs)
        self._after()
        self._charge(time.thread_time() - cpu_s)  # what its requests left for later (a fetch's wait) is theirs too

    def _write(self, outputs: list[Output]) -> None:
        for out in outputs:
            conn = self.conns.get(out.conn)
            if conn is None:
                continue
            if out.data is None:
                conn.close()
            else:
                conn.write(out.data)
        if self.core is not None:
            after_core(self.conns, self.core)  # memory back to the pool; read again what the core caught up with

    def _after(self) -> None:
        """After the core moved: the next timer, and a flush when one is due."""
        core = self.core
        if core is None or self.closed:
            return
        self.last_activity = time.monotonic()
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        due = core.next_due_ms()
        if due is not None and self.sid in external.CLOCKS:
            delay_s = max(0.0, (due - self.now()) / 1000 + 0.0005)
            self.timer = asyncio.get_running_loop().call_later(delay_s, self._tick)
        events = _events(core)
        if self.first_buffered is None and events == self.events_flushed:
            return
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        urgent = (
            self.urgent
            or events != self.events_flushed
            or self.buffered_bytes > MAX_BUFFERED_BYTES
            or self.buffered_inputs >= MAX_BUFFERED_INPUTS
        )
        if urgent:
            when = max(now, self.last_flush + MIN_FLUSH_INTERVAL_S)
        else:
            when = (self.first_buffered or now) + QUIET_FLUSH_S
        if self.flush_at is not None:
            if self.flush_at.when() <= loop.time() + (when - now):
                return
            self.flush_at.cancel()
        self.flush_at = loop.call_later(max(0.0, when - now), self._flush)

    # -------------------------------------------------------------------------------------------- flushing
    def _flush(self) -> None:
        self.flush_at = None
        if self.flushing or self.closed:
            if not self.closed:
                self.flush_at = asyncio.get_running_loop().call_later(MIN_FLUSH_INTERVAL_S, self._flush)
            return
        self.urgent = False
        self.first_buffered = None
        self.buffered_bytes = 0
        self.buffered_inputs = 0
        self.events_flushed = _events(self.core) if self.core is not None else -1
        live = CACHE.peek(self.sid)
        if live is not None and not live.ext_inputs and not live.pending:
            return  # only time passed (a tick): the next row carries it
        self.flushing = True
        self.last_flush = time.monotonic()
        _the_loop().in_worker(self._flush_job)

    def _flush_job(self) -> None:
        again = False
        if self.closed:
            self.flushing = False
            return
        try:
            live, _change = commit(self.sid, lambda live: Change())  # cuts what came in, stores it first
            if live.length >= limits.limit("commands") or live.external_bytes >= limits.limit("kafka_log_bytes"):
                log.warning("session %s: the log is full; its listener stops", self.sid)
                stop(self.sid, why="full")
        except (CommandError, limits.LimitExceeded) as exc:
            log.warning("session %s: the clients' requests could not be stored: %s", self.sid, exc)
        except DatabaseError as exc:
            # the database was busy (SQLite's lock): what was cut stays pending on the session, stored next time
            log.info("session %s: storing the clients' requests failed (%s); trying again", self.sid, exc)
            again = True
        finally:
            self.flushing = False
            _the_loop().soon(self._retry if again else self._changed)

    def _retry(self) -> None:
        if not self.closed:
            self.urgent = True
            self.first_buffered = self.first_buffered or time.monotonic()
            self._changed()

    # -------------------------------------------------------------------------------------------- catching up
    def _changed(self) -> None:
        """The session changed (a command, a flush; in any thread): send what its core has for the clients (a step
        let time pass, a broker stopped), or notice that the session under the listener is another one now."""
        if self.closed or self.core is None:
            return  # not adopted yet: _adopt follows the listen entry's commit
        outputs = self._locked(lambda live: None)
        if outputs is None:
            self._resync()
            return
        self._write(outputs)
        self._after()

    async def _gone(self) -> None:
        await self.shut()
        _forget(self)

    def _resync(self) -> None:
        if self.resyncing or self.closed:
            return
        self.resyncing = True

        def job() -> None:
            try:
                load(self.sid)
            except CommandError:
                pass
            _the_loop().soon(self._adopt)

        _the_loop().in_worker(job)

    def _adopt(self) -> None:
        """Take the live session as this process now holds it. Its log no longer listening (a reset, going back
        before the listen entry): the listener closes. Another core (the session was rebuilt from its log, or went
        back): the connections close (clients reconnect and find the cluster as it is now), and the core learns it."""
        self.resyncing = False
        if self.closed:
            return
        with CACHE.lock(self.sid):
            live = CACHE.peek(self.sid)
            core = external.core_of(live.backend) if live is not None else None
            ours = live is not None and live.listen is not None and live.listen.get("owner") == external.OWNER
            if live is None or core is None or not ours:
                gone = True
            else:
                gone = False
                if core is not self.core:
                    core.take_output()
                    was = self.core
                    self.core = core
                    self.events_flushed = _events(core)  # what the log holds already: nothing to store for it
                    if was is not None:
                        for conn in list(self.conns.values()):
                            conn.close()
                        for conn_id in list(core.conns):
                            external.disconnect(live, conn_id)
                        core.take_output()
                        self.queued.clear()
        if gone:
            log.info("session %s: its log no longer listens; closing the listener", self.sid)
            asyncio.get_running_loop().create_task(self._gone())
            return
        if self.conns:
            self._follow(True)
        queued, self.queued = self.queued, []
        if queued:
            self._feed(queued)
        else:
            self._after()

    # -------------------------------------------------------------------------------------------- sockets
    def _opened(self, conn: Connection) -> None:
        if self.closed or len(self.conns) >= limits.limit("listener_connections"):
            log.info("session %s: connection refused (closed, or %d open)", self.sid, len(self.conns))
            conn.close()
            return
        self.conns[conn.conn_id] = conn
        self.last_activity = time.monotonic()
        if self.unthrottle is not None:
            conn.mute(QUOTA)  # the session is throttled: a new connection waits too
        admit(conn, self.bounds.max_connection_creation_rate, self.accept_quotas)
        self._follow(True)

    def _frames(self, conn: Connection, frames: list[bytes]) -> None:
        if self.closed or conn.conn_id not in self.conns:
            return
        self._feed([(external.REQUEST, conn.conn_id, conn.broker, payload) for payload in frames])

    def _lost(self, conn: Connection) -> None:
        if self.conns.pop(conn.conn_id, None) is None or self.closed:
            return
        self._feed([(external.DISCONNECT, conn.conn_id, conn.broker, b"")])

    def _idle_check(self) -> None:
        self.idle = None
        if self.closed:
            return
        close_idle(self.conns, self.bounds.connections_max_idle_ms, self.label)
        _the_loop().in_worker(lambda: beat(self.sid))
        quiet_s = time.monotonic() - self.last_activity
        if not self.conns and quiet_s >= limits.limit("listener_idle_s"):
            log.info("session %s: no client for %.0f s; closing its listener", self.sid, quiet_s)
            _the_loop().in_worker(lambda: _stop_quietly(self.sid, "idle"))
            return
        self.idle = asyncio.get_running_loop().call_later(IDLE_CHECK_S, self._idle_check)


def beat(sid: str, alive: bool = True) -> None:
    """The listener's heartbeat (every IDLE_CHECK_S): while it is fresh, other processes leave the session to this
    one (commands.listening_elsewhere); a process killed stops beating, and the session is anyone's again soon."""
    Session.objects.filter(pk=sid).update(listener_at=timezone.now() if alive else None)


def _events(core: ServerCore) -> int:
    """How many events the simulator has emitted (their sequence number): any change worth showing emits one."""
    return int(core.cluster._seq)


def _port_candidates() -> Iterator[int] | list[int]:
    spec = str(getattr(settings, "PLAYGROUND_LISTEN_PORTS", "") or "").strip()
    if not spec:
        return [0]
    lo, _sep, hi = spec.partition("-")
    first, last = int(lo), int(hi or lo)
    return iter(range(first, last + 1))


def _forget(listener: SessionListener) -> None:
    if LISTENERS.get(listener.sid) is listener:
        del LISTENERS[listener.sid]
    external.CLOCKS.pop(listener.sid, None)


# ------------------------------------------------------------------------------------------------ the session's side
def enabled() -> bool:
    return bool(getattr(settings, "PLAYGROUND_LISTEN", False))


def _off_message() -> str:
    return str(
        _(
            "This server does not serve sessions to your own applications (PLAYGROUND_LISTEN is off: production mode "
            "keeps it off unless the server enables it)."
        )
    )


def listening(live: Live) -> bool:
    """Whether the session's listener (as of the step `live` shows) serves clients now: in this process, or in
    another one that still holds it."""
    if live.listen is None:
        return False
    if live.moment is not None:
        return True  # an earlier step shows its clients as they were then
    mine = LISTENERS.get(live.session_id)
    if live.listen.get("owner") == external.OWNER:
        return mine is not None and not mine.closed
    from playground.session.commands import listening_elsewhere

    return listening_elsewhere(live)


def reading(live: Live) -> contextlib.AbstractContextManager[Any]:
    """What a reader of `live` holds while it reads the backend: the session's lock when this process's listener
    feeds it (its loop applies the clients' requests under that lock as they come, while pages and frames are built in
    other threads: a render once read the clients' history as it grew, "deque mutated during iteration"); nothing
    for anything else (a moment, or a session no listener here feeds, changes only under the lock of whoever changes
    it, and readers of those take it through session.load). The listeners' loop waits for the read as it waits for a
    commit of the same session (its clients' answers delayed as a busy broker's are); Daphne's loop does not."""
    if live.moment is None and live.session_id in LISTENERS:
        return CACHE.lock(live.session_id)
    return contextlib.nullcontext()


def state(sid: str) -> dict[str, Any]:
    """What GET /s/<id>/listen/ answers: this process's listener, or what the log says of one elsewhere."""
    listener = LISTENERS.get(sid)
    if listener is not None and not listener.closed:
        return listener.state()
    live = load(sid)
    if live.listen is None:
        return {"state": "off" if enabled() else "disabled", "bootstrap_servers": ""}
    from playground.session.commands import listening_elsewhere

    bootstrap = ",".join(f"{h}:{p}" for h, p in live.listen["brokers"].values())
    if listening_elsewhere(live):
        return {"state": "elsewhere", "bootstrap_servers": bootstrap}
    return {"state": "closed", "bootstrap_servers": bootstrap}


def start(sid: str, client: str = "") -> dict[str, Any]:
    """Start the session's listener in this process (or answer the one that runs)."""
    if not enabled():
        raise CommandError(_off_message(), status=403)
    listener = LISTENERS.get(sid)
    if listener is not None and not listener.closed:
        return listener.state()
    live = load(sid)
    if not external.can_listen(live.backend):
        raise CommandError(_("Only a session on the simulator can serve your own application."), status=409)
    limits.check_listeners(sum(1 for x in LISTENERS.values() if client and x.client == client), len(LISTENERS))
    host = str(getattr(settings, "PLAYGROUND_LISTEN_HOST", "127.0.0.1") or "127.0.0.1")
    advertised = str(getattr(settings, "PLAYGROUND_LISTEN_ADVERTISED_HOST", "") or "") or host
    bounds = limits.kafka_bounds()
    listener = SessionListener(sid, client, host, advertised, bounds)
    LISTENERS[sid] = listener
    loop = _the_loop()
    try:
        loop.run(listener.bind(list(range(1, live.cluster.brokers + 1))))
    except OSError as exc:
        _forget(listener)
        loop.run(listener.shut())
        raise CommandError(_("Cannot listen on %(host)s: %(e)s") % {"host": host, "e": exc}, status=503) from exc
    entry = {
        external.LISTEN: {
            "brokers": {str(b): [advertised, p] for b, p in sorted(listener.ports.items())},
            "owner": external.OWNER,
            "session": sid,
            "wall_ms": int(time.time() * 1000),
            "config": bounds.to_config(),  # what the protocol core bounds, as a replay must bound it too
        }
    }

    def mutate(live: Live) -> Change:
        if not external.can_listen(live.backend):
            raise CommandError(_("Only a session on the simulator can serve your own application."), status=409)
        limits.check_commands(live.length + len(live.pending) + 1)
        return Change(append=[run_entry(live, entry)], message="listen")

    try:
        beat(sid)
        commit(sid, mutate)
    except BaseException:
        _forget(listener)
        loop.run(listener.shut())
        raise
    loop.soon(listener._adopt)
    return listener.state()


def stop(sid: str, why: str = "stopped") -> dict[str, Any]:
    """Stop the session's listener: its connections close, and the log says so."""
    listener = LISTENERS.get(sid)
    clock = external.CLOCKS.get(sid)
    followed = clock() if clock is not None else 0  # where the clock followed the wall clock to (clients connected)
    if listener is not None:
        _forget(listener)
        _the_loop().run(listener.shut())
    live = load(sid)
    if live.listen is not None:

        def mutate(live: Live) -> Change:
            if live.listen is None:
                return Change()
            body: dict[str, Any] = {"why": why, "wall_ms": int(time.time() * 1000)}
            core = external.core_of(live.backend)
            if core is not None:
                body["vt"] = max(core.now_ms, followed)  # the connections close then, live and in a replay
            entry = {external.UNLISTEN: body}
            return Change(append=[run_entry(live, entry)], message="unlisten")

        commit(sid, mutate)
    beat(sid, alive=False)
    return {"state": "off", "bootstrap_servers": ""}


def _stop_quietly(sid: str, why: str) -> None:
    try:
        stop(sid, why)
    except Exception:
        log.exception("session %s: stopping its listener failed", sid)


def _on_changed(sender: Any, live: Live, **_: Any) -> None:
    listener = LISTENERS.get(live.session_id)
    if listener is not None and not listener.closed and _LOOP is not None:
        _LOOP.soon(listener._changed)


signals.changed.connect(_on_changed, dispatch_uid="session.listener")


def drain(timeout_s: float = 30.0) -> None:
    """Wait until the database work queued so far is done (the worker is one thread: a no-op after it is enough)."""
    if _LOOP is not None:
        _LOOP.worker.submit(lambda: None).result(timeout_s)


def close_all() -> None:
    """This process stops: every listener's sockets close (the logs keep what the clients did)."""
    if _LOOP is None:
        return
    for listener in list(LISTENERS.values()):
        _forget(listener)
        try:
            _LOOP.run(listener.shut(), timeout_s=3.0)
        except Exception:
            pass


atexit.register(close_all)
