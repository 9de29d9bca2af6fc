"""A session's topics and groups on a real cluster: created when the session starts, deleted when it closes, and
recorded in the owners' registry (owners.py) in between.

Kafka never deletes a topic by itself, so the order matters: the session's prefix is recorded as this process's
before anything exists under it, and is forgotten only once its topics are gone. A process killed in between leaves
a record that the next process's sweep acts on. Both ends are bounded in time and raise ObserverError (creation) or
log (deletion), never hang.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from playground.kafka import owners
from playground.kafka.observer import Observer, ObserverError

log = logging.getLogger(__name__)

CLEANUP_TIMEOUT_S = 5.0  # deleting the topics of a session whose start failed


def create(
    observer: Observer,
    settings: dict[str, Any],
    prefix: str,
    topics: dict[str, int],
    rf: int,
    config: dict[str, str] | None = None,
) -> None:
    """Sweep what killed processes left on this cluster (the first session of this process only), record the prefix,
    then create the topics (real name -> partitions) at replication factor `rf`, with the topic `config` given.
    Topics created before a failure are deleted again (bounded) before the ObserverError goes on."""
    owners.sweep_once(settings["bootstrap"], settings["client"], settings["owners_dir"])
    owners.register(settings["owners_dir"], prefix, settings["bootstrap"])
    try:
        observer.create_topics(topics, rf, config)
    except ObserverError:
        try:
            observer.delete_session(list(topics), [], timeout_s=CLEANUP_TIMEOUT_S)
            owners.unregister(settings["owners_dir"], prefix)
        except ObserverError:
            pass  # still recorded: swept once this process is gone
        raise


def delete(observer: Observer, owners_dir: Path, prefix: str, topics: list[str], groups: list[str]) -> None:
    """Delete the session's topics and groups (real names), then forget the prefix; on failure it stays recorded as
    this process's, and a later sweep deletes them once this process is gone."""
    try:
        observer.delete_session(topics, groups)
        owners.unregister(owners_dir, prefix)
    except ObserverError as e:
        log.warning("closing session %s: %s", prefix, e)
