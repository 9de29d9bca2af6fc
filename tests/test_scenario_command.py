"""`manage.py scenario run|validate|list`: exit codes 0 / 1 / 2, readable output, never a traceback for a bad file."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

import playground.scenario.run as scenario_module
from playground.engine.spec import Profile
from tests.test_scenario_runner import RAW, TEXT, ScriptedBackend

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def scripted(monkeypatch):
    """`--backend sim` answered by the scripted stand-in: A's commit is fenced, observe() returns RAW."""
    outcomes = {"A.commit_transaction": "_FENCED"}
    monkeypatch.setattr(
        scenario_module, "make_backend", lambda name, cluster, actors, **kw: ScriptedBackend(outcomes, RAW)
    )
    return outcomes


def command(*args):
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("scenario", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue(), err.getvalue()


def write(tmp_path, text, name="x.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_it_exits_0_and_prints_a_transcript_when_every_expectation_holds(tmp_path, scripted):
    code, out, err = command("run", write(tmp_path, TEXT))
    assert code == 0, err
    assert "zombie-fencing: Two producers share one transactional.id" in out
    assert "A.commit_transaction" in out and "-> _FENCED  ✓" in out
    assert "# B starts with the same transactional.id" in out
    assert "expectations: 3 passed, 0 failed" in out


def test_it_shows_notes_in_the_language_asked_for(tmp_path, scripted):
    code, out, _ = command("run", write(tmp_path, TEXT), "--lang", "zh")
    assert code == 0 and "# B 用同一个 transactional.id 启动" in out


def test_it_exits_1_and_says_what_failed_when_an_expectation_does_not_hold(tmp_path, scripted):
    scripted["A.commit_transaction"] = "ok"
    code, out, _ = command("run", write(tmp_path, TEXT))
    assert code == 1
    assert "FAILED steps[5] A.commit_transaction" in out and "expected _FENCED, observed ok" in out
    assert "expectations: 3 passed, 1 failed" in out


def test_it_prints_the_observation_as_json(tmp_path, scripted):
    code, out, _ = command("run", write(tmp_path, TEXT), "--json", "--seed", "9")
    observation = json.loads(out)
    assert code == 0
    assert observation["seed"] == 9 and observation["scenario"] == "zombie-fencing"
    assert observation["expect"] == {"passed": 3, "failed": 0, "failures": []}


def test_it_exits_2_naming_file_line_and_field_for_an_invalid_file(tmp_path, scripted):
    path = write(tmp_path, TEXT.replace("  - rc.poll", "  - C.poll"))
    code, out, err = command("run", path)
    assert code == 2 and out == ""
    assert err.strip() == f"{path}:21: steps[6].C.poll: unknown actor 'C' (actors: A, B, plain, rc, copier-in)"


def test_it_exits_2_for_a_file_that_does_not_exist(tmp_path):
    code, _, err = command("run", str(tmp_path / "missing.yaml"))
    assert code == 2 and "missing.yaml:0: file: cannot read" in err


def test_it_validates_several_files_and_exits_2_if_any_is_invalid(tmp_path):
    good = write(tmp_path, TEXT, "good.yaml")
    bad = write(tmp_path, TEXT.replace("format: 1", "format: 3"), "bad.yaml")
    code, out, err = command("validate", good, bad)
    assert code == 2
    assert f"ok {good} (zombie-fencing, 7 steps)" in out
    assert f"{bad}:1: format: this playground reads format 1, not 3" in err
    assert command("validate", good)[0] == 0


def test_it_lists_the_library(tmp_path):
    write(tmp_path, TEXT, "01-zombie.yaml")
    code, out, _ = command("list", str(tmp_path))
    assert code == 0 and "01-zombie.yaml" in out and "zombie-fencing" in out


def test_it_prints_no_traceback_for_an_invalid_file_from_the_shell(tmp_path):
    path = write(tmp_path, TEXT.replace("partition: 0, value: txn1-p0", "partition: 5, value: txn1-p0"))
    result = subprocess.run(
        [sys.executable, "manage.py", "scenario", "run", path], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert (
        result.stderr.strip()
        == f"{path}:17: steps[2].A.produce.partition: partition 5 is out of range: orders has 2 partition(s), 0..1"
    )


LIBRARY_FILE = str(ROOT / "scenarios" / "02-zombie-fencing.yaml")


def test_it_runs_a_scenario_in_the_profile_the_flags_name_and_says_so_in_the_observation():
    code, out, err = command("run", LIBRARY_FILE, "--kafka", "4", "--client", "librdkafka", "--json")
    assert code == 0, err
    assert json.loads(out)["profile"] == {
        "kafka": "4",
        "release": "4.4.0",
        "client": "librdkafka",
        "transaction_version": 2,
    }
    code, out, _ = command("run", LIBRARY_FILE, "--json")
    assert json.loads(out)["profile"] == {
        "kafka": "3.9",
        "release": "3.9.1",
        "client": "librdkafka",
        "transaction_version": 0,
    }


def test_it_lets_a_flag_override_the_profile_a_file_names(tmp_path):
    text = Path(LIBRARY_FILE).read_text(encoding="utf-8").replace("\ncluster:", '\nprofile: {kafka: "4"}\ncluster:', 1)
    path = write(tmp_path, text)
    assert json.loads(command("run", path, "--json")[1])["profile"]["kafka"] == "4"
    assert json.loads(command("run", path, "--json", "--kafka", "3.9")[1])["profile"]["release"] == "3.9.1"
    code, out, _ = command("run", path)
    assert code == 0 and "Kafka 4.4.0, librdkafka, transaction.version 2" in out.splitlines()[0]


def test_it_exits_3_naming_what_is_missing_when_the_backend_cannot_run_the_profile(monkeypatch):
    from playground.engine.backend import ProfileError

    asked = []

    def refuse(name, cluster, actors, **kw):
        asked.append(kw["profile"])
        raise ProfileError("the real-cluster backend has no java worker yet")

    monkeypatch.setattr(scenario_module, "make_backend", refuse)
    code, out, err = command("run", LIBRARY_FILE, "--backend", "kafka", "--client", "java", "--kafka", "4")
    assert code == 3 and out == ""
    assert asked == [Profile("4", "java")]
    assert (
        err.strip() == f"{LIBRARY_FILE}: backend kafka could not run: the real-cluster backend has no java worker yet"
    )


def test_it_refuses_a_kafka_version_or_client_it_does_not_have():
    result = subprocess.run(
        [sys.executable, "manage.py", "scenario", "run", LIBRARY_FILE, "--kafka", "4.0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (
        result.returncode != 0
        and "argument --kafka: invalid choice: '4.0' (choose from '3.5', '3.9', '4')" in result.stderr
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "scenario", "run", LIBRARY_FILE, "--client", "jvm"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and "argument --client: invalid choice: 'jvm'" in result.stderr
