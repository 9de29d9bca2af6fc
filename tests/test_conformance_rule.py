"""The rule `make conformance` judges the simulator by (tools/conformance/gotest.py): franz-go's tests that pass against
real Kafka pass against the simulator, none passes only against it; a test that fails only under `make test`'s load
runs a second time alone, and the check says so."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("gotest", ROOT / "tools" / "conformance" / "gotest.py")
assert _spec is not None and _spec.loader is not None
gotest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gotest)


def run_file(path: Path, outcomes: dict[str, str]) -> str:
    events = []
    for name, outcome in outcomes.items():
        events += [{"Action": "run", "Test": name}, {"Action": outcome, "Test": name, "Elapsed": 1.5}]
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n", encoding="utf-8")
    return str(path)


def expected_file(path: Path, outcomes: dict[str, str]) -> str:
    path.write_text("# recorded\n" + "".join(f"{o} {n}\n" for n, o in outcomes.items()), encoding="utf-8")
    return str(path)


KAFKA = {"TestA": "pass", "TestB": "pass", "TestB/sub": "pass", "TestC": "skip"}


def test_it_names_for_a_second_run_the_tests_that_passed_against_kafka_and_failed_here(tmp_path, capsys):
    expected = expected_file(tmp_path / "expected.txt", KAFKA)
    run = run_file(tmp_path / "run.jsonl", {"TestA": "pass", "TestB": "fail", "TestB/sub": "fail", "TestC": "fail"})
    assert gotest.main(["again", expected, run]) == 0
    assert capsys.readouterr().out.strip() == "^(TestB)$"  # a subtest's failure runs its test; TestC skips on Kafka


def test_it_runs_nothing_a_second_time_when_too_many_failed(tmp_path, capsys):
    names = {f"Test{i}": "pass" for i in range(gotest.AGAIN_MAX + 1)}
    expected = expected_file(tmp_path / "expected.txt", names)
    run = run_file(tmp_path / "run.jsonl", dict.fromkeys(names, "fail"))
    assert gotest.main(["again", expected, run]) == 0
    assert capsys.readouterr().out == ""


def test_a_test_that_passes_alone_keeps_the_rule_and_the_check_says_it_failed_under_the_load(tmp_path, capsys):
    expected = expected_file(tmp_path / "expected.txt", KAFKA)
    run = run_file(tmp_path / "run.jsonl", {"TestA": "pass", "TestB": "fail", "TestB/sub": "pass", "TestC": "skip"})
    again = run_file(tmp_path / "again.jsonl", {"TestB": "pass", "TestB/sub": "pass"})
    assert gotest.main(["check", expected, run]) == 1
    capsys.readouterr()
    assert gotest.main(["check", expected, run, "--again", again]) == 0
    assert "TestB: failed under the load, pass alone in 1.5 s" in capsys.readouterr().out


def test_a_test_that_fails_twice_breaks_the_rule(tmp_path, capsys):
    expected = expected_file(tmp_path / "expected.txt", KAFKA)
    run = run_file(tmp_path / "run.jsonl", {"TestA": "fail", "TestB": "pass", "TestB/sub": "pass", "TestC": "skip"})
    again = run_file(tmp_path / "again.jsonl", {"TestA": "fail"})
    assert gotest.main(["check", expected, run, "--again", again]) == 1
    assert "TestA: pass against Kafka, fail against the simulator" in capsys.readouterr().out
