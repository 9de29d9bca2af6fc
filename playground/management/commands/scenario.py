"""`python manage.py scenario run FILE [--backend sim|kafka] [--kafka 3.9|4] [--client librdkafka|java] [--seed N]
[--json]`, `scenario validate FILE...`, `scenario list [DIR]`.

Exit codes (shared/docs/scenario-format.md): 0 every expectation holds, 1 one failed, 2 the file is invalid
(the message names file, line and field; never a traceback). Extension: 3 when the backend could not run the
scenario at all (e.g. no Kafka cluster configured), which is neither the file's fault nor an expectation.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand

from playground.engine.backend import BackendError
from playground.engine.spec import CLIENT_KEYS, KAFKA_RELEASES, parse_profile
from playground.scenario import ScenarioError, load_library, load_scenario, pick, run_scenario
from playground.scenario.anomalies import check, history_of_run

EXIT_FAILED, EXIT_INVALID, EXIT_BACKEND = 1, 2, 3
DEFAULT_DIR = Path(__file__).resolve().parents[3] / "scenarios"


class Command(BaseCommand):
    help = "Run, validate or list scenario files (scenarios/*.yaml)."
    # Needs neither URLs, models nor the database: skip the system checks (they import the whole site).
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="subcommand", required=True)
        run = sub.add_parser("run", help="run one scenario and check its expectations")
        run.add_argument("file")
        run.add_argument("--backend", choices=("sim", "kafka"), default="sim")
        run.add_argument("--seed", type=int, default=None, help="overrides the scenario's seed")
        run.add_argument(
            "--kafka",
            choices=tuple(KAFKA_RELEASES),
            default=None,
            help="the Kafka version (overrides the scenario's profile: "
            + ", ".join(f"{v} = Kafka {r}" for v, r in KAFKA_RELEASES.items())
            + ")",
        )
        run.add_argument(
            "--client",
            choices=CLIENT_KEYS,
            default=None,
            help="the client (overrides the scenario's profile): librdkafka, java (kafka-clients of the cluster's "
            "release) or java:VERSION (kafka-clients of that Kafka version, e.g. java:3.5)",
        )
        run.add_argument("--json", action="store_true", help="print the observation as JSON")
        run.add_argument("--lang", default="en", help="language of notes in the transcript (en, zh)")
        run.add_argument(
            "--check",
            action="store_true",
            help="run the anomaly checker over the history (lost writes, duplicates, aborted and "
            "undecided reads, database/Kafka divergence); exit 1 when it finds any",
        )
        validate = sub.add_parser("validate", help="check scenario files without running them")
        validate.add_argument("files", nargs="+")
        listing = sub.add_parser("list", help="the scenario library")
        listing.add_argument("directory", nargs="?", default=str(DEFAULT_DIR))
        listing.add_argument("--lang", default="en")

    def handle(self, *args, **options):
        return getattr(self, f"_{options['subcommand']}")(**options)

    def _fail(self, code: int, message: str):
        self.stderr.write(message)
        raise SystemExit(code)

    def _run(self, file, backend, seed, lang, **options):
        try:
            scenario = load_scenario(file)
        except ScenarioError as exc:
            self._fail(EXIT_INVALID, str(exc))
        profile = parse_profile(options.get("kafka"), options.get("client"), base=scenario.profile)
        scenario = scenario.for_profile(profile)  # its outcomes as stated for this profile
        record: list = []
        try:
            observation = run_scenario(scenario, backend=backend, seed=seed, record=record, profile=profile)
        except (BackendError, ImportError) as exc:  # ImportError: that backend is not installed here
            self._fail(EXIT_BACKEND, f"{file}: backend {backend} could not run: {exc}")
        found = check(history_of_run(scenario, record, observation)) if options["check"] else []
        expected = set((scenario.expect or {}).get("anomalies", ()))
        unexpected = [f for f in found if f.rule not in expected]
        if options["json"]:
            if options["check"]:
                observation = {**observation, "anomalies": [f.as_dict() for f in found]}
            self.stdout.write(json.dumps(observation, ensure_ascii=False, indent=2))
        else:
            self._transcript(scenario, observation, lang)
            if options["check"]:
                self.stdout.write(
                    f"anomalies: {len(found)}"
                    + (f" (the scenario expects {', '.join(sorted(expected))})" if expected else "")
                )
                for finding in found:
                    self.stdout.write(f"  {finding}{'' if finding.rule in expected else '  <- unexpected'}")
        if observation["expect"]["failed"] or unexpected:
            raise SystemExit(EXIT_FAILED)

    def _transcript(self, scenario, observation, lang):
        out = self.stdout
        p = observation["profile"]
        out.write(
            f"{scenario.id}: {scenario.text('title', lang)}  [backend {observation['backend']}, seed {observation['seed']}, "
            f"Kafka {p['release']}, {p['client']}, transaction.version {p['transaction_version']}]"
        )
        outcomes = {s["index"]: s["outcome"] for s in observation["steps"]}
        width = max((len(s.label) for s in scenario.steps if not s.is_note), default=0)
        for step in scenario.steps:
            if step.is_note:
                out.write(f"      # {pick(step.args.get('text'), lang)}")
                continue
            outcome = outcomes.get(step.index, "?")
            args = " ".join(f"{k}={v}" for k, v in step.args.items())
            verdict = ""
            if step.expect is not None:
                verdict = "  ✓" if outcome in step.expect else f"  ✗ expected {' or '.join(step.expect)}"
            out.write(f"{step.index:4}  {step.label:<{width}}  {args:<40} -> {outcome}{verdict}".rstrip())
        result = observation["expect"]
        out.write("")
        for failure in result["failures"]:
            out.write(f"FAILED {failure}")
        out.write(f"expectations: {result['passed']} passed, {result['failed']} failed")

    def _validate(self, files, **_):
        invalid = 0
        for file in files:
            try:
                scenario = load_scenario(file)
            except ScenarioError as exc:
                invalid += 1
                self.stderr.write(str(exc))
            else:
                self.stdout.write(f"ok {file} ({scenario.id}, {len(scenario.steps)} steps)")
        if invalid:
            raise SystemExit(EXIT_INVALID)

    def _list(self, directory, lang, **_):
        try:
            scenarios = load_library(directory)
        except ScenarioError as exc:
            self._fail(EXIT_INVALID, str(exc))
        for scenario in scenarios:
            self.stdout.write(f"{Path(scenario.path).name:<44} {scenario.id:<36} {scenario.text('title', lang)}")
