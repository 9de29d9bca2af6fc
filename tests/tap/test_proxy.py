"""The tap's asyncio layer over loopback, in front of the simulated cluster served over the Kafka protocol
(playground.simserver, in this process): answers that name brokers name the tap's listeners, a broker going away
closes its clients' connections, an oversize frame closes the connection as a broker would, and a large frame is
streamed through without being kept whole."""

from __future__ import annotations

import asyncio
import struct
import tracemalloc

import pytest

from playground.protocol import messages
from playground.protocol.framing import frame
from playground.sim.cluster import Cluster
from playground.simserver.server import SimServer
from playground.tap import wire
from playground.tap.proxy import Tap

CAP_S = 60.0  # a cap for a busy machine, never a measure


async def ask(reader, writer, api_key: int, version: int, body: dict, correlation: int = 1):
    cls = messages.request_class(api_key, version)
    writer.write(frame(messages.encode_request(api_key, version, correlation, "tap-test", messages.build(cls, body))))
    await writer.drain()
    (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), CAP_S))
    payload = await asyncio.wait_for(reader.readexactly(size), CAP_S)
    return messages.decode_response(api_key, version, payload)


@pytest.fixture
async def sim_and_tap():
    server = SimServer(Cluster(brokers=3, topics={"orders": 3}, keep_events=False))
    upstream = await server.start()
    tap = Tap(upstream)
    await tap.start()
    yield server, tap
    await tap.close()
    await server.close()


async def test_it_answers_metadata_and_find_coordinator_with_its_own_listeners(sim_and_tap):
    server, tap = sim_and_tap
    host, port = tap.bootstrap.split(",")[0].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    _, metadata = await ask(reader, writer, wire.METADATA, 12, {"topics": None})
    listeners = {int(b.node_id): (b.host, int(b.port)) for b in metadata.brokers}
    assert listeners == {node: ("127.0.0.1", p) for node, p in tap.ports.items()}
    assert set(tap.ports.values()).isdisjoint(server.ports.values())
    _, found = await ask(reader, writer, wire.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]}, 2)
    (coordinator,) = found.coordinators
    assert (coordinator.host, int(coordinator.port)) == listeners[int(coordinator.node_id)]
    writer.close()


async def test_it_closes_the_clients_connection_when_its_broker_goes_away(sim_and_tap):
    server, tap = sim_and_tap
    reader, writer = await asyncio.open_connection("127.0.0.1", tap.ports[2])
    await ask(reader, writer, wire.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    await server.stop_broker(2)
    assert await asyncio.wait_for(reader.read(1), CAP_S) == b""
    conns = {c["connection"]: c for c in tap.report()["connections"]}
    (conn,) = [c for c in conns.values() if c["broker"] == 2]
    assert conn["software"] == {"name": "t", "version": "1"}
    writer.close()


async def test_it_closes_a_connection_whose_frame_is_over_socket_request_max_bytes(sim_and_tap):
    _, tap = sim_and_tap
    reader, writer = await asyncio.open_connection("127.0.0.1", tap.ports[1])
    writer.write(struct.pack(">i", 104_857_601) + b"\x00\x00\x00\x09")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(1), CAP_S) == b""
    writer.close()


async def test_it_streams_a_large_request_through_without_keeping_it_whole(sim_and_tap):
    _, tap = sim_and_tap
    received = 0
    done = asyncio.Event()

    async def sink(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal received
        while chunk := await reader.read(65536):
            received += len(chunk)
            if received >= len(request):
                done.set()
        writer.close()

    sink_server = await asyncio.start_server(sink, "127.0.0.1", 0)
    tap.brokers[1] = ("127.0.0.1", sink_server.sockets[0].getsockname()[1])  # broker 1 is now a byte sink
    body = struct.pack(">hhih", wire.FETCH, 12, 7, -1) + bytes(30 * 1024 * 1024)  # a 30 MiB frame
    request = frame(body)
    del body
    _reader, writer = await asyncio.open_connection("127.0.0.1", tap.ports[1])
    tracemalloc.start()
    try:
        view = memoryview(request)
        for start in range(0, len(request), 65536):  # as a client's socket sends it: not copied whole into a buffer
            writer.write(view[start : start + 65536])
            await writer.drain()
        await asyncio.wait_for(done.wait(), CAP_S)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert received == len(request)
    assert peak < 4 * 1024 * 1024, f"{peak} bytes at the peak while forwarding a 30 MiB frame"
    writer.close()
    sink_server.close()
