"""The brokers' request handling without sockets (playground/simserver/core.py, apis.py): what each API answers, in
which order a connection's answers leave, and that the same inputs always give the same outputs."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import sys
from pathlib import Path

from playground.engine import events as ev
from playground.kafka.records import decode_batches, decode_txn_key, decode_txn_value
from playground.protocol import apiversions, messages, records
from tests.simserver.wire import T0, Client, batch, core_for, fetch_body, produce_body

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
FIND_COORDINATOR, INIT_PID, ADD_PARTITIONS, END_TXN = 10, 22, 24, 26
ROOT = Path(__file__).resolve().parents[2]
API_VERSIONS, DESCRIBE_TXNS, LIST_TXNS, DESCRIBE_PRODUCERS, WRITE_MARKERS = 18, 65, 66, 61, 27


def coordinator(core, txid: str) -> int:
    return core.cluster.txn_coordinator.coordinator_of(txid)


def leader(core, tp: str) -> int:
    return core.cluster.leader_of(tp)


def init(client: Client, txid: str, version: int = 4) -> tuple[int, int]:
    """InitProducerId, retried while the coordinator answers CONCURRENT_TRANSACTIONS (as clients retry it)."""
    core = client.core
    for _ in range(20):
        answer = client.call(
            coordinator(core, txid),
            INIT_PID,
            version,
            {"transactional_id": txid, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1},
        )
        if answer.error_code.name != "concurrent_transactions":
            break
        client.advance(20)
    assert answer.error_code.value == 0, answer
    return answer.producer_id, answer.producer_epoch


def add_partitions(client: Client, txid: str, pid: int, epoch: int, tps: list[tuple[str, int]], version: int = 0):
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return client.call(
        coordinator(client.core, txid),
        ADD_PARTITIONS,
        version,
        {
            "v3_and_below_transactional_id": txid,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        },
    )


def end_txn(client: Client, txid: str, pid: int, epoch: int, commit: bool, version: int = 1):
    return client.call(
        coordinator(client.core, txid),
        END_TXN,
        version,
        {"transactional_id": txid, "producer_id": pid, "producer_epoch": epoch, "committed": commit},
    )


def produce(client: Client, tp: tuple[str, int], data: bytes, txid: str | None = None, version: int = 10):
    return client.call(leader(client.core, f"{tp[0]}-{tp[1]}"), PRODUCE, version, produce_body(*tp, data, txid))


def part_of(produce_answer):
    return produce_answer.responses[0].partition_responses[0]


def test_it_advertises_the_releases_api_versions_and_its_finalized_transaction_version():
    for kafka, tv in (("3.9", None), ("4", 2)):
        client = Client(core_for(kafka))
        answer = client.call(1, API_VERSIONS, 3, {"client_software_name": "test", "client_software_version": "1.0"})
        keys = {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}
        for key in (PRODUCE, FETCH, END_TXN, INIT_PID, DESCRIBE_TXNS):
            # the newest versions as the release has them (clients pick those); the oldest ones kio reads
            assert keys[key][1] == apiversions.API_KEYS[kafka][key][1]
            assert keys[key][0] >= apiversions.API_KEYS[kafka][key][0]
        finalized = {f.name: f.max_version_level for f in answer.finalized_features}
        assert finalized.get("transaction.version") == tv
        assert {f.name for f in answer.supported_features} == {"metadata.version"}  # v3 leaves out min-0 features
        assert client.core.conns[client.conn(1)].software == ("test", "1.0")


def test_it_answers_an_api_versions_it_cannot_read_at_v0_and_keeps_the_connection():
    core = core_for("3.9")
    client = Client(core)
    payload = struct.pack(">hhi", API_VERSIONS, 9, 77) + struct.pack(">h", 1) + b"x" + b"\x00" * 6
    core.receive(core.now_ms, 1, client.conn(1), payload)
    (out,) = core.take_output()
    correlation, body = messages.decode_response(API_VERSIONS, 0, out.data[4:])
    assert (correlation, body.error_code.value) == (77, 35)
    assert [(a.api_key, a.max_version) for a in body.api_keys] == [(API_VERSIONS, 4)]
    assert client.call(1, API_VERSIONS, 0, {}).error_code.value == 0


def test_it_closes_a_connection_that_sends_an_unknown_api_or_garbage_and_nothing_else():
    core = core_for("3.9", topics={"orders": 1})
    for conn, payload in ((1, struct.pack(">hhi", 999, 0, 1)), (2, b"\x00\x00"), (3, struct.pack(">hhi", 0, 10, 1))):
        core.receive(core.now_ms, 1, conn, payload)
        assert core.take_output() == [(conn, None)]
    client = Client(core, first_conn=10)
    assert part_of(produce(client, ("orders", 0), batch([b"a"]))).error_code.value == 0
    assert not core.failures


def test_it_returns_a_batch_as_it_was_produced_with_the_offsets_the_leader_gave_it():
    core = core_for("3.9", topics={"orders": 1})
    client = Client(core)
    produce(client, ("orders", 0), batch([b"a", b"b"]))
    sent = batch([b"c", b"d", b"e"], codec=records.ZSTD)
    answer = part_of(produce(client, ("orders", 0), sent))
    assert (answer.error_code.value, answer.base_offset) == (0, 2)
    fetched = client.call(1, FETCH, 11, fetch_body("orders", 0, 2)).responses[0].partitions[0]
    assert fetched.high_watermark == 5
    assert fetched.records == records.with_offsets(sent, 2, 0)
    assert core.cluster.log("orders-0").batches[1].values == ("c", "d", "e")


def test_it_answers_a_connections_requests_in_order_even_when_the_first_waits():
    core = core_for("3.9", topics={"orders": 1})
    client = Client(core)
    waiting = client.send(1, FETCH, 11, fetch_body("orders", 0, 0, max_wait_ms=500))
    behind = client.send(1, METADATA, 9, {"topics": None, "allow_auto_topic_creation": False})
    assert waiting not in client.answers and behind not in client.answers
    client.advance(499)
    assert not client.answers
    client.advance(2)
    assert list(client.answers) == [waiting, behind]


def test_a_long_polling_fetch_answers_as_soon_as_a_record_is_readable():
    core = core_for("3.9", topics={"orders": 1})
    consumer, producer = Client(core, "consumer"), Client(core, "producer", first_conn=50)
    waiting = consumer.send(1, FETCH, 11, fetch_body("orders", 0, 0, max_wait_ms=500))
    consumer.advance(100)
    produce(producer, ("orders", 0), batch([b"x"]))
    consumer.collect()
    partition = consumer.answers[waiting].responses[0].partitions[0]
    assert core.now_ms < T0 + 500
    assert [r.value for b in records.read_batches(partition.records) for r in b.records()] == [b"x"]


def test_a_read_committed_fetch_stops_at_the_lso_and_lists_the_aborted_transactions():
    core = core_for("3.9", topics={"orders": 1})
    client = Client(core, "producer")
    pid, epoch = init(client, "tx")
    for seq, commit in ((0, False), (1, True), (2, None)):
        assert add_partitions(client, "tx", pid, epoch, [("orders", 0)]).results_by_topic_v3_and_below[0]
        answer = part_of(
            produce(client, ("orders", 0), batch([b"v%d" % seq], pid=pid, epoch=epoch, seq=seq, txn=True), "tx")
        )
        assert answer.error_code.value == 0
        if commit is not None:
            assert end_txn(client, "tx", pid, epoch, commit).error_code.value == 0
            client.advance(50)  # markers written
    # log: v0 (aborted) ABORT v1 COMMIT v2 (open)
    committed = client.call(1, FETCH, 11, fetch_body("orders", 0, 0, committed=True)).responses[0].partitions[0]
    assert (committed.high_watermark, committed.last_stable_offset) == (5, 4)
    assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [(pid, 0)]
    kinds = [b.control_type() or b.records()[0].value for b in records.read_batches(committed.records)]
    assert kinds == [b"v0", "ABORT", b"v1", "COMMIT"]


def test_the_error_of_a_fenced_end_txn_depends_on_the_request_version():
    core = core_for("3.9", topics={"orders": 1})
    old, new = Client(core, "zombie"), Client(core, "new", first_conn=50)
    pid, epoch = init(old, "tx")
    add_partitions(old, "tx", pid, epoch, [("orders", 0)])
    init(new, "tx")  # aborts the zombie's transaction (CONCURRENT_TRANSACTIONS until it did), then bumps the epoch
    assert end_txn(old, "tx", pid, epoch, True, version=1).error_code.name == "invalid_producer_epoch"
    assert end_txn(old, "tx", pid, epoch, True, version=4).error_code.name == "producer_fenced"


def test_it_describes_transactions_producers_and_lists_transactions_on_the_coordinator():
    core = core_for("3.9", topics={"orders": 2})
    client = Client(core)
    pid, epoch = init(client, "tx-a")
    add_partitions(client, "tx-a", pid, epoch, [("orders", 0)])
    produce(client, ("orders", 0), batch([b"x"], pid=pid, epoch=epoch, seq=0, txn=True), "tx-a")
    coord = coordinator(core, "tx-a")
    (state,) = client.call(coord, DESCRIBE_TXNS, 0, {"transactional_ids": ["tx-a"]}).transaction_states
    assert (state.error_code.value, state.transaction_state, state.producer_id) == (0, "Ongoing", pid)
    assert [(t.topic, list(t.partitions)) for t in state.topics] == [("orders", [0])]
    assert state.transaction_start_time_ms >= T0
    other = next(b for b in core.cluster.broker_ids if b != coord)
    assert client.call(other, DESCRIBE_TXNS, 0, {"transactional_ids": ["tx-a"]}).transaction_states[0].error_code == 16
    (missing,) = client.call(
        coordinator(core, "tx-b"), DESCRIBE_TXNS, 0, {"transactional_ids": ["tx-b"]}
    ).transaction_states
    assert (missing.error_code, missing.transaction_start_time_ms) == (105, -1)  # no transaction: -1, as Kafka sends
    listed = client.call(coord, LIST_TXNS, 1, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1})
    assert [(t.transactional_id, t.transaction_state) for t in listed.transaction_states] == [("tx-a", "Ongoing")]
    producers = client.call(1, DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "orders", "partition_indexes": [0]}]})
    (state,) = producers.topics[0].partitions[0].active_producers
    assert (state.producer_id, state.last_sequence, state.current_txn_start_offset) == (pid, 0, 0)


def test_write_txn_markers_aborts_a_hanging_transaction_on_its_partition():
    core = core_for("3.9", topics={"orders": 1})
    client = Client(core)
    pid, epoch = init(client, "tx")
    add_partitions(client, "tx", pid, epoch, [("orders", 0)])
    produce(client, ("orders", 0), batch([b"x"], pid=pid, epoch=epoch, seq=0, txn=True), "tx")
    assert core.cluster.log("orders-0").last_stable_offset == 0
    answer = client.call(
        1,
        WRITE_MARKERS,
        1,
        {
            "markers": [
                {
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "transaction_result": False,
                    "topics": [{"name": "orders", "partition_indexes": [0]}],
                    "coordinator_epoch": 1,
                }
            ]
        },
    )
    assert answer.markers[0].topics[0].partitions[0].error_code.value == 0
    log = core.cluster.log("orders-0")
    assert (log.high_watermark, log.last_stable_offset, log.batches[-1].control) == (2, 2, "ABORT")


def test_it_closes_a_stopped_brokers_connections_and_metadata_leaves_it_out():
    core = core_for("3.9", topics={"orders": 3})
    client = Client(core)
    client.send(
        2,
        METADATA,
        12,
        {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
    )
    core.stop_broker(core.now_ms, 2)
    client.collect()
    assert client.conn(2) in client.closed
    meta = client.call(
        1,
        METADATA,
        12,
        {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
    )
    assert sorted(b.node_id for b in meta.brokers) == [1, 3]
    orders = next(t for t in meta.topics if t.name == "orders")
    assert all(p.leader_id != 2 and 2 not in p.isr_nodes for p in orders.partitions)
    core.receive(core.now_ms, 2, 99, b"")
    assert core.take_output() == [(99, None)]


def test_a_client_gone_mid_request_changes_nothing_but_what_its_request_did():
    core = core_for("3.9", topics={"orders": 1})
    client = Client(core)
    client.send(1, PRODUCE, 10, produce_body("orders", 0, batch([b"x"])))
    core.disconnect(core.now_ms, client.conn(1))
    client.advance(100)
    assert core.take_output() == []
    assert core.cluster.log("orders-0").high_watermark == 1  # the append happened, its answer went nowhere


def test_external_requests_appear_in_the_timeline_under_their_client_id():
    core = core_for("3.9", topics={"orders": 1})
    seen: list[ev.Rpc] = []
    core.cluster.subscribe(lambda e: seen.append(e) if isinstance(e, ev.Rpc) else None)
    client = Client(core, "payments-1")
    init(client, "tx")
    rpcs = [(e.rpc, e.direction, e.src, e.dst) for e in seen if e.correlation < 0]
    coord = coordinator(core, "tx")
    assert ("InitProducerId", "request", "payments-1", f"coordinator(b{coord})") in rpcs
    assert ("InitProducerId", "response", f"coordinator(b{coord})", "payments-1") in rpcs


def replay_digest() -> str:
    """A fixed run of inputs (transactions on a 4.x cluster: Init, AddPartitions, Produce, EndTxn, time passing): the
    digest of every response frame and every event it made."""
    core = core_for("4", topics={"orders": 2})
    events: list[dict] = []
    core.cluster.subscribe(lambda e: events.append(e.to_dict()))
    client = Client(core)
    pid, epoch = init(client, "tx", version=5)
    for i in range(3):
        add_partitions(client, "tx", pid, epoch, [("orders", i % 2)], version=3)
        produce(client, ("orders", i % 2), batch([b"%d" % i], pid=pid, epoch=epoch, seq=i // 2, txn=True), "tx", 11)
        end_txn(client, "tx", pid, epoch, commit=i != 1, version=4)
        client.advance(7)
    return hashlib.sha256(repr((events, client.frames)).encode()).hexdigest()


def test_the_same_inputs_give_the_same_outputs_in_any_process():
    here = replay_digest()
    assert here == replay_digest()
    for hash_seed in ("0", "4242"):  # a replay runs in another process, with other string hashes
        out = subprocess.run(
            [sys.executable, "-c", "from tests.simserver.test_core import replay_digest; print(replay_digest())"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        assert out.stdout.strip() == here, out.stderr[-2000:]


def test_without_record_values_the_log_keeps_only_the_batches_bytes_and_fetch_returns_them_the_same():
    core = core_for("3.9", topics={"orders": 1})
    core.record_values = False
    client = Client(core)
    sent = batch([b"a", b"b"], codec=records.GZIP)
    assert part_of(produce(client, ("orders", 0), sent)).base_offset == 0
    assert core.cluster.log("orders-0").batches[0].values == (None, None)
    fetched = client.call(1, FETCH, 11, fetch_body("orders", 0, 0)).responses[0].partitions[0]
    assert fetched.records == records.with_offsets(sent, 0, 0)


def test_transaction_state_holds_the_coordinators_records_as_the_observer_decodes_them():
    for kafka, version in (("3.9", 0), ("4", 1)):
        core = core_for(kafka, topics={"orders": 1})
        client = Client(core)
        pid, epoch = init(client, "tx")
        add_partitions(client, "tx", pid, epoch, [("orders", 0)])
        end_txn(client, "tx", pid, epoch, True)
        client.advance(50)
        part = core.cluster.txn_coordinator.partition_for("tx")
        broker = core.cluster.leader_of(f"__transaction_state-{part}")
        fetched = client.call(broker, FETCH, 11, fetch_body("__transaction_state", part, 0)).responses[0].partitions[0]
        entries = decode_batches(fetched.records)
        assert {decode_txn_key(e.key) for e in entries} == {"tx"}
        states = [decode_txn_value(e.value) for e in entries]
        assert [s["state"] for s in states] == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
        assert {s["version"] for s in states} == {version}
        assert states[1]["partitions"] == [("orders", 0)] and states[1]["producer_id"] == pid
        assert fetched.high_watermark == 4


JOIN, HEARTBEAT, LEAVE, SYNC = 11, 12, 13, 14


def join(client: Client, group: str, member_id: str = "", session_ms: int = 10_000) -> int:
    """A JoinGroup v5 sent on the group coordinator's connection; returns its correlation (the answer may wait)."""
    return client.send(
        client.core.cluster.groups.coordinator_of(group),
        JOIN,
        5,
        {
            "group_id": group,
            "session_timeout": session_ms,
            "rebalance_timeout": 30_000,
            "member_id": member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"meta-" + client.client_id.encode()}],
        },
    )


