"""Topics a test creates on the real broker under a prefix of its own, and deletes afterwards."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient


def drop_topics(admin: AdminClient, prefix: str) -> None:
    """Delete every topic whose name starts with `prefix` (cleanup: a topic already gone is no error)."""
    topics = [t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)]
    if topics:
        for fut in admin.delete_topics(topics, operation_timeout=10).values():
            try:
                fut.result(timeout=15)
            except Exception:  # noqa: BLE001 - cleanup
                pass
