"""KafkaBackend against the real broker (tools/kafka; `make test` starts a 3-node cluster).

Each test builds a session of its own (topics, transactional ids and groups under a fresh `pg-<hex>-` prefix) and
closes it, which deletes its topics.
"""

from __future__ import annotations

import itertools
import os
import time

import pytest

from playground.engine import events as ev
from playground.engine.backend import BackendError
from playground.engine.spec import ActorSpec, ClusterSpec, Step, TopicSpec
from playground.kafka.backend import KafkaBackend
from playground.kafka.observer import Observer, ObserverError

pytestmark = pytest.mark.kafka


def producer(name: str, txid: str | None = None, **config) -> ActorSpec:
    conf = {"enable.idempotence": True, **config}
    if txid:
        conf["transactional.id"] = txid
    return ActorSpec(name, "producer", conf)


def consumer(
    name: str, topics: tuple[str, ...], isolation: str = "read_committed", group: str | None = None
) -> ActorSpec:
    conf = {"isolation.level": isolation}
    if group:
        conf["group.id"] = group
    return ActorSpec(name, "consumer", conf, topics)


def session(topics: dict[str, int], *actors: ActorSpec, brokers: int = 3, config=None, events=None) -> KafkaBackend:
    cluster = ClusterSpec(
        brokers=brokers, config=config or {}, topics=tuple(TopicSpec(t, n) for t, n in topics.items())
    )
    return KafkaBackend(cluster, {a.name: a for a in actors}, on_event=events.append if events is not None else None)


def run(b: KafkaBackend, *steps: str | tuple[str, dict]) -> list[str]:
    out = []
    for s in steps:
        label, args = (s, {}) if isinstance(s, str) else s
        actor, _, action = label.partition(".")
        out.append(b.apply(Step(actor, action, args)))
    return out


def log_of(obs, tp):
    return [e.get("control") or e["value"] for e in obs["partitions"][tp]["log"]]


def produce(actor: str, value: str, topic: str = "orders", partition: int = 0, **extra) -> tuple[str, dict]:
    return (f"{actor}.produce", {"topic": topic, "partition": partition, "value": value, **extra})


def test_commit_and_abort_leave_markers_with_producer_id_and_epoch():
    b = session(
        {"orders": 2},
        producer("A", "order-pay"),
        consumer("rc", ("orders",)),
        consumer("ru", ("orders",), "read_uncommitted"),
    )
    try:
        assert (
            run(
                b,
                "A.init_transactions",
                "A.begin_transaction",
                produce("A", "c-0"),
                produce("A", "c-1", partition=1),
                "A.commit_transaction",
                "A.begin_transaction",
                produce("A", "a-0"),
                "A.abort_transaction",
                "rc.poll",
                "ru.poll",
            )
            == ["ok"] * 10
        )
        obs = b.observe()
    finally:
        b.close()
    p0 = obs["partitions"]["orders-0"]
    assert log_of(obs, "orders-0") == ["c-0", "COMMIT", "a-0", "ABORT"]
    assert log_of(obs, "orders-1") == ["c-1", "COMMIT"]
    pids = {e["producer_id"] for e in p0["log"]}
    assert len(pids) == 1 and pids.pop() >= 0
    assert [e["epoch"] for e in p0["log"]] == [0, 0, 0, 0]
    assert p0["log"][0]["transactional"] is True and p0["log"][0]["sequence"] == 0
    assert (p0["high_watermark"], p0["last_stable_offset"], p0["log_end_offset"]) == (4, 4, 4)
    assert obs["consumers"]["rc"] == {"orders-0": ["c-0"], "orders-1": ["c-1"]}
    assert obs["consumers"]["ru"] == {"orders-0": ["c-0", "a-0"], "orders-1": ["c-1"]}
    assert obs["transactions"]["order-pay"]["state"] == "CompleteAbort"
    assert obs["transactions"]["order-pay"]["epoch"] == 0


