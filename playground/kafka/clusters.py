"""Which real cluster a profile's sessions run on, and whether the cluster reached is that Kafka.

A profile's Kafka version picks the server's settings (`kafka_settings`): 3.9 sessions run on
KAFKA_BOOTSTRAP_SERVERS (as before profiles existed), 4.x sessions on KAFKA4_BOOTSTRAP_SERVERS; each has its broker
control beside it. An address is
only ever read from the server's settings, never from a session's profile or any other user input.

A broker does not say its release. What it does say, in ApiVersions, is the highest `metadata.version` its software
supports (a level every release adds to, MetadataVersion.java) and the cluster's finalized feature levels
(KIP-584), `transaction.version` among them. The first names the release line (3.9, 4.4, ...); the second is
reported as the cluster has it, never assumed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playground.engine.spec import DEFAULT_PROFILE, Profile

# Settings by a profile's Kafka version: (bootstrap servers, broker control).
SETTINGS = {
    "3.5": ("KAFKA35_BOOTSTRAP_SERVERS", "KAFKA35_BROKER_CONTROL"),
    "3.9": ("KAFKA_BOOTSTRAP_SERVERS", "KAFKA_BROKER_CONTROL"),
    "4": ("KAFKA4_BOOTSTRAP_SERVERS", "KAFKA4_BROKER_CONTROL"),
}

MAX_SLEEP_S = 120.0  # clock.advance sleeps for real; one step sleeps at most this (settings: KAFKA_MAX_SLEEP_S)

# The first metadata.version level of each release line, from MetadataVersion.java (Kafka 4.4.0): IBP_3_5_IV0 is 9
# (3.5's last, IBP_3_5_IV2, is 11), IBP_3_6_IV0 12, IBP_3_7_IV0 15, IBP_3_8_IV0 20, IBP_3_9_IV0 21, IBP_4_0_IV0 22,
# IBP_4_1_IV0 26, IBP_4_2_IV0 28, IBP_4_3_IV0 30, IBP_4_4_IV0 31 (4.4's last, IBP_4_4_IV2, is 33), IBP_4_5_IV0 34. A
# broker supports up to its own release's latest production level.
RELEASE_LINES = (
    (9, "3.5"),
    (12, "3.6"),
    (15, "3.7"),
    (20, "3.8"),
    (21, "3.9"),
    (22, "4.0"),
    (26, "4.1"),
    (28, "4.2"),
    (30, "4.3"),
    (31, "4.4"),
    (34, "4.5"),
)
TRANSACTION_VERSION = "transaction.version"
METADATA_VERSION = "metadata.version"


def release_line(level: int) -> str:
    """The release line whose software supports metadata.version up to `level`."""
    if level < RELEASE_LINES[0][0]:
        return f"older than {RELEASE_LINES[0][1]}"
    line = [name for first, name in RELEASE_LINES if first <= level][-1]
    return f"{line} or newer" if line == RELEASE_LINES[-1][1] else line


def line_of(release: str) -> str:
    """ "4.4.0" -> "4.4"."""
    return ".".join(release.split(".")[:2])


@dataclass(frozen=True)
class ClusterVersion:
    release_line: str  # what every broker's software is, e.g. "4.4"
    metadata_version: int  # finalized
    transaction_version: int  # finalized; 0 when the cluster has not finalized the feature

    def to_dict(self) -> dict[str, Any]:
        return {
            "release_line": self.release_line,
            "metadata_version": self.metadata_version,
            "transaction_version": self.transaction_version,
        }


class ClusterMismatch(Exception):
    """The cluster reached is not the Kafka the session's profile names."""


def read(wire: Any) -> ClusterVersion:
    """Ask every broker of the cluster (a `playground.kafka.wire.WireClient`) for its ApiVersions; all must run the
    same release line (a cluster half-way through a rolling upgrade is not one version)."""
    lines: dict[int, str] = {}
    finalized: dict[str, int] = {}
    for node in sorted(wire.metadata([]).brokers):
        versions = wire.api_versions(node)
        supported = versions.supported.get(METADATA_VERSION)
        lines[node] = release_line(supported[1]) if supported else "older than 3.3 (no metadata.version)"
        finalized = versions.finalized
    if len(set(lines.values())) != 1:
        raise ClusterMismatch(
            "the brokers run different Kafka releases: "
            + ", ".join(f"broker {n} {line}" for n, line in sorted(lines.items()))
        )
    return ClusterVersion(
        next(iter(lines.values())), finalized.get(METADATA_VERSION, 0), finalized.get(TRANSACTION_VERSION, 0)
    )


