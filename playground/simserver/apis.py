"""One handler per API: a decoded request in, calls into the simulated cluster, the response once it answers.

Follows core/src/main/scala/kafka/server/KafkaApis.scala (3.9 and 4.x) for what each request is checked for and in
which order, and which error each version gets; the decisions themselves (a fenced epoch, a pending transition, an
unverified partition, ...) are the simulator's (playground/sim/cluster.py, coordinator.py, groups.py, log.py), which
already name the error each request version gets on the wire.

A handler describes its response once, as plain data (`messages.build` keeps the fields the request's version has).
`HANDLERS`: api key -> (handler, lowest version served, highest version served); the versions advertised are these cut
to the release's own table (protocol/apiversions.py) and to what kio reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from playground.protocol import apiversions, records
from playground.protocol.messages import ms
from playground.sim.groups import ClassicMember
from playground.sim.leaders import TXN_TOPIC
from playground.sim.log import READ_COMMITTED, READ_UNCOMMITTED
from playground.sim.txnstate import STATE_IDS
from playground.simserver.core import Call, WireValues, text_of

Handler = Callable[[Call], None]
HANDLERS: dict[int, tuple[Handler, int, int]] = {}

# Kafka's answers to authorizedOperations when nobody asked (MetadataResponse.AUTHORIZED_OPERATIONS_OMITTED), and the
# operations a topic and the cluster allow without an authorizer (AclOperation codes as a bit field).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
TOPIC_OPERATIONS = sum(1 << code for code in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))
LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
# ApiVersionsRequest.isValid: the client software name and version
SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")
DEFAULT_MAX_WAIT_MS = 500


def api(key: int, lo: int, hi: int) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[key] = (fn, lo, hi)
        return fn

    return register


def _tp(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def _leader_info(call: Call, tp: str) -> dict[str, int]:
    meta = call.core.cluster.partitions.get(tp)
    if meta is None or meta.leader is None:
        return {"leader_id": -1, "leader_epoch": -1}
    return {"leader_id": meta.leader, "leader_epoch": meta.leader_epoch}


def _check_leader_epoch(current_leader_epoch: int, leader_epoch: int) -> str | None:
    """Partition.checkCurrentLeaderEpoch: -1 skips the check."""
    if current_leader_epoch == -1 or current_leader_epoch == leader_epoch:
        return None
    return "FENCED_LEADER_EPOCH" if current_leader_epoch < leader_epoch else "UNKNOWN_LEADER_EPOCH"


def _topic_name(call: Call, item: Any) -> tuple[str | None, Any]:
    """A request item's topic, named or (newer versions) by id: (name or None, the id as sent)."""
    topic_id = getattr(item, "topic_id", None)
    name = getattr(item, "name", None) or getattr(item, "topic", None)
    if topic_id is not None and not name:
        return call.core.topic_of(topic_id), topic_id
    return name, topic_id


def _endpoint(call: Call, broker: int) -> tuple[str, int]:
    return call.core.endpoints.get(broker, ("127.0.0.1", 0))


# ---------------------------------------------------------------------------------------------- ApiVersions


@api(18, 0, 5)
def api_versions(call: Call) -> None:
    body, version, core = call.body, call.version, call.core
    name = getattr(body, "client_software_name", None)
    software_version = getattr(body, "client_software_version", None)
    if version >= 3 and not (SOFTWARE.match(name or "") and SOFTWARE.match(software_version or "")):
        call.reply({"error_code": "INVALID_REQUEST", "api_keys": []}, error="INVALID_REQUEST")
        return
    if name is not None and software_version is not None:
        call.conn.software = (name, software_version)
    supported = apiversions.SUPPORTED_FEATURES[core.kafka]
    finalized = apiversions.FINALIZED_FEATURES[core.kafka]
    call.reply(
        {
            "api_keys": [
                {"api_key": key, "min_version": lo, "max_version": hi} for key, (lo, hi) in core.advertised.items()
            ],
            "throttle_time": 0,
            "supported_features": [
                {"name": n, "min_version": lo, "max_version": hi}
                for n, (lo, hi) in supported.items()
                if version >= 4 or lo > 0  # KIP-1022: v3 and older leave out features that may be disabled
            ],
            "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
            "finalized_features": [
                {"name": n, "min_version_level": lo, "max_version_level": hi} for n, (lo, hi) in finalized.items()
            ],
        }
    )


# The metadata offset at which the features were finalized: any non-negative number (a real cluster's grows as its
# metadata log does; a client only compares it with what it saw before).
FINALIZED_FEATURES_EPOCH = 1


# ---------------------------------------------------------------------------------------------- Metadata


def _brokers(call: Call) -> list[dict[str, Any]]:
    c = call.core.cluster
    out = []
    for b in c.broker_ids:
        if c.broker_up(b):
            host, port = _endpoint(call, b)
            out.append({"node_id": b, "host": host, "port": port, "rack": None})
    return out


def _controller(call: Call) -> int:
    """A KRaft broker names a random live broker as controller (clients never talk to the real controllers); the
    simulator names the first live one."""
    up = call.core.cluster.any_up_broker()
    return up if up is not None else -1


def _topic_metadata(call: Call, topic: str, include_ops: bool) -> dict[str, Any]:
    c = call.core.cluster
    parts = []
    for p in range(c.partition_count(topic)):
        meta = c.partitions[_tp(topic, p)]
        live = [b for b in meta.replicas if c.broker_up(b)]
        leader = meta.leader if meta.leader is not None and c.broker_up(meta.leader) else -1
        parts.append(
            {
                "error_code": None if leader >= 0 else "LEADER_NOT_AVAILABLE",
                "partition_index": p,
                "leader_id": leader,
                "leader_epoch": meta.leader_epoch,
                "replica_nodes": list(meta.replicas),
                "isr_nodes": live,
                "offline_replicas": [b for b in meta.replicas if b not in live],
            }
        )
    return {
        "error_code": None,
        "name": topic,
        "topic_id": call.core.topic_id(topic),
        "is_internal": call.core.internal(topic),
        "partitions": parts,
        "topic_authorized_operations": TOPIC_OPERATIONS if include_ops else AUTHORIZED_OPERATIONS_OMITTED,
    }


@api(3, 0, 13)
def metadata(call: Call) -> None:
    body, version, core = call.body, call.version, call.core
    c = core.cluster
    include_ops = bool(getattr(body, "include_topic_authorized_operations", False))
    requested = body.topics
    if requested is None or (version == 0 and not requested):
        topics = [_topic_metadata(call, t, include_ops) for t in c.topics]
    else:
        auto_create = bool(getattr(body, "allow_auto_topic_creation", True)) and _config_bool(
            core.config, "auto.create.topics.enable", True
        )
        topics = []
        for item in requested:
            name, topic_id = _topic_name(call, item)
            if name is not None and name in c.topics:
                topics.append(_topic_metadata(call, name, include_ops))
            elif topic_id is not None and not getattr(item, "name", None):
                topics.append({"error_code": "UNKNOWN_TOPIC_ID", "name": None, "topic_id": topic_id, "partitions": []})
            elif name is None or not LEGAL_TOPIC.match(name) or name in (".", ".."):
                topics.append({"error_code": "INVALID_TOPIC_EXCEPTION", "name": name, "partitions": []})
            elif auto_create:
                # KRaft creates the topic through the controller; this answer comes before its leaders exist
                _create(call, name, int(core.config.get("num.partitions", 1)), {})
                topics.append({"error_code": "LEADER_NOT_AVAILABLE", "name": name, "partitions": []})
            else:
                topics.append({"error_code": "UNKNOWN_TOPIC_OR_PARTITION", "name": name, "partitions": []})
    call.reply(
        {
            "throttle_time": 0,
            "brokers": _brokers(call),
            "cluster_id": core.cluster_id,
            "controller_id": _controller(call),
            "topics": topics,
            "cluster_authorized_operations": CLUSTER_OPERATIONS
            if getattr(body, "include_cluster_authorized_operations", False)
            else AUTHORIZED_OPERATIONS_OMITTED,
        }
    )