def test_a_second_init_fences_the_first_instance():
    b = session({"orders": 1}, producer("A", "order-pay"), producer("B", "order-pay"))
    try:
        outcomes = run(
            b,
            "A.init_transactions",
            "A.begin_transaction",
            produce("A", "a-1"),
            "B.init_transactions",
            "A.commit_transaction",
            "B.begin_transaction",
            produce("B", "b-1"),
            "B.commit_transaction",
        )
        obs = b.observe()
        view = b.view()
    finally:
        b.close()
    assert outcomes == ["ok", "ok", "ok", "ok", "_FENCED", "ok", "ok", "ok"]
    log = obs["partitions"]["orders-0"]["log"]
    assert [(e.get("control") or e["value"], e["epoch"]) for e in log] == [
        ("a-1", 0),
        ("ABORT", 1),
        ("b-1", 2),
        ("COMMIT", 2),
    ]
    assert len({e["producer_id"] for e in log}) == 1  # same transactional id, same producer id, higher epoch
    assert obs["transactions"]["order-pay"]["state"] == "CompleteCommit"
    assert obs["transactions"]["order-pay"]["epoch"] == 2
    a = view["producers"]["A"]
    assert a["fenced"] is True and a["state"] == "FATAL_ERROR"
    assert a["last_error"]["error"] == "_FENCED" and a["last_error"]["op"] == "commit_transaction"
    assert a["counters"] == {"app_sent_ok": 1, "landed": 1, "read_committed_received": 0}
    assert view["producers"]["B"]["epoch"] == 2


def test_an_open_transaction_holds_the_lso_for_everyone():
    b = session(
        {"orders": 1},
        producer("T", "hanging"),
        producer("plain"),
        consumer("rc", ("orders",)),
        consumer("ru", ("orders",), "read_uncommitted"),
    )
    try:
        run(
            b,
            "T.init_transactions",
            "T.begin_transaction",
            produce("T", "t-1"),
            produce("plain", "p-1"),
            produce("plain", "p-2"),
            "rc.poll",
            "ru.poll",
        )
        held = b.observe()
        run(b, "T.commit_transaction", "rc.poll")
        released = b.observe()
    finally:
        b.close()
    part = held["partitions"]["orders-0"]
    assert (part["high_watermark"], part["last_stable_offset"]) == (3, 0)
    assert held["consumers"]["rc"]["orders-0"] == []  # p-1, p-2 are decided but sit above the LSO
    assert held["consumers"]["ru"]["orders-0"] == ["t-1", "p-1", "p-2"]
    assert held["transactions"]["hanging"]["state"] == "Ongoing"
    assert [e["transactional"] for e in part["log"]] == [True, False, False]
    part = released["partitions"]["orders-0"]
    assert (part["high_watermark"], part["last_stable_offset"]) == (4, 4)
    assert released["consumers"]["rc"]["orders-0"] == ["t-1", "p-1", "p-2"]


def test_it_tells_the_anomaly_checker_what_each_poll_read_and_the_lso_after_it():
    from playground.scenario.anomalies import reads

    b = session(
        {"orders": 1},
        producer("T", "hanging"),
        producer("plain"),
        consumer("rc", ("orders",)),
        consumer("ru", ("orders",), "read_uncommitted"),
    )
    try:
        run(b, "T.init_transactions", "T.begin_transaction", produce("T", "t-1"), produce("plain", "p-1"))
        got = {}
        for actor in ("ru", "rc"):
            step = Step(actor, "poll")
            assert b.apply(step) == "ok"
            got[actor] = reads(b, step)
    finally:
        b.close()
    assert got["ru"] == {"read": [["orders-0", 0], ["orders-0", 1]], "lso": {"orders-0": 0}}
    assert got["rc"] == {}  # read_committed read nothing: t-1 is open and holds the LSO at 0


