"""The read-only inspector (playground/inspector) against the real broker (tools/kafka; `make test` starts it).

The workloads come from an application outside the playground: this test's own confluent-kafka producers (and one
in a subprocess that is SIGKILLed), never the playground's backend. Each test works under a prefix of its own
(`insp-<hex>-`), which is also what the inspector's allow-lists (INSPECTOR_TOPICS / INSPECTOR_TRANSACTIONAL_IDS)
let through, and deletes its topics at the end.
"""

from __future__ import annotations

import datetime
import io
import os
import secrets
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from django.core.management import call_command
from kio.schema.init_producer_id.v0.request import InitProducerIdRequest
from kio.static.primitive import i32Timedelta

from playground.inspector import InspectorError, RefusedError, forget_inspectors, get_inspector
from playground.inspector.hanging import classify
from playground.inspector.observer import registry_key
from tests.kafkatopics import create_topic, drop_topics

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parents[2]
KAFKA_SH = ROOT / "tools" / "kafka" / "kafka.sh"

# A producer of another application: writes into a transaction, says so, and waits to be killed (SIGKILL: no abort)
LEFT_OPEN = r"""
import sys, time
from confluent_kafka import Producer
bootstrap, topic, txid = sys.argv[1:4]
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, "transaction.timeout.ms": 600000})
p.init_transactions(30)
p.begin_transaction()
p.produce(topic, b"left-open", partition=0)
p.flush(30)
print("written", flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module", autouse=True)
def _drop_inspectors():
    yield
    forget_inspectors()


@pytest.fixture
def prefix(settings, admin):
    """A prefix of this test's own; the allow-lists let exactly it through. Its topics are deleted afterwards."""
    pre = f"insp-{secrets.token_hex(4)}-"
    settings.INSPECTOR_TOPICS = [f"{pre}*"]
    settings.INSPECTOR_TRANSACTIONAL_IDS = [f"{pre}*"]
    settings.INSPECTOR_POLL_INTERVAL_S = 0.5
    yield pre
    drop_topics(admin, pre)


def txn_producer(bootstrap: str, txid: str, **conf) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, **conf})
    p.init_transactions(30)
    return p


def plain_producer(bootstrap: str, idempotent: bool) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": idempotent})


def send(p: Producer, topic: str, value: str, partition: int = 0) -> None:
    p.produce(topic, value.encode(), partition=partition)
    p.flush(20)


def settle(*txids: str) -> None:
    """Until the coordinator has written every marker (commit/abort returns once PrepareCommit/PrepareAbort is
    persisted; the markers and CompleteCommit/CompleteAbort follow, on a 3-node cluster a moment later)."""
    deadline = time.monotonic() + 15
    for txid in txids:
        while get_inspector().describe_transaction(txid)["state"] in (
            "PrepareCommit",
            "PrepareAbort",
            "PrepareEpochFence",
        ):
            assert time.monotonic() < deadline, f"{txid} did not settle"
            time.sleep(0.05)


def log_of(view) -> list[tuple]:
    return [
        (e["offset"], e.get("control") or e["value"], e["producer_id"], e["producer_epoch"]) for e in view["entries"]
    ]


def kinds(findings) -> list[str]:
    return sorted(f["kind"] for f in findings)