def _config_bool(config: dict[str, Any], key: str, default: bool) -> bool:
    value = config.get(key, default)
    return value if isinstance(value, bool) else str(value).strip().lower() == "true"


# ---------------------------------------------------------------------------------------------- Produce


@api(0, 3, 13)
def produce(call: Call) -> None:
    body, version, core = call.body, call.version, call.core
    c = core.cluster
    txid = getattr(body, "transactional_id", None)
    acks = int(body.acks)
    # (topic key as sent, name, partition, records)
    items: list[tuple[Any, str | None, int, bytes | None]] = []
    for topic in body.topic_data:
        name, topic_id = _topic_name(call, topic)
        key = topic_id if version >= 13 else name
        for part in topic.partition_data:
            items.append((key, name, int(part.index), part.records))
    results: dict[tuple[Any, int], dict[str, Any]] = {}
    batches: dict[tuple[Any, int], records.RecordBatch] = {}
    transactional = False
    for key, name, index, raw in items:
        error = None
        if name is None:
            error = "UNKNOWN_TOPIC_ID"
        elif name not in c.topics or not 0 <= index < c.partition_count(name):
            error = "UNKNOWN_TOPIC_OR_PARTITION"
        else:
            try:
                found = records.read_batches(raw or b"", partial_ok=False)
            except records.CorruptRecordError as e:
                error = e.error
            else:
                # ProduceRequest.validateRecords: v3+ holds exactly one magic-2 batch per partition
                if len(found) != 1:
                    error = "INVALID_RECORD"
                else:
                    batches[(key, index)] = found[0]
                    transactional = transactional or found[0].transactional
        if error:
            results[(key, index)] = _produce_error(error)
    if transactional and not txid:
        # KafkaApis.handleProduceRequest: transactional records need a transactional id the principal may write
        for key, _name, index, _raw in items:
            results[(key, index)] = _produce_error("TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
        batches.clear()
    if acks not in (-1, 0, 1):
        for key, _name, index, _raw in items:
            results[(key, index)] = _produce_error("INVALID_REQUIRED_ACKS")
        batches.clear()
    tps = sorted({_tp(n, i) for _k, n, i, _r in items if n is not None})
    first = next(iter(batches.values()), None)
    dst = f"leader {', '.join(tps)}(b{call.broker})"
    if first is not None:
        call.announce(
            dst,
            f"{sum(b.record_count for b in batches.values())} record(s), producer {first.producer_id} epoch "
            f"{first.producer_epoch} seq {first.base_sequence}" + (f", {txid}" if txid else ""),
        )
    pending = [len(batches)]

    def done() -> None:
        if acks == 0:
            return
        answers = [r.get("error_code") for r in results.values() if r.get("error_code")]
        error = answers[0] if answers else None
        offsets = [str(r["base_offset"]) for r in results.values() if r.get("base_offset", -1) >= 0]
        call.reply(
            {
                "responses": _produce_responses(call, items, results),
                "throttle_time": 0,
                "node_endpoints": _node_endpoints(call, results),
            },
            error=error,
            detail=f"base offset {', '.join(offsets)}" if offsets else "",
        )

    for (key, index), batch in batches.items():
        name = next(n for k, n, i, _r in items if k == key and i == index)
        assert name is not None
        tp = _tp(name, index)
        error = _append_error(call, tp, batch)
        if error:
            results[(key, index)] = _produce_error(error, _leader_info(call, tp) if error.startswith("NOT_") else None)
            pending[0] -= 1
            continue
        try:
            recs = batch.records()  # read whole (decompressed) even when only the count is kept: LogValidator does
        except records.CorruptRecordError as e:
            results[(key, index)] = _produce_error(e.error)
            pending[0] -= 1
            continue
        keys: tuple[Any, ...] | None = None
        if core.record_values:
            values = WireValues(text_of(r.value) for r in recs)
            if any(r.key is not None for r in recs):
                keys = tuple(text_of(r.key) for r in recs)
        else:
            values = WireValues((None,) * len(recs))
        values.payload = batch.raw

        def reply(
            error: str | None = None, *, _slot: tuple[Any, int] = (key, index), _tp: str = tp, **result: Any
        ) -> None:
            if _slot in results:
                return
            if error:
                results[_slot] = _produce_error(error, _leader_info(call, _tp) if error.startswith("NOT_") else None)
            else:
                results[_slot] = {
                    "index": _slot[1],
                    "error_code": None,
                    "base_offset": result.get("base_offset", -1),
                    "log_append_time": None,
                    "log_start_offset": c.log(_tp).log_start_offset,
                }
            pending[0] -= 1
            if pending[0] == 0:
                done()

        c.handle_produce(
            call.broker,
            tp,
            txid,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.transactional,
            values,
            keys,
            acks,
            reply,
            client_id=call.conn.label,
            version=version,
        )
    if acks == 0:
        call.no_reply()  # the broker answers nothing; the connection reads its next request
    elif pending[0] == 0:
        done()


def _append_error(call: Call, tp: str, batch: records.RecordBatch) -> str | None:
    """What a leader refuses before the log's producer-state checks (LogValidator, ReplicaManager.appendToLocalLog)."""
    if not batch.crc_ok():
        return "CORRUPT_MESSAGE"
    if batch.control:
        return "INVALID_RECORD"  # clients may not write control batches
    if batch.record_count == 0:
        return "INVALID_RECORD"
    return None


def _produce_error(error: str, leader: dict[str, int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"error_code": error, "base_offset": -1, "log_append_time": None, "log_start_offset": -1}
    if leader is not None:
        out["current_leader"] = leader
    return out


def _produce_responses(
    call: Call, items: list[tuple[Any, str | None, int, Any]], results: dict[tuple[Any, int], dict[str, Any]]
) -> list[dict[str, Any]]:
    by_topic: dict[Any, list[dict[str, Any]]] = {}
    for key, _name, index, _raw in items:
        by_topic.setdefault(key, []).append(
            {"index": index, **results.get((key, index), _produce_error("UNKNOWN_SERVER_ERROR"))}
        )
    if call.version >= 13:
        return [{"topic_id": key, "partition_responses": parts} for key, parts in by_topic.items()]
    return [{"name": key, "partition_responses": parts} for key, parts in by_topic.items()]


def _node_endpoints(call: Call, results: dict[tuple[Any, int], dict[str, Any]]) -> list[dict[str, Any]]:
    """KIP-951: with NOT_LEADER_OR_FOLLOWER, where the new leader is."""
    leaders = {r["current_leader"]["leader_id"] for r in results.values() if "current_leader" in r}
    out = []
    for b in sorted(leaders):
        if b >= 0:
            host, port = _endpoint(call, b)
            out.append({"node_id": b, "host": host, "port": port, "rack": None})
    return out


# ---------------------------------------------------------------------------------------------- Fetch


@api(1, 4, 18)
def fetch(call: Call) -> None:
    body, version, core = call.body, call.version, call.core
    c = core.cluster
    isolation = READ_COMMITTED if int(body.isolation_level) == 1 else READ_UNCOMMITTED
    if int(body.session_id) != 0 and int(body.session_epoch) > 0:
        # no fetch session is ever created here (the answer's session id is 0), so none can be continued
        call.reply({"error_code": "FETCH_SESSION_ID_NOT_FOUND", "session_id": 0, "responses": []})
        return
    wanted: list[tuple[Any, str | None, Any]] = []  # (topic key, name, partition item)
    for topic in body.topics:
        name, topic_id = _topic_name(call, topic)
        key = topic_id if version >= 13 else name
        for part in topic.partitions:
            wanted.append((key, name, part))
    max_wait_ms = ms(body.max_wait)
    answered = [False]

    def answer() -> None:
        if answered[0]:
            return
        answered[0] = True
        _fetch_answer(call, wanted, isolation, int(body.max_bytes))

    # A Fetch waits (DelayedFetch) while no partition has anything to return and none has an error, up to max_wait.
    immediate = max_wait_ms <= 0 or not wanted
    waits: list[str] = []
    for _key, name, part in wanted:
        tp = _tp(name, int(part.partition)) if name else None
        meta = c.partitions.get(tp) if tp else None
        if meta is None or meta.leader != call.broker or not c.broker_up(call.broker) or name == TXN_TOPIC:
            immediate = True
            break
        if _check_leader_epoch(int(part.current_leader_epoch), meta.leader_epoch):
            immediate = True
            break
        log = c.log(tp)  # type: ignore[arg-type]
        offset = int(part.fetch_offset)
        if offset > log.log_end_offset or offset < log.log_start_offset:
            immediate = True
            break
        upper = log.last_stable_offset if isolation == READ_COMMITTED else log.high_watermark
        if upper > offset:
            immediate = True
            break
        waits.append(tp)  # type: ignore[arg-type]
    if immediate:
        answer()
        return
    for (_key, _name, part), tp in zip(wanted, waits):
        c.handle_fetch(
            call.broker, tp, int(part.fetch_offset), isolation, 0, lambda *a, **k: answer(), max_wait_ms=max_wait_ms
        )


def _fetch_txn_state(
    call: Call, index: int, offset: int, entry: dict[str, Any], budget: int, first_data: bool
) -> tuple[int, bool]:
    """A Fetch of `__transaction_state`: the coordinator's records (core.TxnStateLog), everything replicated."""
    view = call.core.txn_state.get(index)
    end = view.log_end_offset if view is not None else 0
    entry.update(high_watermark=end, last_stable_offset=end, log_start_offset=0)
    if offset > end or offset < 0:
        entry["error_code"] = "OFFSET_OUT_OF_RANGE"
        return budget, first_data
    chunks: list[bytes] = []
    for data in view.read(offset) if view is not None else ():
        if (chunks or not first_data) and len(data) > budget:
            break
        chunks.append(data)
        budget -= len(data)
        first_data = False
    entry["records"] = b"".join(chunks)
    return budget, first_data


def _fetch_answer(call: Call, wanted: list[tuple[Any, str | None, Any]], isolation: str, max_bytes: int) -> None:
    c = call.core.cluster
    by_topic: dict[Any, list[dict[str, Any]]] = {}
    budget = max(max_bytes, 0)
    first_data = True
    errors: list[str] = []
    for key, name, part in wanted:
        index = int(part.partition)
        entry: dict[str, Any] = {
            "partition_index": index,
            "error_code": None,
            "high_watermark": -1,
            "last_stable_offset": -1,
            "log_start_offset": -1,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": None,
        }
        by_topic.setdefault(key, []).append(entry)
        tp = _tp(name, index) if name else None
        meta = c.partitions.get(tp) if tp else None
        if name is None:
            entry["error_code"] = "UNKNOWN_TOPIC_ID"
        elif meta is None:
            entry["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
        elif meta.leader != call.broker or not c.broker_up(call.broker):
            entry["error_code"] = "NOT_LEADER_OR_FOLLOWER"
            entry["current_leader"] = _leader_info(call, meta.name)
        elif error := _check_leader_epoch(int(part.current_leader_epoch), meta.leader_epoch):
            entry["error_code"] = error
        if entry["error_code"]:
            errors.append(entry["error_code"])
            continue
        assert tp is not None
        offset = int(part.fetch_offset)
        if name == TXN_TOPIC:
            budget, first_data = _fetch_txn_state(call, index, offset, entry, budget, first_data)
            if entry["error_code"]:
                errors.append(entry["error_code"])
            continue
        log = c.log(tp)
        entry.update(
            high_watermark=log.high_watermark,
            last_stable_offset=log.last_stable_offset,
            log_start_offset=log.log_start_offset,
        )
        if offset > log.log_end_offset or offset < log.log_start_offset:
            entry["error_code"] = "OFFSET_OUT_OF_RANGE"
            errors.append("OFFSET_OUT_OF_RANGE")
            continue
        upper = log.last_stable_offset if isolation == READ_COMMITTED else log.high_watermark
        partition_budget = max(int(part.partition_max_bytes), 0)
        chunks: list[bytes] = []
        size = 0
        next_offset = offset
        batches = log.batches
        i = log.batch_index(offset)
        while i < len(batches):
            batch = batches[i]
            if batch.base_offset >= upper:
                break
            data = call.core.batch_bytes(tp, batch)
            # the first batch goes out even when it is larger than the limits (KIP-74), so a consumer never stalls
            if (chunks or not first_data) and (size + len(data) > partition_budget or len(data) > budget):
                break
            chunks.append(data)
            size += len(data)
            budget -= len(data)
            next_offset = batch.last_offset + 1
            first_data = False
            i += 1
        entry["records"] = b"".join(chunks)
        if isolation == READ_COMMITTED:
            entry["aborted_transactions"] = [
                {"producer_id": a.producer_id, "first_offset": a.first_offset}
                for a in (log.aborted_transactions(offset, next_offset) if next_offset > offset else [])
            ]
    if call.version >= 13:
        responses = [{"topic_id": key, "partitions": parts} for key, parts in by_topic.items()]
    else:
        responses = [{"topic": key, "partitions": parts} for key, parts in by_topic.items()]
    call.reply(
        {"throttle_time": 0, "error_code": None, "session_id": 0, "responses": responses},
        error=errors[0] if errors else None,
    )


# ---------------------------------------------------------------------------------------------- ListOffsets

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


@api(2, 1, 11)
def list_offsets(call: Call) -> None:
    body, core = call.body, call.core
    c = core.cluster
    isolation = READ_COMMITTED if int(getattr(body, "isolation_level", 0)) == 1 else READ_UNCOMMITTED
    topics = []
    for topic in body.topics:
        parts = []
        for part in topic.partitions:
            index = int(part.partition_index)
            tp = _tp(topic.name, index)
            meta = c.partitions.get(tp)
            entry: dict[str, Any] = {"partition_index": index, "timestamp": -1, "offset": -1, "leader_epoch": -1}
            parts.append(entry)
            if meta is None:
                entry["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
                continue
            if meta.leader != call.broker:
                entry["error_code"] = "NOT_LEADER_OR_FOLLOWER"
                continue
            error = _check_leader_epoch(int(getattr(part, "current_leader_epoch", -1)), meta.leader_epoch)
            if error:
                entry["error_code"] = error
                continue
            timestamp = ms(part.timestamp)
            if topic.name == TXN_TOPIC:
                view = core.txn_state.get(index)
                end = view.log_end_offset if view is not None else 0
                entry.update(offset=end if timestamp == LATEST else 0, leader_epoch=meta.leader_epoch)
                continue
            log = c.log(tp)
            upper = log.last_stable_offset if isolation == READ_COMMITTED else log.high_watermark
            if timestamp == LATEST:
                entry.update(offset=upper, leader_epoch=meta.leader_epoch)
            elif timestamp in (EARLIEST, EARLIEST_LOCAL):
                entry.update(offset=log.log_start_offset, leader_epoch=core.epoch_at(tp, log.log_start_offset))
            elif timestamp == LATEST_TIERED:
                entry.update(offset=-1)
            else:
                found = _offset_for_time(core, tp, log, timestamp, upper)
                if found is not None:
                    ts, off = found
                    entry.update(timestamp=ts, offset=off, leader_epoch=core.epoch_at(tp, off))
        topics.append({"name": topic.name, "partitions": parts})
    call.reply({"throttle_time": 0, "topics": topics})


def _offset_for_time(core: Any, tp: str, log: Any, timestamp: int, upper: int) -> tuple[int, int] | None:
    """UnifiedLog.fetchOffsetByTimestamp below `upper`: the first record at or after `timestamp`, or (MAX_TIMESTAMP)
    the record with the largest timestamp (the first of them)."""
    best: tuple[int, int] | None = None
    for batch in log.batches:
        if batch.base_offset >= upper or batch.control is not None:
            continue
        for record in records.read_batches(core.batch_bytes(tp, batch))[0].records():
            if timestamp == MAX_TIMESTAMP:
                if best is None or record.timestamp_ms > best[0]:
                    best = (record.timestamp_ms, record.offset)
            elif record.timestamp_ms >= timestamp:
                return record.timestamp_ms, record.offset
    return best


# ---------------------------------------------------------------------------------------------- OffsetForLeaderEpoch


@api(23, 2, 4)
def offset_for_leader_epoch(call: Call) -> None:
    core = call.core
    c = core.cluster
    topics = []
    for topic in call.body.topics:
        parts = []
        for part in topic.partitions:
            index = int(part.partition)
            tp = _tp(topic.topic, index)
            meta = c.partitions.get(tp)
            entry: dict[str, Any] = {"partition": index, "leader_epoch": -1, "end_offset": -1}
            parts.append(entry)
            if meta is None:
                entry["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
            elif meta.leader != call.broker:
                entry["error_code"] = "NOT_LEADER_OR_FOLLOWER"
            elif error := _check_leader_epoch(int(part.current_leader_epoch), meta.leader_epoch):
                entry["error_code"] = error
            else:
                epoch, end = core.end_offset_for(
                    tp, int(part.leader_epoch), c.log(tp).log_end_offset, meta.leader_epoch
                )
                entry.update(leader_epoch=epoch, end_offset=end)
        topics.append({"topic": topic.topic, "partitions": parts})
    call.reply({"throttle_time": 0, "topics": topics})


# ---------------------------------------------------------------------------------------------- coordinators

COORDINATOR_KINDS = {0: "group", 1: "transaction"}


@api(10, 0, 6)
def find_coordinator(call: Call) -> None:
    body, version = call.body, call.version
    kind = COORDINATOR_KINDS.get(int(getattr(body, "key_type", 0)))
    keys = list(body.coordinator_keys) if version >= 4 else [body.key]
    answers: list[dict[str, Any]] = []
    for key in keys:
        answer: dict[str, Any] = {"key": key, "node_id": -1, "host": "", "port": -1, "error_message": None}
        if kind is None:
            answer["error_code"] = "INVALID_REQUEST"
        else:

            def reply(error: str | None = None, *, _answer: dict[str, Any] = answer, **result: Any) -> None:
                _answer["error_code"] = error
                if error is None:
                    host, port = _endpoint(call, result["coordinator"])
                    _answer.update(node_id=result["coordinator"], host=host, port=port)

            call.core.cluster.handle_find_coordinator(key, kind, reply)
        answers.append(answer)
    error = next((a.get("error_code") for a in answers if a.get("error_code")), None)
    call.announce(f"b{call.broker}", f"{kind} {', '.join(keys)}")
    detail = ", ".join(f"coordinator {a['node_id']}" for a in answers if a["node_id"] >= 0)
    if version >= 4:
        call.reply({"throttle_time": 0, "coordinators": answers}, error=error, detail=detail)
    else:
        call.reply({"throttle_time": 0, **answers[0]}, error=error, detail=detail)


@api(22, 0, 5)
def init_producer_id(call: Call) -> None:
    body, version = call.body, call.version
    txid = body.transactional_id
    pid = int(getattr(body, "producer_id", -1))
    epoch = int(getattr(body, "producer_epoch", -1))
    expected = (pid, epoch) if pid >= 0 else None
    call.announce(
        f"coordinator(b{call.broker})" if txid else f"b{call.broker}",
        f"{txid or 'idempotent'}" + (f", producer {pid} epoch {epoch}" if expected else ""),
    )

    def reply(error: str | None = None, **result: Any) -> None:
        pid_out = result.get("producer_id", -1) if error is None else -1
        epoch_out = result.get("producer_epoch", -1) if error is None else -1
        call.reply(
            {"throttle_time": 0, "error_code": error, "producer_id": pid_out, "producer_epoch": epoch_out},
            error=error,
            detail=f"producer id {pid_out}, producer epoch {epoch_out}" if error is None else "",
        )

    call.core.cluster.handle_init_producer_id(
        call.broker, txid, ms(body.transaction_timeout), expected, reply, version=version
    )


@api(24, 0, 3)
def add_partitions_to_txn(call: Call) -> None:
    body, version = call.body, call.version
    c = call.core.cluster
    txid = body.v3_and_below_transactional_id
    pid, epoch = int(body.v3_and_below_producer_id), int(body.v3_and_below_producer_epoch)
    wanted = [(t.name, int(p)) for t in body.v3_and_below_topics for p in t.partitions]
    tps = [_tp(t, p) for t, p in wanted]
    call.announce(f"coordinator(b{call.broker})", f"{txid}, {', '.join(tps)}, producer {pid} epoch {epoch}")

    def respond(errors: dict[tuple[str, int], str | None]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for t, p in wanted:
            by_topic.setdefault(t, []).append({"partition_index": p, "partition_error_code": errors[(t, p)]})
        first = next((e for e in errors.values() if e), None)
        call.reply(
            {
                "throttle_time": 0,
                "results_by_topic_v3_and_below": [
                    {"name": t, "results_by_partition": parts} for t, parts in by_topic.items()
                ],
            },
            error=first,
        )

    unknown = {(t, p) for t, p in wanted if t not in c.topics or not 0 <= p < c.partition_count(t)}
    if unknown:
        # KafkaApis: nothing is added when any partition is unknown; the others were not attempted
        respond({tp: "UNKNOWN_TOPIC_OR_PARTITION" if tp in unknown else "OPERATION_NOT_ATTEMPTED" for tp in wanted})
        return

    def reply(error: str | None = None, **_: Any) -> None:
        respond(dict.fromkeys(wanted, error))

    c.handle_add_partitions(call.broker, txid, pid, epoch, frozenset(tps), reply, version=version)


@api(25, 0, 4)
def add_offsets_to_txn(call: Call) -> None:
    body, version = call.body, call.version
    pid, epoch = int(body.producer_id), int(body.producer_epoch)
    call.announce(
        f"coordinator(b{call.broker})",
        f"{body.transactional_id}, group {body.group_id}, producer {pid} epoch {epoch}",
    )

    def reply(error: str | None = None, **_: Any) -> None:
        call.reply({"throttle_time": 0, "error_code": error}, error=error)

    call.core.cluster.handle_add_offsets(
        call.broker, body.transactional_id, pid, epoch, body.group_id, reply, version=version
    )


@api(26, 0, 5)
def end_txn(call: Call) -> None:
    body, version = call.body, call.version
    pid, epoch = int(body.producer_id), int(body.producer_epoch)
    commit = bool(body.committed)
    call.announce(
        f"coordinator(b{call.broker})",
        f"{body.transactional_id} {'COMMIT' if commit else 'ABORT'}, producer {pid} epoch {epoch}",
    )

    def reply(error: str | None = None, **result: Any) -> None:
        call.reply(
            {
                "throttle_time": 0,
                "error_code": error,
                "producer_id": result.get("producer_id", -1),
                "producer_epoch": result.get("producer_epoch", -1),
            },
            error=error,
            detail=f"producer id {result['producer_id']}, producer epoch {result['producer_epoch']}"
            if "producer_id" in result
            else "",
        )

    call.core.cluster.handle_end_txn(call.broker, body.transactional_id, pid, epoch, commit, reply, version=version)


@api(28, 0, 5)
def txn_offset_commit(call: Call) -> None:
    body, version = call.body, call.version
    c = call.core.cluster
    pid, epoch = int(body.producer_id), int(body.producer_epoch)
    offsets = {_tp(t.name, int(p.partition_index)): int(p.committed_offset) for t in body.topics for p in t.partitions}
    call.announce(
        f"group coordinator(b{call.broker})",
        f"{body.transactional_id}, group {body.group_id}, "
        + ", ".join(f"{tp}={off}" for tp, off in offsets.items())
        + f", producer {pid} epoch {epoch}",
    )

    def respond(error_of: Callable[[str, int], str | None]) -> None:
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": int(p.partition_index), "error_code": error_of(t.name, int(p.partition_index))}
                    for p in t.partitions
                ],
            }
            for t in body.topics
        ]
        first = next((p["error_code"] for t in topics for p in t["partitions"] if p["error_code"]), None)
        call.reply({"throttle_time": 0, "topics": topics}, error=first)

    unknown = {tp for tp in offsets if tp.rpartition("-")[0] not in c.topics or tp not in c.partitions}
    if unknown:
        respond(lambda t, p: "UNKNOWN_TOPIC_OR_PARTITION" if _tp(t, p) in unknown else None)
        return

    def reply(error: str | None = None, **_: Any) -> None:
        respond(lambda t, p: error)

    c.handle_txn_offset_commit(
        call.broker,
        body.group_id,
        pid,
        epoch,
        int(getattr(body, "generation_id", -1)),
        getattr(body, "member_id", ""),
        offsets,
        reply,
        transactional_id=body.transactional_id,
        version=version,
    )


@api(8, 2, 10)
def offset_commit(call: Call) -> None:
    body = call.body
    c = call.core.cluster
    offsets = {_tp(t.name, int(p.partition_index)): int(p.committed_offset) for t in body.topics for p in t.partitions}
    call.announce(
        f"group coordinator(b{call.broker})",
        f"group {body.group_id}, " + ", ".join(f"{tp}={off}" for tp, off in offsets.items()),
    )

    def respond(error_of: Callable[[str, int], str | None]) -> None:
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": int(p.partition_index), "error_code": error_of(t.name, int(p.partition_index))}
                    for p in t.partitions
                ],
            }
            for t in body.topics
        ]
        first = next((p["error_code"] for t in topics for p in t["partitions"] if p["error_code"]), None)
        call.reply({"throttle_time": 0, "topics": topics}, error=first)

    unknown = {tp for tp in offsets if tp not in c.partitions}
    if unknown:
        respond(lambda t, p: "UNKNOWN_TOPIC_OR_PARTITION" if _tp(t, p) in unknown else None)
        return

    def reply(error: str | None = None, **_: Any) -> None:
        respond(lambda t, p: error)

    c.handle_offset_commit(
        call.broker,
        body.group_id,
        int(getattr(body, "generation_id_or_member_epoch", -1)),
        getattr(body, "member_id", ""),
        offsets,
        reply,
    )


