"""The client's address, also behind a reverse proxy, without letting a client choose it.

    client_address(request_or_scope) -> str | None

The peer address (REMOTE_ADDR of a Django request, scope["client"][0] of an ASGI scope: HTTP or websocket) is the
answer, unless the peer is one of the trusted proxies (settings.PLAYGROUND_TRUSTED_PROXIES: comma-separated IP
addresses and CIDR networks, empty by default). Then X-Forwarded-For is read from the right, skipping the trusted
proxies, and the first address that is not one is the client. Every proxy appends the address it was contacted from,
so the entries right of that one were written by proxies we trust, and the ones left of it by the client (who can
write anything there).

- No trusted proxy (the default): X-Forwarded-For is ignored; a client cannot pick its address.
- A malformed X-Forwarded-For (an entry that is not an IP address, an empty entry): the peer address.
- Every entry trusted (a request made by a proxy host itself): the leftmost entry.
- Addresses come back normalised (ipaddress' str(): lower case, IPv6 compressed, an IPv4-mapped IPv6 address as
  IPv4). A peer that is not an IP address (a unix socket) is returned as given, and is never trusted.

TrustedProxyHeadersMiddleware drops X-Forwarded-Proto from requests not sent by a trusted proxy, so that
SECURE_PROXY_SSL_HEADER (set when trusted proxies are configured) cannot be claimed by a client itself.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
SETTING = "PLAYGROUND_TRUSTED_PROXIES"
MAX_HOPS = 32  # entries of X-Forwarded-For looked at, from the right: more is garbage, not a proxy chain


def parse_networks(value: str | Iterable[str]) -> tuple[Network, ...]:
    """ "10.0.0.1, 172.16.0.0/12, ::1" (or a list of those) -> networks; ImproperlyConfigured naming the setting for
    anything that is not an address or a network."""
    items = value.split(",") if isinstance(value, str) else list(value)
    networks = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"{SETTING}: {item!r} is not an IP address or a network (a.b.c.d/n)") from None
    return tuple(networks)


@functools.lru_cache(maxsize=8)
def _networks(value: str | tuple[str, ...]) -> tuple[Network, ...]:
    return parse_networks(value)


def trusted_networks() -> tuple[Network, ...]:
    value = getattr(settings, SETTING, "") or ""
    return _networks(value if isinstance(value, str) else tuple(value))


def _address(text: str) -> IPAddress | None:
    """An address as written in REMOTE_ADDR or X-Forwarded-For: a.b.c.d, an IPv6 address, either with a port
    (a.b.c.d:port, [v6]:port, as some proxies write it); None for anything else."""
    text = text.strip()
    if text.startswith("["):
        inner, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not (rest[:1] == ":" and rest[1:].isdigit())):
            return None
        text = inner
    elif text.count(":") == 1:  # a.b.c.d:port (an IPv6 address has at least two colons)
        text, _, port = text.partition(":")
        if not port.isdigit():
            return None
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if ip.version == 6 and ip.ipv4_mapped:
        return ip.ipv4_mapped
    return ip


def _trusted(ip: IPAddress | None, networks: tuple[Network, ...]) -> bool:
    return ip is not None and any(ip in network for network in networks)


def _peer_and_forwarded(request_or_scope: Any) -> tuple[str | None, str]:
    meta = getattr(request_or_scope, "META", None)
    if meta is not None:  # a Django HttpRequest (WSGI or ASGI): repeated headers are already joined with ","
        return meta.get("REMOTE_ADDR") or None, meta.get("HTTP_X_FORWARDED_FOR", "")
    if isinstance(request_or_scope, Mapping):  # an ASGI scope: http or websocket
        client = request_or_scope.get("client")
        peer = str(client[0]) if client and client[0] is not None else None
        values = [
            value.decode("latin-1")
            for name, value in request_or_scope.get("headers") or ()
            if name.lower() == b"x-forwarded-for"
        ]
        return peer, ",".join(values)
    raise TypeError(f"client_address() takes a Django request or an ASGI scope, not {type(request_or_scope).__name__}")


def _from_chain(peer: IPAddress, header: str, networks: tuple[Network, ...]) -> IPAddress:
    if not header.strip():
        return peer
    entries = header.split(",")
    if len(entries) > MAX_HOPS:
        entries = entries[-MAX_HOPS:]
    furthest = peer
    for entry in reversed(entries):
        ip = _address(entry)
        if ip is None:
            return peer  # garbage before an untrusted address was found: believe only the connection
        if not _trusted(ip, networks):
            return ip
        furthest = ip
    return furthest  # everyone in the chain is a trusted proxy: the furthest one is the client


def client_address(request_or_scope: Any) -> str | None:
    """The address of the client behind this Django request or ASGI scope (see the module's docstring)."""
    peer_text, header = _peer_and_forwarded(request_or_scope)
    if peer_text is None:
        return None
    peer = _address(peer_text)
    if peer is None:
        return peer_text
    networks = trusted_networks()
    if not _trusted(peer, networks):
        return str(peer)
    return str(_from_chain(peer, header, networks))


def from_trusted_proxy(request_or_scope: Any) -> bool:
    """Whether the connection comes from one of the trusted proxies (whose forwarded headers may be believed)."""
    peer_text, _ = _peer_and_forwarded(request_or_scope)
    return peer_text is not None and _trusted(_address(peer_text), trusted_networks())


class TrustedProxyHeadersMiddleware:
    """Before SecurityMiddleware: X-Forwarded-Proto counts only when a trusted proxy sent it. Django believes
    SECURE_PROXY_SSL_HEADER from anyone; behind a proxy that would let a client reaching Daphne directly claim https."""

    sync_capable = True
    async_capable = True
    HEADERS = ("HTTP_X_FORWARDED_PROTO",)

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def _clean(self, request) -> None:
        if not from_trusted_proxy(request):
            for name in self.HEADERS:
                request.META.pop(name, None)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        self._clean(request)
        return self.get_response(request)

    async def __acall__(self, request):
        self._clean(request)
        return await self.get_response(request)
