"""The inspector's page in Chromium against the real broker: enter the key, pick a topic, watch its log update live
while this test's own producer writes a transaction, and make a scenario of it.

Needs a real cluster (KAFKA_BOOTSTRAP_SERVERS: tools/test.sh gives it Kafka 3.5's, idle by then, where the 3.9 and 4.x
ones may have a broker stopped by a fidelity test); it fails, never skips, without it. The server is this module's own
Daphne, started with the inspector's settings (its key and allow-lists) in its environment, as an operator would.
"""

from __future__ import annotations

import os
import secrets

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from playwright.sync_api import expect

from playground.deploy import procs
from tests.kafkatopics import drop_topics, listed_everywhere

from .conftest import shot

pytestmark = [pytest.mark.browser, pytest.mark.kafka]

KEY = secrets.token_urlsafe(18)


@pytest.fixture(scope="module")
def bootstrap() -> str:
    value = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if not value:
        pytest.fail(
            "KAFKA_BOOTSTRAP_SERVERS is not set: this test needs the real Kafka `make test` starts", pytrace=False
        )
    return value


@pytest.fixture(scope="module")
def prefix(bootstrap):
    pre = f"inspb-{secrets.token_hex(3)}-"
    yield pre
    admin = AdminClient({"bootstrap.servers": bootstrap})
    drop_topics(admin, pre)


@pytest.fixture(scope="module")
def inspector_server(tmp_path_factory, bootstrap, prefix):
    work = tmp_path_factory.mktemp("inspector-server")
    env = procs.django_env(
        work / "db.sqlite3",
        "",
        DJANGO_DEBUG="0",
        KAFKA_BOOTSTRAP_SERVERS=bootstrap,
        INSPECTOR_KEY=KEY,
        INSPECTOR_TOPICS=f"{prefix}*",
        INSPECTOR_TRANSACTIONAL_IDS=f"{prefix}*",
        INSPECTOR_POLL_INTERVAL_S="0.5",
        INSPECTOR_LSO_STALL_MS="3000",  # a stall within a test's patience
    )
    procs.migrate(env)
    proc = procs.start_daphne(env, work)
    yield proc
    proc.stop()


def transaction(p: Producer, topic: str, *values: str, commit: bool = True) -> None:
    p.begin_transaction()
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), partition=i % 2)
    p.flush(20)
    if commit:
        p.commit_transaction(20)
    else:
        p.abort_transaction(20)


def test_it_enters_the_key_picks_a_topic_and_sees_the_log_update_live(page, inspector_server, bootstrap, prefix):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic, txid = f"{prefix}orders", f"{prefix}order-pay"
    admin.create_topics([NewTopic(topic, 2)])[topic].result(timeout=20)
    listed_everywhere(bootstrap, {topic})  # the picker asks any one broker
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid})
    p.init_transactions(30)
    transaction(p, topic, "order-1", "order-2")
    transaction(p, topic, "oops-1", commit=False)
    plain = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False})
    plain.produce(topic, b"audit-1", partition=0)
    plain.flush(20)

    # the key, once
    page.goto(inspector_server.url + "/inspect/")
    assert page.locator("#inspect-key-form").is_visible()
    page.fill("#inspect-key", "not the key")
    page.click("#inspect-key-form button")
    assert "not this server's INSPECTOR_KEY" in page.inner_text(".form-error")
    page.fill("#inspect-key", KEY)
    page.click("#inspect-key-form button")

    # the picker: what the allow-lists permit
    page.wait_for_selector("#inspect-pick")
    shot(page, "inspector-picker")
    page.check(f'input[name="topic"][value="{topic}"]')
    page.check(f'input[name="txid"][value="{txid}"]')
    page.click("#inspect-watch")

    # the watch page: both partitions, markers, LSO; live
    page.wait_for_selector(f'section.ipart[data-tp="{topic}-0"]')
    page.wait_for_selector('#ws-status[data-state="open"]')
    p0 = page.locator(f'section.ipart[data-tp="{topic}-0"]')
    assert (
        p0.locator('.cell[data-control="COMMIT"]').count() == 1
        and p0.locator('.cell[data-control="ABORT"]').count() == 1
    )
    assert p0.locator('.cell[data-fate="aborted"]').inner_text() == "oops-1"
    assert p0.locator('.cell[data-fate="plain"]').inner_text() == "audit-1"
    assert "PID" in p0.locator('.cell[data-fate="committed"]').get_attribute("title")
    page.evaluate("window.__samePage = true")  # a reload would lose it: updates must be swaps

    # a number typed into "read from offset" survives the live updates (hx-preserve)
    p1_from = page.locator(f'section.ipart[data-tp="{topic}-1"] input[name="from_offset"]')
    p1_from.fill("1")
    transaction(p, topic, "live-1", "live-2")
    cell = page.wait_for_selector(
        f'section.ipart[data-tp="{topic}-0"] .cell[data-fate="committed"][title*="value live-1"]'
    )
    assert cell.inner_text() == "live-1"
    page.wait_for_selector(f'section.ipart[data-tp="{topic}-1"] .cell[data-fate="committed"][title*="value live-2"]')
    assert page.evaluate("window.__samePage") is True
    assert p1_from.input_value() == "1"
    shot(page, "inspector-watch")

    # an open transaction holds the LSO: shown live, then released
    p.begin_transaction()
    p.produce(topic, b"pending-1", partition=0)
    p.flush(20)
    page.wait_for_selector(f'section.ipart[data-tp="{topic}-0"] .cell[data-fate="open"]')
    page.wait_for_selector(f'section.ipart[data-tp="{topic}-0"] tr.holds')
    shot(page, "inspector-open-transaction")
    p.commit_transaction(20)
    page.wait_for_selector(f'section.ipart[data-tp="{topic}-0"] .cell[data-fate="committed"][title*="pending-1"]')

    # read from offset 1 of partition 1: the page's address holds it, the strip marks it
    page.click(f'section.ipart[data-tp="{topic}-1"] form.ifrom button')
    page.wait_for_selector(f'section.ipart[data-tp="{topic}-1"] .slot[data-offset="1"] .cpos')
    assert f"from={topic}%3A1%3A1" in page.url

    # make a scenario of this: the editor opens with a text the server's loader accepts
    page.click("#make-scenario")
    page.wait_for_selector("#editor-status.ok")
    assert "Observed on the cluster" in page.inner_text("#editor-status")
    shot(page, "inspector-scenario", full_page=False)


