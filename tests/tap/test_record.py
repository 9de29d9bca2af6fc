"""The tap records its clients' requests as a session (issue 34): in front of the simulated cluster served over the
Kafka protocol (in this process, on a loop of its own), two confluent-kafka producers share a transactional.id
through the tap, and the recorded session, replayed from its stored log, shows what the upstream cluster has:
the same partition logs (records and markers), the same transaction state, the same fence; its page opens."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import threading
import time

import pytest
from confluent_kafka import KafkaException, Producer
from django.test import Client

from playground import session
from playground.models import Command
from playground.protocol import messages
from playground.protocol.framing import frame
from playground.session import external
from playground.session.cache import CACHE
from playground.session.taprecord import TapRecording
from playground.sim import observation
from playground.sim.cluster import Cluster
from playground.simserver.server import SimServer
from playground.tap import translate, wire
from playground.tap.proxy import Tap
from tests.simserver.wire import batch, fetch_body, produce_body

pytestmark = [pytest.mark.django_db(transaction=True)]

CAP_S = 60.0  # a cap for a busy machine, never a measure
QUIET = {"logger": logging.getLogger("tap-record-tests")}


class Loop:
    """An event loop in a thread: the served simulator and the tap run there, the blocking clients here."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(CAP_S)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(CAP_S)
        self.loop.close()


async def _init_producer_id(bootstrap: str) -> int:
    """An idempotent producer's InitProducerId straight to upstream: its producer ids then differ from the
    simulator's of the recording, which the translation must bridge."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    cls = messages.request_class(wire.INIT_PRODUCER_ID, 4)
    body = messages.build(cls, {"transactional_id": None, "transaction_timeout": 60000, "producer_id": -1,
                                "producer_epoch": -1})  # fmt: skip
    writer.write(frame(messages.encode_request(wire.INIT_PRODUCER_ID, 4, 1, "warm-up", body)))
    await writer.drain()
    (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), CAP_S))
    _, answer = messages.decode_response(wire.INIT_PRODUCER_ID, 4, await reader.readexactly(size))
    writer.close()
    return int(answer.producer_id)


@pytest.fixture
def upstream_and_tap():
    loop = Loop()
    server = SimServer(Cluster(brokers=1, topics={"orders": 2}, keep_events=False))
    upstream = loop.run(server.start())
    tap = Tap(upstream)
    loop.run(tap.start())
    yield loop, server, tap
    loop.run(tap.close())
    loop.run(server.close())
    loop.close()


def producer(bootstrap: str, client_id: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": "pay", "client.id": client_id, **QUIET})


def fence_story(bootstrap: str) -> None:
    """payment-service commits o-0..o-2, opens another transaction with "zombie", monitoring takes the same
    transactional id (the fence), payment-service's commit fails."""
    pay = producer(bootstrap, "payment-service")
    pay.init_transactions(30)
    pay.begin_transaction()
    for i in range(3):
        pay.produce("orders", value=f"o-{i}".encode(), partition=0)
    pay.commit_transaction(30)
    pay.begin_transaction()
    pay.produce("orders", value=b"zombie", partition=1)
    pay.flush(30)
    monitoring = producer(bootstrap, "monitoring")
    monitoring.init_transactions(30)
    monitoring.begin_transaction()
    monitoring.produce("orders", value=b"m-1", partition=1)
    monitoring.commit_transaction(30)
    with pytest.raises(KafkaException) as fenced:
        pay.commit_transaction(30)
    assert fenced.value.args[0].name() == "_FENCED"
    monitoring.close()
    with contextlib.suppress(KafkaException):
        pay.close()


def observed(cluster: Cluster, topics: dict[str, int]) -> dict:
    """Partition logs and transactions, producer ids named by order of appearance (each cluster hands out its own)."""
    names: dict[int, int] = {}

    def pid(value: int) -> int:
        return names.setdefault(value, len(names)) if value >= 0 else value

    logs = {}
    for topic, n in sorted(topics.items()):
        for p in range(n):
            entries = observation.partition(cluster, f"{topic}-{p}")["log"]
            logs[f"{topic}-{p}"] = [{**e, "producer_id": pid(e["producer_id"])} for e in entries]
    txns = {
        txid: {
            "state": snap["state"],
            "epoch": snap["epoch"],
            "partitions": snap["partitions"],
            "producer_id": pid(snap["producer_id"]),
        }
        for txid, snap in observation.transactions(cluster).items()
    }
    return {"logs": logs, "transactions": txns}


