"""A record's value as a history keeps it: whole up to VALUE_CHARS, a long one as its start, its length and a digest.

Both engines' histories and the anomaly checker (playground/scenario/anomalies.py) match writes to reads by value;
an application connected to a session may write values of a megabyte, and a history of five thousand operations (or a
checker's maps keyed by value) holding them whole would hold gigabytes. `identity` gives a long value a short stand-in
that two different values do not share (SHA-256 of the whole value) and that maps to itself (the stand-in is
shorter than VALUE_CHARS), so that the history and the checker, each applying it, agree. A scenario's own values are
at most 1,024 bytes (session/limits.py's `value_bytes`): they are kept whole.
"""

from __future__ import annotations

import hashlib
from typing import Any

VALUE_CHARS = 1024
HEAD_CHARS = 64


def identity(value: Any) -> Any:
    if not isinstance(value, (str, bytes)) or len(value) <= VALUE_CHARS:
        return value
    if isinstance(value, str):
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return f"{value[:HEAD_CHARS]}… ({len(value):,} characters, sha256 {digest})"
    digest = hashlib.sha256(value).hexdigest()[:16]
    return f"{value[:HEAD_CHARS].decode('utf-8', 'replace')}… ({len(value):,} bytes, sha256 {digest})"
