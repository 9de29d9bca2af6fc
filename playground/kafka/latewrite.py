"""A late write on a real cluster: one transactional Produce request, sent as raw bytes to a partition's leader.

`net.late_write` (docs/scenario-format-extensions.md) delivers, now, a Produce request that a producer sent during an
earlier transaction and that the network held back. No client library can be told to do that, so the real backend
builds the request itself, as the producer's client would have built it:
- one RecordBatch v2 (magic 2, uncompressed, the transactional attribute bit, the producer id and epoch of the earlier
  transaction, a base sequence, CRC-32C over the batch from attributes on: kio's batch writer);
- a Produce request carrying the producer's `transactional.id` (the field the leader's KIP-890 verification needs,
  ReplicaManager.handleProduceAppend), acks=-1, at the version the actor's client sends: librdkafka 2.16 sends
  Produce v10, kafka-clients 3.9.1 sends v11 (the first that is answered TRANSACTION_ABORTABLE, KIP-890 part 1) and
  kafka-clients 4.x on a `transaction.version` 2 cluster v12 (the first of transaction protocol v2; the leader itself
  adds the partition to the transaction);
- to the partition's leader, found in Metadata.

The leader's checks decide its fate; this module only reports the answer (error code, base offset).
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass
from typing import Any

from kio.schema.produce.v9 import request as produce_v9
from kio.schema.produce.v10 import request as produce_v10
from kio.schema.produce.v11 import request as produce_v11
from kio.schema.produce.v12 import request as produce_v12
from kio.static.primitive import Records, i16, i32, i32Timedelta

from playground.engine import events as ev
from playground.engine.backend import OK, BackendError
from playground.engine.spec import Profile
from playground.protocol.records import Record, encode_batch

from .wire import WireClient, WireError, error_name

# Produce versions per client (see the module docstring); 9..12 share one flexible schema (ProduceRequest.json). A
# client sends the lower of its own highest version and the broker's (kafka-clients 4.x: 12 only with transaction
# version 2, else 11): the same tables as the simulator's (playground/sim/apiversions.py).
PRODUCE_VERSION = {"librdkafka": 10, "java-3.5": 9, "java-3.9": 11, "java-4": 11, "java-4-tv2": 12}
BROKER_PRODUCE_MAX = {"3.5": 9, "3.9": 11, "4": 13}
PRODUCE_MESSAGES: dict[int, Any] = {9: produce_v9, 10: produce_v10, 11: produce_v11, 12: produce_v12}

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


def transactional_batch(
    producer_id: int, epoch: int, sequence: int, value: bytes, key: bytes | None = None, timestamp_ms: int | None = None
) -> bytes:
    """One RecordBatch v2 holding one record, with the transactional bit, as a transactional producer writes it
    (CRC-32C over the batch from the attributes on: playground/protocol/records.py)."""
    ms = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    return encode_batch(
        [Record(0, ms, key, value)],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=True,
    )


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
    module = PRODUCE_MESSAGES[version]
    records = transactional_batch(producer_id, epoch, sequence, value, key)
    req = module.ProduceRequest(
        transactional_id=transactional_id,
        acks=i16(-1),
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
        topic_data=(
            module.TopicProduceData(
                name=topic,
                partition_data=(module.PartitionProduceData(index=i32(partition), records=Records(records)),),
            ),
        ),
    )
    leader = wire.leader(topic, partition, refresh=True)
    resp: Any = wire.send_to(leader, req, timeout_s=timeout_ms / 1000 + 5)
    for t in resp.responses:
        for part in t.partition_responses:
            if int(part.index) == partition:
                code = int(part.error_code)
                return LateWriteResult(_error(code), code, int(part.base_offset), part.error_message, version, leader)
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


def produce_version(profile: Profile) -> int:
    """The Produce version the profile's client sends to its cluster."""
    if profile.client == "librdkafka":
        client = "librdkafka"
    else:
        client = f"java-{profile.client_release}" + ("-tv2" if profile.transaction_version == 2 else "")
    return min(PRODUCE_VERSION[client], BROKER_PRODUCE_MAX[profile.kafka])


def apply_late_write(backend: Any, step: Any) -> str:
    """`net.late_write: {actor, of, value, key?}` on a real cluster (KafkaBackend.apply): find the earlier record
    `of` in the session's logs (raw Fetch), wait until the coordinator has no transaction of the actor's id
    half-completed, ask the leader for its producer state (DescribeProducers) for the sequence number, send the
    batch, and return the leader's answer as the step's outcome."""
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
            for entry in entries:
                if (
                    not entry.control
                    and entry.value is not None
                    and entry.value.decode("utf-8", "replace") == str(args["of"])
                ):
                    found = (name, p, entry)
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
    version = produce_version(backend.profile)
    try:
        leader_state = leader_producer_state(wire, real_topic, partition, rec.producer_id)
        seq = late_sequence(leader_state, rec.epoch, rec.sequence)
        src = f"network (late write of {actor.spec.name})"
        detail = (
            f"v{version}, {topic}-{partition} 1 record(s), producer {rec.producer_id} epoch {rec.epoch} seq {seq} "
            f"(held back since {args['of']!r})"
        )
        backend.events.emit(
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
    backend.events.emit(
        ev.Rpc,
        rpc="Produce",
        src=f"leader {topic}-{partition}",
        dst=src,
        direction="response",
        error=result.error,
        detail=f"v{version}, base_offset {result.base_offset}" + (f" ({result.message})" if result.message else ""),
    )
    return result.error or OK
