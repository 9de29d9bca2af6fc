"""A client's share of a server process: its requests carried out at once, and its open websockets. A client is an
address (behind a trusted proxy, the forwarded one: playground/deploy/clientaddr.py).

- RequestSlots: at most `requests_per_client` of a client's HTTP requests run at once in this process; the next
  ones wait their turn (in order, without a thread: here, in the event loop), at most `queued_per_client` of them,
  and past that are answered 429 at once. Then, of every client's running requests, at most
  `requests_in_django_per_client` of one client and `requests_at_once` in all are in Django at a time, let in from
  each client in turn (fair queuing). Each request runs its sync view on a thread of its own (Django's
  ThreadSensitiveContext), so a client whose request is inside does not wait for another client's: without the
  first bound one client's burst of requests (60 join codes guessed at once) filled the process; with one request
  in Django at a time for every client together, an attendee's command waited behind whichever request of the
  attacker's was inside (its gate wait p95 41 ms under the attacks of tools/bench/abuse.py).
- WebsocketSlots: at most `websockets_per_client` open websockets of one client and `websockets` in all; a
  handshake past either is refused (Daphne answers it 403) before any consumer runs, and the count goes down when
  the connection ends, however it ends.

In-memory and per process on purpose: the counts live exactly as long as what they count (a process that dies
takes both), and one event loop runs every connection of a process, so no two requests race on them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from playground.deploy.clientaddr import client_address
from playground.session import limits

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass
class _Client:
    running: int = 0
    waiting: int = 0
    turns: asyncio.Queue[asyncio.Future[None]] = field(default_factory=asyncio.Queue)
    gate: deque[asyncio.Future[None]] = field(default_factory=deque)  # running, waiting to be let into Django
    in_rotation: bool = False
    inside: int = 0  # in Django now


# Served without taking a slot: files, and the health check a load balancer polls.
UNCOUNTED = ("/static/", "/healthz")


class RequestSlots:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.clients: dict[str, _Client] = {}
        self.admitted = 0  # requests in Django now
        self.rotation: deque[str] = deque()  # clients with a request at the gate, in the order they are let in

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope.get("path", "")).startswith(UNCOUNTED):
            await self.app(scope, receive, send)
            return
        who = client_address(scope) or "?"
        c = self.clients.setdefault(who, _Client())
        if c.running >= limits.limit("requests_per_client"):
            if c.waiting >= limits.limit("queued_per_client"):
                log.warning("request refused: %d running and %d waiting for this client", c.running, c.waiting)
                await _too_many(send)
                self._forget(who, c)
                return
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            c.waiting += 1
            await c.turns.put(turn)
            try:
                await turn  # handed over by a request of this client that ended
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._next(who, c)  # the slot was ours already, and we are gone: it passes on
                raise
            finally:
                c.waiting -= 1
        else:
            c.running += 1
        try:
            await self._admit(who, c)
            try:
                await self.app(scope, receive, send)
            finally:
                self._leave(c)
        finally:
            self._next(who, c)

    async def _admit(self, who: str, c: _Client) -> None:
        """Into Django: at once while there is a place, for this client too, and none of its requests waits for one;
        else in turn. (A place freed goes to a waiting client at once, so no other client waits for a free one.)"""
        free = self.admitted < limits.limit("requests_at_once")
        if free and not c.gate and c.inside < limits.limit("requests_in_django_per_client"):
            self._enter(c)
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        c.gate.append(turn)
        if not c.in_rotation:
            c.in_rotation = True
            self.rotation.append(who)
        try:
            await turn  # handed over by `_let_in` (which counted this one in)
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._leave(c)  # let in, and gone: the place passes on
            raise

    def _enter(self, c: _Client) -> None:
        self.admitted += 1
        c.inside += 1

    def _leave(self, c: _Client) -> None:
        self.admitted -= 1
        c.inside -= 1
        self._let_in()

    def _let_in(self) -> None:
        """The free places go to the clients waiting at the gate, in turn, each one's first request still waiting; a
        client with more waiting, or with its share inside already, goes to the back of the line."""
        per_client, at_once = limits.limit("requests_in_django_per_client"), limits.limit("requests_at_once")
        passed_over = 0  # clients visited since the last one let in: a whole round of them, and no one can go in
        while self.rotation and passed_over < len(self.rotation) and self.admitted < at_once:
            who = self.rotation.popleft()
            c = self.clients.get(who)
            if c is None:
                continue
            while c.gate and c.gate[0].done():
                c.gate.popleft()  # its request went away while it waited
            if c.gate and c.inside < per_client:
                self._enter(c)
                c.gate.popleft().set_result(None)
                passed_over = 0
            elif c.gate:
                passed_over += 1
            if c.gate:
                self.rotation.append(who)
            else:
                c.in_rotation = False

    def _next(self, who: str, c: _Client) -> None:
        """A request of `who` ended: its slot goes to the client's next waiting request (still waiting: not one
        whose client went away), else it is freed."""
        while not c.turns.empty():
            turn = c.turns.get_nowait()
            if not turn.done():
                turn.set_result(None)  # the slot passes on: `running` stays as it is
                return
        c.running -= 1
        self._forget(who, c)

    def _forget(self, who: str, c: _Client) -> None:
        if not c.running and not c.waiting and self.clients.get(who) is c:
            del self.clients[who]


async def _too_many(send: Send) -> None:
    body = b"Too many requests from here at once: wait a moment and try again."
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"retry-after", b"1")],
        }
    )
    await send({"type": "http.response.body", "body": body})


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
