"""The Java client on the real backend (issue 9): every actor a JVM running playground/kafka/java/Worker.java against
kafka-clients of the cluster's release, on the 3.9 cluster of the environment (`make test` starts one).

What these tests pin down is what kafka-clients 3.9.1 does against Kafka 3.9.1, read from its own behaviour on the
wire and from apache/kafka clients/.../producer/internals/TransactionManager.java and KafkaProducer.java:
- its requests are newer than librdkafka's (EndTxn v4, AddPartitionsToTxn v3, InitProducerId v5), so a fenced
  commit is answered PRODUCER_FENCED (90) where librdkafka's EndTxn v1 is answered INVALID_PRODUCER_EPOCH (47);
- outcomes are its exceptions' names, with the wire error beside them and TransactionManager's state after the call;
- send() hands an ApiException to the callback and a failed future instead of throwing it, so a fire-and-forget
  send from a fenced producer "succeeds" for the application;
- `crash` kills the JVM: the transaction stays open until transaction.timeout.ms.

The last test runs whole library scenarios under both clients and prints what differs. Time: about a minute and a
half on a 2-core machine (a JVM per actor starts in about 1.5 s; the sessions of that test run side by side).
"""

from __future__ import annotations

import concurrent.futures
import os
import time
from pathlib import Path

import pytest

from playground.engine import events as ev
from playground.engine.spec import ActorSpec, ClusterSpec, Profile, TopicSpec
from playground.kafka.backend import KafkaBackend
from playground.scenario import load_library, run_scenario
from tests.kafka.conftest import require_bootstrap
from tests.kafka.test_kafka_backend import consumer, produce, run

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parents[2]
JAVA = Profile("3.9", "java")
LIBRDKAFKA = Profile("3.9", "librdkafka")


def producer(name: str, txid: str | None = None, **config) -> ActorSpec:
    conf = dict(config)
    if txid:
        conf["transactional.id"] = txid
    return ActorSpec(name, "producer", conf)


def session(topics: dict[str, int], *actors: ActorSpec, profile: Profile = JAVA, events=None) -> KafkaBackend:
    cluster = ClusterSpec(brokers=3, topics=tuple(TopicSpec(t, n) for t, n in topics.items()))
    return KafkaBackend(
        cluster, {a.name: a for a in actors}, profile=profile, on_event=events.append if events is not None else None
    )


def log_of(obs, tp):
    return [(e.get("control") or e["value"], e["epoch"]) for e in obs["partitions"][tp]["log"]]


def answers(view, rpc: str, to: str) -> list[dict]:
    return [t for t in view["timeline"] if t["rpc"] == rpc and t["direction"] == "response" and t["dst"] == to]


def test_it_fences_the_older_java_producer_at_commit_with_ProducerFencedException_and_PRODUCER_FENCED_on_the_wire():
    events: list = []
    b = session({"orders": 1}, producer("A", "order-pay"), producer("B", "order-pay"), events=events)
    try:
        ready = b.actors["A"].proc.wait_ready()["result"]
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
        view = b.view()
        obs = b.observe()
    finally:
        b.close()
    assert ready["client_version"] == "3.9.1"  # kafka-clients of the cluster's release, as the profile says
    assert outcomes == ["ok", "ok", "ok", "ok", "ProducerFencedException", "ok", "ok", "ok"]
    a = view["producers"]["A"]
    assert a["fenced"] is True and a["state"] == "FATAL_ERROR"  # TransactionManager.State, read after the call
    assert a["last_error"]["op"] == "commit_transaction"
    assert "on the wire: EndTxn v4 PRODUCER_FENCED (90)" in a["last_error"]["detail"]
    # kafka-clients 3.9.1 sends EndTxn v4: the 3.9 coordinator answers a stale epoch with PRODUCER_FENCED (90)
    [end_txn] = answers(view, "EndTxn", "A")
    assert (end_txn["error"], end_txn["detail"]) == ("PRODUCER_FENCED", "v4, PRODUCER_FENCED (90)")
    assert view["producers"]["B"]["state"] == "READY" and view["producers"]["B"]["epoch"] == 2
    [err] = [e for e in events if isinstance(e, ev.ClientError)]
    assert (err.actor, err.error, err.fatal, err.txn_requires_abort) == ("A", "ProducerFencedException", True, False)
    states = [(e.from_state, e.to_state) for e in events if isinstance(e, ev.ClientState) and e.actor == "A"]
    assert states[-2:] == [("IN_TRANSACTION", "COMMITTING_TRANSACTION"), ("COMMITTING_TRANSACTION", "FATAL_ERROR")]
    assert log_of(obs, "orders-0") == [("a-1", 0), ("ABORT", 1), ("b-1", 2), ("COMMIT", 2)]