@pytest.mark.parametrize("topics_known", [True, False], ids=["topics-at-start", "topics-as-named"])
def test_it_records_two_producers_sharing_a_transactional_id_as_a_session_that_replays_what_upstream_showed(
    upstream_and_tap, topics_known
):
    loop, server, tap = upstream_and_tap
    for _ in range(3):  # upstream's producer ids are then not the session's
        assert loop.run(_init_producer_id(server_bootstrap(server))) >= 0
    recording = TapRecording(
        upstream=server_bootstrap(server), listener=("127.0.0.1", tap.ports[1]), title="order-pay",
        topics=loop.run(tap.topics()) if topics_known else {},  # {}: a cluster with more than a session holds
    )  # fmt: skip
    recording.start()
    tap.recorder = recording
    fence_story(tap.bootstrap)
    loop.run(tap.close())
    assert recording.stop()["state"] == "stopped"
    report = {**tap.report(), "recording": recording.report()}
    sid = report["recording"]["session"]
    assert report["recording"]["requests"] > 10 and report["recording"]["unrecorded"] == 0

    # upstream as it is now, and the session replayed from its stored log in this process
    upstream = observed(server.cluster, {"orders": 2})
    assert upstream["transactions"]["pay"]["state"] in ("Empty", "CompleteCommit")
    assert [e.get("control") for e in upstream["logs"]["orders-1"]] == [None, "ABORT", None, "COMMIT"]
    assert set(recording.translation.producers) and all(a != b for a, b in recording.translation.producers.items())
    CACHE.evict(sid)
    live = session.load(sid)
    replayed = observed(external.inner_backend(live.backend).cluster, {"orders": 2})
    assert replayed == upstream

    # the fence: the error payment-service got upstream after it, and the one the session's EndTxn got
    (fence,) = [f for f in report["findings"] if f["finding"] == "fence"]
    upstream_error = fence["next_error"]["error"]
    outcomes = [c.get("outcome") for c in live.commands if "ext" in c]
    assert upstream_error in outcomes, (upstream_error, outcomes)
    view = external.view(live, live.backend.view(200), False)
    assert view["producers"]["payment-service"]["state"] == "FENCED"

    # the log is a listener's: a listen entry naming the tap, rows of what came in, unlisten; the page opens
    log = [c.as_entry() for c in Command.objects.filter(session_id=sid, dropped=False).order_by("seq")]
    assert log[0]["listen"]["tap"] == server_bootstrap(server)
    assert log[-1]["unlisten"]["why"] == "stopped"
    page = Client().get(f"/s/{sid}/")
    assert page.status_code == 200 and "payment-service" in page.content.decode()


def server_bootstrap(server: SimServer) -> str:
    return ",".join(f"127.0.0.1:{p}" for _, p in sorted(server.ports.items()))


def test_it_rewrites_a_produce_batch_under_the_simulators_producer_id_with_a_valid_checksum():
    from playground.protocol import records

    batch = records.encode_batch([records.Record(0, 1000, None, b"v")], producer_id=7, producer_epoch=2,
                                 base_sequence=0, transactional=True)  # fmt: skip
    again = translate.rewrite_batches(batch + batch, lambda pid, epoch: (pid + 100, epoch + 1))
    parsed = list(records.read_batches(again))
    assert [(b.producer_id, b.producer_epoch) for b in parsed] == [(107, 3), (107, 3)]
    assert all(b.crc_ok() for b in parsed)
    assert translate.rewrite_batches(batch, lambda pid, epoch: (pid, epoch)) is batch


def test_it_maps_an_epoch_it_never_saw_paired_by_the_last_pairs_difference():
    t = translate.Translation(lambda name: None)

    class Answer:
        error_code = 0

        def __init__(self, pid: int, epoch: int) -> None:
            self.producer_id, self.producer_epoch = pid, epoch

    t.learn(wire.INIT_PRODUCER_ID, Answer(5000, 0), Answer(2, 0))
    t.learn(wire.INIT_PRODUCER_ID, Answer(5000, 3), Answer(2, 1))
    assert t.producer(5000, 3) == (2, 1) and t.producer(5000, 4) == (2, 2) and t.producer(9, 1) == (9, 1)