@api(9, 1, 10)
def offset_fetch(call: Call) -> None:
    body, version = call.body, call.version
    require_stable = bool(getattr(body, "require_stable", False))
    if version >= 8:
        groups = [_fetch_group(call, g.group_id, g.topics, require_stable) for g in body.groups]
        error = next((g.get("error_code") for g in groups if g.get("error_code")), None)
        call.reply({"throttle_time": 0, "groups": groups}, error=error)
        return
    group = _fetch_group(call, body.group_id, body.topics, require_stable)
    call.reply(
        {"throttle_time": 0, "topics": group["topics"], "error_code": group.get("error_code")},
        error=group.get("error_code"),
    )


def _fetch_group(call: Call, group_id: str, topics: Any, require_stable: bool) -> dict[str, Any]:
    """One group's committed offsets. With require_stable (KIP-447), a partition with a transactional offset commit
    pending gets UNSTABLE_OFFSET_COMMIT and the others their offsets (GroupMetadataManager.getOffsets)."""
    groups = call.core.cluster.groups
    group_error: list[str | None] = [None]

    def ask(tps: tuple[str, ...], stable: bool) -> dict[str, int | None] | str:
        out: list[dict[str, int | None] | str] = []

        def reply(error: str | None = None, **result: Any) -> None:
            out.append(error if error else result["offsets"])

        call.core.cluster.handle_offset_fetch(call.broker, group_id, tps, stable, reply)
        return out[0] if out else "UNKNOWN_SERVER_ERROR"

    if topics is None:
        tps_all = tuple(sorted(groups.committed(group_id)))
        wanted = [(tp.rpartition("-")[0], int(tp.rpartition("-")[2])) for tp in tps_all]
    else:
        wanted = [(t.name, int(p)) for t in topics for p in t.partition_indexes]
    parts: dict[str, list[dict[str, Any]]] = {}
    for topic, p in wanted:
        tp = _tp(topic, p)
        answer = ask((tp,), require_stable)
        entry: dict[str, Any] = {"partition_index": p, "committed_leader_epoch": -1, "metadata": ""}
        if isinstance(answer, str):
            if answer in ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"):
                group_error[0] = answer
            entry.update(committed_offset=-1, error_code=answer)
        else:
            offset = answer.get(tp)
            entry.update(committed_offset=-1 if offset is None else offset, error_code=None)
        parts.setdefault(topic, []).append(entry)
    if topics is None and not wanted:
        check = ask((), False)
        if isinstance(check, str):
            group_error[0] = check
    if group_error[0]:
        return {"group_id": group_id, "topics": [], "error_code": group_error[0]}
    return {
        "group_id": group_id,
        "topics": [{"name": t, "partitions": ps} for t, ps in parts.items()],
        "error_code": None,
    }


