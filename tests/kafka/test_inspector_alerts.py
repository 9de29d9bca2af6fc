"""The inspector as a team's alerting uses it (issue 21): no false alarm for a restart, no silence for a stall, one
line per group of findings. Against the real broker, with this test's own confluent-kafka producers (an
application outside the playground), under a prefix of the test's own that the allow-lists let through.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import time

import pytest
from confluent_kafka import KafkaException, Producer

from playground.inspector import forget_inspectors, get_inspector
from tests.kafka.test_inspector import kinds, plain_producer, run_cli, send, settle, txn_producer
from tests.kafkatopics import create_topic, drop_topics

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module", autouse=True)
def _drop_inspectors():
    yield
    forget_inspectors()


@pytest.fixture
def prefix(settings, admin):
    """A prefix of this test's own; the allow-lists let exactly it through. Its topics are deleted afterwards."""
    pre = f"insa-{secrets.token_hex(4)}-"
    settings.INSPECTOR_TOPICS = [f"{pre}*"]
    settings.INSPECTOR_TRANSACTIONAL_IDS = [f"{pre}*"]
    settings.INSPECTOR_POLL_INTERVAL_S = 0.5
    yield pre
    drop_topics(admin, pre)


# A producer of another application with a transaction.timeout.ms of 80 s: writes into a transaction, says so, and
# waits to be killed (SIGKILL: no abort). Its coordinator would abort it only after 80 s.
LEFT_OPEN = r"""
import sys, time
from confluent_kafka import Producer
bootstrap, topic, txid, partition = sys.argv[1:5]
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, "transaction.timeout.ms": 80000})
p.init_transactions(30)
p.begin_transaction()
p.produce(topic, b"left-open", partition=int(partition))
p.flush(30)
print("written", flush=True)
time.sleep(600)
"""


