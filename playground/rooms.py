"""Workshops: a room of attendees, each with a session of their own per agenda item, and a facilitator who moves
the room, watches everyone on a board, asks the room questions and shows their own session to it.

Capabilities, as for sessions (session/capability.py): the facilitator's browser holds the room's secret, an
attendee's browser their own; the database keeps only digests. A seat's session is driven by whoever holds its
owner's secret: its drive capability is derived from that secret (HMAC of the session id), so an attendee who
opens the room again, from the same browser, drives the same sessions, and nobody else can.

Live: a seat session's updates also reach the room's board as one small card ("room-<id>-board"); the room's
moves, follow-me and answer counts reach every page of the room ("room-<id>").
"""

from __future__ import annotations

import functools

import hashlib
import hmac
import logging
import unicodedata
from datetime import timedelta
from typing import Any, Mapping

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from playground import limits
from playground.models import Attendee, Command, FailedJoin, ScenarioText, Seat, Workshop
from playground.session import capability
from playground.session.live import CommandError

log = logging.getLogger(__name__)

ROOM_COOKIE = "room_"
ATTENDEE_COOKIE = "att_"
WRONG_CODES_PER_MINUTE = 20
NAME_CHARS = 40


def room_group(workshop_id: str) -> str:
    return f"room-{workshop_id}"


def board_group(workshop_id: str) -> str:
    return f"room-{workshop_id}-board"


def derived_key(owner_secret: str, session_id: str) -> str:
    """The drive capability of a seat's session, from its owner's secret."""
    return hmac.new(owner_secret.encode(), session_id.encode(), hashlib.sha256).hexdigest()


# ------------------------------------------------------------------------------------------------ the room
def create(title: str, scenario_ids: list[str]) -> tuple[Workshop, str]:
    """A new room over library scenarios, in this order; the facilitator's secret to hand to their browser."""
    from playground import library

    agenda = []
    for sid in scenario_ids:
        entry = library.find(sid)
        if entry is None:
            raise CommandError(_("No scenario %(id)s in the library.") % {"id": sid}, status=404)
        text = ScenarioText.store(entry.scenario.source, entry.scenario.id)
        agenda.append({"text": text.id, "id": entry.scenario.id, "title": dict(entry.scenario.title)})
    if not agenda:
        raise CommandError(_("Choose at least one scenario for the agenda."))
    secret = capability.new_key()
    for _attempt in range(20):  # a fresh code: 31^6 of them, a clash is rare
        try:
            with transaction.atomic():
                room = Workshop.objects.create(title=title.strip()[:100] or _("Workshop"), agenda=agenda,
                                               room_key=capability.digest(secret))
            return room, secret
        except IntegrityError:
            continue
    raise CommandError(_("No free join code; try again."), status=503)


def by_code(code: str) -> Workshop | None:
    code = (code or "").strip().upper()
    if len(code) != 6:
        return None
    return Workshop.objects.filter(code=code).first()


def is_facilitator(room: Workshop, secret: str | None) -> bool:
    return capability.matches(secret, room.room_key)


def attendee_of(room: Workshop, secret: str | None) -> Attendee | None:
    if not secret:
        return None
    digest = capability.digest(secret)
    return next((a for a in Attendee.objects.filter(workshop=room, key=digest)), None)


def clean_name(name: str) -> str:
    name = unicodedata.normalize("NFC", " ".join((name or "").split()))
    if not name or any(unicodedata.category(ch).startswith("C") for ch in name):
        raise CommandError(_("Your name: one to %(n)d visible characters.") % {"n": NAME_CHARS})
    if len(name) > NAME_CHARS:
        raise CommandError(_("Your name: one to %(n)d visible characters.") % {"n": NAME_CHARS})
    return name


def _check_wrong_codes(client: str) -> None:
    """Past 20 wrong codes a minute a client waits, whatever code it tries next (or guessing would go on)."""
    since = timezone.now() - timedelta(seconds=60)
    if FailedJoin.objects.filter(client_key=client, created_at__gte=since).count() >= WRONG_CODES_PER_MINUTE:
        raise limits.LimitExceeded("join_codes", WRONG_CODES_PER_MINUTE,
                                   _("Too many wrong join codes from here in the last minute: wait a minute and try again."))


def _count_wrong_code(client: str) -> None:
    now = timezone.now()
    FailedJoin.objects.create(client_key=client)
    FailedJoin.objects.filter(created_at__lt=now - timedelta(hours=1)).delete()


