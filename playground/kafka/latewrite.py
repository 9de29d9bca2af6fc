"""A late write on a real cluster: one transactional Produce request, sent as raw bytes to a partition's leader.

`net.late_write` (docs/scenario-format-extensions.md) delivers, now, a Produce request that a producer sent during an
earlier transaction and that the network held back. No client library can be told to do that, so the real backend
builds the request itself, as the producer's client would have built it:
- one RecordBatch v2 (magic 2, uncompressed, the transactional attribute bit, the producer id and epoch of the earlier
  transaction, a base sequence, CRC-32C over the batch from attributes on: kafka-python's `DefaultRecordBatchBuilder`,
  whose CRC-32C is pure Python);
- a Produce request carrying the producer's `transactional.id` (the field the leader's KIP-890 verification needs,
  ReplicaManager.handleProduceAppend), acks=-1, at the version the actor's client sends: librdkafka 2.16 sends
  Produce v10, kafka-clients 3.9.1 sends v11 (the first that is answered TRANSACTION_ABORTABLE, KIP-890 part 1) and
  kafka-clients 4.x on a `transaction.version` 2 cluster v12 (the first of transaction protocol v2; the leader itself
  adds the partition to the transaction);
- to the partition's leader, found in Metadata.

The leader's checks decide its fate; this module only reports the answer (error code, base offset).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka.protocol.api import Request, Response
from kafka.protocol.types import CompactArray, CompactBytes, CompactString, Int16, Int32, Int64, Schema, TaggedFields
from kafka.record.default_records import DefaultRecordBatchBuilder

from .wire import WireClient, WireError, error_name

# Produce versions per client (see the module docstring); 9..12 share one flexible schema (ProduceRequest.json).
PRODUCE_VERSION = {"librdkafka": 10, "java-3.9": 11, "java-4": 12}

# Errors a late write can meet, by code, beside wire.ERROR_NAMES (Errors.java).
LATE_WRITE_ERRORS = {
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH",
    48: "INVALID_TXN_STATE",
    49: "INVALID_PRODUCER_ID_MAPPING",
    51: "CONCURRENT_TRANSACTIONS",
    19: "NOT_ENOUGH_REPLICAS",
    90: "PRODUCER_FENCED",
    120: "TRANSACTION_ABORTABLE",
}


def _error(code: int) -> str | None:
    if not code:
        return None
    return LATE_WRITE_ERRORS.get(code) or error_name(code)


_PARTITION_RESPONSE = (
    ("index", Int32),
    ("error_code", Int16),
    ("base_offset", Int64),
    ("log_append_time_ms", Int64),
    ("log_start_offset", Int64),
    (
        "record_errors",
        CompactArray(
            ("batch_index", Int32), ("batch_index_error_message", CompactString("utf-8")), ("tags", TaggedFields)
        ),
    ),
    ("error_message", CompactString("utf-8")),
    ("tags", TaggedFields),
)
_RESPONSE_SCHEMA = Schema(
    (
        "responses",
        CompactArray(
            ("name", CompactString("utf-8")),
            ("partition_responses", CompactArray(*_PARTITION_RESPONSE)),
            ("tags", TaggedFields),
        ),
    ),
    ("throttle_time_ms", Int32),
    ("tags", TaggedFields),
)
_REQUEST_SCHEMA = Schema(
    ("transactional_id", CompactString("utf-8")),
    ("acks", Int16),
    ("timeout_ms", Int32),
    (
        "topic_data",
        CompactArray(
            ("name", CompactString("utf-8")),
            ("partition_data", CompactArray(("index", Int32), ("records", CompactBytes), ("tags", TaggedFields))),
            ("tags", TaggedFields),
        ),
    ),
    ("tags", TaggedFields),
)


def _produce_classes(version: int) -> type[Request]:
    resp = type(
        f"ProduceResponse_v{version}",
        (Response,),
        {"API_KEY": 0, "API_VERSION": version, "FLEXIBLE_VERSION": True, "SCHEMA": _RESPONSE_SCHEMA},
    )
    return type(
        f"ProduceRequest_v{version}",
        (Request,),
        {
            "API_KEY": 0,
            "API_VERSION": version,
            "FLEXIBLE_VERSION": True,
            "RESPONSE_TYPE": resp,
            "SCHEMA": _REQUEST_SCHEMA,
        },
    )


PRODUCE_REQUESTS = {v: _produce_classes(v) for v in (9, 10, 11, 12)}


def transactional_batch(
    producer_id: int, epoch: int, sequence: int, value: bytes, key: bytes | None = None, timestamp_ms: int | None = None
) -> bytes:
    """One RecordBatch v2 holding one record, with the transactional bit, as a transactional producer writes it."""
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=True,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        batch_size=1 << 20,
    )
    b.append(0, timestamp=timestamp_ms, key=key, value=value, headers=[])
    return bytes(b.build())


@dataclass
class LateWriteResult:
    error: str | None  # Kafka's error name, None when the leader appended it
    code: int
    base_offset: int
    message: str | None
    version: int
    leader: int


def send_late_write(
    wire: WireClient,
    *,
    topic: str,
    partition: int,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    sequence: int,
    value: bytes,
    key: bytes | None = None,
    version: int = 10,
    timeout_ms: int = 10_000,
) -> LateWriteResult:
    """Send the batch to the partition's leader and return its answer (one attempt: a late write is not retried)."""
    req_cls = PRODUCE_REQUESTS[version]
    records = transactional_batch(producer_id, epoch, sequence, value, key)
    req = req_cls(
        transactional_id=transactional_id,
        acks=-1,
        timeout_ms=timeout_ms,
        topic_data=[(topic, [(partition, records, {})], {})],
        tags={},
    )
    leader = wire.leader(topic, partition, refresh=True)
    resp: Any = wire.send_to(leader, req, timeout_s=timeout_ms / 1000 + 5)
    for _name, parts, _tags in resp.responses:
        for index, code, base_offset, _lat, _lso, _rerr, message, _ptags in parts:
            if index == partition:
                return LateWriteResult(_error(code), code, base_offset, message, version, leader)
    raise WireError(f"Produce {topic}-{partition}: the leader's answer names no such partition")


