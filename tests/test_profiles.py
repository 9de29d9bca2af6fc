"""Profiles (Kafka version x client): what each names, how text becomes one, and that tools/kafka runs the very
releases the profiles name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from playground.engine.spec import DEFAULT_PROFILE, KAFKA_RELEASES, PROFILES, Profile, parse_profile, profile_from_key
from playground.kafka import clusters

ROOT = Path(__file__).resolve().parents[1]


def test_it_pins_in_kafka_sh_the_releases_the_profiles_name():
    text = (ROOT / "tools" / "kafka" / "kafka.sh").read_text(encoding="utf-8")
    pins = dict(re.findall(r'^KAFKA_RELEASE_(3_5|3_9|4)="([0-9.]+)"$', text, re.M))
    assert {k.replace("_", "."): v for k, v in pins.items()} == KAFKA_RELEASES


def test_it_keeps_kafka_3_9_with_librdkafka_as_the_default():
    assert DEFAULT_PROFILE == Profile("3.9", "librdkafka") == parse_profile()
    assert DEFAULT_PROFILE.label == "Kafka 3.9.1 · librdkafka"


def test_it_runs_kip_890s_transactions_only_with_a_client_that_has_them_on_a_cluster_that_has_them():
    assert [Profile(k, c).transaction_version for k in ("3.9", "4") for c in ("librdkafka", "java")] == [1, 1, 1, 2]
    assert [Profile(k).finalized_transaction_version for k in ("3.9", "4")] == [0, 2]


def test_it_takes_each_part_of_a_profile_from_text_over_a_base():
    assert parse_profile("4", None) == Profile("4", "librdkafka")
    assert parse_profile("", "java", base=Profile("4")) == Profile("4", "java")
    assert parse_profile(None, None, base=Profile("4", "java")) == Profile("4", "java")


@pytest.mark.parametrize(
    ("kafka", "client", "message"),
    [
        ("4.0", None, "kafka: '4.0' is not a Kafka version of this playground (3.5, 3.9, 4)"),
        (
            None,
            "jvm",
            "client: 'jvm' is not a client of this playground (librdkafka, java, java:3.5, java:3.9, java:4)",
        ),
        (
            None,
            "java:3.6",
            "client: 'java:3.6' is not a client of this playground (librdkafka, java, java:3.5, java:3.9, java:4)",
        ),
        (
            None,
            "librdkafka:2.6",
            "client: 'librdkafka:2.6' is not a client of this playground (librdkafka, java, java:3.5, java:3.9, java:4)",
        ),
    ],
)
def test_it_names_the_field_of_a_value_outside_the_allowed_set(kafka, client, message):
    with pytest.raises(ValueError) as info:
        parse_profile(kafka, client)
    assert str(info.value) == message


def test_it_tells_a_brokers_release_line_from_the_metadata_version_it_supports():
    # MetadataVersion.java: IBP_3_5_IV0 = 9, IBP_3_5_IV2 = 11, IBP_3_6_IV0 = 12, IBP_3_8_IV0 = 20, IBP_3_9_IV0 = 21,
    # IBP_4_0_IV0 = 22, IBP_4_4_IV0 = 31, IBP_4_4_IV2 = 33, IBP_4_5_IV0 = 34
    assert [clusters.release_line(level) for level in (8, 9, 11, 12, 20, 21, 22, 25, 31, 33, 34, 40)] == [
        "older than 3.5",
        "3.5",
        "3.5",
        "3.6",
        "3.8",
        "3.9",
        "4.0",
        "4.0",
        "4.4",
        "4.4",
        "4.5 or newer",
        "4.5 or newer",
    ]
    assert clusters.line_of(Profile("4").release) == "4.4" and clusters.line_of(Profile("3.9").release) == "3.9"
    assert clusters.line_of(Profile("3.5").release) == "3.5"


class _Versions:
    def __init__(self, supported_max: int, finalized: dict[str, int]) -> None:
        self.supported = {"metadata.version": (1, supported_max)}
        self.finalized = finalized


class _Wire:
    """What playground.kafka.wire.WireClient answers, for brokers of given versions."""

    def __init__(self, *brokers: _Versions) -> None:
        self.brokers = dict(enumerate(brokers, 1))

    def metadata(self, topics):
        return type("Meta", (), {"brokers": {n: ("127.0.0.1", 9000 + n) for n in self.brokers}})()

    def api_versions(self, node):
        return self.brokers[node]


def test_it_reads_the_clusters_finalized_transaction_version_rather_than_assuming_it():
    kafka4 = _Versions(33, {"metadata.version": 33, "transaction.version": 2})
    assert clusters.check(_Wire(kafka4, kafka4), Profile("4"), "KAFKA4_BOOTSTRAP_SERVERS") == clusters.ClusterVersion(
        "4.4", 33, 2
    )
    kafka4_tv1 = _Versions(33, {"metadata.version": 33, "transaction.version": 1})
    assert clusters.check(_Wire(kafka4_tv1), Profile("4"), "KAFKA4_BOOTSTRAP_SERVERS").transaction_version == 1
    kafka39 = _Versions(21, {"metadata.version": 21})  # 3.9 lists no level for transaction.version: 0
    assert clusters.check(_Wire(kafka39), Profile("3.9"), "KAFKA_BOOTSTRAP_SERVERS").transaction_version == 0


def test_it_refuses_a_cluster_of_another_version_or_without_the_transaction_version_the_client_runs():
    kafka39, kafka4 = _Versions(21, {"metadata.version": 21}), _Versions(33, {"transaction.version": 1})
    with pytest.raises(clusters.ClusterMismatch) as info:
        clusters.check(_Wire(kafka39), Profile("4"), "KAFKA4_BOOTSTRAP_SERVERS")
    assert str(info.value).startswith("the cluster in KAFKA4_BOOTSTRAP_SERVERS runs Kafka 3.9, not Kafka 4.4.0")
    with pytest.raises(clusters.ClusterMismatch, match=r"finalized transaction\.version 1"):
        clusters.check(_Wire(kafka4), Profile("4", "java"), "KAFKA4_BOOTSTRAP_SERVERS")
    with pytest.raises(clusters.ClusterMismatch, match=r"broker 1 3\.9, broker 2 4\.4"):
        clusters.check(_Wire(kafka39, kafka4), Profile("4"), "KAFKA4_BOOTSTRAP_SERVERS")


def test_it_reads_a_java_client_without_a_release_as_the_clusters_own():
    assert Profile("3.9", "java") == Profile("3.9", "java", "3.9") == parse_profile("3.9", "java:3.9")
    assert Profile("3.9", "java").to_dict() == {"kafka": "3.9", "client": "java"}  # stored and written as before
    assert Profile("3.9", "java").label == "Kafka 3.9.1 · java" and Profile("4", "java").key == "4-java"


def test_it_names_a_java_client_of_another_release_in_every_spelling_of_the_profile():
    mixed = parse_profile("3.9", "java:3.5")
    assert (mixed.kafka, mixed.client, mixed.client_release, mixed.client_version) == ("3.9", "java", "3.5", "3.5.2")
    assert mixed.key == "3.9-java:3.5" and mixed.client_key == "java:3.5"
    assert mixed.to_dict() == {"kafka": "3.9", "client": "java:3.5"}
    assert mixed.label == "Kafka 3.9.1 · java 3.5.2"
    assert profile_from_key("3.9-java:3.5") == mixed and profile_from_key("3.5-librdkafka") == Profile("3.5")
    # a new Kafka version keeps the client's release when it was named, follows the cluster when it was not
    assert parse_profile("4", None, base=mixed) == Profile("4", "java", "3.5")
    assert parse_profile("4", None, base=Profile("3.9", "java")) == Profile("4", "java", "4")


def test_it_runs_transaction_protocol_2_only_with_kafka_clients_4_on_kafka_4():
    assert [p.key for p in PROFILES if p.transaction_version == 2] == ["4-java"]
    assert Profile("3.5").finalized_transaction_version == 0
    assert len(PROFILES) == len(set(PROFILES)) == 12


def test_it_refuses_a_release_for_librdkafka():
    with pytest.raises(ValueError):
        Profile("3.9", "librdkafka", "3.9")