def test_it_gets_INVALID_PRODUCER_EPOCH_for_the_same_fenced_commit_from_librdkafka():
    """The other half of the comparison: librdkafka sends EndTxn v1, which the same coordinator answers with 47."""
    b = session({"orders": 1}, producer("A", "order-pay"), producer("B", "order-pay"), profile=LIBRDKAFKA)
    try:
        outcomes = run(
            b,
            "A.init_transactions",
            "A.begin_transaction",
            produce("A", "a-1"),
            "B.init_transactions",
            "A.commit_transaction",
        )
        view = b.view()
    finally:
        b.close()
    assert outcomes[-1] == "_FENCED"
    [end_txn] = answers(view, "EndTxn", "A")
    assert end_txn["error"] == "INVALID_PRODUCER_EPOCH" and end_txn["detail"].startswith("v1")


def test_it_lets_a_fire_and_forget_send_of_a_fenced_producer_look_sent_while_only_its_callback_sees_the_error():
    events: list = []
    b = session({"orders": 1}, producer("A", "order-pay"), producer("B", "order-pay"), events=events)
    try:
        outcomes = run(
            b,
            "A.init_transactions",
            "A.begin_transaction",
            produce("A", "a-1"),
            "B.init_transactions",
            # A does not know yet: the partition leader refuses its old epoch, in the callback only
            produce("A", "a-2", **{"await": False}),
            "A.flush",
            "A.commit_transaction",
            "A.abort_transaction",
            # now A is fenced (FATAL_ERROR) and knows it; send() still returns normally
            produce("A", "a-3", **{"await": False}),
        )
        view = b.view()
        obs = b.observe()
    finally:
        b.close()
    assert outcomes == [
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
        # maybeFailWithError(): the send's abortable InvalidProducerEpochException, not a fencing
        "InvalidProducerEpochException",
        # the abort's EndTxn carries the old epoch: the coordinator says PRODUCER_FENCED
        "ProducerFencedException",
        "ok",
    ]
    sends = [e for e in events if isinstance(e, ev.ClientError) and e.op == "send"]
    assert [(e.error, e.fatal, e.txn_requires_abort) for e in sends] == [
        ("InvalidProducerEpochException", False, True),
        ("ProducerFencedException", True, False),
    ]
    assert "INVALID_PRODUCER_EPOCH (47)" in sends[0].detail
    [produce_answer] = [t for t in answers(view, "Produce", "A") if t["error"]]
    assert produce_answer["error"] == "INVALID_PRODUCER_EPOCH"
    errors = {e.op: e for e in events if isinstance(e, ev.ClientError) and e.op != "send"}
    assert errors["commit_transaction"].txn_requires_abort is True
    assert errors["abort_transaction"].fatal is True and "PRODUCER_FENCED (90)" in errors["abort_transaction"].detail
    a = view["producers"]["A"]
    assert a["state"] == "FATAL_ERROR" and a["fenced"] is True
    # the application believes three records went out; one landed, and B's init aborted it
    assert a["counters"] == {"app_sent_ok": 3, "landed": 1, "read_committed_received": 0}
    assert log_of(obs, "orders-0") == [("a-1", 0), ("ABORT", 1)]


