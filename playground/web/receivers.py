"""The web layer listens: what sessions and rooms announce (their signals) becomes live updates of their pages.
Connected once, by `PlaygroundConfig.ready`; the layers below never import this package."""

from __future__ import annotations

from typing import Any

from playground.rooms import signals as room_signals
from playground.session import signals as session_signals
from playground.web import board, broadcast


def _session_changed(sender: Any, live: Any, langs: Any = None, **_: Any) -> None:
    broadcast.publish(live, langs)


def connect() -> None:
    session_signals.changed.connect(_session_changed, dispatch_uid="web.broadcast")
    room_signals.moved.connect(board.on_moved, dispatch_uid="web.board.moved")
    room_signals.follow_changed.connect(board.on_follow_changed, dispatch_uid="web.board.follow")
    room_signals.joined.connect(board.on_joined, dispatch_uid="web.board.joined")
    room_signals.revealed.connect(board.on_revealed, dispatch_uid="web.board.revealed")
