"""The real backend's decoders against known bytes: record batches with control records, `__transaction_state`
keys and values (v0 as Kafka 3.9 writes them, v1 flexible as 4.x writes them), Java's String.hashCode partitioning.
No broker needed: the bytes were captured from Apache Kafka 3.9.1 (tools/kafka) once and are written down here.
"""

from __future__ import annotations

import struct

import cramjam
import pytest

from playground.kafka.observation import log_fates
from playground.kafka.rdkafka_log import LogCollector, camel_to_state
from playground.kafka.wire import (
    BrokerError,
    decode_batches,
    decode_control_value,
    decode_response,
    decode_txn_key,
    decode_txn_value,
    describe_producers_request,
    describe_transaction_state,
    describe_transactions_request,
    encode_request,
    java_string_hash,
    list_transactions_request,
    transaction_state_partition,
)
from playground.protocol.records import control_type

# Fetch response records of one partition: a committed transaction (k1=v1, v2), its COMMIT marker, an aborted
# record (gone) and its ABORT marker; producer id 1002, epoch 0, one broker, compression none.
RECORDS = bytes.fromhex(
    "00000000000000000000004500000000025658ee4c001000000001000001a229edb344000001a229edb34400000000000003ea00000000"
    "00000000000214000000046b310476310010000002010476320000000000000000020000004200000000021ee2b5c30030000000000000"
    "01a229edb4d5000001a229edb4d500000000000003ea0000ffffffff000000012000000008000000010c00000000000000000000000000"
    "00030000003c0000000002fae73123001000000000000001a229edb4d0000001a229edb4d000000000000003ea00000000000200000001"
    "140000000108676f6e65000000000000000004000000420000000002a4fe05d7003000000000000001a229edb51a000001a229edb51a00"
    "000000000003ea0000ffffffff000000012000000008000000000c00000000000000"
)

TXN_KEY = bytes.fromhex("000000126d792d74786e2d70672d6361702d65386139")  # v0, "my-txn-pg-cap-e8a9"
TXN_VALUE_EMPTY = bytes.fromhex("000000000000000003ea00000000ea6000ffffffff000001a229edb326ffffffffffffffff")
TXN_VALUE_ONGOING = bytes.fromhex(
    "000000000000000003ea00000000ea600100000001000b70672d6361702d653861390000000100000000000001a229edb497000001a229edb497"
)
TXN_VALUE_PREPARE_COMMIT = bytes.fromhex(
    "000000000000000003ea00000000ea600200000001000b70672d6361702d653861390000000100000000000001a229edb4bb000001a229edb497"
)
TXN_VALUE_COMPLETE_COMMIT = bytes.fromhex("000000000000000003ea00000000ea600400000000000001a229edb4cd000001a229edb497")


def test_record_batches_keep_control_records_with_producer_id_and_epoch():
    entries = decode_batches(RECORDS)
    assert [e.offset for e in entries] == [0, 1, 2, 3, 4]
    assert [e.control for e in entries] == [None, None, "COMMIT", None, "ABORT"]
    assert [e.value for e in entries] == [b"v1", b"v2", None, b"gone", None]
    assert entries[0].key == b"k1" and entries[1].key is None
    assert all(e.producer_id == 1002 and e.epoch == 0 and e.transactional for e in entries)
    assert [e.sequence for e in entries] == [0, 1, -1, 2, -1]
    assert entries[2].coordinator_epoch == 0
    assert entries[2].to_dict() == {"offset": 2, "control": "COMMIT", "producer_id": 1002, "epoch": 0}
    assert entries[0].to_dict() == {
        "offset": 0,
        "key": "k1",
        "value": "v1",
        "producer_id": 1002,
        "epoch": 0,
        "sequence": 0,
        "transactional": True,
    }


def test_a_truncated_fetch_response_yields_the_complete_batches_only():
    entries = decode_batches(RECORDS[:-10])
    assert [e.offset for e in entries] == [0, 1, 2, 3]