def run_cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("inspect", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as e:
        code = e.code
    return code, out.getvalue(), err.getvalue()


def read_committed(bootstrap: str, topic: str) -> list[int]:
    """What a real read_committed consumer gets (assign, no commit: this test's own check, not the inspector)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"unused-{secrets.token_hex(3)}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 15
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    break
                continue
            got.append(m.offset())
    finally:
        c.close()
    return got


# ------------------------------------------------------------------------------------------------ the incident


def test_it_shows_the_fencing_markers_and_lso_of_a_shared_id_and_reports_both_findings(
    kafka_bootstrap, admin, prefix, settings
):
    topic = create_topic(admin, f"{prefix}orders")
    txid = f"{prefix}order-pay"
    insp = get_inspector()

    # instance A of the application begins a transaction; plain records land inside its span
    a = txn_producer(kafka_bootstrap, txid, **{"transaction.timeout.ms": 60000})
    a.begin_transaction()
    send(a, topic, "a-1")
    send(a, topic, "a-2")
    send(plain_producer(kafka_bootstrap, idempotent=False), topic, "plain-1")
    idem = plain_producer(kafka_bootstrap, idempotent=True)
    send(idem, topic, "plain-2")

    held = insp.partition_view(topic, 0)
    assert (held["last_stable_offset"], held["high_watermark"]) == (0, 4)
    assert held["log_end_offset"] is None  # not visible to a client; never guessed
    [open_txn] = held["open_transactions"]
    pid = open_txn["producer_id"]
    assert open_txn["producer_epoch"] == 0 and open_txn["start_offset"] == 0 and open_txn["holds_lso"]
    assert open_txn["transactional_id"] == txid and open_txn["coordinator_state"] == "Ongoing"
    assert open_txn["age_ms"] is not None and 0 <= open_txn["age_ms"] < 60_000
    c = held["consumers"]
    assert [r["offset"] for r in c["read_uncommitted"]] == [0, 1, 2, 3]
    assert c["read_committed"] == [] and c["held_back_by_lso"] == [0, 1, 2, 3]
    assert [e["fate"] for e in held["entries"]] == ["open", "open", "plain", "plain"]
    assert [e["producer"] for e in held["entries"]] == ["transactional", "transactional", "plain", "idempotent"]

    # instance B starts with the same transactional.id: fences A, which is still writing (A's last record is what
    # makes the InitProducerId's gap small, however long the view above took on a loaded machine)
    send(a, topic, "a-3")
    b = txn_producer(kafka_bootstrap, txid)
    b.begin_transaction()
    send(b, topic, "b-1")
    b.commit_transaction(20)
    with pytest.raises(KafkaException):
        a.commit_transaction(10)  # A learns it was fenced
    settle(txid)

    report = insp.inspect([topic], [txid], max_age_s=0)
    [view] = report["partitions"]
    idem_pid = view["entries"][3]["producer_id"]
    assert idem_pid >= 0 and idem_pid != pid
    assert log_of(view) == [
        (0, "a-1", pid, 0),
        (1, "a-2", pid, 0),
        (2, "plain-1", -1, -1),
        (3, "plain-2", idem_pid, 0),
        (4, "a-3", pid, 0),
        (5, "ABORT", pid, 1),
        (6, "b-1", pid, 2),
        (7, "COMMIT", pid, 2),
    ]
    assert [e["fate"] for e in view["entries"]] == [
        "aborted",
        "aborted",
        "plain",
        "plain",
        "aborted",
        "marker",
        "committed",
        "marker",
    ]
    assert (view["last_stable_offset"], view["high_watermark"]) == (8, 8) and view["open_transactions"] == []
    c = view["consumers"]
    assert [r["offset"] for r in c["read_committed"]] == [2, 3, 6] == read_committed(kafka_bootstrap, topic)
    assert c["dropped_as_aborted"] == [0, 1, 4]
    assert [r["offset"] for r in c["read_uncommitted"]] == [0, 1, 2, 3, 4, 6]
    # a consumer positioned inside the aborted transaction, and one past it
    inside = insp.partition_view(topic, 0, from_offset=1)["consumers"]
    assert [r["offset"] for r in inside["read_committed"]] == [2, 3, 6] and inside["dropped_as_aborted"] == [1, 4]
    past = insp.partition_view(topic, 0, from_offset=5)["consumers"]
    assert [r["offset"] for r in past["read_committed"]] == [6] == [r["offset"] for r in past["read_uncommitted"]]

    [tid] = report["transactional_ids"]
    assert [(r["event"], r["state"], r["epoch"]) for r in tid["timeline"]] == [
        ("init", "Empty", 0),
        ("begin", "Ongoing", 0),
        ("fenced_by_init", "PrepareAbort", 1),
        ("aborted", "CompleteAbort", 1),
        ("init", "Empty", 2),
        ("begin", "Ongoing", 2),
        ("commit_requested", "PrepareCommit", 2),
        ("committed", "CompleteCommit", 2),
    ]
    assert tid["current"]["state"] == "CompleteCommit" and tid["current"]["producer_epoch"] == 2
    assert [p["producer_epoch"] for p in tid["producers"][f"{topic}-0"] if p["producer_id"] == pid] == [2]

    findings = {f["kind"]: f for f in report["findings"]}
    assert kinds(report["findings"]) == ["interleaved_plain_records", "shared_transactional_id"]
    shared = findings["shared_transactional_id"]["evidence"]
    assert shared["transactional_id"] == txid and shared["producer_id"] == pid
    assert (shared["fenced_epoch"], shared["fence_epoch"], shared["new_epoch"]) == (0, 1, 2)
    assert shared["fenced_open_transaction"] is True
    assert shared["aborted_records"] == {f"{topic}-0": [0, 1, 4]} and shared["abort_markers"] == {f"{topic}-0": [5]}
    assert shared["gap_ms"] is not None and shared["gap_ms"] <= 5000
    mixed = findings["interleaved_plain_records"]["evidence"]
    assert [(r["offset"], r["producer_id"], r["producer"]) for r in mixed["plain_records"]] == [
        (2, -1, "plain"),
        (3, idem_pid, "idempotent"),
    ]
    t = mixed["transaction"]
    assert (t["producer_id"], t["epochs"], t["first_offset"], t["marker_offset"], t["outcome"]) == (
        pid,
        [0],
        0,
        5,
        "ABORT",
    )
    assert t["transactional_id"] == txid

    # two inits in a minute are no deployment pattern once the threshold says so
    settings.INSPECTOR_REINIT_MAX_PER_HOUR = 1
    again = get_inspector().inspect([topic], [txid], max_age_s=0)
    [reinit] = [f for f in again["findings"] if f["kind"] == "frequent_reinit"]
    assert reinit["evidence"]["inits_in_hour"] == 2
    assert [(i["producer_id"], i["producer_epoch"]) for i in reinit["evidence"]["inits"]] == [(pid, 0), (pid, 2)]

    code, out, err = run_cli("--topic", topic, "--transactional-id", txid, "--since", "10m")
    assert code == 1, err
    assert "[shared_transactional_id]" in out and "[interleaved_plain_records]" in out and "ABORT" in out
    # the id alone: its partitions come from its transactions (named by several of them, each read once)
    by_id = get_inspector().inspect((), [txid], max_age_s=0)
    assert [(p["topic"], p["partition"]) for p in by_id["partitions"]] == [(topic, 0)] and log_of(
        by_id["partitions"][0]
    ) == log_of(view)


def test_it_finds_nothing_in_a_clean_workload(kafka_bootstrap, admin, prefix):
    topic = create_topic(admin, f"{prefix}clean", partitions=2)
    ids = [f"{prefix}svc-{i}" for i in (1, 2)]
    producers = [txn_producer(kafka_bootstrap, i) for i in ids]
    for round_ in range(2):
        for n, p in enumerate(producers):
            p.begin_transaction()
            p.produce(topic, f"r{round_}-{n}".encode(), partition=n)
            p.flush(20)
            if round_ == 1 and n == 1:
                p.abort_transaction(20)  # an abort is ordinary
            else:
                p.commit_transaction(20)
    settle(*ids)
    report = get_inspector().inspect([topic], ids, max_age_s=0)
    assert report["findings"] == [] and report["hanging"] == []
    assert [len(t["inits"]) for t in report["transactional_ids"]] == [1, 1]
    p1 = next(p for p in report["partitions"] if p["partition"] == 1)
    assert [e.get("control") or e["fate"] for e in p1["entries"]] == ["committed", "COMMIT", "aborted", "ABORT"]
    assert [r["value"] for r in p1["consumers"]["read_committed"]] == ["r0-1"]
    code, out, err = run_cli("--topic", topic, *[arg for i in ids for arg in ("--transactional-id", i)])
    assert code == 0, out + err
    assert "no findings" in out


# ------------------------------------------------------------------------------------------------ hanging


def test_it_lists_a_killed_producers_open_transaction_with_the_abort_command(kafka_bootstrap, admin, prefix, settings):
    topic = create_topic(admin, f"{prefix}ledger")
    txid = f"{prefix}ledger-writer"
    send(plain_producer(kafka_bootstrap, idempotent=False), topic, "before")
    proc = subprocess.Popen(
        [sys.executable, "-c", LEFT_OPEN, kafka_bootstrap, topic, txid], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "written"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    # the application carries on with plain records: the LSO stays behind while the log grows
    plain = plain_producer(kafka_bootstrap, idempotent=False)
    for i in range(10):
        plain.produce(topic, f"after-{i}".encode(), partition=0)
    plain.flush(20)
    # the test cluster's transaction.max.timeout.ms is 15 min: look for transactions older than 1 s instead
    settings.INSPECTOR_MAX_TRANSACTION_TIMEOUT_MS = 1000
    settings.INSPECTOR_WINDOW_RECORDS = 3  # small windows, so that the one around the LSO and the end's are apart
    settings.INSPECTOR_WINDOW_BEFORE_LSO = 1
    time.sleep(1.3)
    insp = get_inspector()
    [h] = insp.find_hanging([topic])
    assert (h["topic"], h["partition"], h["producer_epoch"], h["current_txn_start_offset"]) == (topic, 0, 0, 1)
    assert h["transactional_id"] == txid and h["duration_ms"] > 1000
    # find-hanging's own definition: the coordinator still lists the partition, so it is not (yet) hanging
    assert h["verdict"] == "still_tracked" and h["coordinator"]["state"] == "Ongoing"
    pid = h["producer_id"]
    assert h["command"] == (
        f"kafka-transactions.sh --bootstrap-server {kafka_bootstrap} abort --topic {topic} --partition 0 "
        f"--producer-id {pid} --producer-epoch 0 --coordinator-epoch 0"
    )
    assert h["command_start_offset"].endswith(f"abort --topic {topic} --partition 0 --start-offset 1")

    report = insp.inspect([topic], [txid], max_age_s=0)
    assert kinds(report["findings"]) == ["interleaved_plain_records", "long_open_transaction"]
    f = next(f for f in report["findings"] if f["kind"] == "long_open_transaction")
    assert f["command"] == h["command"]
    assert (
        f["evidence"]["start_offset"] == 1 and f["evidence"]["coordinator_aborts_at_ms"] > time.time() * 1000 + 500_000
    )
    [view] = report["partitions"]
    assert (view["last_stable_offset"], view["high_watermark"]) == (1, 12)
    assert [(w["start"], w["end"]) for w in view["windows"]] == [(0, 4), (9, 12)] and view["not_read"] == [
        {"start": 4, "end": 9}
    ]
    assert [e["offset"] for e in view["entries"]] == [0, 1, 2, 3, 9, 10, 11]
    assert view["open_transactions"][0]["holds_lso"] and view["open_transactions"][0]["producer_id"] == pid
    assert [e["fate"] for e in view["entries"]][:2] == ["plain", "open"]
    c = view["consumers"]
    assert [r["offset"] for r in c["read_committed"]] == [0] and c["held_back_by_lso"] == [1, 2, 3, 9, 10, 11]
    assert c["not_read"] == [{"start": 4, "end": 9}]
    mixed = next(f for f in report["findings"] if f["kind"] == "interleaved_plain_records")["evidence"]
    assert [r["offset"] for r in mixed["plain_records"]] == [2, 3, 9, 10, 11] and mixed["transaction"][
        "outcome"
    ] == "open"

    # the command is right: the operator's tool (this test runs it; the inspector never does) ends the transaction
    if (ROOT / "tools" / "kafka" / ".jars").is_dir():
        args = shlex.split(h["command"])[1:]
        done = subprocess.run(
            ["bash", str(KAFKA_SH), "transactions", *args], capture_output=True, text=True, timeout=90, cwd=ROOT
        )
        assert done.returncode == 0, done.stderr[-2000:]
        after = insp.partition_view(topic, 0)
        assert log_of(after)[-1] == (12, "ABORT", pid, 0)
        assert after["last_stable_offset"] == after["high_watermark"] == 13
        assert insp.find_hanging([topic]) == []
    # the application's next instance fences the dead one: the coordinator forgets the open transaction too
    txn_producer(kafka_bootstrap, txid)
    assert get_inspector().describe_transaction(txid)["state"] == "Empty"


def test_it_classifies_candidates_the_way_find_hanging_does():
    cand = {
        "topic": "t",
        "partition": 0,
        "producer_id": 7,
        "producer_epoch": 3,
        "coordinator_epoch": 1,
        "current_txn_start_offset": 10,
        "last_timestamp": 0,
        "duration_ms": 10**7,
    }
    ongoing_elsewhere = {"state": "Ongoing", "producer_id": 7, "producer_epoch": 3, "partitions": [("t", 1)]}
    ongoing_here = {**ongoing_elsewhere, "partitions": [("t", 0)]}
    assert [c["verdict"] for c in classify([cand], {}, {})] == ["hanging"]  # no id has this producer id
    assert [c["verdict"] for c in classify([cand], {7: "x"}, {"x": {"state": None}})] == ["hanging"]  # unknown id
    assert [c["verdict"] for c in classify([cand], {7: "x"}, {"x": ongoing_elsewhere})] == ["hanging"]
    assert [c["verdict"] for c in classify([cand], {7: "x"}, {"x": ongoing_here})] == ["still_tracked"]


# ------------------------------------------------------------------------------------------------ CLI


def test_it_exits_2_with_one_line_when_the_cluster_cannot_be_read(settings, prefix):
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "manage.py", "inspect"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "cannot read the Kafka cluster at 127.0.0.1:1" in done.stderr
    assert time.monotonic() - t0 < 30
    code, _out, err = run_cli("--topic", "payments")  # outside INSPECTOR_TOPICS: refused, same exit code
    assert code == 2 and "refusing topic 'payments'" in err


# ------------------------------------------------------------------------------------------------ safety


def cluster_state(admin: AdminClient) -> dict:
    """What a change would show: topics, every partition's end offset (internal topics included), groups."""
    md = admin.list_topics(timeout=10)
    tps = [TopicPartition(t, p) for t, tm in md.topics.items() for p in tm.partitions]
    futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=10)
    ends = {(tp.topic, tp.partition): f.result(timeout=15).offset for tp, f in futures.items()}
    groups = admin.list_consumer_groups(request_timeout=10).result(timeout=15)
    return {
        "topics": sorted(md.topics),
        "ends": ends,
        "groups": sorted(g.group_id for g in groups.valid),
        "has_txn_state": "__transaction_state" in md.topics,
        "has_offsets": "__consumer_offsets" in md.topics,
    }


