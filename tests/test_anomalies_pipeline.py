"""The anomaly checker with a declared pipeline (`pipeline: {from, to, by}`, issue 31): an input is lost when a
transform committed its offset in a transaction (or by an offset commit) that carried no output for it; a duplicate
is an input whose output was committed twice, not an input fetched twice. Without a declaration, nothing of this is
said: the checker cannot know which output belongs to which input."""

from __future__ import annotations

from playground.scenario.anomalies import Checker, History, check
from playground.scenario.loader import parse_scenario
from playground.scenario.model import Pipeline, ScenarioError

BY_KEY = (Pipeline("orders", "payments", "key"),)


def _log(*entries):
    return [dict(offset=i, **e) for i, e in enumerate(entries)]


def order(key):
    return {"value": f"order {key}", "key": key, "producer_id": 9, "transactional": False}


def payment(key, pid=1):
    return {"value": f"paid {key}", "key": key, "producer_id": pid, "transactional": True}


def commit_marker(pid=1):
    return {"control": "COMMIT", "producer_id": pid}


def step(n, actor, action, outcome="ok", **args):
    return {"n": n, "actor": actor, "action": action, "args": args, "outcome": outcome}


def poll(n, actor, *offsets):
    return {**step(n, actor, "poll"), "read": [["orders-0", o] for o in offsets]}


def _transaction(n, consumer="listener-in", producer="listener-out", keys=("k1",)):
    """One consume-transform-produce transaction of the listener: its sends, its offsets, its commit."""
    out = [step(n, producer, "begin_transaction")]
    out += [step(n + 1 + i, producer, "produce", topic="payments", value=f"paid {k}") for i, k in enumerate(keys)]
    n += 1 + len(keys)
    return [
        *out,
        step(n, producer, "send_offsets_to_transaction", consumer=consumer),
        step(n + 1, producer, "commit_transaction"),
    ]


# The fenced instance polled k1..k3, paid k1, was fenced, skipped the rest of its poll; the next transaction
# committed the listener's offsets past k2 and k3 with no payment for them.
SKIPPED = History(
    [poll(0, "listener-in", 0, 1, 2), *_transaction(1, keys=("k1",))],
    {"orders-0": _log(order("k1"), order("k2"), order("k3")), "payments-0": _log(payment("k1"), commit_marker())},
    {"listener-in": "read_committed"},
)


def test_it_names_the_inputs_a_transaction_committed_past_without_their_output():
    found = check(History(SKIPPED.steps, SKIPPED.logs, SKIPPED.isolation, pipelines=BY_KEY))
    assert [f.rule for f in found] == ["lost-input"]
    (lost,) = found
    assert lost.records == ("orders-0@1", "orders-0@2") and lost.steps == (4,)
    assert lost.text == (
        "listener-out committed listener-in's offsets past orders-0@1, orders-0@2 of orders at step 5 (in its "
        "transaction, with send_offsets_to_transaction), yet no output of theirs to payments is delivered: the "
        "transform skipped them"
    )


def test_it_says_nothing_of_inputs_without_a_declared_pipeline():
    assert check(SKIPPED) == []


def test_it_does_not_call_an_input_lost_while_its_output_s_transaction_is_undecided():
    open_payment = {
        "orders-0": SKIPPED.logs["orders-0"],
        "payments-0": _log(payment("k1"), commit_marker(), payment("k2", pid=2)),
    }
    found = check(History(SKIPPED.steps, open_payment, SKIPPED.isolation, pipelines=BY_KEY))
    assert [f.records for f in found] == [("orders-0@2",)]  # k2's payment may yet commit


def test_it_counts_an_input_fetched_twice_across_a_rebalance_and_processed_once_as_no_duplicate():
    steps = [poll(0, "listener-in", 0, 1), poll(1, "listener-in", 0, 1), *_transaction(2, keys=("k1", "k2"))]
    logs = {
        "orders-0": _log(order("k1"), order("k2")),
        "payments-0": _log(payment("k1"), payment("k2"), commit_marker()),
    }
    # without the send of offsets the checker cannot tell it is a transform's input: fetched twice is redelivered
    plain = [s for s in steps if s["action"] != "send_offsets_to_transaction"]
    assert {f.kind for f in check(History(plain, logs, {"listener-in": "read_committed"}))} == {"redelivered"}
    # declared, it is an input: only its output counts, once here
    assert check(History(plain, logs, {"listener-in": "read_committed"}, pipelines=BY_KEY)) == []


