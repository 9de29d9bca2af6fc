"""Seats: an attendee's (or the facilitator's) session for an agenda item, made as the room moves to the item or
when first needed, and its drive capability (derived from its owner's secret)."""

from __future__ import annotations

import functools
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from playground import session
from playground.engine.spec import Profile, parse_profile
from playground.models import Attendee, ScenarioText, Seat, Workshop
from playground.scenario import parsed
from playground.session import limits
from playground.session.live import CommandError


def derived_key(owner_secret: str, session_id: str) -> str:
    """The drive capability of a seat's session, from its owner's secret."""
    return hmac.new(owner_secret.encode(), session_id.encode(), hashlib.sha256).hexdigest()


def seat(room: Workshop, attendee: Attendee | None, item: int, owner_secret: str) -> tuple[str, str]:
    """The session of `attendee` (None: the facilitator) for agenda item `item`, created when first needed; and its
    drive capability, derived from the owner's secret."""
    if not 0 <= item < len(room.agenda):
        raise CommandError(_("The agenda has items 1 to %(n)d.") % {"n": len(room.agenda)}, status=404)
    found = (
        Seat.objects.filter(workshop=room, attendee=attendee, item=item)
        .values_list("session_id", "session__drive_key")
        .first()
    )
    if found:
        sid, digest = found
        key = derived_key(owner_secret, sid)
        if not digest:  # made as the room moved on (seat_the_room): its owner has come
            session.claim(sid, key)
        return sid, key
    entry = room.agenda[item]
    text = stored_text(entry["text"])
    scenario = parsed(text.text, f"{entry['id']}.yaml")
    # Not the attendee's per-client budget (a room behind one NAT would exhaust it at once): the room's creator's,
    # and a room makes at most a session per attendee and item (the seats' unique constraint).
    taken = limits.take("room_sessions_per_hour", room.client_key or f"room:{room.pk}")
    try:
        row = session.create(
            scenario,
            source=text.text,
            backend="sim",
            key=lambda sid: derived_key(owner_secret, sid),
            profile=item_profile(entry),
            stored=text,  # the room stored (and counted) its agenda's texts when it was made
        )
    except BaseException:
        limits.give_back(taken)
        raise
    try:
        with transaction.atomic():
            if attendee is None:
                # The facilitator's seat (attendee NULL) is not covered by the unique constraint: the lock keeps it
                # single where the database has row locks (PostgreSQL); the check below covers SQLite.
                Workshop.objects.select_for_update().filter(pk=room.pk).first()
                if Seat.objects.filter(workshop=room, attendee=None, item=item).exists():
                    raise IntegrityError("seat taken")
            Seat.objects.create(workshop=room, attendee=attendee, item=item, session_id=row.id)
    except IntegrityError:
        # Two pages of the same owner opened the item at once: the other one won; its session is the seat's.
        session.CACHE.evict(row.id)
        row.delete()
        limits.give_back(taken)
        found = (
            Seat.objects.filter(workshop=room, attendee=attendee, item=item)
            .values_list("session_id", flat=True)
            .first()
        )
        return found, derived_key(owner_secret, found)
    live = session.CACHE.get(row.id)
    if live is not None:
        # built before its seat existed; what store.seat_of would read back, known here
        live.seat = {
            "room": room.pk,
            "code": room.code,
            "attendee": attendee.pk if attendee is not None else None,
            "name": attendee.name if attendee is not None else None,
            "item": item,
        }
    return row.id, derived_key(owner_secret, row.id)


def seat_the_room(room: Workshop, item: int) -> int:
    """As the room moves to `item`: a session for it for everyone in the room who has none yet (the facilitator
    too), made in one go. Forty pages then open at once, each finding its seat, instead of each making its own (a
    dozen statements and a build of the scenario, one page after the other on each process's database thread).
    Nobody drives them until their owner comes (`seat`: a seat's capability derives from its owner's secret, which
    only their browser holds). When the room's budget of sessions cannot take them all, or someone's page made
    theirs meanwhile, none are made here: each is made when its owner comes, as before. How many were made."""
    entry = room.agenda[item]
    with transaction.atomic():
        # Whoever makes a seat of this room takes this lock first where there are row locks (PostgreSQL): the
        # facilitator's (`seat`) and these.
        Workshop.objects.select_for_update().filter(pk=room.pk).first()
        seated = set(Seat.objects.filter(workshop=room, item=item).values_list("attendee_id", flat=True))
        owners: list[int | None] = [None] if None not in seated else []
        owners += [pk for pk in Attendee.objects.filter(workshop=room).values_list("pk", flat=True) if pk not in seated]
        if not owners:
            return 0
        try:
            taken = limits.take("room_sessions_per_hour", room.client_key or f"room:{room.pk}", len(owners))
        except limits.LimitExceeded:
            return 0
        text = stored_text(entry["text"])
        try:
            with transaction.atomic():
                rows = session.create_unclaimed(
                    parsed(text.text, f"{entry['id']}.yaml"), stored=text, profile=item_profile(entry), n=len(owners)
                )
                Seat.objects.bulk_create(
                    Seat(workshop=room, attendee_id=owner, item=item, session_id=row.id)
                    for owner, row in zip(owners, rows)
                )
        except IntegrityError:  # an attendee's page made their seat meanwhile
            limits.give_back(taken, len(owners))
            return 0
    return len(owners)


@functools.lru_cache(maxsize=64)
def stored_text(text_id: str) -> ScenarioText:
    """An agenda item's text, read once per process: it is stored under its content's address, so it never changes
    (every attendee's seat of the item starts from it). Read-only."""
    return ScenarioText.objects.get(pk=text_id)


def item_profile(entry: Mapping[str, Any]) -> Profile | None:
    """The profile an agenda item's sessions run in (None: the scenario's own)."""
    chosen = entry.get("profile")
    return parse_profile(chosen["kafka"], chosen["client"]) if chosen else None


def facilitator_session(room: Workshop, item: int) -> str | None:
    return Seat.objects.filter(workshop=room, attendee=None, item=item).values_list("session_id", flat=True).first()


def follow_session(room_id: str, now: Mapping[str, Any] | None = None) -> str | None:
    """The session every attendee's page shows beside their own while follow-me is on: the facilitator's, for the
    item the room is on (None: follow-me is off, or the facilitator has no session for it). `now`: the room's
    "current" and "follow" when the caller has just read them."""
    if now is None:
        now = Workshop.objects.filter(pk=room_id).values("current", "follow").first()
    if not now or not now["follow"]:
        return None
    return (
        Seat.objects.filter(workshop_id=room_id, attendee=None, item=now["current"])
        .values_list("session_id", flat=True)
        .first()
    )
