"""The partition logs: Produce, Fetch (read_committed with the aborted transactions), ListOffsets,
OffsetForLeaderEpoch and DeleteRecords (KafkaApis.handleProduceRequest, handleFetchRequest, ReplicaManager).

The versions before KIP-98 read and return the older formats as a 3.x broker does (protocol/legacy.py): a Produce
v0-2's message set of magic 0 or 1 is appended as one magic-2 batch (LogValidator), a Fetch v0-3 gets its batches
down-converted to magic 0 (v0-1) or 1 (v2-3), transaction markers left out.

Bounded as a broker bounds them (simserver/bounds.py): a batch over `max.message.bytes` is MESSAGE_TOO_LARGE, over
`segment.bytes` RECORD_LIST_TOO_LARGE, with the disk full POLICY_VIOLATION; a Produce's request size and a Fetch's
answer count against the byte quotas, and an answer over one carries `throttle_time_ms` (a throttled Fetch returns
no records, KafkaApis.handleFetchRequest); a Fetch reads at most `fetch.max.bytes`, and at most what the quota
lets through in its window."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playground.protocol import legacy, records
from playground.protocol.messages import ms
from playground.sim.leaders import TXN_TOPIC
from playground.sim.log import READ_COMMITTED, READ_UNCOMMITTED
from playground.simserver.apis.base import _check_leader_epoch, _endpoint, _leader_info, _topic_name, _tp, api
from playground.simserver.batches import WireKeys, WireValues
from playground.simserver.core import Call

Handler = Callable[[Call], None]


# ---------------------------------------------------------------------------------------------- Produce


@api(0)
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
                data = raw or b""
                if version < 3 and legacy.is_legacy(data):
                    data = legacy.up_convert(data)  # LogValidator: the log holds magic 2 only
                found = records.read_batches(data, partial_ok=False)
            except records.CorruptRecordError as e:
                error = e.error
            else:
                # ProduceRequest.validateRecords: v3+ holds exactly one magic-2 batch per partition (the simulated
                # log takes one batch per partition from the older versions too)
                if len(found) != 1:
                    error = "INVALID_RECORD"
                elif version < 7 and found[0].compression == records.ZSTD:
                    error = "UNSUPPORTED_COMPRESSION_TYPE"
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
        # the produce quota counts the request's bytes, whatever became of them (KafkaApis: in the answer's callback)
        throttle_ms = call.quota("produce", call.request.size)
        answers = [r.get("error_code") for r in results.values() if r.get("error_code")]
        error = answers[0] if answers else None
        if acks == 0:
            if error:
                # nothing answers an acks=0 Produce: an error closes the connection, so that the producer notices and
                # refreshes its metadata (KafkaApis.handleProduceRequest)
                core.close_connection(call.conn)
            return
        offsets = [str(r["base_offset"]) for r in results.values() if r.get("base_offset", -1) >= 0]
        call.reply(
            {
                "responses": _produce_responses(call, items, results),
                "throttle_time": throttle_ms,
                "node_endpoints": _node_endpoints(call, results),
            },
            error=error,
            detail=f"base offset {', '.join(offsets)}" if offsets else "",
        )

    names = {(k, i): n for k, n, i, _r in items}
    # the partitions its transactional batches need added to the transaction are added together (leaders.py)
    with c.one_produce_request():
        for (key, index), batch in batches.items():
            name = names[(key, index)]
            assert name is not None
            tp = _tp(name, index)
            error, message = _append_error(call, name, batch)
            if error:
                results[(key, index)] = _produce_error(
                    error, _leader_info(call, tp) if error.startswith("NOT_") else None
                )
                if message:
                    results[(key, index)]["error_message"] = message
                pending[0] -= 1
                continue
            try:
                count, keyed = (
                    batch.scan()
                )  # read whole (decompressed) though only the count is kept: LogValidator does
            except records.CorruptRecordError as e:
                results[(key, index)] = _produce_error(e.error)
                pending[0] -= 1
                continue
            values = WireValues(batch.raw, count, shown=core.record_values)
            keys = WireKeys(values) if core.record_values and keyed else None

            def reply(
                error: str | None = None, *, _slot: tuple[Any, int] = (key, index), _tp: str = tp, **result: Any
            ) -> None:
                if _slot in results:
                    return
                if error:
                    results[_slot] = _produce_error(
                        error, _leader_info(call, _tp) if error.startswith("NOT_") else None
                    )
                else:
                    core.after_append(_tp)
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
        if pending[0] == 0:
            done()
        call.no_reply()  # the broker answers nothing; the connection reads its next request
    elif pending[0] == 0:
        done()


def _append_error(call: Call, topic: str, batch: records.RecordBatch) -> tuple[str | None, str | None]:
    """What a leader refuses before the log's producer-state checks, in Kafka's order (UnifiedLog.append:
    analyzeAndValidateRecords, LogValidator, the segment size), and the disk: (error, message for the answer)."""
    core = call.core
    size = len(batch.raw)
    if size > core.topic_setting(topic, "max.message.bytes"):
        return "MESSAGE_TOO_LARGE", None  # ReplicaManager sends no message of its own for these
    if not batch.crc_ok():
        return "CORRUPT_MESSAGE", None
    if batch.control:
        return "INVALID_RECORD", None  # clients may not write control batches
    if batch.record_count == 0:
        return "INVALID_RECORD", None
    if size > core.topic_setting(topic, "segment.bytes"):
        return "RECORD_LIST_TOO_LARGE", None
    limit = core.bounds.retained_max_bytes
    if limit is not None and core.storage.retained_bytes + size > limit:
        return "POLICY_VIOLATION", (
            f"The cluster's disk is full: it retains {core.storage.retained_bytes} bytes of records and holds at "
            f"most {limit}; retention.bytes on the topics deletes their oldest segments, and deleting topics frees "
            "theirs."
        )
    return None, None


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


@api(1)
def fetch(call: Call) -> None:
    body, version, core = call.body, call.version, call.core
    c = core.cluster
    # the fields older versions lack read as their defaults: read_uncommitted, no session, no size limit
    isolation = READ_COMMITTED if int(getattr(body, "isolation_level", 0)) == 1 else READ_UNCOMMITTED
    if int(getattr(body, "session_id", 0)) != 0 and int(getattr(body, "session_epoch", -1)) > 0:
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
        _fetch_answer(call, wanted, isolation, int(getattr(body, "max_bytes", MAX_INT32)))

    # A Fetch waits (DelayedFetch) while no partition has anything to return and none has an error, up to max_wait.
    immediate = max_wait_ms <= 0 or not wanted
    waits: list[str] = []
    for _key, name, part in wanted:
        tp = _tp(name, int(part.partition)) if name else None
        meta = c.partitions.get(tp) if tp else None
        if meta is None or meta.leader != call.broker or not c.broker_up(call.broker) or name == TXN_TOPIC:
            immediate = True
            break
        if _check_leader_epoch(int(getattr(part, "current_leader_epoch", -1)), meta.leader_epoch):
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
    core = call.core
    c = core.cluster
    by_topic: dict[Any, list[dict[str, Any]]] = {}
    sensor = core.quota_sensor("fetch", call.broker)
    # fetch.max.bytes, and no more than the quota lets through in its window (KafkaApis.handleFetchRequest)
    max_bytes = min(max_bytes, core.bounds.fetch_max_bytes)
    if sensor is not None:
        max_bytes = min(max_bytes, sensor.max_value_in_window())
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
        elif error := _check_leader_epoch(int(getattr(part, "current_leader_epoch", -1)), meta.leader_epoch):
            entry["error_code"] = error
        elif call.version < 10 and core.topic_configs.get(name, {}).get("compression.type") == "zstd":
            entry["error_code"] = "UNSUPPORTED_COMPRESSION_TYPE"  # KafkaApis: no zstd before Fetch v10 (KIP-110)
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
        if call.version < 4:
            # the formats before KIP-98: magic 0 for v0-1, magic 1 for v2-3 (KafkaApis.handleFetchRequest)
            try:
                entry["records"] = legacy.down_convert(
                    records.read_batches(entry["records"]), 0 if call.version < 2 else 1, offset
                )
            except records.CorruptRecordError as e:
                entry.update(error_code=e.error, records=b"")
                errors.append(e.error)
        if isolation == READ_COMMITTED:
            entry["aborted_transactions"] = [
                {"producer_id": a.producer_id, "first_offset": a.first_offset}
                for a in (log.aborted_transactions(offset, next_offset) if next_offset > offset else [])
            ]
    size = FETCH_RESPONSE_BYTES + sum(
        PARTITION_RESPONSE_BYTES + len(p["records"] or b"") for parts in by_topic.values() for p in parts
    )
    throttle_ms = call.quota("fetch", size, unrecord_if_throttled=True)
    if throttle_ms > 0:
        # a throttled Fetch returns nothing, and says how long to wait (FetchContext.getThrottledResponse)
        call.reply({"throttle_time": throttle_ms, "error_code": None, "session_id": 0, "responses": []})
        return
    if call.version >= 13:
        responses = [{"topic_id": key, "partitions": parts} for key, parts in by_topic.items()]
    else:
        responses = [{"topic": key, "partitions": parts} for key, parts in by_topic.items()]
    call.reply(
        {"throttle_time": 0, "error_code": None, "session_id": 0, "responses": responses},
        error=errors[0] if errors else None,
    )


MAX_INT32 = 2**31 - 1

# What a Fetch answer costs besides its records, as the fetch quota counts it: Kafka counts the answer's serialized size
# (FetchResponse.sizeOf); the records are nearly all of it, and the rest is about this much.
FETCH_RESPONSE_BYTES = 16
PARTITION_RESPONSE_BYTES = 40


# ---------------------------------------------------------------------------------------------- ListOffsets

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


@api(2)
def list_offsets(call: Call) -> None:
    body, core = call.body, call.core
    if call.version == 0:
        _list_offsets_v0(call)
        return
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


def _list_offsets_v0(call: Call) -> None:
    """KafkaApis.handleListOffsetRequestV0: up to `max_num_offsets` offsets, newest first, of the log's segment
    starts and its end (UnifiedLog.legacyFetchOffsetsBefore: the segments last written to at or before the timestamp,
    or the latest (-1) or earliest (-2)); a consumer's answer stops at the high watermark
    (Partition.legacyFetchOffsetsForTimestamp)."""
    core = call.core
    c = core.cluster
    from_consumer = int(call.body.replica_id) == -1
    topics = []
    for topic in call.body.topics:
        parts = []
        for part in topic.partitions:
            index = int(part.partition_index)
            tp = _tp(topic.name, index)
            meta = c.partitions.get(tp)
            entry: dict[str, Any] = {"partition_index": index, "old_style_offsets": []}
            parts.append(entry)
            timestamp = ms(part.timestamp)
            if timestamp < EARLIEST:
                entry["error_code"] = "UNSUPPORTED_VERSION"  # v0 knows only the latest and the earliest
            elif meta is None:
                entry["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
            elif meta.leader != call.broker:
                entry["error_code"] = "NOT_LEADER_OR_FOLLOWER"
            elif topic.name == TXN_TOPIC:
                view = core.txn_state.get(index)
                end = view.log_end_offset if view is not None else 0
                entry["old_style_offsets"] = _legacy_offsets([(0, 0), (end, core.now_ms)], timestamp, part)
            else:
                log = c.log(tp)
                seg = core.storage.count(tp, log, core.topic_setting(topic.name, "segment.bytes"), core.now_ms)
                times = [(max(b, log.log_start_offset), t) for b, t in zip(seg.bases, seg.modified)]
                if seg.sizes[-1] > 0:
                    times.append((log.log_end_offset, core.now_ms))
                offsets = _legacy_offsets(times, timestamp, part)
                hw = log.high_watermark
                if from_consumer and any(o > hw for o in offsets):
                    offsets = [hw] + [o for o in offsets if o <= hw]
                entry["old_style_offsets"] = offsets
        topics.append({"name": topic.name, "partitions": parts})
    call.reply({"topics": topics})


def _legacy_offsets(times: list[tuple[int, int]], timestamp: int, part: Any) -> list[int]:
    """UnifiedLog.legacyFetchOffsetsBefore over (offset, last modified) of each segment (and the log's end)."""
    if timestamp == LATEST:
        start = len(times) - 1
    elif timestamp == EARLIEST:
        start = 0
    else:
        start = len(times) - 1
        while start >= 0 and times[start][1] > timestamp:
            start -= 1
    count = min(int(part.max_num_offsets), start + 1)
    return sorted((times[start - j][0] for j in range(max(count, 0))), reverse=True)


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


@api(23)
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
            elif error := _check_leader_epoch(int(getattr(part, "current_leader_epoch", -1)), meta.leader_epoch):
                entry["error_code"] = error
            else:
                epoch, end = core.end_offset_for(
                    tp, int(part.leader_epoch), c.log(tp).log_end_offset, meta.leader_epoch
                )
                entry.update(leader_epoch=epoch, end_offset=end)
        topics.append({"topic": topic.topic, "partitions": parts})
    call.reply({"throttle_time": 0, "topics": topics})


# ---------------------------------------------------------------------------------------------- DeleteRecords


@api(21)
def delete_records(call: Call) -> None:
    """DeleteRecords (ReplicaManager.deleteRecords, Partition.deleteRecordsOnLeader): the log start offset moves to
    the offset asked for (-1: the high watermark), past none of the high watermark; the low watermark it answers is
    the new log start offset (the simulated replicas move together, so DelayedDeleteRecords has nothing to wait
    for). Not an internal topic, nor one whose cleanup.policy lacks delete."""
    core = call.core
    c = core.cluster
    topics = []
    for topic in call.body.topics:
        parts = []
        for part in topic.partitions:
            index, offset = int(part.partition_index), int(part.offset)
            tp = _tp(topic.name, index)
            meta = c.partitions.get(tp)
            entry: dict[str, Any] = {"partition_index": index, "low_watermark": -1, "error_code": None}
            parts.append(entry)
            if meta is None:
                entry["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
            elif core.internal(topic.name):
                entry["error_code"] = "INVALID_TOPIC_EXCEPTION"
            elif meta.leader != call.broker:
                entry["error_code"] = "NOT_LEADER_OR_FOLLOWER"
            elif "delete" not in core.topic_configs.get(topic.name, {}).get("cleanup.policy", "delete").split(","):
                entry["error_code"] = "POLICY_VIOLATION"
            else:
                log = c.log(tp)
                target = log.high_watermark if offset == -1 else offset
                if target < 0 or target > log.high_watermark:
                    entry["error_code"] = "OFFSET_OUT_OF_RANGE"
                    continue
                segment_bytes = core.topic_setting(topic.name, "segment.bytes")
                core.storage.delete_records(tp, log, segment_bytes, target, core.now_ms)
                entry["low_watermark"] = log.log_start_offset
        topics.append({"name": topic.name, "partitions": parts})
    detail = ", ".join(
        f"{t['name']}-{p['partition_index']} to {p['low_watermark']}" for t in topics for p in t["partitions"]
    )
    call.announce(f"b{call.broker}", detail)
    first = next((p["error_code"] for t in topics for p in t["partitions"] if p["error_code"]), None)
    call.reply({"throttle_time": 0, "topics": topics}, error=first)
