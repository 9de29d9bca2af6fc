"""The APIs the simulated cluster serves since issue 32, as Kafka answers them: DeleteRecords, OffsetDelete,
AlterConfigs and IncrementalAlterConfigs, the brokers' batched AddPartitionsToTxn (v4+), and the offsets APIs by
topic id (OffsetCommit v10, TxnOffsetCommit v6, KIP-1319)."""

from __future__ import annotations

import uuid

from tests.simserver.wire import Client, batch, core_for, fetch_body, produce_body

PRODUCE, FETCH, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, INIT_PID = 0, 1, 8, 9, 10, 22
DELETE_RECORDS, ADD_PARTITIONS, TXN_OFFSET_COMMIT, DESCRIBE_CONFIGS, ALTER_CONFIGS = 21, 24, 28, 32, 33
INCREMENTAL_ALTER_CONFIGS, OFFSET_DELETE = 44, 47


def _name(code) -> str | None:
    return None if code.value == 0 else code.name.upper()


def _single_broker(kafka: str = "3.9", **topics: int) -> Client:
    return Client(core_for(kafka, brokers=1, topics=topics or {"t": 1}))


def _produce(client: Client, values: list[bytes]) -> None:
    answer = client.call(1, PRODUCE, 9, produce_body("t", 0, batch(values), acks=1))
    assert answer.responses[0].partition_responses[0].error_code.value == 0
    client.advance(100)


def _delete(client: Client, offset: int, topic: str = "t"):
    body = {"topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": offset}]}], "timeout": 30000}
    part = client.call(1, DELETE_RECORDS, 2, body).topics[0].partitions[0]
    return _name(part.error_code), int(part.low_watermark)


def test_delete_records_moves_the_log_start_to_the_offset_inside_a_batch_and_a_fetch_below_it_is_out_of_range():
    client = _single_broker()
    _produce(client, [b"a", b"b", b"c"])
    _produce(client, [b"d"])
    assert _delete(client, 2) == (None, 2)
    fetched = client.call(1, FETCH, 12, fetch_body("t", 0, 1)).responses[0].partitions[0]
    assert _name(fetched.error_code) == "OFFSET_OUT_OF_RANGE" and int(fetched.log_start_offset) == 2
    assert _delete(client, 9) == ("OFFSET_OUT_OF_RANGE", -1)  # past the high watermark
    assert _delete(client, -1) == (None, 4)  # -1: up to the high watermark
    assert _delete(client, 1) == (None, 4)  # never backwards
    assert client.core.storage.parts["t-0"].size == 0  # the segments wholly before it are gone


def test_delete_records_refuses_a_compacted_topic_and_an_unknown_partition():
    client = _single_broker()
    body = {
        "resources": [
            {"resource_type": 2, "resource_name": "t", "configs": [{"name": "cleanup.policy", "value": "compact"}]}
        ]
    }
    assert _name(client.call(1, ALTER_CONFIGS, 2, body).responses[0].error_code) is None
    assert _delete(client, 0) == ("POLICY_VIOLATION", -1)
    assert _delete(client, 0, topic="nope") == ("UNKNOWN_TOPIC_OR_PARTITION", -1)


def _configs(client: Client) -> dict[str, str]:
    body = {"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None}]}
    result = client.call(1, DESCRIBE_CONFIGS, 4, body).results[0]
    return {c.name: c.value for c in result.configs if int(c.config_source) == 1}  # the topic's own


def _incremental(client: Client, ops: list[tuple[str, int, str | None]], validate_only: bool = False):
    configs = [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]
    body = {
        "resources": [{"resource_type": 2, "resource_name": "t", "configs": configs}],
        "validate_only": validate_only,
    }
    result = client.call(1, INCREMENTAL_ALTER_CONFIGS, 1, body).responses[0]
    return _name(result.error_code), result.error_message


def test_incremental_alter_configs_sets_deletes_appends_and_subtracts_a_topics_configs():
    client = _single_broker()
    assert _incremental(client, [("retention.ms", 0, "1000"), ("cleanup.policy", 2, "compact")]) == (None, None)
    assert _configs(client) == {"retention.ms": "1000", "cleanup.policy": "delete,compact"}
    assert _incremental(client, [("cleanup.policy", 3, "delete"), ("retention.ms", 1, None)]) == (None, None)
    assert _configs(client) == {"cleanup.policy": "compact"}
    assert _incremental(client, [("retention.ms", 0, "5")], validate_only=True) == (None, None)
    assert _configs(client) == {"cleanup.policy": "compact"}


def test_alter_configs_refuse_what_kafkas_controller_refuses():
    client = _single_broker()
    assert _incremental(client, [("retention.ms", 2, "5")]) == (
        "INVALID_CONFIG",
        "Can't APPEND to key retention.ms because its type is not LIST.",
    )
    assert _incremental(client, [("no.such.config", 0, "1")]) == (
        "INVALID_CONFIG",
        "Unknown topic config name: no.such.config",
    )
    assert _incremental(client, [("segment.bytes", 0, "x")])[0] == "INVALID_CONFIG"
    body = {"resources": [{"resource_type": 2, "resource_name": "gone", "configs": []}]}
    answer = client.call(1, ALTER_CONFIGS, 2, body).responses[0]
    assert (_name(answer.error_code), answer.error_message) == (
        "UNKNOWN_TOPIC_OR_PARTITION",
        "The topic 'gone' does not exist.",
    )
    # AlterConfigs replaces the whole set
    body = {
        "resources": [{"resource_type": 2, "resource_name": "t", "configs": [{"name": "retention.ms", "value": "7"}]}]
    }
    client.call(1, ALTER_CONFIGS, 2, body)
    assert _configs(client) == {"retention.ms": "7"}


def _commit(client: Client, group: str, offset: int, topic: str = "t") -> None:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": offset}]}],
    }
    assert _name(client.call(1, OFFSET_COMMIT, 8, body).topics[0].partitions[0].error_code) is None


