"""What a group coordinator keeps beside a committed offset: the leader epoch and the metadata string a commit carried
(OffsetAndMetadata), answered back by OffsetFetch, and the metadata's bound (`offset.metadata.max.bytes`, 4096 by
default: OFFSET_METADATA_TOO_LARGE for that partition, the others committed). The same requests against any Target of
tests/simserver/versions.py: the simulated cluster's core here (test_offset_meta.py), a real broker in
tests/kafka/test_kafka_offset_meta.py, which compares the two.

franz-go commits the epoch of the records it consumed and, finding it in OffsetFetch, validates it with
OffsetForLeaderEpoch before it fetches (KIP-320); a committed metadata string is the application's own note.

Kafka 3.5 keeps a too-large partition of a commit that wrote others pending, never written (KAFKA-16371,
playground/sim/groupoffsets.py): the stable fetches show it, and what the transaction's commit completes depends on
the order its pending offsets are walked in, which the topic's name decides (`topic_walked_first`)."""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode

from playground.sim.scalahash import scala_order, topic_partition_hash
from tests.simserver import versions

TOO_LONG = "é" * 2049  # 2,049 characters but 4,098 bytes in UTF-8: Kafka counts a String's characters, so it passes
MUCH_TOO_LONG = "m" * 4097


def _partition(p: int, offset: int, epoch: int | None, metadata: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"partition_index": p, "committed_offset": offset, "committed_metadata": metadata}
    if epoch is not None:
        out["committed_leader_epoch"] = epoch
    out["commit_timestamp"] = -1
    return out


def _commit(target: versions.Target, coordinator: int, group: str, topic: str, version: int, parts: list) -> list:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "retention_time": -1,
        "topics": [{"name": topic, "topic_id": None, "partitions": parts}],
    }
    return _errors(target.call(coordinator, 8, version, body))


def _errors(answer: Any) -> list[tuple[int, str]]:
    # by partition: Kafka 3.x answers a TxnOffsetCommit's partitions in its map's order, not the request's
    return sorted((int(p.partition_index), p.error_code.name) for t in answer.topics for p in t.partitions)


def topic_walked_first(base: str, partition: int) -> str:
    """A topic named from `base` whose partition `partition` of the two a Kafka 3.5 coordinator walks first."""
    for n in range(1000):
        name = f"{base}-{n}"
        if scala_order([f"{name}-0", f"{name}-1"], topic_partition_hash)[0] == f"{name}-{partition}":
            return name
    raise AssertionError(f"no topic from {base!r} walks partition {partition} first")


def _fetched(
    target: versions.Target, coordinator: int, group: str, topic: str, stable: bool = False, wait: bool = False
) -> list:
    body = {
        "require_stable": stable,
        "groups": [
            {
                "group_id": group,
                "member_id": None,
                "member_epoch": -1,
                "topics": [{"name": topic, "topic_id": None, "partition_indexes": [0, 1]}],
            }
        ],
    }
    for _ in range(600):  # `wait`: a transaction's offsets are pending until its marker is written: asked again
        answer = target.call(coordinator, 9, 8, body)
        parts = [p for g in answer.groups for t in g.topics for p in t.partitions]
        if not (wait and any(p.error_code == ErrorCode.unstable_offset_commit for p in parts)):
            break
        target.pause()
    return [
        (int(p.partition_index), int(p.committed_offset), int(p.committed_leader_epoch), p.metadata, p.error_code.name)
        for p in parts
    ]


def _setup(target: versions.Target, topic: str, group: str) -> int:
    """Creates the 2-partition topic and waits for its leaders; the group's coordinator."""
    body = {
        "topics": [{"name": topic, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}],
        "timeout": 30000,
    }
    created = target.call(None, 19, 5, body)
    assert created.topics[0].error_code == ErrorCode.none, created
    deadline = time.monotonic() + 120
    while True:
        meta = target.call(None, 3, 12, {"topics": [{"name": topic, "topic_id": None}]})
        (t,) = meta.topics
        if t.error_code == ErrorCode.none and len(t.partitions) == 2 and all(p.leader_id >= 0 for p in t.partitions):
            break
        assert time.monotonic() < deadline, meta
        time.sleep(0.2)
    if isinstance(target, versions.SocketTarget):
        target.addresses = {int(b.node_id): (b.host, int(b.port)) for b in meta.brokers}
    coordinator = versions._coordinator(target, group, 0)
    # A broker learns of a new topic a moment after the one that created it, and answers a commit of it
    # UNKNOWN_TOPIC_OR_PARTITION meanwhile (clients retry): timing, not behaviour, waited out on the coordinator itself.
    while True:
        meta = target.call(coordinator, 3, 12, {"topics": [{"name": topic, "topic_id": None}]})
        (t,) = meta.topics
        if t.error_code == ErrorCode.none and len(t.partitions) == 2 and all(p.leader_id >= 0 for p in t.partitions):
            return coordinator
        assert time.monotonic() < deadline, meta
        time.sleep(0.2)


