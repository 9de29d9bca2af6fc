"""Bounds, so that one page cannot exhaust a public server (design.md, "Quality bars").

Each limit has a default here and an override in settings (`PLAYGROUND_LIMITS = {"producers": 4, ...}`); each
breach raises `LimitExceeded` with a sentence a user understands, which the views turn into a 429 or 400.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _

DEFAULTS = {
    "producers": 12,  # producers per session (scenario actors included)
    "consumers": 12,  # consumers per session
    "records_per_action": 1000,  # records one command may write (produce `count`, produce `from`)
    "value_bytes": 1024,  # size of one record value (UTF-8)
    "key_bytes": 256,  # size of one record key
    "commands": 20_000,  # commands in one session's log (stored a row each: the cost of one does not grow with it)
    "clock_advance_s": 7 * 24 * 3600,  # one clock.advance
    "sessions_per_minute": 10,  # sessions one client may create per minute
    "name_chars": 40,  # actor names, transactional ids, group ids
}


@dataclass(frozen=True)
class LimitExceeded(Exception):
    name: str
    limit: int
    message: str

    def __str__(self) -> str:
        return self.message


def limit(name: str) -> int:
    overrides = getattr(settings, "PLAYGROUND_LIMITS", {}) or {}
    return int(overrides.get(name, DEFAULTS[name]))


def check_producers(count_after: int) -> None:
    n = limit("producers")
    if count_after > n:
        raise LimitExceeded("producers", n, _("A session holds at most %(n)d producers.") % {"n": n})


def check_consumers(count_after: int) -> None:
    n = limit("consumers")
    if count_after > n:
        raise LimitExceeded("consumers", n, _("A session holds at most %(n)d consumers.") % {"n": n})


def check_records(count: int) -> None:
    n = limit("records_per_action")
    if count > n:
        raise LimitExceeded(
            "records_per_action",
            n,
            _("One action writes at most %(n)d records; this one asks for %(c)d.") % {"n": n, "c": count},
        )


def check_value(value: str | None, field: str = "value") -> None:
    if value is None:
        return
    n = limit("key_bytes" if field == "key" else "value_bytes")
    size = len(value.encode("utf-8"))
    if size > n:
        raise LimitExceeded(
            f"{field}_bytes",
            n,
            _("A record %(field)s is at most %(n)d bytes; this one has %(s)d.") % {"field": field, "n": n, "s": size},
        )


def check_commands(count_after: int) -> None:
    n = limit("commands")
    if count_after > n:
        raise LimitExceeded(
            "commands",
            n,
            _("This session reached its limit of %(n)d commands: reset it or start a new one.") % {"n": n},
        )


def check_sessions_per_minute(created_last_minute: int) -> None:
    n = limit("sessions_per_minute")
    if created_last_minute >= n:
        raise LimitExceeded(
            "sessions_per_minute",
            n,
            _("You started %(n)d sessions in the last minute, the limit: wait a minute and try again.") % {"n": n},
        )
