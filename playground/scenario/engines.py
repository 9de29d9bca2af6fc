"""Choosing an engine: a backend by name, for whoever runs a scenario (the runner, a session, the compare view, the
CLI). The interface (`playground.engine.backend`) knows neither implementation; this is the one place that knows
both, imported lazily so that a simulator-only process never loads confluent-kafka."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.engine.backend import Backend, BackendError
from playground.engine.spec import ActorSpec, ClusterSpec

ENGINES = ("sim", "kafka")


def make_backend(name: str, cluster: ClusterSpec, actors: Mapping[str, ActorSpec], **kwargs: Any) -> Backend:
    if name == "sim":
        from playground.sim.driver import SimBackend

        return SimBackend(cluster, actors, **kwargs)
    if name == "kafka":
        from playground.kafka.backend import KafkaBackend

        return KafkaBackend(cluster, actors, **kwargs)
    raise BackendError(f"unknown backend {name!r}: choose 'sim' or 'kafka'")