def test_it_crashes_by_killing_the_jvm_and_leaves_the_transaction_open_for_its_timeout():
    b = session({"orders": 1}, producer("A", "pay", **{"transaction.timeout.ms": 4000}), consumer("rc", ("orders",)))
    try:
        run(b, "A.init_transactions", "A.begin_transaction", produce("A", "a-1"))
        pid = b.actors["A"].proc.pid
        assert run(b, "A.crash") == ["ok"]
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # SIGKILLed and reaped: no close(), so no abort
        held = b.view()
        assert held["transactions"]["pay"]["state"] == "Ongoing"
        assert (
            held["partitions"]["orders-0"]["high_watermark"],
            held["partitions"]["orders-0"]["last_stable_offset"],
        ) == (1, 0)
        assert held["producers"]["A"]["state"] == "CRASHED"
        deadline = time.monotonic() + 40
        while b.view()["transactions"]["pay"]["state"] != "CompleteAbort" and time.monotonic() < deadline:
            time.sleep(0.5)  # the coordinator aborts it once transaction.timeout.ms (4 s) has passed
        assert run(b, "rc.poll") == ["ok"]
        obs = b.observe()
    finally:
        b.close()
    assert obs["transactions"]["pay"] == {
        "state": "CompleteAbort",
        "producer_id": obs["transactions"]["pay"]["producer_id"],
        "epoch": 1,
    }
    assert log_of(obs, "orders-0") == [("a-1", 0), ("ABORT", 1)]
    assert obs["consumers"]["rc"] == {"orders-0": []}


def test_it_commits_a_consumers_offsets_in_the_transaction_with_send_offsets_to_transaction():
    b = session(
        {"in": 1, "out": 1},
        producer("feed"),
        producer("T", "copier-tx"),
        consumer("src", ("in",), group="copier"),
        consumer("rc", ("out",)),
    )
    try:
        outcomes = run(
            b,
            produce("feed", "v1", topic="in"),
            produce("feed", "v2", topic="in"),
            "src.poll",
            "T.init_transactions",
            "T.begin_transaction",
            ("T.produce", {"topic": "out", "from": "src"}),
            ("T.send_offsets_to_transaction", {"consumer": "src"}),
            "T.commit_transaction",
            "rc.poll",
        )
        view = b.view()
        obs = b.observe()
    finally:
        b.close()
    assert outcomes == ["ok"] * 9
    assert obs["consumers"]["rc"] == {"out-0": ["v1", "v2"]}
    assert obs["groups"] == {"copier": {"in-0": 2}}
    assert [v for v, _ in log_of(obs, "out-0")] == ["v1", "v2", "COMMIT"]
    # AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to the group's coordinator
    assert answers(view, "AddOffsetsToTxn", "T") and answers(view, "TxnOffsetCommit", "T")
    assert all(t["src"].startswith("group coordinator") for t in answers(view, "TxnOffsetCommit", "T"))


def test_it_keeps_a_send_refused_outside_a_transaction_buffered_and_commits_it_with_the_next_transaction():
    """KafkaProducer.doSend() appends the record to the accumulator first and only then asks
    TransactionManager.maybeAddPartition(), which throws IllegalStateException outside a transaction (kafka-clients
    3.9.1 and 4.4.0 alike). The application sees the exception, but the record stays buffered; the Sender holds it
    back until its partition joins a transaction, and the next transaction on that partition carries it. librdkafka
    refuses such a send with _STATE and nothing of it reaches a broker (scenario no-send-outside-transaction)."""
    b = session({"orders": 1}, producer("T", "order-pay"), consumer("rc", ("orders",)))
    try:
        outcomes = run(
            b,
            produce("T", "too-early"),
            "T.init_transactions",
            produce("T", "no-txn"),
            "T.begin_transaction",
            produce("T", "in-txn"),
            "T.commit_transaction",
            "rc.poll",
        )
        view = b.view()
        obs = b.observe()
    finally:
        b.close()
    assert outcomes == ["IllegalStateException", "ok", "IllegalStateException", "ok", "ok", "ok", "ok"]
    assert log_of(obs, "orders-0") == [("too-early", 0), ("no-txn", 0), ("in-txn", 0), ("COMMIT", 0)]
    assert obs["consumers"]["rc"] == {"orders-0": ["too-early", "no-txn", "in-txn"]}
    # the application counted one successful send; three records landed
    assert view["producers"]["T"]["counters"]["app_sent_ok"] == 1
    assert view["producers"]["T"]["counters"]["landed"] == 3