def test_fates_follow_the_next_marker_of_the_same_producer():
    entries = decode_batches(RECORDS)
    assert log_fates(entries) == {0: "committed", 1: "committed", 2: "marker", 3: "aborted", 4: "marker"}
    assert log_fates(entries[:4]) == {0: "committed", 1: "committed", 2: "marker", 3: "open"}


def test_control_key_and_value():
    assert control_type(struct.pack(">hh", 0, 0)) == "ABORT"
    assert control_type(struct.pack(">hh", 0, 1)) == "COMMIT"
    assert decode_control_value(struct.pack(">hi", 0, 7)) == 7
    assert decode_control_value(None) is None
    with pytest.raises(ValueError):
        control_type(b"\x00")


def test_transaction_state_key_and_v0_values():
    assert decode_txn_key(TXN_KEY) == "my-txn-pg-cap-e8a9"
    empty = decode_txn_value(TXN_VALUE_EMPTY)
    assert empty == {
        "version": 0,
        "producer_id": 1002,
        "epoch": 0,
        "timeout_ms": 60000,
        "state": "Empty",
        "partitions": [],
        "last_update_ms": 1795999773478,
        "txn_start_time_ms": None,
    }
    ongoing = decode_txn_value(TXN_VALUE_ONGOING)
    assert ongoing["state"] == "Ongoing" and ongoing["partitions"] == [("pg-cap-e8a9", 0)]
    assert ongoing["txn_start_time_ms"] == 1795999773847
    assert decode_txn_value(TXN_VALUE_PREPARE_COMMIT)["state"] == "PrepareCommit"
    done = decode_txn_value(TXN_VALUE_COMPLETE_COMMIT)
    assert done["state"] == "CompleteCommit" and done["partitions"] == []
    assert decode_txn_value(None) is None  # tombstone: the transactional id expired


def _uvarint(n: int) -> bytes:
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def test_transaction_state_v1_flexible_value_with_tagged_fields():
    topic = b"orders"
    value = (
        struct.pack(">h", 1)
        + struct.pack(">qhib", 4000, 3, 60000, 2)  # PrepareCommit
        + _uvarint(1 + 1)  # one topic
        + _uvarint(len(topic) + 1)
        + topic
        + _uvarint(2 + 1)
        + struct.pack(">ii", 0, 2)
        + _uvarint(0)  # the topic entry's tagged fields
        + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000)
        + _uvarint(2)  # two tagged fields: NextProducerId (1), ClientTransactionVersion (2)
        + _uvarint(1)
        + _uvarint(8)
        + struct.pack(">q", 4001)
        + _uvarint(2)
        + _uvarint(2)
        + struct.pack(">h", 2)
    )
    d = decode_txn_value(value)
    assert d["version"] == 1
    assert (d["producer_id"], d["epoch"], d["timeout_ms"], d["state"]) == (4000, 3, 60000, "PrepareCommit")
    assert d["partitions"] == [("orders", 0), ("orders", 2)]
    assert d["txn_start_time_ms"] == 1_700_000_000_000
    assert d["next_producer_id"] == 4001 and d["client_transaction_version"] == 2


@pytest.mark.parametrize(
    "txid, partition",
    # reference section 7's vectors
    [("my-txn", 45), ("transactional-id-1", 41), ("app-0", 4)],
)
def test_transaction_state_partition_matches_java(txid, partition):
    assert transaction_state_partition(txid, 50) == partition


def test_java_string_hash():
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE: Kafka's abs() makes it 0
    assert transaction_state_partition("polygenelubricants", 50) == 0


def test_kip664_requests_encode_as_flexible_versions():
    # header v2 (api key, version, correlation id, client id, no tags), then the flexible body
    assert encode_request(describe_transactions_request(["a"]), 7, "c") == (
        struct.pack(">hhih", 65, 0, 7, 1) + b"c" + b"\x00" + b"\x02\x02a\x00"
    )
    body = encode_request(list_transactions_request(), 1, "c")
    assert body.endswith(b"\x00" + b"\x01\x01\x00")
    assert encode_request(describe_producers_request({"t": [0]}), 1, "c").endswith(
        b"\x00" + b"\x02\x02t\x02\x00\x00\x00\x00\x00\x00"
    )