def _committed(client: Client, group: str) -> int:
    body = {"group_id": group, "topics": [{"name": "t", "partition_indexes": [0]}]}
    return int(client.call(1, OFFSET_FETCH, 7, body).topics[0].partitions[0].committed_offset)


def test_offset_delete_removes_an_empty_groups_offsets_and_refuses_a_subscribed_consumer_groups():
    client = _single_broker()
    _commit(client, "g", 5)
    body = {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}
    answer = client.call(1, OFFSET_DELETE, 0, body)
    assert _name(answer.error_code) is None and _name(answer.topics[0].partitions[0].error_code) is None
    assert _committed(client, "g") == -1
    assert _name(client.call(1, OFFSET_DELETE, 0, {**body, "group_id": "never"}).error_code) == "GROUP_ID_NOT_FOUND"
    # a consumer group whose member subscribes to t (ConsumerProtocolSubscription v0: version, [topics], userdata)
    subscription = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\xff\xff\xff\xff"
    join = {
        "group_id": "c",
        "session_timeout": 30000,
        "rebalance_timeout": 30000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription}],
    }
    _commit(client, "c", 3)
    client.call(1, 11, 3, join, wait_ms=10_000)
    answer = client.call(1, OFFSET_DELETE, 0, {**body, "group_id": "c"})
    assert _name(answer.topics[0].partitions[0].error_code) == "GROUP_SUBSCRIBED_TO_TOPIC"


def test_the_brokers_batched_add_partitions_to_txn_verifies_as_the_coordinator_does():
    client = _single_broker()
    init = client.call(
        1,
        INIT_PID,
        4,
        {"transactional_id": "tx", "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1},
    )
    pid, epoch = int(init.producer_id), int(init.producer_epoch)

    def verify(producer_id: int, tps: list[tuple[str, int]]) -> dict[tuple[str, int], str | None]:
        txn = {
            "transactional_id": "tx",
            "producer_id": producer_id,
            "producer_epoch": epoch,
            "verify_only": True,
            "topics": [{"name": t, "partitions": [p]} for t, p in tps],
        }
        (result,) = client.call(1, ADD_PARTITIONS, 5, {"transactions": [txn]}).results_by_transaction
        return {
            (t.name, int(p.partition_index)): _name(p.partition_error_code)
            for t in result.topic_results
            for p in t.results_by_partition
        }

    assert verify(pid, [("t", 0)]) == {("t", 0): "TRANSACTION_ABORTABLE"}  # not in the transaction (yet)
    added = {
        "v3_and_below_transactional_id": "tx",
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": "t", "partitions": [0]}],
    }
    client.call(1, ADD_PARTITIONS, 3, added)
    assert verify(pid, [("t", 0)]) == {("t", 0): None}
    assert verify(pid + 1, [("t", 0)]) == {("t", 0): "INVALID_PRODUCER_ID_MAPPING"}
    assert verify(pid, [("t", 0), ("nope", 0)]) == {
        ("t", 0): "OPERATION_NOT_ATTEMPTED",
        ("nope", 0): "UNKNOWN_TOPIC_OR_PARTITION",
    }


def test_the_offsets_apis_by_topic_id_answer_unknown_topic_id_for_an_id_no_topic_has():
    client = _single_broker("4")
    known = client.core.topic_id("t")
    unknown = uuid.UUID(int=12345)
    body = {
        "group_id": "g",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [
            {"topic_id": tid, "partitions": [{"partition_index": 0, "committed_offset": 4}]} for tid in (known, unknown)
        ],
    }
    answer = client.call(1, OFFSET_COMMIT, 10, body)
    assert [(t.topic_id, _name(t.partitions[0].error_code)) for t in answer.topics] == [
        (known, None),
        (unknown, "UNKNOWN_TOPIC_ID"),
    ]
    fetched = client.call(
        1, OFFSET_FETCH, 10, {"groups": [{"group_id": "g", "topics": [{"topic_id": known, "partition_indexes": [0]}]}]}
    )
    (topic,) = fetched.groups[0].topics
    assert topic.topic_id == known and int(topic.partitions[0].committed_offset) == 4
    txn = {
        "transactional_id": "tx",
        "group_id": "g",
        "producer_id": 1,
        "producer_epoch": 0,
        "topics": [{"topic_id": unknown, "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    }
    answer = client.call(1, TXN_OFFSET_COMMIT, 6, txn)
    assert _name(answer.topics[0].partitions[0].error_code) == "UNKNOWN_TOPIC_ID"
