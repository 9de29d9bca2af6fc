"""The inspector's page (/inspect/), its websocket and "make a scenario of this", against the real broker.

As in test_inspector.py, the workloads come from this test's own confluent-kafka producers (an application outside
the playground), under a prefix of the test's own that the allow-lists let through; the topics are deleted after.
"""

from __future__ import annotations

import asyncio
import html
import re
import secrets
import threading
import time

import pytest
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from confluent_kafka import KafkaException, Producer

from playground.asgi import application
from playground.inspector import forget_inspectors, get_inspector
from playground.scenario import check_text, run_scenario
from playground.web import inspectpage as web
from playground.web.inspecthub import HUB
from tests.kafkatopics import create_topic, drop_topics

# The consumers close stale database connections on every message (Channels): the tests allow database access.
pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

KEY = "correct horse battery staple"


@pytest.fixture(autouse=True)
def _fresh(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()
    forget_inspectors()


@pytest.fixture
def prefix(settings, admin):
    pre = f"inspw-{secrets.token_hex(4)}-"
    settings.INSPECTOR_KEY = KEY
    settings.INSPECTOR_TOPICS = [f"{pre}*"]
    settings.INSPECTOR_TRANSACTIONAL_IDS = [f"{pre}*"]
    settings.INSPECTOR_POLL_INTERVAL_S = 0.3
    yield pre
    drop_topics(admin, pre)


@pytest.fixture
def keyed(client, prefix):
    """The test client holds the inspector's capability, as a browser that entered the key does."""
    client.cookies[web.COOKIE] = web.cookie_value()
    return client


# ------------------------------------------------------------------------------------------------ the workload


def txn_producer(bootstrap: str, txid: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid})
    p.init_transactions(30)
    return p


def send(p: Producer, topic: str, value: str, partition: int = 0) -> None:
    p.produce(topic, value.encode(), partition=partition)
    p.flush(20)


def settle(*txids: str) -> None:
    """Until the coordinator has written every marker (see test_inspector.settle)."""
    deadline = time.monotonic() + 15
    for txid in txids:
        while get_inspector().describe_transaction(txid)["state"] in (
            "PrepareCommit",
            "PrepareAbort",
            "PrepareEpochFence",
        ):
            assert time.monotonic() < deadline, f"{txid} did not settle"
            time.sleep(0.05)


def page_of(client, path: str):
    response = client.get(path)
    return response.status_code, response.content.decode()


def cells(page: str, tp: str) -> list[tuple[int, str, str]]:
    """(offset, fate, letter or text) of every cell in a partition's strip."""
    section = page.split(f'data-tp="{tp}"', 1)[1].split("</section>", 1)[0]
    return [
        (int(o), fate, html.unescape(text))
        for o, fate, text in re.findall(
            r'<li class="slot[^"]*" data-offset="(\d+)">(?:<span class="curs">.*?</span>)?<span class="cell [^"]*" data-fate="(\w+)"[^>]*>([^<]*)</span>',
            section,
        )
    ]


