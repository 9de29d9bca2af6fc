"""The asyncio layer around the pure core: a listener per simulated broker, connections, and the virtual clock
following the wall clock.

Time: before each input the core's virtual clock is moved to the wall clock's time (virtual ms = the epoch
milliseconds when the server started + the monotonic milliseconds since), and between inputs the server sleeps until
the scheduler's next due entry, so timeouts, the coordinator's abort scan, replication and long-polling fetches happen
in real time. `follow_when_idle=False` (a session's listener, issue 16) stops the clock while no client is connected:
time then moves only with the session's own steps.

A stopped broker's listener is closed (new connections are refused) and its connections are closed, unanswered; a
started one listens on its port again. Frames over socket.request.max.bytes, malformed frames and requests the core
cannot read close the connection; nothing a client sends can stop the server.

Muted channels (SocketServer): a connection is not read while its answers wait unread (more than UNREAD_MAX_BYTES in
its send buffer: the client does not read them) or while the core has many of its requests queued, and what it had
sent is handed to the core only once its answers drain, so a client that never reads costs one buffer and no CPU; a
connection with no traffic for `connections.max.idle.ms` is closed (Selector's idle expiry).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from playground.protocol.framing import MAX_REQUEST_BYTES, FrameError, FrameReader
from playground.protocol.messages import api_name, peek
from playground.sim.cluster import Cluster
from playground.simserver.apis import HANDLERS
from playground.simserver.bounds import Bounds
from playground.simserver.core import ServerCore
from playground.simserver.quotas import AcceptQuota

log = logging.getLogger("playground.simserver")

# A connection with this many requests waiting in the core (pipelined behind one being handled) is not read until the
# core catches up: a client keeps a few in flight (max.in.flight.requests.per.connection, 5 by default).
MAX_QUEUED_REQUESTS = 8
# Answers a connection may leave unread in its send buffer before it is muted (Kafka sends one answer at a time per
# channel and reads nothing meanwhile; the socket's own buffer, socket.send.buffer.bytes, is 100 KiB by default).
UNREAD_MAX_BYTES = 64 * 1024
# socket.send.buffer.bytes and socket.receive.buffer.bytes: the kernel's buffers of an accepted socket (Kafka's 100 KiB
# defaults), so that what a client leaves unread stays small in the kernel too
SOCKET_BUFFER_BYTES = 102_400
IDLE_CHECK_S = 5.0
QUEUE, UNREAD, QUOTA, MEMORY, ACCEPT = "queue", "unread", "quota", "memory", "accept"  # why a connection is muted


class MemoryPool:
    """`queued.max.request.bytes`: the memory the requests being read may take together, over every connection that
    shares the pool (SimpleMemoryPool, not strict: a frame is given its memory while any is left, and a connection
    that cannot have it is not read until some is freed). None: no bound (Kafka's default, -1)."""

    def __init__(self, capacity_bytes: int | None) -> None:
        self.capacity_bytes = capacity_bytes
        self.used_bytes = 0
        self._waiting: dict[int, Connection] = {}

    def allocate(self, conn: Connection, size: int) -> bool:
        if self.capacity_bytes is not None and self.used_bytes >= self.capacity_bytes:
            self._waiting[id(conn)] = conn
            return False
        self.used_bytes += size
        return True

    def release(self, size: int) -> None:
        self.used_bytes -= size
        while self._waiting and (self.capacity_bytes is None or self.used_bytes < self.capacity_bytes):
            conn = self._waiting.pop(next(iter(self._waiting)))  # the longest waiting first
            conn.retry()

    def forget(self, conn: Connection) -> None:
        self._waiting.pop(id(conn), None)


class Owner(Protocol):
    """Whoever serves a connection's frames: a SimServer, or a session's listener (playground/session/listener.py)."""

    label: str  # how the log names it

    def _opened(self, conn: Connection) -> None: ...

    def _frames(self, conn: Connection, frames: list[bytes]) -> None: ...

    def _lost(self, conn: Connection) -> None: ...


class Connection(asyncio.Protocol):
    """A client's connection to one simulated broker: it cuts what arrives into frames and hands them to its owner,
    one at a time while the channel is open; a malformed or oversize frame closes it. Muted (see the module's
    docstring) it is not read, and what it had sent waits here. A frame holds its memory of the pool from its size on
    until the core is done with its request (`settle`)."""

    def __init__(
        self,
        owner: Owner,
        broker: int,
        conn_id: int,
        max_frame_bytes: int = MAX_REQUEST_BYTES,
        pool: MemoryPool | None = None,
    ) -> None:
        self.owner = owner
        self.broker = broker
        self.conn_id = conn_id
        self.pool = pool or MemoryPool(None)
        self.reader = FrameReader(max_frame_bytes, self._allocate)
        self.reading_bytes = 0  # what the frame being read holds of the pool
        self.alive: deque[int] = deque()  # the sizes of the frames read and not done with (held, then in the core)
        self.transport: asyncio.Transport | None = None
        self.muted: set[str] = set()
        self.held: deque[bytes] = deque()  # frames read but not handed over yet
        self.last_active = time.monotonic()

    # ---- reading ------------------------------------------------------------------------------------------------
    def _allocate(self, size: int) -> bool:
        if self.pool.allocate(self, size):
            self.reading_bytes += size
            return True
        self.mute(MEMORY)
        return False

    def retry(self) -> None:
        """The pool freed memory: read on from where the frame waited for it."""
        self.unmute(MEMORY)
        if self.transport is not None and not self.transport.is_closing():
            self.data_received(b"")

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=UNREAD_MAX_BYTES)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
                sock.setsockopt(socket.SOL_SOCKET, option, SOCKET_BUFFER_BYTES)
        self.owner._opened(self)

    def data_received(self, data: bytes) -> None:
        self.last_active = time.monotonic()
        try:
            frames = self.reader.feed(data)
        except FrameError as e:
            log.info("%sbroker %s connection %s: %s; closing it", self.owner.label, self.broker, self.conn_id, e)
            self.close()
            return
        for payload in frames:
            self.reading_bytes -= len(payload)
            self.alive.append(len(payload))
        self.held.extend(frames)
        self._hand_over()

    def _hand_over(self) -> None:
        """Hand the frames read to the owner one at a time while the channel is open: not while its answers go
        unread, nor while the core holds its earlier requests (a quota's throttle, a backlog), nor while its session
        is throttled by the request quota. Kafka reads a channel's next request once the answer to the last one is
        out."""
        while self.held and not self.muted & _HOLDING and self.transport is not None:
            self.owner._frames(self, [self.held.popleft()])

    def settle(self, in_core: int) -> None:
        """The core holds `in_core` of this connection's requests (queued, or being handled): the memory of those
        it is done with goes back to the pool."""
        alive = len(self.held) + in_core
        done = 0
        while len(self.alive) > alive:
            done += self.alive.popleft()
        if done:
            self.pool.release(done)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.pool.forget(self)
        self.held.clear()
        held = self.reading_bytes + sum(self.alive)
        self.reading_bytes = 0
        self.alive.clear()
        if held:
            self.pool.release(held)
        self.owner._lost(self)

    # ---- muting -------------------------------------------------------------------------------------------------
    # asyncio's flow control: the send buffer passed UNREAD_MAX_BYTES (the client is not reading), then drained
    def pause_writing(self) -> None:
        self.mute(UNREAD)

    def resume_writing(self) -> None:
        self.last_active = time.monotonic()
        self.unmute(UNREAD)

    def mute(self, why: str) -> None:
        if self.transport is not None and not self.muted:
            self.transport.pause_reading()
        self.muted.add(why)

    def unmute(self, why: str) -> None:
        if why not in self.muted:
            return
        self.muted.discard(why)
        if not self.muted and self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()
        if why in _HOLDING:
            self._hand_over()

    # ---- writing ------------------------------------------------------------------------------------------------
    def idle_s(self, now: float) -> float:
        """How long nothing moved: no bytes in, and its answers not drained."""
        return now - self.last_active

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            if not self.transport.get_write_buffer_size():
                self.last_active = time.monotonic()  # the answers flow
            self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


