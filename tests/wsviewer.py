"""A session viewer without a browser, on the `websockets` library's sync client (websockets.sync.client): what a
remote browser is to the server, a websocket on /ws/s/<id>/ that receives the pushed fragments. For the tests
(two processes, failover) and the benches' extra viewers (tools/bench puts the repository's root on sys.path).

    ws = open_viewer(server.url, sid)           # or open_viewer(port, sid), or through a proxy's url
    snapshot = ws.recv(timeout=10)              # text; TimeoutError when nothing came, ConnectionClosed on close
    ws.send(json.dumps({"type": "ping"}))
    ws.close()

`open_viewer` and `open_socket` return the library's ClientConnection as it is (recv / send / close, `response.headers` of the
handshake); this module only says how a viewer connects, and adds the few loops the callers share.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import ClientConnection, connect

__all__ = [
    "BROWSER_LIKE",
    "ClientConnection",
    "ConnectionClosed",
    "InvalidHandshake",
    "frames_until",
    "htmx_reconnect_delay",
    "open_socket",
    "open_viewer",
    "reconnect",
    "session_url",
]


def _base(server: str | int) -> str:
    return f"http://127.0.0.1:{server}" if isinstance(server, int) else server.rstrip("/")


def session_url(server: str | int, sid: str, query: str = "") -> str:
    """ws://host:port/ws/s/<id>/[?query] for a server given as its http:// base URL (Proc.url) or a loopback port."""
    url = "ws" + _base(server).removeprefix("http") + f"/ws/s/{sid}/"
    return url + (f"?{query}" if query else "")


# Set like a browser, not like the library's defaults: no keepalive pings of our own (browsers send none; the
# server's pings are still answered), no compression (Daphne accepts none), no cap on a frame's size or on the frames
# waiting to be read (a browser reads whatever comes: with a cap the library stops reading the socket and the
# server's pings go unanswered), and never through a proxy from the environment (these are loopback servers). The
# asyncio client takes the same keywords (tools/bench/viewers.py).
BROWSER_LIKE: dict = {
    "close_timeout": 2,
    "ping_interval": None,
    "compression": None,
    "max_size": None,
    "max_queue": None,
    "proxy": None,
}


def open_socket(url: str, origin: str, headers: dict[str, str] | None = None, timeout: float = 10) -> ClientConnection:
    """A websocket as a page opens it: an Origin of the page's own address (Channels' AllowedHostsOriginValidator
    refuses a handshake without an allowed one), BROWSER_LIKE. `legacy=True` is websockets' documented way to get the
    connection itself rather than a context manager (the callers keep sockets open across functions and threads, and
    close them). Raises InvalidHandshake (InvalidStatus for a refused handshake) or OSError / TimeoutError when it
    cannot connect."""
    return connect(
        url, origin=origin, additional_headers=headers or None, open_timeout=timeout, legacy=True, **BROWSER_LIKE
    )


def open_viewer(
    server: str | int, sid: str, *, cookie: str | None = None, query: str = "", timeout: float = 10
) -> ClientConnection:
    """A websocket on the session (open_socket), with the browser's Cookie header when given ("name=value;
    name2=value2": the drive capability, the language)."""
    base = _base(server)
    return open_socket(session_url(base, sid, query), base, {"Cookie": cookie} if cookie else None, timeout)


def frames_until(ws: ClientConnection, needle: str, timeout: float = 10) -> str:
    """The first frame that contains `needle` (earlier ones are read and dropped); AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no frame with {needle!r} within {timeout} s")
        try:
            frame = ws.recv(timeout=left)
        except TimeoutError:
            continue
        if needle in frame:
            return frame


def htmx_reconnect_delay(retry: int, rng: random.Random | None = None) -> float:
    """Seconds before attempt `retry` (0 first), as htmx's ws extension 2.x waits after an abnormal close (codes
    1006, 1012, 1013): its default "full-jitter", a random delay up to 2**min(retry, 6) seconds."""
    return (rng or random).random() * 2 ** min(retry, 6)


def reconnect(
    open_: Callable[[], ClientConnection],
    deadline: float,
    rng: random.Random | None = None,
    on_snapshot: Callable[[str], bool] | None = None,
) -> tuple[ClientConnection, str, int]:
    """Reconnect the way the page does after its socket dropped: wait htmx's delay, try, and on failure wait longer,
    until connected and its snapshot received (the first frame; `on_snapshot` may refuse it, e.g. an error frame,
    and then it counts as a failed try), or until `deadline` (time.monotonic()) has passed: TimeoutError.
    Returns the socket, its snapshot and the number of tries."""
    retry = 0
    while True:
        wait = htmx_reconnect_delay(retry, rng)
        if time.monotonic() + wait > deadline:
            wait = max(0.0, deadline - time.monotonic())
        time.sleep(wait)
        retry += 1
        try:
            ws = open_()
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"not reconnected after {retry} tries: {exc!r}") from exc
            continue
        try:
            snapshot = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
            if on_snapshot is None or on_snapshot(snapshot):
                return ws, snapshot, retry
        except (TimeoutError, ConnectionClosed):
            pass
        ws.close()
        if time.monotonic() >= deadline:
            raise TimeoutError(f"not reconnected after {retry} tries")