def quiet_state(admin: AdminClient) -> dict:
    """The state once it holds still for a moment (earlier tests' leftovers may still be settling)."""
    before = cluster_state(admin)
    for _ in range(20):
        time.sleep(0.3)
        now = cluster_state(admin)
        if now == before:
            return now
        before = now
    return before


def test_it_changes_nothing_on_the_cluster(kafka_bootstrap, admin, prefix, settings):
    topic = create_topic(admin, f"{prefix}audit")
    txid = f"{prefix}audit-writer"
    p = txn_producer(kafka_bootstrap, txid)
    p.begin_transaction()
    send(p, topic, "x")
    p.commit_transaction(20)
    send(plain_producer(kafka_bootstrap, idempotent=True), topic, "y")
    settle(txid)

    before = quiet_state(admin)
    assert before["has_txn_state"] and before["has_offsets"]
    insp = get_inspector()
    insp.inspect([topic], [txid], max_age_s=0)
    insp.inspect(max_age_s=0)  # from ListTransactions
    insp.partition_view(topic, 0, from_offset=1)
    insp.transactional_id_view(txid)
    insp.find_hanging([topic], max_transaction_timeout_ms=0)
    insp.list_transactions()
    got = []
    sub = insp.subscribe(got.append, [topic], [txid])
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        time.sleep(0.05)
    sub.close()
    assert got and "partitions" in got[0]
    assert run_cli("--topic", topic, "--transactional-id", txid)[0] == 0
    # by construction: the client refuses anything but reads
    with pytest.raises(RefusedError):
        insp._read(
            lambda w: w.send_to(
                next(iter(w.meta.brokers)),
                InitProducerIdRequest(
                    transactional_id=txid, transaction_timeout=i32Timedelta.parse(datetime.timedelta(seconds=1))
                ),
            )
        )
    with pytest.raises(RefusedError):
        insp._read(lambda w: w.find_coordinator(txid, 1))
    assert set(insp.requests_sent()) <= {
        "Fetch",
        "ListOffsets",
        "Metadata",
        "DescribeProducers",
        "DescribeTransactions",
        "ListTransactions",
    }
    assert quiet_state(admin) == before


