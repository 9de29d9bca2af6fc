"""Running a scenario and building the contract's observation, against a scripted stand-in backend (the
simulator's own runs are in test_scenario_library.py)."""

import json

import pytest

from playground.engine.backend import Backend
from playground.engine.spec import Profile
from playground.scenario import parse_scenario, run_scenario

TEXT = """\
format: 1
id: zombie-fencing
title: Two producers share one transactional.id
seed: 7
cluster:
  topics:
    orders: {partitions: 2}
actors:
  A: {producer: {transactional.id: order-pay}}
  B: {producer: {transactional.id: order-pay}}
  plain: {producer: {enable.idempotence: false}}
  rc: {consumer: {topics: [orders]}}
  copier-in: {consumer: {group.id: copier, topics: [orders]}}
steps:
  - A.init_transactions
  - A.begin_transaction
  - A.produce: {topic: orders, partition: 0, value: txn1-p0}
  - note: {en: "B starts with the same transactional.id", zh: "B 用同一个 transactional.id 启动"}
  - B.init_transactions
  - A.commit_transaction: {expect: _FENCED}
  - rc.poll
expect:
  consumers:
    rc: {orders-0: []}
  logs:
    orders-0: [txn1-p0, ABORT]
  transactions:
    order-pay: {state: Empty, epoch: 2}
"""

RAW = {
    "partitions": {
        "orders-1": {
            "log": [
                {
                    "offset": 0,
                    "key": "k",
                    "value": "later",
                    "producer_id": 2000,
                    "epoch": 0,
                    "sequence": 0,
                    "transactional": False,
                },
                {
                    "offset": 1,
                    "key": None,
                    "value": "plain",
                    "producer_id": -1,
                    "epoch": -1,
                    "sequence": -1,
                    "transactional": False,
                },
            ],
            "high_watermark": 2,
            "last_stable_offset": 2,
            "log_end_offset": 2,
        },
        "orders-0": {
            "log": [
                {
                    "offset": 0,
                    "key": None,
                    "value": "txn1-p0",
                    "producer_id": 1000,
                    "epoch": 0,
                    "sequence": 0,
                    "transactional": True,
                },
                {"offset": 1, "control": "ABORT", "producer_id": 1000, "epoch": 1},
            ],
            "high_watermark": 2,
            "last_stable_offset": 2,
            "log_end_offset": 2,
        },
    },
    "consumers": {"rc": {"orders-0": [], "orders-1": ["later", "plain"]}, "copier-in": {}},
    "transactions": {
        "order-pay": {"state": "Empty", "producer_id": 1000, "epoch": 2},
        "a-new-one": {"state": "Empty", "producer_id": 3000, "epoch": 0},
    },
    "groups": {"copier": {"orders-1": None, "orders-0": 1}},
}


class ScriptedBackend(Backend):
    """Answers each step from a script and observe() with a fixed raw observation."""

    name = "scripted"

    def __init__(self, outcomes=None, raw=None):
        self.outcomes = outcomes or {}
        self.raw = raw or RAW
        self.applied = []
        self.closed = False

    def add_actor(self, actor):
        raise NotImplementedError

    def apply(self, step):
        self.applied.append(step)
        return self.outcomes.get(step.label, "ok")

    def observe(self):
        return json.loads(json.dumps(self.raw))

    def view(self, log_limit=200):
        raise NotImplementedError

    def close(self):
        self.closed = True


def line_of(text, fragment):
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


def run(text=TEXT, outcomes=None, raw=None, **kwargs):
    backend = ScriptedBackend({"A.commit_transaction": "_FENCED", **(outcomes or {})}, raw)
    return run_scenario(parse_scenario(text, "scenarios/x.yaml"), backend=backend, **kwargs), backend


