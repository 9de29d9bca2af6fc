"""What every handler shares: the registry (`HANDLERS`, filled by `@api`), Kafka's constants and the helpers that
read a topic, a partition's leader and an endpoint off the simulated cluster."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from playground.sim.groupstate import OffsetMeta
from playground.simserver.core import Call

Handler = Callable[[Call], None]

HANDLERS: dict[int, Handler] = {}

# Kafka's answers to authorizedOperations when nobody asked (MetadataResponse.AUTHORIZED_OPERATIONS_OMITTED), and the
# operations a topic and the cluster allow without an authorizer (AclOperation codes as a bit field).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
TOPIC_OPERATIONS = sum(1 << code for code in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))
LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
# ApiVersionsRequest.isValid: the client software name and version
SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")
DEFAULT_MAX_WAIT_MS = 500


def api(key: int) -> Callable[[Handler], Handler]:
    """Register the handler of an API: it answers every version the release advertises (protocol/apiversions.py)."""

    def register(fn: Handler) -> Handler:
        HANDLERS[key] = fn
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


def _config_bool(config: dict[str, Any], key: str, default: bool) -> bool:
    value = config.get(key, default)
    return value if isinstance(value, bool) else str(value).strip().lower() == "true"


@dataclass
class CommitRequest:
    """An OffsetCommit's or TxnOffsetCommit's partitions ("topic-p"), read once: the offsets, what each carries beside
    its offset as Kafka keeps it (the leader epoch from OffsetCommit v6 and TxnOffsetCommit v2; OffsetAndMetadata.
    fromRequest: no metadata is ""), the partitions of topics the cluster does not know (by name, or by id from
    OffsetCommit v10 and TxnOffsetCommit v6 on, KIP-1319), and those whose metadata is longer than
    `offset.metadata.max.bytes` (counted as Java counts a String: UTF-16 units), which are not committed."""

    offsets: dict[str, int] = field(default_factory=dict)
    meta: dict[str, OffsetMeta] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)
    too_large: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, call: Call, topics: Any) -> CommitRequest:
        out = cls()
        limit = call.core.bounds.offset_metadata_max_bytes
        for t in topics:
            name, topic_id = _topic_name(call, t)
            for p in t.partitions:
                tp = _tp(name if name is not None else str(topic_id), int(p.partition_index))
                out.offsets[tp] = int(p.committed_offset)
                if name is None or tp not in call.core.cluster.partitions:
                    out.unknown.add(tp)
                text = getattr(p, "committed_metadata", None) or ""
                if len(text) > limit // 2 and len(text.encode("utf-16-le", "surrogatepass")) // 2 > limit:
                    out.too_large.add(tp)
                out.meta[tp] = (int(getattr(p, "committed_leader_epoch", -1)), text)
        return out

    def known(self) -> dict[str, int]:
        """The offsets KafkaApis hands the coordinator: those of partitions the cluster knows."""
        return {tp: offset for tp, offset in self.offsets.items() if tp not in self.unknown}

    def committable(self) -> dict[str, int]:
        """What the coordinator commits: the known partitions' offsets but those with too much metadata."""
        return {tp: offset for tp, offset in self.known().items() if tp not in self.too_large}

    def too_large_known(self) -> dict[str, int]:
        """The known partitions' offsets that are not committed for their metadata (Kafka 3.5 keeps them pending)."""
        return {tp: offset for tp, offset in self.known().items() if tp in self.too_large}

    def error(self, tp: str, error: str | None) -> str | None:
        """A partition's answer: its topic unknown (KafkaApis), else the coordinator's error for the commit as a
        whole, else its metadata too large (the coordinator commits the others)."""
        if tp in self.unknown:
            return "UNKNOWN_TOPIC_OR_PARTITION"
        if error is None and tp in self.too_large:
            return "OFFSET_METADATA_TOO_LARGE"
        return error


def reply_offsets(call: Call, topics: Any, error_of: Callable[[str, int], str | None]) -> None:
    """OffsetCommit's and TxnOffsetCommit's answer: an error code (None: committed) for each partition asked about,
    its topic named as the request named it (by id: UNKNOWN_TOPIC_ID when no topic has it); the timeline shows the
    first error."""
    answer = []
    for t in topics:
        name, topic_id = _topic_name(call, t)
        answer.append(
            {
                "name": name or "",
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition_index": int(p.partition_index),
                        "error_code": "UNKNOWN_TOPIC_ID" if name is None else error_of(name, int(p.partition_index)),
                    }
                    for p in t.partitions
                ],
            }
        )
    first = next((p["error_code"] for t in answer for p in t["partitions"] if p["error_code"]), None)
    call.reply({"throttle_time": 0, "topics": answer}, error=first)
