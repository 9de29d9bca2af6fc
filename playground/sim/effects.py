"""What a coordinator asks the cluster to do. The transaction coordinator and the group coordinator are state
machines in the h11 style: they receive inputs (a request, a completed append, a marker's result, a timer, a leader
change) and return a list of effects, which `Cluster` carries out in order. They never hold the cluster or call
into it; whatever the cluster learns from carrying an effect out comes back to them as the next input.

The effects every coordinator may return are here; each coordinator adds its own (coordinator.py, markers.py,
groups.py), and cluster.py carries out every kind. An effect is plain frozen data, except `Answer.reply` (the
request's reply function, handed in with the request and handed back untouched) and an effect's `job` (the
coordinator's own record of the work in progress, handed back with the input that continues it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from playground.engine import events as ev
from playground.sim.clock import WORK

# A request's answer: reply(error, **result), error None or Kafka's name for it. Every request method of the cluster
# takes one; a coordinator hands it back in Answer.
Reply = Callable[..., None]


@dataclass(frozen=True, slots=True)
class Effect:
    """Something for the cluster to do."""


@dataclass(frozen=True, slots=True)
class Emit(Effect):
    """Record an event (the cluster numbers it and stamps it with the virtual time)."""

    event: type[ev.Event]
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Answer(Effect):
    """Answer a request: `reply(error, **fields)`."""

    reply: Reply
    error: str | None
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Timer(Effect):
    """At `at_ms`, give `tick` back to the coordinator that asked (its `on_timer`). `category`: the scheduler's
    (clock.WORK finishes by itself and an observation waits for it; clock.TIMER changes the story when it fires)."""

    at_ms: int
    label: str
    tick: object
    category: str = WORK


Effects = list[Effect]