def test_it_prints_the_sessions_drive_link_before_its_bootstrap_list_and_reports_it(tmp_path):
    """`manage.py tap --record-session TITLE --publish` as the command runs it (cli.run with the recording and the
    publishing the management command hands it), stopped by SIGTERM: the drive link's line comes before the bootstrap
    list, which stays last; the report is in the file and in the database under the upstream's name, as it goes."""
    import json
    import os
    import signal
    import time

    from django.db import connection

    from playground.management.commands.tap import _publish
    from playground.models import Session, TapReport
    from playground.session import capability
    from playground.tap import cli

    loop = Loop()
    server = SimServer(Cluster(brokers=1, topics={"orders": 2}, keep_events=False))
    upstream = loop.run(server.start())

    class Out:
        def __init__(self) -> None:
            self.lines: list[str] = []
            self.ready = threading.Event()

        def write(self, text: str) -> None:
            self.lines += text.splitlines()
            if len(self.lines) >= 2:
                self.ready.set()

        def flush(self) -> None:
            pass

    out, failures = Out(), []

    def clients() -> None:
        try:
            assert out.ready.wait(CAP_S)
            deadline = time.monotonic() + CAP_S
            while not report_path.exists() and time.monotonic() < deadline:  # written every report_interval_s
                time.sleep(0.05)
            assert json.loads(report_path.read_text())["recording"]["state"] == "recording"
            while not TapReport.objects.filter(name=upstream).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert TapReport.objects.get(name=upstream).report["recording"]["state"] == "recording"
            p = producer(out.lines[-1], "payment-service")
            p.init_transactions(30)
            p.begin_transaction()
            p.produce("orders", value=b"o-0", partition=0)
            p.commit_transaction(30)
        except BaseException as e:  # the main thread reports it
            failures.append(e)
        finally:
            connection.close()
            os.kill(os.getpid(), signal.SIGTERM)

    report_path = tmp_path / "report.json"
    helper = threading.Thread(target=clients)
    helper.start()
    try:
        cli.run({"upstream": upstream, "listen": "127.0.0.1:0", "report": str(report_path), "max_events": 50,
                 "socket_request_max_bytes": 100 * 1024 * 1024, "record_session": "order-pay",
                 "record_kafka": "4", "report_interval_s": 0.2, "publish": ""}, out=out, recording=TapRecording,
                publish=_publish)  # fmt: skip
    finally:
        helper.join(CAP_S)
        loop.run(server.close())
        loop.close()
    assert not failures, failures
    first, last = out.lines[0], out.lines[-1]
    assert first.startswith("recording: /s/") and "#drive=" in first
    path, secret = first.removeprefix("recording: ").split("#drive=")
    assert last.startswith("127.0.0.1:")
    report = json.loads(report_path.read_text())["recording"]
    assert report["path"] == path and report["state"] == "stopped" and report["kafka"] == "4"
    row = Session.objects.get(pk=report["session"])
    assert capability.matches(secret, row.drive_key) and row.profile.kafka == "4"
    published = TapReport.objects.get(name=upstream).report
    assert published["recording"]["state"] == "stopped" and "pay" in published["transactional_ids"]
    with pytest.raises(cli.UsageError):
        cli.run({"upstream": upstream, "listen": "127.0.0.1:0", "record_session": ""})  # no database this way
    with pytest.raises(cli.UsageError, match="--publish"):
        cli.run({"upstream": upstream, "listen": "127.0.0.1:0", "publish": "x"})


