"""A raw Kafka client for the benches' hostile clients (tools/bench/abuse.py, door.py): requests built with the
playground's own protocol layer (kio's schemas, playground/protocol/messages.py), sent over plain sockets as no
well-behaved library would: pipelined by the thousand, never read, reconnected as fast as a loop goes.

Frames are built once and copied with a new correlation id (its bytes sit at a fixed place: size, api key, version,
correlation id), so a loop costs the client little CPU and the server meets what a fast client sends. Answers are
read by their size prefix; of a Fetch answer the throttle time and the top-level error are read in place (v7 and
later put them first), the partitions' errors by decoding it whole (`fetch_errors`), which the callers do for a
sample.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from playground.protocol import messages

API_VERSIONS, METADATA, FETCH = 18, 3, 1
_SIZE = struct.Struct(">i")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
CORRELATION_AT = 8  # in a framed request: size (4), api key (2), version (2), then the correlation id


def request_frame(api_key: int, version: int, data: dict[str, Any], client_id: str, correlation: int = 0) -> bytes:
    """A request with its size prefix."""
    body = messages.build(messages.request_class(api_key, version), data)
    payload = messages.encode_request(api_key, version, correlation, client_id, body)
    return _SIZE.pack(len(payload)) + payload


def with_correlation(frame: bytes, correlation: int) -> bytes:
    return frame[:CORRELATION_AT] + _I32.pack(correlation & 0x7FFFFFFF) + frame[CORRELATION_AT + 4 :]


def api_versions_frame(client_id: str, correlation: int = 0) -> bytes:
    return request_frame(
        API_VERSIONS,
        3,
        {"client_software_name": "bench-raw", "client_software_version": "1.0"},
        client_id,
        correlation,
    )


def metadata_frame(client_id: str, topics: list[str] | None = None, correlation: int = 0) -> bytes:
    data = {
        "topics": None if topics is None else [{"name": t} for t in topics],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    return request_frame(METADATA, 12, data, client_id, correlation)


def fetch_frame(
    client_id: str,
    topic: str,
    partitions: list[tuple[int, int]],
    *,
    max_wait_ms: int = 0,
    max_bytes: int = 52_428_800,
    partition_max_bytes: int = 1_048_576,
    correlation: int = 0,
) -> bytes:
    """A Fetch v12 (the last that names topics) of `partitions` [(partition, offset)], answered at once when
    `max_wait_ms` is 0, as a consumer with fetch.wait.max.ms=0 sends it."""
    data = {
        "replica_id": -1,
        "max_wait": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": p,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": partition_max_bytes,
                    }
                    for p, offset in partitions
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return request_frame(FETCH, 12, data, client_id, correlation)


def fetch_head(payload: bytes) -> tuple[int, int]:
    """(throttle_time_ms, error code) of a Fetch v12 answer: after the correlation id and the header's tagged fields."""
    return _I32.unpack_from(payload, 5)[0], _I16.unpack_from(payload, 9)[0]


def error_name(code: int) -> str:
    """Kafka's name of an error code (MESSAGE_TOO_LARGE, POLICY_VIOLATION, ...)."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"error {code}"


def fetch_errors(payload: bytes) -> list[str]:
    """The partitions' error names of a Fetch v12 answer (NONE left out)."""
    _corr, body = messages.decode_response(FETCH, 12, payload)
    out = []
    for topic in body.responses:
        for p in topic.partitions:
            if p.error_code.value:
                out.append(error_name(p.error_code.value))
    return out


def records_bytes(payload: bytes) -> int:
    """Bytes of record batches in a Fetch v12 answer."""
    _corr, body = messages.decode_response(FETCH, 12, payload)
    return sum(len(p.records or b"") for t in body.responses for p in t.partitions)


class Conn:
    """One blocking socket to a broker, with a reading buffer."""

    def __init__(self, host: str, port: int, timeout_s: float = 10.0, rcvbuf_bytes: int | None = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf_bytes:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf_bytes)
        self.sock.settimeout(timeout_s)
        self.sock.connect((host, port))
        self.buffer = bytearray()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        """The next answer's payload; ConnectionError when the server closed the connection."""
        while True:
            if len(self.buffer) >= 4:
                size = _SIZE.unpack_from(self.buffer)[0]
                if len(self.buffer) >= 4 + size:
                    payload = bytes(self.buffer[4 : 4 + size])
                    del self.buffer[: 4 + size]
                    return payload
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed by the server")
            self.buffer += chunk

    def call(self, api_key: int, version: int, frame: bytes) -> Any:
        self.send(frame)
        return messages.decode_response(api_key, version, self.read_frame())[1]

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for item in bootstrap.split(","):
        host, _sep, port = item.strip().rpartition(":")
        out.append((host, int(port)))
    return out


