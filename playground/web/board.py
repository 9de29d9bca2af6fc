"""The room, live: every page of a room ("room-<id>": moves, follow-me, answer counts) and the facilitator's board
("room-<id>-board": one small card per attendee, updated after each of their commands). Receives the rooms' signals
(playground/rooms/signals.py) and the sessions' (through broadcast.publish) and sends to the room's groups."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.template.loader import render_to_string
from django.utils import translation

from playground.models import Attendee, Workshop

log = logging.getLogger(__name__)


def room_group(workshop_id: str) -> str:
    return f"room-{workshop_id}"


def board_group(workshop_id: str) -> str:
    return f"room-{workshop_id}-board"


MINI_STRIPS = 4  # partitions drawn on a card
MINI_CELLS = 12  # a partition's last records drawn
MINI_FATES = ("committed", "open", "aborted", "plain")  # counted under the drawing


def card(live: Any, contexts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A seat's session on the board: who, how far, the goal, the last error, a tiny drawing of its logs."""
    header, ex = contexts["header"], contexts["exercise"]
    last_error, fenced = None, None
    for seq, _kind in reversed(live.marks):
        if _kind != "note":
            last_error = live.commands[seq].get("outcome")
            if last_error == "ok" and live.commands[seq].get("fenced"):
                last_error, fenced = None, ", ".join(live.commands[seq]["fenced"])  # said in the board's language
            break
    strips = []
    for s in contexts["logs"].get("strips", [])[:MINI_STRIPS]:
        cells = [(c["fate"], c.get("letter", "")) for c in s["slots"] if not c.get("end")]
        # what a facilitator reads from across the room: the partition, its last records drawn, and how many of each
        # fate its log holds (in words: a drawing alone was too small to read at 1280 px)
        counts = {fate: sum(1 for f, _ in cells if f == fate) for fate in MINI_FATES}
        strips.append({"tp": s["tp"], "cells": cells[-MINI_CELLS:], "counts": [(f, n) for f, n in counts.items() if n]})
    return {
        "session": live.session_id,
        "attendee": live.seat["attendee"],
        "name": live.seat["name"],
        # the one step numbering (session/live.py), as the session's header says it: step k of where it ends
        "step": header["step"],
        "end": header["end"],
        "goal": {"done": ex.get("done", 0), "total": len(ex.get("items", [])), "met": ex.get("met", False)}
        if ex.get("on")
        else None,
        "last_error": last_error,
        "fenced": fenced,
        "strips": strips,
        # the reconciliation's gaps, for a scenario with a database: how many rows the database and Kafka disagree on
        "gaps": (contexts["database"].get("reconcile") or {}).get("gaps") if contexts["database"].get("on") else None,
    }


CARD_PANELS = ("header", "exercise", "logs", "database")  # what card() reads of a session's panels (its `contexts`)


def render_card(c: Mapping[str, Any], lang: str, oob: bool = True, count: int | None = None) -> str:
    """An attendee's card (and, for a join, the room's new head count) in `lang`."""
    with translation.override(lang):
        html = render_to_string("playground/rooms/_card.html", {"c": c, "oob": oob, "lang": lang})
        if count is not None:
            html += render_to_string("playground/rooms/_seat_count.html", {"n": count, "oob": True})
        return html


def publish_seat(live: Any, contexts: Mapping[str, Mapping[str, Any]]) -> None:
    """After a seat's session changed: its card to the board. The card's data travels; each board renders it in
    its own language (one board, usually, in one language: not every language on every attendee's command)."""
    if not getattr(live, "seat", None) or live.seat["attendee"] is None:
        return
    _send(board_group(live.seat["room"]), {"type": "room.seat", "card": card(live, contexts)})
    last = live.commands[-1] if live.length else {}
    if "predict" in last:
        n = last["predict"]["n"]
        _send(room_group(live.seat["room"]), {"type": "room.answers", "item": live.seat["item"], "n": n})
    elif "n" in last and 0 <= last["n"] < len(live.steps) and live.steps[last["n"]].predict:
        # a question's step ran: once it has for most of the room, the board shows its right answer
        _send(room_group(live.seat["room"]), {"type": "room.answers", "item": live.seat["item"], "n": last["n"]})


def _send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:
        log.exception("sending %s to %s failed", message.get("type"), group)


def blank_card(attendee: Attendee) -> dict[str, Any]:
    return {
        "session": None,
        "attendee": attendee.pk,
        "name": attendee.name,
        "step": 0,
        "end": None,
        "goal": None,
        "last_error": None,
        "fenced": None,
        "strips": [],
        "gaps": None,
    }


def publish_joined(room: Workshop, attendee: Attendee) -> None:
    """A new attendee on the board at once (a board opened before the room joined has no slot for the card:
    rooms.js appends a card it finds no place for), with the room's new head count."""
    count = Attendee.objects.filter(workshop=room).count()
    _send(board_group(room.pk), {"type": "room.seat", "card": blank_card(attendee), "count": count})


def follow_src(session_id: str | None) -> str:
    """The follow-me panel's frame: the facilitator's session, watch-only, laid out for a panel ("" : none)."""
    return f"/s/{session_id}/?present=1&embed=1" if session_id else ""


def on_moved(sender: Any, room: Workshop, item: int, **_: Any) -> None:
    _send(room_group(room.pk), {"type": "room.moved", "item": item})


def on_follow_changed(sender: Any, room: Workshop, on: bool, **_: Any) -> None:
    from playground import rooms

    # The frame names the session: every page docks it at once (a reload of 40 pages took seconds).
    _send(room_group(room.pk), {"type": "room.follow", "on": on, "src": follow_src(rooms.follow_session(room.pk))})


def on_revealed(sender: Any, room: Workshop, item: int, n: int, **_: Any) -> None:
    _send(room_group(room.pk), {"type": "room.answers", "item": item, "n": n})


def on_joined(sender: Any, room: Workshop, attendee: Attendee, **_: Any) -> None:
    publish_joined(room, attendee)
