"""What a client's request or its answer tells of the client, read from kio's bodies and the record batches: the
readers clients.py applies (a producer's id and epoch, a member's id, the partitions a Fetch names, the records a
Produce wrote or a Fetch handed the application). Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from playground.protocol import records
from playground.simserver.batches import text_of


def producer_of(body: Any) -> tuple[int | None, int]:
    """The producer id and epoch of a Produce request's first batch (a request's batches are all one producer's)."""
    for topic in body.topic_data:
        for part in topic.partition_data:
            try:
                found = records.read_batches(part.records or b"")
            except records.CorruptRecordError:
                continue
            if found:
                return found[0].producer_id, found[0].producer_epoch
    return None, -1


def txn_producer(name: str, body: Any) -> tuple[int | None, int]:
    if name == "AddPartitionsToTxn":
        pid = getattr(body, "v3_and_below_producer_id", None)
        epoch = getattr(body, "v3_and_below_producer_epoch", -1)
        if pid is None:
            return None, -1
        return int(pid), int(epoch)
    return int(body.producer_id), int(body.producer_epoch)


def member_of(body: Any) -> tuple[str, str | None]:
    """(member id, group.instance.id) a group request names (LeaveGroup v3+ and OffsetFetch v8+ in a list)."""
    member_id = getattr(body, "member_id", None)
    instance_id = getattr(body, "group_instance_id", None)
    for listed in (getattr(body, "members", None) or ()) if not member_id else ():
        member_id, instance_id = listed.member_id, listed.group_instance_id
        break
    if not member_id:
        groups = getattr(body, "groups", None)
        member_id = getattr(groups[0], "member_id", None) if groups else None
    return str(member_id or ""), str(instance_id) if instance_id else None


def partitions_named(name: str, body: Any, topic_of: Callable[[Any], str | None]) -> set[str]:
    """The partitions a Fetch or ListOffsets names (Fetch v13+ by topic id)."""
    out = set()
    for topic in getattr(body, "topics", None) or ():
        topic_name = getattr(topic, "topic", None) if name == "Fetch" else getattr(topic, "name", None)
        topic_name = topic_name or topic_of(getattr(topic, "topic_id", None))
        for part in getattr(topic, "partitions", None) or ():
            index = getattr(part, "partition", None) if name == "Fetch" else getattr(part, "partition_index", None)
            if topic_name and index is not None:
                out.add(f"{topic_name}-{int(index)}")
    return out


def group_of(body: Any) -> str | None:
    group = getattr(body, "group_id", None)
    if group is None:
        groups = getattr(body, "groups", None)  # OffsetFetch v8+
        if groups:
            group = groups[0].group_id
    return str(group) if group else None


def written(core: Any, tp: str, base: int, count: int) -> list[tuple[int, tuple[Any, Any]]]:
    """(offset, (key, value)) of the records a Produce appended at `base`, as the simulator's log holds them."""
    if base < 0 or tp not in core.cluster.partitions:
        return []
    log = core.cluster.log(tp)
    i = log.batch_index(base)
    if i >= len(log.batches) or log.batches[i].base_offset != base:
        return []
    batch = log.batches[i]
    return [(base + j, (batch.key_at(j), batch.values[j])) for j in range(min(count, len(batch.values)))]


def sent_records(batches: list[records.RecordBatch], limit: int) -> list[tuple[Any, Any]]:
    """(key, value) of the records of batches a leader refused, as text where they are UTF-8 (at most `limit`)."""
    out: list[tuple[Any, Any]] = []
    for batch in batches:
        try:
            recs = batch.records()
        except records.CorruptRecordError:
            continue
        out.extend((text_of(r.key), text_of(r.value)) for r in recs[: limit - len(out)])
    return out


def fetch_offsets(request: Any, core: Any) -> dict[str, int]:
    out = {}
    for topic in request.body.topics:
        name = getattr(topic, "topic", None)
        if not name and getattr(topic, "topic_id", None) is not None:
            name = core.topic_of(topic.topic_id)
        if not name:
            continue
        for part in topic.partitions:
            out[f"{name}-{int(part.partition)}"] = int(part.fetch_offset)
    return out


def next_offset(raw: bytes) -> int | None:
    try:
        found = records.read_batches(raw)
    except records.CorruptRecordError:
        return None
    return found[-1].next_offset if found else None


def delivered(core: Any, tp: str, raw: bytes, read_committed: bool, aborted: Iterable[Mapping[str, Any]]) -> list[int]:
    """The offsets a consumer hands its application from a Fetch's records: the data records, without the aborted
    transactions' when it reads committed (the client drops them by the answer's aborted-transaction list)."""
    try:
        found = records.read_batches(raw)
    except records.CorruptRecordError:
        return []
    aborted_from: dict[int, int] = {}
    for a in aborted:
        pid, first = int(a["producer_id"]), int(a["first_offset"])
        aborted_from[pid] = min(first, aborted_from.get(pid, first))
    out: list[int] = []
    for batch in found:
        if batch.control:
            continue
        if (
            read_committed
            and batch.transactional
            and batch.base_offset >= aborted_from.get(batch.producer_id, batch.next_offset)
            and fate(core, tp, batch.base_offset) == "aborted"
        ):
            continue
        out.extend(range(batch.base_offset, batch.next_offset))
    return out


def fate(core: Any, tp: str, offset: int) -> str | None:
    log = core.cluster.log(tp)
    i = log.batch_index(offset)
    if i < len(log.batches) and log.batches[i].base_offset <= offset <= log.batches[i].last_offset:
        return str(log.batches[i].fate())
    return None
