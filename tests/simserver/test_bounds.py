"""What a client sends is bounded as a broker bounds it, and answered with Kafka's own errors
(playground/simserver/bounds.py, quotas.py, storage.py): message sizes, the create-topic policy, CreatePartitions,
client quotas that throttle, size-based retention and the disk. Driven through the pure core, without sockets."""

from __future__ import annotations

from playground.protocol import records
from playground.simserver.quotas import AcceptQuota, QuotaSensor
from tests.simserver.test_core import leader, part_of, produce
from tests.simserver.wire import Client, batch, core_for, fetch_body, produce_body

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
CREATE_TOPICS, DESCRIBE_CONFIGS, CREATE_PARTITIONS = 19, 32, 37


def create(client: Client, name: str, partitions: int, configs: dict[str, str] | None = None, validate_only=False):
    answer = client.call(
        1,
        CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": -1,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout": 30000,
            "validate_only": validate_only,
        },
    )
    return answer.topics[0]


def grow(client: Client, name: str, count: int):
    answer = client.call(
        1,
        CREATE_PARTITIONS,
        3,
        {"topics": [{"name": name, "count": count, "assignments": None}], "timeout": 30000, "validate_only": False},
    )
    return answer.results[0]


def error(answer) -> str:
    return answer.error_code.name.upper()


def throttle_ms(answer) -> int:
    return round(answer.throttle_time.total_seconds() * 1000)


def value(size: int) -> bytes:
    # incompressible enough: every value differs
    return bytes((i * 7919 + size) % 251 for i in range(size))


# ---------------------------------------------------------------------------------------------------- sizes
def test_it_refuses_a_batch_over_message_max_bytes_with_message_too_large_and_keeps_nothing():
    core = core_for("3.9", topics={"orders": 1}, **{"message.max.bytes": "2000"})
    client = Client(core)
    big = batch([value(3000)])
    answer = part_of(produce(client, ("orders", 0), big))
    assert error(answer) == "MESSAGE_TOO_LARGE"
    assert core.cluster.log("orders-0").log_end_offset == 0
    assert error(part_of(produce(client, ("orders", 0), batch([value(1000)])))) == "NONE"


def test_it_holds_a_topic_to_its_own_max_message_bytes_as_franz_gos_large_message_test_does():
    core = core_for("3.9")
    client = Client(core)
    assert error(create(client, "small", 1, {"max.message.bytes": "51200"})) == "NONE"
    assert error(part_of(produce(client, ("small", 0), batch([value(60 * 1024)])))) == "MESSAGE_TOO_LARGE"
    assert error(part_of(produce(client, ("small", 0), batch([value(40 * 1024)])))) == "NONE"


def test_it_refuses_a_batch_larger_than_its_topics_segment_with_record_list_too_large():
    core = core_for("3.9")
    client = Client(core)
    assert error(create(client, "tiny-segments", 1, {"segment.bytes": "1000"})) == "NONE"
    assert error(part_of(produce(client, ("tiny-segments", 0), batch([value(1500)])))) == "RECORD_LIST_TOO_LARGE"


def test_it_answers_invalid_config_for_a_size_that_is_not_a_number():
    client = Client(core_for("3.9"))
    answer = create(client, "bad", 1, {"max.message.bytes": "lots"})
    assert error(answer) == "INVALID_CONFIG"
    assert "max.message.bytes" in answer.error_message and "lots" in answer.error_message
    assert "bad" not in client.core.cluster.topics


def test_it_closes_the_connection_of_an_acks_0_produce_that_fails():
    core = core_for("3.9", topics={"orders": 1}, **{"message.max.bytes": "2000"})
    client = Client(core)
    conn = client.conn(leader(core, "orders-0"))
    client.send(leader(core, "orders-0"), PRODUCE, 9, produce_body("orders", 0, batch([value(3000)]), acks=0))
    assert conn in client.closed  # nothing answers acks=0: the closed connection is how the producer learns


