"""The session's websocket: joins the group "session-<id>", then accepts, then sends a full snapshot; afterwards it
forwards the fragments every update carries, in its viewer's language. It translates events into HTML and nothing
else (design.md, principle 5).

What a client may send (JSON text frames of at most 4 KB):
- {"type": "ping"} -> a pong frame; {"type": "snapshot"} -> a full snapshot again.
- {"type": "at", "step": k} -> step k of the session, for this viewer only; while a viewer holds an earlier step,
  updates bring it only the time slider's track. {"type": "live"} -> back to the live session (a full snapshot).
- {"type": "command", "command": NAME, "data": {...}, "idempotency_key": KEY (optional)} -> one of
  commands.COMMANDS, exactly as over HTTP, behind the same drive capability (the handshake's cookie): without it, a
  403 error frame and nothing changes. A key seen before in the session gets the first answer again.
Anything else gets an error frame (an out-of-band fragment for the #ws-error element) and changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from html import escape
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext
from django.utils.translation import gettext_noop as N_

from playground import session
from playground.deploy.clientaddr import client_address
from playground.models import Session
from playground.scenario.i18n import normalize
from playground.session import capability, limits
from playground.web import board, broadcast, commands, fanout

log = logging.getLogger(__name__)

MAX_FRAME = 4096
# What a session's or a room's id can be (models.new_slug, at most 32 characters): anything else is no such thing,
# told before its name goes into a channel-layer group's (which takes only these characters).
ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
ANSWERS_COALESCE_MS = 250  # the board's answer bars: at most 4 renders a second however fast the room answers


def _headers(scope) -> dict[bytes, bytes]:
    return dict(scope.get("headers") or [])


def _language(scope) -> str:
    """The viewer's language: ?lang=, else Django's language cookie, else Accept-Language, else the default."""
    query = parse_qs((scope.get("query_string") or b"").decode("latin-1"))
    if query.get("lang"):
        return normalize(query["lang"][0])
    headers = _headers(scope)
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get(b"cookie", b"").decode("latin-1"))
    except Exception:
        pass
    if settings.LANGUAGE_COOKIE_NAME in cookie:
        return normalize(cookie[settings.LANGUAGE_COOKIE_NAME].value)
    accept = headers.get(b"accept-language", b"").decode("latin-1").lower()
    return "zh-hans" if accept.startswith("zh") else normalize(None)


def _step_of(value) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    text = str(value)
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else None  # not "²": int() refuses it


def error_frame(message: str) -> str:
    return f'<div id="ws-error" hx-swap-oob="true" class="ws-error" role="alert">{escape(message)}</div>'


def moment_frame(at: int | None, length: int) -> str:
    """Tells the page which step it is showing (the slider follows it): live, or step k of n."""
    value = "live" if at is None else str(at)
    return f'<span id="ws-moment" hx-swap-oob="true" data-at="{value}" data-length="{length}"></span>'


def current_frame(version: int, length: int) -> str:
    """What a page rendered at the session's current version gets instead of a snapshot: it is live at that version."""
    return f'<span id="state-version" data-version="{int(version)}" hx-swap-oob="true"></span>' + moment_frame(
        None, length
    )


class Consumer(AsyncWebsocketConsumer):
    """Channels' websocket consumer without a thread hop before every message. Since Channels 4.2, `dispatch` awaits
    `aclose_old_connections()` (a sync_to_async call) before each handler, so that a handler's database work never
    meets a connection the database has closed meanwhile. Ours reach the database only through
    `database_sync_to_async`, which closes old connections around each call, in the thread that uses them. The hop
    before forwarding an update was cost alone: one trip to the process's database thread per viewer per update,
    queued behind every other socket's (a session's hundredth viewer waited for 99 of them). Disconnecting keeps
    Channels' own clean-up."""

    def said(self, message: str, **params: object) -> str:
        """An error frame saying `message` (a msgid) in this socket's viewer's language."""
        with translation.override(getattr(self, "lang", None) or settings.LANGUAGE_CODE):
            return error_frame(gettext(message) % params if params else gettext(message))

    async def dispatch(self, message: dict) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)