def _described(state: bytes, start_ms: int, error: int = 0) -> bytes:
    """A DescribeTransactions v0 answer (response header v1: correlation id 9, no tags) for transactional id "a"."""
    return (
        struct.pack(">i", 9)
        + b"\x00"
        + struct.pack(">i", 0)
        + _uvarint(2)  # one state
        + struct.pack(">h", error)
        + _uvarint(2)
        + b"a"
        + _uvarint(len(state) + 1)
        + state
        + struct.pack(">iqqh", 60000, start_ms, 1000, 2)
        + _uvarint(2)
        + _uvarint(2)
        + b"t"
        + _uvarint(2)
        + struct.pack(">i", 1)
        + b"\x00"
        + b"\x00"
        + b"\x00"
    )


def test_describe_transactions_answers_are_parsed_once_for_the_backend_and_the_inspector():
    request = type(describe_transactions_request(["a"]))
    corr, resp = decode_response(request, _described(b"Ongoing", 1_700_000_000_000))
    assert corr == 9
    assert describe_transaction_state(resp.transaction_states[0], coordinator=2) == {
        "state": "Ongoing",
        "producer_id": 1000,
        "producer_epoch": 2,
        "transaction_timeout_ms": 60000,
        "transaction_start_time_ms": 1_700_000_000_000,
        "partitions": [("t", 1)],
        "coordinator_broker": 2,
    }
    # an id with no open transaction: TransactionStartTimeMs -1, which kio's timestamp type would refuse
    _corr, resp = decode_response(request, _described(b"Empty", -1))
    assert describe_transaction_state(resp.transaction_states[0], 2)["transaction_start_time_ms"] is None
    _corr, resp = decode_response(request, _described(b"", -1, error=105))
    assert describe_transaction_state(resp.transaction_states[0], 2) == {"state": None, "coordinator_broker": 2}
    _corr, resp = decode_response(request, _described(b"", -1, error=16))
    with pytest.raises(BrokerError) as info:
        describe_transaction_state(resp.transaction_states[0], 2)
    assert info.value.retriable and "NOT_COORDINATOR" in str(info.value)


