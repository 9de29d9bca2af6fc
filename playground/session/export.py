"""A session written out as a scenario file (the editor's "Save this session as a scenario")."""

from __future__ import annotations

from typing import Any

from playground.scenario.run import build_observation
from playground.scenario.writer import title_from, write
from playground.session.backends import live_only
from playground.session.live import Live
from playground.session.replay import load, restore


def _final_observation(live: Live) -> dict[str, Any] | None:
    """What the session ended with, for the file's `expect:` block: observed on a copy (observing lets the
    simulator's time run to quiescence, which must not happen to the session itself). None for a real cluster:
    its state is not replayed here, and the steps' outcomes already say what it answered."""
    if live_only(live.backend_name) or live.detached:
        return None
    copy = restore(live, live.length, as_moment=True)
    try:
        raw = copy.backend.observe()
    finally:
        copy.backend.close()
    return build_observation(live.scenario.id if live.scenario else "free-play", live.backend_name, live.seed, [], raw)


def as_scenario(session_id: str) -> str:
    live = load(session_id)
    scenario = live.scenario
    base = scenario.id if scenario is not None else "free-play"
    comment = (
        f"Written from session {session_id} ({live.length} commands on the {live.backend_name} backend).\n"
        "Each step expects the outcome the session saw; fill in the empty notes."
    )
    return write(
        scenario_id=f"{base}-session" if not base.endswith("-session") else base,
        title=title_from(dict(scenario.title) if scenario is not None else None),
        summary=dict(scenario.summary) if scenario is not None and scenario.summary else None,
        tags=scenario.tags if scenario is not None else (),
        seed=live.seed,
        cluster=live.cluster,
        actors=list(live.actors.values()),
        commands=live.commands,
        observation=_final_observation(live),
        comment=comment,
        database=scenario.database if scenario is not None else None,
        profile=live.profile,
    )
