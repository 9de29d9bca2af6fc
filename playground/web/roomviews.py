"""Workshop pages: join a room, run one (the facilitator's board), and the room's commands. Thin, like views.py:
a form, one `rooms` function, an answer."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from playground import rooms, session
from playground.engine.spec import DEFAULT_PROFILE
from playground.models import Attendee, Seat, Workshop
from playground.scenario import library
from playground.scenario.i18n import normalize
from playground.session import capability, compare, limits, listener
from playground.web import broadcast, forms, panels
from playground.web.board import CARD_PANELS, blank_card, card
from playground.web.http import Refusal, answers_problems, client, problem, refuses_with

COOKIE_MAX_AGE_S = capability.COOKIE_MAX_AGE_S


def _cookie(response: HttpResponse, request: HttpRequest, name: str, value: str) -> None:
    response.set_cookie(
        name, value, max_age=COOKIE_MAX_AGE_S, httponly=True, samesite="Lax", secure=request.is_secure()
    )


def _room(code: str) -> Workshop:
    room = rooms.by_code(code)
    if room is None:
        raise Http404(_("No workshop has this code."))
    return room


def facilitator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Only the room's capability (the facilitator's browser) passes; anyone else gets 403."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, code: str, *args: Any, **kwargs: Any) -> HttpResponse:
        room = _room(code)
        room_secret, _att = rooms.secrets_from(request.COOKIES, room.pk)
        if not rooms.is_facilitator(room, room_secret):
            return problem(_("Only the facilitator of this workshop can do this."), 403)
        return view(request, room, room_secret, *args, **kwargs)

    return wrapper


# --------------------------------------------------------------------------------------------------- pages
@require_GET
def join_page(request: HttpRequest) -> HttpResponse:
    return render(request, "playground/rooms/join.html", {"code": request.GET.get("code", "")[:6].upper()})


def _join_refused(request: HttpRequest, refusal: Refusal) -> HttpResponse:
    """The join page again with the sentence (a NUL, a charset: badinput.py), as for a form error."""
    code = request.POST.get("code", "")[:6].replace("\x00", "")
    return render(request, "playground/rooms/join.html", {"error": refusal.said, "code": code}, status=400)


@require_POST
@refuses_with(_join_refused)
@answers_problems
def join(request: HttpRequest) -> HttpResponse:
    d = forms.JoinForm(request.POST)
    if not d.is_valid():
        return render(
            request,
            "playground/rooms/join.html",
            {"error": d.message(), "code": request.POST.get("code", "")[:6]},
            status=400,
        )
    code = d.cleaned_data["code"]
    known = rooms.by_code(code)
    secret = rooms.secrets_from(request.COOKIES, known.pk)[1] if known else None
    try:
        room, _attendee, secret = rooms.join(known, code, d.cleaned_data["name"], client=client(request), secret=secret)
    except session.CommandError as exc:
        return render(
            request,
            "playground/rooms/join.html",
            {"error": str(exc), "code": code, "name": d.cleaned_data["name"]},
            status=exc.status,
        )
    except limits.LimitExceeded as exc:
        return render(request, "playground/rooms/join.html", {"error": str(exc), "code": code}, status=exc.status)
    response = redirect("room", code=room.code)
    _cookie(response, request, rooms.cookie_names(room.pk)[1], secret)
    return response


@require_GET
def new_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "playground/rooms/new.html",
        {
            "entries": [e for e in library.entries() if e.scenario],
            "profiles": [(compare.profile_text(p), p.label) for p in compare.PROFILES],
        },
    )


@require_POST
@answers_problems
def create(request: HttpRequest) -> HttpResponse:
    form = forms.NewWorkshopForm(request.POST)
    if not form.is_valid():
        return problem(form.message())
    chosen = request.POST.getlist("scenario")[: limits.limit("room_items") + 1]  # one more: "at most n" is said

    def position(item: tuple[int, str]) -> tuple[int, int]:
        raw = request.POST.get(f"order-{item[1]}", "")
        # str.isdigit() also takes "²", which int() refuses
        return (int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 6 else 1000 + item[0], item[0])

    ordered = [sid for _i, sid in sorted(enumerate(chosen), key=position)]
    # An item's profile: empty is the scenario's own; anything but a profile of this playground is a 400 naming it.
    profiles = {
        sid: compare.profile_from_text(f"profile-{sid}", request.POST.get(f"profile-{sid}"), DEFAULT_PROFILE)
        for sid in ordered
        if request.POST.get(f"profile-{sid}")
    }
    room, secret = rooms.create(form.cleaned_data["title"], ordered, client=client(request), profiles=profiles)
    response = redirect("board", code=room.code)
    _cookie(response, request, rooms.cookie_names(room.pk)[0], secret)
    return response


@require_GET
@answers_problems
def room(request: HttpRequest, code: str) -> HttpResponse:
    """An attendee's way into the room: their own session for the item the room is on (the facilitator's, for
    the facilitator)."""
    room = _room(code)
    room_secret, attendee_secret = rooms.secrets_from(request.COOKIES, room.pk)
    attendee = rooms.attendee_of(room, attendee_secret)
    owner: Attendee | None
    if attendee is not None and attendee_secret:  # attendee_of found them by this secret
        owner, secret = attendee, attendee_secret
    elif room_secret and rooms.is_facilitator(room, room_secret):
        owner, secret = None, room_secret
    else:
        return redirect(reverse("join") + f"?code={room.code}")
    sid, key = rooms.seat(room, owner, room.current, secret)
    response = redirect("session", sid=sid)
    _cookie(response, request, capability.cookie_name(sid), key)
    return response


@require_GET
@facilitator
def board(request: HttpRequest, room: Workshop, room_secret: str) -> HttpResponse:
    lang = normalize(get_language())
    item = room.current
    mine = rooms.facilitator_session(room, item)
    return render(
        request,
        "playground/rooms/board.html",
        {
            "room": room,
            "item": item,
            "agenda": room.agenda,
            # the profile an item's sessions run in, where the facilitator chose one other than the scenario's
            "profiles": [p.label if (p := rooms.item_profile(a)) else "" for a in room.agenda],
            "cards": _cards(room, item),
            "lang": lang,
            "questions": rooms.questions(room, item),
            "code": room.code,
            "mine": mine,
            "join_link": request.build_absolute_uri(reverse("join") + f"?code={room.code}"),
        },
    )


@require_POST
@facilitator
def move(request: HttpRequest, room: Workshop, room_secret: str) -> HttpResponse:
    form = forms.MoveForm(request.POST)
    if not form.is_valid():
        return problem(form.message())
    item = form.cleaned_data["item"]
    try:
        if room.follow and 0 <= item < len(room.agenda):
            rooms.seat(room, None, item, room_secret)  # the attendees' pages follow the facilitator's new session
        rooms.move(room, item)
    except session.CommandError as exc:
        return problem(str(exc), exc.status)
    return HttpResponse(status=204, headers={"HX-Refresh": "true"})


@require_POST
@facilitator
def reveal(request: HttpRequest, room: Workshop, room_secret: str) -> HttpResponse:
    """The board shows a question's right answer before most of the room has run its step."""
    form = forms.RevealForm(request.POST)
    if not form.is_valid():
        return problem(form.message())
    try:
        rooms.reveal(room, room.current, form.cleaned_data["n"])
    except session.CommandError as exc:
        return problem(str(exc), exc.status)
    return HttpResponse(status=204)


