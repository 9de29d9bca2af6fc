"""What the simulated cluster advertises in ApiVersions as each Kafka release: exactly what that release's brokers
advertise (protocol/advertised.py, read off real brokers by tools/kafka/apiversions.py) for every API it serves, and
the versions a release advertises but refuses.

`API_KEYS`: api key -> (min, max) version. `SUPPORTED_FEATURES`: feature -> (min, max) level the broker's software
supports; ApiVersions v3 and older leave out features whose min is 0 (KIP-1022). `FINALIZED_FEATURES`: feature ->
(min, max) level finalized for the cluster (a 3.9 cluster has no transaction.version: it runs the classic protocol).

Kafka 4.0 removed Produce v0-2 (KIP-896) yet its brokers still advertise Produce from v0, because librdkafka would
not compress otherwise (KAFKA-18659, ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION); a request of those versions
is refused as any version a broker does not serve is (SocketServer closes the connection): `REFUSED`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from playground.protocol.advertised import API_KEYS, FINALIZED_FEATURES, SUPPORTED_FEATURES

__all__ = ["API_KEYS", "FINALIZED_FEATURES", "REFUSED", "RELEASES", "SUPPORTED_FEATURES", "accepted", "advertised"]

RELEASES: Final = {"3.5": "3.5.2", "3.9": "3.9.1", "4": "4.4.0"}


# Kafka version key -> api key -> the (lowest, highest) versions advertised but refused
REFUSED: Final = {"3.5": {}, "3.9": {}, "4": {0: (0, 2)}}


def advertised(kafka: str, served: Iterable[int]) -> dict[int, tuple[int, int]]:
    """The release's table for the APIs a server serves (`served`: api keys): an API it does not serve is not
    advertised, so a client falls back as it would against a broker without it, rather than meeting a closed
    connection; the others exactly as the release's brokers advertise them."""
    keys = set(served)
    return {key: lo_hi for key, lo_hi in API_KEYS[kafka].items() if key in keys}


def accepted(kafka: str, served: Iterable[int]) -> dict[int, tuple[int, int]]:
    """The versions of each API read and answered: those advertised, but for the ones the release refuses."""
    out = advertised(kafka, served)
    for key, (lo, hi) in REFUSED[kafka].items():
        if key in out:
            assert out[key][0] == lo, "a release refuses only its lowest versions"
            out[key] = (hi + 1, out[key][1])
    return out