def test_an_unreachable_cluster_is_a_clear_error_within_seconds_and_a_retry_works(settings, kafka_bootstrap):
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:1"
    t0 = time.monotonic()
    with pytest.raises(BackendError, match="Cannot reach the Kafka cluster"):
        session({"orders": 1}, producer("A", "x"))
    assert time.monotonic() - t0 < 8
    settings.KAFKA_BOOTSTRAP_SERVERS = ""
    with pytest.raises(BackendError, match=r"No Kafka 3\.9\.1 cluster is configured: set KAFKA_BOOTSTRAP_SERVERS"):
        session({"orders": 1})
    t0 = time.monotonic()
    dead = Observer("127.0.0.1:1", {}, "pg-dead-")
    with pytest.raises(ObserverError, match="does not answer"):
        dead.check_alive()  # what every step and view() of a session checks first
    dead.close()
    assert time.monotonic() - t0 < 6
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_bootstrap  # the session can retry
    b = session({"orders": 1}, producer("A"))
    try:
        assert run(b, produce("A", "x")) == ["ok"]
    finally:
        b.close()


def test_topics_live_under_the_session_prefix_and_go_away_on_close(admin):
    b = session({"orders": 2}, producer("A"))
    prefix = b.prefix
    try:
        assert prefix.startswith("pg-") and len(prefix) == len("pg-12345678-")
        topics = admin.list_topics(timeout=5).topics
        assert f"{prefix}orders" in topics and len(topics[f"{prefix}orders"].partitions) == 2
        with pytest.raises(BackendError, match="not part of this session"):
            b.apply(Step("A", "produce", {"topic": "__consumer_offsets", "partition": 0, "value": "x"}))
        with pytest.raises(BackendError, match="not part of this session"):
            b.apply(Step("A", "produce", {"topic": "other", "value": "x"}))
        with pytest.raises(ObserverError, match="outside this session's prefix"):
            b.observer.read_log("orders", 0)
        with pytest.raises(ObserverError, match="outside this session's prefix"):
            b.observer.delete_session(["__transaction_state"], [])
        with pytest.raises(BackendError, match="unknown actor"):
            b.apply(Step("nobody", "produce", {"topic": "orders", "value": "x"}))
        other = session({"orders": 1}, producer("A"))
        try:
            assert other.prefix != prefix  # two sessions with the same scenario never share a topic
            run(other, produce("A", "elsewhere"))
            assert b.observe()["partitions"]["orders-0"]["log"] == []
        finally:
            other.close()
    finally:
        b.close()
    deadline = time.monotonic() + 15
    while f"{prefix}orders" in admin.list_topics(timeout=5).topics and time.monotonic() < deadline:
        time.sleep(0.3)
    assert f"{prefix}orders" not in admin.list_topics(timeout=5).topics


def test_crash_kills_the_worker_and_leaves_the_transaction_open():
    b = session({"orders": 1}, producer("A", "crashy"), consumer("rc", ("orders",)))
    try:
        run(b, "A.init_transactions", "A.begin_transaction", produce("A", "lost-1"))
        pid = b.actors["A"].proc.pid
        os.kill(pid, 0)  # alive
        assert run(b, "A.crash") == ["ok"]
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        with pytest.raises(BackendError, match="restart it first"):
            b.apply(Step("A", "commit_transaction"))
        view = b.view()
        assert view["producers"]["A"]["state"] == "CRASHED"
        assert view["transactions"]["crashy"]["state"] == "Ongoing"  # nobody told the coordinator
        assert view["partitions"]["orders-0"]["last_stable_offset"] == 0
        assert (
            run(
                b,
                "A.restart",
                "A.init_transactions",
                "A.begin_transaction",
                produce("A", "redo-1"),
                "A.commit_transaction",
                "rc.poll",
            )
            == ["ok"] * 6
        )
        assert b.actors["A"].proc.pid != pid
        obs = b.observe()
    finally:
        b.close()
    assert [(e.get("control") or e["value"], e["epoch"]) for e in obs["partitions"]["orders-0"]["log"]] == [
        ("lost-1", 0),
        ("ABORT", 1),
        ("redo-1", 2),
        ("COMMIT", 2),
    ]
    assert obs["consumers"]["rc"]["orders-0"] == ["redo-1"]