class _Transaction:
    """A transactional id's producer committing a group's offsets by hand (InitProducerId, AddOffsetsToTxn,
    TxnOffsetCommit v3, EndTxn), as a client before TV2 does."""

    def __init__(self, target: versions.Target, txn: str, group: str, coordinator: int) -> None:
        self.target, self.group, self.coordinator = target, group, coordinator
        self.txn_coordinator = versions._coordinator(target, txn, 1)
        body = {"transactional_id": txn, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1}
        init = versions._retried(target, lambda: target.call(self.txn_coordinator, 22, 4, body))
        self.ids = {
            "transactional_id": txn,
            "producer_id": int(init.producer_id),
            "producer_epoch": int(init.producer_epoch),
        }

    def add_offsets(self) -> list:
        body = {**self.ids, "group_id": self.group}
        added = versions._retried(self.target, lambda: self.target.call(self.txn_coordinator, 25, 3, body))
        return [added.error_code.name]

    def commit_offsets(self, topic: str, parts: list) -> list:
        body = {
            **self.ids,
            "group_id": self.group,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": topic, "partitions": parts}],
        }
        return _errors(self.target.call(self.coordinator, 28, 3, body))

    def end(self, commit: bool) -> list:
        body = {**self.ids, "committed": commit}
        ended = versions._retried(self.target, lambda: self.target.call(self.txn_coordinator, 26, 3, body))
        return [ended.error_code.name]


def exchange(target: versions.Target, prefix: str) -> dict[str, list]:
    """Commits with and without an epoch and metadata, as a plain OffsetCommit and in a transaction, and what
    OffsetFetch answers after each."""
    topic, group = prefix, f"{prefix}-group"
    coordinator = _setup(target, topic, group)
    out: dict[str, list] = {}
    out["commit v8"] = _commit(
        target,
        coordinator,
        group,
        topic,
        8,
        [_partition(0, 5, 3, "read up to 5"), _partition(1, 7, 2, MUCH_TOO_LONG)],
    )
    out["fetched after v8"] = _fetched(target, coordinator, group, topic)
    out["fetched stable after v8"] = _fetched(target, coordinator, group, topic, stable=True)
    # OffsetDelete of partition 1, never committed: Kafka 3.5 forgets what it kept pending of it too (removeOffsets)
    delete = {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 1}]}]}
    deleted = target.call(coordinator, 47, 0, delete)
    out["offset delete"] = [deleted.error_code.name, *_errors(deleted)]
    out["fetched stable after the delete"] = _fetched(target, coordinator, group, topic, stable=True)
    # v5 carries no epoch; null metadata is kept as ""; a second commit replaces what the first carried
    out["commit v5"] = _commit(target, coordinator, group, topic, 5, [_partition(0, 6, None, None)])
    out["commit v8 again"] = _commit(target, coordinator, group, topic, 8, [_partition(1, 9, 0, TOO_LONG)])
    out["fetched after v5"] = _fetched(target, coordinator, group, topic, stable=True)

    txn = _Transaction(target, f"{prefix}-txn", group, coordinator)
    out["add offsets"] = txn.add_offsets()
    parts = [_partition(0, 11, 4, "in a transaction"), _partition(1, 12, 4, MUCH_TOO_LONG)]
    out["txn commit"] = txn.commit_offsets(topic, parts)
    out["fetched stable in the transaction"] = _fetched(target, coordinator, group, topic, stable=True)
    out["end txn"] = txn.end(commit=True)
    # A broker completes the transaction's offsets after EndTxn has answered (the marker on __consumer_offsets, then
    # the group coordinator's scheduled handleTxnCompletion), answering UNSTABLE_OFFSET_COMMIT until it has: timing,
    # not behaviour, asked until it answers otherwise.
    out["fetched after the transaction"] = _fetched(target, coordinator, group, topic, stable=True, wait=True)
    return out


def mixed(target: versions.Target, prefix: str) -> dict[str, list]:
    """Plain commits beside a transaction's: one written before the transaction's offsets and one while they are
    pending. At the COMMIT marker the record written last in __consumer_offsets wins (KAFKA-5247), so partition 0
    keeps the plain commit written after the transaction's, and partition 1 takes the transaction's."""
    topic, group = prefix, f"{prefix}-group"
    coordinator = _setup(target, topic, group)
    out: dict[str, list] = {}
    txn = _Transaction(target, f"{prefix}-txn", group, coordinator)
    out["add offsets"] = txn.add_offsets()
    out["plain before"] = _commit(target, coordinator, group, topic, 8, [_partition(1, 30, -1, "plain before")])
    parts = [_partition(0, 11, -1, "transaction"), _partition(1, 31, -1, "transaction")]
    out["txn commit"] = txn.commit_offsets(topic, parts)
    out["plain after"] = _commit(target, coordinator, group, topic, 8, [_partition(0, 20, -1, "plain after")])
    out["fetched stable in the transaction"] = _fetched(target, coordinator, group, topic, stable=True)
    out["fetched in the transaction"] = _fetched(target, coordinator, group, topic)
    out["end txn"] = txn.end(commit=True)
    out["fetched after the transaction"] = _fetched(target, coordinator, group, topic, stable=True, wait=True)
    return out


