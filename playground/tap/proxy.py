"""The tap's asyncio layer: one listener per upstream broker, and for each client connection one connection to that
broker, with the bytes pumped both ways, in order, as they come.

A frame is read as its size prefix and a head (HEAD_BYTES at most); the rest is streamed through in chunks and never
kept, so a large Produce or Fetch costs a chunk of memory, not its size. Only what the observer needs is decoded:
the small requests of playground.tap.wire.OBSERVED and their answers (whole, when under DECODE_MAX_BYTES), a Produce
request's head, and the answers that name brokers (Metadata, FindCoordinator, DescribeCluster, and the KIP-951
node_endpoints of Produce and Fetch), which are written again with the tap's own addresses. Everything else is
forwarded byte for byte. With a recorder (`--record-session`: playground/session/taprecord.py) a request frame up to
its bound is read whole and handed to it before it goes upstream, and each answer to a request it was handed, before
the client has it (a Fetch answer read whole up to RECORDED_FETCH_MAX_BYTES); a larger request streams through as
ever and the recorder is told.

As a broker would: a request frame whose size is negative or over socket.request.max.bytes closes the connection
before a byte of its body is read (SocketServer's InvalidReceiveException); anything else a broker cannot parse is
forwarded, and the broker closes the connection, which the tap passes on: when the upstream connection ends (the
broker went away, or refused what the client sent) the client's connection is closed, and the other way round.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from playground.protocol.framing import MAX_REQUEST_BYTES, FrameError, frame, frame_size
from playground.protocol.messages import (
    build,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_class,
)
from playground.tap import wire
from playground.tap.observer import Observer

log = logging.getLogger("playground.tap")

HEAD_BYTES = 4096  # a Produce request's header, transactional id, first topic and first batch header fit in it
DECODE_MAX_BYTES = 1024 * 1024  # observed requests and answers larger than this are forwarded unread
# a recorder is given Fetch answers up to this, read whole (what they returned bounds what the simulator returns)
RECORDED_FETCH_MAX_BYTES = 16 * 1024 * 1024
CHUNK_BYTES = 64 * 1024
_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")
_CLIENT_ID = struct.Struct(">h")
METADATA_VERSION = 9  # served by every release the playground knows (3.5 to 4.x)


class _EveryVersion(dict[int, tuple[int, int]]):  # decode_request's `served`: the tap reads what the broker will judge
    def get(self, key: Any, default: Any = None) -> tuple[int, int]:
        return (0, 32767)


class Recorder(Protocol):
    """Who keeps what the clients sent (playground/session/taprecord.py: the requests as a session's external
    clients' rows). Called on the tap's loop, in the order things happened on each connection; never blocks."""

    max_frame_bytes: int  # a request frame larger than this is forwarded, not recorded (nor kept whole)

    def request(self, conn_id: int, payload: bytes) -> None: ...

    def too_large(self, conn_id: int, size: int) -> None: ...

    def answer(self, conn_id: int, api_key: int, api_version: int, correlation_id: int, body: Any) -> None: ...

    def closed(self, conn_id: int) -> None: ...


@dataclass(frozen=True, slots=True)
class Pending:
    api_key: int
    api_version: int
    client_id: str | None
    request: Any  # the decoded body, a wire.ProduceHead, or None


def _client_id(head: bytes) -> str | None:
    if len(head) < 10:
        return None
    (n,) = _CLIENT_ID.unpack_from(head, 8)
    if n < 0 or len(head) < 10 + n:
        return None
    return head[10 : 10 + n].decode("utf-8", "replace")


class Tap:
    """Serves `upstream` (a bootstrap list) through listeners on `host`: the first from `base_port` (P, P+1, ... in
    the order of the brokers' ids; 0: free ports). `start()` returns the tap's bootstrap list."""

    def __init__(
        self,
        upstream: str,
        *,
        host: str = "127.0.0.1",
        base_port: int = 0,
        observer: Observer | None = None,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.upstream = [tuple(a.strip().rsplit(":", 1)) for a in upstream.split(",") if a.strip()]
        self.host = host
        self.base_port = base_port
        self.observer = observer or Observer()
        self.max_request_bytes = max_request_bytes
        self.clock_ms = clock_ms
        self.brokers: dict[int, tuple[str, int]] = {}  # node id -> the upstream broker's address
        self.ports: dict[int, int] = {}  # node id -> the tap's listener's port
        self._listeners: dict[int, asyncio.AbstractServer] = {}
        self._listening = asyncio.Lock()
        self._conns: dict[int, asyncio.Task[None]] = {}
        self._next_conn = 0
        self.started_ms = 0
        self.recorder: Recorder | None = None  # set before clients connect

    # ------------------------------------------------------------------------------------------ lifecycle
    async def start(self) -> str:
        self.started_ms = self.clock_ms()
        brokers = await self._learn()
        for node, host, port in sorted(brokers):
            self.brokers[node] = (host, port)
        for node in sorted(self.brokers):
            await self._listen(node)
        return self.bootstrap

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{self.ports[n]}" for n in sorted(self.ports))

    async def _learn(self) -> list[tuple[int, str, int]]:
        """The brokers, from a Metadata answer of the first bootstrap server that gives one."""
        return wire.brokers_named(await self._metadata(()))

    async def topics(self) -> dict[str, int]:
        """The upstream cluster's topics (internal ones left out) and their partition counts."""
        answer = await self._metadata(None)
        return {
            str(t.name): len(t.partitions)
            for t in answer.topics
            if t.name and not t.is_internal and int(getattr(t.error_code, "value", t.error_code)) == 0
        }

    async def _metadata(self, topics: tuple[()] | None) -> Any:
        errors = []
        for host, port in self.upstream:
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 30)
            except (OSError, TimeoutError) as e:
                errors.append(f"{host}:{port}: {e}")
                continue
            try:
                body = build(request_class(wire.METADATA, METADATA_VERSION), {"topics": topics})
                writer.write(frame(encode_request(wire.METADATA, METADATA_VERSION, 1, "playground-tap", body)))
                await writer.drain()
                size = _SIZE.unpack(await asyncio.wait_for(reader.readexactly(4), 30))[0]
                payload = await asyncio.wait_for(reader.readexactly(size), 30)
                return decode_response(wire.METADATA, METADATA_VERSION, payload)[1]
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as e:
                errors.append(f"{host}:{port}: {e}")
            finally:
                writer.close()
        raise OSError(f"no upstream broker answered Metadata ({'; '.join(errors) or 'no bootstrap server given'})")

    async def _listen(self, node: int) -> None:
        async with self._listening:
            if node in self._listeners:
                return
            port = self.base_port + len(self._listeners) if self.base_port else 0

            async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await self._serve(node, reader, writer)

            server = await asyncio.start_server(serve, self.host, port, reuse_address=True)
            self._listeners[node] = server
            self.ports[node] = server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        for listener in self._listeners.values():
            listener.close()
        for task in list(self._conns.values()):
            task.cancel()
        if self._conns:
            await asyncio.gather(*self._conns.values(), return_exceptions=True)
        for listener in self._listeners.values():
            await listener.wait_closed()

    def report(self) -> dict[str, Any]:
        return {
            "tap": {
                "upstream": ",".join(f"{h}:{p}" for h, p in self.upstream),
                "bootstrap": self.bootstrap,
                "started_ms": self.started_ms,
                "reported_ms": self.clock_ms(),
                "brokers": [
                    {"node_id": n, "upstream": f"{h}:{p}", "listener": f"{self.host}:{self.ports.get(n)}"}
                    for n, (h, p) in sorted(self.brokers.items())
                ],
            },
            **self.observer.report(),
        }

    # ------------------------------------------------------------------------------------------ addresses
    def _address_of(self, node: int) -> tuple[str, int] | None:
        port = self.ports.get(node)
        return None if port is None else (self.host, port)

    async def _rewritten(self, api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes | None:
        """The answer again with the tap's addresses (a broker it did not know yet gets its listener first), or None
        when it names no broker."""
        named = wire.brokers_named(body)
        if not named:
            return None
        for node, host, port in named:
            self.brokers[node] = (host, port)  # where a broker moved, new connections follow it
            if node not in self._listeners:
                await self._listen(node)
        return encode_response(api_key, api_version, correlation_id, wire.rewrite(body, self._address_of))

    # ------------------------------------------------------------------------------------------ connections
    async def _serve(self, node: int, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self._next_conn += 1
        conn_id = self._next_conn
        task = asyncio.current_task()
        assert task is not None
        self._conns[conn_id] = task
        peer = client_w.get_extra_info("peername") or ("?", 0)
        upstream_w: asyncio.StreamWriter | None = None
        try:
            try:
                upstream_r, upstream_w = await asyncio.open_connection(*self.brokers[node])
            except OSError as e:
                log.info("connection %s: broker %s at %s cannot be reached (%s); closing", conn_id, node,
                         self.brokers[node], e)  # fmt: skip
                return
            self.observer.opened(conn_id, self.clock_ms(), node, str(peer[0]), int(peer[1]))
            pending: dict[int, Pending] = {}
            pumps = [
                asyncio.create_task(self._requests(conn_id, client_r, upstream_w, pending)),
                asyncio.create_task(self._responses(conn_id, upstream_r, client_w, pending)),
            ]
            try:
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                pass  # the tap is closing: the connection ends here like any other (asyncio's streams log a cancel)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
            for p in pending.values():  # asked and never answered: the connection closed first
                self.observer.exchange(conn_id, self.clock_ms(), p.api_key, p.api_version, p.client_id, p.request, None)
        finally:
            for w in (client_w, upstream_w):
                if w is not None:
                    w.close()
            self.observer.closed(conn_id, self.clock_ms())
            if self.recorder is not None:
                self.recorder.closed(conn_id)
            self._conns.pop(conn_id, None)

    async def _requests(
        self, conn_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pending: dict[int, Pending]
    ) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                prefix = await reader.readexactly(4)
                try:
                    size = frame_size(prefix, self.max_request_bytes)
                except FrameError as e:
                    log.info("connection %s: %s; closing it", conn_id, e)
                    return
                head = await reader.readexactly(min(size, HEAD_BYTES))
                recorder = self.recorder
                if recorder is not None:
                    if size <= recorder.max_frame_bytes:
                        head += await reader.readexactly(size - len(head))  # kept whole as the listener keeps it
                    else:
                        recorder.too_large(conn_id, size)
                if len(head) >= 8:
                    api_key, api_version, correlation_id = struct.unpack_from(">hhi", head)
                    request: Any = None
                    client_id = _client_id(head)
                    if api_key in wire.OBSERVED and size <= DECODE_MAX_BYTES:
                        if len(head) < size:
                            head += await reader.readexactly(size - len(head))
                        try:
                            request = decode_request(head, _EveryVersion()).body
                        except ValueError:
                            request = None  # the broker judges it
                    elif api_key == wire.PRODUCE:
                        request = wire.read_produce_head(head)
                    if api_key == wire.PRODUCE and isinstance(request, wire.ProduceHead) and request.acks == 0:
                        self.observer.exchange(conn_id, self.clock_ms(), api_key, api_version, client_id, request, None)
                    else:
                        pending[correlation_id] = Pending(api_key, api_version, client_id, request)
                if recorder is not None and len(head) == size:
                    recorder.request(conn_id, head)  # before upstream can answer it: the answer follows it
                writer.write(prefix + head)
                await _stream(reader, writer, size - len(head))
                await writer.drain()

    async def _responses(
        self, conn_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pending: dict[int, Pending]
    ) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                prefix = await reader.readexactly(4)
                (size,) = _SIZE.unpack(prefix)
                if size < 4:
                    log.info("connection %s: the broker answered a frame of %d bytes; closing", conn_id, size)
                    return
                head = await reader.readexactly(min(size, HEAD_BYTES))
                (correlation_id,) = _CORRELATION.unpack_from(head)
                p = pending.pop(correlation_id, None)
                body = None
                if p is not None and _decoded(p, size, self.recorder is not None):
                    head += await reader.readexactly(size - len(head))
                    try:
                        body = decode_response(p.api_key, p.api_version, head)[1]
                    except Exception:  # kio's DecodeError family: forwarded as it came
                        body = None
                    if body is not None and (
                        p.api_key in wire.ADDRESSING or wire.node_endpoints_version(p.api_key, p.api_version)
                    ):
                        again = await self._rewritten(p.api_key, p.api_version, correlation_id, body)
                        if again is not None:
                            prefix, head = _SIZE.pack(len(again)), again
                            size = len(again)
                if p is not None and self.recorder is not None:
                    # before the client has it: what it sends next may depend on it (and carry what it gave)
                    self.recorder.answer(conn_id, p.api_key, p.api_version, correlation_id, body)
                writer.write(prefix + head)
                await _stream(reader, writer, size - len(head))
                await writer.drain()
                if p is not None:
                    self.observer.exchange(
                        conn_id, self.clock_ms(), p.api_key, p.api_version, p.client_id, p.request, body
                    )


def _decoded(p: Pending, size: int, recording: bool) -> bool:
    if p.api_key in wire.ADDRESSING:
        return True  # they must be rewritten whatever their size
    if recording and p.api_key == wire.FETCH and size <= RECORDED_FETCH_MAX_BYTES:
        return True
    if size > DECODE_MAX_BYTES or p.api_key == wire.API_VERSIONS:
        return False  # of ApiVersions the observer reads the request only (the software), not the long answer
    return (
        p.api_key in wire.OBSERVED or p.api_key == wire.PRODUCE or wire.node_endpoints_version(p.api_key, p.api_version)
    )


async def _stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, remaining: int) -> None:
    """Forward the rest of a frame without keeping it: a chunk at a time, each written before the next is read."""
    while remaining > 0:
        chunk = await reader.read(min(remaining, CHUNK_BYTES))
        if not chunk:
            raise asyncio.IncompleteReadError(b"", remaining)
        remaining -= len(chunk)
        writer.write(chunk)
        await writer.drain()
