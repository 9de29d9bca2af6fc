"""Error codes by Kafka's names (clients/src/main/java/org/apache/kafka/common/protocol/Errors.java).

The simulator names errors as Kafka spells them (`PRODUCER_FENCED`); kio's `ErrorCode` enum has the same names in
lower case. Names the simulator uses for what never reaches a wire (`_TRANSPORT`: a broker-to-broker request that
found no broker) have no code: they go out as UNKNOWN_SERVER_ERROR, which would show a bug rather than hide it.
"""

from __future__ import annotations

import functools

from kio.schema.errors import ErrorCode

NONE = ErrorCode.none


@functools.cache
def error_code(name: str | None) -> ErrorCode:
    """The code of an error named as Kafka names it (None: no error)."""
    if name is None:
        return ErrorCode.none
    try:
        return ErrorCode[name.lower()]
    except KeyError:
        return ErrorCode.unknown_server_error


def error_name(code: int) -> str | None:
    """Kafka's name of an error code (None for 0); `ERROR_<code>` for a code this kio does not know."""
    if code == 0:
        return None
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"ERROR_{code}"