def test_it_refuses_what_settings_do_not_allow(settings, prefix):
    insp = get_inspector()
    with pytest.raises(RefusedError, match="INSPECTOR_TOPICS"):
        insp.inspect(["payments"])
    with pytest.raises(RefusedError, match="INSPECTOR_TRANSACTIONAL_IDS"):
        insp.transactional_id_view("someone-elses-id")
    settings.INSPECTOR_TOPICS = ["*"]
    with pytest.raises(RefusedError, match="internal"):
        get_inspector().inspect(["__consumer_offsets"])
    with pytest.raises(RefusedError):
        get_inspector().subscribe(lambda r: None, ["__transaction_state"])
    settings.KAFKA_CLIENT_CONFIG = {"security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN"}
    with pytest.raises(InspectorError, match="PLAINTEXT only"):
        get_inspector()


def test_it_shows_values_truncated_or_hashed(kafka_bootstrap, admin, prefix, settings):
    topic = create_topic(admin, f"{prefix}secrets")
    p = plain_producer(kafka_bootstrap, idempotent=True)
    p.produce(topic, b"card=4111111111111111;name=Ada", key=b"customer-42", partition=0)
    p.flush(20)
    settings.INSPECTOR_VALUE_MAX_CHARS = 8
    [e] = get_inspector().partition_view(topic, 0)["entries"]
    assert e["value"] == "card=411… (30 B)" and e["key"] == "customer… (11 B)"
    settings.INSPECTOR_HASH_VALUES = True
    [e] = get_inspector().partition_view(topic, 0)["entries"]
    assert e["value"].startswith("sha256:") and "4111" not in e["value"] and e["key"].startswith("sha256:")


