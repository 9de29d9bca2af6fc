"""Topics a test creates on the real broker under a prefix of its own, and deletes afterwards."""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient, NewTopic

from playground.kafka.wire import WireClient, metadata_request

LISTED_S = 20.0  # a new topic reaches every broker's metadata soon, not at once


def listed_everywhere(bootstrap: str, names: set[str], timeout_s: float = LISTED_S) -> None:
    """Wait until every broker of the cluster lists `names`: whatever a test does next (a sweep, the inspector's
    picker) asks any one broker, and a broker that has not heard of a topic yet would make it look absent."""
    wire = WireClient(bootstrap)
    try:
        deadline = time.monotonic() + timeout_s
        for node in sorted(wire.metadata([]).brokers):
            while True:
                resp = wire.send_to(node, metadata_request(None))
                if names <= {str(t.name) for t in resp.topics}:
                    break
                assert time.monotonic() < deadline, f"broker {node} does not list {sorted(names)} after {timeout_s} s"
                time.sleep(0.2)
    finally:
        wire.close()


def create_topic(admin: AdminClient, name: str, partitions: int = 1, bootstrap: str | None = None) -> str:
    """A topic on the test cluster (`admin`'s: `bootstrap`, by default KAFKA_BOOTSTRAP_SERVERS) whose partitions all
    have a leader and that every broker lists."""
    from tests.kafka.conftest import require_bootstrap

    admin.create_topics([NewTopic(name, partitions)])[name].result(timeout=20)
    deadline = time.monotonic() + 15
    while True:  # until every partition has a leader
        md = admin.list_topics(name, timeout=5).topics.get(name)
        if (
            md
            and not md.error
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            break
        assert time.monotonic() < deadline, f"{name} has no leaders"
        time.sleep(0.1)
    listed_everywhere(bootstrap or require_bootstrap(), {name})
    return name


def drop_topics(admin: AdminClient, prefix: str) -> None:
    """Delete every topic whose name starts with `prefix` (cleanup: a topic already gone is no error)."""
    topics = [t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)]
    if topics:
        for fut in admin.delete_topics(topics, operation_timeout=10).values():
            try:
                fut.result(timeout=15)
            except Exception:
                pass
