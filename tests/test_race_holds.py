"""Which produce steps the real backend's Java worker holds for a race the scenario decides (KafkaBackend
.hold_before_races, issue 31 item 6): the fire-and-forget sends of that producer right before a
send_offsets_to_transaction that states `first`, and nothing else."""

from types import SimpleNamespace

from playground.engine.spec import Profile
from playground.kafka.backend import KafkaBackend
from playground.scenario import load_scenario
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