def leader_producer_state(wire: WireClient, topic: str, partition: int, producer_id: int) -> dict[str, Any] | None:
    """The leader's producer state entry for one producer id (KIP-664 DescribeProducers), or None."""
    for p in wire.describe_producers(topic, partition):
        if p["producer_id"] == producer_id:
            return p
    return None


def late_sequence(leader_state: dict[str, Any] | None, epoch: int, earlier_last_sequence: int) -> int:
    """The sequence number the late batch carries: the one the leader expects next from that producer at that epoch
    (its last sequence + 1), so that the idempotence check lets it through and only the transaction checks decide;
    when the leader holds another epoch for it, the one after the earlier transaction's last batch."""
    if leader_state is not None and leader_state["epoch"] == epoch and leader_state["last_sequence"] >= 0:
        return leader_state["last_sequence"] + 1
    return earlier_last_sequence + 1


# ------------------------------------------------------------------------------------- the step, on KafkaBackend

SETTLE_WAIT_S = 5.0  # see playground/sim/latewrite.py: the request arrives once no transaction of the id is half-done


def produce_version(client: str, kafka: str) -> int:
    return PRODUCE_VERSION["librdkafka" if client == "librdkafka" else f"java-{kafka}"]


def apply_late_write(backend: Any, step: Any) -> str:
    """`net.late_write: {actor, of, value, key?}` on a real cluster (KafkaBackend.apply): find the earlier record
    `of` in the session's logs (raw Fetch), wait until the coordinator has no transaction of the actor's id
    half-completed, ask the leader for its producer state (DescribeProducers) for the sequence number, send the
    batch, and return the leader's answer as the step's outcome."""
    import time

    from playground.engine import events as ev
    from playground.engine.backend import OK, BackendError

    args = step.args
    actor = backend.actors.get(str(args.get("actor")))
    if actor is None or not actor.spec.transactional_id:
        raise BackendError(f"{step.label}: {args.get('actor')!r} is not a transactional producer of this session")
    txid = backend.prefix + actor.spec.transactional_id
    obs = backend.observer
    wire = obs.wire
    found = None
    for name in sorted(backend.topics):
        for p in range(backend.topics[name].partitions):
            try:
                entries, _marks = obs.read_log(backend.prefix + name, p)
            except Exception as e:  # ObserverError
                raise BackendError(f"{step.label}: {e}") from None
            for e in entries:
                if not e.control and e.value is not None and e.value.decode("utf-8", "replace") == str(args["of"]):
                    found = (name, p, e)
                    break
            if found:
                break
        if found:
            break
    if found is None:
        raise BackendError(
            f"net.late_write: no record {args['of']!r} in the log (of: names a record the producer wrote)"
        )
    topic, partition, rec = found
    real_topic = backend.prefix + topic
    deadline = time.monotonic() + SETTLE_WAIT_S
    while time.monotonic() < deadline:
        try:
            state = obs.describe_transactions([txid]).get(txid, {}).get("state")
        except Exception:
            state = None
        if state not in ("PrepareCommit", "PrepareAbort"):
            break
        time.sleep(0.05)
    version = produce_version(backend.profile.client, backend.profile.kafka)
    try:
        leader_state = leader_producer_state(wire, real_topic, partition, rec.producer_id)
        seq = late_sequence(leader_state, rec.epoch, rec.sequence)
        src = f"network (late write of {actor.spec.name})"
        detail = (
            f"v{version}, {topic}-{partition} 1 record(s), producer {rec.producer_id} epoch {rec.epoch} seq {seq} "
            f"(held back since {args['of']!r})"
        )
        backend._emit(
            ev.Rpc,
            rpc="Produce",
            src=src,
            dst=f"leader {topic}-{partition}",
            direction="request",
            error=None,
            detail=detail,
        )
        key = args.get("key")
        result = send_late_write(
            wire,
            topic=real_topic,
            partition=partition,
            transactional_id=txid,
            producer_id=rec.producer_id,
            epoch=rec.epoch,
            sequence=seq,
            value=str(args["value"]).encode(),
            key=None if key is None else str(key).encode(),
            version=version,
        )
    except WireError as e:
        raise BackendError(f"{step.label}: {e}") from None
    backend._emit(
        ev.Rpc,
        rpc="Produce",
        src=f"leader {topic}-{partition}",
        dst=src,
        direction="response",
        error=result.error,
        detail=f"v{version}, base_offset {result.base_offset}" + (f" ({result.message})" if result.message else ""),
    )
    return result.error or OK
