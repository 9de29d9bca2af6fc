"""The format's additions of issue 20 (docs/scenario-format.md): a send's future and `get`, record callbacks,
exception messages in outcomes and the observation, the producer's client state, the cluster's shape, settings
each release refuses, and an operator's `broker.abort_transaction`; on the simulator."""

from __future__ import annotations

import re

import pytest

from playground.engine.backend import ProfileError
from playground.engine.spec import Profile
from playground.scenario import parse_scenario, run_scenario
from playground.scenario.model import ScenarioError

HEAD = """format: 1
id: issue-20
title: issue 20
{profile}
cluster:
{cluster}
actors:
  pay: {{producer: {{transactional.id: order-pay}}}}
  monitor: {{producer: {{transactional.id: order-pay}}}}
  rc: {{consumer: {{topics: [orders]}}}}
steps:
"""


def scenario(steps: str, profile: str = 'profile: {kafka: "3.9", client: java}', cluster: str = "", tail: str = ""):
    cluster = cluster or "  topics:\n    orders: {partitions: 2}"
    return parse_scenario(HEAD.format(profile=profile, cluster=cluster) + steps + tail, "x.yaml")


def error_of(steps: str, **kw) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        scenario(steps, **kw)
    return info.value


FENCED = """  - pay.init_transactions
  - pay.begin_transaction
  - pay.produce: {topic: orders, partition: 0, value: o-1, future: f1, callback: true}
  - pay.get: {future: f1, expect: ok}
  - monitor.init_transactions
  - pay.produce: {topic: orders, partition: 1, value: o-2, future: f2}
  - pay.get: {future: f2, expect: "ProducerFencedException: fences the current one"}
  - pay.produce: {topic: orders, partition: 1, value: o-3, callback: true, await: false}
"""


def test_it_keeps_a_sends_future_and_gets_its_outcome_later_with_the_exceptions_message():
    obs = run_scenario(scenario(FENCED), "sim")
    assert obs["expect"]["failed"] == 0, obs["expect"]["failures"]
    steps = {s["index"]: s for s in obs["steps"]}
    assert steps[5]["outcome"] == "ok"  # send() returned: the future is what failed
    # the batch failed with the fatal error itself (Sender.maybeAbortBatches): Errors.PRODUCER_FENCED's message
    assert steps[6]["outcome"] == "ProducerFencedException" and "fences the current one" in steps[6]["message"]
    assert steps[6]["state"] == "FATAL_ERROR"


def test_it_records_every_invocation_of_a_records_callback_twice_for_a_send_refused_with_an_api_exception():
    # KafkaProducer.doSend: the record is appended, then maybeAddPartition's maybeFailWithError throws the
    # ApiException, which goes to the callback at once; the Sender's next fatal round fails the batch with the
    # record in it (maybeAbortBatches), and the callback runs again
    tail = "expect:\n  callbacks:\n    pay: {o-1: [ok], o-3: [ProducerFencedException, ProducerFencedException]}\n"
    obs = run_scenario(scenario(FENCED, tail=tail), "sim")
    assert obs["expect"]["failed"] == 0, obs["expect"]["failures"]
    assert [(c["value"], c["outcome"]) for c in obs["callbacks"]] == [
        ("o-1", "ok"),
        ("o-3", "ProducerFencedException"),
        ("o-3", "ProducerFencedException"),
    ]


def test_it_checks_the_producers_client_state_at_the_end():
    tail = "expect:\n  producers:\n    pay: {state: FATAL_ERROR}\n    monitor: {state: READY}\n"
    obs = run_scenario(scenario(FENCED, tail=tail), "sim")
    assert obs["producers"] == {"monitor": {"state": "READY"}, "pay": {"state": "FATAL_ERROR"}}
    assert obs["expect"]["passed"] == 2


def test_it_waits_for_librdkafkas_delivery_report_as_a_future():
    steps = """  - pay.init_transactions
  - pay.begin_transaction
  - pay.produce: {topic: orders, partition: 0, value: o-1, future: f1, callback: true}
  - pay.get: {future: f1, expect: ok}
  - pay.commit_transaction
"""
    obs = run_scenario(scenario(steps, profile=""), "sim")
    assert obs["expect"]["failed"] == 0 and obs["callbacks"][0]["outcome"] == "ok"