def check(wire: Any, profile: Profile, setting: str) -> ClusterVersion:
    """The cluster's version, if it is the one the profile names (its release line, and a transaction.version the
    profile's transactions can run under); else ClusterMismatch with a sentence naming both and the setting.
    `wire` is a `playground.kafka.wire.WireClient`: raw ApiVersions, since the admin client does not show the
    supported levels."""
    found = read(wire)
    wanted = line_of(profile.release)
    if found.release_line != wanted:
        raise ClusterMismatch(
            f"the cluster in {setting} runs Kafka {found.release_line}, not Kafka {profile.release} as this session's "
            f"profile ({profile.label}) needs: point {setting} at a Kafka {wanted} cluster"
            f" (locally: bash tools/kafka/kafka.sh start --version {profile.kafka})"
        )
    # transaction.version 0 and 1 both run the classic protocol (1 only changes __transaction_state's record
    # format, TransactionVersion.java); only a profile whose client runs KIP-890's needs the cluster at 2
    if profile.transaction_version >= 2 and found.transaction_version < 2:
        raise ClusterMismatch(
            f"the cluster in {setting} has finalized transaction.version {found.transaction_version}; this "
            f"session's profile ({profile.label}) runs transaction.version {profile.transaction_version} "
            f"transactions (kafka-features.sh upgrade --feature transaction.version=2)"
        )
    return found


def kafka_settings(kafka: str = DEFAULT_PROFILE.kafka) -> dict[str, Any]:
    """The cluster this server may talk to for sessions of Kafka version `kafka` (SETTINGS: 3.9 on
    KAFKA_BOOTSTRAP_SERVERS, 4.x on KAFKA4_BOOTSTRAP_SERVERS, each with its broker control). Django settings decide
    when they are configured (settings.py reads them and KAFKA_CLIENT_* from the environment); a setting they do not
    define, and every setting outside Django (tools/bench), comes from the environment variable of the same name."""
    bootstrap_setting, control_setting = SETTINGS[kafka]
    conf: Any = None
    try:
        from django.conf import settings

        if settings.configured:
            conf = settings
    except Exception:  # Django not installed/configured: the environment decides
        conf = None

    def get(name: str, default: Any) -> Any:
        if conf is not None and hasattr(conf, name):
            return getattr(conf, name)
        return os.environ.get(name, default)

    bootstrap = str(get(bootstrap_setting, "") or "")
    client = get("KAFKA_CLIENT_CONFIG", None)
    if not isinstance(client, dict):
        client = {
            k[len("KAFKA_CLIENT_") :].lower().replace("_", "."): v
            for k, v in os.environ.items()
            if k.startswith("KAFKA_CLIENT_") and k != "KAFKA_CLIENT_CONFIG"
        }
    client = dict(client)
    for forbidden in ("bootstrap.servers", "metadata.broker.list", "debug", "logger"):
        client.pop(forbidden, None)  # the cluster comes from KAFKA_BOOTSTRAP_SERVERS only
    base_dir = (
        Path(conf.BASE_DIR) if conf is not None and hasattr(conf, "BASE_DIR") else Path(__file__).resolve().parents[2]
    )
    # the registry of which process owns which prefixes (owners.py): KAFKA_OWNERS_DIR, else VAR_DIR/kafka-owners
    var_dir = conf.VAR_DIR if conf is not None and hasattr(conf, "VAR_DIR") else os.environ.get("PLAYGROUND_VAR_DIR")
    owners_dir = str(get("KAFKA_OWNERS_DIR", "") or "")
    return {
        "bootstrap": bootstrap.strip(),
        "client": client,
        "broker_control": str(get(control_setting, "") or "").strip(),
        "base_dir": base_dir,
        "max_sleep_s": float(get("KAFKA_MAX_SLEEP_S", MAX_SLEEP_S) or MAX_SLEEP_S),
        "owners_dir": Path(owners_dir) if owners_dir else Path(var_dir or base_dir / "var") / "kafka-owners",
    }
