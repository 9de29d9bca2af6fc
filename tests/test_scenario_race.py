"""send_offsets_to_transaction's `first:` (issue 31 item 6): as the loader reads it, and which produce steps the real
backend's Java worker holds for the race the scenario decides (KafkaBackend.hold_before_races): the fire-and-forget
sends of that producer right before it, and nothing else."""

from types import SimpleNamespace

import pytest

from playground.engine.spec import Profile
from playground.kafka.backend import KafkaBackend
from playground.scenario import ScenarioError, load_scenario, parse_scenario
from tests.test_scenario_library import LIBRARY


def holds(path, profile):
    backend = SimpleNamespace(profile=profile, _holds=set())
    scenario = load_scenario(path)
    KafkaBackend.hold_before_races(backend, scenario.steps)  # type: ignore[arg-type]
    return sorted((s.index, s.label, s.args.get("value")) for s in scenario.steps if s.index in backend._holds)


def test_it_holds_the_listeners_fire_and_forget_sends_right_before_the_offsets_that_state_the_race():
    assert holds(LIBRARY / "32-spring-shared-prefix-blocked.yaml", Profile("3.9", "java")) == [
        (9, "listener-tx.produce", "paid-1"),
        (10, "listener-tx.produce", "paid-2"),
        (11, "listener-tx.produce", "paid-3"),
    ]


def test_it_holds_nothing_for_librdkafka_nor_where_no_scenario_states_the_race():
    assert holds(LIBRARY / "32-spring-shared-prefix-blocked.yaml", Profile("3.9", "librdkafka")) == []
    for path in sorted(LIBRARY.glob("*.yaml")):
        if path.stem != "32-spring-shared-prefix-blocked":
            assert holds(path, Profile("3.9", "java")) == [], path.stem


def test_it_reads_first_as_one_of_the_two_racing_requests_and_says_which_they_are():
    text = (LIBRARY / "32-spring-shared-prefix-blocked.yaml").read_text()
    scenario = parse_scenario(text, "32.yaml")
    (step,) = [s for s in scenario.steps if s.args.get("first")]
    assert step.args["first"] == "AddPartitionsToTxn"
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text.replace("first: AddPartitionsToTxn", "first: AddPartitionToTxn"), "32.yaml")
    assert "AddPartitionsToTxn" in str(info.value) and "did you mean" in str(info.value)
