"""The Kafka-client benches of issue 30 run and report (tools/bench/door.py; tools/bench/abuse_kafka.py, the attacker
process of abuse.py): a smoke run of each with tiny numbers against a real Daphne. The figures are the benches' to
print; here only that they are read and reported (no timed assertions), so that a change of how sessions are stored
or served does not leave the benches broken unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from playground.deploy import procs

ROOT = Path(__file__).resolve().parents[1]
CAP_S = 600


def bench(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=CAP_S, check=False)


def test_it_builds_a_session_of_many_requests_and_opens_it_in_fresh_processes():
    done = bench("tools/bench/door.py", "--requests", "400", "--json")
    assert done.stdout, done.stderr[-3000:]
    r = json.loads(done.stdout)
    assert r["flood"]["answered"] == r["flood"]["sent"] == 400
    assert not r["flood"]["closed_by_server"]
    fresh = r["fresh_process"]
    assert "error" not in fresh, fresh
    assert fresh["steps"] >= 2 and fresh["middle"] == fresh["steps"] // 2  # what the client sent, the unlisten
    assert fresh["load_s"] > 0 and fresh["hwm_after_load_mib"] >= fresh["hwm_before_mib"] > 0
    page = r["fresh_daphne"]
    assert page["steps"] == fresh["steps"] and page["middle_step"] == fresh["middle"]
    assert (page["page"]["status"], page["middle"]["status"], page["ws"]["status"]) == (200, 200, 101)
    assert page["page"]["first_byte_s"] <= page["page"]["total_s"]
    assert set(r["aims"]) == {"opens_under_2_s", "peak_under_500_mib"}


def test_it_runs_every_kafka_attack_on_listening_sessions_and_reports_what_the_clients_were_answered(tmp_path):
    env = procs.django_env(
        tmp_path / "bench.sqlite3",
        "",
        DJANGO_DEBUG="0",
        PLAYGROUND_VAR_DIR=str(tmp_path / "var"),
        PLAYGROUND_LISTEN="1",
        PLAYGROUND_LIMITS="listeners_per_client=4",  # one process stands for both of abuse.py's
    )
    procs.migrate(env)
    daphne = procs.start_daphne(env, tmp_path / "daphne")
    try:
        done = bench(
            "tools/bench/abuse_kafka.py",
            "--nginx",
            daphne.url,
            "--daphne",
            daphne.url,
            "--daphne",
            daphne.url,
            "--address",
            "10.66.0.1",
            "--during",
            "8",
            "--settle-s",
            "1",
        )
    finally:
        daphne.stop()
    lines = done.stdout.strip().splitlines()
    assert lines and lines[0].startswith("ready "), done.stderr[-3000:]
    assert set(json.loads(lines[0].removeprefix("ready "))) == {"log", "poll", "flood", "storm"}
    r = json.loads(lines[-1])
    assert r["failures"] == []
    attacks = r["attacks"]
    assert set(attacks) == {"flood", "oversize", "topics", "unread", "poll", "storm", "log"}
    # what the clients were answered, by Kafka's error names (POLICY_VIOLATION, MSG_SIZE_TOO_LARGE, ... or a client's
    # own timeout on a swamped machine: whichever it was, it is counted and named)
    answers = attacks["topics"]["answers"]
    assert {k.split(":")[0] for k in answers} >= {"CreateTopics big x100000", "CreatePartitions orders to 100000"}, (
        answers
    )
    assert all(k.split(": ")[1].isupper() or k.endswith(("created", "no answer in 30 s")) for k in answers), answers
    assert sum(attacks["oversize"]["2 MB records"].values()) >= 1, attacks["oversize"]
    assert attacks["flood"]["offered"]["records"] > 0
    assert attacks["unread"]["sockets"] == 20 and attacks["unread"]["bytes_pushed"] > 0
    assert attacks["storm"]["connected"] > 0
    assert attacks["log"]["fetch"]["sent"] > 0 and attacks["log"]["metadata"]["sent"] > 0
    assert r["pages"] and all(p["status"] == 200 for p in r["pages"])
    assert {p["when"] for p in r["pages"]} >= {"after"}
    assert all(state["state"] == "listening" for state in r["listeners"].values())
