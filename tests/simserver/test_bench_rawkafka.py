"""The benches' raw Kafka client (tools/bench/rawkafka.py), against the asyncio server in-process: what the abuse and
door benches print is read right (every pipelined request answered and counted; a Fetch answer's throttle time and
errors read in place as kio decodes them)."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from pathlib import Path

import pytest
from confluent_kafka import Producer

from playground.protocol import messages
from playground.sim.cluster import Cluster
from playground.simserver.server import SimServer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "bench"))

import rawkafka

CAP_S = 60.0


@pytest.fixture
def serve():
    """serve(**config) -> the bootstrap list of a one-broker cluster (orders, 2 partitions) served from a thread."""
    running = []

    def make(**config: str) -> str:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        cluster = Cluster(brokers=1, topics={"orders": 2}, config=config, keep_events=False)
        server = SimServer(cluster, config=config)
        running.append((server, loop, thread))
        return asyncio.run_coroutine_threadsafe(server.start(), loop).result(CAP_S)

    yield make
    for server, loop, thread in running:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(CAP_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(CAP_S)


def test_it_pipelines_a_count_of_fetches_and_counts_every_answer(serve):
    bootstrap = serve()
    host, port = rawkafka.layout(bootstrap, "orders").leader_of(0)
    pipe = rawkafka.Pipeline(host, port, rawkafka.fetch_frame("t", "orders", [(0, 0)]), count=3000, sample_every=100)
    summary = pipe.run().summary()
    assert summary["sent"] == summary["answered"] == 3000
    assert summary["errors"] == {} and summary["throttled_answers"] == 0
    assert not summary["closed_by_server"]


def test_it_reads_a_fetch_answers_throttle_time_and_errors_as_kio_decodes_them(serve):
    bootstrap = serve(consumer_byte_rate="2000")
    producer = Producer({"bootstrap.servers": bootstrap, "logger": logging.getLogger("rawkafka-tests")})
    producer.produce("orders", value=b"x" * 20_000, partition=0)
    assert producer.flush(CAP_S) == 0
    host, port = rawkafka.parse_bootstrap(bootstrap)[0]
    conn = rawkafka.Conn(host, port, timeout_s=CAP_S)
    try:
        throttles, errors, records = [], [], []
        for correlation in range(3):  # a throttled answer holds no partitions; an unthrottled one reads 20 KB
            conn.send(rawkafka.fetch_frame("t", "orders", [(0, 0), (7, 0)], correlation=correlation))
            payload = conn.read_frame()
            _corr, body = messages.decode_response(rawkafka.FETCH, 12, payload)
            assert rawkafka.fetch_head(payload) == (messages.ms(body.throttle_time), body.error_code.value)
            throttles.append(rawkafka.fetch_head(payload)[0])
            errors += rawkafka.fetch_errors(payload)
            records.append(rawkafka.records_bytes(payload))
        assert max(throttles) > 0
        assert errors == ["UNKNOWN_TOPIC_OR_PARTITION"]  # partition 7 is not there, in the one unthrottled answer
        assert max(records) > 20_000
    finally:
        conn.close()


def test_it_sees_the_server_close_a_pipeline_whose_frames_are_too_large(serve):
    bootstrap = serve(**{"socket.request.max.bytes": "60"})
    host, port = rawkafka.parse_bootstrap(bootstrap)[0]
    assert len(rawkafka.api_versions_frame("pipeline")) - 4 <= 60  # the pipeline's ApiVersions first passes
    frame = rawkafka.fetch_frame("t", "orders", [(0, 0)])
    assert len(frame) - 4 > 60
    summary = rawkafka.Pipeline(host, port, frame, count=10).run().summary()
    assert summary["closed_by_server"] and summary["answered"] == 0