def test_it_calls_an_input_whose_output_was_committed_twice_a_duplicate():
    steps = [poll(0, "listener-in", 0), *_transaction(1), poll(5, "listener-in", 0), *_transaction(6)]
    logs = {
        "orders-0": _log(order("k1")),
        "payments-0": _log(payment("k1"), commit_marker(), payment("k1", pid=2), commit_marker(pid=2)),
    }
    # a reader of the payments gets the same payment twice: without a pipeline, a value written twice
    steps.append({**step(10, "auditor", "poll"), "read": [["payments-0", 0], ["payments-0", 2]]})
    assert [f.kind for f in check(History(steps, logs, {}))] == ["written_twice"]
    # with one, the input processed twice says it (the same value from two inputs would be no duplicate)
    (twice,) = check(History(steps, logs, {}, pipelines=BY_KEY))
    assert (twice.rule, twice.kind) == ("duplicate", "processed_twice")
    assert twice.records == ("orders-0@0", "payments-0@0", "payments-0@2") and twice.steps == (2, 7, 10)  # sent, got
    assert twice.text == (
        "orders-0@0 of orders was processed 2 times: read_committed delivers its output payments-0@0, payments-0@2"
    )


def test_it_reads_a_connected_client_s_offsets_from_its_txn_offset_commit():
    """A connected application's TxnOffsetCommit names the group and the offsets (simserver/clients.py), not a
    consumer of the session's: they are what the transaction committed past."""
    steps = [poll(0, "listener-in", 0, 1, 2), *_transaction(1, keys=("k1",))]
    steps[3] = step(3, "listener-out", "send_offsets_to_transaction", group="payments", offsets={"orders-0": 2})
    (lost,) = check(History(steps, SKIPPED.logs, SKIPPED.isolation, pipelines=BY_KEY))
    assert lost.records == ("orders-0@1",) and lost.params["consumer"] == "group payments"  # k3 (offset 2) not past


def test_it_judges_a_plain_offset_commit_past_an_unprocessed_input_too():
    steps = [
        poll(0, "copier-in", 0, 1),
        step(1, "copier-out", "produce", topic="payments", value="paid k1", **{"from": "copier-in"}),
        step(2, "copier-in", "commit"),
    ]
    logs = {
        "orders-0": _log(order("k1"), order("k2")),
        "payments-0": _log({**payment("k1"), "transactional": False}),
    }
    (lost,) = check(History(steps, logs, {}, pipelines=BY_KEY))
    assert lost.records == ("orders-0@1",) and lost.params["how"] == "commit" and "an offset commit" in lost.text


def test_it_finds_the_same_fed_one_step_at_a_time_as_over_the_whole_history():
    checker = Checker(SKIPPED.isolation, pipelines=BY_KEY)
    checker.add_log("orders-0", SKIPPED.logs["orders-0"])
    for s in SKIPPED.steps:
        checker.add_step(s)
        checker.findings()
    checker.add_log("payments-0", SKIPPED.logs["payments-0"])
    assert checker.findings() == check(History(SKIPPED.steps, SKIPPED.logs, SKIPPED.isolation, pipelines=BY_KEY))


SCENARIO = """
format: 1
id: pipe
title: {en: pipe}
cluster: {topics: {orders: {partitions: 1}, payments: {partitions: 1}}}
{pipeline}
actors: {a: {producer: {}}}
steps: [a.produce: {topic: orders, value: x}]
"""


def _errors(pipeline: str) -> str:
    try:
        parse_scenario(SCENARIO.replace("{pipeline}", pipeline))
    except ScenarioError as e:
        return str(e)
    return ""


def test_it_reads_a_pipeline_or_a_chain_of_them():
    one = parse_scenario(SCENARIO.replace("{pipeline}", "pipeline: {from: orders, to: payments}"))
    assert one.pipelines == (Pipeline("orders", "payments", "key"),)
    chain = parse_scenario(
        SCENARIO.replace(
            "{pipeline}", "pipeline: [{from: orders, to: payments, by: value}, {from: payments, to: orders}]"
        )
    )
    assert chain.pipelines == (Pipeline("orders", "payments", "value"), Pipeline("payments", "orders", "key"))