def deleted_while_pending(target: versions.Target, prefix: str) -> dict[str, list]:
    """An OffsetDelete of partition 0 while a transaction's offsets are pending: the pending offset goes with the
    committed one (3.x removeOffsets, 4.x the tombstone's replay), so the COMMIT marker brings only partition 1's."""
    topic, group = prefix, f"{prefix}-group"
    coordinator = _setup(target, topic, group)
    out: dict[str, list] = {}
    out["plain"] = _commit(
        target, coordinator, group, topic, 8, [_partition(0, 3, -1, "plain"), _partition(1, 4, -1, "plain")]
    )
    txn = _Transaction(target, f"{prefix}-txn", group, coordinator)
    out["add offsets"] = txn.add_offsets()
    parts = [_partition(0, 11, -1, "transaction"), _partition(1, 12, -1, "transaction")]
    out["txn commit"] = txn.commit_offsets(topic, parts)
    delete = {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}]}
    deleted = target.call(coordinator, 47, 0, delete)
    out["offset delete"] = [deleted.error_code.name, *_errors(deleted)]
    out["fetched stable after the delete"] = _fetched(target, coordinator, group, topic, stable=True)
    out["fetched after the delete"] = _fetched(target, coordinator, group, topic)
    out["end txn"] = txn.end(commit=True)
    out["fetched after the transaction"] = _fetched(target, coordinator, group, topic, stable=True, wait=True)
    return out


def _txn_commit(txn: _Transaction, topic: str, version: int = 3, **fields: Any) -> list | str:
    body = {
        **txn.ids,
        "group_id": txn.group,
        "generation_id": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [_partition(0, 5, -1, "checked")]}],
        **fields,
    }
    answer = txn.target.call(txn.coordinator, 28, version, body)
    return answer if isinstance(answer, str) else _errors(answer)


def _plain_commit(target: versions.Target, coordinator: int, group: str, topic: str, version: int, gen: int) -> list:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": gen,
        "member_id": "m" if gen >= 0 else "",
        "group_instance_id": None,
        "retention_time": -1,
        "topics": [{"name": topic, "topic_id": None, "partitions": [_partition(0, 5, -1, "plain")]}],
    }
    return _errors(target.call(coordinator, 8, version, body))


def checks(target: versions.Target, prefix: str, kafka: str) -> dict[str, list | str]:
    """What a commit is checked for, in Kafka's order: a TV1 TxnOffsetCommit's transaction is verified before the
    group and the member are (KIP-890 part 1 on 3.9 and 4.x: INVALID_TXN_STATE, or TRANSACTION_ABORTABLE from v4,
    when the transaction does not hold the offsets partition), and a commit naming a generation of a group that does
    not exist is refused (plain commits on every release; transactional ones on 4.x)."""
    topic, group = prefix, f"{prefix}-group"
    coordinator = _setup(target, topic, group)
    newer = kafka != "3.5"  # TxnOffsetCommit v4 and OffsetCommit v9
    out: dict[str, list | str] = {}
    out["fetched, no group"] = _fetched(target, coordinator, group, topic)
    out["plain, generation 7, no group"] = _plain_commit(target, coordinator, group, topic, 8, 7)
    if newer:
        out["plain v9, generation 7, no group"] = _plain_commit(target, coordinator, group, topic, 9, 7)
    txn = _Transaction(target, f"{prefix}-txn", group, coordinator)
    if newer:
        out["txn v4, not added"] = _txn_commit(txn, topic, 4)
    out["txn, not added, generation 7"] = _txn_commit(txn, topic, generation_id=7, member_id="m")
    out["add offsets"] = txn.add_offsets()
    out["txn, generation 7"] = _txn_commit(txn, topic, generation_id=7, member_id="m")
    out["txn"] = _txn_commit(txn, topic)
    out["plain, generation 7, the group exists"] = _plain_commit(target, coordinator, group, topic, 8, 7)
    out["end txn"] = txn.end(commit=True)
    out["fetched after the transaction"] = _fetched(target, coordinator, group, topic, stable=True, wait=True)
    fencer = _Transaction(target, f"{prefix}-txn", group, coordinator)  # the same id again: the first is fenced
    out["txn, fenced"] = _txn_commit(txn, topic)
    if newer:
        out["txn v4, fenced"] = _txn_commit(txn, topic, 4)
    out["txn of the new instance, not added"] = _txn_commit(fencer, topic)
    out["txn, producer id unknown"] = _txn_commit(fencer, topic, producer_id=fencer.ids["producer_id"] + 999)
    return out