def test_it_builds_the_observation_in_the_contracts_shape():
    observation, backend = run()
    assert list(observation) == [
        "format",
        "scenario",
        "backend",
        "seed",
        "steps",
        "partitions",
        "consumers",
        "transactions",
        "groups",
        "profile",
        "expect",
    ]
    assert observation["format"] == 1 and observation["scenario"] == "zombie-fencing"
    assert observation["backend"] == "scripted" and observation["seed"] == 7
    assert observation["partitions"]["orders-0"] == {
        "log": [
            {"offset": 0, "value": "txn1-p0", "producer": "P1", "epoch": 0, "transactional": True},
            {"offset": 1, "control": "ABORT", "producer": "P1", "epoch": 1},
        ],
        "high_watermark": 2,
        "last_stable_offset": 2,
    }
    assert observation["expect"] == {"passed": 3, "failed": 0, "failures": []}
    assert backend.closed


def test_it_lists_actor_steps_with_their_position_in_the_file_and_leaves_notes_out():
    observation, backend = run()
    assert observation["steps"][:1] == [{"index": 0, "step": "A.init_transactions", "outcome": "ok"}]
    assert [s["index"] for s in observation["steps"]] == [0, 1, 2, 4, 5, 6]
    assert observation["steps"][4] == {"index": 5, "step": "A.commit_transaction", "outcome": "_FENCED"}
    assert len(backend.applied) == 7  # the note still goes to the backend, which shows it


def test_it_numbers_producers_by_first_appearance_in_partitions_then_transactions():
    observation, _ = run()
    assert list(observation["partitions"]) == ["orders-0", "orders-1"]
    assert observation["partitions"]["orders-1"]["log"] == [
        {"offset": 0, "key": "k", "value": "later", "producer": "P2", "epoch": 0, "transactional": False},
        {"offset": 1, "value": "plain", "producer": None, "epoch": -1, "transactional": False},
    ]
    assert observation["transactions"] == {
        "a-new-one": {"state": "Empty", "producer": "P3", "epoch": 0},
        "order-pay": {"state": "Empty", "producer": "P1", "epoch": 2},
    }


def test_it_passes_consumers_and_groups_through_in_partition_order():
    observation, _ = run()
    assert observation["consumers"] == {"copier-in": {}, "rc": {"orders-0": [], "orders-1": ["later", "plain"]}}
    assert list(observation["groups"]["copier"].items()) == [("orders-0", 1), ("orders-1", None)]


def test_it_uses_the_seed_given_over_the_scenarios_own():
    observation, _ = run(seed=42)
    assert observation["seed"] == 42


def test_it_reports_what_was_expected_and_what_was_observed_when_an_expectation_fails():
    raw = json.loads(json.dumps(RAW))
    raw["partitions"]["orders-0"]["log"][1]["control"] = "COMMIT"
    raw["consumers"]["rc"]["orders-0"] = ["txn1-p0"]
    raw["transactions"]["order-pay"]["epoch"] = 1
    observation, _ = run(raw=raw)
    result = observation["expect"]
    assert result["passed"] == 0 and result["failed"] == 3
    assert result["failures"] == [
        f"expect.consumers.rc.orders-0 (line {line_of(TEXT, 'rc: {orders-0')}): expected [], observed [txn1-p0]",
        f"expect.logs.orders-0 (line {line_of(TEXT, 'orders-0: [txn1-p0')}): expected [txn1-p0, ABORT], observed [txn1-p0, COMMIT]",
        f"expect.transactions.order-pay (line {line_of(TEXT, 'order-pay: {state')}): expected {{state: Empty, epoch: 2}}, observed {{state: Empty, epoch: 1}}",
    ]


def test_it_counts_a_step_whose_outcome_differs_from_its_expect_as_a_failure():
    observation, _ = run(outcomes={"A.commit_transaction": "ok"})
    assert observation["expect"]["passed"] == 3
    assert observation["expect"]["failed"] == 1
    assert observation["expect"]["failures"] == [
        f"steps[5] A.commit_transaction (line {line_of(TEXT, 'A.commit')}): expected _FENCED, observed ok"
    ]