def test_it_puts_an_lso_stall_on_top_and_folds_repeated_findings_into_one_group(
    page, inspector_server, bootstrap, prefix
):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic, txid, stuck = f"{prefix}shop-orders", f"{prefix}payment-svc", f"{prefix}shop-refund"
    admin.create_topics([NewTopic(topic, 4)])[topic].result(timeout=20)
    listed_everywhere(bootstrap, {topic})
    # two instances of one service fencing each other mid-transaction, on partition 0
    current = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid})
    current.init_transactions(30)
    current.begin_transaction()
    current.produce(topic, b"pay-0", partition=0)
    current.flush(20)
    for n in range(1, 4):
        other = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid})
        other.init_transactions(30)
        other.begin_transaction()
        other.produce(topic, f"pay-{n}".encode(), partition=0)
        other.flush(20)
        current = other
    current.commit_transaction(20)
    # a transaction left open on partition 3 (the last panel), with plenty written behind it
    held = Producer({"bootstrap.servers": bootstrap, "transactional.id": stuck})
    held.init_transactions(30)
    held.begin_transaction()
    held.produce(topic, b"refund-1", partition=3)
    held.flush(20)
    plain = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False})
    for i in range(60):
        plain.produce(topic, f"audit-{i}".encode(), partition=3)
    plain.flush(20)

    page.goto(inspector_server.url + "/inspect/")
    page.fill("#inspect-key", KEY)
    page.click("#inspect-key-form button")
    page.wait_for_selector("#inspect-pick")
    page.goto(inspector_server.url + f"/inspect/?topic={topic}&txid={txid}&txid={stuck}")
    # every check waits for its condition: the page renders its panels, scrolls a strip and swaps the findings in
    # separate frames, and CI's machine is busy (a run once read the page between two of them)
    stall = page.locator(f'#insp-stalls .stall[data-tp="{topic}-3"]')
    expect(stall).to_contain_text("held the LSO at offset 0")
    expect(stall).to_contain_text("60 records of other producers")
    # the stalled partition leads the panels, its strip scrolled so that its LSO is in view
    page.wait_for_selector(f'.iparts section.ipart:first-child[data-tp="{topic}-3"]')
    page.wait_for_function(
        """tp => { const s = document.querySelector(`section.ipart[data-tp="${tp}"]`);
        const ol = s && s.querySelector('.cells'), c = ol && ol.querySelector('.slot[data-offset="0"]');
        if (!c) return false;
        const a = ol.getBoundingClientRect(), b = c.getBoundingClientRect();
        return b.left >= a.left && b.right <= a.right; }""",
        arg=f"{topic}-3",
    )
    group = page.locator('article.fgroup[data-kind="shared_transactional_id"]')
    expect(group).to_have_count(1)
    expect(group).to_have_attribute("data-count", "3")
    expect(group).to_contain_text("×3")
    expect(group).to_contain_text("certain")
    shot(page, "inspector-lso-stall-and-groups", full_page=False)
    group.locator("summary").click()
    opened = 'article.fgroup[data-kind="shared_transactional_id"] details[open]'
    expect(page.locator(f"{opened} .fitem")).to_have_count(3)
    # the stall's age changes the findings at every poll: an expanded group stays expanded across the swaps
    read_at = page.get_attribute("#insp-status", "data-read-at")
    page.wait_for_function("t => document.querySelector('#insp-status').dataset.readAt !== t", arg=read_at)
    expect(page.locator(opened)).to_have_count(1)
    page.locator(opened).evaluate("d => d.scrollIntoView()")
    shot(page, "inspector-findings-group-open", full_page=False)
    held.abort_transaction(20)