def test_close_aborts_the_open_transaction():
    b = session({"orders": 1}, producer("A", "closing"))
    try:
        assert run(b, "A.init_transactions", "A.begin_transaction", produce("A", "x-1"), "A.close") == ["ok"] * 4
        obs = b.observe()
        assert b.view()["producers"]["A"]["state"] == "CLOSED"
    finally:
        b.close()
    assert log_of(obs, "orders-0") == ["x-1", "ABORT"]
    assert obs["partitions"]["orders-0"]["log"][1]["epoch"] == 0  # the producer aborted itself: no fencing bump
    assert obs["transactions"]["closing"]["state"] == "CompleteAbort"


def test_offsets_in_a_transaction_become_committed_group_offsets():
    b = session(
        {"input": 1, "output": 1},
        producer("feed"),
        producer("copy", "copier-0"),
        consumer("in", ("input",), group="copier"),
    )
    try:
        run(
            b,
            produce("feed", "m-1", topic="input"),
            produce("feed", "m-2", topic="input"),
            "copy.init_transactions",
            "in.poll",
            "copy.begin_transaction",
            ("copy.produce", {"topic": "output", "from": "in"}),
            ("copy.send_offsets_to_transaction", {"consumer": "in"}),
        )
        pending = b.view()
        assert pending["groups"]["copier"] == {"input-0": None}  # pending transactional offsets are not committed
        run(b, "copy.commit_transaction")
        obs = b.observe()
    finally:
        b.close()
    assert obs["groups"] == {"copier": {"input-0": 2}}
    assert log_of(obs, "output-0") == ["m-1", "m-2", "COMMIT"]


def test_view_has_the_contract_shape_and_events_use_the_simulators_vocabulary():
    events: list = []
    b = session({"orders": 1}, producer("A", "viewed"), consumer("rc", ("orders",)), events=events)
    try:
        run(b, "A.init_transactions", "A.begin_transaction", produce("A", "v-1"), "A.commit_transaction", "rc.poll")
        view = b.view(log_limit=1)
    finally:
        b.close()
    assert view["backend"] == "kafka" and view["time_ms"] > 0
    assert set(view["brokers"]) >= {"1"} and all(v["up"] for v in view["brokers"].values())
    part = view["partitions"]["orders-0"]
    assert part["topic"] == "orders" and part["partition"] == 0 and part["leader"] in {int(x) for x in view["brokers"]}
    assert part["window_start"] == 1 and [e["fate"] for e in part["log"]] == ["marker"]
    txn = view["transactions"]["viewed"]
    assert txn["state"] == "CompleteCommit" and txn["partitions"] == [] and txn["timeout_ms"] == 60000
    assert 0 <= txn["coordinator_partition"] < 50 and txn["coordinator_broker"] >= 1
    assert view["consumers"]["rc"]["positions"] == {"orders-0": 2}
    assert view["consumers"]["rc"]["received"] == {"orders-0": [{"offset": 0, "value": "v-1"}]}
    rpcs = {t["rpc"] for t in view["timeline"]}
    assert {"InitProducerId", "AddPartitionsToTxn", "Produce", "EndTxn"} <= rpcs
    assert any(t["src"] == "A" and t["dst"].startswith("coordinator(b") for t in view["timeline"])
    assert view["unobservable"] and all(isinstance(s, str) for s in view["unobservable"])
    kinds = {type(e) for e in events}
    assert {
        ev.Rpc,
        ev.Append,
        ev.Marker,
        ev.TxnState,
        ev.Watermarks,
        ev.ClientState,
        ev.Delivery,
        ev.Consume,
        ev.Step,
    } <= kinds
    states = [(e.from_state, e.to_state) for e in events if isinstance(e, ev.TxnState)]
    assert [s[1] for s in states][:4] == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    assert all(e.record_bytes > 0 for e in events if isinstance(e, ev.TxnState))
    assert [e.seq for e in events] == sorted(e.seq for e in events)