def test_it_checks_watermarks_groups_and_a_missing_transactional_id():
    text = TEXT.replace(
        "expect:\n",
        """expect:
  watermarks:
    orders-0: {high_watermark: 2, last_stable_offset: 1}
    orders-1: {high_watermark: 2}
  groups:
    copier: {orders-0: 1, orders-1: 0}
""",
    ).replace(
        "  transactions:\n    order-pay: {state: Empty, epoch: 2}\n",
        "  transactions:\n    order-pay: {state: Empty, epoch: 2, producer: P1}\n",
    )
    text = (
        text.replace("  B: {producer", "  C: {producer: {transactional.id: gone}}\n  B: {producer")
        + "    gone: {state: Empty}\n"
    )
    observation, _ = run(text=text)
    failures = observation["expect"]["failures"]
    assert observation["expect"]["passed"] == 5 and len(failures) == 3
    assert (
        f"expect.watermarks.orders-0 (line {line_of(text, 'last_stable_offset: 1')}): expected {{high_watermark: 2, last_stable_offset: 1}}, observed {{high_watermark: 2, last_stable_offset: 2}}"
        in failures
    )
    assert (
        f"expect.groups.copier.orders-1 (line {line_of(text, 'copier: {orders-0: 1')}): expected 0, observed null"
        in failures
    )
    assert any(f.startswith("expect.transactions.gone") and "no such transactional id" in f for f in failures)


def test_it_calls_on_step_after_every_step_with_its_outcome():
    seen = []
    run(on_step=lambda step, outcome: seen.append((step.index, outcome)))
    assert seen == [(0, "ok"), (1, "ok"), (2, "ok"), (3, "ok"), (4, "ok"), (5, "_FENCED"), (6, "ok")]


def test_it_closes_the_backend_when_a_step_raises():
    backend = ScriptedBackend()

    def boom(step):
        raise RuntimeError("boom")

    backend.apply = boom
    try:
        run_scenario(parse_scenario(TEXT, "x.yaml"), backend=backend)
    except RuntimeError:
        pass
    assert backend.closed


# --------------------------------------------------------------------------------------------------------------
# Outcomes per profile (docs/scenario-format.md, "Outcomes per profile")

PER_PROFILE = (
    TEXT.replace(
        "  - A.commit_transaction: {expect: _FENCED}\n",
        "  - A.commit_transaction: {expect: {librdkafka: _FENCED, java: ProducerFencedException, 4-java: InvalidProducerEpochException}}\n",
    )
    + """  by_profile:
    "4":
      transactions:
        order-pay: {state: Empty, epoch: 5}
    4-java:
      transactions:
        order-pay: {state: Empty, epoch: 3}
"""
)
COMMIT_OUTCOME = {
    "3.9-librdkafka": "_FENCED",
    "4-librdkafka": "_FENCED",
    "3.9-java": "ProducerFencedException",
    "4-java": "InvalidProducerEpochException",
}
EPOCH = {"3.9-librdkafka": 2, "3.9-java": 2, "4-librdkafka": 5, "4-java": 3}


def _raw_with_epoch(epoch):
    raw = json.loads(json.dumps(RAW))
    raw["transactions"]["order-pay"]["epoch"] = epoch
    return raw


@pytest.mark.parametrize("key", list(COMMIT_OUTCOME))
def test_it_passes_a_per_profile_expectation_under_each_profile(key):
    kafka, client = key.split("-")
    observation, _ = run(
        PER_PROFILE,
        outcomes={"A.commit_transaction": COMMIT_OUTCOME[key]},
        raw=_raw_with_epoch(EPOCH[key]),
        profile=Profile(kafka, client),
    )
    assert observation["expect"] == {"passed": 3, "failed": 0, "failures": []}