def test_it_describes_the_sizes_it_bounds_as_broker_and_topic_configs():
    core = core_for("3.9", topics={"orders": 1}, **{"message.max.bytes": "2000", "log.retention.bytes": "5000"})
    client = Client(core)
    answer = client.call(
        1,
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": 2, "resource_name": "orders", "configuration_keys": None},
                {"resource_type": 4, "resource_name": "1", "configuration_keys": None},
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    topic = {c.name: (c.value, c.config_source) for c in answer.results[0].configs}
    broker = {c.name: (c.value, c.config_source) for c in answer.results[1].configs}
    assert topic["max.message.bytes"] == ("2000", 4)  # the broker's own setting (STATIC_BROKER_CONFIG)
    assert topic["retention.bytes"] == ("5000", 4)
    assert topic["segment.bytes"] == (str(1 << 30), 5)  # Kafka's default (DEFAULT_CONFIG)
    assert broker["message.max.bytes"] == ("2000", 4)
    assert broker["socket.request.max.bytes"] == ("104857600", 5)


# ---------------------------------------------------------------------------------------------------- the policy
POLICY = {
    "sim.policy.max.partitions.per.topic": "8",
    "sim.policy.max.partitions": "12",
    "sim.policy.max.topics": "3",
    "sim.policy.max.message.bytes": "100000",
}


def test_a_create_topic_policy_refuses_with_policy_violation_and_says_why():
    core = core_for("3.9", **POLICY)
    client = Client(core)
    huge = create(client, "big", 100_000)
    assert error(huge) == "POLICY_VIOLATION"
    assert "100000 partitions" in huge.error_message and "at most 8 per topic" in huge.error_message
    assert "big" not in core.cluster.topics
    assert error(create(client, "a", 8)) == "NONE"
    over_total = create(client, "b", 5)
    assert error(over_total) == "POLICY_VIOLATION" and "13 partitions" in over_total.error_message
    assert error(create(client, "b", 4)) == "NONE"
    over_size = create(Client(core_for("3.9", **POLICY)), "c", 1, {"max.message.bytes": "200000"})
    assert error(over_size) == "POLICY_VIOLATION" and "max.message.bytes" in over_size.error_message


def test_the_policy_counts_topics_and_validate_only_creates_nothing():
    core = core_for("3.9", **{"sim.policy.max.topics": "2"})
    client = Client(core)
    assert error(create(client, "a", 1, validate_only=True)) == "NONE"
    assert core.cluster.user_topics() == []
    assert error(create(client, "a", 1)) == "NONE"
    assert error(create(client, "b", 1)) == "NONE"
    third = create(client, "c", 1)
    assert error(third) == "POLICY_VIOLATION" and "at most 2 topics" in third.error_message


def test_a_topic_metadata_would_create_is_not_made_past_the_policy():
    core = core_for("3.9", **{"sim.policy.max.topics": "1", "auto.create.topics.enable": "true"})
    client = Client(core)
    for name in ("first", "second"):
        answer = client.call(1, METADATA, 12, {"topics": [{"name": name, "topic_id": None}]})
        # the controller's refusal never reaches the client: the topic just does not appear (KRaft auto-creation)
        assert answer.topics[0].error_code.name.upper() == "LEADER_NOT_AVAILABLE"
    assert core.cluster.user_topics() == ["first"]


def test_create_partitions_grows_a_topic_never_shrinks_it_and_keeps_the_policy():
    core = core_for("3.9", topics={"orders": 2}, **POLICY)
    client = Client(core)
    assert error(grow(client, "orders", 4)) == "NONE"
    assert core.cluster.partition_count("orders") == 4
    assert error(part_of(produce(client, ("orders", 3), batch([b"x"])))) == "NONE"
    same = grow(client, "orders", 4)
    assert (error(same), same.error_message) == ("INVALID_PARTITIONS", "Topic already has 4 partition(s).")
    fewer = grow(client, "orders", 3)
    assert error(fewer) == "INVALID_PARTITIONS"
    assert fewer.error_message == "The topic orders currently has 4 partition(s); 3 would not be an increase."
    assert error(grow(client, "nope", 3)) == "UNKNOWN_TOPIC_OR_PARTITION"
    too_many = grow(client, "orders", 9)
    assert error(too_many) == "POLICY_VIOLATION" and "at most 8 per topic" in too_many.error_message
    assert core.cluster.partition_count("orders") == 4


# ---------------------------------------------------------------------------------------------------- quotas
def test_the_quota_sensor_throttles_as_kafkas_rate_does():
    sensor = QuotaSensor(1000.0)  # 1000 units a second, 11 samples of 1 s
    assert sensor.max_value_in_window() == 10_000
    assert sensor.record(5000, 0) == 0  # 5000 over the minimum window of 10 s: 500/s
    # 12,000 in 10 s is 1200/s: (1200 - 1000) / 1000 * 10,000 ms
    assert sensor.record(7000, 0) == 2000
    assert sensor.rate(0) == 1200.0
    # once the windows that held it have passed, the rate is back to nothing
    assert sensor.record(1, 30_000) == 0


def test_the_request_quotas_throttle_is_one_window_at_most_as_kafka_bounds_it():
    sensor = QuotaSensor(10.0)  # 10% of a core, as a session's listener measures its requests
    # a whole core for 10 s, the least window measured: (100 - 10) / 10 * 10,000 ms unbounded, as a byte quota throttles
    assert QuotaSensor(10.0).record(1000.0, 0) == 90_000
    assert sensor.record(1000.0, 0, max_throttle_ms=1000) == 1000
    assert sensor.record(1.0, 0, max_throttle_ms=1000) == 1000  # still over: another window, no more
    assert sensor.record(1.0, 30_000, max_throttle_ms=1000) == 0


def test_the_acceptor_takes_connections_at_the_creation_rate_once_a_burst_has_passed():
    quota = AcceptQuota(20.0)  # max.connection.creation.rate
    delays = [quota.admit(0) for _ in range(205)]
    assert delays[:200] == [0] * 200  # 200 in the least window measured (10 s) is 20 a second
    # then the acceptor waits the throttle before each: one every 50 ms, each behind the one before
    assert delays[200:] == [50, 100, 150, 200, 250]
    reconnecting = AcceptQuota(20.0)
    served_at = [t + reconnecting.admit(t) for t in range(0, 60_000, 3)]  # a client reconnecting every 3 ms
    assert 1100 <= sum(at <= 60_000 for at in served_at) <= 1400  # about 20 a second, not 333


def test_the_acceptors_throttle_is_one_window_at_most():
    quota = AcceptQuota(1.0)
    delays = [quota.admit(0) for _ in range(14)]
    assert delays[10:] == [1000, 2000, 3000, 4000]  # ConnectionQuotas caps each wait at quota.window.size.seconds


def test_a_produce_over_the_quota_is_answered_at_once_with_its_throttle_time_and_its_connection_waits_that_long():
    core = core_for("3.9", topics={"orders": 1}, producer_byte_rate="10000")
    client = Client(core)
    broker = leader(core, "orders-0")
    throttles = []
    for _ in range(12):
        throttles.append(throttle_ms(produce(client, ("orders", 0), batch([value(9000)]))))
    assert throttles[0] == 0 and max(throttles) > 0
    # the connection is muted: its next request is read only once the throttle time has passed
    throttled_at = core.now_ms
    wait_ms = throttles[-1]
    sent = client.send(broker, FETCH, 11, fetch_body("orders", 0, 0))
    assert sent not in client.answers
    client.advance(wait_ms - 1)
    assert sent not in client.answers
    client.advance(2)
    assert sent in client.answers
    assert core.now_ms - throttled_at >= wait_ms


def test_a_fetch_over_the_quota_returns_no_records_and_says_how_long_to_wait():
    core = core_for("3.9", topics={"orders": 1}, consumer_byte_rate="20000")
    client = Client(core)
    for _ in range(10):
        produce(client, ("orders", 0), batch([value(9000)]))
    broker = leader(core, "orders-0")
    answers = [client.call(broker, FETCH, 11, fetch_body("orders", 0, 0), wait_ms=60_000) for _ in range(4)]
    # a Fetch reads at most what the quota lets through in its window (20,000 B/s x 10 s)
    first = answers[0].responses[0].partitions[0].records
    assert 0 < len(first) <= 200_000
    throttled = [a for a in answers if throttle_ms(a) > 0]
    assert throttled and all(a.responses == () for a in throttled)


def test_quotas_are_kept_per_broker_as_kafkas_are():
    core = core_for("3.9", topics={"a": 3}, producer_byte_rate="10000")
    client = Client(core)
    leaders = {leader(core, f"a-{p}"): p for p in range(3)}
    assert len(leaders) == 3
    for _ in range(12):
        produce(client, ("a", leaders[1]), batch([value(9000)]))
    assert throttle_ms(produce(client, ("a", leaders[2]), batch([value(9000)]))) == 0


# ---------------------------------------------------------------------------------------------------- retention
def test_retention_deletes_whole_old_segments_and_moves_the_log_start_offset():
    config = {"log.segment.bytes": "10000", "log.retention.bytes": "30000"}
    core = core_for("3.9", topics={"orders": 1}, **config)
    client = Client(core)
    for _ in range(40):
        answer = part_of(produce(client, ("orders", 0), batch([value(2900), value(2900)])))
        assert error(answer) == "NONE"
    log = core.cluster.log("orders-0")
    assert log.log_start_offset > 0
    assert answer.log_start_offset == log.log_start_offset
    assert 30_000 <= core.storage.parts["orders-0"].size < 30_000 + 10_000 + 6000
    assert log.record_count == log.log_end_offset - log.log_start_offset
    broker = leader(core, "orders-0")
    gone = client.call(broker, FETCH, 11, fetch_body("orders", 0, 0)).responses[0].partitions[0]
    assert gone.error_code.name.upper() == "OFFSET_OUT_OF_RANGE" and gone.log_start_offset == log.log_start_offset
    earliest = client.call(
        broker,
        LIST_OFFSETS,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {"name": "orders", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}]}
            ],
        },
    )
    assert earliest.topics[0].partitions[0].offset == log.log_start_offset
    kept = client.call(broker, FETCH, 11, fetch_body("orders", 0, log.log_start_offset)).responses[0].partitions[0]
    assert records.read_batches(kept.records)[0].base_offset == log.log_start_offset