def test_it_speaks_transaction_version_2_with_kafka_clients_4_on_the_4x_cluster():
    """kafka-clients 4.4.0 on a Kafka 4.4 cluster whose transaction.version is 2 (KIP-890 part 2): no
    AddPartitionsToTxn (the partition leader adds the partition when it verifies the Produce), and every EndTxn bumps
    the epoch, so each transaction's marker carries the epoch after its records'."""
    require_bootstrap("4")
    b = session(
        {"orders": 1},
        producer("A", "order-pay"),
        producer("B", "order-pay"),
        consumer("rc", ("orders",)),
        profile=Profile("4", "java"),
    )
    try:
        ready = b.actors["A"].proc.wait_ready()["result"]
        outcomes = run(
            b,
            "A.init_transactions",
            "A.begin_transaction",
            produce("A", "a-1"),
            "A.commit_transaction",
            "A.begin_transaction",
            produce("A", "a-2"),
            "B.init_transactions",
            "A.commit_transaction",
            "B.begin_transaction",
            produce("B", "b-1"),
            "B.commit_transaction",
            "rc.poll",
        )
        view = b.view()
        obs = b.observe()
    finally:
        b.close()
    assert ready["client_version"] == "4.4.0" and b.transaction_version == 2
    assert outcomes == ["ok"] * 7 + ["ProducerFencedException"] + ["ok"] * 4
    assert "on the wire: EndTxn v5 PRODUCER_FENCED (90)" in view["producers"]["A"]["last_error"]["detail"]
    assert not [t for t in view["timeline"] if t["rpc"] == "AddPartitionsToTxn"]
    assert {t["detail"] for t in view["timeline"] if t["rpc"] == "EndTxn" and t["direction"] == "request"} == {"v5"}
    # a-1 at 0, its COMMIT at 1 (the bump), a-2 at 1; B's init aborts it at 2 and takes 3; B's commit bumps to 4
    assert log_of(obs, "orders-0") == [("a-1", 0), ("COMMIT", 1), ("a-2", 1), ("ABORT", 2), ("b-1", 3), ("COMMIT", 4)]
    assert obs["transactions"]["order-pay"]["epoch"] == 4 == view["producers"]["B"]["epoch"]
    assert obs["consumers"]["rc"] == {"orders-0": ["a-1", "b-1"]}


# Library scenarios run under both clients side by side: fencing at commit, at send and at
# send_offsets_to_transaction (zombie-fencing), the incident with fire-and-forget sends (shared-id-incident), and the
# basics. The ones that sleep for a transaction timeout, need a broker timer shortened or broker control are left
# to the fidelity test's machinery (README, "The Java client", has the table of every scenario).
LIBRARY = ("commit-and-abort", "zombie-fencing", "shared-id-incident")
# Where the Java client's outcome differs, step by step (index: librdkafka's outcome, the Java client's); every
# other step has the same outcome under both. Nothing the cluster holds differs.
DIFFERENCES = {
    "commit-and-abort": {},
    "zombie-fencing": {
        6: ("_FENCED", "ProducerFencedException"),  # EndTxn: 47 to librdkafka's v1, 90 to kafka-clients' v4
        # the leader refuses the old epoch with 47: librdkafka makes that the fatal _FENCED, kafka-clients an
        # abortable InvalidProducerEpochException, which the commit then throws again (maybeFailWithError)
        16: ("INVALID_PRODUCER_EPOCH", "InvalidProducerEpochException"),
        18: ("_FENCED", "InvalidProducerEpochException"),
        27: ("_FENCED", "ProducerFencedException"),  # AddOffsetsToTxn: 47 to v0, 90 to v3
        28: ("_FENCED", "ProducerFencedException"),
    },
    "shared-id-incident": {
        # fire-and-forget sends after AddPartitionsToTxn was refused: librdkafka's produce() raises the fatal error
        # once the refusal is back, and whether it is back before any of the three calls is timing (a step is a
        # round trip to a worker: on an idle machine all three can return before it), while KafkaProducer.send()
        # returns a failed future and throws nothing
        15: ("ok|_FATAL", "ok"),
        16: ("ok|_FATAL", "ok"),
        17: ("ok|_FATAL", "ok"),
        19: ("_FENCED", "ProducerFencedException"),
    },
}


