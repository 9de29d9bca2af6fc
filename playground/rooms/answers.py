"""The room's answers to an exercise's questions, counted from its attendees' command logs; and when the board may
show a question's right answer: once its step has run for most of the room (the attendees seated on the item), or
once the facilitator revealed it. Before that, projecting the board must not give the room the answers."""

from __future__ import annotations

import functools
from typing import Any

from django.db import connection

from playground.engine.spec import parse_profile
from playground.models import Command, ScenarioText, Seat, Workshop
from playground.scenario import parsed
from playground.scenario.exercise import distribution


def answers(live: Any, ns: list[int]) -> dict[int, list[int]]:
    """The answers to scenario steps `ns`' questions: the whole room's for a seat's session (its attendees' sessions
    for the same item), else this session's own."""
    seat_info = getattr(live, "seat", None)
    if not seat_info:
        return {n: [live.predictions[n]] if n in live.predictions else [] for n in ns}
    return room_answers(seat_info["room"], seat_info["item"], ns)


def room_answers(room_id: str, item: int, ns: list[int]) -> dict[int, list[int]]:
    """One statement for all of them: on every command of every attendee, the exercise panel asks for its
    questions. Only the two numbers of each prediction are read, not each command's whole entry (decoding 120
    entries per command was a tenth of the servers' CPU at 40 attendees, tools/bench/workshop.py)."""
    out: dict[int, list[int]] = {n: [] for n in ns}
    if not ns:
        return out
    sql, params, room_at, item_at = _predictions_statement(connection.vendor)
    values = list(params)
    values[room_at], values[item_at] = room_id, item
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        rows = cursor.fetchall()
    for n, choice in rows:
        if int(n) in out:
            out[int(n)].append(int(choice))
    return out


# Stand-ins for a room and an item: their places among the compiled statement's parameters are where the real ones go
# (the item within its column's range: Django compiles a lookup of an out-of-range number into "matches nothing").
_ROOM, _ITEM = "<a room>", 1_987_654_321


@functools.cache
def _predictions_statement(vendor: str) -> tuple[str, tuple[Any, ...], int, int]:
    """The seated attendees' predictions on an item as SQL, compiled once per process and database: building this
    queryset (three joins, two JSON paths) each time was over half of room_answers' CPU (py-spy of
    tools/bench/workshop.py --attendees 40), paid on every attendee's every command."""
    rows = Command.objects.filter(
        session__seat__workshop_id=_ROOM,
        session__seat__item=_ITEM,
        session__seat__attendee__isnull=False,
        dropped=False,
        entry__predict__has_key="n",
    ).values_list("entry__predict__n", "entry__predict__choice")
    sql, params = rows.query.sql_with_params()
    if params.count(_ROOM) != 1 or params.count(_ITEM) != 1:
        raise AssertionError(f"the stand-ins must each be one parameter of {sql!r} ({vendor})")
    return sql, tuple(params), params.index(_ROOM), params.index(_ITEM)


def steps_run(room_id: str, item: int, ns: list[int]) -> dict[int, int]:
    """How many attendees' sessions for the item have run each of scenario steps `ns` (in one query)."""
    out: dict[int, int] = dict.fromkeys(ns, 0)
    if not ns:
        return out
    rows = (
        Command.objects.filter(
            session__seat__workshop_id=room_id,
            session__seat__item=item,
            session__seat__attendee__isnull=False,
            dropped=False,
            entry__n__in=ns,
        )
        .values_list("entry__n", "session_id")
        .distinct()
    )
    for n, _sid in rows:
        out[int(n)] += 1
    return out


def revealed(room: Workshop, item: int) -> set[int]:
    """The questions of an item whose answer the facilitator revealed on the board."""
    return {int(n) for n in (room.revealed or {}).get(str(item), [])}


@functools.lru_cache(maxsize=64)
def _scenario_of(text_id: str, scenario_id: str) -> Any:
    """An agenda item's scenario, parsed once per process: its text is stored under its content's hash, so it never
    changes (the board renders the room's answers several times a second)."""
    return parsed(ScenarioText.objects.get(pk=text_id).text, f"{scenario_id}.yaml")


def question_steps(room: Workshop, item: int) -> list[Any]:
    """The agenda item's steps that ask a question, with their answers in the item's profile (the board's answer)."""
    entry = room.agenda[item]
    chosen = entry.get("profile") or {}
    return _question_steps(entry["text"], entry["id"], chosen.get("kafka"), chosen.get("client"))


@functools.lru_cache(maxsize=64)
def _question_steps(text_id: str, scenario_id: str, kafka: str | None, client: str | None) -> list[Any]:
    scenario = _scenario_of(text_id, scenario_id)
    if kafka:  # an answer may be stated per profile: the room's sessions run in the item's
        scenario = scenario.for_profile(parse_profile(kafka, client))
    return [s for s in scenario.steps if s.predict]


def questions(room: Workshop, item: int) -> list[dict[str, Any]]:
    """The agenda item's questions with the room's answers so far (the board's panel); the right answer only once
    the question is revealed (its step has run for most of the seated room, or the facilitator revealed it)."""
    asked = question_steps(room, item)
    ns = [s.index for s in asked]
    given = room_answers(room.pk, item, ns)
    ran = steps_run(room.pk, item, ns)
    # who has opened the item: a seat made as the room moved on counts once its owner came (seats.seat_the_room)
    seated = (
        Seat.objects.filter(workshop=room, item=item, attendee__isnull=False).exclude(session__drive_key="").count()
    )
    by_facilitator = revealed(room, item)
    out = []
    for s in asked:
        counts = distribution(given[s.index], len(s.predict["choices"]))
        shown = s.index in by_facilitator or (seated > 0 and 2 * ran[s.index] > seated)
        out.append(
            {
                "n": s.index,
                "question": dict(s.predict["question"]),
                "choices": [dict(c) for c in s.predict["choices"]],
                "answer": s.predict["answer"] if shown else None,
                "revealed": shown,
                "ran": ran[s.index],
                "seated": seated,
                "dist": counts,
            }
        )
    return out