def test_the_transaction_timeout_aborts_and_fences_the_producer():
    # transaction.timeout.ms is a client setting: 3 s here. The test cluster's abort scan runs every second.
    b = session({"orders": 1}, producer("slow", "slow-txn"), config={"transaction.timeout.ms": 3000})
    try:
        run(
            b,
            "slow.init_transactions",
            "slow.begin_transaction",
            produce("slow", "s-1"),
            ("clock.advance", {"ms": 6000}),
        )
        outcomes = run(b, produce("slow", "s-2"), "slow.commit_transaction")
        obs = b.observe()
    finally:
        b.close()
    assert outcomes == ["INVALID_PRODUCER_EPOCH", "_FENCED"]
    assert [(e.get("control") or e["value"], e["epoch"]) for e in obs["partitions"]["orders-0"]["log"]] == [
        ("s-1", 0),
        ("ABORT", 1),
    ]
    assert obs["transactions"]["slow-txn"]["state"] == "CompleteAbort"
    assert obs["transactions"]["slow-txn"]["epoch"] == 1


def test_broker_steps_are_refused_without_broker_control(settings):
    settings.KAFKA_BROKER_CONTROL = ""
    b = session({"orders": 1}, producer("A"))
    try:
        with pytest.raises(BackendError, match="KAFKA_BROKER_CONTROL"):
            b.apply(Step("broker", "stop", {"broker": 1}))
        assert any("KAFKA_BROKER_CONTROL" in s for s in b.view()["unobservable"])
    finally:
        b.close()


def test_the_coordinator_fails_over_and_the_producer_carries_on(broker_control, kafka_bootstrap):
    if not broker_control:
        pytest.fail(
            "no broker control for this cluster: set KAFKA_BROKER_CONTROL (or run the cluster from tools/kafka)"
        )
    b = session({"payments": 2}, producer("P", "payment-txn"), consumer("rc", ("payments",)))
    try:
        if len(b.brokers) < 3:
            pytest.fail(
                f"the failover test needs 3 brokers, the cluster has {len(b.brokers)}: kafka.sh start --nodes 3"
            )
        run(
            b,
            "P.init_transactions",
            "P.begin_transaction",
            produce("P", "pay-1", topic="payments"),
            produce("P", "pay-2", topic="payments", partition=1),
        )
        before = b.view()["transactions"]["payment-txn"]["coordinator_broker"]
        # commit while the coordinator is alive, then stop the coordinator's broker
        assert run(b, "P.commit_transaction", ("broker.stop", {"coordinator_of": "payment-txn"})) == ["ok", "ok"]
        assert before in b.stopped_brokers
        view = b.view()
        assert view["brokers"][str(before)]["up"] is False
        after = view["transactions"]["payment-txn"]["coordinator_broker"]
        assert after != before  # another replica of __transaction_state took over
        assert (
            run(b, "P.begin_transaction", produce("P", "pay-3", topic="payments"), "P.commit_transaction", "rc.poll")
            == ["ok"] * 4
        )
        obs = b.observe()
        raw = {p: b.observer.read_log(f"{b.prefix}payments", p)[0] for p in (0, 1)}
        assert run(b, ("broker.start", {"broker": before})) == ["ok"]
        assert b.view()["brokers"][str(before)]["up"] is True
    finally:
        b.close()
    # If the old coordinator's markers had landed before its broker went down (but not its CompleteCommit), the
    # new coordinator resends them: a second COMMIT at a higher coordinator epoch. Which happens is timing.
    for p, values in ((0, ["pay-1", "COMMIT", "pay-3", "COMMIT"]), (1, ["pay-2", "COMMIT"])):
        entries = raw[p]
        dupes = [e for prev, e in itertools.pairwise(entries) if prev.control == "COMMIT" and e.control == "COMMIT"]
        for e in dupes:
            first = entries[entries.index(e) - 1]
            assert (e.producer_id, e.epoch) == (first.producer_id, first.epoch)
            assert e.coordinator_epoch > first.coordinator_epoch  # written by the new coordinator
        assert [e.control or e.value.decode() for e in entries if e not in dupes] == values
    assert obs["consumers"]["rc"] == {"payments-0": ["pay-1", "pay-3"], "payments-1": ["pay-2"]}
    assert obs["transactions"]["payment-txn"]["state"] == "CompleteCommit"


