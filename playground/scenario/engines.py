"""Choosing an engine: a backend by name, for whoever runs a scenario (the runner, a session, the compare view, the
CLI). The interface (`playground.engine.backend`) knows neither implementation; this is the one place that knows
both, imported lazily so that a simulator-only process never loads confluent-kafka."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.engine.backend import Backend, BackendError
from playground.engine.spec import ActorSpec, ClusterSpec

ENGINES = ("sim", "kafka")


def backend_class(name: str) -> type[Backend]:
    """The engine's Backend class, imported on first use (a server process warms the simulator's up as it starts)."""
    if name == "sim":
        from playground.sim.driver import SimBackend

        return SimBackend
    if name == "kafka":
        from playground.kafka.backend import KafkaBackend

        return KafkaBackend
    raise BackendError(f"unknown backend {name!r}: choose 'sim' or 'kafka'")


def make_backend(name: str, cluster: ClusterSpec, actors: Mapping[str, ActorSpec], **kwargs: Any) -> Backend:
    return backend_class(name)(cluster, actors, **kwargs)


def coordinator_transitions(kafka: str) -> Mapping[str, Any]:
    """The transaction coordinator's transition table for a Kafka release (target -> allowed previous states), as
    the simulator's coordinator obeys it: what the state diagram draws before a backend shows its own."""
    from playground.sim.coordinator import transitions_for

    return transitions_for(kafka)
