"""playground/deploy/clientaddr.py: the client's address behind trusted reverse proxies, and never one a client chooses."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from django.test import RequestFactory
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from playground.deploy.clientaddr import (
    TrustedProxyHeadersMiddleware,
    _address,
    client_address,
    from_trusted_proxy,
    parse_networks,
)

CLIENT = "203.0.113.7"
PROXY = "10.0.0.2"


def http(peer: str | None = PROXY, xff: str | None = None, **meta: str):
    request = RequestFactory().get("/", **meta)
    if peer is None:
        del request.META["REMOTE_ADDR"]
    else:
        request.META["REMOTE_ADDR"] = peer
    if xff is not None:
        request.META["HTTP_X_FORWARDED_FOR"] = xff
    return request


def scope(peer: str | None = PROXY, *xff: str, kind: str = "websocket") -> dict:
    return {
        "type": kind,
        "path": "/ws/s/abc/",
        "client": [peer, 51234] if peer is not None else None,
        "headers": [(b"host", b"ws.example.org")] + [(b"x-forwarded-for", value.encode()) for value in xff],
    }


@pytest.fixture
def trusted(settings):
    def trust(value):
        settings.PLAYGROUND_TRUSTED_PROXIES = value

    trust("")
    return trust


# --------------------------------------------------------------------------------------------------- no proxy
def test_without_trusted_proxies_the_peer_is_the_client_and_x_forwarded_for_is_ignored(trusted):
    assert client_address(http(CLIENT)) == CLIENT
    # A client cannot pick its address, neither over HTTP nor on the websocket.
    assert client_address(http(CLIENT, "1.2.3.4")) == CLIENT
    assert client_address(http(CLIENT, "1.2.3.4, 5.6.7.8")) == CLIENT
    assert client_address(scope(CLIENT, "1.2.3.4")) == CLIENT
    assert client_address(scope(CLIENT, "1.2.3.4", kind="http")) == CLIENT


def test_a_peer_that_looks_like_a_proxy_is_not_trusted_unless_configured(trusted):
    assert client_address(http(PROXY, CLIENT)) == PROXY
    trusted("10.0.0.3")  # another proxy
    assert client_address(http(PROXY, CLIENT)) == PROXY


# --------------------------------------------------------------------------------------------------- a trusted proxy
def test_behind_a_trusted_proxy_the_forwarded_client_is_used(trusted):
    trusted(PROXY)
    assert client_address(http(PROXY, CLIENT)) == CLIENT
    assert client_address(scope(PROXY, CLIENT)) == CLIENT
    assert client_address(scope(PROXY, CLIENT, kind="http")) == CLIENT
    # No X-Forwarded-For (the proxy's own health check): the proxy itself.
    assert client_address(http(PROXY)) == PROXY
    assert client_address(http(PROXY, "  ")) == PROXY


def test_what_a_client_writes_left_of_its_real_address_is_ignored(trusted):
    trusted(PROXY)
    # The client sent "X-Forwarded-For: 1.1.1.1"; the proxy appended the address it saw.
    assert client_address(http(PROXY, f"1.1.1.1, {CLIENT}")) == CLIENT
    # ... even when the client claims to be the trusted proxy itself.
    assert client_address(http(PROXY, f"{PROXY}, {CLIENT}")) == CLIENT


def test_a_chain_of_trusted_proxies_is_walked_from_the_right(trusted):
    trusted("10.0.0.0/8, 192.168.5.1")
    # client -> 192.168.5.1 -> 10.1.1.1 -> 10.0.0.2 (the peer)
    assert client_address(http(PROXY, f"{CLIENT}, 192.168.5.1, 10.1.1.1")) == CLIENT
    # An untrusted hop in the middle is as far as anything can be believed: left of it, anyone could have written.
    assert client_address(http(PROXY, f"{CLIENT}, 198.51.100.9, 10.1.1.1")) == "198.51.100.9"
    # Every hop trusted (a request made on a proxy host): the furthest one.
    assert client_address(http(PROXY, "10.9.9.9, 10.1.1.1")) == "10.9.9.9"


def test_repeated_x_forwarded_for_headers_are_one_list(trusted):
    trusted("10.0.0.0/8")
    assert client_address(scope(PROXY, f"1.1.1.1, {CLIENT}", "10.1.1.1")) == CLIENT
    assert client_address(scope(PROXY, "1.1.1.1", CLIENT)) == CLIENT


def test_ipv6_networks_ports_and_ipv4_mapped_addresses(trusted):
    trusted("2001:db8:1::/48, 10.0.0.0/8")
    assert client_address(http("2001:db8:1::5", "2001:DB8:ffff:0:0:0:0:1")) == "2001:db8:ffff::1"
    assert client_address(http("2001:db8:1::5", "[2001:db8:ffff::1]:4711")) == "2001:db8:ffff::1"
    assert client_address(http(PROXY, f"{CLIENT}:4711")) == CLIENT
    # Daphne on a dual-stack socket reports IPv4 peers as ::ffff:a.b.c.d: the same address as a.b.c.d.
    assert client_address(http(f"::ffff:{PROXY}", f"::ffff:{CLIENT}")) == CLIENT
    assert client_address(scope(f"::ffff:{CLIENT}")) == CLIENT


# --------------------------------------------------------------------------------------------------- garbage
@pytest.mark.parametrize(
    "header",
    [
        "unknown",
        "not-an-ip",
        "1.2.3.4.5",
        ",",
        f"{CLIENT},",
        f",{CLIENT}, ",
        "1.2.3.4:port",
        "[2001:db8::1",
        "[2001:db8::1]x",
        "999.1.1.1",
        "1.2.3.4 5.6.7.8",
        "\x00",
        "obfuscated_node",
        "10.0.0.0/8",
    ],
)
def test_a_malformed_header_falls_back_to_the_peer(trusted, header):
    trusted(PROXY)
    assert client_address(http(PROXY, header)) == PROXY
    assert client_address(scope(PROXY, header)) == PROXY


def test_garbage_left_of_the_client_is_the_clients_own_and_changes_nothing(trusted):
    trusted(PROXY)
    # Falling back to the proxy here would let any client make itself one with everyone behind the proxy.
    assert client_address(http(PROXY, f"garbage, , {CLIENT}")) == CLIENT


def test_a_very_long_header_is_read_from_the_right_only(trusted):
    trusted("10.0.0.0/8")
    assert client_address(http(PROXY, ", ".join(["9.9.9.9"] * 10_000 + [CLIENT]))) == CLIENT
    long_trusted = ", ".join([CLIENT] + ["10.1.1.1"] * 100)
    assert client_address(http(PROXY, long_trusted)) == "10.1.1.1"  # no further than 32 hops


@hsettings(max_examples=300)
@given(st.text(max_size=200), st.sampled_from(["", PROXY, "10.0.0.0/8, ::1"]))
def test_whatever_the_header_the_answer_is_the_peer_or_an_address_in_it(header, proxies):
    from django.conf import settings

    previous = settings.PLAYGROUND_TRUSTED_PROXIES
    settings.PLAYGROUND_TRUSTED_PROXIES = proxies
    try:
        answer = client_address(http(PROXY, header))
    finally:
        settings.PLAYGROUND_TRUSTED_PROXIES = previous
    if not proxies:
        assert answer == PROXY
    else:
        entries = {str(ip) for ip in map(_address, header.split(",")) if ip is not None}
        assert answer == PROXY or answer in entries


# --------------------------------------------------------------------------------------------------- peers
def test_a_peer_that_is_not_an_ip_address_is_returned_as_given_and_never_trusted(trusted):
    trusted("0.0.0.0/0, ::/0")
    assert client_address(http(None, CLIENT)) is None  # a unix socket: no REMOTE_ADDR
    assert client_address(scope(None, CLIENT)) is None
    assert client_address(http("unix:/run/daphne.sock", CLIENT)) == "unix:/run/daphne.sock"
    assert client_address(http("testclient-peer", CLIENT)) == "testclient-peer"


def test_anything_but_a_request_or_a_scope_is_a_type_error():
    with pytest.raises(TypeError):
        client_address("203.0.113.7")


def test_the_setting_may_be_a_list(settings):
    settings.PLAYGROUND_TRUSTED_PROXIES = [PROXY, "192.168.0.0/16"]
    assert client_address(http(PROXY, CLIENT)) == CLIENT
    assert client_address(http("192.168.3.4", CLIENT)) == CLIENT


def test_a_malformed_trusted_proxy_is_refused_naming_the_setting():
    assert [str(n) for n in parse_networks(" 10.0.0.1 , ,172.16.0.0/12,::1")] == [
        "10.0.0.1/32",
        "172.16.0.0/12",
        "::1/128",
    ]
    for bad in ("proxy.local", "10.0.0.1/33", "10.0.0.1;10.0.0.2"):
        with pytest.raises(ImproperlyConfigured, match="PLAYGROUND_TRUSTED_PROXIES"):
            parse_networks(bad)


# --------------------------------------------------------------------------------------------------- X-Forwarded-Proto
def _seen(request) -> HttpResponse:
    return HttpResponse(request.META.get("HTTP_X_FORWARDED_PROTO", "-"))


def test_x_forwarded_proto_counts_only_from_a_trusted_proxy(trusted):
    trusted(PROXY)
    middleware = TrustedProxyHeadersMiddleware(_seen)
    assert middleware(http(PROXY, HTTP_X_FORWARDED_PROTO="https")).content == b"https"
    assert middleware(http(CLIENT, HTTP_X_FORWARDED_PROTO="https")).content == b"-"
    assert from_trusted_proxy(http(PROXY)) and not from_trusted_proxy(http(CLIENT))


async def test_the_proxy_header_middleware_is_async_capable(trusted):
    trusted(PROXY)

    async def seen(request):
        return _seen(request)

    middleware = TrustedProxyHeadersMiddleware(seen)
    assert (await middleware(http(CLIENT, HTTP_X_FORWARDED_PROTO="https"))).content == b"-"
    assert (await middleware(http(PROXY, HTTP_X_FORWARDED_PROTO="https"))).content == b"https"