def _run_library(scenario, profile: Profile) -> dict:
    backend = KafkaBackend(scenario.cluster, scenario.actors, seed=scenario.seed, profile=profile)
    return run_scenario(scenario, backend)


def test_it_runs_library_scenarios_with_the_java_client_and_only_the_names_differ_from_librdkafka():
    scenarios = {s.id: s for s in load_library(ROOT / "scenarios")}
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        futures = {
            (sid, p.client): pool.submit(_run_library, scenarios[sid], p) for sid in LIBRARY for p in (JAVA, LIBRDKAFKA)
        }
        runs = {key: f.result() for key, f in futures.items()}
    rows = []
    for sid in LIBRARY:
        java, rd = runs[(sid, "java")], runs[(sid, "librdkafka")]
        assert [s["step"] for s in java["steps"]] == [s["step"] for s in rd["steps"]]
        for sj, sr in zip(java["steps"], rd["steps"]):
            rd_may, java_must = DIFFERENCES[sid].get(sj["index"], (sr["outcome"], sr["outcome"]))
            assert (sr["outcome"] in rd_may.split("|"), sj["outcome"]) == (True, java_must), (sid, sj)
            if sj["outcome"] != sr["outcome"]:
                rows.append(f"{sid:<20} {sj['index']:>3} {sj['step']:<34} {sr['outcome']:<24} {sj['outcome']}")
        for field in ("partitions", "consumers", "transactions", "groups"):
            if java[field] != rd[field]:
                rows.append(f"{sid:<20}     observation.{field:<22} differs")
        assert rd["expect"]["failed"] == 0, rd["expect"]["failures"]
    print("\nscenario           step                                    librdkafka               java")
    print("\n".join(rows))
    assert not [r for r in rows if "observation" in r]


@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_it_awaits_a_send_joining_a_record_held_back_outside_a_transaction_until_kafka_clients_completes_it(kafka):
    # The record of a send refused outside a transaction stays in its batch; the next send to that partition joins
    # that batch, which wakes no Sender, so its AddPartitionsToTxn goes out at the Sender's next poll, request.timeout.ms
    # (30 s) later: measured with kafka-clients 3.9.1 and 4.4.0. The worker gave up on the future after the step's 20 s
    # and reported TimeoutException (issue 20); it now waits as Future.get() does (actors.budget_s), and the simulator
    # says the same (tests/sim/test_sim_releases.py)
    bootstrap = require_bootstrap(kafka)
    cluster = ClusterSpec(brokers=1, topics=(TopicSpec("orders", 1),))
    b = KafkaBackend(cluster, {"A": producer("A", "held-back")}, profile=Profile(kafka, "java"))
    try:
        assert b.settings["bootstrap"] == bootstrap
        outcomes = run(
            b,
            "A.init_transactions",
            produce("A", "early"),
            "A.begin_transaction",
            produce("A", "in-txn"),
            "A.commit_transaction",
        )
        obs = b.observe()
    finally:
        b.close()
    assert outcomes == ["ok", "IllegalStateException", "ok", "ok", "ok"]
    assert [e.get("control") or e["value"] for e in obs["partitions"]["orders-0"]["log"]] == [
        "early",
        "in-txn",
        "COMMIT",
    ]


def test_it_refuses_futures_and_callbacks_on_a_real_cluster_instead_of_running_them_as_something_else():
    from playground.engine.backend import ProfileError
    from playground.engine.spec import Step

    b = session({"orders": 1}, producer("A", "with-futures"))
    try:
        with pytest.raises(ProfileError, match="simulator only"):
            b.apply(Step("A", "produce", {"topic": "orders", "partition": 0, "value": "v", "future": "f1"}))
        with pytest.raises(ProfileError, match="simulator only"):
            b.apply(Step("A", "get", {"future": "f1"}))
    finally:
        b.close()