# ---------------------------------------------------------------------------------------------- topics


def _create(call: Call, name: str, partitions: int, configs: dict[str, str], replication: int | None = None) -> None:
    call.core.cluster.create_topic(name, partitions, replication)
    call.core.topic_id(name)
    if configs:
        call.core.topic_configs[name] = configs


@api(19, 2, 7)
def create_topics(call: Call) -> None:
    body = call.body
    core = call.core
    c = core.cluster
    live = sum(1 for b in c.broker_ids if c.broker_up(b))
    results = []
    names = [t.name for t in body.topics]
    for topic in body.topics:
        name = topic.name
        partitions = int(topic.num_partitions)
        replication = int(topic.replication_factor)
        if partitions == -1:
            partitions = int(core.config.get("num.partitions", 1))
        if replication == -1:
            replication = int(core.config.get("default.replication.factor", c.replication_factor))
        configs = {cfg.name: cfg.value for cfg in topic.configs if cfg.value is not None}
        result: dict[str, Any] = {"name": name, "error_message": None, "num_partitions": -1, "replication_factor": -1}
        if names.count(name) > 1:
            result.update(error_code="INVALID_REQUEST", error_message=f"Duplicate topic name {name}")
        elif not LEGAL_TOPIC.match(name) or name in (".", ".."):
            result.update(error_code="INVALID_TOPIC_EXCEPTION", error_message=f"Topic name {name!r} is illegal")
        elif name in c.topics:
            result.update(error_code="TOPIC_ALREADY_EXISTS", error_message=f"Topic '{name}' already exists.")
        elif topic.assignments:
            result.update(error_code="INVALID_REQUEST", error_message="manual replica assignments are not simulated")
        elif partitions < 1:
            result.update(error_code="INVALID_PARTITIONS", error_message="Number of partitions must be larger than 0.")
        elif replication < 1 or replication > live:
            result.update(
                error_code="INVALID_REPLICATION_FACTOR",
                error_message=f"Unable to replicate the partition {replication} time(s): The target replication "
                f"factor of {replication} cannot be reached because only {live} broker(s) are registered.",
            )
        else:
            if not body.validate_only:
                _create(call, name, partitions, configs, replication)
            result.update(
                error_code=None,
                topic_id=core.topic_id(name) if not body.validate_only else None,
                num_partitions=partitions,
                replication_factor=replication,
                configs=[
                    {"name": k, "value": v, "read_only": False, "config_source": 1, "is_sensitive": False}
                    for k, v in configs.items()
                ],
            )
        results.append(result)
    error = next((r.get("error_code") for r in results if r.get("error_code")), None)
    call.announce(f"b{call.broker}", ", ".join(names))
    call.reply({"throttle_time": 0, "topics": results}, error=error)


