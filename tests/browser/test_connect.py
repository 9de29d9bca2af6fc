"""Connect your own app, in Chromium (issue 16): a free-play session from the gallery's "Connect your own app", a
confluent-kafka producer pair sharing a transactional id, a Java producer (kafka-clients' console producer) and a
read_committed consumer group run against the address the page shows; the page shows them as actors, the fence, the
markers and the consumers' views; a watch link shows it live; a fork replays it on the simulator with the same
observation."""

from __future__ import annotations

import contextlib
import logging
import re
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from .conftest import shot

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
JARS = ROOT / "tools" / "kafka" / ".jars"
QUIET = {"logger": logging.getLogger("connect-browser-test")}


def _live(page) -> None:
    page.wait_for_selector("#ws-status[data-state=open]")


def _clients(bootstrap: str) -> None:
    """The story the page should tell: payment-service commits three orders, opens another transaction, monitoring
    takes the same transactional id (the fence), payment-service's commit fails; a Java producer writes two plain
    records; a read_committed consumer group reads what is committed."""
    pay = Producer({"bootstrap.servers": bootstrap, "transactional.id": "pay", "client.id": "payment-service", **QUIET})
    pay.init_transactions(30)
    pay.begin_transaction()
    for i in range(3):
        pay.produce("orders", value=f"order-{i}".encode(), partition=0)
    pay.commit_transaction(30)
    pay.begin_transaction()
    pay.produce("orders", value=b"order-lost", partition=1)
    pay.flush(20)
    monitoring = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "pay", "client.id": "monitoring", **QUIET}
    )
    monitoring.init_transactions(30)
    with pytest.raises(KafkaException):
        pay.commit_transaction(20)
    monitoring.close()
    with contextlib.suppress(KafkaException):  # closing a fenced producer reports the fence again
        pay.close()
    java = subprocess.run(
        [
            "java",
            "-cp",
            f"{JARS}/*",
            "kafka.tools.ConsoleProducer",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            "orders",
            "--producer-property",
            "client.id=java-audit",
        ],
        input="audit-1\naudit-2\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert java.returncode == 0, java.stderr[-2000:]
    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "ledger",
            "client.id": "ledger",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            **QUIET,
        }
    )
    reader.subscribe(["orders"])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        msg = reader.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.value())
    reader.commit(asynchronous=False)
    assert sorted(got) == [b"audit-1", b"audit-2", b"order-0", b"order-1", b"order-2"]
    reader.close()


def _observation(page) -> dict:
    """What the page shows of the cluster: every log cell (offset, fate, marker), the producers' ids, epochs and
    states."""
    return page.evaluate(
        """() => ({
          cells: Array.from(document.querySelectorAll('#p-logs .strip')).map(s => [s.dataset.tp,
            Array.from(s.querySelectorAll('.cell:not(.endcell)')).map(c => (c.dataset.fate || '') + ':' + c.textContent)]),
          producers: Array.from(document.querySelectorAll('#p-producers .pcard')).map(c => [c.dataset.producer,
            c.querySelector('.ids span').textContent.replace(/\\s+/g, ' ').trim()]),
        })"""
    )


