"""The database beside Kafka, in Chromium: play the incident in full (scenario 21), see the order table and the
reconciliation's gaps lit, read the anomaly checker's findings, and jump from a finding to its step on the slider."""

from __future__ import annotations

import re

import pytest

from .conftest import shot

pytestmark = pytest.mark.browser


def test_it_shows_the_database_the_gaps_and_the_findings_and_jumps_to_a_findings_step(page, server):
    page.goto(server.url + "/")
    page.locator("[data-scenario=db-incident-in-full] button", has_text="Play").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    page.wait_for_selector("#ws-status[data-state=open]")
    db = page.locator("#p-database")
    assert db.is_visible() and "orders" in db.inner_text()
    assert page.locator("#p-anomalies .none").is_visible()  # nothing has happened yet

    page.get_by_role("button", name="run").click()
    page.wait_for_function(
        "() => document.querySelector('#p-header .cursor').textContent.trim().split(' / ').every((v, i, a) => v === a[0])"
    )
    # Orders 102 to 105: paid and stock deducted in the database, their events fenced away in Kafka.
    assert db.locator(".gaps").inner_text() == "4 gaps"
    assert db.locator("table.rec tr.gap").count() == 4 and db.locator("table.rec td.check.no").count() == 4
    # pay's fenced transaction is not a lost write: the application was told (its commit returned _FENCED)
    assert page.locator("#p-anomalies .finding.r-lost-write").count() == 0
    lost = page.locator("#p-anomalies .finding.r-aborted-told")
    assert lost.count() == 1 and page.locator("#p-anomalies .finding.r-divergence").count() == 4
    told = lost.first.inner_text()
    assert "order-102" in told and "order-105" in told and "commit_transaction() returned _FENCED" in told
    assert "the application was told at step 30" in told and lost.first.locator(".elle").count() == 0
    page.evaluate(
        "window.scrollTo(0, document.getElementById('h-db').getBoundingClientRect().top + window.scrollY - 110)"
    )
    shot(page, "database-incident-in-full", full_page=False)

    # A finding's step: the slider shows the moment pay was told its send of order-102 succeeded.
    step = lost.first.locator(".goto-step").first
    n = step.get_attribute("data-step")
    step.click()
    page.wait_for_function(f"() => document.getElementById('scrub-label').textContent.includes('viewing step {n} ·')")
    current = page.locator("#p-narrative li.current")
    current.filter(has_text="order-102").wait_for()
    assert current.inner_text().startswith(f"{n}\npay.produce")
    shot(page, "database-finding-step", full_page=False)
