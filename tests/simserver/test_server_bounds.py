"""The sockets' side of the door (playground/simserver/server.py): a connection whose answers go unread is not read,
an idle one is closed, a frame over socket.request.max.bytes closes its connection, and the requests being read share
one memory pool (queued.max.request.bytes). Served in-process by the asyncio layer, driven by raw sockets."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from playground.protocol import messages
from playground.sim.cluster import Cluster
from playground.simserver import server as server_module
from playground.simserver.server import MEMORY, SimServer
from tests.waiting import CAP_S, until

METADATA = 3


def metadata_frame(correlation: int) -> bytes:
    cls = messages.request_class(METADATA, 12)
    body = messages.build(
        cls,
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    )
    payload = messages.encode_request(METADATA, 12, correlation, "bounds-test", body)
    return struct.pack(">i", len(payload)) + payload


async def serve(**config: str) -> tuple[SimServer, list[int]]:
    cluster = Cluster(brokers=1, topics={f"t{i}": 16 for i in range(8)}, config=config, keep_events=False)
    seen: list[int] = []
    server = SimServer(cluster, config=config, on_request=lambda b, k, n, v, c: seen.append(k))
    await server.start()
    return server, seen


@pytest.mark.asyncio
async def test_a_client_that_never_reads_its_answers_stops_being_read():
    server, seen = await serve()
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", server.ports[1])
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        frames = b"".join(metadata_frame(i) for i in range(20_000))  # ~40 MB of answers if all were made
        writer.write(frames)
        # the server reads until its send buffer for this client is full, then mutes the channel: the count stops
        await until(lambda: len(seen) > 50)
        settled = -1
        while settled != len(seen):
            settled = len(seen)
            await asyncio.sleep(0.5)
        assert len(seen) < 500, len(seen)
        (conn,) = server._conns.values()
        assert "unread" in conn.muted
        writer.transport.abort()
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_a_muted_client_that_reads_again_is_answered_everything_in_order():
    server, seen = await serve()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.ports[1], limit=1 << 24)
        count = 3000
        writer.write(b"".join(metadata_frame(i) for i in range(count)))
        await until(lambda: len(seen) > 50)
        await asyncio.sleep(0.5)  # long enough for its answers to back up
        correlations = []
        for _ in range(count):
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), CAP_S))[0]
            body = await asyncio.wait_for(reader.readexactly(size), CAP_S)
            correlations.append(struct.unpack_from(">i", body, 0)[0])
        assert correlations == list(range(count))
        writer.close()
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_a_connection_over_the_creation_rate_is_connected_and_read_only_in_its_turn():
    server, seen = await serve(**{"max.connection.creation.rate": "1"})
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        clients = [await asyncio.open_connection("127.0.0.1", server.ports[1]) for _ in range(13)]
        for i, (_reader, writer) in enumerate(clients):
            writer.write(metadata_frame(i))
        answered_after_s = []
        for reader, _writer in clients:
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), CAP_S))[0]
            await asyncio.wait_for(reader.readexactly(size), CAP_S)
            answered_after_s.append(loop.time() - started)
        # ten in the least window measured (10 s) is the rate; the acceptor then waits a second before each
        assert max(answered_after_s[:10]) < answered_after_s[12]
        assert answered_after_s[12] >= 2.5
        assert len(seen) == 13  # nothing lost: each answered in its turn
        for _reader, writer in clients:
            writer.close()
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_an_idle_connection_is_closed_after_connections_max_idle_ms(monkeypatch):
    monkeypatch.setattr(server_module, "IDLE_CHECK_S", 0.1)
    server, _seen = await serve(**{"connections.max.idle.ms": "300"})
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.ports[1])
        assert await asyncio.wait_for(reader.read(), CAP_S) == b""  # closed by the server: EOF
        writer.close()
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_a_frame_over_socket_request_max_bytes_closes_its_connection_before_its_body_is_read():
    server, seen = await serve(**{"socket.request.max.bytes": "1000"})
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.ports[1])
        writer.write(struct.pack(">i", 5000) + b"\x00" * 100)
        assert await asyncio.wait_for(reader.read(), CAP_S) == b""
        assert seen == []
        writer.close()
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_a_connection_waits_unread_while_the_memory_pool_is_taken_and_goes_on_when_it_frees():
    server, seen = await serve(**{"queued.max.request.bytes": "1000"})
    try:
        _r1, big = await asyncio.open_connection("127.0.0.1", server.ports[1])
        frame = metadata_frame(1)
        # a frame announced as 2000 bytes takes the whole pool while its body has not come
        big.write(struct.pack(">i", 2000) + b"\x00" * 10)
        await asyncio.sleep(0.2)
        assert server.pool.used_bytes >= 1000
        r2, small = await asyncio.open_connection("127.0.0.1", server.ports[1])
        small.write(frame)
        await until(lambda: any(MEMORY in c.muted for c in server._conns.values()))
        assert seen == []
        big.transport.abort()  # the pool frees: the waiting connection is read and answered
        size = struct.unpack(">i", await asyncio.wait_for(r2.readexactly(4), CAP_S))[0]
        await asyncio.wait_for(r2.readexactly(size), CAP_S)
        assert seen == [METADATA]
        assert server.pool.used_bytes == 0
        small.close()
    finally:
        await server.close()