def test_retention_never_deletes_past_the_high_watermark():
    config = {"log.segment.bytes": "1000", "log.retention.bytes": "0", "sim.replication.latency.ms": "50"}
    core = core_for("3.9", topics={"orders": 1}, **config)
    client = Client(core)
    broker = leader(core, "orders-0")
    client.send(broker, PRODUCE, 10, produce_body("orders", 0, batch([value(900)]), acks=1))
    log = core.cluster.log("orders-0")
    assert log.high_watermark == 0 and log.log_start_offset == 0  # not replicated: nothing may go
    client.advance(100)
    produce(client, ("orders", 0), batch([value(900)]))
    assert 0 < log.log_start_offset <= log.high_watermark


def test_an_open_transaction_whose_first_records_retention_deleted_holds_the_lso_at_the_log_start():
    from tests.simserver.test_core import add_partitions, init

    config = {"log.segment.bytes": "3000", "log.retention.bytes": "3000"}
    core = core_for("3.9", topics={"orders": 1}, **config)
    client = Client(core)
    pid, epoch = init(client, "tx")
    add_partitions(client, "tx", pid, epoch, [("orders", 0)])
    for seq in range(6):
        data = batch([value(2500)], pid=pid, epoch=epoch, seq=seq, txn=True)
        assert error(part_of(produce(client, ("orders", 0), data, txid="tx"))) == "NONE"
    log = core.cluster.log("orders-0")
    assert log.log_start_offset > 0
    assert log.last_stable_offset == log.log_start_offset