def join(code: str, name: str, *, client: str, secret: str | None = None) -> tuple[Workshop, Attendee, str]:
    """An attendee joins by code and display name (a returning browser keeps its name and sessions)."""
    _check_wrong_codes(client)
    room = by_code(code)
    if room is None:
        _count_wrong_code(client)
        raise CommandError(_("No workshop has the code %(code)s: check it with the facilitator.") % {"code": (code or "").strip()[:12]}, status=404)
    known = attendee_of(room, secret)
    if known is not None:
        return room, known, secret  # type: ignore[return-value]
    name = clean_name(name)
    fresh = capability.new_key()
    try:
        with transaction.atomic():
            attendee = Attendee.objects.create(workshop=room, name=name, key=capability.digest(fresh))
    except IntegrityError:
        raise CommandError(_("Someone in this room is already called %(name)s: pick another name.") % {"name": name}, status=409) from None
    publish_joined(room, attendee)
    return room, attendee, fresh


# ---------------------------------------------------------------------------------------------- seats
def seat(room: Workshop, attendee: Attendee | None, item: int, owner_secret: str) -> tuple[str, str]:
    """The session of `attendee` (None: the facilitator) for agenda item `item`, created when first needed; and its
    drive capability, derived from the owner's secret."""
    from playground import session
    from playground.scenario import parse_scenario

    if not 0 <= item < len(room.agenda):
        raise CommandError(_("The agenda has items 1 to %(n)d.") % {"n": len(room.agenda)}, status=404)
    found = Seat.objects.filter(workshop=room, attendee=attendee, item=item).values_list("session_id", flat=True).first()
    if found:
        return found, derived_key(owner_secret, found)
    entry = room.agenda[item]
    text = ScenarioText.objects.get(pk=entry["text"])
    scenario = parse_scenario(text.text, f"{entry['id']}.yaml")
    row = session.create(scenario, source=text.text, backend="sim", key=lambda sid: derived_key(owner_secret, sid))
    try:
        with transaction.atomic():
            # The facilitator's seat (attendee NULL) is not covered by the unique constraint: the lock keeps it
            # single where the database has row locks (PostgreSQL); the check below covers SQLite.
            Workshop.objects.select_for_update().filter(pk=room.pk).first()
            if Seat.objects.filter(workshop=room, attendee=attendee, item=item).exists():
                raise IntegrityError("seat taken")
            Seat.objects.create(workshop=room, attendee=attendee, item=item, session_id=row.id)
    except IntegrityError:
        # Two pages of the same owner opened the item at once: the other one won; its session is the seat's.
        session.CACHE.evict(row.id)
        row.delete()
        found = Seat.objects.filter(workshop=room, attendee=attendee, item=item).values_list("session_id", flat=True).first()
        return found, derived_key(owner_secret, found)
    live = session.CACHE.get(row.id)
    if live is not None:
        live.seat = seat_of(row.id)  # built before its seat existed
    return row.id, derived_key(owner_secret, row.id)


def seat_of(session_id: str) -> dict[str, Any] | None:
    """Where a session sits: {"room", "code", "attendee", "name", "item"} (None: not a room's session)."""
    row = (Seat.objects.filter(session_id=session_id)
           .values("workshop_id", "workshop__code", "attendee_id", "attendee__name", "item").first())
    if row is None:
        return None
    return {"room": row["workshop_id"], "code": row["workshop__code"], "attendee": row["attendee_id"],
            "name": row["attendee__name"], "item": row["item"]}


def move(room: Workshop, item: int) -> None:
    if not 0 <= item < len(room.agenda):
        raise CommandError(_("The agenda has items 1 to %(n)d.") % {"n": len(room.agenda)}, status=404)
    Workshop.objects.filter(pk=room.pk).update(current=item)
    _send(room_group(room.pk), {"type": "room.moved", "item": item})


def set_follow(room: Workshop, on: bool) -> None:
    Workshop.objects.filter(pk=room.pk).update(follow=on)
    _send(room_group(room.pk), {"type": "room.follow", "on": on})


def facilitator_session(room: Workshop, item: int) -> str | None:
    return Seat.objects.filter(workshop=room, attendee=None, item=item).values_list("session_id", flat=True).first()


# ------------------------------------------------------------------------------------------- answers
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
    rows = Command.objects.filter(session__seat__workshop_id=room_id, session__seat__item=item,
                                  session__seat__attendee__isnull=False, dropped=False, entry__predict__n__in=ns)
    # The two numbers, not each command's whole entry: decoding 120 entries per command was a tenth of the servers'
    # CPU at 40 attendees (tools/bench/workshop.py).
    for n, choice in rows.values_list("entry__predict__n", "entry__predict__choice"):
        out[int(n)].append(int(choice))
    return out