class SessionConsumer(Consumer):
    drives = False  # this viewer holds the session's drive capability (read as the socket opens)

    async def connect(self) -> None:
        self.sid = self.scope["url_route"]["kwargs"]["sid"]
        self.lang = _language(self.scope)
        self.group = session.group_name(self.sid)
        self.key = capability.from_header(_headers(self.scope).get(b"cookie", b"").decode("latin-1"), self.sid)
        query = parse_qs((self.scope.get("query_string") or b"").decode("latin-1"))
        self.at = _step_of(query.get("at", [""])[0])  # held at an earlier step (None: live)
        shown = _step_of(query.get("v", [""])[0])  # the version the page was rendered at, when it says so
        if not ID.fullmatch(self.sid):
            await self.close(code=4404)
            return
        # Join first, accept last, then the snapshot: an update racing with the connect is sent after the snapshot,
        # never lost (the snapshot is rendered after joining, from the database's current log).
        await self.channel_layer.group_add(self.group, self.channel_name)
        now = await database_sync_to_async(self._opening)()
        if now is None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.close(code=4404)
            return
        await self.accept()
        session.ensure_watchdog()  # this process serves pages: it takes over runs whose process died
        if shown is not None and self.at is None and now[0] == shown:
            # A page that was just rendered at the version the session is still at shows it already: no snapshot
            # (a room moving on opens 40 pages at once; each rendered every panel twice). Read after joining the
            # group: whatever changes from here on comes as an update.
            await self.send(text_data=current_frame(now[0], now[1]))
            return
        await self.send_snapshot()

    def _opening(self) -> tuple[int, int] | None:
        """The session exists: its version and length, read once for the connect (None: no such session); its
        updates are rendered in this page's language from now on."""
        row = Session.objects.filter(pk=self.sid).values_list("viewer_langs", "version", "length").first()
        if row is None:
            return None
        langs, version, length = row
        if self.lang not in session.store.parse_langs(langs):
            # every language ever opened: when fanout cannot tell
            session.store.add_viewer_lang(self.sid, self.lang, stored=langs)
        fanout.viewer_opened(self.sid, self.lang, self.channel_name)  # updates are rendered in the open ones
        self.counted = True
        self.drives = capability.matches(self.key, session.drive_key(self.sid))
        return version, length

    async def disconnect(self, code: int) -> None:
        if getattr(self, "counted", False):
            self.counted = False
            if fanout.uses_redis():
                await database_sync_to_async(fanout.viewer_closed)(self.sid, self.lang, self.channel_name)
            else:
                fanout.viewer_closed(self.sid, self.lang, self.channel_name)
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def send_snapshot(self) -> None:
        try:
            html = await database_sync_to_async(self._snapshot)()
        except session.CommandError as exc:
            if self.at is not None:  # a step that is not (or no longer) in the log: back to live
                self.at = None
                await self.send(text_data=error_frame(str(exc)))
                await self.send_snapshot()
                return
            await self.send(text_data=error_frame(str(exc)))
            return
        except Exception:
            log.exception("session %s: snapshot failed", self.sid)
            await self.send(text_data=self.said(N_("This session cannot be shown right now.")))
            return
        await self.send_frames(html)

    async def send_frames(self, text: str) -> None:
        for frame in broadcast.frames(text, limits.limit("frame_bytes")):
            await self.send(text_data=frame)

    def _snapshot(self) -> str:
        head = session.load(self.sid)
        if self.at is None:
            return broadcast.snapshot(head, self.lang, drives=self.drives) + moment_frame(None, head.step_count)
        at = session.moment(self.sid, self.at)
        return broadcast.snapshot(at, self.lang, head=head, drives=self.drives) + moment_frame(self.at, head.step_count)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None or len(text_data) > MAX_FRAME:
            await self.send(text_data=self.said(N_("Send JSON text frames of at most 4 KB.")))
            return
        try:
            message = json.loads(text_data)
        except ValueError:
            await self.send(text_data=self.said(N_("Not JSON.")))
            return
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "ping":
            await self.send(text_data='<span id="ws-pong" hx-swap-oob="true"></span>')
        elif kind == "snapshot":
            await self.send_snapshot()
        elif kind == "at":
            step = _step_of(message.get("step"))
            if step is None:
                await self.send(text_data=self.said(N_("at: send the step as a whole number, 0 or more.")))
                return
            self.at = step
            await self.send_snapshot()
        elif kind == "live":
            self.at = None
            await self.send_snapshot()
        elif kind == "command":
            await self.command(message)
        else:
            await self.send(
                text_data=self.said(
                    N_("Unknown message type %(type)s: send ping, snapshot, at, live or command."),
                    type=repr(str(kind)[:40]),
                )
            )

    async def command(self, message: dict) -> None:
        name, data = message.get("command"), message.get("data") or {}
        idempotency_key = message.get("idempotency_key")
        if (
            not isinstance(name, str)
            or not isinstance(data, dict)
            or not isinstance(idempotency_key, (str, type(None)))
        ):
            await self.send(
                text_data=error_frame('command: send {"command": NAME, "data": {...}[, "idempotency_key": KEY]}.')
            )
            return
        done = await database_sync_to_async(self._execute)(
            name, {str(k): str(v) for k, v in data.items()}, idempotency_key
        )
        if done.status >= 400:
            await self.send(text_data=error_frame(f"{done.status}: {done.body}" if done.status == 403 else done.body))
        elif done.command is not None and done.command.starts_runner:
            session.ensure_runner(self.sid)

    def _execute(self, name: str, data: dict, idempotency_key: str | None) -> commands.Answer:
        with translation.override(self.lang):
            client = session.client_key(client_address(self.scope))
            # No waiting here for a first request still being carried out: this thread serves every socket's
            # database calls in this process.
            return commands.answer(
                name, self.sid, data, self.key, idempotency_key=idempotency_key, wait_s=0, client=client
            )

    # ---- group messages: one handler per type
    async def session_update(self, event: dict) -> None:
        # A viewer holding an earlier step gets the slider's track only (the log grows under it).
        # Whoever drives the session gets its own rendering of the panels that differ for them, when the update has any.
        live_parts = event.get("drive") if self.drives and event.get("drive") else event.get("html")
        parts = live_parts if self.at is None else event.get("scrub")
        text = (parts or {}).get(self.lang)
        if text is None:
            # Rendered before this page's language was known to the session (it opened meanwhile): everything again.
            await self.send_snapshot()
        elif text:
            await self.send_frames(text)


