"""A simulator state nothing will use again (a moment scrubbed past: session/replay.py) is freed by reference counting
once discarded. Its scheduled callbacks, listeners and parked fetches refer back to the cluster: left as they are,
a 10,000-command state is a reference cycle of ~40,000 objects that only the garbage collector's full passes free
(150 ms each, in whichever request they fall into)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from playground.engine.backend import Backend
from playground.scenario import library
from playground.scenario.database import with_database
from playground.scenario.engines import make_backend

SCENARIOS = [entry.id for entry in library.entries()]


@contextmanager
def leftovers() -> Iterator[list[object]]:
    """The simulator's objects that only the collector would free, of what the block let go."""
    found: list[object] = []
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield found
        gc.collect()
        found.extend(o for o in gc.garbage if (type(o).__module__ or "").startswith("playground."))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _built(scenario_id: str, share: float = 0.5) -> Backend:
    scenario = library.get(scenario_id)
    assert scenario is not None
    backend = with_database(
        make_backend("sim", scenario.cluster, scenario.actors, seed=scenario.seed, profile=scenario.profile),
        scenario.database,
    )
    # halfway (transactions open, requests and fetches in flight, scans scheduled) or at its end
    for step in scenario.steps[: int(len(scenario.steps) * share)]:
        backend.apply(step)
    return backend


@pytest.mark.parametrize("share", [0.5, 1.0])
@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_it_leaves_nothing_to_the_collector_once_discarded(scenario_id, share):
    backend = _built(scenario_id, share)
    with leftovers() as found:
        backend.discard()
        del backend
    assert found == []


def test_it_leaves_a_cycle_when_not_discarded():
    # the test above would pass without discard() if the state had no cycle to begin with
    backend = _built("shared-id-incident")
    with leftovers() as found:
        del backend
    assert any(type(o).__name__ == "Cluster" for o in found)
