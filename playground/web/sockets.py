"""Open websockets, bounded: per client (its address, behind a trusted proxy the forwarded one) and in all, counted
by this server process. A handshake past either bound is refused (Daphne answers it 403) before any consumer runs;
the count goes down when the connection ends, however it ends.

In-memory and per process on purpose: the count lives exactly as long as the sockets it counts (a process that dies
takes both), and one event loop runs every connection of a process, so no two handshakes race on it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from playground.deploy.clientaddr import client_address
from playground.session import limits

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class WebsocketSlots:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.open: dict[str, int] = {}
        self.total = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        who = client_address(scope) or "?"
        if self.open.get(who, 0) >= limits.limit("websockets_per_client") or self.total >= limits.limit("websockets"):
            log.warning("websocket refused: %d open from this client, %d in all", self.open.get(who, 0), self.total)
            await receive()  # the handshake (websocket.connect), answered:
            await send({"type": "websocket.close", "code": 4429})
            return
        self.open[who] = self.open.get(who, 0) + 1
        self.total += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.total -= 1
            left = self.open[who] - 1
            if left:
                self.open[who] = left
            else:
                del self.open[who]
