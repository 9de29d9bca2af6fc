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
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from playground.protocol.framing import FrameError, FrameReader
from playground.protocol.messages import api_name, peek
from playground.sim.cluster import Cluster
from playground.simserver.apis import HANDLERS
from playground.simserver.core import ServerCore

log = logging.getLogger("playground.simserver")

# A connection that queues this many requests without reading its answers stops being read until it catches up.
MAX_QUEUED_REQUESTS = 200


class Owner(Protocol):
    """Whoever serves a connection's frames: a SimServer, or a session's listener (playground/session/listener.py)."""

    label: str  # how the log names it

    def _opened(self, conn: Connection) -> None: ...

    def _frames(self, conn: Connection, frames: list[bytes]) -> None: ...

    def _lost(self, conn: Connection) -> None: ...


class Connection(asyncio.Protocol):
    """A client's connection to one simulated broker: it cuts what arrives into frames and hands them to its owner; a
    malformed or oversize frame closes it."""

    def __init__(self, owner: Owner, broker: int, conn_id: int) -> None:
        self.owner = owner
        self.broker = broker
        self.conn_id = conn_id
        self.reader = FrameReader()
        self.transport: asyncio.Transport | None = None
        self.paused = False  # reading paused until the core has answered what it queued

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.owner._opened(self)

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.reader.feed(data)
        except FrameError as e:
            log.info("%sbroker %s connection %s: %s; closing it", self.owner.label, self.broker, self.conn_id, e)
            self.close()
            return
        if frames:
            self.owner._frames(self, frames)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.owner._lost(self)

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


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
        self.started_s = time.monotonic()
        return self.bootstrap

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{self.ports[b]}" for b in self.cluster.broker_ids)

    async def _listen(self, broker: int, port: int) -> None:
        assert self._loop is not None

        def factory() -> Connection:
            self._next_conn += 1
            return Connection(self, broker, self._next_conn)

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
        if self._timer is not None:
            self._timer.cancel()
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
        queued = self.core.conns.get(conn.conn_id)
        if queued is not None and len(queued.queue) > MAX_QUEUED_REQUESTS and conn.transport is not None:
            conn.transport.pause_reading()
            conn.paused = True

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
        for conn in self._conns.values():
            if conn.paused and conn.transport is not None:
                queued = self.core.conns.get(conn.conn_id)
                if queued is None or len(queued.queue) <= MAX_QUEUED_REQUESTS // 2:
                    conn.transport.resume_reading()
                    conn.paused = False
