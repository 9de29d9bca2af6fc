"""The record formats before KIP-98 through the simulated cluster of a 3.x release, as a Kafka 3.x broker handles
them (playground/protocol/legacy.py): a Produce v0-2's message set of magic 0 or 1 becomes one magic-2 batch in the
log, a Fetch v0-3 reads the log down-converted to magic 0 or 1; a 4.x cluster refuses both. ListOffsets v0's offsets
of the log's segments. tests/kafka/test_kafka_versions.py checks the down-converted bytes against Kafka 3.9.1's."""

from __future__ import annotations

import pytest

from playground.protocol import legacy, records
from tests.simserver.wire import T0, Client, batch, core_for, fetch_body, produce_body

PRODUCE, FETCH, LIST_OFFSETS = 0, 1, 2
CODECS = [records.NONE, records.GZIP, records.SNAPPY, records.LZ4]


def _messages(n: int, at: int = T0) -> list[records.Record]:
    return [records.Record(i, at + i, f"k{i}".encode(), f"v{i}".encode()) for i in range(n)]


def _produce(client: Client, version: int, data: bytes, topic: str = "t") -> tuple[str | None, int]:
    answer = client.call(1, PRODUCE, version, produce_body(topic, 0, data, acks=1))
    client.advance(100)  # the high watermark follows the replicas (acks=1 answers first)
    part = answer.responses[0].partition_responses[0]
    return (None if part.error_code.value == 0 else part.error_code.name.upper()), int(part.base_offset)


def _fetched(client: Client, version: int, offset: int = 0, topic: str = "t") -> tuple[str | None, bytes]:
    answer = client.call(1, FETCH, version, fetch_body(topic, 0, offset))
    part = answer.responses[0].partitions[0]
    return (None if part.error_code.value == 0 else part.error_code.name.upper()), bytes(part.records or b"")


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize(("version", "magic"), [(0, 0), (1, 0), (2, 1)])
def test_it_appends_an_old_message_set_as_one_magic_2_batch_as_a_3x_broker_does(version, magic, codec):
    core = core_for("3.9", brokers=1, topics={"t": 1})
    client = Client(core)
    assert _produce(client, version, batch([b"x"])) == (None, 0)  # a magic-2 batch in an old request is taken too
    assert _produce(client, version, legacy.encode_messages(_messages(3), magic, codec)) == (None, 1)
    error, data = _fetched(client, 4, offset=1)
    assert error is None
    (appended,) = records.read_batches(data)
    assert appended.producer_id == -1 and appended.compression == codec and appended.record_count == 3
    got = [(r.offset, r.timestamp_ms, r.key, r.value) for r in appended.records()]
    stamps = [T0 + i if magic == 1 else legacy.NO_TIMESTAMP for i in range(3)]
    assert got == [(1 + i, stamps[i], f"k{i}".encode(), f"v{i}".encode()) for i in range(3)]


def test_it_refuses_what_a_3x_broker_refuses_in_an_old_message_set():
    client = Client(core_for("3.9", brokers=1, topics={"t": 1}))
    good = legacy.encode_messages(_messages(2), 1)
    corrupt = good[:-1] + bytes([good[-1] ^ 1])
    assert _produce(client, 2, corrupt)[0] == "CORRUPT_MESSAGE"
    two_wrappers = legacy.encode_messages(_messages(1), 1, records.GZIP) * 2
    assert _produce(client, 2, two_wrappers)[0] == "INVALID_RECORD"


def test_a_4x_cluster_closes_the_connection_of_a_produce_v2_it_advertises_as_kafka_4_4_does():
    core = core_for("4", brokers=1, topics={"t": 1})
    client = Client(core)
    client.send(1, PRODUCE, 2, produce_body("t", 0, legacy.encode_messages(_messages(1), 1), acks=1))
    assert client.closed == {client.conns[1]}
    assert core.advertised[PRODUCE] == (0, 13) and list(core.failures) == []


