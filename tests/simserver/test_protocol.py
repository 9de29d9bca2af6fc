"""The Kafka protocol, pure (playground/protocol): frames, requests and responses, record batches and their codecs,
`__transaction_state`'s records. Round trips, a second implementation's reading (kafka-python's) where one exists,
and fuzzing of what a client can send: bad input is a FrameError or a RequestError, never anything else."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.static.primitive import Records

from playground.kafka.records import decode_batches, decode_txn_value
from playground.protocol import apiversions, messages, records, txnlog
from playground.protocol.errors import error_code, error_name
from playground.protocol.framing import MAX_REQUEST_BYTES, FrameError, FrameReader, frame
from playground.simserver.apis import HANDLERS

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))

CODECS = [records.NONE, records.GZIP, records.SNAPPY, records.LZ4, records.ZSTD]
record_st = st.builds(
    lambda ts, key, value, headers: (ts, key, value, tuple(headers)),
    # timestamps close together too, so that deltas of one and two bytes come up
    st.integers(min_value=0, max_value=300) | st.integers(min_value=0, max_value=2**41),
    st.none() | st.binary(max_size=40),
    st.none() | st.binary(max_size=200),
    st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=10)), max_size=3),
)


def _records(raw: list, base: int) -> list[records.Record]:
    return [records.Record(base + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(raw)]


# ------------------------------------------------------------------------------------------------ frames


@given(st.lists(st.binary(max_size=300), max_size=8), st.data())
def test_it_returns_every_frame_whole_however_the_bytes_are_cut(payloads, data):
    stream = b"".join(frame(p) for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    reader = FrameReader()
    got = []
    last = 0
    for cut in [*cuts, len(stream)]:
        got += reader.feed(stream[last:cut])
        last = cut
    assert got == payloads
    assert reader.pending_bytes == 0


def test_it_refuses_a_frame_larger_than_socket_request_max_bytes_before_reading_it():
    with pytest.raises(FrameError, match=r"socket\.request\.max\.bytes"):
        FrameReader().feed(struct.pack(">i", MAX_REQUEST_BYTES + 1) + b"x" * 1000)
    assert FrameReader().feed(struct.pack(">i", MAX_REQUEST_BYTES)) == []  # the largest a broker reads: waited for


def test_it_refuses_a_negative_frame_size():
    with pytest.raises(FrameError):
        FrameReader().feed(struct.pack(">i", -5) + b"xx")


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_it_reads_any_bytes_as_frames_or_a_frame_error(data):
    reader = FrameReader(max_bytes=1000)
    try:
        for payload in reader.feed(data):
            assert len(payload) <= 1000
    except FrameError:
        pass


ADVERTISED = dict.fromkeys(HANDLERS, (0, 99))


@settings(max_examples=500, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=120))
def test_it_reads_any_request_bytes_as_a_request_or_a_request_error(data):
    try:
        request = messages.decode_request(data, ADVERTISED)
    except messages.RequestError:
        return
    assert request.api_key in ADVERTISED


@settings(max_examples=300, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(HANDLERS)), st.integers(0, 18), st.binary(max_size=200))
def test_it_reads_a_valid_header_with_a_garbage_body_as_a_request_or_a_request_error(api_key, version, body):
    data = struct.pack(">hhi", api_key, version, 7) + body
    try:
        messages.decode_request(data, ADVERTISED)
    except messages.UnsupportedVersion as e:
        assert e.correlation_id == 7
    except messages.RequestError:
        pass


def _served_versions():
    """Every version of an API with a handler that some release advertises."""
    for key in sorted(HANDLERS):
        ranges = [
            apiversions.API_KEYS[kafka][key] for kafka in apiversions.RELEASES if key in apiversions.API_KEYS[kafka]
        ]
        for version in range(min(lo for lo, _ in ranges), max(hi for _, hi in ranges) + 1):
            # kio reads OffsetCommit v2-4's retention_time as a timedelta, which overflows for most int64 values
            # (clients send -1); the round trip is checked for every other version
            if (key, version) not in {(8, 2), (8, 3), (8, 4)}:
                yield key, version


@pytest.mark.parametrize(("api_key", "version"), list(_served_versions()))
def test_it_reads_back_every_request_version_it_serves(api_key, version):
    cls = messages.request_class(api_key, version)

    @settings(max_examples=3, suppress_health_check=list(HealthCheck))
    @given(st.from_type(cls))
    def round_trip(body):
        payload = messages.encode_request(api_key, version, 11, "client-1", body)
        request = messages.decode_request(payload, {api_key: (version, version)})
        assert (request.api_key, request.api_version, request.correlation_id) == (api_key, version, 11)
        assert request.client_id == "client-1"
        assert request.body == body

    round_trip()


def test_it_builds_every_response_version_from_one_description_and_reads_it_back():
    cls = messages.response_class(0, 11)
    body = messages.build(
        cls,
        {
            "responses": [{"name": "t", "partition_responses": [{"index": 0, "error_code": "PRODUCER_FENCED"}]}],
            "throttle_time": 0,
            "unknown_field_of_another_version": 1,
        },
    )
    correlation, back = messages.decode_response(0, 11, messages.encode_response(0, 11, 42, body))
    assert correlation == 42
    part = back.responses[0].partition_responses[0]
    assert (part.error_code.value, part.base_offset, part.log_append_time) == (90, 0, None)


def test_it_answers_an_api_versions_of_an_unknown_version_at_v0_with_its_own_range():
    correlation, body = messages.decode_response(18, 0, messages.api_versions_error(9, (0, 4)))
    assert correlation == 9
    assert body.error_code.value == 35
    assert [(a.api_key, a.min_version, a.max_version) for a in body.api_keys] == [(18, 0, 4)]


def test_it_knows_errors_by_kafkas_names():
    assert error_code("PRODUCER_FENCED").value == 90
    assert error_code("INVALID_PRODUCER_EPOCH").value == 47
    assert error_code(None).value == 0
    assert error_code("_TRANSPORT").value == -1  # never meant for the wire: shows as a server error
    assert error_name(51) == "CONCURRENT_TRANSACTIONS"
    assert error_name(0) is None


def test_it_advertises_exactly_the_releases_versions_of_the_apis_it_serves_and_reads_all_but_the_refused_ones():
    assert apiversions.advertised("4", [0, 26, 18, 999]) == {0: (0, 13), 26: (0, 5), 18: (0, 5)}
    assert apiversions.advertised("3.9", [26, 1]) == {26: (0, 4), 1: (0, 17)}
    # Kafka 4 advertises Produce v0-2 for librdkafka's sake (KAFKA-18659) and refuses them
    assert apiversions.accepted("4", [0, 26]) == {0: (3, 13), 26: (0, 5)}
    assert apiversions.accepted("3.9", [0]) == {0: (0, 11)}


# ------------------------------------------------------------------------------------------------ record batches


@settings(max_examples=60)
@given(st.lists(record_st, min_size=1, max_size=8), st.sampled_from(CODECS), st.booleans(), st.integers(0, 2**40))
def test_it_reads_back_every_batch_it_writes_in_every_codec(raw, codec, transactional, base):
    recs = _records(raw, base)
    data = records.encode_batch(
        recs,
        base_offset=base,
        producer_id=7,
        producer_epoch=3,
        base_sequence=11,
        transactional=transactional,
        compression=codec,
        partition_leader_epoch=2,
    )
    (batch,) = records.read_batches(data, partial_ok=False)
    assert batch.crc_ok()
    assert (batch.base_offset, batch.producer_id, batch.producer_epoch, batch.base_sequence) == (base, 7, 3, 11)
    assert (batch.transactional, batch.compression, batch.record_count) == (transactional, codec, len(recs))
    assert batch.records() == recs
    assert batch.next_offset == base + len(recs)


@settings(max_examples=40)
@given(st.lists(record_st, min_size=1, max_size=5), st.sampled_from(CODECS))
def test_the_real_backends_decoder_reads_the_batches_as_written(raw, codec):
    """playground/kafka/records.py decodes what real brokers return, written apart from this module: a second reader."""
    recs = _records(raw, 100)
    data = records.encode_batch(recs, base_offset=100, producer_id=1, producer_epoch=0, compression=codec)
    got = [(e.offset, e.timestamp_ms, e.key, e.value) for e in decode_batches(data)]
    assert got == [(r.offset, r.timestamp_ms, r.key, r.value) for r in recs]


def test_it_reads_snappy_without_xerial_framing_as_librdkafka_writes_it():
    import cramjam

    body = records.encode_records([records.Record(0, 5, None, b"v")], 0, 5)
    framed = records.encode_batch([records.Record(0, 5, None, b"v")], compression=records.SNAPPY)
    plain = bytes(cramjam.snappy.compress_raw(body))
    head = bytearray(framed[: records.HEADER_BYTES])
    struct.pack_into(">i", head, 8, len(head) + len(plain) - 12)
    tail = bytes(head[records.ATTRIBUTES_OFFSET :]) + plain
    from crc32c import crc32c

    struct.pack_into(">I", head, records.CRC_OFFSET, crc32c(tail))
    (batch,) = records.read_batches(bytes(head) + plain)
    assert batch.crc_ok()
    assert batch.records() == [records.Record(0, 5, None, b"v")]


def test_it_keeps_the_checksum_when_a_leader_sets_the_offsets_and_its_epoch():
    data = records.encode_batch([records.Record(0, 1, b"k", b"v")], producer_id=3, producer_epoch=1)
    moved = records.with_offsets(data, 4200, 7)
    (batch,) = records.read_batches(moved)
    assert (batch.base_offset, batch.partition_leader_epoch, batch.crc_ok()) == (4200, 7, True)
    assert batch.records()[0].offset == 4200


def test_it_writes_transaction_markers_as_control_batches():
    data = records.control_batch(
        base_offset=9, producer_id=5, producer_epoch=2, control="ABORT", coordinator_epoch=4, timestamp_ms=77
    )
    (batch,) = records.read_batches(data)
    assert batch.control and batch.transactional
    assert batch.control_type() == "ABORT"
    assert struct.unpack(">hi", batch.records()[0].value) == (0, 4)


def test_it_finds_a_corrupt_batch():
    data = bytearray(records.encode_batch([records.Record(0, 1, None, b"value")]))
    data[-1] ^= 0xFF
    (batch,) = records.read_batches(bytes(data))
    assert not batch.crc_ok()


def test_it_drops_the_cut_batch_at_the_end_of_a_fetch():
    one = records.encode_batch([records.Record(0, 1, None, b"a")])
    two = records.encode_batch([records.Record(1, 1, None, b"b")], base_offset=1)
    assert len(records.read_batches(one + two[:20])) == 1
    with pytest.raises(records.CorruptRecordError):
        records.read_batches(one + two[:20], partial_ok=False)


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_it_reads_any_bytes_as_batches_or_a_corrupt_record_error(data):
    try:
        for batch in records.read_batches(data, partial_ok=False):
            batch.records()
    except records.CorruptRecordError:
        pass


@settings(max_examples=300)
@given(
    st.lists(record_st, min_size=1, max_size=5),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    st.integers(-8, 8),
    st.integers(1, 40),
)
def test_it_scans_a_batch_as_it_reads_it_whole_the_same_count_keys_and_errors(raw, flips, resize, gap):
    """scan() is what a Produce runs on an external producer's batch: it must refuse exactly what records() refuses,
    with the same error, however the records' bytes are damaged (flipped bytes, a body cut or grown). Offsets `gap`
    apart give offset deltas of one and two bytes, as a batch of more than 63 records has."""
    spaced = [records.Record(r.offset * gap, r.timestamp_ms, r.key, r.value, r.headers) for r in _records(raw, 0)]
    data = bytearray(records.encode_batch(spaced, base_offset=0))
    for at, byte in flips:
        data[records.HEADER_BYTES + at % (len(data) - records.HEADER_BYTES)] = byte
    if resize < 0:
        del data[max(records.HEADER_BYTES, len(data) + resize) :]
    else:
        data += bytes(resize)
    struct.pack_into(">i", data, 8, len(data) - records.LOG_OVERHEAD)
    (batch,) = records.read_batches(bytes(data), partial_ok=False)
    try:
        whole = batch.records()
    except records.CorruptRecordError as e:
        with pytest.raises(records.CorruptRecordError) as scanned:
            batch.scan()
        assert (str(scanned.value), scanned.value.error) == (str(e), e.error)
    else:
        assert batch.scan() == (len(whole), any(r.key is not None for r in whole))


# ------------------------------------------------------------------------------------------------ __transaction_state


@given(
    st.sampled_from([0, 1]),
    st.integers(0, 2**40),
    st.integers(0, 32767),
    st.sampled_from([0, 1, 2, 3, 4, 5, 7]),
    st.lists(st.tuples(st.sampled_from(["orders", "audit"]), st.integers(0, 9)), unique=True, max_size=5),
    st.integers(-1, 2**40),
    st.integers(-1, 2**40),
    st.integers(0, 2),
)
def test_the_observers_decoder_reads_the_coordinators_records(version, pid, epoch, status, parts, prev, nxt, tv):
    value = txnlog.value_bytes(
        version=version,
        producer_id=pid,
        producer_epoch=epoch,
        timeout_ms=60000,
        status=status,
        partitions=None if status == 0 else parts,
        last_update_ms=123,
        start_ms=-1 if status == 0 else 100,
        previous_producer_id=prev,
        next_producer_id=nxt,
        client_transaction_version=tv,
    )
    got = decode_txn_value(value)
    assert got is not None
    assert (got["version"], got["producer_id"], got["epoch"], got["timeout_ms"]) == (version, pid, epoch, 60000)
    assert got["partitions"] == ([] if status == 0 else sorted(parts))
    if version == 1:
        assert got.get("previous_producer_id", -1) == prev
        assert got.get("next_producer_id", -1) == nxt
        assert got.get("client_transaction_version", 0) == tv
    assert txnlog.key_bytes("tx-1") == b"\x00\x00\x00\x04tx-1"


def test_it_writes_lz4_and_gzip_as_kafka_clients_writes_them():
    # Kafka's Lz4BlockInputStream refuses linked blocks ("Dependent block stream is unsupported"): independent
    # blocks of at most 64 KiB, the descriptor checksum xxHash32's second byte
    frame = records.compress(records.LZ4, b"abc" * 50_000)
    assert frame[4:6] == bytes([0x60, 0x40])
    assert frame[6] == (records.xxh32(frame[4:6]) >> 8) & 0xFF
    assert records.decompress(records.LZ4, frame) == b"abc" * 50_000
    # xxHash32's reference values
    assert [records.xxh32(b""), records.xxh32(b"a"), records.xxh32(b"abc")] == [0x02CC5D05, 0x550D7456, 0x32D153FF]
    assert records.xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F
    # java.util.zip.GZIPOutputStream's header: no name, no time, OS unknown
    assert records.compress(records.GZIP, b"x").startswith(bytes.fromhex("1f8b08000000000000ff"))
    # magic 0's frames carry the descriptor checksum over the magic number too (KAFKA-3160), and are read either way
    broken = records.lz4_frame(b"hello", broken_checksum=True)
    assert broken[6] == (records.xxh32(broken[:6]) >> 8) & 0xFF
    assert records.decompress(records.LZ4, records.lz4_fix_checksum(broken)) == b"hello"