def test_it_fails_an_outcome_whose_message_does_not_contain_the_text_named():
    steps = FENCED.replace("fences the current one", "was never fenced")
    obs = run_scenario(scenario(steps), "sim")
    assert obs["expect"]["failed"] == 1
    assert (
        "expected ProducerFencedException: was never fenced, observed ProducerFencedException ("
        in (obs["expect"]["failures"][0])
    )


FIRST = "  - pay.produce: {topic: orders, value: z, future: f0}\n"


@pytest.mark.parametrize(
    ("steps", "field", "words"),
    [
        ("  - pay.get: f9\n", "steps[1].pay.get", "unknown future 'f9'"),
        (
            "  - pay.produce: {topic: orders, value: a, future: f1, await: true}\n",
            "steps[1].pay.produce.await",
            "with future:",
        ),
        (
            "  - pay.produce: {topic: orders, value: b, future: f0}\n",
            "steps[1].pay.produce.future",
            "already named at line",
        ),
        (
            "  - pay.commit_transaction: {expect: 'Nope: x'}\n",
            "steps[1].pay.commit_transaction.expect",
            "unknown outcome",
        ),
        ("  - monitor.get: f0\n", "steps[1].monitor.get", "unknown future 'f0'"),
    ],
)
def test_it_names_the_line_and_field_of_a_wrong_future_or_outcome(steps, field, words):
    err = error_of(FIRST + steps)
    assert err.field == field and words in err.message
    text = scenario("  - pay.init_transactions\n").source
    assert err.line == len(text.splitlines()) + 1  # the second step's line


def test_it_refuses_a_setting_the_profiles_kafka_does_not_have():
    cluster = "  config: {transaction.partition.verification.enable: false}\n  topics:\n    orders: {partitions: 1}"
    err = error_of("  - pay.init_transactions\n", profile='profile: {kafka: "3.5"}', cluster=cluster)
    assert "transaction.partition.verification.enable" in str(err) and "came with Kafka 3.6" in str(err)
    # the same file told on 3.9 runs, and refuses to run on 3.5 (the command's exit 3)
    ok = scenario("  - pay.init_transactions\n", profile="", cluster=cluster)
    assert ok.cluster.config["transaction.partition.verification.enable"] is False
    with pytest.raises(ProfileError, match=re.escape("Kafka 3.5.2 · librdkafka cannot run issue-20")):
        run_scenario(ok, "sim", profile=Profile("3.5"))


def with_pay_config(extra: str, profile: str) -> str:
    head = HEAD.replace(
        "pay: {{producer: {{transactional.id: order-pay}}}}",
        "pay: {{producer: {{transactional.id: order-pay, " + extra + "}}}}",
    )
    return (
        head.format(profile=profile, cluster="  topics:\n    orders: {partitions: 1}") + "  - pay.init_transactions\n"
    )


def test_it_refuses_what_each_client_refuses_at_construction():
    # librdkafka's rd_kafka_new (measured, confluent-kafka 2.16); kafka-clients' KafkaProducer constructor
    with pytest.raises(ScenarioError, match=re.escape("must be set <= `transaction.timeout.ms`")):
        parse_scenario(with_pay_config("delivery.timeout.ms: 90000", ""))
    with pytest.raises(ScenarioError, match=r"linger.ms \+ request.timeout.ms"):
        parse_scenario(with_pay_config("delivery.timeout.ms: 1000", "profile: {client: java}"))
    # each client's own refusal only: the other client takes the setting
    assert parse_scenario(with_pay_config("delivery.timeout.ms: 90000", "profile: {client: java}"))
    assert parse_scenario(with_pay_config("delivery.timeout.ms: 1000", ""))