def ws(path: str, cookie: str | None) -> WebsocketCommunicator:
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    if cookie is not None:
        headers.append((b"cookie", f"{web.COOKIE}={cookie}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def refused(path: str, cookie: str | None) -> int | None:
    connected, code = await ws(path, cookie).connect(timeout=10)
    assert not connected
    return code


# ------------------------------------------------------------------------------------------------ the capability


def test_it_answers_403_without_the_key_over_http_and_websocket(client, admin, prefix, settings):
    topic = create_topic(admin, f"{prefix}orders")
    q = f"?topic={topic}"
    for path in ("/inspect/", f"/inspect/{q}", f"/inspect/scenario/{q}", f"/inspect/report.json{q}"):
        assert client.get(path).status_code == 403, path
    status, page = page_of(client, f"/inspect/{q}")
    assert 'id="inspect-key-form"' in page and 'type="password"' in page
    client.cookies[web.COOKIE] = "0" * 64  # a forged capability
    assert client.get(f"/inspect/{q}").status_code == 403
    assert asyncio.run(refused(f"/ws/inspect/{q}", None)) == 4403
    assert asyncio.run(refused(f"/ws/inspect/{q}", "0" * 64)) == 4403

    # a wrong key is refused; the right one, once, gives this browser the HttpOnly capability
    del client.cookies[web.COOKIE]
    assert client.post("/inspect/key/", {"key": "wrong", "next": q[1:]}).status_code == 403
    response = client.post("/inspect/key/", {"key": KEY, "next": q[1:]})
    assert response.status_code == 302 and response["Location"] == f"/inspect/{q}"
    cookie = response.cookies[web.COOKIE]
    assert cookie["httponly"] and cookie.value == web.cookie_value() and KEY not in cookie.value
    status, page = page_of(client, "/inspect/")
    assert status == 200 and f'value="{topic}"' in page and f"<code>{prefix}*</code>" in page  # the picker
    assert client.get(f"/inspect/{q}").status_code == 200
    report = client.get(f"/inspect/report.json{q}").json()
    assert [p["topic"] for p in report["partitions"]] == [topic] and report["findings"] == []

    # outside the allow-lists: refused, whatever the capability
    assert client.get("/inspect/?topic=payments").status_code == 403
    assert asyncio.run(refused("/ws/inspect/?topic=payments", web.cookie_value())) == 4403

    # the inspector off: the page says why; the capability opens nothing
    settings.INSPECTOR_KEY = ""
    status, page = page_of(client, "/inspect/")
    assert status == 503 and "INSPECTOR_KEY" in page and "is off" in page
    assert asyncio.run(refused(f"/ws/inspect/{q}", cookie.value)) == 4403
    settings.INSPECTOR_KEY = KEY
    settings.KAFKA_BOOTSTRAP_SERVERS = ""
    status, page = page_of(client, f"/inspect/{q}")
    assert status == 503 and "KAFKA_BOOTSTRAP_SERVERS" in page


def test_it_refuses_wrong_keys_past_ten_a_minute_but_never_the_right_one(client, prefix):
    for i in range(10):
        assert client.post("/inspect/key/", {"key": f"guess {i}"}).status_code == 403
    assert client.post("/inspect/key/", {"key": "one more guess"}).status_code == 429
    assert client.post("/inspect/key/", {"key": KEY}).status_code == 302  # a guesser locks nobody out


# ------------------------------------------------------------------------------------------------ the page, live


def test_it_shows_the_window_markers_lso_and_findings_of_a_shared_id_live(
    kafka_bootstrap, admin, keyed, prefix, settings
):
    # the pages read below take seconds on a loaded machine: A stays "live" (INSPECTOR_LIVE_GAP_S) across them
    settings.INSPECTOR_LIVE_GAP_S = 60
    topic = create_topic(admin, f"{prefix}orders")
    txid = f"{prefix}order-pay"
    tp = f"{topic}-0"
    q = f"?topic={topic}&txid={txid}"

    # instance A opens a transaction; plain records land inside its span; the LSO stays at A's first record
    a = txn_producer(kafka_bootstrap, txid)
    a.begin_transaction()
    send(a, topic, "a-1")
    send(a, topic, "a-2")
    send(Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": False}), topic, "plain-1")
    send(Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True}), topic, "plain-2")
    status, page = page_of(keyed, f"/inspect/{q}")
    assert status == 200
    assert cells(page, tp) == [(0, "open", "a-1"), (1, "open", "a-2"), (2, "plain", "plain-1"), (3, "plain", "plain-2")]
    assert f'data-tp="{tp}" data-lso="0" data-hw="4"' in page
    assert re.search(r'data-offset="0"><span class="curs"><i class="cur cur-LSO">LSO</i>', page)
    assert "holds the LSO" in page and f"<code>{txid}</code>" in page
    assert "isTransactional: true" in page and "idempotent · isTransactional: false" in page  # in the cells' hover
    assert 'data-kind="interleaved_plain_records"' in page
    # ... and from the list of ongoing transactions: the picker lists A's, "watch every ongoing" shows it
    status, page = page_of(keyed, "/inspect/")
    assert re.search(rf"<td><code>{txid}</code></td><td>\d+</td><td>Ongoing</td>", page) and "?ongoing=1" in page
    assert f'href="/inspect/?topic={topic}&amp;txid={txid}"' in page  # its "watch": the id and the topics it writes to
    assert keyed.get(f"/inspect/?txid={txid}")["Location"] == f"/inspect/?topic={topic}&txid={txid}"  # so are ids alone
    status, page = page_of(keyed, "/inspect/?ongoing=1")
    assert status == 200 and "started from ListTransactions" in page and f"<code>{txid}</code> (Ongoing)" in page
    assert cells(page, tp)[:2] == [(0, "open", "a-1"), (1, "open", "a-2")]

    # instance B starts with the same transactional.id: fences A, which was still writing
    b = txn_producer(kafka_bootstrap, txid)
    b.begin_transaction()
    send(b, topic, "b-1")
    b.commit_transaction(20)
    with pytest.raises(KafkaException):
        a.commit_transaction(10)
    settle(txid)
    time.sleep(0.4)  # past the poll interval: the page reads again
    status, page = page_of(keyed, f"/inspect/{q}")
    assert cells(page, tp) == [
        (0, "aborted", "a-1"),
        (1, "aborted", "a-2"),
        (2, "plain", "plain-1"),
        (3, "plain", "plain-2"),
        (4, "marker", "A"),
        (5, "committed", "b-1"),
        (6, "marker", "C"),
    ]
    assert 'data-control="ABORT"' in page and 'data-control="COMMIT"' in page
    assert f'data-tp="{tp}" data-lso="7" data-hw="7"' in page
    assert re.search(
        r'data-offset="7"><span class="curs"><i class="cur cur-HW">HW</i><i class="cur cur-LSO">LSO</i>', page
    )
    findings = re.findall(r'<article class="finding fgroup k-(\w+)', page)  # one group each
    assert sorted(findings) == ["interleaved_plain_records", "shared_transactional_id"]
    assert "fenced by InitProducerId" in page  # the __transaction_state timeline
    assert re.search(r'<g class="node lit" data-state="CompleteCommit">', page)  # the state diagram, lit
    assert page.count("✗ hidden: aborted") == 2  # read_committed drops a-1 and a-2

    # live: two viewers of one selection share one subscription; a new transaction reaches both as fragments
    async def watch() -> tuple[str, str]:
        cookie = web.cookie_value()
        one, two = ws(f"/ws/inspect/{q}&lang=en", cookie), ws(f"/ws/inspect/{q}&lang=en", cookie)
        assert (await one.connect(timeout=10))[0] and (await two.connect(timeout=10))[0]
        assert list(HUB.watching().values()) == [2]
        assert len(get_inspector()._subs) == 1
        threading.Thread(
            target=lambda: (b.begin_transaction(), send(b, topic, "b-2"), b.commit_transaction(20))
        ).start()
        seen = ["", ""]
        deadline = time.monotonic() + 20
        for i, viewer in enumerate((one, two)):  # a communicator's timeout ends its application: wait long
            while 'data-fate="committed" title="offset 7' not in seen[i]:
                seen[i] += await viewer.receive_from(timeout=max(0.1, deadline - time.monotonic()))
        await one.disconnect()
        await two.disconnect()
        return seen[0], seen[1]

    first, second = asyncio.run(watch())
    assert f'class="panel ipart" data-tp="{tp}"' in first and 'hx-swap-oob="true"' in first
    assert "b-2" in first and "b-2" in second
    time.sleep(0.2)
    assert HUB.watching() == {} and get_inspector()._subs == []  # the last viewer closed the subscription


# ------------------------------------------------------------------------------------------------ make a scenario


def test_it_makes_a_scenario_that_loads_and_runs_on_the_simulator(kafka_bootstrap, admin, keyed, prefix, settings):
    topic = create_topic(admin, f"{prefix}orders", partitions=2)
    txid, other = f"{prefix}order-pay", f"{prefix}audit"
    plain = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": False})
    a = txn_producer(kafka_bootstrap, txid)
    a.begin_transaction()  # committed on both partitions
    send(a, topic, "a-1", 0)
    send(a, topic, "a-2", 1)
    a.commit_transaction(20)
    a.begin_transaction()  # aborted by A itself
    send(a, topic, "a-3", 0)
    a.abort_transaction(20)
    c = txn_producer(kafka_bootstrap, other)
    c.begin_transaction()
    send(c, topic, "c-1", 0)
    c.commit_transaction(20)
    a.begin_transaction()  # left open: B's init aborts it
    send(a, topic, "a-4", 1)
    send(plain, topic, "plain-1", 1)
    b = txn_producer(kafka_bootstrap, txid)
    b.begin_transaction()
    send(b, topic, "b-1", 0)
    send(b, topic, "b-2", 1)
    b.commit_transaction(20)
    settle(txid, other)
    time.sleep(0.4)

    q = f"?topic={topic}&txid={txid}&txid={other}"
    settings.INSPECTOR_POLL_INTERVAL_S = (
        60  # the download below is the same read (the inspector's cache), whatever the load
    )
    status, page = page_of(keyed, f"/inspect/scenario/{q}")
    assert status == 200 and 'id="editor-form"' in page  # the editor, holding the text
    text = html.unescape(
        re.search(r'<textarea name="text" id="editor-text"[^>]*>(.*?)</textarea>', page, re.S).group(1)
    )
    scenario, errors = check_text(text)
    assert scenario is not None, errors
    # an actor per producer instance, named in the order they first act; a plain producer; two consumers
    assert {a.name: a.transactional_id for a in scenario.actors.values() if a.transactional_id} == {
        "A": txid,
        "B": other,
        "C": txid,
    }
    assert set(scenario.actors) == {"A", "B", "C", "plain", "rc", "ru"}
    assert (
        "C starts with the same transactional.id" in text and "its InitProducerId aborts A's open transaction" in text
    )

    observed = run_scenario(scenario, "sim")
    assert observed["expect"] == {"passed": 2, "failed": 0, "failures": []}  # both logs as the cluster held them
    assert all(s["outcome"] == "ok" for s in observed["steps"])
    logs = {tp: [e.get("control") or e["value"] for e in p["log"]] for tp, p in observed["partitions"].items()}
    assert logs == {
        f"{topic}-0": ["a-1", "COMMIT", "a-3", "ABORT", "c-1", "COMMIT", "b-1", "COMMIT"],
        f"{topic}-1": ["a-2", "COMMIT", "a-4", "plain-1", "ABORT", "b-2", "COMMIT"],
    }
    assert observed["transactions"][txid]["epoch"] == 2  # A at 0, the fence at 1, B at 2: as on the cluster
    assert observed["consumers"]["rc"] == {f"{topic}-0": ["a-1", "c-1", "b-1"], f"{topic}-1": ["a-2", "plain-1", "b-2"]}

    response = keyed.get(f"/inspect/scenario/{q}&download=1")
    assert response["Content-Disposition"].startswith("attachment") and response.content.decode() == text


def test_it_replays_a_transaction_the_coordinator_timed_out_as_a_clock_advance(kafka_bootstrap, admin, keyed, prefix):
    topic = create_topic(admin, f"{prefix}slow")
    txid = f"{prefix}slow-writer"
    p = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": txid, "transaction.timeout.ms": 1000})
    p.init_transactions(30)
    p.begin_transaction()
    send(p, topic, "late")
    deadline = time.monotonic() + 20  # the test cluster scans for timed-out transactions every second
    while get_inspector().describe_transaction(txid)["state"] != "CompleteAbort":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(0.4)
    text = keyed.get(f"/inspect/scenario/?topic={topic}&txid={txid}&download=1").content.decode()
    scenario, errors = check_text(text)
    assert scenario is not None, errors
    assert "  A: {producer: {transactional.id: " + txid + ", transaction.timeout.ms: 1000}}" in text
    assert "  - clock.advance: 11s" in text  # past the timeout and the simulator's abort scan (10 s, Kafka's default)
    observed = run_scenario(scenario, "sim")
    assert observed["expect"]["failed"] == 0, observed["expect"]
    assert [e.get("control") or e["value"] for e in observed["partitions"][f"{topic}-0"]["log"]] == ["late", "ABORT"]
    assert observed["transactions"][txid]["epoch"] == 1  # the coordinator bumped it, as on the cluster
