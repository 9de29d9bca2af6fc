"""The ApiVersions tables pinned in playground/protocol/apiversions.py are what real brokers of each release
advertise: asked again here of the test clusters (tools/kafka: 3.9.1, and 4.4.0 formatted with transaction.version=2).
And the simulated cluster advertises the same, cut only to the versions it reads."""

from __future__ import annotations

import socket
import struct

import pytest

from playground.protocol import apiversions, messages
from playground.sim import apiversions as sim_versions
from tests.kafka.conftest import require_bootstrap


def api_versions(bootstrap: str, version: int = 4) -> dict:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    body = messages.build(
        messages.request_class(18, version), {"client_software_name": "t", "client_software_version": "1"}
    )
    payload = messages.encode_request(18, version, 1, "apiversions-test", body)
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        _, answer = messages.decode_response(18, version, sock.recv(size, socket.MSG_WAITALL))
    return {
        "api_keys": {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys},
        "supported": {f.name: (f.min_version, f.max_version) for f in answer.supported_features},
        "finalized": {f.name: (f.min_version_level, f.max_version_level) for f in answer.finalized_features},
    }


@pytest.mark.kafka
@pytest.mark.parametrize("kafka", ["3.9", "4", pytest.param("3.5", marks=pytest.mark.kafka35)])
def test_the_pinned_tables_are_what_a_real_broker_of_the_release_advertises(kafka):
    # a 3.5 broker answers ApiVersions v3 at most (a v4 request gets UNSUPPORTED_VERSION and the v0 answer)
    real = api_versions(require_bootstrap(kafka), version=3 if kafka == "3.5" else 4)
    assert real["api_keys"] == dict(apiversions.API_KEYS[kafka])
    assert real["supported"] == dict(apiversions.SUPPORTED_FEATURES[kafka])
    assert real["finalized"] == dict(apiversions.FINALIZED_FEATURES[kafka])


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_the_simulated_cluster_advertises_the_release_cut_to_what_it_reads(kafka, request):
    cluster = request.getfixturevalue("simcluster" + kafka.replace(".", ""))
    sim = api_versions(cluster.bootstrap, version=3 if kafka == "3.5" else 4)
    assert sim["supported"] == dict(apiversions.SUPPORTED_FEATURES[kafka])
    assert sim["finalized"] == dict(apiversions.FINALIZED_FEATURES[kafka])
    release = apiversions.API_KEYS[kafka]
    for key, (lo, hi) in sim["api_keys"].items():
        assert release[key][0] <= lo <= hi <= release[key][1]
    # what the clients of these tests use, at the release's newest version
    for key in (0, 1, 2, 3, 8, 9, 10, 18, 19, 20, 22, 25, 26, 32, 60, 61, 65, 66):
        assert sim["api_keys"][key][1] == release[key][1], key


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
