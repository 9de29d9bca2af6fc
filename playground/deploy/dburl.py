"""DATABASE_URL -> the connection part of a Django DATABASES entry (ENGINE, NAME, USER, PASSWORD, HOST, PORT, and the
few libpq options a URL may carry). Only the standard library: urllib does the splitting.

    postgres://user:password@host:port/name       also postgresql://; every part but the name may be left out
    postgres://user@/name?host=/run/postgresql    a unix-socket directory as ?host=
    postgres://user@%2Frun%2Fpostgresql/name      ... or as the host, percent-encoded
    postgres://user@[::1]:5432/name               an IPv6 address in brackets
    sqlite:///absolute/path/to/db.sqlite3         three slashes, then an absolute path

User, password and name are percent-decoded (a password with "@" or "/" is written %40, %2F). Anything else is
refused with ImproperlyConfigured naming DATABASE_URL, and never echoes the password.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

VARIABLE = "DATABASE_URL"
POSTGRES_SCHEMES = ("postgres", "postgresql")
# libpq parameters a PostgreSQL URL may carry in its query, handed to psycopg through OPTIONS.
PASSED_TO_LIBPQ = ("sslmode", "sslrootcert", "sslcert", "sslkey", "connect_timeout", "application_name")
FORMS = "postgres://user:password@host:port/name, postgresql://..., or sqlite:///absolute/path"


def redact(url: str) -> str:
    """The URL as it may appear in a message: the password replaced by ***. Errs on hiding too much: everything up
    to the last "@" counts as user:password, and a value with an "@" but no "://" is not shown at all."""
    if "@" not in url:
        return url
    scheme, sep, rest = url.partition("://")
    if not sep:
        return "<not shown: it has an '@' but no '://'>"
    userinfo, _, after = rest.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}@{after}"


def _refuse(url: str, why: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"{VARIABLE}={redact(url)!r}: {why}; expected {FORMS}")


def parse(url: str) -> dict[str, Any]:
    """The ENGINE/NAME/USER/PASSWORD/HOST/PORT (and OPTIONS) for this URL; ImproperlyConfigured if it is not one."""
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:  # e.g. an unclosed "[" in the host
        raise _refuse(url, f"not a URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme in POSTGRES_SCHEMES:
        return _postgres(url, parts)
    if scheme == "sqlite":
        return _sqlite(url, parts)
    if not scheme:
        raise _refuse(url, "no scheme")
    raise _refuse(url, f"unsupported scheme {scheme!r}")


def _postgres(url: str, parts: SplitResult) -> dict[str, Any]:
    if parts.fragment:
        raise _refuse(url, "a fragment (#...) means nothing here")
    # Split the network location by hand: urlsplit's .hostname lowercases, which would break a percent-encoded
    # socket directory such as %2Ftmp%2FPG, and .port raises on garbage without saying which variable.
    userinfo, at, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":") if at else ("", "", "")
    if hostport.startswith("["):
        host, bracket, rest = hostport[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise _refuse(url, "an IPv6 host must be written [address] or [address]:port")
        port = rest[1:]
    else:
        host, _, port = hostport.partition(":")
        if ":" in port:
            raise _refuse(url, "more than one ':' in the host part (write an IPv6 address in brackets)")
    host = unquote(host)
    if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise _refuse(url, f"the port must be a number from 1 to 65535, not {port!r}")
    name = unquote(parts.path[1:]) if parts.path.startswith("/") else ""
    if not name:
        raise _refuse(url, "no database name (the path: postgres://host/name)")
    if "/" in name:
        raise _refuse(url, "the database name is one path segment (write a '/' inside it as %2F)")
    options: dict[str, str] = {}
    try:
        query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise _refuse(url, "a malformed query string") from None
    for key, value in query:
        if key == "host":
            if host:
                raise _refuse(url, "a host both before the path and as ?host=")
            host = value
        elif key == "port":
            if port or not (value.isascii() and value.isdigit() and 0 < int(value) < 65536):
                raise _refuse(url, "?port= must be a number from 1 to 65535, given once")
            port = value
        elif key in PASSED_TO_LIBPQ and key not in options:
            options[key] = value
        else:
            raise _refuse(
                url, f"unknown or repeated query parameter {key!r} (known: host, port, {', '.join(PASSED_TO_LIBPQ)})"
            )
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(user),
        "PASSWORD": unquote(password),
        "HOST": host,  # "" = libpq's default socket; a path starting with "/" = a unix-socket directory
        "PORT": port,
        "OPTIONS": options,
    }


def _sqlite(url: str, parts: SplitResult) -> dict[str, Any]:
    if parts.netloc:
        raise _refuse(url, "a SQLite URL has no host: sqlite:/// (three slashes) and then an absolute path")
    if parts.query or parts.fragment:
        raise _refuse(url, "a SQLite URL takes no ?query or #fragment")
    path = unquote(parts.path)
    if not path.startswith("/") or path.endswith("/"):
        raise _refuse(url, "a SQLite URL names an absolute path to a file")
    # sqlite:////abs/path (dj-database-url's spelling) means the same file as sqlite:///abs/path.
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": "/" + path.lstrip("/")}