def test_it_names_what_is_wrong_in_a_pipeline():
    assert "unknown topic 'refunds'" in _errors("pipeline: {from: orders, to: refunds}")
    assert "pipeline.to" in _errors("pipeline: {from: orders}") and "missing" in _errors("pipeline: {from: orders}")
    assert "another topic" in _errors("pipeline: {from: orders, to: orders}")
    assert "unknown pipeline mapping 'offset'" in _errors("pipeline: {from: orders, to: payments, by: offset}")
    assert "names the header" in _errors("pipeline: {from: orders, to: payments, by: header}")
    assert "goes with `by: header`" in _errors("pipeline: {from: orders, to: payments, header: order-id}")
    assert "1 to 249 characters" in _errors(
        f"pipeline: {{from: orders, to: payments, by: header, header: {'h' * 250}}}"
    )
    assert "pipeline[1].form" in _errors("pipeline: [{from: orders, to: payments}, {form: orders, to: payments}]")


def test_it_keeps_the_pipeline_in_a_saved_scenario():
    from playground.scenario.writer import write

    scenario = parse_scenario(
        SCENARIO.replace(
            "{pipeline}",
            "pipeline: [{from: orders, to: payments, by: value}, {from: payments, to: orders, by: header, header: id}]",
        )
    )
    assert scenario.pipelines[1] == Pipeline("payments", "orders", "header", "id")
    text = write(
        scenario_id="pipe-session",
        title={"en": "pipe"},
        summary=None,
        tags=(),
        seed=0,
        cluster=scenario.cluster,
        actors=scenario.actors.values(),
        commands=[],
        pipelines=scenario.pipelines,
    )
    assert parse_scenario(text).pipelines == scenario.pipelines


# by: header. A payment has its own key (the payment's id) and carries the order it pays in a header, as a Spring
# listener sets one (`order-id`): by key nothing matches, by that header the payments belong to their orders.
BY_HEADER = (Pipeline("orders", "payments", "header", "order-id"),)


def paid(payment_id, order_id, value="paid k1"):
    """A payment as the listener of SKIPPED sent it (its value), with its own key and the order in a header."""
    return {**payment(payment_id), "value": value, "headers": {"order-id": order_id, "traceparent": "00-ab"}}


def _paid_k1(*payments):
    return History(
        SKIPPED.steps,
        {"orders-0": SKIPPED.logs["orders-0"], "payments-0": _log(*payments, commit_marker())},
        SKIPPED.isolation,
        pipelines=BY_HEADER,
    )


def test_it_maps_an_input_s_key_to_the_header_its_output_carries():
    found = check(_paid_k1(paid("p-1", "k1")))
    assert [(f.rule, f.records) for f in found] == [("lost-input", ("orders-0@1", "orders-0@2"))]
    # by key, the payment's own key names no order: all three look lost
    by_key = check(History(SKIPPED.steps, _paid_k1(paid("p-1", "k1")).logs, SKIPPED.isolation, pipelines=BY_KEY))
    assert [f.records for f in by_key] == [("orders-0@0", "orders-0@1", "orders-0@2")]


def test_it_maps_an_input_s_header_to_the_same_header_of_its_output():
    """An application that passes a correlation header on: the input's own header, not its key, is what matches."""
    orders = _log(*({**order(k), "headers": {"order-id": f"o-{i}"}} for i, k in enumerate(("k1", "k2", "k3"))))
    history = History(
        SKIPPED.steps,
        {"orders-0": orders, "payments-0": _log(paid("p-1", "o-0"), commit_marker())},
        SKIPPED.isolation,
        pipelines=BY_HEADER,
    )
    assert [f.records for f in check(history)] == [("orders-0@1", "orders-0@2")]


def test_an_output_without_the_header_belongs_to_no_input_and_one_carrying_it_twice_is_a_duplicate():
    assert [f.records for f in check(_paid_k1(payment("k1")))] == [("orders-0@0", "orders-0@1", "orders-0@2")]
    twice = check(_paid_k1(paid("p-1", "k1"), paid("p-2", "k1")))
    assert sorted(f.rule for f in twice) == ["duplicate", "lost-input"]