def _flat(data: bytes) -> list[tuple[int, int, bytes | None]]:
    """(magic, offset, key) of each record of a down-converted answer, the wrappers' inner ones at their offsets."""
    out = []
    for m in legacy.read_messages(data, partial_ok=True):
        if m.codec == records.NONE:
            out.append((m.magic, m.offset, m.key))
            continue
        inner = legacy._inner(m)
        base = 0 if m.magic == 0 else m.offset - inner[-1].offset  # magic 1's inner offsets are relative
        out += [(i.magic, base + i.offset, i.key) for i in inner]
    return out


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize(("version", "magic"), [(0, 0), (1, 0), (2, 1), (3, 1)])
def test_a_fetch_before_v4_reads_the_log_down_converted_to_its_versions_format(version, magic, codec):
    core = core_for("3.9", brokers=1, topics={"t": 1})
    client = Client(core)
    for i in range(3):
        assert _produce(client, 3, records.encode_batch(_messages(2, T0 + 10 * i), compression=codec))[0] is None
    error, data = _fetched(client, version, offset=1)
    assert error is None
    # the answer takes as many bytes as the batches read (LazyDownConversionRecords): filled with an overflow
    # message when the old format is smaller, cut (a partial message the client drops) when it is larger
    assert len(data) == len(_fetched(client, 4, offset=1)[1])
    # an uncompressed batch's records before the fetch offset are left out; a compressed batch goes whole
    first = 1 if codec == records.NONE else 0
    expected = [(magic, o, b"k%d" % (o % 2)) for o in range(first, 6)]
    got = _flat(data)
    assert got == expected[: len(got)] and len(got) >= 2 - first
    if magic == 0 or codec == records.NONE:
        assert got == expected  # smaller than magic 2: nothing cut


def test_a_fetch_before_v4_leaves_out_transaction_markers_and_refuses_zstd():
    core = core_for("3.9", brokers=1, topics={"t": 1})
    client = Client(core)
    txn = {"transactional_id": "tx", "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1}
    init = client.call(1, 22, 3, txn)
    pid, epoch = int(init.producer_id), int(init.producer_epoch)
    added = {
        "v3_and_below_transactional_id": "tx",
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": "t", "partitions": [0]}],
    }
    client.call(1, 24, 3, added)
    data = batch([b"a", b"b"], pid=pid, epoch=epoch, seq=0, txn=True)
    assert client.call(1, PRODUCE, 3, produce_body("t", 0, data, txid="tx", acks=1)) is not None
    end = {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch, "committed": True}
    assert client.call(1, 26, 3, end).error_code.value == 0
    client.advance(1000)
    assert _produce(client, 7, batch([b"z"], codec=records.ZSTD)) == (None, 3)  # after a, b and the marker
    control = [b for b in records.read_batches(_fetched(client, 4)[1]) if b.control]
    assert len(control) == 1
    error, data = _fetched(client, 2)
    assert error is None and [key for _m, _o, key in _flat(data)] == [None, None]
    assert [m.value for m in legacy.read_messages(data, partial_ok=True)] == [b"a", b"b"]
    assert _fetched(client, 3, offset=3)[0] == "UNSUPPORTED_COMPRESSION_TYPE"  # no zstd before magic 2
    assert _fetched(client, 4, offset=3)[0] is None


def test_list_offsets_v0_answers_the_segments_starts_and_the_log_end_newest_first():
    core = core_for("3.9", brokers=1, topics={"t": 1}, **{"log.segment.bytes": 14 * 1024 * 1024})
    client = Client(core)
    for _ in range(3):
        assert _produce(client, 3, batch([b"x" * 100]))[0] is None

    def offsets(timestamp: int, most: int) -> list[int]:
        body = {
            "replica_id": -1,
            "topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "timestamp": timestamp, "max_num_offsets": most}]}
            ],
        }
        part = client.call(1, LIST_OFFSETS, 0, body).topics[0].partitions[0]
        assert part.error_code.value == 0
        return list(part.old_style_offsets)

    assert offsets(-1, 10) == [3, 0]  # the log end, then the only segment's start
    assert offsets(-1, 1) == [3]
    assert offsets(-2, 10) == [0]
    answer = client.call(
        1,
        LIST_OFFSETS,
        0,
        {
            "replica_id": -1,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -3, "max_num_offsets": 1}]}],
        },
    )
    assert answer.topics[0].partitions[0].error_code.name == "unsupported_version"