def test_the_disk_full_refuses_produce_with_policy_violation_and_a_reason():
    config = {"sim.retained.max.bytes": "50000"}  # no retention: the disk fills
    core = core_for("3.9", topics={"orders": 1}, **config)
    client = Client(core)
    answers = [part_of(produce(client, ("orders", 0), batch([value(9000)]))) for _ in range(8)]
    refused = [a for a in answers if error(a) != "NONE"]
    assert refused and all(error(a) == "POLICY_VIOLATION" for a in refused)
    assert "disk is full" in refused[0].error_message and "50000" in refused[0].error_message
    assert core.storage.retained_bytes <= 50_000


def test_deleting_a_topic_frees_what_it_retained():
    core = core_for("3.9", **{"sim.retained.max.bytes": "30000"})
    client = Client(core)
    create(client, "t", 1)
    for _ in range(3):
        produce(client, ("t", 0), batch([value(9000)]))
    assert core.storage.retained_bytes > 20_000
    client.call(1, 20, 6, {"topics": [{"name": "t", "topic_id": None}], "timeout": 30000})
    assert core.storage.retained_bytes == 0


def test_the_same_inputs_bound_the_same_way_on_a_replay():
    def run():
        config = {"log.segment.bytes": "5000", "log.retention.bytes": "12000", "producer_byte_rate": "20000"}
        core = core_for("3.9", topics={"orders": 2}, **config)
        client = Client(core)
        out = []
        for i in range(30):
            answer = produce(client, ("orders", i % 2), batch([value(2000 + i)]))
            out.append((throttle_ms(answer), part_of(answer).base_offset, part_of(answer).log_start_offset))
        return out, [core.cluster.log(f"orders-{p}").log_start_offset for p in range(2)]

    assert run() == run()