@api(20, 1, 6)
def delete_topics(call: Call) -> None:
    body, version = call.body, call.version
    core = call.core
    if version >= 6:
        wanted = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(n, None) for n in body.topic_names]
    results = []
    for name, topic_id in wanted:
        if not name and topic_id is not None:
            name = core.topic_of(topic_id)
        result: dict[str, Any] = {"name": name, "topic_id": topic_id, "error_message": None}
        if name is None:
            result["error_code"] = "UNKNOWN_TOPIC_ID"
        elif name not in core.cluster.topics:
            result["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
        elif core.internal(name):
            result.update(error_code="INVALID_REQUEST", error_message=f"Cannot delete internal topic {name}")
        else:
            result["topic_id"] = core.topic_id(name)
            delete_topic(core, name)
            result["error_code"] = None
        results.append(result)
    error = next((r.get("error_code") for r in results if r.get("error_code")), None)
    call.announce(f"b{call.broker}", ", ".join(str(n) for n, _ in wanted))
    call.reply({"throttle_time": 0, "responses": results}, error=error)


def delete_topic(core: Any, name: str) -> None:
    """A topic and its partitions leave the cluster, and what the server kept about them."""
    core.cluster.delete_topic(name)
    core.forget_topic(name)


# ---------------------------------------------------------------------------------------------- configs

TOPIC, BROKER = 2, 4
SOURCE_TOPIC, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 4, 5
# A few of Kafka's defaults (TopicConfig / ServerLogConfigs), shown as a broker without overrides shows them.
TOPIC_DEFAULTS = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "max.message.bytes": "1048588",
    "message.timestamp.type": "CreateTime",
    "min.insync.replicas": "1",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "unclean.leader.election.enable": "false",
}


