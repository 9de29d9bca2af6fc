"""What a page shows of what clients wrote: text cut to a bound, bytes and invisible characters made visible.

A session's own actors are bounded where they are declared (an actor's name, a transactional id and a group id at
`name_chars`, a value at `value_bytes`), but the applications connected to its listener are not: a client.id or a
transactional.id is a Kafka string of up to 32,767 characters, a value as large as the broker takes, the bytes
anything at all. So every name and value of theirs a page draws goes through here (issue 30): cut to a bound, with
the rest reachable elsewhere (a record's own link, the list pages, log.json), and made safe to look at, not only to
put in HTML (escaping is the templates'): a key or value that is not UTF-8 shows as escaped bytes, and control and
format characters (a right-to-left override would turn the rest of its line around) show as their escapes.
"""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Any

from playground.session import limits

ELLIPSIS = "…"


def visible(text: str) -> str:
    """`text` with control and format characters (newlines, NUL, bidi overrides, zero-width ones) as escapes."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            out.append(ascii(ch)[1:-1])
        else:
            out.append(ch)
    return "".join(out)


def is_binary(value: Any) -> bool:
    return isinstance(value, (bytes, bytearray, memoryview))


def text(value: Any, n: int) -> str:
    """A value as a page shows it, at most `n` characters (the last one "…" when it was cut): bytes as escaped
    bytes (b'\\xc3('... without the b''), text with its invisible characters escaped."""
    if value is None:
        return ""
    if type(value) is str and len(value) <= n and value.isprintable():
        return value  # most values: shown as they are (a strip's cells ask for thousands an update)
    if is_binary(value):
        raw = bytes(value[: n + 1])
        shown = repr(raw)[2:-1]
        cut = len(value) > n
    else:
        raw_text = str(value)
        shown = visible(raw_text[: n + 1])
        cut = len(raw_text) > n
    if len(shown) > n or cut:
        return shown[: max(0, n - 1)] + ELLIPSIS
    return shown


def name(value: Any) -> str:
    """A name (a client.id, a transactional.id, a group, an actor's) as long as a session's own may be (`name_chars`):
    a longer one is its start, "…" and a digest of the whole, so that two long names with the same start stay two
    (a page uses names as element ids, lanes and columns). A session's own names are shown as they are."""
    whole = "" if value is None else str(value)
    n = limits.limit("name_chars")
    if len(whole) <= n and whole.isprintable():
        return whole
    shown = visible(whole)
    if len(shown) <= n:
        return shown
    digest = hashlib.blake2b(whole.encode("utf-8", "surrogatepass"), digest_size=3).hexdigest()
    return shown[: max(1, n - 1 - len(digest))] + ELLIPSIS + digest


def size(value: Any) -> int:
    """A value's length: bytes for bytes, characters for text (0 for none)."""
    if value is None:
        return 0
    return len(value) if is_binary(value) else len(str(value))


def is_cut(value: Any, n: int) -> bool:
    return size(value) > n


def strings(value: Any, n: int, items: int) -> Any:
    """Every string in a plain structure (lists, dicts) cut to `n` characters, every list to `items` (a finding's
    parameters: values, actors and records as the checker wrote them)."""
    if isinstance(value, str) or is_binary(value):
        return text(value, n)
    if isinstance(value, dict):
        return {k: strings(v, n, items) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strings(v, n, items) for v in list(value)[:items]]
    return value
