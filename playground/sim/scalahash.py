"""The order in which Scala 2.13's mutable.HashMap and mutable.HashSet (scala-library 2.13.10, which Kafka 3.5.2's
broker runs on) hand out their keys, where a Kafka release's behaviour depends on it.

Kafka 3.5's group coordinator completes a transaction's offsets by walking a producer's pending offsets
(GroupMetadata.completePendingTxnOffsetCommit, a mutable.Map[TopicPartition, _]) and the groups it wrote to
(GroupMetadataManager.openGroupsForProducer, a mutable.Set[String]), and stops at the first offset that was never
written (KAFKA-16371, groupoffsets.py): what was completed before it depends on this order.

The order, as scala.collection.mutable.HashMap keeps it: a table of 16 slots, doubled whenever an insertion finds the
table three quarters full; a key's slot is its improved hash (h ^ (h >>> 16)) masked by the table's size; the keys of
a slot are kept sorted by their improved hash; iteration goes slot by slot. Checked against scala-library 2.13.10 with
kafka-clients 3.5.2's TopicPartition (tests/sim/test_scalahash.py holds the orders it printed)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from playground.sim.placement import java_string_hash

K = TypeVar("K")


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def topic_partition_hash(tp: str) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode of "topic-p": 31 * (31 + partition) + topic.hashCode()."""
    topic, _, partition = tp.rpartition("-")
    return _int32(31 * (31 + int(partition)) + java_string_hash(topic))


def _improve(h: int) -> int:
    u = h & 0xFFFFFFFF
    return _int32(u ^ (u >> 16))


def _table_size(n: int) -> int:
    size = 16
    while n >= int(size * 0.75):  # put0: grows when contentSize + 1 >= threshold
        size *= 2
    return size


def scala_order(keys: Iterable[K], hash_code: Callable[[K], int]) -> list[K]:
    """The keys in the order a Scala 2.13 mutable.HashMap/HashSet holding just them iterates them (filled by insertion
    from empty: a table grown by earlier keys since removed is not modelled)."""
    ks = list(keys)
    mask = _table_size(len(ks)) - 1
    keyed = sorted(((_improve(hash_code(k)), i) for i, k in enumerate(ks)), key=lambda h: (h[0] & mask, h[0]))
    return [ks[i] for _h, i in keyed]
