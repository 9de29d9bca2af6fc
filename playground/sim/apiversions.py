"""Which request versions a client and a cluster of given releases speak to each other: each side's highest version
of the transactional APIs, and what a client sends (the lower of the two, as NetworkClient picks it from the broker's
ApiVersions answer).

Follows clients/src/main/resources/common/message/*Request.json ("validVersions") at each release's tag, and the
request builders that cap a client below its schema: AddPartitionsToTxnRequest.Builder.forClient (v3 at most: v4+
are the brokers' batched verifyOnly requests), and in 4.x ProduceRequest / EndTxnRequest / TxnOffsetCommitRequest,
whose TV2 versions (12 / 5 / 5) a client sends only with transaction.version 2 finalized on the cluster
(TransactionManager.isTransactionV2Enabled), else at most 11 / 4 / 4.

The request version decides how a broker answers (KafkaApis): PRODUCER_FENCED only from KIP-588's versions on
(replies.py), TRANSACTION_ABORTABLE to Produce v11+ where older versions read INVALID_TXN_STATE (the coordinator's
verify_partition), the TV2 paths only for Produce v12 / EndTxn v5 / TxnOffsetCommit v5. Kafka 3.5 brokers speak
Produce v9 at most, so kafka-clients 3.9 sends v9 to them and kafka-clients 3.5 sends v9 to a 3.9 cluster.

A pair of the same release keeps the versions java_base.API_VERSIONS pins for it, as far as its brokers advertise them:
kafka-clients 4.4's schema has InitProducerId v6 (KIP-939's two-phase commit fields), which a 4.4.0 broker does not
advertise (an unstable version there), so it sends v5 to its own release too. Pure data.
"""

from __future__ import annotations

from collections.abc import Mapping

TRANSACTIONAL_APIS = ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit", "Produce")

# A broker's highest version of each, by Kafka version key (spec.KAFKA_RELEASES): what the brokers of 3.5.2, 3.9.1 and
# 4.4.0 advertise in ApiVersions, read off tools/kafka clusters (3.5.2's schema has AddPartitionsToTxn v4, the brokers'
# own verification request, but its brokers do not advertise it).
BROKER_MAX: Mapping[str, Mapping[str, int]] = {
    "3.5": {
        "InitProducerId": 4,
        "AddPartitionsToTxn": 3,
        "AddOffsetsToTxn": 3,
        "EndTxn": 3,
        "TxnOffsetCommit": 3,
        "Produce": 9,
    },
    "3.9": {
        "InitProducerId": 5,
        "AddPartitionsToTxn": 5,
        "AddOffsetsToTxn": 4,
        "EndTxn": 4,
        "TxnOffsetCommit": 4,
        "Produce": 11,
    },
    "4": {
        "InitProducerId": 5,
        "AddPartitionsToTxn": 5,
        "AddOffsetsToTxn": 4,
        "EndTxn": 5,
        "TxnOffsetCommit": 6,
        "Produce": 13,
    },
}

# kafka-clients' highest version of each (its schema, capped by the request builder), by release key, for the
# classic protocol; TV2_MAX replaces three of them for a 4.x client on a cluster with transaction.version 2.
JAVA_CLIENT_MAX: Mapping[str, Mapping[str, int]] = {
    "3.5": {
        "InitProducerId": 4,
        "AddPartitionsToTxn": 3,
        "AddOffsetsToTxn": 3,
        "EndTxn": 3,
        "TxnOffsetCommit": 3,
        "Produce": 9,
    },
    "3.9": {
        "InitProducerId": 5,
        "AddPartitionsToTxn": 3,
        "AddOffsetsToTxn": 4,
        "EndTxn": 4,
        "TxnOffsetCommit": 4,
        "Produce": 11,
    },
    "4": {
        "InitProducerId": 6,
        "AddPartitionsToTxn": 3,
        "AddOffsetsToTxn": 4,
        "EndTxn": 4,
        "TxnOffsetCommit": 4,
        "Produce": 11,
    },
}
TV2_MAX = {"EndTxn": 5, "TxnOffsetCommit": 5, "Produce": 12}

# librdkafka 2.x's Produce (rdkafka_request.c): v10 at most, so v9 to a 3.5 broker.
LIBRDKAFKA_PRODUCE_MAX = 10


def negotiated(client: Mapping[str, int], kafka: str) -> dict[str, int]:
    """What a client of these highest versions sends to a broker of Kafka version `kafka`: the lower of the two."""
    broker = BROKER_MAX[kafka]
    return {api: min(version, broker.get(api, version)) for api, version in client.items()}


def java_versions(pinned: Mapping[str, Mapping[str, int]], release: str, kafka: str, tv2: bool) -> dict[str, int]:
    """The versions kafka-clients of `release` sends to a cluster of `kafka` (`tv2`: its transactions run transaction
    protocol 2). `pinned`: the versions of the same-release pairs, capped by what their brokers advertise."""
    if release == kafka:
        return negotiated(pinned[release], kafka)
    client = dict(JAVA_CLIENT_MAX[release])
    if tv2:
        client.update(TV2_MAX)
    return negotiated(client, kafka)


def librdkafka_produce_version(kafka: str) -> int:
    return min(LIBRDKAFKA_PRODUCE_MAX, BROKER_MAX[kafka]["Produce"])