@functools.lru_cache(maxsize=64)
def _scenario_of(text_id: str, scenario_id: str) -> Any:
    """An agenda item's scenario, parsed once per process: its text is stored under its content's hash, so it never
    changes (the board renders the room's answers several times a second)."""
    from playground.scenario import parse_scenario

    return parse_scenario(ScenarioText.objects.get(pk=text_id).text, f"{scenario_id}.yaml")


def questions(room: Workshop, item: int) -> list[dict[str, Any]]:
    """The agenda item's questions with the room's answers so far (the board's panel)."""
    from playground.exercise import distribution

    entry = room.agenda[item]
    asked = [s for s in _scenario_of(entry["text"], entry["id"]).steps if s.predict]
    given = room_answers(room.pk, item, [s.index for s in asked])
    out = []
    for s in asked:
        counts = distribution(given[s.index], len(s.predict["choices"]))
        out.append({"n": s.index, "question": dict(s.predict["question"]), "choices": [dict(c) for c in s.predict["choices"]],
                    "answer": s.predict["answer"], "dist": counts})
    return out


# --------------------------------------------------------------------------------------- the board, live
def card(live: Any, contexts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A seat's session on the board: who, how far, the goal, the last error, a tiny drawing of its logs."""
    header, ex = contexts["header"], contexts["exercise"]
    last_error = None
    for seq, _kind in reversed(live.marks):
        if _kind != "note":
            last_error = live.commands[seq].get("outcome")
            if last_error == "ok" and live.commands[seq].get("fenced"):
                last_error = "fenced " + ", ".join(live.commands[seq]["fenced"])
            break
    strips = [{"tp": s["tp"], "cells": [(c["fate"], c.get("letter", "")) for c in s["slots"] if not c.get("end")][-14:]}
              for s in contexts["logs"].get("strips", [])]
    return {
        "session": live.session_id, "attendee": live.seat["attendee"], "name": live.seat["name"],
        "cursor": header["cursor"], "total": header["total"], "commands": header["commands"],
        "goal": {"done": ex.get("done", 0), "total": len(ex.get("items", [])), "met": ex.get("met", False)} if ex.get("on") else None,
        "last_error": last_error, "strips": strips,
        # the reconciliation's gaps, for a scenario with a database: how many rows the database and Kafka disagree on
        "gaps": (contexts["database"].get("reconcile") or {}).get("gaps") if contexts["database"].get("on") else None,
    }


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
    if live.length and "predict" in live.commands[-1]:
        n = live.commands[-1]["predict"]["n"]
        _send(room_group(live.seat["room"]), {"type": "room.answers", "item": live.seat["item"], "n": n})


def _send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # noqa: BLE001 - the change is stored; pages catch up when they reconnect or reload
        log.exception("sending %s to %s failed", message.get("type"), group)


def blank_card(attendee: Attendee) -> dict[str, Any]:
    return {"session": None, "attendee": attendee.pk, "name": attendee.name, "cursor": 0, "total": 0,
            "commands": 0, "goal": None, "last_error": None, "strips": [], "gaps": None}


def publish_joined(room: Workshop, attendee: Attendee) -> None:
    """A new attendee on the board at once (a board opened before the room joined has no slot for the card:
    rooms.js appends a card it finds no place for), with the room's new head count."""
    count = Attendee.objects.filter(workshop=room).count()
    _send(board_group(room.pk), {"type": "room.seat", "card": blank_card(attendee), "count": count})


def cards(room: Workshop, item: int) -> list[dict[str, Any]]:
    """Every attendee's card for an agenda item (the board's first render): sessions replayed as needed."""
    from playground import broadcast, panels, session

    out = []
    seats = {s.attendee_id: s.session_id for s in Seat.objects.filter(workshop=room, item=item, attendee__isnull=False)}
    for attendee in Attendee.objects.filter(workshop=room):
        sid = seats.get(attendee.pk)
        if sid is None:
            out.append(blank_card(attendee))
            continue
        live = session.load(sid)
        out.append(card(live, panels.contexts(live, broadcast.view_of(live))))
    return out


def cookie_names(room_id: str) -> tuple[str, str]:
    return ROOM_COOKIE + room_id, ATTENDEE_COOKIE + room_id


def secrets_from(cookies: Mapping[str, str], room_id: str) -> tuple[str | None, str | None]:
    room_name, attendee_name = cookie_names(room_id)
    return cookies.get(room_name), cookies.get(attendee_name)