@require_POST
@facilitator
def follow(request: HttpRequest, room: Workshop, room_secret: str) -> HttpResponse:
    on = request.POST.get("on") in ("1", "true", "on")
    if on:
        rooms.seat(room, None, room.current, room_secret)  # the facilitator's session for the item exists
    rooms.set_follow(room, on)
    return HttpResponse(status=204, headers={"HX-Refresh": "true"})


@require_GET
def questions_fragment(request: HttpRequest, code: str) -> HttpResponse:
    """The room's answers to the current item's questions (the board reloads it as answers come in)."""
    room = _room(code)
    room_secret, _att = rooms.secrets_from(request.COOKIES, room.pk)
    if not rooms.is_facilitator(room, room_secret):
        return problem(_("Only the facilitator of this workshop can do this."), 403)
    return render(
        request,
        "playground/rooms/_questions.html",
        {"questions": rooms.questions(room, room.current), "lang": normalize(get_language()), "code": room.code},
    )


def room_context(live: Any, request: HttpRequest) -> dict[str, Any] | None:
    """What a seat's session page shows of its room: the room bar, follow-me."""
    seat_info = getattr(live, "seat", None)
    if not seat_info:
        return None
    room = Workshop.objects.filter(pk=seat_info["room"]).first()
    if room is None:
        raise Http404
    follow_sid = rooms.facilitator_session(room, room.current) if room.follow else None
    return {
        "room": room,
        "item": seat_info["item"],
        "current": room.current,
        "name": seat_info["name"],
        "facilitator": seat_info["attendee"] is None,
        "follow": follow_sid if follow_sid != live.session_id else None,
        "title": room.agenda[seat_info["item"]]["title"],
        "count": len(room.agenda),
    }


def card_contexts(live: Any) -> dict[str, dict[str, Any]]:
    """The panels' contexts a card is made of, and only those (the board's first render makes 40 cards)."""
    with listener.reading(live):
        view = broadcast.view_of(live)
        return {name: panels.BUILDERS[name](live, view) for name in CARD_PANELS}


def _cards(room: Workshop, item: int) -> list[dict[str, Any]]:
    """Every attendee's card for an agenda item (the board's first render): sessions replayed as needed. A session
    with no command yet is the item's scenario as it starts, the same for everyone: one is loaded for them all (a
    room that has just moved on has forty)."""
    out = []
    seats = {
        s["attendee_id"]: (s["session_id"], s["session__length"])
        for s in Seat.objects.filter(workshop=room, item=item, attendee__isnull=False).values(
            "attendee_id", "session_id", "session__length"
        )
    }
    as_it_starts: dict[str, Any] | None = None
    for attendee in Attendee.objects.filter(workshop=room):
        sid, length = seats.get(attendee.pk, (None, 0))
        if sid is None:
            out.append(blank_card(attendee))
        elif length:
            live = session.load(sid)
            out.append(card(live, card_contexts(live)))
        else:
            if as_it_starts is None:
                live = session.load(sid)
                as_it_starts = card(live, card_contexts(live))
            out.append({**as_it_starts, "session": sid, "attendee": attendee.pk, "name": attendee.name})
    return out