def test_it_refuses_an_acks_all_write_with_fewer_replicas_in_sync_than_min_insync_replicas():
    cluster = "  brokers: 3\n  replication_factor: 2\n  config: {min.insync.replicas: 2}\n  topics:\n    orders: {partitions: 1}"
    steps = """  - pay.init_transactions
  - pay.begin_transaction
  - pay.produce: {topic: orders, partition: 0, value: a-1}
  - pay.commit_transaction
  - clock.advance: 1s
  - broker.stop: 2
  - pay.begin_transaction
  - pay.produce: {topic: orders, partition: 0, value: a-2, expect: [_MSG_TIMED_OUT, _TIMED_OUT]}
"""
    # the second past the commit lets its COMMIT marker be written first: a marker is an acks=all write too, and one
    # still on its way when the broker stops is refused below the min ISR, leaving the transaction in PrepareCommit
    s = scenario(steps, profile="", cluster=cluster)
    assert s.cluster.replication_factor == 2
    events: list = []
    obs = run_scenario(s, "sim", on_event=events.append)
    refused = [e for e in events if e.kind == "rpc" and e.rpc == "Produce" and e.direction == "response" and e.error]
    assert refused and {e.error for e in refused} == {"NOT_ENOUGH_REPLICAS"}  # retriable: retried until the timeout
    assert obs["expect"]["failed"] == 0, obs["expect"]["failures"]
    assert [e.get("value") for e in obs["partitions"]["orders-0"]["log"] if "value" in e] == ["a-1"]


def test_it_refuses_a_replication_factor_above_the_brokers():
    err = error_of("  - pay.init_transactions\n", cluster="  brokers: 2\n  replication_factor: 3\n  topics:\n    o: {}")
    assert "cluster.replication_factor" in str(err)


def test_it_aborts_a_partitions_open_transaction_as_an_operator_would():
    steps = """  - pay.init_transactions
  - pay.begin_transaction
  - pay.produce: {topic: orders, partition: 0, value: a-1}
  - pay.crash
  - broker.abort_transaction: orders-0
  - rc.poll
"""
    s = scenario(steps, profile="")
    assert s.steps[4].args == {"partition": "orders-0"}
    obs = run_scenario(s, "sim")
    assert obs["steps"][-2]["outcome"] == "ok"
    part = obs["partitions"]["orders-0"]
    assert [e.get("value") or e.get("control") for e in part["log"]] == ["a-1", "ABORT"]
    assert part["last_stable_offset"] == part["high_watermark"] == 2


def test_it_refuses_a_marker_below_min_insync_replicas_and_keeps_the_transaction_waiting():
    """The COMMIT marker still on its way when a broker stops is an acks=all write below the min ISR: refused
    (NOT_ENOUGH_REPLICAS, retried), the transaction stays in PrepareCommit and the next one's AddPartitionsToTxn is
    told CONCURRENT_TRANSACTIONS, as Partition.appendRecordsToLeader refuses a coordinator's append."""
    cluster = "  brokers: 3\n  replication_factor: 2\n  config: {min.insync.replicas: 2}\n  topics:\n    orders: {partitions: 1}"
    steps = """  - pay.init_transactions
  - pay.begin_transaction
  - pay.produce: {topic: orders, partition: 0, value: a-1}
  - pay.commit_transaction
  - broker.stop: 2
  - pay.begin_transaction
  - pay.produce: {topic: orders, partition: 0, value: a-2, expect: [_MSG_TIMED_OUT, _TIMED_OUT]}
"""
    events: list = []
    obs = run_scenario(scenario(steps, profile="", cluster=cluster), "sim", on_event=events.append)
    answers = {(e.rpc, e.error) for e in events if e.kind == "rpc" and e.direction == "response"}
    assert ("AddPartitionsToTxn", "CONCURRENT_TRANSACTIONS") in answers
    assert obs["expect"]["failed"] == 0, obs["expect"]["failures"]
    assert [e.get("value") for e in obs["partitions"]["orders-0"]["log"] if "value" in e] == ["a-1"]
    assert not any(e.get("control") for e in obs["partitions"]["orders-0"]["log"])  # no COMMIT marker written