def test_librdkafka_log_lines_become_timeline_items():
    c = LogCollector(
        {
            "Producer attempted an operation with an old epoch": "INVALID_PRODUCER_EPOCH",
            "Producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing": "CONCURRENT_TRANSACTIONS",
        }
    )
    import logging

    def line(text: str) -> None:
        c.emit(logging.LogRecord("x", logging.DEBUG, "", 0, text, None, None))

    line(
        "SEND [rdkafka#producer-1] [thrd:TxnCoordinator]: TxnCoordinator/3: Sent InitProducerIdRequest (v4, 55 bytes @ 0, CorrId 3)"
    )
    line(
        "RECV [rdkafka#producer-1] [thrd:TxnCoordinator]: TxnCoordinator/3: Received InitProducerIdResponse (v4, 18 bytes, CorrId 3, rtt 1.0ms)"
    )
    line(
        "GETPID [rdkafka#producer-1] [thrd:main]: TxnCoordinator/3: Failed to acquire PID: Broker: Producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing"
    )
    line("GETPID [rdkafka#producer-1] [thrd:main]: Acquired PID{Id:2001,Epoch:2}")
    line("TXNSTATE [rdkafka#producer-1] [thrd:main]: Transaction state change WaitPID -> ReadyNotAcked")
    line("SEND [rdkafka#producer-1] [thrd:main]: 127.0.0.1:19092/1: Sent MetadataRequest (v12, 30 bytes @ 0, CorrId 4)")
    line("SEND [rdkafka#producer-1] [thrd:b]: 127.0.0.1:19093/2: Sent ProduceRequest (v10, 139 bytes @ 0, CorrId 4)")
    line(
        "RECV [rdkafka#producer-1] [thrd:b]: 127.0.0.1:19093/2: Received ProduceResponse (v10, 56 bytes, CorrId 4, rtt 3.1ms)"
    )
    line(
        "TXNERR [rdkafka#producer-1] [thrd:b]: Fatal transaction error: ProduceRequest for t [0] with 1 message(s) failed: Broker: Producer attempted an operation with an old epoch (broker 2 PID{Id:2011,Epoch:0}, base seq 1)"
    )
    line(
        "SEND [rdkafka#producer-1] [thrd:c]: TxnCoordinator/2: Sent AddOffsetsToTxnRequest (v0, 65 bytes @ 0, CorrId 5)"
    )
    line(
        "RECV [rdkafka#producer-1] [thrd:c]: TxnCoordinator/2: Received AddOffsetsToTxnResponse (v0, 6 bytes, CorrId 5, rtt 4.85ms)"
    )
    line("ADDOFFSETS [rdkafka#producer-1] [thrd:main]: AddOffsetsToTxn response from TxnCoordinator/2: _FENCED ()")
    items = c.drain()
    assert [i["error"] for i in items[-4:]] == [None, "INVALID_PRODUCER_EPOCH", None, "_FENCED"]
    items = items[:-4]
    assert [i["type"] for i in items] == ["rpc", "rpc", "pid", "state"]  # Metadata is left out
    assert items[1]["error"] == "CONCURRENT_TRANSACTIONS" and items[0]["error"] is None
    assert items[2]["producer_id"] == 2001 and items[2]["epoch"] == 2
    assert (items[3]["from"], items[3]["to"]) == ("WAIT_PID", "READY_NOT_ACKED")
    assert c.txn_state == "READY_NOT_ACKED" and c.pid_epochs == [(2001, 2)]
    assert camel_to_state("InTransaction") == "IN_TRANSACTION" and camel_to_state("AbortableError") == "ABORTABLE_ERROR"


def _compressed(batch: bytes, codec: int, compress) -> bytes:
    """The same batch with its records compressed as DefaultRecordBatch does: attributes' codec bits, the records
    after the 61-byte header compressed, the length field adjusted (the CRC is not checked by the reader)."""
    head, records = bytearray(batch[:61]), batch[61:]
    body = compress(records)
    head[21:23] = struct.pack(">h", struct.unpack(">h", bytes(head[21:23]))[0] | codec)
    head[8:12] = struct.pack(">i", 61 - 12 + len(body))
    return bytes(head) + body


def _xerial(data: bytes) -> bytes:
    """Snappy as Kafka's Java client frames it: a 16-byte header, then length-prefixed raw snappy blocks."""
    block = bytes(cramjam.snappy.compress_raw(data))
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block


@pytest.mark.parametrize(
    "codec, compress",
    [
        (1, lambda d: bytes(cramjam.gzip.compress(d))),
        (2, lambda d: bytes(cramjam.snappy.compress_raw(d))),  # librdkafka's raw snappy
        (2, _xerial),  # the Java client's framing
        (3, lambda d: bytes(cramjam.lz4.compress(d))),
        (4, lambda d: bytes(cramjam.zstd.compress(d))),
    ],
)
def test_compressed_batches_decode_as_the_uncompressed_ones(codec, compress):
    first_batch = RECORDS[: 12 + struct.unpack(">i", RECORDS[8:12])[0]]  # k1=v1, v2 of producer 1002
    plain = decode_batches(first_batch)
    got = decode_batches(_compressed(first_batch, codec, compress) + RECORDS[len(first_batch) :])
    assert [e.to_dict() for e in got[:2]] == [e.to_dict() for e in plain]
    assert [e.timestamp_ms for e in got[:2]] == [e.timestamp_ms for e in plain]
    assert [e.offset for e in got] == [0, 1, 2, 3, 4]
