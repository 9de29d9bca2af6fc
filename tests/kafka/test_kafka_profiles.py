"""Profiles on real clusters: a session of Kafka 3.9 runs on KAFKA_BOOTSTRAP_SERVERS, one of Kafka 4.x on
KAFKA4_BOOTSTRAP_SERVERS (both clusters of `make test`, started by tools/kafka/kafka.sh side by side); the backend
checks the cluster it reached is that version and reads its transaction.version from it; a cluster of another
version is refused with a sentence naming both."""

from __future__ import annotations

import re

import pytest

from playground import session
from playground.engine.backend import ProfileError
from playground.engine.spec import ClusterSpec, Profile, TopicSpec
from playground.kafka import clusters
from playground.kafka.backend import KafkaBackend
from playground.kafka.wire import WireClient
from playground.scenario import load_library, run_scenario
from tests.kafka.conftest import ROOT, require_bootstrap

pytestmark = pytest.mark.kafka

CLUSTER = ClusterSpec(brokers=1, topics=(TopicSpec("orders", 1),))


def test_it_finds_transaction_version_2_finalized_on_the_4x_cluster_kafka_sh_formats():
    wire = WireClient(require_bootstrap("4"))
    try:
        found = clusters.read(wire)
    finally:
        wire.close()
    assert found.release_line == clusters.line_of(Profile("4").release)
    assert found.transaction_version == 2


def test_it_refuses_a_cluster_of_another_kafka_version_than_the_profile_names():
    kafka39, kafka4 = require_bootstrap("3.9"), require_bootstrap("4")
    with pytest.raises(ProfileError) as info:
        KafkaBackend(CLUSTER, {}, settings={"bootstrap": kafka39}, profile=Profile("4"))
    assert str(info.value).startswith("the cluster in KAFKA4_BOOTSTRAP_SERVERS runs Kafka 3.9, not Kafka 4.4.0")
    with pytest.raises(ProfileError) as info:
        KafkaBackend(CLUSTER, {}, settings={"bootstrap": kafka4}, profile=Profile("3.9"))
    assert str(info.value).startswith("the cluster in KAFKA_BOOTSTRAP_SERVERS runs Kafka 4.4, not Kafka 3.9.1")


def test_it_runs_each_profile_on_the_cluster_of_its_version_and_reports_what_that_cluster_says():
    scenario = {s.id: s for s in load_library(ROOT / "scenarios")}["commit-and-abort"]
    got = {}
    for kafka in ("3.9", "4"):
        backend = KafkaBackend(scenario.cluster, scenario.actors, seed=scenario.seed, profile=Profile(kafka))
        assert backend.settings["bootstrap"] == require_bootstrap(kafka)
        got[kafka] = run_scenario(scenario, backend)
    assert got["3.9"]["profile"] == {
        "kafka": "3.9",
        "release": "3.9.1",
        "client": "librdkafka",
        "transaction_version": 0,
    }
    assert got["4"]["profile"] == {"kafka": "4", "release": "4.4.0", "client": "librdkafka", "transaction_version": 2}
    assert got["3.9"]["expect"]["failed"] == got["4"]["expect"]["failed"] == 0


@pytest.mark.django_db
def test_it_starts_a_real_session_of_kafka_4_whose_header_shows_what_the_cluster_says(client, settings):
    require_bootstrap("4")
    settings.DEBUG = False
    r = client.post("/new/", {"scenario": "commit-and-abort", "backend": "kafka", "kafka": "4", "client": "librdkafka"})
    assert r.status_code == 302, r.content.decode()[:500]
    sid = re.search(r"/s/([^/]+)/", r["Location"]).group(1)
    try:
        live = session.load(sid)
        assert live.backend.profile == Profile("4") and live.backend.settings["bootstrap"] == require_bootstrap("4")
        page = client.get(f"/s/{sid}/").content.decode()
        assert 'Kafka 4.4.0 · librdkafka · transaction.version <b class="tv">2/1</b>' in page
    finally:
        session.CACHE.clear()  # closes the backend: the session's topics are deleted