def test_the_coordinator_and_the_partition_leader_describe_an_open_transaction():
    b = session({"orders": 1}, producer("plain"), producer("T", "described"))
    try:
        run(b, produce("plain", "p-1"), "T.init_transactions", "T.begin_transaction", produce("T", "t-1"))
        view = b.view()
        pid = view["producers"]["T"]["producer_id"]
        # DescribeProducers (partition leader): T's transaction starts at offset 1
        assert view["partitions"]["orders-0"]["open_transactions"] == {str(pid): 1}
        # ListTransactions (every broker) and DescribeTransactions (the coordinator)
        listed = b.observer.list_transactions()
        assert [(t["transactional_id"], t["state"], t["producer_id"]) for t in listed] == [
            (f"{b.prefix}described", "Ongoing", pid)
        ]
        txn = view["transactions"]["described"]
        assert (txn["state"], txn["producer_id"], txn["epoch"], txn["partitions"]) == ("Ongoing", pid, 0, ["orders-0"])
        assert txn["txn_start_time_ms"] > 0
        # __transaction_state, read and decoded: what the coordinator persisted for this id so far
        records = b.observer._txn_records[f"{b.prefix}described"]
        assert [r["state"] for r in records] == ["Empty", "Ongoing"]
        assert (
            records[1]["partitions"] == [(f"{b.prefix}orders", 0)]
            and records[1]["txn_partition"] == txn["coordinator_partition"]
        )
        run(b, "T.commit_transaction")
        b.observe()  # view() shows "right now"; observe() first waits until the markers have landed
        view = b.view()
        assert view["partitions"]["orders-0"]["open_transactions"] == {}
        assert [e["fate"] for e in view["partitions"]["orders-0"]["log"]] == ["plain", "committed", "marker"]
    finally:
        b.close()


def test_it_reports_the_transaction_start_on_the_sessions_clock():
    # The coordinator's TransactionStartTimeMs is an epoch in its own clock; view() gives it on the origin of its
    # time_ms (ms since the session began), as the simulator does with virtual time: the dashboard shows both as
    # t=mm:ss.mmm. The transaction starts when the coordinator adds its first partition (AddPartitionsToTxn).
    b = session({"orders": 1}, producer("T", "timed"))
    try:
        run(b, "T.init_transactions")
        assert b.view()["transactions"]["timed"]["txn_start_time_ms"] is None  # Empty: no transaction yet
        before = b.events.now_ms()
        run(b, "T.begin_transaction", produce("T", "t-1"))
        after = b.events.now_ms()
        time.sleep(0.3)  # so that "now" (what a clamped wrong value would be) is clearly later than `after`
        view = b.view()
        txn = view["transactions"]["timed"]
        assert txn["state"] == "Ongoing"
        assert 0 <= txn["txn_start_time_ms"] <= view["time_ms"]
        assert before - 1 <= txn["txn_start_time_ms"] <= after + 1  # ±1: both sides truncate to whole ms
    finally:
        b.close()


def test_it_takes_a_topic_of_its_own_prefix_that_exists_already_as_created(kafka_bootstrap):
    # On a loaded machine the admin client resends a CreateTopics whose answer came late, and the broker answers the
    # resend TOPIC_ALREADY_EXISTS: under the session's fresh prefix, that topic is the session's own.
    from confluent_kafka.admin import AdminClient, NewTopic

    from playground.kafka.names import new_prefix

    prefix = new_prefix()
    obs = Observer(kafka_bootstrap, {}, prefix)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    try:
        admin.create_topics([NewTopic(f"{prefix}orders", 2, 1)])[f"{prefix}orders"].result(timeout=30)
        obs.create_topics({f"{prefix}orders": 2}, 1)  # no error, and its leaders serve it
        assert obs.read_log(f"{prefix}orders", 1)[1]["high_watermark"] == 0
    finally:
        obs.delete_session([f"{prefix}orders"], [])
        obs.close()