def test_it_records_a_consumer_group_whose_commits_replay_under_the_simulators_member_ids(upstream_and_tap):
    """A consumer joins a group through the tap (JoinGroup: MEMBER_ID_REQUIRED, then again with the member id
    upstream gave), reads and commits: the session replays the same committed offsets, the member ids translated."""
    from confluent_kafka import Consumer

    loop, server, tap = upstream_and_tap
    recording = TapRecording(upstream=server_bootstrap(server), listener=("127.0.0.1", tap.ports[1]),
                             topics=loop.run(tap.topics()))  # fmt: skip
    recording.start()
    tap.recorder = recording
    plain = Producer({"bootstrap.servers": tap.bootstrap, "client.id": "writer", **QUIET})
    for i in range(6):
        plain.produce("orders", value=f"e{i}".encode(), partition=i % 2)
    assert plain.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": tap.bootstrap, "group.id": "readers", "client.id": "reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, **QUIET})  # fmt: skip
    consumer.subscribe(["orders"])
    seen = []
    deadline = time.monotonic() + CAP_S
    while len(seen) < 6 and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            seen.append(msg.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    loop.run(tap.close())
    recording.stop()
    assert len(seen) == 6
    upstream = server.cluster.groups.committed("readers")
    assert upstream == {"orders-0": 3, "orders-1": 3}
    assert recording.translation.members  # paired (the served simulator hands out the same ids: seed 0 both)
    CACHE.evict(recording.sid)
    live = session.load(recording.sid)
    assert external.inner_backend(live.backend).cluster.groups.committed("readers") == upstream


def test_it_forwards_a_request_over_the_sessions_bound_records_the_connection_closed_and_records_on(
    upstream_and_tap, settings
):
    settings.PLAYGROUND_LIMITS = {"kafka_request_bytes": 8192}
    loop, server, tap = upstream_and_tap
    recording = TapRecording(upstream=server_bootstrap(server), listener=("127.0.0.1", tap.ports[1]),
                             topics=loop.run(tap.topics()))  # fmt: skip
    assert recording.max_frame_bytes == 8192
    recording.start()
    tap.recorder = recording
    big = Producer({"bootstrap.servers": tap.bootstrap, "client.id": "big", "linger.ms": 0, **QUIET})
    big.produce("orders", value=bytes(20_000), partition=0)  # reaches upstream whole through the tap
    assert big.flush(30) == 0
    small = Producer({"bootstrap.servers": tap.bootstrap, "client.id": "small", **QUIET})
    small.produce("orders", value=b"s", partition=1)
    assert small.flush(30) == 0
    loop.run(tap.close())
    report = recording.stop()
    assert report["unrecorded"] >= 1 and report["state"] == "stopped"
    assert [len(e["value"]) for e in observation.partition(server.cluster, "orders-0")["log"]] == [20_000]
    CACHE.evict(recording.sid)
    cluster = external.inner_backend(session.load(recording.sid).backend).cluster
    assert observation.partition(cluster, "orders-0")["log"] == []  # not recorded: over the session's bound
    assert [e["value"] for e in observation.partition(cluster, "orders-1")["log"]] == ["s"]


def test_it_never_lets_a_metadata_request_create_a_topic_on_the_simulator():
    class Every(dict):
        def get(self, key, default=None):
            return (0, 32767)

    for version in (4, 9, 12):
        cls = messages.request_class(wire.METADATA, version)
        body = messages.build(cls, {"topics": [{"name": "orders"}], "allow_auto_topic_creation": True})
        payload = messages.encode_request(wire.METADATA, version, 7, "c", body)
        again = messages.decode_request(translate.Translation(lambda name: None).request(payload), Every())
        assert again.body.allow_auto_topic_creation is False and again.correlation_id == 7


def _fetch(session_epoch: int, named: dict[str, dict[int, int]], forgotten: dict[str, list[int]] | None = None):
    """A Fetch v12 request frame: `named` topic -> partition -> fetch offset."""
    data = fetch_body("", 0, 0, committed=True, max_wait_ms=500)
    one = data["topics"][0]["partitions"][0]
    data.update(
        session_id=0 if session_epoch <= 0 else 77,
        session_epoch=session_epoch,
        topics=[
            {"topic": t, "partitions": [dict(one, partition=p, fetch_offset=o) for p, o in parts.items()]}
            for t, parts in named.items()
        ],
        forgotten_topics_data=[{"topic": t, "partitions": ps} for t, ps in (forgotten or {}).items()],
    )
    body = messages.build(messages.request_class(wire.FETCH, 12), data)
    return messages.encode_request(wire.FETCH, 12, 9, "c", body)


def _fetched(t: translate.Translation, conn: str, payload: bytes) -> dict[str, int]:
    class Every(dict):
        def get(self, key, default=None):
            return (0, 32767)

    body = messages.decode_request(t.request(payload, conn), Every()).body
    assert (body.session_id, body.session_epoch, body.forgotten_topics_data) == (0, -1, ())
    return {f"{topic.topic}-{p.partition}": int(p.fetch_offset) for topic in body.topics for p in topic.partitions}


def test_it_records_an_incremental_fetch_as_a_full_fetch_of_its_connections_session():
    t = translate.Translation(lambda name: None)
    assert _fetched(t, "c1", _fetch(0, {"orders": {0: 0, 1: 0}, "audit": {0: 0}})) == {
        "orders-0": 0,
        "orders-1": 0,
        "audit-0": 0,
    }
    # incremental: only what changed is named; the session's others are fetched at their last offsets
    assert _fetched(t, "c1", _fetch(1, {"orders": {1: 5}})) == {"orders-0": 0, "orders-1": 5, "audit-0": 0}
    assert _fetched(t, "c2", _fetch(1, {"orders": {2: 3}})) == {"orders-2": 3}, "a session the tap never saw begin"
    assert _fetched(t, "c1", _fetch(2, {}, forgotten={"audit": [0]})) == {"orders-0": 0, "orders-1": 5}
    assert _fetched(t, "c1", _fetch(0, {"orders": {2: 1}})) == {"orders-2": 1}, "a new full fetch starts it again"
    assert _fetched(t, "c1", _fetch(-1, {"orders": {0: 4}})) == {"orders-0": 4}, "sessionless: as named"
    assert _fetched(t, "c1", _fetch(1, {"orders": {1: 6}})) == {"orders-1": 6}, "no session after a sessionless one"
    t.forget("c2")
    assert "c2" not in t.fetch_sessions


def _fetch_answer(partitions: dict[int, bytes]) -> object:
    """Upstream's answer to a Fetch v12 of orders: partition -> the records it returned."""
    data = {"throttle_time": 0, "error_code": 0, "session_id": 77,
            "responses": [{"topic": "orders", "partitions": [
                {"partition_index": p, "error_code": 0, "high_watermark": 1, "last_stable_offset": 1,
                 "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1, "records": raw}
                for p, raw in partitions.items()]}]}  # fmt: skip
    return messages.build(messages.response_class(wire.FETCH, 12), data)


def test_it_gives_the_replayed_consumer_a_record_once_when_upstream_answered_its_fetch_before_the_record_came():
    """The race of a live tap: a consumer's Fetch waits upstream, a producer's record comes through the tap while
    upstream's empty answer (its max_wait over) is on its way, the consumer fetches the same offset again and is given
    the record. The simulator, fed each Fetch as upstream answered it, gives it once, as upstream did."""
    recording = TapRecording(upstream="127.0.0.1:1", listener=("127.0.0.1", 2), topics={"orders": 2})
    recording.start()
    reader, writer = 1, 2

    def request(conn: int, api_key: int, version: int, correlation: int, client_id: str, data: dict) -> None:
        body = messages.build(messages.request_class(api_key, version), data)
        recording.request(conn, messages.encode_request(api_key, version, correlation, client_id, body))

    def fetch(correlation: int, session_epoch: int, named: dict[int, int]) -> None:
        data = fetch_body("orders", 0, 0, max_wait_ms=500)
        one = data["topics"][0]["partitions"][0]
        data.update(session_id=77 if session_epoch else 0, session_epoch=session_epoch,
                    topics=[{"topic": "orders", "partitions": [dict(one, partition=p, fetch_offset=o)
                                                               for p, o in named.items()]}])  # fmt: skip
        request(reader, wire.FETCH, 12, correlation, "reader", data)

    fetch(1, 0, {0: 0, 1: 0})  # waits upstream: nothing to read yet
    request(writer, wire.PRODUCE, 8, 1, "writer", produce_body("orders", 1, batch([b"b-0"])))
    recording.answer(reader, wire.FETCH, 12, 1, _fetch_answer({0: b"", 1: b""}))  # computed before b-0 came
    recording.answer(writer, wire.PRODUCE, 8, 1, None)
    fetch(2, 1, {})  # incremental: both offsets unchanged, neither named
    recording.answer(reader, wire.FETCH, 12, 2, _fetch_answer({1: batch([b"b-0"])}))
    fetch(3, 2, {1: 1})
    recording.answer(reader, wire.FETCH, 12, 3, _fetch_answer({}))
    assert recording.stop()["state"] == "stopped"
    CACHE.evict(recording.sid)
    clients = external.core_of(session.load(recording.sid).backend).clients
    (mine,) = [c for c in clients.consumers().values() if c["external"]["client_id"] == "reader"]
    assert {tp: [r["offset"] for r in recs] for tp, recs in mine["received"].items()} == {"orders-1": [0]}
    assert mine["positions"] == {"orders-0": 0, "orders-1": 1}
