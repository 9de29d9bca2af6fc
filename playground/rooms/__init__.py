"""Workshops: a room of attendees, each with a session of their own per agenda item, and a facilitator who moves
the room, watches everyone on a board, asks the room questions and shows their own session to it.

The domain, without the web: `room` (creating a room, joining it, its capabilities, moving it, follow-me), `seats`
(an attendee's session per agenda item) and `answers` (the room's answers to an exercise's questions). What happens
in a room is announced (`signals`); the web layer shows it live (playground/web/board.py).

Capabilities, as for sessions (session/capability.py): the facilitator's browser holds the room's secret, an
attendee's browser their own; the database keeps only digests. A seat's session is driven by whoever holds its
owner's secret: its drive capability is derived from that secret (HMAC of the session id), so an attendee who
opens the room again, from the same browser, drives the same sessions, and nobody else can.
"""

from playground.rooms.answers import answers, questions, room_answers
from playground.rooms.room import (
    ATTENDEE_COOKIE,
    NAME_CHARS,
    ROOM_COOKIE,
    attendee_of,
    by_code,
    clean_name,
    cookie_names,
    create,
    is_facilitator,
    join,
    move,
    reveal,
    secrets_from,
    set_follow,
    wrong_codes_per_minute,
)
from playground.rooms.seats import derived_key, facilitator_session, follow_session, item_profile, seat

__all__ = [
    "ATTENDEE_COOKIE",
    "NAME_CHARS",
    "ROOM_COOKIE",
    "answers",
    "attendee_of",
    "by_code",
    "clean_name",
    "cookie_names",
    "create",
    "derived_key",
    "facilitator_session",
    "follow_session",
    "is_facilitator",
    "item_profile",
    "join",
    "move",
    "questions",
    "reveal",
    "room_answers",
    "seat",
    "secrets_from",
    "set_follow",
    "wrong_codes_per_minute",
]