# ------------------------------------------------------------------------------------------------ sharing


def test_it_shares_one_observer_per_cluster_and_reads_the_transaction_log_incrementally(
    kafka_bootstrap, admin, prefix, settings
):
    topic = create_topic(admin, f"{prefix}shared")
    txid = f"{prefix}writer"
    p = txn_producer(kafka_bootstrap, txid)
    p.begin_transaction()
    send(p, topic, "1")
    p.commit_transaction(20)
    settle(txid)

    insp = get_inspector()
    assert get_inspector() is insp and registry_key(kafka_bootstrap) == registry_key(f"PLAINTEXT://{kafka_bootstrap}")
    first = insp.transactional_id_view(txid)
    assert [r["event"] for r in first["timeline"]] == ["init", "begin", "commit_requested", "committed"]
    # two viewers within the poll interval: one read
    sent = dict(insp.requests_sent())
    settings.INSPECTOR_POLL_INTERVAL_S = 30
    a = get_inspector().inspect([topic], [txid])
    b = get_inspector().inspect([topic], [txid])
    assert a is b and insp.requests_sent() != sent
    sent = dict(insp.requests_sent())
    assert get_inspector().inspect([topic], [txid]) is a and insp.requests_sent() == sent

    p.begin_transaction()
    send(p, topic, "2")
    p.commit_transaction(20)
    settle(txid)
    second = get_inspector().inspect([topic], [txid], max_age_s=0)["transactional_ids"][0]
    # the same place to start from, the new records appended: __transaction_state was read from where it stopped
    assert second["timeline_read_from_offset"] == first["timeline_read_from_offset"]
    assert second["timeline_next_offset"] > first["timeline_next_offset"]
    assert [r["event"] for r in second["timeline"]][4:] == ["begin", "commit_requested", "committed"]
    assert [r["offset"] for r in second["timeline"]][:4] == [r["offset"] for r in first["timeline"]]

    # subscribers share one polling thread and stop it when the last one leaves
    settings.INSPECTOR_POLL_INTERVAL_S = 0.2
    insp = get_inspector()
    seen_a, seen_b = [], []
    sa = insp.subscribe(seen_a.append, [topic])
    sb = insp.subscribe(seen_b.append, [], [txid])
    deadline = time.monotonic() + 10
    while (len(seen_a) < 2 or len(seen_b) < 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(seen_a) >= 2 and len(seen_b) >= 2
    thread = insp._thread
    sa.close()
    sb.close()
    thread.join(5)
    assert not thread.is_alive()