def test_a_teams_own_clients_live_in_a_session_shown_live_to_a_watcher_and_forked(browser, server):
    driver = browser.new_context(viewport={"width": 1440, "height": 1000}, locale="en-US")
    page = driver.new_page()
    page.goto(server.url + "/")
    page.locator("#connect-app").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/#connect$"))
    _live(page)
    bootstrap = page.locator("#bootstrap-servers").inner_text().strip()
    assert re.fullmatch(r"127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){2}", bootstrap)
    sid = page.url.split("/s/")[1].split("/")[0]

    # a watcher follows along from before the clients connect
    watching = browser.new_context(viewport={"width": 1440, "height": 1000}, locale="en-US")
    watcher = watching.new_page()
    watcher.goto(f"{server.url}/s/{sid}/")
    _live(watcher)
    # only the driver may stop it, and only the driver is shown where to connect (issue 33)
    assert watcher.locator("#p-connect button.unlisten").count() == 0 and bootstrap not in watcher.content()
    assert "applications its driver points at them" in watcher.locator("#p-connect").inner_text()

    _clients(bootstrap)

    for p in (page, watcher):  # both pages change without a reload
        p.wait_for_selector('.pcard.external.fenced[data-producer="payment-service"]')
        p.wait_for_selector('.pcard.external[data-producer="monitoring"]')
        p.wait_for_selector('.pcard.external[data-producer="java-audit"]')
        p.wait_for_selector('.ccard.external[data-consumer="ledger"]')
        p.wait_for_selector('#p-logs .cell.marker.m-A[data-control="ABORT"]')
    assert "FENCED" in page.locator('.pcard[data-producer="payment-service"] .badge').inner_text()
    assert "apache-kafka-java" in page.locator('.pcard[data-producer="java-audit"] .extline').inner_text()
    assert "confluent-kafka-python" in page.locator('.pcard[data-producer="monitoring"] .extline').inner_text()
    assert page.locator('#p-logs .cell.marker.m-C[data-control="COMMIT"]').count() >= 1
    assert page.locator('#p-logs .cell[data-fate="aborted"]').count() >= 1
    # the consumers' views: the ledger got the committed records, and the aborted one is hidden from it
    page.wait_for_function("() => document.querySelectorAll('#p-consumers .cmp-table td.s-got').length >= 5")
    assert page.locator("#p-consumers .cmp-table td.s-aborted").count() >= 1
    # the timeline names the clients, the coordinator their transactional id
    lanes = page.locator("#p-timeline").inner_text()
    assert "payment-service" in lanes and "monitoring" in lanes
    assert "pay" in page.locator("#p-coordinator").inner_text()
    page.locator("#connect").scroll_into_view_if_needed()
    shot(page, "connect-your-own-app")
    shot(watcher, "connect-watched", full_page=False)

    # a fork at the head replays the log on the simulator: the same observation
    page.wait_for_timeout(500)
    here = _observation(page)
    page.locator("#fork-here").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    _live(page)
    assert page.url.split("/s/")[1].split("/")[0] != sid
    assert "forked from" in page.locator("#p-header .origin").inner_text()
    assert _observation(page) == here
    assert page.locator('.pcard[data-producer="monitoring"] .extline[data-connected="no"]').count() == 1
    for context in (driver, watching):
        context.close()


def test_the_consumer_groups_panel_follows_two_instances_of_an_application_live(browser, server):
    """Issue 31: a team's two instances in one group appear in the groups panel as they join, with their partitions,
    and the rebalance when one leaves, without a reload; the panel is not there before any group is."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, locale="en-US")
    page = context.new_page()
    page.goto(server.url + "/")
    page.locator("#connect-app").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/#connect$"))
    _live(page)
    assert not page.locator("section.a-groups").is_visible()  # no group yet
    page.evaluate("() => { window.sameDocument = true; }")
    bootstrap = page.locator("#bootstrap-servers").inner_text().strip()
    config = {"bootstrap.servers": bootstrap, "group.id": "billing", "session.timeout.ms": 6000, **QUIET}
    one = Consumer({**config, "client.id": "billing-1"})
    two = Consumer({**config, "client.id": "billing-2"})
    try:
        for c in (one, two):
            c.subscribe(["orders"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (one.assignment() and two.assignment()):
            one.poll(0.2)
            two.poll(0.2)
        assert one.assignment() and two.assignment()
        panel = page.locator("#p-groups")
        page.wait_for_function(
            "() => ['billing-1', 'billing-2'].every(n => document.querySelector('#p-groups').textContent.includes(n))"
            " && document.querySelector('#p-groups').textContent.includes('billing-2 joined')",
        )
        assert page.locator("section.a-groups").is_visible() and "Stable" in panel.inner_text()
        page.locator("section.a-groups").scroll_into_view_if_needed()
        shot(page, "consumer-groups", full_page=False)
        two.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(one.assignment()) < 3:
            one.poll(0.2)
        page.wait_for_function(
            "() => document.querySelector('#p-groups').textContent.includes('billing-2 left (LeaveGroup)')",
        )
        assert page.evaluate("() => window.sameDocument") is True  # live, not reloaded
    finally:
        one.close()
        context.close()