def wait_answer(client: Client, correlation: int, cap_ms: int = 60_000):
    deadline = client.core.now_ms + cap_ms
    while correlation not in client.answers and client.core.now_ms < deadline:
        client.advance(10)
    return client.answers.pop(correlation)


def test_the_classic_group_protocol_elects_a_leader_that_assigns_and_a_silent_member_is_removed():
    core = core_for("3.9", topics={"orders": 2}, **{"group.initial.rebalance.delay.ms": 0})
    a, b = Client(core, "a"), Client(core, "b", first_conn=50)
    coord = core.cluster.groups.coordinator_of("g")
    first = wait_answer(a, join(a, "g"))
    assert first.error_code.name == "member_id_required"
    a_id = first.member_id
    a_join = wait_answer(a, join(a, "g", a_id))
    assert (a_join.generation_id, a_join.leader, a_join.member_id) == (1, a_id, a_id)
    # b joins: a's heartbeat says rebalance, a rejoins, both get generation 2; the leader gets the members
    b_id = wait_answer(b, join(b, "g")).member_id
    b_pending = join(b, "g", b_id)
    beat = a.call(
        coord, HEARTBEAT, 3, {"group_id": "g", "generation_id": 1, "member_id": a_id, "group_instance_id": None}
    )
    assert beat.error_code.name == "rebalance_in_progress"
    a_rejoin = wait_answer(a, join(a, "g", a_id))
    b_join = wait_answer(b, b_pending)
    assert a_rejoin.generation_id == b_join.generation_id == 2
    assert sorted(m.member_id for m in a_rejoin.members) == sorted([a_id, b_id]) and not b_join.members
    assert {m.metadata for m in a_rejoin.members} == {b"meta-a", b"meta-b"}
    # b's SyncGroup waits for the leader's, which brings both assignments
    b_sync = b.send(coord, SYNC, 3, {"group_id": "g", "generation_id": 2, "member_id": b_id, "assignments": []})
    assert b_sync not in b.answers
    a_sync = a.call(
        coord,
        SYNC,
        3,
        {
            "group_id": "g",
            "generation_id": 2,
            "member_id": a_id,
            "assignments": [{"member_id": a_id, "assignment": b"A"}, {"member_id": b_id, "assignment": b"B"}],
        },
    )
    b.collect()
    assert (a_sync.assignment, b.answers.pop(b_sync).assignment) == (b"A", b"B")
    assert core.cluster.groups.groups["g"].state == "Stable"
    # b goes silent: after its 10 s session the group rebalances without it
    for _ in range(14):
        a.advance(1000)
        beat = a.call(
            coord, HEARTBEAT, 3, {"group_id": "g", "generation_id": 2, "member_id": a_id, "group_instance_id": None}
        )
    assert beat.error_code.name == "rebalance_in_progress"
    assert list(core.cluster.groups.groups["g"].members) == [a_id]
    assert wait_answer(a, join(a, "g", a_id)).generation_id == 3