def left_open(bootstrap: str, topic: str, txid: str, partition: int) -> None:
    """A transaction left open by a killed producer."""
    proc = subprocess.Popen(
        [sys.executable, "-c", LEFT_OPEN, bootstrap, topic, txid, str(partition)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "written"
    finally:
        proc.kill()
        proc.wait(10)


def test_it_counts_a_restart_loop_of_one_instance_as_restarts_not_a_shared_id(kafka_bootstrap, admin, prefix):
    topic = create_topic(admin, f"{prefix}orders")
    txid = f"{prefix}order-pay"
    # a rolling deploy of one instance: commit, close, start again at once (no pause to tell it apart by)
    for n in range(4):
        p = txn_producer(kafka_bootstrap, txid)
        p.begin_transaction()
        send(p, topic, f"order-{n}")
        p.commit_transaction(20)
        p.close()
    settle(txid)
    report = get_inspector().inspect([topic], [txid], max_age_s=0)
    [tid] = report["transactional_ids"]
    assert [i["producer_epoch"] for i in tid["inits"]] == [0, 1, 2, 3]  # four InitProducerIds, no fence among them
    assert report["findings"] == [] and report["groups"] == []
    code, out, err = run_cli("--topic", topic, "--transactional-id", txid)
    assert code == 0, out + err
    assert "no findings" in out


def test_it_reports_two_alternating_instances_as_one_group_of_certain_shared_id_findings(
    kafka_bootstrap, admin, prefix
):
    topic = create_topic(admin, f"{prefix}payments")
    txid = f"{prefix}payment-svc"
    # two instances of one service, each fenced mid-transaction by the other's (re)start, which the fenced one
    # answers by starting a new producer: what two deployments sharing a transactional.id do
    current = txn_producer(kafka_bootstrap, txid)
    current.begin_transaction()
    send(current, topic, "pay-0")
    for n in range(1, 5):
        other = txn_producer(kafka_bootstrap, txid)  # fences `current`'s open transaction
        other.begin_transaction()
        send(other, topic, f"pay-{n}")
        with pytest.raises(KafkaException):
            current.commit_transaction(10)
        current = other
    current.commit_transaction(20)
    settle(txid)

    report = get_inspector().inspect([topic], [txid], max_age_s=0)
    shared = [f for f in report["findings"] if f["kind"] == "shared_transactional_id"]
    assert len(shared) == 4
    assert all(f["confidence"] == "certain" and "alternating" in f["why"] for f in shared)
    times = [f["time_ms"] for f in report["findings"]]
    assert times == sorted(times, reverse=True)  # newest first
    [group] = [g for g in report["groups"] if g["kind"] == "shared_transactional_id"]
    assert (group["subject"], group["count"], group["confidence"]) == (txid, 4, "certain")
    assert group["first_ms"] == min(f["time_ms"] for f in shared) and group["last_ms"] == max(times)
    assert [f["evidence"]["new_epoch"] for f in group["findings"]] == [8, 6, 4, 2]  # the newest incident first
    code, out, err = run_cli("--topic", topic, "--transactional-id", txid)
    assert code == 1, err
    lines = out.splitlines()
    summary = next(n for n, line in enumerate(lines) if "group(s)" in line)
    assert lines[summary + 1].startswith(f"[shared_transactional_id] {txid}: 4x, ")
    assert ", certain: " in lines[summary + 1]
    # the details come after the partitions, each group once, its newest findings listed under it
    details = lines.index(f"{len(report['findings'])} finding(s):")
    assert details > summary + len(report["groups"])
    assert sum(1 for line in lines[details:] if line.startswith("[shared_transactional_id]")) == 1


def test_it_raises_an_lso_stall_within_one_poll_of_the_threshold(kafka_bootstrap, admin, prefix, settings):
    topic = create_topic(admin, f"{prefix}shop-orders")
    txid = f"{prefix}checkout"
    left_open(kafka_bootstrap, topic, txid, 0)
    # the application carries on: a clean transactional producer and plain records pile up behind the LSO
    other = txn_producer(kafka_bootstrap, f"{prefix}refunds")
    other.begin_transaction()
    for i in range(20):
        other.produce(topic, f"refund-{i}".encode(), partition=0)
    other.commit_transaction(20)
    plain = plain_producer(kafka_bootstrap, idempotent=False)
    for i in range(30):
        plain.produce(topic, f"audit-{i}".encode(), partition=0)
    plain.flush(20)

    settings.INSPECTOR_POLL_INTERVAL_S = 0.5
    reports: list[dict] = []
    sub = get_inspector().subscribe(reports.append, [topic], [txid])
    try:
        # the default threshold: half the transaction's own transaction.timeout.ms (80 s) as its coordinator says
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            ages = [
                o["age_ms"]
                for r in reports[-1:]
                for p in r.get("partitions", [])
                for o in p["open_transactions"]
                if o["age_ms"] is not None
            ]
            if ages and ages[0] > 41_000:
                break
            time.sleep(0.2)
    finally:
        sub.close()
    seen = [r for r in reports if "partitions" in r and r["partitions"][0]["open_transactions"]]
    assert seen and seen[-1]["partitions"][0]["open_transactions"][0]["age_ms"] > 41_000
    for r in seen:
        age = r["partitions"][0]["open_transactions"][0]["age_ms"]
        stalls = [f for f in r["findings"] if f["kind"] == "lso_stall"]
        # the first read past the threshold raises it: no poll of delay, no alarm before
        assert (len(stalls) == 1) == (age > 40_000), (age, kinds(r["findings"]))
    [stall] = [f for f in seen[-1]["findings"] if f["kind"] == "lso_stall"]
    ev = stall["evidence"]
    assert (ev["transactional_id"], ev["start_offset"], ev["last_stable_offset"]) == (txid, 0, 0)
    assert ev["offsets_held"] == 52 and ev["high_watermark"] == 52  # 1 open, 20 + COMMIT, 30 plain
    assert ev["other_producers_records_held"] == 50 and ev["threshold_ms"] == 40_000
    assert "transaction.timeout.ms (80000 ms" in ev["threshold_from"] and ev["coordinator_state"] == "Ongoing"
    assert stall["confidence"] == "certain" and "read_committed" in ev["held_back"]
    # the current condition leads the groups, whatever happened after it began
    assert seen[-1]["groups"][0]["kind"] == "lso_stall"
    code, out, _err = run_cli("--topic", topic, "--transactional-id", txid)
    assert code == 1
    first = next(line for line in out.splitlines() if line.startswith("["))
    assert first.startswith(f"[lso_stall] {topic}-0: 1x")
    # a setting instead: a stricter team pages at 10 s
    settings.INSPECTOR_LSO_STALL_MS = 10_000
    [stall] = [f for f in get_inspector().findings([topic], [txid]) if f["kind"] == "lso_stall"]
    assert stall["evidence"]["threshold_from"] == "INSPECTOR_LSO_STALL_MS=10000"
    txn_producer(kafka_bootstrap, txid)  # the application's next instance ends the dead one's transaction
    assert not [
        f for f in get_inspector().inspect([topic], [txid], max_age_s=0)["findings"] if f["kind"] == "lso_stall"
    ]


def test_it_groups_findings_by_kind_and_subject():
    from playground.inspector.detectors import group_findings, group_line

    def f(kind, subject, t, confidence="certain"):
        return {"kind": kind, "subject": subject, "summary": f"{kind} at {t}", "time_ms": t, "confidence": confidence}

    found = [
        f("interleaved_plain_records", "o-0", 5),
        f("shared_transactional_id", "pay", 10, "likely"),
        f("shared_transactional_id", "pay", 30),
        f("lso_stall", "o-1", 1),
        f("shared_transactional_id", "pay", 20, "likely"),
    ]
    groups = group_findings(found, evidence_max=2)
    assert [(g["kind"], g["count"]) for g in groups] == [
        ("lso_stall", 1),  # a current condition first
        ("shared_transactional_id", 3),  # then the newest
        ("interleaved_plain_records", 1),
    ]
    pay = groups[1]
    assert (pay["first_ms"], pay["last_ms"], pay["confidence"], pay["summary"]) == (
        10,
        30,
        "certain",
        "shared_transactional_id at 30",
    )
    assert [x["time_ms"] for x in pay["findings"]] == [30, 20] and pay["more"] == 1
    assert group_line(pay, str) == "[shared_transactional_id] pay: 3x, 10..30, certain: shared_transactional_id at 30"


def test_it_does_not_mistake_the_fencing_of_a_long_dead_instance_for_a_shared_id(kafka_bootstrap, admin, prefix):
    topic = create_topic(admin, f"{prefix}ledger")
    txid = f"{prefix}ledger-writer"
    dead = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": txid})
    dead.init_transactions(30)
    dead.begin_transaction()
    send(dead, topic, "unfinished")
    # it crashed (nothing more from it); its restart comes later than INSPECTOR_LIVE_GAP_S
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        view = get_inspector().inspect([topic], [txid], max_age_s=0)["partitions"][0]
        if view["open_transactions"] and (view["open_transactions"][0]["last_write_age_ms"] or 0) > 5_500:
            break
        time.sleep(0.25)
    txn_producer(kafka_bootstrap, txid)
    settle(txid)
    report = get_inspector().inspect([topic], [txid], max_age_s=0)
    assert "shared_transactional_id" not in kinds(report["findings"])
    [tid] = report["transactional_ids"]
    assert [r["event"] for r in tid["timeline"]][:4] == ["init", "begin", "fenced_by_init", "aborted"]


def test_it_makes_a_scenario_of_the_selection_first_and_says_what_it_left_out(kafka_bootstrap, admin, prefix):
    from playground.inspector.toscenario import scenario_text
    from playground.scenario import check_text, run_scenario

    topic = create_topic(admin, f"{prefix}shop-orders", partitions=2)
    stuck, busy = f"{prefix}shop-refund", f"{prefix}payment-svc"
    left_open(kafka_bootstrap, topic, stuck, 1)  # the oldest: what the viewer came for
    for n in range(12):  # then a dozen instances of another service, each newer than it
        p = txn_producer(kafka_bootstrap, busy)
        p.begin_transaction()
        send(p, topic, f"pay-{n}", partition=1)
        p.commit_transaction(20)
        p.close()
    settle(busy)
    report = get_inspector().inspect([topic], [stuck], partitions={topic: [1]}, max_age_s=0)
    text = scenario_text(report)
    scenario, errors = check_text(text)
    assert scenario is not None, errors
    by_id = {a.transactional_id for a in scenario.actors.values() if a.transactional_id}
    assert by_id == {stuck, busy}  # the open transaction's producer is there, whatever its age
    assert f"Observed on the cluster: {busy}, {stuck}" in text
    comment = " ".join(line[1:].strip() for line in text.splitlines() if line.startswith("#"))
    assert "Left out: 3 producer instance(s)" in comment and "with a transaction still open" in comment
    assert f"{busy} epoch 0 (" in comment  # the oldest of the busy service's instances, named
    observed = run_scenario(scenario, "sim")
    assert observed["expect"]["failed"] == 0, observed["expect"]
    assert [e.get("control") or e["value"] for e in observed["partitions"][f"{topic}-1"]["log"]][:1] == ["left-open"]
    txn_producer(kafka_bootstrap, stuck)  # end it: the next instance aborts the dead one's transaction
