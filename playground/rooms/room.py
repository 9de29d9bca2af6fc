"""A room: creating it over library scenarios, joining it by code, who holds which capability, moving it to an
agenda item, follow-me."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from playground.engine.spec import Profile
from playground.models import Attendee, ScenarioText, Workshop, name_key
from playground.rooms import signals
from playground.rooms.seats import seat_the_room
from playground.scenario import library
from playground.session import capability, limits
from playground.session.live import CommandError

ROOM_COOKIE = "room_"
ATTENDEE_COOKIE = "att_"
NAME_CHARS = 40


def wrong_codes_per_minute() -> int:
    return limits.limit("join_codes_per_minute")


def create(
    title: str, scenario_ids: list[str], *, client: str = "", profiles: Mapping[str, Profile] | None = None
) -> tuple[Workshop, str]:
    """A new room over library scenarios, in this order; the facilitator's secret to hand to their browser.
    `client` is the creator's key: rooms per hour are counted against it, and so are the sessions its rooms make.
    `profiles`: the Kafka version and client an item's sessions run in, by scenario id (absent: the scenario's own)."""
    n = limits.limit("room_items")
    if len(scenario_ids) > n:
        raise CommandError(_("An agenda has at most %(n)d items.") % {"n": n})
    scenarios = []
    for sid in scenario_ids:
        scenario = library.get(sid)
        if scenario is None:
            raise CommandError(_("No scenario %(id)s in the library.") % {"id": sid}, status=404)
        scenarios.append(scenario)
    if not scenarios:
        raise CommandError(_("Choose at least one scenario for the agenda."))
    taken = limits.take("rooms_per_hour", client) if client else None
    try:
        agenda = []
        for scenario in scenarios:
            text = ScenarioText.store(scenario.source, scenario.id)
            entry: dict[str, object] = {"text": text.id, "id": scenario.id, "title": dict(scenario.title)}
            chosen = (profiles or {}).get(scenario.id)
            if chosen is not None and chosen != scenario.profile:
                entry["profile"] = chosen.to_dict()
            agenda.append(entry)
        secret = capability.new_key()
        for _attempt in range(20):  # a fresh code: 31^6 of them, a clash is rare
            try:
                with transaction.atomic():
                    room = Workshop.objects.create(
                        title=title.strip()[:100] or _("Workshop"),
                        agenda=agenda,
                        room_key=capability.digest(secret),
                        client_key=client,
                    )
                return room, secret
            except IntegrityError:
                continue
        raise CommandError(_("No free join code; try again."), status=503)
    except BaseException:
        if taken:
            limits.give_back(taken)
        raise


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
    if len(name) > NAME_CHARS or not name_key(name).strip():
        raise CommandError(_("Your name: one to %(n)d visible characters.") % {"n": NAME_CHARS})
    return name


def _wrong_code(client: str, code: str) -> None:
    """A code that opens no room. Past the limits (different wrong codes from one client, and from all of them) it
    is answered 429 instead of 404; a right code is never refused, so that one attendee typing codes at random
    cannot lock the room out for everyone behind the same address (README.md, "Limits", says what guessing costs).
    The same wrong code typed again counts once."""
    for name, who in (("join_codes_per_minute", client), ("join_codes_per_minute_server", "")):
        if limits.over(name, who):
            raise limits.reached(name)
    if limits.first_time("join_codes_per_minute", client, code):
        limits.take("join_codes_per_minute", client)
        limits.take("join_codes_per_minute_server")


def join(
    room: Workshop | None, code: str, name: str, *, client: str, secret: str | None = None
) -> tuple[Workshop, Attendee, str]:
    """An attendee joins by code and display name (a returning browser keeps its name and sessions). `room` is
    by_code(code), which the caller has read already (to find the attendee's cookie): a wrong code, the bulk of a
    guesser's requests, is looked up once."""
    if room is None:
        _wrong_code(client, (code or "").strip().upper()[:12])
        raise CommandError(
            _("No workshop has the code %(code)s: check it with the facilitator.")
            % {"code": (code or "").strip()[:12]},
            status=404,
        )
    known = attendee_of(room, secret)
    if known is not None:
        return room, known, secret  # type: ignore[return-value]
    name = clean_name(name)
    if Attendee.objects.filter(workshop=room, name_key=name_key(name)).exists():
        raise _taken(name)
    taken = limits.take("room_attendees", room.pk)
    fresh = capability.new_key()
    try:
        with transaction.atomic():
            attendee = Attendee.objects.create(
                workshop=room, name=name, name_key=name_key(name), key=capability.digest(fresh)
            )
    except IntegrityError:
        limits.give_back(taken)
        raise _taken(name) from None
    signals.joined.send(sender=Workshop, room=room, attendee=attendee)
    return room, attendee, fresh


def _taken(name: str) -> CommandError:
    return CommandError(
        _("Someone in this room is already called %(name)s (or a name that looks the same): pick another name.")
        % {"name": name},
        status=409,
    )


def move(room: Workshop, item: int) -> None:
    if not 0 <= item < len(room.agenda):
        raise CommandError(_("The agenda has items 1 to %(n)d.") % {"n": len(room.agenda)}, status=404)
    Workshop.objects.filter(pk=room.pk).update(current=item)
    seat_the_room(room, item)  # before the room's pages hear of it: each finds its seat made
    signals.moved.send(sender=Workshop, room=room, item=item)


def reveal(room: Workshop, item: int, n: int) -> None:
    """The facilitator shows the room a question's right answer on the board before most of the room has run its
    step (to discuss it); stored, so that a reloaded board still shows it."""
    from playground.rooms.answers import question_steps

    if not 0 <= item < len(room.agenda):
        raise CommandError(_("The agenda has items 1 to %(n)d.") % {"n": len(room.agenda)}, status=404)
    if n not in {s.index for s in question_steps(room, item)}:
        raise CommandError(_("Step %(k)d asks no question.") % {"k": n + 1}, status=404)
    with transaction.atomic():
        row = Workshop.objects.select_for_update().get(pk=room.pk)
        shown = dict(row.revealed or {})
        shown[str(item)] = sorted(set(shown.get(str(item), [])) | {n})
        Workshop.objects.filter(pk=room.pk).update(revealed=shown)
    room.revealed = shown
    signals.revealed.send(sender=Workshop, room=room, item=item, n=n)


def set_follow(room: Workshop, on: bool) -> None:
    Workshop.objects.filter(pk=room.pk).update(follow=on)
    signals.follow_changed.send(sender=Workshop, room=room, on=on)


def cookie_names(room_id: str) -> tuple[str, str]:
    return ROOM_COOKIE + room_id, ATTENDEE_COOKIE + room_id


def secrets_from(cookies: Mapping[str, str], room_id: str) -> tuple[str | None, str | None]:
    room_name, attendee_name = cookie_names(room_id)
    return cookies.get(room_name), cookies.get(attendee_name)
