"""Where a key lives: the `__transaction_state` partition of a transactional id and the `__consumer_offsets`
partition of a group, as TransactionStateManager.partitionFor and GroupMetadataManager.partitionFor compute them
(Utils.abs(key.hashCode()) % partitions): core/src/main/scala/kafka/coordinator/transaction/
TransactionStateManager.scala and core/src/main/scala/kafka/coordinator/group/GroupMetadataManager.scala. Also how a
boolean broker setting reads, which the coordinators and the leaders both consult."""

from __future__ import annotations

import functools
from typing import Any


# Cached: every transactional request looks its id's coordinator partition up, and ids repeat from one transaction
# to the next. Bounded, as ids may be minted per order.
@functools.lru_cache(maxsize=4096)
def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """org.apache.kafka.common.utils.Utils.abs: abs(Integer.MIN_VALUE) is 0."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(key: str, partitions: int = 50) -> int:
    """TransactionStateManager.partitionFor / GroupMetadataManager.partitionFor."""
    return kafka_abs(java_string_hash(key)) % partitions


def setting_true(value: Any) -> bool:
    """A boolean broker setting as a scenario's config gives it (true/false, or their text)."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no")
    return bool(value)
