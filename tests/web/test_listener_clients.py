"""Connected clients shown as they are (issue 31): the header names the libraries and versions the connections named
in ApiVersions (confluent-kafka's own name, and kafka-clients' through a raw request as kafka-clients sends it); an
admin client is an admin client on the page and in "save as scenario"; a consume-transform-produce application's
send_offsets_to_transaction keeps its offsets in the saved scenario, which loads and replays them; the fence stays
findable on the page after the timeline's last RPCs moved on. Real confluent-kafka clients against a session's
listener."""

from __future__ import annotations

import html
import re
import socket
import struct

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from playground import session
from playground.protocol import messages
from playground.scenario import check_text, run_scenario
from playground.session import listener
from playground.web import broadcast, panels, protocolpanels

from . import zhrule
from .test_listener import (
    QUIET,
    Consumer,
    Producer,
    _listeners,  # noqa: F401  (the fixture closes the test's listeners)
    listen,
    producer,
    quiet,
    wait_for,
)
from .test_zh_pages import _free_play, _no_english

pytestmark = [pytest.mark.django_db(transaction=True)]

API_VERSIONS = 18
INPUTS = 5


def _hello_as_kafka_clients(bootstrap: str) -> socket.socket:
    """An ApiVersions v3 as kafka-clients 3.9.1 sends it (ClientSoftwareName "apache-kafka-java"), on a connection left
    open: the connection names its library before it does anything else."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    body = {"client_software_name": "apache-kafka-java", "client_software_version": "3.9.1"}
    request = messages.build(messages.request_class(API_VERSIONS, 3), body)
    payload = messages.encode_request(API_VERSIONS, 3, 1, "producer-1", request)
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    (size,) = struct.unpack(">i", sock.recv(4))
    assert size > 0
    return sock


def _pipeline(bootstrap: str) -> dict[str, int]:
    """Orders in, a transactional producer that copies what its read_committed consumer (group "billing", assigned
    orders-0) was given to orders-1 and sends the consumer's position as the transaction's offsets. Returns them."""
    feed = Producer({"bootstrap.servers": bootstrap, "client.id": "feed", **QUIET})
    for i in range(INPUTS):
        feed.produce("orders", value=f"o-{i}".encode(), partition=0)
    assert feed.flush(20) == 0
    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "billing",
            "client.id": "reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **QUIET,
        }
    )
    reader.assign([TopicPartition("orders", 0)])
    got = []
    wait_for(lambda: got.extend(m for m in [reader.poll(0.2)] if m is not None and not m.error()) or len(got) >= 3, "3")
    app = producer(bootstrap, "billing-app", txid="billing-0")
    app.init_transactions(20)
    app.begin_transaction()
    for message in got:
        app.produce("orders", value=message.value() + b"-paid", partition=1)
    positions = reader.position([TopicPartition("orders", 0)])
    app.send_offsets_to_transaction(positions, reader.consumer_group_metadata(), 20)
    app.commit_transaction(20)
    reader.close()
    return {f"{p.topic}-{p.partition}": p.offset for p in positions}


def test_it_names_what_is_connected_keeps_the_admin_client_an_admin_and_the_sent_offsets_in_the_scenario(
    client, sim_session
):
    sid = sim_session.id
    bootstrap = listen(client, sid)
    java = _hello_as_kafka_clients(bootstrap)
    try:
        sent = _pipeline(bootstrap)
        admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "ops-admin", **QUIET})
        request = [ConsumerGroupTopicPartitions("billing", [TopicPartition("orders", 0)])]
        listed = admin.list_consumer_group_offsets(request)["billing"].result(20)
        assert [p.offset for p in listed.topic_partitions] == [sent["orders-0"]]
        quiet(sid)
        # the header names each library and version while they are connected: kafka-clients from its raw ApiVersions
        # (a connection that did nothing else yet), confluent-kafka as it names itself, with the kinds using it
        page = wait_for(
            lambda: (lambda text: text if "ops-admin" in text else None)(client.get(f"/s/{sid}/").content.decode()),
            "the admin client on the page",
        )
        header = re.search(r'<div id="p-header".*?</div>', page, re.S).group(0)
        assert '<code class="software" data-library="kafka-clients">kafka-clients 3.9.1</code>' in header
        python = re.search(r'data-library="confluent-kafka-python">confluent-kafka-python ([^<]+)</code>', header)
        assert python and python.group(1).startswith("2.16"), header
        # the session's own actors (free play's) run the profile's client, named apart from what connected
        assert re.search(
            r'<span class="own-client" title="[^"]*">librdkafka</span> · <span class="connected-software"', header
        )
        view = broadcast.view_of(session.load(sid))
        kinds = {s["library"]: s["kinds"] for s in view["external"]["software"]}
        assert kinds["confluent-kafka-python"] == {"producer": 2, "consumer": 1, "admin": 1}, kinds
        assert kinds["apache-kafka-java"] == {}
    finally:
        java.close()
    # the admin client: an admin on the connect panel, never a consumer of the group it asked about
    assert "ops-admin" not in view["consumers"]
    rows = {r["name"]: r["kind"] for r in protocolpanels.client_rows(view)}
    assert rows["ops-admin"] == "admin" and rows["reader"] == "consumer", rows
    assert re.search(r'data-client="ops-admin" data-kind="admin"', page)
    # the Spring snippet: a prefix per instance, and why
    assert "transaction-id-prefix=payments-${INSTANCE_ID}-" in page and "transaction-id-prefix=payments-\n" not in page
    assert "Each instance needs its own prefix" in page

    # saved as a scenario: no admin actor, a note says so; the offsets sent are written and replay as they were sent
    quiet(sid)
    listener.stop(sid)
    text = client.get(f"/s/{sid}/scenario.yaml").content.decode()
    scenario, errors = check_text(text)
    assert scenario is not None, errors
    assert "ops-admin" not in scenario.actors and "reader" in scenario.actors
    assert "an admin client, connected here" in text
    assert f"orders-0 → {sent['orders-0']}" in text, text
    labels = [s.label for s in scenario.steps]
    sends = [s for s in scenario.steps if s.label == "billing-app.send_offsets_to_transaction"]
    assert sends and sends[0].args == {"consumer": "reader"}, labels
    observed = run_scenario(scenario)
    # the application was given 3 of the 5 records its client fetched: the re-enactment's consumer takes as many
    assert observed["groups"]["billing"]["orders-0"] == sent["orders-0"] == 3, (observed["groups"], text)


def test_the_fence_stays_on_the_page_after_the_timeline_moved_on_in_both_languages(
    client, sim_session, settings, monkeypatch
):
    # The command log lists the newest MINE_ROWS rows, the listener's opening among them only while the clients' rows
    # are fewer: a row at most every 2 s (not 0.1 s) keeps them few however slowly a busy machine runs the 60
    # transactions (once 30 rows or more, and the opening scrolled out)
    monkeypatch.setattr(listener, "MIN_FLUSH_INTERVAL_S", 2.0)
    sid = sim_session.id
    bootstrap = listen(client, sid)
    zombie = producer(bootstrap, "zombie", txid="pay")
    zombie.init_transactions(20)
    zombie.begin_transaction()
    zombie.produce("orders", value=b"late", partition=0)
    zombie.flush(10)
    fencer = producer(bootstrap, "fencer", txid="pay")
    fencer.init_transactions(20)
    with pytest.raises(KafkaException):
        zombie.commit_transaction(10)
    for i in range(60):  # each transaction: AddPartitionsToTxn, Produce, EndTxn and their markers, both ways
        fencer.begin_transaction()
        fencer.produce("orders", value=f"t-{i}".encode(), partition=1)
        fencer.commit_transaction(20)
    quiet(sid)
    view = broadcast.view_of(session.load(sid))
    fenced = ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED")
    assert not [e for e in view["timeline"] if e["error"] in fenced], "the fence is among the last RPCs still"
    response = client.get(f"/s/{sid}/")
    assert len(response.content) < 1 << 20
    panel = re.search(r'<div id="p-timeline".*?<div class="seq-wrap">', response.content.decode(), re.S).group(0)
    assert re.search(r'class="pinned-rpc err" data-rpc="\w+"', panel), panel
    assert any(error in panel for error in fenced)
    # the pinned RPCs alone, page by page back to the fence
    url, seen = f"/s/{sid}/timeline/?pinned=1", []
    while url:
        alone = client.get(url)
        assert alone.status_code == 200 and len(alone.content) < 1 << 20
        seen.append(alone.content.decode())
        earlier = re.search(r'<a href="([^"]+)" rel="prev">', seen[-1])
        url = html.unescape(earlier.group(1)) if earlier else ""
        assert len(seen) < 20
    assert any(error in page for page in seen for error in fenced)

    # in Chinese: the header's libraries, the pinned answers, the snippet's why, no English
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    names = _free_play() | zhrule.Authored(names=frozenset({"zombie", "fencer", "pay", "late"}))
    page = client.get(f"/s/{sid}/").content.decode()
    # the parts this page's clients change (the header, the connect panel, the timeline, the anomalies with the
    # zombie's aborted-told finding, the command log with the listener's row) and the pinned RPCs' page
    parts = {
        f"#{panel}": (re.search(rf'<div id="{panel}".*?\n</div>', page, re.S).group(0), names)
        for panel in ("p-header", "p-connect", "p-timeline", "p-anomalies", "p-narrative")
    }
    assert "r-aborted-told" in parts["#p-anomalies"][0] and "监听已开启" in parts["#p-narrative"][0]
    assert "置顶" in parts["#p-timeline"][0] and "INSTANCE_ID" in parts["#p-connect"][0]
    parts["pinned"] = (client.get(f"/s/{sid}/timeline/?pinned=1").content.decode(), names)
    _no_english(parts)


@pytest.mark.kafka  # Kafka's own tools: tools/kafka/.jars (kafka.sh fetch)
def test_kafkas_consumer_group_command_is_a_kafka_clients_admin_client_on_the_page(client, sim_session):
    """kafka-consumer-groups.sh --describe: kafka-clients 3.9.1's KafkaAdminClient asks the group (DescribeGroups),
    its committed offsets (OffsetFetch) and the partitions' ends (ListOffsets): an admin client, named as its
    ApiVersions named it."""
    import subprocess

    from .test_listener import ROOT

    sid = sim_session.id
    bootstrap = listen(client, sid)
    sent = _pipeline(bootstrap)
    jars = ROOT / "tools" / "kafka" / ".jars"
    main = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
    # --timeout: the tool's own 5 s default is less than a busy machine may take to answer (a cap, never a measure)
    command = ["java", "-cp", f"{jars}/*", main, "--bootstrap-server", bootstrap, "--describe", "--group", "billing",
               "--timeout", "60000"]  # fmt: skip
    described = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert described.returncode == 0, described.stderr[-3000:]
    assert re.search(rf"billing\s+orders\s+0\s+{sent['orders-0']}\b", described.stdout), described.stdout
    quiet(sid)
    view = broadcast.view_of(session.load(sid))
    java = ("apache-kafka-java", "3.9.1")
    admins = [a for a in view["external"]["admins"] if tuple(a["software"] or ()) == java]
    assert [a["client_id"] for a in admins] == ["adminclient-1"], view["external"]["admins"]
    assert not [c for c in view["consumers"] if c.startswith("adminclient")], list(view["consumers"])
    header = panels.connected_software(view)
    assert {"library": "kafka-clients", "version": "3.9.1", "kinds": [("admin", 1)]} in header, header