# While muted for these, what was read is not handed over either: Kafka would not have read it yet (one request at a
# time per channel). A throttled session's connections hold theirs too (KIP-219 mutes the channel for the throttle):
# handed over, a chunk of a thousand pipelined requests ran on past the throttle, holding the listeners' thread for
# seconds at a time on a busy machine.
_HOLDING = frozenset({UNREAD, QUEUE, QUOTA, ACCEPT})


def admit(conn: Connection, rate: float | None, quotas: dict[int, AcceptQuota]) -> None:
    """`max.connection.creation.rate`, per broker as each broker's acceptor keeps it (`quotas`): a connection over the
    rate is not read until the acceptor's throttle time has passed (quotas.AcceptQuota), so a client that reconnects
    in a loop costs an accept, not a session's requests."""
    if not rate:
        return
    quota = quotas.get(conn.broker)
    if quota is None:
        quota = quotas[conn.broker] = AcceptQuota(rate)
    delay_ms = quota.admit(int(time.monotonic() * 1000))
    if delay_ms > 0:
        conn.mute(ACCEPT)
        asyncio.get_running_loop().call_later(delay_ms / 1000, conn.unmute, ACCEPT)


def close_idle(conns: Mapping[int, Connection], idle_ms: int, label: str) -> None:
    """Close the connections with no traffic for `idle_ms` (connections.max.idle.ms)."""
    now = time.monotonic()
    for conn in list(conns.values()):
        if conn.idle_s(now) * 1000 >= idle_ms:
            log.info("%sbroker %s connection %s: idle for %d ms; closing it", label, conn.broker, conn.conn_id, idle_ms)
            conn.close()