@api(32, 1, 4)
def describe_configs(call: Call) -> None:
    core = call.core
    c = core.cluster
    results = []
    for resource in call.body.resources:
        kind = int(resource.resource_type)
        name = resource.resource_name
        result: dict[str, Any] = {"resource_type": kind, "resource_name": name, "error_message": None, "configs": []}
        entries: dict[str, tuple[str, int]] = {}
        if kind == TOPIC:
            if name not in c.topics:
                result["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
            else:
                entries = {k: (v, SOURCE_DEFAULT) for k, v in TOPIC_DEFAULTS.items()}
                entries.update({k: (v, SOURCE_TOPIC) for k, v in core.topic_configs.get(name, {}).items()})
        elif kind == BROKER:
            if name and (not name.isdigit() or int(name) not in c.brokers):
                result["error_code"] = "INVALID_REQUEST"
            else:
                tc = c.txn_coordinator
                entries = {
                    "transaction.max.timeout.ms": (str(tc.max_timeout_ms), SOURCE_DEFAULT),
                    "transactional.id.expiration.ms": (str(tc.expiration_ms), SOURCE_DEFAULT),
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
                        str(tc.abort_interval_ms),
                        SOURCE_DEFAULT,
                    ),
                    "transaction.state.log.num.partitions": (str(tc.num_partitions), SOURCE_DEFAULT),
                    "offsets.topic.num.partitions": (str(c.groups.num_partitions), SOURCE_DEFAULT),
                    "auto.create.topics.enable": (
                        str(core.config.get("auto.create.topics.enable", "true")).lower(),
                        SOURCE_DEFAULT,
                    ),
                    "num.partitions": (str(core.config.get("num.partitions", 1)), SOURCE_DEFAULT),
                }
        else:
            result["error_code"] = "INVALID_REQUEST"
        keys = resource.configuration_keys
        result["configs"] = [
            {
                "name": k,
                "value": v,
                "read_only": kind == BROKER,
                "config_source": source,
                "is_sensitive": False,
                "synonyms": [],
                "config_type": 0,
                "documentation": None,
            }
            for k, (v, source) in sorted(entries.items())
            if keys is None or k in keys
        ]
        results.append(result)
    call.reply({"throttle_time": 0, "results": results})


