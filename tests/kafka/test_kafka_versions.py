"""Every version the simulated cluster advertises, asked of the real brokers of its release too: the same minimal
requests in the same order (tests/simserver/versions.py) get answers with the same error codes from a real Kafka
3.9.1, 4.4.0 and 3.5.2 as from the simulated cluster of that release. And a Fetch before v4 returns the bytes Kafka
3.9.1 returns for the same batches: the same down-conversion (magic 0 for v0-1, 1 for v2-3, an overflow message or a
cut at the batches' size), byte for byte but for snappy, whose compressor differs from Java's (the messages are the
same)."""

from __future__ import annotations

import time

import pytest

from playground.protocol import legacy, records
from tests.kafka.conftest import require_bootstrap
from tests.simserver import versions

pytestmark = pytest.mark.kafka

RELEASES = ["3.9", "4", pytest.param("3.5", marks=pytest.mark.kafka35)]


def _prefix(kafka: str) -> str:
    return f"versions-{kafka.replace('.', '')}-{time.time_ns()}"  # a real cluster outlives a run


@pytest.mark.parametrize("kafka", RELEASES)
def test_the_real_release_answers_every_advertised_version_with_the_simulators_error_codes(kafka):
    real = versions.SocketTarget(require_bootstrap(kafka))
    try:
        theirs = {(a.api_key, a.version): a.errors for a in versions.exchange(real, kafka, _prefix(kafka))}
    finally:
        real.close()
    simulated = versions.CoreTarget(kafka, brokers=3)
    ours = {(a.api_key, a.version): a.errors for a in versions.exchange(simulated, kafka)}
    assert list(simulated.core.failures) == []
    assert ours == theirs


def _fetch(target: versions.Target, ctx: versions.Context, version: int, offset: int) -> bytes:
    body = versions.REQUESTS[1](version, ctx)
    body["topics"][0]["partitions"][0]["fetch_offset"] = offset
    answer = target.call(ctx.leader, 1, version, body)
    part = answer.responses[0].partitions[0]
    assert part.error_code.value == 0, part
    return bytes(part.records or b"")


def _down_converted(target: versions.Target, ctx: versions.Context, batches: list[bytes]) -> dict:
    for data in batches:
        body = versions.REQUESTS[0](9, ctx)
        body["topic_data"][0]["partition_data"][0]["records"] = data
        answer = target.call(ctx.leader, 0, 9, body)
        assert answer.responses[0].partition_responses[0].error_code.value == 0
    last = 1 + sum(records.read_batches(b)[0].record_count for b in batches)
    for _ in range(600):  # until the records are below the high watermark
        if len(records.read_batches(_fetch(target, ctx, 4, 1))) == len(batches):
            break
        target.pause()
    return {(v, o): _fetch(target, ctx, v, o) for v in range(4) for o in range(1, last)}


def test_a_fetch_before_v4_returns_what_kafka_3_9_1_returns_byte_for_byte():
    at = int(time.time() * 1000)
    codecs = [records.NONE, records.GZIP, records.LZ4, records.NONE, records.SNAPPY]
    batches = [
        records.encode_batch(
            [records.Record(i, at + i, f"k{n}{i}".encode(), b"v" * (40 * i)) for i in range(3)], compression=codec
        )
        for n, codec in enumerate(codecs)
    ]
    real = versions.SocketTarget(require_bootstrap("3.9"))
    try:
        real_ctx = versions.setup(real, "3.9", _prefix("3.9"))
        theirs = _down_converted(real, real_ctx, batches)
    finally:
        real.close()
    simulated = versions.CoreTarget("3.9", brokers=3)
    ours = _down_converted(simulated, versions.setup(simulated, "3.9"), batches)
    for (version, offset), data in theirs.items():
        snappy = any(b.compression == records.SNAPPY for b in records.read_batches(_read_at(batches, offset)))
        if snappy:  # Java's snappy and ours compress to sizes a few bytes apart: the same messages, but for the cut
            _assert_same_but_for_a_snappy_cut(ours[(version, offset)], data, (version, offset))
        else:
            assert ours[(version, offset)] == data, (version, offset)


def _assert_same_but_for_a_snappy_cut(ours: bytes, theirs: bytes, where: tuple[int, int]) -> None:
    """The same messages, except where a cut at the batches' size falls inside the last snappy wrapper on one side
    only: how many bytes the same inner messages compress to depends on their bytes (the timestamps), so at some
    times the wrapper fits on one side and is cut on the other. Then the side without it ends with the start of that
    very wrapper, cut."""
    if _messages(ours) == _messages(theirs):
        return
    sides = sorted([ours, theirs], key=lambda data: len(legacy.read_messages(data, partial_ok=True)))
    short, long = (legacy.read_messages(data, partial_ok=True) for data in sides)
    assert len(long) == len(short) + 1 and long[: len(short)] == short, where
    extra = long[-1]
    assert extra.codec == records.SNAPPY, where
    tail = sides[0][_whole_messages_length(sides[0]) :]
    assert len(tail) >= 8 and int.from_bytes(tail[:8], "big") == extra.offset, where  # that wrapper, cut


def _whole_messages_length(data: bytes) -> int:
    pos = 0
    while pos + legacy.LOG_OVERHEAD <= len(data):
        end = pos + legacy.LOG_OVERHEAD + int.from_bytes(data[pos + 8 : pos + 12], "big")
        if end > len(data):
            break
        pos = end
    return pos


def _read_at(batches: list[bytes], offset: int) -> bytes:
    """The batches a fetch at `offset` reads (the setup's record sits at offset 0)."""
    out, base = [], 1
    for data in batches:
        count = records.read_batches(data)[0].record_count
        if base + count > offset:
            out.append(data)
        base += count
    return b"".join(out)


def _messages(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    out = []
    for m in legacy.read_messages(data, partial_ok=True):
        inner = legacy._inner(m) if m.codec else [m]
        out += [(i.magic, i.timestamp_ms, i.key, i.value) for i in inner]
    return out
