"""The ApiVersions tables pinned in playground/protocol/advertised.py are what real brokers of each release
advertise: asked again here of the test clusters (tools/kafka: 3.9.1, 4.4.0 formatted with transaction.version=2, and
3.5.2), and written by tools/kafka/apiversions.py exactly as the file holds them. The simulated cluster advertises
the same for every API it serves, and nothing for the others."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from playground.kafka.wire import advertised
from playground.protocol import apiversions
from playground.sim import apiversions as sim_versions
from playground.simserver.apis import HANDLERS
from tests.kafka.conftest import require_bootstrap

ROOT = Path(__file__).resolve().parents[2]
# a 3.5 broker answers ApiVersions v3 at most (a v4 request gets UNSUPPORTED_VERSION and the v0 answer)
REQUEST_VERSION = {"3.5": 3, "3.9": 4, "4": 4}


def _tables(kafka: str) -> dict:
    return {
        "api_keys": dict(apiversions.API_KEYS[kafka]),
        "supported": dict(apiversions.SUPPORTED_FEATURES[kafka]),
        "finalized": dict(apiversions.FINALIZED_FEATURES[kafka]),
    }


@pytest.mark.kafka
@pytest.mark.parametrize("kafka", ["3.9", "4", pytest.param("3.5", marks=pytest.mark.kafka35)])
def test_the_pinned_tables_are_what_a_real_broker_of_the_release_advertises(kafka):
    assert advertised(require_bootstrap(kafka), REQUEST_VERSION[kafka]) == _tables(kafka)


def test_it_the_pinned_tables_are_the_file_tools_kafka_apiversions_writes():
    spec = importlib.util.spec_from_file_location("apiversions_tool", ROOT / "tools" / "kafka" / "apiversions.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    rendered = tool.render({kafka: _tables(kafka) for kafka in tool.RELEASES})
    assert rendered == (ROOT / "playground" / "protocol" / "advertised.py").read_text()


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_the_simulated_cluster_advertises_exactly_the_releases_versions_of_every_api_it_serves(kafka, request):
    cluster = request.getfixturevalue("simcluster" + kafka.replace(".", ""))
    sim = advertised(cluster.bootstrap, REQUEST_VERSION[kafka])
    release = _tables(kafka)
    assert sim["supported"] == release["supported"]
    assert sim["finalized"] == release["finalized"]
    assert sim["api_keys"] == {key: lo_hi for key, lo_hi in release["api_keys"].items() if key in HANDLERS}
    # what the clients of these tests use, among them the APIs the simulator did not serve before issue 32
    for key in (0, 1, 2, 3, 8, 9, 10, 18, 19, 20, 21, 22, 25, 26, 32, 33, 37, 44, 47, 60, 61, 65, 66):
        assert key in sim["api_keys"], key


API_KEY = {
    "Produce": 0,
    "InitProducerId": 22,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "TxnOffsetCommit": 28,
}


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_it_the_simulators_highest_transactional_versions_are_the_ones_the_brokers_advertise(kafka):
    # playground/sim/ cannot import the protocol package (one layer, independent), so the simulator keeps its own
    # table of the transactional APIs' highest versions: this keeps the two from drifting apart
    assert set(sim_versions.BROKER_MAX[kafka]) == set(API_KEY)
    for api, version in sim_versions.BROKER_MAX[kafka].items():
        assert version == apiversions.API_KEYS[kafka][API_KEY[api]][1], api


def test_it_serves_kafka_3_5_and_a_transactional_producer_commits_on_it(simcluster35):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": simcluster35.bootstrap, "transactional.id": "t35", "linger.ms": 0})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce("orders-35", b"v")
    p.commit_transaction(60)
