"""The session's websocket: joins the group "session-<id>", then accepts, then sends a full snapshot; afterwards it
forwards the fragments every update carries, in its viewer's language. It translates events into HTML and nothing
else (design.md, principle 5).

What a client may send (JSON): {"type": "ping"} -> a pong frame; {"type": "snapshot"} -> a full snapshot again.
Anything else gets an error frame (an out-of-band fragment for the #ws-error element) and changes nothing.
"""

from __future__ import annotations

import json
import logging
from html import escape
from http.cookies import SimpleCookie

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from playground import broadcast, session
from playground.i18n import normalize

log = logging.getLogger(__name__)

MAX_FRAME = 4096


def _language(scope) -> str:
    """The viewer's language: ?lang=, else Django's language cookie, else Accept-Language, else the default."""
    from urllib.parse import parse_qs

    query = parse_qs((scope.get("query_string") or b"").decode("latin-1"))
    if query.get("lang"):
        return normalize(query["lang"][0])
    headers = dict(scope.get("headers") or [])
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get(b"cookie", b"").decode("latin-1"))
    except Exception:  # noqa: BLE001 - a mangled cookie header is the client's problem
        pass
    if settings.LANGUAGE_COOKIE_NAME in cookie:
        return normalize(cookie[settings.LANGUAGE_COOKIE_NAME].value)
    accept = headers.get(b"accept-language", b"").decode("latin-1").lower()
    return "zh-hans" if accept.startswith("zh") else normalize(None)


def error_frame(message: str) -> str:
    return f'<div id="ws-error" hx-swap-oob="true" class="ws-error" role="alert">{escape(message)}</div>'


class SessionConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.sid = self.scope["url_route"]["kwargs"]["sid"]
        self.lang = _language(self.scope)
        self.group = session.group_name(self.sid)
        if not await database_sync_to_async(session.exists)(self.sid):
            await self.close(code=4404)
            return
        # Join first, accept last, then the snapshot: an update racing with the connect is sent after the snapshot,
        # never lost (the snapshot is rendered after joining, from the database's current log).
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_snapshot()

    async def disconnect(self, code: int) -> None:
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def send_snapshot(self) -> None:
        try:
            html = await database_sync_to_async(self._snapshot)()
        except session.CommandError as exc:
            await self.send(text_data=error_frame(str(exc)))
            return
        except Exception:  # noqa: BLE001 - a viewer gets a message, the server a log line, nobody a dead socket
            log.exception("session %s: snapshot failed", self.sid)
            await self.send(text_data=error_frame("This session cannot be shown right now."))
            return
        await self.send(text_data=html)

    def _snapshot(self) -> str:
        live = session.load(self.sid)
        return broadcast.snapshot(live, self.lang)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None or len(text_data) > MAX_FRAME:
            await self.send(text_data=error_frame("Send JSON text frames of at most 4 KB."))
            return
        try:
            message = json.loads(text_data)
        except ValueError:
            await self.send(text_data=error_frame("Not JSON."))
            return
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "ping":
            await self.send(text_data='<span id="ws-pong" hx-swap-oob="true"></span>')
        elif kind == "snapshot":
            await self.send_snapshot()
        else:
            await self.send(text_data=error_frame(f"Unknown message type {str(kind)[:40]!r}: send ping or snapshot."))

    # ---- group messages: one handler per type
    async def session_update(self, event: dict) -> None:
        html = event.get("html") or {}
        text = html.get(self.lang) or next(iter(html.values()), "")
        if text:
            await self.send(text_data=text)

    async def session_notice(self, event: dict) -> None:
        level = "error" if event.get("level") == "error" else "info"
        await self.send(text_data=f'<div id="ws-notice" hx-swap-oob="true" class="notice {level}">{escape(str(event.get("text", "")))}</div>')
