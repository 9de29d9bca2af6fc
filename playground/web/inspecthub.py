"""Live inspector pages: one subscription per selection per server process, shared by every viewer of it.

A websocket viewer (inspectviews.InspectConsumer) joins its selection's channel-layer group and registers here. The
first viewer of a selection subscribes to the process's inspector (ClusterInspector.subscribe: one polling thread
for the whole process reads the cluster every INSPECTOR_POLL_INTERVAL_S); each report is rendered once per language
its viewers use, and only the fragments that changed go to the group, in one message; the last viewer to leave
closes the subscription. The group's name carries this process's token: with Redis as the channel layer, viewers
served by another process have their own subscription there and never get this one's fragments as well.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from channels.layers import get_channel_layer

from playground.inspector.observer import get_inspector
from playground.web import inspectpage as web

log = logging.getLogger(__name__)

PROCESS = secrets.token_hex(4)
MESSAGE_TYPE = "inspect.update"
SEND_TIMEOUT_S = 10


@dataclass
class Watch:
    sel: web.Selection
    group: str
    loop: asyncio.AbstractEventLoop
    viewers: dict[str, str] = field(default_factory=dict)  # channel name -> language
    sub: Any = None
    rendered: dict[str, web.Rendered] = field(default_factory=dict)  # language -> what its viewers were sent last
    ctx: dict[str, Any] | None = None  # the last report's contexts (for a viewer in a language not rendered yet)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False


class Hub:
    def __init__(self) -> None:
        self._watches: dict[str, Watch] = {}
        self._lock = threading.Lock()

    @staticmethod
    def group(sel: web.Selection) -> str:
        return f"inspect-{sel.key()}-{PROCESS}"

    def watching(self) -> dict[str, int]:
        """Viewers per selection (tests, the bench)."""
        with self._lock:
            return {w.sel.query(): len(w.viewers) for w in self._watches.values()}

    def join(self, sel: web.Selection, channel: str, lang: str, loop: asyncio.AbstractEventLoop) -> str:
        """Register a viewer and return what to send it now: the sections its group was sent last ("" before the
        first report, which the subscription's first poll brings to the whole group). Call it from a thread: the
        first viewer's subscribe may wait for the inspector's lock while it reads the cluster for someone else."""
        with self._lock:
            w = self._watches.get(sel.key())
            if w is None:
                w = self._watches[sel.key()] = Watch(sel, self.group(sel), loop)
            w.viewers[channel] = lang
            w.loop = loop
        with w.lock:
            if w.sub is None:
                w.sub = get_inspector().subscribe(lambda report: self._on_report(w, report), **sel.inspect_kwargs())
            if w.ctx is None:
                return ""
            if lang not in w.rendered:
                w.rendered[lang] = web.render_all(w.ctx, sel, lang)
            return w.rendered[lang].snapshot()

    def leave(self, sel: web.Selection, channel: str) -> None:
        with self._lock:
            w = self._watches.get(sel.key())
            if w is None:
                return
            w.viewers.pop(channel, None)
            if w.viewers:
                return
            del self._watches[sel.key()]
        with w.lock:
            w.closed = True
            if w.sub is not None:
                w.sub.close()

    def _on_report(self, w: Watch, report: dict[str, Any]) -> None:
        """From the inspector's polling thread: render once per language, send what changed to the group."""
        with w.lock:
            if w.closed:
                return
            langs = sorted(set(w.viewers.values()))
            out: dict[str, str] = {}
            if "error" in report:
                # the cluster cannot be read right now: say so, keep showing the last good read
                out = {
                    lang: web.render_section("status", {"error": report["error"], "status": None}, w.sel, lang)
                    for lang in langs
                }
            else:
                w.ctx = web.contexts(report, w.sel)
                for lang in langs:
                    fresh = web.render_all(w.ctx, w.sel, lang)
                    text = fresh.changes(w.rendered.get(lang))
                    w.rendered[lang] = fresh
                    if text:
                        out[lang] = text
            if out and not self._send(w, out):
                w.rendered.clear()  # nobody got it: the next update must not be a difference from it

    @staticmethod
    def _send(w: Watch, html: dict[str, str]) -> bool:
        layer = get_channel_layer()
        if layer is None or w.loop.is_closed():  # closed: the server (or a test's loop) is gone, with its viewers
            return False
        try:
            # the group lives in the server's event loop: hand the send over to it (the in-memory layer's queues
            # are not thread-safe), and wait, so that updates keep their order
            done = asyncio.run_coroutine_threadsafe(
                layer.group_send(w.group, {"type": MESSAGE_TYPE, "html": html}), w.loop
            )
            done.result(timeout=SEND_TIMEOUT_S)
            return True
        except Exception:
            log.exception("inspector: sending to %s failed", w.group)
            return False


HUB = Hub()