@dataclass
class Layout:
    """Where a session's brokers listen and which one leads each partition of a topic."""

    brokers: dict[int, tuple[str, int]]
    leaders: dict[int, int]  # partition -> broker id

    def leader_of(self, partition: int) -> tuple[str, int]:
        return self.brokers[self.leaders[partition]]


def layout(bootstrap: str, topic: str, client_id: str = "bench-raw", timeout_s: float = 10.0) -> Layout:
    host, port = parse_bootstrap(bootstrap)[0]
    conn = Conn(host, port, timeout_s=timeout_s)
    try:
        conn.call(API_VERSIONS, 3, api_versions_frame(client_id))
        body = conn.call(METADATA, 12, metadata_frame(client_id, [topic]))
    finally:
        conn.close()
    brokers = {int(b.node_id): (b.host, int(b.port)) for b in body.brokers}
    leaders = {int(p.partition_index): int(p.leader_id) for t in body.topics for p in t.partitions if t.name == topic}
    return Layout(brokers, leaders)


@dataclass
class Pipeline:
    """A client that pipelines one request again and again on one connection: a writer sends as fast as the socket
    takes them (the server stops reading a connection that has too many queued: then the kernel's buffers fill and
    the writer waits), a reader takes the answers. Ends after `count` requests were answered, at `stop_at`
    (monotonic), or when the server closes the connection."""

    host: str
    port: int
    frame: bytes
    count: int | None = None
    stop_at: float | None = None
    fetch: bool = True  # read a Fetch answer's throttle time and error
    sample_every: int = 0  # decode every n-th answer whole for the partitions' errors (0: none)
    sent: int = 0
    answered: int = 0
    bytes_sent: int = 0
    bytes_answered: int = 0
    throttled: int = 0
    throttle_ms_max: int = 0
    errors: Counter = field(default_factory=Counter)
    closed_by_server: bool = False
    started: float = 0.0
    ended: float = 0.0

    def run(self) -> Pipeline:
        conn = Conn(self.host, self.port, timeout_s=30.0)
        conn.send(api_versions_frame("pipeline"))
        while True:  # a throttled session may leave even this unanswered a while
            try:
                conn.read_frame()
                break
            except TimeoutError:
                if self._over():
                    conn.close()
                    return self
            except OSError:
                self.closed_by_server = True
                conn.close()
                return self
        done = threading.Event()
        self.started = time.monotonic()
        writer = threading.Thread(target=self._write, args=(conn, done), daemon=True)
        writer.start()
        try:
            self._read(conn, done)
        finally:
            done.set()
            self.ended = time.monotonic()
            conn.close()
            writer.join(timeout=10)
        return self

    def _over(self) -> bool:
        return (self.stop_at is not None and time.monotonic() >= self.stop_at) or (
            self.count is not None and self.sent >= self.count
        )

    def _write(self, conn: Conn, done: threading.Event) -> None:
        batch = 64  # requests a sendall carries: fewer system calls, the same bytes on the wire
        correlation = 1
        try:
            while not done.is_set() and not self._over():
                n = batch if self.count is None else min(batch, self.count - self.sent)
                chunk = b"".join(with_correlation(self.frame, correlation + i) for i in range(n))
                correlation += n
                conn.send(chunk)
                self.sent += n
                self.bytes_sent += len(chunk)
        except OSError:
            if not done.is_set():  # not the reader closing it at the end
                self.closed_by_server = True

    def _read(self, conn: Conn, done: threading.Event) -> None:
        while True:
            if self.count is not None and self.answered >= self.count:
                return
            if self.stop_at is not None and time.monotonic() >= self.stop_at and self.answered >= self.sent:
                return
            if self.stop_at is not None and time.monotonic() >= self.stop_at + 10:
                return  # what was sent and not answered ten seconds after the end stays unanswered
            try:
                payload = conn.read_frame()
            except TimeoutError:
                continue
            except (ConnectionError, OSError):
                self.closed_by_server = True
                return
            self.answered += 1
            self.bytes_answered += len(payload) + 4
            if self.fetch:
                throttle_ms, error = fetch_head(payload)
                if throttle_ms:
                    self.throttled += 1
                    self.throttle_ms_max = max(self.throttle_ms_max, throttle_ms)
                if error:
                    self.errors[error_name(error)] += 1
                if self.sample_every and self.answered % self.sample_every == 0:
                    self.errors.update(fetch_errors(payload))

    def summary(self) -> dict[str, Any]:
        seconds = max(1e-9, (self.ended or time.monotonic()) - self.started)
        return {
            "sent": self.sent,
            "answered": self.answered,
            "bytes_sent": self.bytes_sent,
            "bytes_answered": self.bytes_answered,
            "seconds": round(seconds, 1),
            "answered_per_s": round(self.answered / seconds),
            "throttled_answers": self.throttled,
            "throttle_ms_max": self.throttle_ms_max,
            "errors": dict(self.errors),
            "closed_by_server": self.closed_by_server,
        }
