"""What the processes serving a session share about its live updates: the languages its pages are open in right now,
and the digests of the last frame sent (so that whichever process applies the next command sends only what changed,
rendered only in those languages).

With the in-memory channel layer there is one process: both live in this module's dictionaries. With the Redis
channel layer (several Daphne processes), in Redis beside it: a hash per session of its open pages (websocket
channel -> language) and the last frame's digests, each key expiring a day after it was last written (a process that
died leaves at most a language rendered for nobody until then). Redis being down is not an error here: the caller
renders every language the session was ever opened in and sends whole panels, as if nothing were known.
"""

from __future__ import annotations

import logging
import marshal
import threading
import time
from collections import Counter
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

KEY_TTL_S = 24 * 3600
REDIS_TIMEOUT_S = 0.5
_RETRY_AFTER_S = 5.0  # after a Redis error, this process does not ask again for a while: no timeout on every command

_lock = threading.Lock()
_viewers: dict[str, Counter[str]] = {}  # session id -> open pages per language (this process)
_frames: dict[str, bytes] = {}  # session id -> the last frame's digests (this process)
_clients: dict[str, Any] = {}
_down_until = 0.0


def redis_url() -> str:
    """The Redis of the channel layer, when it is channels_redis' ("" with the in-memory layer)."""
    layer = (getattr(settings, "CHANNEL_LAYERS", {}) or {}).get("default", {})
    if "channels_redis" not in str(layer.get("BACKEND", "")):
        return ""
    hosts = (layer.get("CONFIG") or {}).get("hosts") or [""]
    host = hosts[0]
    return str(host.get("address", "") if isinstance(host, dict) else host)


def _redis() -> Any:
    url = redis_url()
    if not url or time.monotonic() < _down_until:
        return None
    with _lock:
        client = _clients.get(url)
        if client is None:
            import redis

            client = _clients[url] = redis.Redis.from_url(
                url, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S
            )
    return client


def _failed(what: str, exc: Exception) -> None:
    global _down_until
    _down_until = time.monotonic() + _RETRY_AFTER_S
    log.warning("live updates: %s through Redis failed (%s): rendering every language, whole panels", what, exc)


def _viewers_key(sid: str) -> str:
    return f"playground:viewers:{sid}"


def _frame_key(sid: str) -> str:
    return f"playground:frame:{sid}"


def uses_redis() -> bool:
    return bool(redis_url())


# ---- the pages open right now
def viewer_opened(sid: str, lang: str, channel: str) -> None:
    """A page of the session opened in `lang` (its websocket `channel`). Blocking with Redis: call it off the event
    loop."""
    client = _redis()
    if client is not None:
        try:
            pipe = client.pipeline()
            pipe.hset(_viewers_key(sid), channel, lang)
            pipe.expire(_viewers_key(sid), KEY_TTL_S)
            pipe.execute()
        except Exception as exc:
            _failed("a page's language", exc)
        return
    if not uses_redis():
        with _lock:
            _viewers.setdefault(sid, Counter())[lang] += 1


def viewer_closed(sid: str, lang: str, channel: str) -> None:
    client = _redis()
    if client is not None:
        try:
            client.hdel(_viewers_key(sid), channel)
        except Exception as exc:
            _failed("a page closing", exc)
        return
    if not uses_redis():
        with _lock:
            open_ = _viewers.get(sid)
            if open_ is not None:
                open_[lang] -= 1
                if open_[lang] <= 0:
                    del open_[lang]
                if not open_:
                    del _viewers[sid]


def open_langs(sid: str) -> tuple[str, ...] | None:
    """The languages the session's pages are open in right now (sorted; () when nobody watches), or None when that
    cannot be known (Redis is down)."""
    if uses_redis():
        client = _redis()
        if client is None:
            return None
        try:
            values = client.hvals(_viewers_key(sid))
        except Exception as exc:
            _failed("the open pages", exc)
            return None
        return tuple(sorted({v.decode() if isinstance(v, bytes) else str(v) for v in values}))
    with _lock:
        return tuple(sorted(_viewers.get(sid, ())))


# ---- the last frame
def swap_frame(sid: str, frame: tuple[int, dict[str, str], dict[str, dict[str, str]]]) -> Any:
    """Store this frame's (version, panel digests, item digests) and return the previous one (None: unknown)."""
    data = marshal.dumps(frame, 2)
    client = _redis() if uses_redis() else None
    if uses_redis():
        if client is None:
            return None
        try:
            old = client.set(_frame_key(sid), data, ex=KEY_TTL_S, get=True)
        except Exception as exc:
            _failed("the last frame", exc)
            return None
    else:
        with _lock:
            old = _frames.get(sid)
            _frames[sid] = data
    try:
        return marshal.loads(old) if old else None
    except Exception:
        return None


def forget(sid: str) -> None:
    """Nobody got the last frame: the next one must not be a difference from it."""
    if uses_redis():
        client = _redis()
        if client is not None:
            try:
                client.delete(_frame_key(sid))
            except Exception as exc:
                _failed("forgetting the last frame", exc)
        return
    with _lock:
        _frames.pop(sid, None)


def clear() -> None:
    """This process's part (tests)."""
    global _down_until
    with _lock:
        _viewers.clear()
        _frames.clear()
        _clients.clear()
    _down_until = 0.0
