"""A session's names on a shared real cluster: every topic, transactional id and group id under the session's own
prefix `pg-<8 hex>-`, and the scenario's names mapped to and from them.

Why: sessions on one cluster must never see each other (shared/docs/design.md, "Notes for the real backend"). The
mapping refuses any topic outside the session's prefix or its scenario, so a step can only reach what the session
created. Topic-partitions are written as Kafka's TopicPartition.toString() does, `<topic>-<partition>`.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from playground.engine.backend import BackendError
from playground.engine.spec import TopicSpec


def new_prefix() -> str:
    """A fresh session prefix; owners.PREFIX_RE recognises exactly these."""
    return f"pg-{secrets.token_hex(4)}-"


class SessionNames:
    def __init__(self, prefix: str, topics: Mapping[str, TopicSpec]) -> None:
        self.prefix = prefix
        self.topics = topics  # scenario topic name -> its spec (the backend's own dict: topics it knows)

    def real_topic(self, name: str) -> str:
        if name not in self.topics:
            raise BackendError(
                f"topic {name!r} is not part of this session (topics: {', '.join(self.topics) or 'none'})"
            )
        return self.prefix + name

    def scenario_topic(self, real: str) -> str:
        if not real.startswith(self.prefix):
            raise BackendError(f"topic {real!r} is outside this session's prefix {self.prefix!r}")
        return real[len(self.prefix) :]

    def real_tp(self, tp: str) -> tuple[str, int]:
        topic, _, num = tp.rpartition("-")
        return self.real_topic(topic), int(num)

    def scenario_tp(self, real_topic: str, partition: int) -> str:
        return f"{self.scenario_topic(real_topic)}-{partition}"

    def all_tps(self) -> list[str]:
        return [f"{t.name}-{p}" for t in self.topics.values() for p in range(t.partitions)]