@api(60, 0, 2)
def describe_cluster(call: Call) -> None:
    body = call.body
    core = call.core
    if int(getattr(body, "endpoint_type", 1)) != 1:
        call.reply(
            {"error_code": "UNSUPPORTED_ENDPOINT_TYPE", "error_message": "only brokers answer here", "cluster_id": ""},
            error="UNSUPPORTED_ENDPOINT_TYPE",
        )
        return
    brokers = [
        {"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": None, "is_fenced": False}
        for b in _brokers(call)
    ]
    call.reply(
        {
            "throttle_time": 0,
            "error_code": None,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": core.cluster_id,
            "controller_id": _controller(call),
            "brokers": brokers,
            "cluster_authorized_operations": CLUSTER_OPERATIONS
            if body.include_cluster_authorized_operations
            else AUTHORIZED_OPERATIONS_OMITTED,
        }
    )


# ---------------------------------------------------------------------------------------------- KIP-664


@api(65, 0, 0)
def describe_transactions(call: Call) -> None:
    tc = call.core.cluster.txn_coordinator
    states = []
    for txid in call.body.transactional_ids:
        st = tc.partitions[tc.partition_for(txid)]
        entry: dict[str, Any] = {
            "transactional_id": txid,
            "transaction_state": "",
            "transaction_timeout_ms": 0,
            "transaction_start_time_ms": -1,
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
        md = tc.cache.get(txid)
        if st.leader != call.broker:
            entry["error_code"] = "NOT_COORDINATOR"
        elif st.loading:
            entry["error_code"] = "COORDINATOR_LOAD_IN_PROGRESS"
        elif md is None or md.state == "Dead":
            entry["error_code"] = "TRANSACTIONAL_ID_NOT_FOUND"
        else:
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(md.partitions):
                topic, _, p = tp.rpartition("-")
                by_topic.setdefault(topic, []).append(int(p))
            entry.update(
                error_code=None,
                transaction_state=md.state,
                transaction_timeout_ms=md.txn_timeout_ms,
                transaction_start_time_ms=md.txn_start_ms,
                producer_id=md.producer_id,
                producer_epoch=md.producer_epoch,
                topics=[{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            )
        states.append(entry)
    call.reply({"throttle_time": 0, "transaction_states": states})


@api(66, 0, 2)
def list_transactions(call: Call) -> None:
    body = call.body
    c = call.core.cluster
    tc = c.txn_coordinator
    state_filters = set(body.state_filters)
    known = set(STATE_IDS)
    pid_filters = {int(p) for p in body.producer_id_filters}
    duration_ms = int(getattr(body, "duration_filter", -1))
    pattern = getattr(body, "transactional_id_pattern", None)
    try:
        regex = re.compile(pattern) if pattern else None
    except re.error:
        call.reply({"error_code": "INVALID_REGULAR_EXPRESSION", "unknown_state_filters": [], "transaction_states": []})
        return
    if any(tc.partitions[p].loading for p in range(tc.num_partitions) if tc.partitions[p].leader == call.broker):
        call.reply(
            {"error_code": "COORDINATOR_LOAD_IN_PROGRESS", "unknown_state_filters": [], "transaction_states": []}
        )
        return
    out = []
    for txid, md in sorted(tc.cache.items()):
        if tc.partitions[tc.partition_for(txid)].leader != call.broker:
            continue
        if state_filters and md.state not in state_filters:
            continue
        if pid_filters and md.producer_id not in pid_filters:
            continue
        if duration_ms >= 0 and (md.state != "Ongoing" or c.now_ms - md.txn_start_ms < duration_ms):
            continue
        if regex is not None and not regex.fullmatch(txid):
            continue
        out.append({"transactional_id": txid, "producer_id": md.producer_id, "transaction_state": md.state})
    call.reply(
        {
            "throttle_time": 0,
            "error_code": None,
            "unknown_state_filters": sorted(state_filters - known),
            "transaction_states": out,
        }
    )


@api(61, 0, 0)
def describe_producers(call: Call) -> None:
    c = call.core.cluster
    topics = []
    for topic in call.body.topics:
        parts = []
        for index in topic.partition_indexes:
            tp = _tp(topic.name, int(index))
            meta = c.partitions.get(tp)
            entry: dict[str, Any] = {"partition_index": int(index), "error_message": None, "active_producers": []}
            if meta is None:
                entry["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
            elif call.broker not in meta.replicas:
                # any replica answers with its own producer state (Partition.activeProducerState); here every
                # replica's log is the leader's
                entry["error_code"] = "NOT_LEADER_OR_FOLLOWER"
            else:
                entry["error_code"] = None
                entry["active_producers"] = [
                    {
                        "producer_id": e.producer_id,
                        "producer_epoch": e.epoch,
                        "last_sequence": e.last_seq,
                        "last_timestamp": e.last_timestamp_ms,
                        "coordinator_epoch": e.coordinator_epoch,
                        "current_txn_start_offset": -1
                        if e.current_txn_first_offset is None
                        else e.current_txn_first_offset,
                    }
                    for e in c.log(tp).producers.values()
                ]
            parts.append(entry)
        topics.append({"name": topic.name, "partitions": parts})
    call.reply({"throttle_time": 0, "topics": topics})


@api(27, 1, 2)
def write_txn_markers(call: Call) -> None:
    """WriteTxnMarkers at a partition leader, as `kafka-transactions.sh abort` sends it for a hanging transaction:
    each marker of the request written by the simulator's leader, answered once all are replicated."""
    c = call.core.cluster
    markers = list(call.body.markers)
    results: list[dict[str, str | None] | None] = [None] * len(markers)
    tps_of = [[_tp(t.name, int(i)) for t in m.topics for i in t.partition_indexes] for m in markers]
    call.announce(
        f"leader {', '.join(tp for tps in tps_of for tp in tps)}(b{call.broker})",
        ", ".join(
            f"{'COMMIT' if m.transaction_result else 'ABORT'} producer {m.producer_id} epoch {m.producer_epoch}"
            for m in markers
        ),
    )

    def respond() -> None:
        out = []
        errors = []
        for marker, found in zip(markers, results):
            assert found is not None
            topics = []
            for topic in marker.topics:
                parts = []
                for index in topic.partition_indexes:
                    error = found.get(_tp(topic.name, int(index)))
                    parts.append({"partition_index": int(index), "error_code": error})
                    if error:
                        errors.append(error)
                topics.append({"name": topic.name, "partitions": parts})
            out.append({"producer_id": int(marker.producer_id), "topics": topics})
        call.reply({"markers": out}, error=errors[0] if errors else None)

    for n, marker in enumerate(markers):

        def reply(error: str | None = None, *, _n: int = n, **result: Any) -> None:
            results[_n] = result.get("errors") or dict.fromkeys(tps_of[_n], error)
            if all(r is not None for r in results):
                respond()

        c.handle_write_txn_markers(
            call.broker,
            int(marker.producer_id),
            int(marker.producer_epoch),
            "COMMIT" if marker.transaction_result else "ABORT",
            int(marker.coordinator_epoch),
            tps_of[n],
            reply,
        )
    if not markers:
        respond()


# ---------------------------------------------------------------------------------------------- groups
# The classic group protocol as the simulator's group coordinator runs it (playground/sim/groups.py).

CLIENT_HOST = "/127.0.0.1"  # where a member connects from, as DescribeGroups shows it (the server listens on loopback)


@api(11, 0, 9)
def join_group(call: Call) -> None:
    body, version = call.body, call.version
    member_id = body.member_id
    protocols = tuple((p.name, bytes(p.metadata)) for p in body.protocols)
    session_ms = ms(body.session_timeout)
    rebalance_ms = ms(getattr(body, "rebalance_timeout", body.session_timeout))  # v0: the session timeout
    call.announce(
        f"group coordinator(b{call.broker})",
        f"group {body.group_id}, member {member_id or '(new)'}, {', '.join(name for name, _ in protocols)}",
    )

    def reply(error: str | None = None, **result: Any) -> None:
        name = result.get("protocol_name")
        call.reply(
            {
                "throttle_time": 0,
                "error_code": error,
                "generation_id": result.get("generation_id", -1),
                "protocol_type": result.get("protocol_type"),
                "protocol_name": name if version >= 7 else (name or ""),
                "leader": result.get("leader", ""),
                "skip_assignment": False,
                "member_id": result.get("member_id", member_id),
                "members": [
                    {"member_id": m, "group_instance_id": instance, "metadata": metadata}
                    for m, instance, metadata in result.get("members", ())
                ],
            },
            error=error,
            detail=f"member {result.get('member_id', member_id)}, generation {result.get('generation_id', -1)}",
        )

    call.core.cluster.handle_classic_join_group(
        call.broker,
        body.group_id,
        member_id,
        call.request.client_id or "",
        CLIENT_HOST,
        session_ms,
        rebalance_ms,
        body.protocol_type,
        protocols,
        version >= 4,  # KIP-394: a new member is given its id and rejoins with it
        reply,
    )


@api(14, 0, 5)
def sync_group(call: Call) -> None:
    body = call.body
    assignments = {a.member_id: bytes(a.assignment) for a in body.assignments}
    call.announce(
        f"group coordinator(b{call.broker})",
        f"group {body.group_id}, member {body.member_id}, generation {body.generation_id}"
        + (f", {len(assignments)} assignment(s)" if assignments else ""),
    )

    def reply(error: str | None = None, **result: Any) -> None:
        call.reply(
            {
                "throttle_time": 0,
                "error_code": error,
                "protocol_type": result.get("protocol_type"),
                "protocol_name": result.get("protocol_name"),
                "assignment": result.get("assignment", b""),
            },
            error=error,
        )

    call.core.cluster.handle_sync_group(
        call.broker,
        body.group_id,
        int(body.generation_id),
        body.member_id,
        getattr(body, "protocol_type", None),
        getattr(body, "protocol_name", None),
        assignments,
        reply,
    )


@api(12, 0, 4)
def heartbeat(call: Call) -> None:
    body = call.body

    def reply(error: str | None = None, **_: Any) -> None:
        call.reply({"throttle_time": 0, "error_code": error}, error=error)

    call.core.cluster.handle_heartbeat(call.broker, body.group_id, int(body.generation_id), body.member_id, reply)


@api(13, 0, 5)
def leave_group(call: Call) -> None:
    body, version = call.body, call.version
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in body.members]
    else:
        leaving = [(body.member_id, None)]
    call.announce(f"group coordinator(b{call.broker})", f"group {body.group_id}, {', '.join(m for m, _ in leaving)}")

    def reply(error: str | None = None, **result: Any) -> None:
        errors = result.get("errors", {})
        if version < 3 and error is None:
            error = errors.get(leaving[0][0])
        call.reply(
            {
                "throttle_time": 0,
                "error_code": error,
                "members": [
                    {"member_id": m, "group_instance_id": instance, "error_code": errors.get(m)}
                    for m, instance in leaving
                ],
            },
            error=error,
        )

    call.core.cluster.handle_classic_leave_group(call.broker, body.group_id, tuple(m for m, _ in leaving), reply)


@api(16, 0, 5)
def list_groups(call: Call) -> None:
    body = call.body
    groups = call.core.cluster.groups
    states = {s.lower() for s in getattr(body, "states_filter", ())}
    types = {t.lower() for t in getattr(body, "types_filter", ())}
    out = []
    for gid, g in sorted(groups.groups.items()):
        if groups.coordinator_of(gid) != call.broker:
            continue
        if states and g.state.lower() not in states:
            continue
        if types and "classic" not in types:
            continue
        out.append(
            {
                "group_id": gid,
                "protocol_type": g.protocol_type or ("consumer" if g.members else ""),
                "group_state": g.state,
                "group_type": "classic",
            }
        )
    call.reply({"throttle_time": 0, "error_code": None, "groups": out})


@api(15, 0, 5)
def describe_groups(call: Call) -> None:
    groups = call.core.cluster.groups
    out = []
    for gid in call.body.groups:
        entry: dict[str, Any] = {
            "group_id": gid,
            "group_state": "Dead",
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        }
        if groups.coordinator_of(gid) != call.broker:
            entry["error_code"] = "NOT_COORDINATOR"
        else:
            entry["error_code"] = None
            g = groups.groups.get(gid)
            if g is not None:
                classic = g.protocol_type is not None
                entry.update(
                    group_state=g.state,
                    protocol_type=g.protocol_type or ("consumer" if g.members else ""),
                    protocol_data=(g.protocol_name or "") if classic else ("range" if g.members else ""),
                    members=[
                        {
                            "member_id": m.member_id,
                            "group_instance_id": None,
                            "client_id": m.client_id,
                            "client_host": getattr(m, "client_host", CLIENT_HOST),
                            # what DescribeGroups shows of a member: its metadata for the group's protocol and its
                            # assignment, once the group is Stable (GroupMetadata.summary)
                            "member_metadata": m.metadata(g.protocol_name) if isinstance(m, ClassicMember) else b"",
                            "member_assignment": m.member_assignment
                            if isinstance(m, ClassicMember) and g.state == "Stable"
                            else b"",
                        }
                        for m in g.members.values()
                    ],
                )
        out.append(entry)
    call.reply({"throttle_time": 0, "groups": out})


@api(42, 0, 2)
def delete_groups(call: Call) -> None:
    groups = call.core.cluster.groups
    results = []
    for gid in call.body.groups_names:
        g = groups.groups.get(gid)
        if groups.coordinator_of(gid) != call.broker:
            error = "NOT_COORDINATOR"
        elif g is None:
            error = "GROUP_ID_NOT_FOUND"
        elif g.members:
            error = "NON_EMPTY_GROUP"
        else:
            del groups.groups[gid]
            error = None
        results.append({"group_id": gid, "error_code": error})
    call.reply({"throttle_time": 0, "results": results})