class RoomConsumer(Consumer):
    """A workshop's pages: every attendee's (the room moved to another item, follow-me switched) and the
    facilitator's board (each attendee's card as it changes, the room's answers). Only the room's facilitator and
    its attendees connect; the board's messages reach only the facilitator."""

    answers_due: asyncio.Task[None] | None = None  # the board's render of the room's answers, when one is due

    async def connect(self) -> None:
        self.room_id = self.scope["url_route"]["kwargs"]["room"]
        self.lang = _language(self.scope)
        if not ID.fullmatch(self.room_id):
            await self.close(code=4404)
            return
        cookie = _headers(self.scope).get(b"cookie", b"").decode("latin-1")
        # The room's group first: a move or a follow switch made while this page was loading is in what _opening
        # reads next, and one made after it comes as a message.
        self.groups_joined = [board.room_group(self.room_id)]
        await self.channel_layer.group_add(self.groups_joined[0], self.channel_name)
        refused, frame = await database_sync_to_async(self._opening)(cookie)
        if refused:
            await self.channel_layer.group_discard(self.groups_joined.pop(), self.channel_name)
            await self.close(code=refused)
            return
        if self.board:
            self.groups_joined.append(board.board_group(self.room_id))
            await self.channel_layer.group_add(self.groups_joined[1], self.channel_name)
        await self.accept()
        await self.send(text_data=frame)

    def _opening(self, cookie: str) -> tuple[int, str]:
        """Who connects and where the room is, in one trip to the database thread: 4404 (no such room), 4403
        (neither its facilitator nor one of its attendees), or 0 and the room's item and follow-me for the page."""
        from playground import rooms
        from playground.models import Workshop

        room = Workshop.objects.filter(pk=self.room_id).first()
        if room is None:
            return 4404, ""
        room_name, attendee_name = rooms.cookie_names(room.pk)
        self.board = rooms.is_facilitator(room, capability.cookie_in(cookie, room_name))
        if not self.board and rooms.attendee_of(room, capability.cookie_in(cookie, attendee_name)) is None:
            return 4403, ""
        self.room_id, self.code = room.pk, room.code
        src = board.follow_src(rooms.follow_session(self.room_id, {"current": room.current, "follow": room.follow}))
        return 0, self._state_frame(item=room.current, follow=room.follow, src=src)

    async def disconnect(self, code: int) -> None:
        if self.answers_due is not None:
            self.answers_due.cancel()
        for group in getattr(self, "groups_joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data and len(text_data) <= MAX_FRAME and text_data.strip() == '{"type": "ping"}':
            await self.send(text_data='<span id="ws-pong" hx-swap-oob="true"></span>')
        else:
            await self.send(text_data=self.said(N_("This socket only listens: send nothing but ping.")))

    # ---- group messages: one handler per type
    def _state_frame(self, item: int | None = None, follow: bool | None = None, src: str = "") -> str:
        """The room's item and follow-me, for rooms.js to compare with what the page shows (data-item, data-follow);
        with follow-me, the panel's frame to dock (data-follow-src, "" when there is none)."""
        attrs = ""
        if item is not None:
            # Every page of the room's goes to its own session for the new item (/w/<code>/ seats the facilitator
            # too); the board's page to the board: a facilitator has both open, and each tab stays what it is.
            attrs += f' data-goto="/w/{escape(self.code)}/" data-item="{int(item)}"'
            if self.board:
                attrs += f' data-board="/w/{escape(self.code)}/board/"'
        if follow is not None:
            attrs += f' data-follow="{"on" if follow else "off"}" data-follow-src="{escape(src if follow else "")}"'
        return f'<div id="room-move" hx-swap-oob="true"{attrs}></div>'

    async def room_moved(self, event: dict) -> None:
        await self.send(text_data=self._state_frame(item=event["item"]))

    async def room_follow(self, event: dict) -> None:
        await self.send(text_data=self._state_frame(follow=bool(event.get("on")), src=str(event.get("src") or "")))

    async def room_seat(self, event: dict) -> None:
        if self.board:
            from playground.web.board import render_card

            await self.send(text_data=render_card(event["card"], self.lang, count=event.get("count")))

    async def room_answers(self, event: dict) -> None:
        # A room answering at once sends one message per answer; rendering the questions for each would queue the
        # board's card updates behind them (a consumer handles its messages one at a time). One render per
        # ANSWERS_COALESCE_MS, off the message loop, shows them all.
        if self.board and self.answers_due is None:
            self.answers_due = asyncio.create_task(self._send_questions())

    async def _send_questions(self) -> None:
        await asyncio.sleep(ANSWERS_COALESCE_MS / 1000)
        self.answers_due = None
        await self.send(text_data=await database_sync_to_async(self._questions)())

    def _questions(self) -> str:
        from django.template.loader import render_to_string

        from playground import rooms
        from playground.models import Workshop

        room = Workshop.objects.get(pk=self.room_id)
        with translation.override(self.lang):
            return render_to_string(
                "playground/rooms/_questions.html",
                {"questions": rooms.questions(room, room.current), "lang": self.lang, "oob": True, "code": room.code},
            )
