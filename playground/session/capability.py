"""Who may drive a session (design.md, principle 7): whoever presents its drive capability.

A capability is 192 random bits, given to the creator's browser in an HttpOnly cookie and shareable as a drive link
whose secret sits in the URL's fragment (`/s/<id>/#drive=<secret>`: a fragment never reaches a server, a proxy or
a Referer header, so it is never logged; the page hands it to the server once, in a POST body, to get the cookie).
The database keeps only its SHA-256, and a presented secret is compared in constant time. Without it a session can
be watched (everything live, every control disabled) and forked, and every command is refused with 403, over HTTP
and over the websocket alike.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from http.cookies import SimpleCookie

COOKIE_PREFIX = "drive_"
COOKIE_MAX_AGE_S = 365 * 24 * 3600


def new_key() -> str:
    return secrets.token_urlsafe(24)  # 24 bytes = 192 bits


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def matches(key: str | None, stored_digest: str) -> bool:
    """Whether `key` is the capability whose digest is stored ("" stored: nobody holds one)."""
    if not key or not stored_digest or len(key) > 128:
        return False
    return hmac.compare_digest(digest(key), stored_digest)


def cookie_name(session_id: str) -> str:
    return f"{COOKIE_PREFIX}{session_id}"


def from_cookies(cookies: Mapping[str, str], session_id: str) -> str | None:
    return cookies.get(cookie_name(session_id))


def from_header(header: str, session_id: str) -> str | None:
    """The session's capability in a raw Cookie header (the websocket's handshake)."""
    return cookie_in(header, cookie_name(session_id))


def cookie_in(header: str, name: str) -> str | None:
    """One cookie's value from a raw Cookie header."""
    jar = SimpleCookie()
    try:
        jar.load(header)
    except Exception:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None