def test_the_clients_history_keeps_a_bounded_part_of_each_value_the_log_keeps_them_whole():
    from playground.sim.cluster import Cluster
    from playground.simserver.apis import HANDLERS
    from playground.simserver.core import ServerCore

    cluster = Cluster(brokers=1, topics={"orders": 1}, config={}, keep_events=False)
    core = ServerCore(cluster, {1: ("127.0.0.1", 9001)}, track_clients=True, handlers=HANDLERS)
    client = Client(core, client_id="flood")
    big = b"x" * 100_000
    for _ in range(3):
        assert error(part_of(produce(client, ("orders", 0), batch([big])))) == "NONE"
    (values,) = {op["args"]["value"] for op in core.clients.ops if op["action"] == "produce"}
    assert len(values) < 200 and "100,000 characters, sha256" in values  # UTF-8: shown as text
    assert core.cluster.log("orders-0").batches[0].values[0] == "x" * 100_000


class _Socket:
    """What after_core sees of a server's connection: its mutes, and how many requests it last settled to."""

    def __init__(self) -> None:
        self.muted: set[str] = set()
        self.in_core: int | None = None

    def settle(self, in_core: int) -> None:
        self.in_core = in_core

    def mute(self, why: str) -> None:
        self.muted.add(why)

    def unmute(self, why: str) -> None:
        self.muted.discard(why)


def test_after_core_looks_only_at_connections_the_core_touched_and_reads_a_throttled_one_again_when_it_ends():
    from playground.simserver.server import QUEUE, after_core

    core = core_for("3.9", topics={"orders": 1, "other": 1}, producer_byte_rate="10000")
    flooder, quiet = Client(core), Client(core, "quiet", first_conn=100)
    broker = leader(core, "orders-0")
    quiet.call(broker, FETCH, 11, fetch_body("other", 0, 0), wait_ms=0)
    sockets = {flooder.conn(broker): _Socket(), quiet.conn(broker): _Socket()}
    after_core(sockets, core)
    assert sockets[quiet.conn(broker)].in_core == 0
    sockets[quiet.conn(broker)].in_core = None
    throttles = [throttle_ms(produce(flooder, ("orders", 0), batch([value(9000)]))) for _ in range(12)]
    after_core(sockets, core)
    throttled = sockets[flooder.conn(broker)]
    assert QUEUE in throttled.muted and throttled.in_core == 0
    assert sockets[quiet.conn(broker)].in_core is None  # nothing of its changed: not looked at
    core.advance(core.now_ms + throttles[-1] - 1)
    after_core(sockets, core)
    assert QUEUE in throttled.muted
    core.advance(core.now_ms + 2)  # the throttle's end touches the connection: nothing else does
    after_core(sockets, core)
    assert QUEUE not in throttled.muted