def test_a_tv2_produce_to_many_partitions_adds_them_to_the_transaction_together():
    # Kafka 4's leader gathers the partitions of one Produce request that its transaction does not hold yet into
    # one AddPartitionsToTxn (ReplicaManager -> AddPartitionsToTxnManager); one request per partition found the
    # coordinator busy with the first and answered the rest NOT_ENOUGH_REPLICAS, which franz-go retried a metadata
    # refresh later, partition after partition
    core = core_for("4", brokers=1, topics={"orders": 6})
    client = Client(core)
    pid, epoch = init(client, "tv2", version=5)
    parts = [
        {"index": p, "records": batch([f"v{p}".encode()], pid=pid, epoch=epoch, seq=0, txn=True)} for p in range(6)
    ]
    body = {
        "transactional_id": "tv2",
        "acks": -1,
        "timeout": 30000,
        "topic_data": [{"name": "orders", "partition_data": parts}],
    }
    answer = client.call(1, PRODUCE, 12, body)
    assert [(p.index, p.error_code.name) for t in answer.responses for p in t.partition_responses] == [
        (p, "none") for p in range(6)
    ]
    described = client.call(1, DESCRIBE_TXNS, 0, {"transactional_ids": ["tv2"]})
    (state,) = described.transaction_states
    assert state.transaction_state == "Ongoing"
    assert sorted(p for t in state.topics for p in t.partitions) == list(range(6))
