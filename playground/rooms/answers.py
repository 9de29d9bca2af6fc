"""The room's answers to an exercise's questions, counted from its attendees' command logs."""

from __future__ import annotations

import functools
from typing import Any

from playground.models import Command, ScenarioText, Workshop
from playground.scenario import parse_scenario
from playground.scenario.exercise import distribution


def answers(live: Any, ns: list[int]) -> dict[int, list[int]]:
    """The answers to scenario steps `ns`' questions: the whole room's for a seat's session (its attendees' sessions
    for the same item), else this session's own."""
    seat_info = getattr(live, "seat", None)
    if not seat_info:
        return {n: [live.predictions[n]] if n in live.predictions else [] for n in ns}
    return room_answers(seat_info["room"], seat_info["item"], ns)


def room_answers(room_id: str, item: int, ns: list[int]) -> dict[int, list[int]]:
    """One query for all of them: on every command of every attendee, the exercise panel asks for its questions."""
    out: dict[int, list[int]] = {n: [] for n in ns}
    if not ns:
        return out
    rows = Command.objects.filter(
        session__seat__workshop_id=room_id,
        session__seat__item=item,
        session__seat__attendee__isnull=False,
        dropped=False,
        entry__predict__n__in=ns,
    )
    # The two numbers, not each command's whole entry: decoding 120 entries per command was a tenth of the servers'
    # CPU at 40 attendees (tools/bench/workshop.py).
    for n, choice in rows.values_list("entry__predict__n", "entry__predict__choice"):
        out[int(n)].append(int(choice))
    return out


@functools.lru_cache(maxsize=64)
def _scenario_of(text_id: str, scenario_id: str) -> Any:
    """An agenda item's scenario, parsed once per process: its text is stored under its content's hash, so it never
    changes (the board renders the room's answers several times a second)."""
    return parse_scenario(ScenarioText.objects.get(pk=text_id).text, f"{scenario_id}.yaml")


def questions(room: Workshop, item: int) -> list[dict[str, Any]]:
    """The agenda item's questions with the room's answers so far (the board's panel)."""
    entry = room.agenda[item]
    asked = [s for s in _scenario_of(entry["text"], entry["id"]).steps if s.predict]
    given = room_answers(room.pk, item, [s.index for s in asked])
    out = []
    for s in asked:
        counts = distribution(given[s.index], len(s.predict["choices"]))
        out.append(
            {
                "n": s.index,
                "question": dict(s.predict["question"]),
                "choices": [dict(c) for c in s.predict["choices"]],
                "answer": s.predict["answer"],
                "dist": counts,
            }
        )
    return out
