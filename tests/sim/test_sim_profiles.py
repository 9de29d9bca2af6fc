"""SimBackend under every profile (Kafka 3.9 / 4.x x librdkafka / kafka-clients): what the backend contract shows of
each, the same seed giving the same run, and the library's scenarios all running (their expectations are written for
the default profile; the other profiles' differences are the point)."""

from pathlib import Path

import pytest

from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, ClusterSpec, Profile, Step, TopicSpec
from playground.scenario import load_scenario, run_scenario
from playground.scenario.model import OUTCOMES
from playground.sim.driver import SimBackend
from playground.web import diagrams

LIBRARY = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml"))
PROFILES = [Profile("3.9", "librdkafka"), Profile("3.9", "java"), Profile("4", "librdkafka"), Profile("4", "java")]
IDS = [f"{p.kafka}-{p.client}" for p in PROFILES]


def backend(profile, actors=None, seed=3):
    spec = ClusterSpec(brokers=3, topics=(TopicSpec("orders", 2),))
    actors = actors or {
        "A": ActorSpec("A", PRODUCER, {"transactional.id": "t"}),
        "B": ActorSpec("B", PRODUCER, {"transactional.id": "t"}),
        "rc": ActorSpec("rc", CONSUMER, {"isolation.level": "read_committed"}, ("orders",)),
    }
    return SimBackend(spec, actors, seed=seed, profile=profile)


def run(b, *steps):
    return [b.apply(Step(*s) if isinstance(s, tuple) else Step(s.split(".")[0], s.split(".")[1])) for s in steps]


@pytest.mark.parametrize("profile", PROFILES, ids=IDS)
def test_it_gives_the_same_events_for_the_same_seed_and_steps(profile):
    def once():
        b = backend(profile)
        run(
            b,
            "A.init_transactions",
            "A.begin_transaction",
            ("A", "produce", {"topic": "orders", "value": "x"}),
            "B.init_transactions",
            "A.commit_transaction",
            "B.begin_transaction",
            ("B", "produce", {"topic": "orders", "value": "y", "partition": 1}),
            "B.commit_transaction",
            "rc.poll",
        )
        b.observe()
        return [e.to_dict() for e in b.events]

    assert once() == once()


@pytest.mark.parametrize("path", LIBRARY, ids=[p.stem for p in LIBRARY])
def test_it_runs_every_library_scenario_under_every_profile_with_outcomes_from_the_closed_list(path):
    scenario = load_scenario(path)
    for profile in PROFILES[1:]:
        b = SimBackend(scenario.cluster, scenario.actors, seed=scenario.seed, profile=profile)
        observation = run_scenario(scenario, backend=b)
        outcomes = {s["outcome"] for s in observation["steps"]}
        assert outcomes <= OUTCOMES, (profile, outcomes - OUTCOMES)


def test_it_shows_the_java_transaction_manager_states_in_the_view():
    b = backend(Profile("4", "java"))
    assert b.view()["producers"]["A"]["state"] == "UNINITIALIZED"
    run(b, "A.init_transactions", "A.begin_transaction")
    view = b.view()
    assert view["producers"]["A"]["state"] == "IN_TRANSACTION"
    assert view["producers"]["A"]["client"] == "java"
    run(b, ("A", "produce", {"topic": "orders", "value": "x", "partition": 0}), "A.commit_transaction")
    producer = b.view()["producers"]["A"]
    assert (producer["state"], producer["epoch"]) == ("READY", 1)  # TV2: the commit bumped the epoch


@pytest.mark.parametrize("profile", PROFILES, ids=IDS)
def test_it_hands_the_dashboard_the_transition_table_of_its_kafka_release(profile):
    table = backend(profile).view()["transitions"]
    assert ("Empty" in table["PrepareAbort"]) == (profile.kafka == "4")
    assert {k: tuple(sorted(v)) for k, v in table.items()} == {
        k: tuple(sorted(v)) for k, v in diagrams.transitions(profile.kafka).items()
    }
    drawn = diagrams.current_state_machine(kafka=profile.kafka)
    edges = {(e.src, e.dst) for e in drawn["edges"]}
    assert (("Empty", "PrepareAbort") in edges) == (profile.kafka == "4")


def test_it_names_the_fenced_java_producer_and_the_wire_error_behind_it():
    # the seed incident with kafka-clients: ProducerFencedException, PRODUCER_FENCED (90) on the wire (not 102)
    b = backend(Profile("3.9", "java"))
    outcomes = run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A", "produce", {"topic": "orders", "value": "x", "partition": 0}),
        "B.init_transactions",
        "A.commit_transaction",
    )
    assert outcomes[-1] == "ProducerFencedException"
    producer = b.view()["producers"]["A"]
    assert producer["fenced"] and producer["last_error"]["wire"] == "PRODUCER_FENCED (90)"
    assert producer["state"] == "FATAL_ERROR" and producer["fatal_error"] == "ProducerFencedException"


def test_it_names_the_fenced_librdkafka_producer_as_before_on_kafka_4():
    b = backend(Profile("4", "librdkafka"))
    outcomes = run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A", "produce", {"topic": "orders", "value": "x", "partition": 0}),
        "B.init_transactions",
        "A.commit_transaction",
    )
    assert outcomes[-1] == "_FENCED" and b.view()["producers"]["A"]["fenced"]


def test_it_reports_a_java_fire_and_forget_send_as_ok_even_when_its_future_fails():
    # a fire-and-forget send is a future nobody calls get() on; the awaited one's get() throws the cause
    b = backend(Profile("4", "java"))
    run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A", "produce", {"topic": "orders", "value": "x", "partition": 0}),
        "B.init_transactions",
    )
    assert run(b, ("A", "produce", {"topic": "orders", "value": "late", "partition": 0, "await": False})) == ["ok"]
    assert run(b, ("A", "produce", {"topic": "orders", "value": "later", "partition": 0})) == [
        "InvalidProducerEpochException"
    ]
    assert b.view()["producers"]["A"]["counters"]["app_sent_ok"] == 2  # x, and the unawaited "late"