def test_it_fails_with_a_clear_message_when_a_profiles_outcome_differs():
    # kafka 4 + java: the step expects InvalidProducerEpochException (whole profile over client), the block epoch 3
    # (4-java over "4")
    observation, _ = run(
        PER_PROFILE,
        outcomes={"A.commit_transaction": "ProducerFencedException"},
        raw=_raw_with_epoch(5),
        profile=Profile("4", "java"),
    )
    assert observation["expect"]["failures"] == [
        f"steps[5] A.commit_transaction (line {line_of(PER_PROFILE, 'A.commit')}): expected InvalidProducerEpochException, observed ProducerFencedException",
        f"expect.transactions.order-pay (line {line_of(PER_PROFILE, 'epoch: 3')}): expected {{state: Empty, epoch: 3}}, observed {{state: Empty, epoch: 5}}",
    ]
    # the default profile still checks the plain values, with their own lines
    observation, _ = run(
        PER_PROFILE, outcomes={"A.commit_transaction": "ProducerFencedException"}, raw=_raw_with_epoch(5)
    )
    assert observation["expect"]["failures"] == [
        f"steps[5] A.commit_transaction (line {line_of(PER_PROFILE, 'A.commit')}): expected _FENCED, observed ProducerFencedException",
        f"expect.transactions.order-pay (line {line_of(PER_PROFILE, 'order-pay: {state: Empty, epoch: 2}')}): expected {{state: Empty, epoch: 2}}, observed {{state: Empty, epoch: 5}}",
    ]


def test_it_runs_a_per_profile_scenario_on_the_simulator_under_every_profile():
    text = """\
format: 1
id: fenced-per-profile
title: A zombie's commit, per profile
cluster:
  topics:
    orders: {partitions: 1}
actors:
  A: {producer: {transactional.id: shared}}
  B: {producer: {transactional.id: shared}}
steps:
  - A.init_transactions
  - A.begin_transaction
  - A.produce: {topic: orders, partition: 0, value: a-1}
  - B.init_transactions
  - A.commit_transaction: {expect: {librdkafka: _FENCED, java: ProducerFencedException}}
  - B.begin_transaction
  - B.produce: {topic: orders, partition: 0, value: b-1}
  - B.commit_transaction
expect:
  logs:
    orders-0: [a-1, ABORT, b-1, COMMIT]
  transactions:
    shared: {state: CompleteCommit, epoch: 2}
  by_profile:
    4-java:
      transactions:
        shared: {state: CompleteCommit, epoch: 3}
"""
    scenario = parse_scenario(text, "scenarios/x.yaml")
    for kafka in ("3.9", "4"):
        for client in ("librdkafka", "java"):
            observation = run_scenario(scenario, "sim", profile=Profile(kafka, client))
            assert observation["expect"]["failed"] == 0, (kafka, client, observation["expect"]["failures"])
            assert observation["profile"]["client"] == client and observation["profile"]["kafka"] == kafka
    # the same file with the librdkafka name for every client fails under java, naming the step and both names
    wrong = text.replace("{librdkafka: _FENCED, java: ProducerFencedException}", "_FENCED")
    observation = run_scenario(parse_scenario(wrong, "scenarios/x.yaml"), "sim", profile=Profile("3.9", "java"))
    assert observation["expect"]["failures"] == [
        f"steps[4] A.commit_transaction (line {line_of(wrong, 'A.commit')}): expected _FENCED, observed ProducerFencedException"
    ]


def test_it_checks_that_the_coordinator_does_not_know_a_transactional_id():
    text = (
        TEXT.replace("  B: {producer", "  C: {producer: {transactional.id: gone}}\n  B: {producer") + "    gone: null\n"
    )
    observation, _ = run(text=text)
    assert observation["expect"]["failed"] == 0 and observation["expect"]["passed"] == 4
    text = text.replace("    gone: null\n", "    a-new-one: null\n").replace(
        "transactional.id: gone", "transactional.id: a-new-one"
    )
    observation, _ = run(text=text)
    assert observation["expect"]["failures"] == [
        f"expect.transactions.a-new-one (line {line_of(text, 'a-new-one: null')}): expected null, observed {{state: Empty, epoch: 0}}"
    ]
