"""Every library scenario under every profile (Kafka 3.5 / 3.9 / 4 x librdkafka / kafka-clients 3.5, 3.9, 4.4) on the
simulator: its steps' outcomes and its `expect:` block, as stated for that profile (docs/scenario-format.md, "Outcomes per profile"),
must all hold, and the anomaly checker must find exactly the rules the scenario declares for that profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from playground.engine.spec import Profile
from playground.scenario import load_library, load_scenario, run_scenario
from playground.scenario.anomalies import check, history_of_run
from playground.scenario.model import PROFILES

LIBRARY = Path(__file__).resolve().parents[1] / "scenarios"
FILES = sorted(LIBRARY.glob("*.yaml"))


def _key(profile: Profile) -> str:
    return profile.key


@pytest.mark.parametrize("profile", PROFILES, ids=_key)
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_it_runs_every_library_scenario_under_every_profile_with_its_expectations_holding(path, profile):
    scenario = load_scenario(path)
    record: list = []
    observation = run_scenario(scenario, "sim", profile=profile, record=record)
    assert observation["profile"]["kafka"] == profile.kafka and observation["profile"]["client"] == profile.client
    result = observation["expect"]
    assert result["failed"] == 0, "\n".join(result["failures"])
    assert result.get("unchecked", []) == []  # every step's outcome is stated for every profile
    assert result["passed"] > 0
    found = check(history_of_run(scenario.for_profile(profile), record, observation))
    assert [f for f in found if f.rule in ("aborted-read", "undecided-read")] == []
    declared = (scenario.for_profile(profile).expect or {}).get("anomalies", [])
    assert sorted({f.rule for f in found}) == declared, [str(f) for f in found]


def test_it_states_outcomes_per_profile_where_the_java_client_or_kafka_4_differ():
    scenarios = {s.id: s for s in load_library(LIBRARY)}
    # the fenced commit: librdkafka's local error, the Java exception; under v2 the leader refuses the batch first
    incident = scenarios["shared-id-incident"]
    commit = next(s for s in incident.steps if s.label == "pay.commit_transaction" and s.expect and s.expect != ("ok",))
    assert incident.for_profile(Profile("3.9", "java")).steps[commit.index].expect == ("ProducerFencedException",)
    assert incident.for_profile(Profile("4", "java")).steps[commit.index].expect == ("InvalidProducerEpochException",)
    assert incident.for_profile(Profile("4", "librdkafka")).steps[commit.index].expect == ("_FENCED",)
    # the new scenarios are told in their own profile, and state what the others show
    assert scenarios["v2-epoch-bump-per-transaction"].profile == Profile("4", "java")
    assert scenarios["v2-epoch-bump-per-transaction"].expect["transactions"]["ledger-writer"]["epoch"] == 4
    assert (
        scenarios["v2-epoch-bump-per-transaction"]
        .for_profile(Profile("4", "librdkafka"))
        .expect["transactions"]["ledger-writer"]["epoch"]
        == 0
    )
    assert scenarios["shared-id-incident-java"].profile == Profile("3.9", "java")
    assert all(s.per_profile for s in scenarios.values())  # every library file has an outcome that differs somewhere