def after_core(conns: Mapping[int, Connection], core: ServerCore) -> None:
    """After the core ran: each connection's memory of the requests it is done with goes back to the pool, and a
    connection whose requests the core holds back (queued past MAX_QUEUED_REQUESTS, or muted by a quota's throttle)
    is not read until it lets them go. Only the connections the core touched since can have changed (a throttle's
    end touches its connection too)."""
    now = core.now_ms
    touched, core.touched = core.touched, set()
    for conn_id in touched:
        conn = conns.get(conn_id)
        if conn is None:
            continue
        state = core.conns.get(conn_id)
        if state is None:
            conn.settle(0)
            conn.unmute(QUEUE)
            continue
        conn.settle(len(state.queue) + (1 if state.busy else 0))
        if len(state.queue) >= MAX_QUEUED_REQUESTS or state.throttled_until_ms > now:
            conn.mute(QUEUE)
        else:
            conn.unmute(QUEUE)


class SimServer:
    """Serves `cluster` on `host`, one listener per broker: `ports[b]` for broker b, or all from `base_port` (P, P+1,
    ...; 0: free ports). `start()` returns the bootstrap list once every listener accepts connections."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        host: str = "127.0.0.1",
        base_port: int = 0,
        seed: int = 0,
        config: Mapping[str, Any] | None = None,
        follow_when_idle: bool = True,
        record_values: bool = True,
        on_request: Callable[[int, int, str, int, str | None], None] | None = None,
    ) -> None:
        self.label = ""  # the log names the broker and the connection only
        self.cluster = cluster
        self.host = host
        self.base_port = base_port
        self.seed = seed
        self.config = dict(config or {})
        self.follow_when_idle = follow_when_idle
        self.record_values = record_values
        self.on_request = on_request  # (broker, api key, api name, version, client id): a debugging log
        self.core: ServerCore | None = None
        self.ports: dict[int, int] = {}
        self._listeners: dict[int, asyncio.AbstractServer] = {}
        self._conns: dict[int, Connection] = {}
        self._next_conn = 0
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._virtual_base = 0
        self._wall_base = 0.0
        self._paused_at: float | None = None
        self.started_s: float | None = None
        self._failures_logged = 0
        self.bounds = Bounds.from_config(self.config)
        queued = self.bounds.queued_max_request_bytes
        self.pool = MemoryPool(queued if queued > 0 else None)
        self.accept_quotas: dict[int, AcceptQuota] = {}
        self._idle: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------------------------------------ time
    def now_ms(self) -> int:
        assert self._loop is not None
        wall = self._paused_at if self._paused_at is not None else self._loop.time()
        return self._virtual_base + int((wall - self._wall_base) * 1000)

    def _schedule(self) -> None:
        assert self._loop is not None and self.core is not None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._paused_at is not None:
            return
        due = self.core.next_due_ms()
        if due is None:
            return
        delay_s = max(0.0, (due - self.now_ms()) / 1000 + 0.0005)
        self._timer = self._loop.call_later(delay_s, self._tick)

    def _tick(self) -> None:
        self._timer = None
        assert self.core is not None
        self.core.advance(self.now_ms())
        self._flush()
        self._schedule()

    # ------------------------------------------------------------------------------------------------ lifecycle
    async def start(self) -> str:
        self._loop = asyncio.get_running_loop()
        self._wall_base = self._loop.time()
        self._virtual_base = int(time.time() * 1000)
        for i, broker in enumerate(self.cluster.broker_ids):
            port = self.base_port + i if self.base_port else 0
            await self._listen(broker, port)
        endpoints = {b: (self.host, p) for b, p in self.ports.items()}
        self.core = ServerCore(
            self.cluster,
            endpoints,
            start_ms=self.now_ms(),
            seed=self.seed,
            config=self.config,
            record_values=self.record_values,
            handlers=HANDLERS,
        )
        if not self.follow_when_idle:
            self._paused_at = self._loop.time()
        self._schedule()
        self._idle = self._loop.call_later(IDLE_CHECK_S, self._idle_check)
        self.started_s = time.monotonic()
        return self.bootstrap

    def _idle_check(self) -> None:
        assert self._loop is not None
        close_idle(self._conns, self.bounds.connections_max_idle_ms, self.label)
        self._idle = self._loop.call_later(IDLE_CHECK_S, self._idle_check)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{self.ports[b]}" for b in self.cluster.broker_ids)

    async def _listen(self, broker: int, port: int) -> None:
        assert self._loop is not None

        def factory() -> Connection:
            self._next_conn += 1
            return Connection(self, broker, self._next_conn, self.bounds.socket_request_max_bytes, self.pool)

        server = await self._loop.create_server(factory, self.host, port, reuse_address=True)
        self._listeners[broker] = server
        self.ports[broker] = server.sockets[0].getsockname()[1]

    async def stop_broker(self, broker: int) -> None:
        assert self.core is not None
        listener = self._listeners.pop(broker, None)
        if listener is not None:
            listener.close()
        self.core.stop_broker(self.now_ms(), broker)
        self._flush()
        self._schedule()
        if listener is not None:
            await listener.wait_closed()

    async def start_broker(self, broker: int) -> None:
        assert self.core is not None
        if broker not in self._listeners:
            await self._listen(broker, self.ports[broker])
        self.core.start_broker(self.now_ms(), broker)
        self._flush()
        self._schedule()

    async def close(self) -> None:
        for handle in (self._timer, self._idle):
            if handle is not None:
                handle.cancel()
        for listener in self._listeners.values():
            listener.close()
        for conn in list(self._conns.values()):
            conn.close()
        for listener in self._listeners.values():
            await listener.wait_closed()
        self._listeners.clear()

    # ------------------------------------------------------------------------------------------------ connections
    def _opened(self, conn: Connection) -> None:
        assert self._loop is not None
        self._conns[conn.conn_id] = conn
        admit(conn, self.bounds.max_connection_creation_rate, self.accept_quotas)
        if self._paused_at is not None:
            self._wall_base += self._loop.time() - self._paused_at
            self._paused_at = None
            self._schedule()

    def _frames(self, conn: Connection, frames: list[bytes]) -> None:
        for payload in frames:
            self._receive(conn, payload)
            if conn.transport is None or conn.transport.is_closing():
                return

    def _lost(self, conn: Connection) -> None:
        assert self.core is not None and self._loop is not None
        if self._conns.pop(conn.conn_id, None) is None:
            return
        self.core.disconnect(self.now_ms(), conn.conn_id)
        self._flush()
        if not self._conns and not self.follow_when_idle:
            self._paused_at = self._loop.time()
        self._schedule()

    def _receive(self, conn: Connection, payload: bytes) -> None:
        assert self.core is not None
        if self.on_request is not None:
            try:
                api_key, version, _ = peek(payload)
                self.on_request(conn.broker, api_key, api_name(api_key), version, None)
            except Exception:
                pass
        self.core.receive(self.now_ms(), conn.broker, conn.conn_id, payload)
        if self.core.failure_count != self._failures_logged:
            for failure in list(self.core.failures)[-(self.core.failure_count - self._failures_logged) :]:
                log.warning("a request failed and its connection was closed: %s", failure)
            self._failures_logged = self.core.failure_count
        self._flush()
        self._schedule()

    def _flush(self) -> None:
        assert self.core is not None
        for out in self.core.take_output():
            conn = self._conns.get(out.conn)
            if conn is None:
                continue
            if out.data is None:
                conn.close()
            else:
                conn.write(out.data)
        after_core(self._conns, self.core)
