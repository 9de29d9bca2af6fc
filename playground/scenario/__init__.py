"""Scenario files (format 1): what they are (model.py), loading and validating them (loader.py), running them on
a backend and building the observation (run.py), and writing a session back out as one (writer.py).

The format and the `--json` observation are a contract: shared/docs/scenario-format.md, extended (never broken)
by docs/scenario-format-extensions.md. Every validation error names the file, the line and the field.

No Django here: the simulator's tests, the web layer and the management command all import this package.
"""

from playground.scenario.loader import check_text, load_library, load_scenario, parse_scenario, parsed
from playground.scenario.model import (
    CLUSTER_CONFIG,
    CONSUMER_CONFIG,
    DEFAULT_LANG,
    FORMAT,
    MARKERS,
    MAX_ACTORS,
    MAX_SOURCE_BYTES,
    MAX_STEPS,
    OUTCOMES,
    PRODUCER_CONFIG,
    TXN_STATES,
    Scenario,
    ScenarioError,
    pick,
)
from playground.scenario.run import build_observation, check_expectations, run_scenario

__all__ = [
    "CLUSTER_CONFIG",
    "CONSUMER_CONFIG",
    "DEFAULT_LANG",
    "FORMAT",
    "MARKERS",
    "MAX_ACTORS",
    "MAX_SOURCE_BYTES",
    "MAX_STEPS",
    "OUTCOMES",
    "PRODUCER_CONFIG",
    "TXN_STATES",
    "Scenario",
    "ScenarioError",
    "build_observation",
    "check_expectations",
    "check_text",
    "load_library",
    "load_scenario",
    "parse_scenario",
    "parsed",
    "pick",
    "run_scenario",
]
