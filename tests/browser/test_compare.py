"""The compare view in Chromium, as a user reaches it: "compare" on the zombie-fencing card of the gallery, the
pair chosen there, then both sides stepped together with the buttons (htmx swaps the body, the address follows)
up to the fenced commit, lit as a difference: _FENCED and INVALID_PRODUCER_EPOCH (47) on librdkafka's side,
ProducerFencedException and PRODUCER_FENCED (90) on the Java client's."""

from __future__ import annotations

import re

import pytest

from .conftest import ARTIFACTS, shot

pytestmark = pytest.mark.browser


def test_it_steps_both_profiles_together_and_lights_the_fenced_commit(page, server):
    page.goto(server.url + "/")
    card = page.locator('article.card[data-scenario="zombie-fencing"]')
    card.locator(".compare-entry > summary").click()
    card.locator('select[name="a"]').select_option("3.9-librdkafka")
    card.locator('select[name="b"]').select_option("4-java")
    card.scroll_into_view_if_needed()
    card.screenshot(path=str(ARTIFACTS / "compare-gallery-card.png"))
    card.locator("button.compare-go").click()
    page.wait_for_selector('#compare[data-at="0"]')
    assert "a=3.9-librdkafka" in page.url and "b=4-java" in page.url
    assert page.locator(".cmp-table thead th").all_inner_texts()[1:] == [
        "Kafka 3.9.1 · librdkafka",
        "Kafka 4.4.0 · java",
    ]

    page.locator(".cmp-steps a[href$='at=4']").click()  # A has opened its transaction and written a-1
    page.wait_for_selector('#compare[data-at="4"]')
    assert page.locator(".cmp-side.differs").count() == 0

    page.locator("#cmp-next").click()  # the scenario's note: a step, as in a session of it
    page.wait_for_selector('#compare[data-at="5"]')
    assert page.locator(".cmp-step").inner_text().startswith("5.") and page.locator(".cmp-note").count() == 1
    page.locator("#cmp-next").click()  # B.init_transactions: B takes epoch 2, A's transaction is aborted
    page.wait_for_selector('#compare[data-at="6"]')
    assert page.locator(".cmp-step code").inner_text() == "B.init_transactions"
    page.locator("#cmp-next").click()  # A.commit_transaction: fenced, as each client says it
    page.wait_for_selector('#compare[data-at="7"]')
    assert page.url.endswith("at=7")  # the address follows, so the step can be shared
    assert page.locator(".cmp-step code").inner_text() == "A.commit_transaction"

    a, b = page.locator('.cmp-side[data-side="a"]'), page.locator('.cmp-side[data-side="b"]')
    assert "differs" in a.get_attribute("class") and "differs" in b.get_attribute("class")
    assert a.locator(".outcome").inner_text() == "_FENCED"
    assert "INVALID_PRODUCER_EPOCH (47)" in a.locator(".wire").inner_text()
    assert b.locator(".outcome").inner_text() == "ProducerFencedException"
    assert "PRODUCER_FENCED (90)" in b.locator(".wire").inner_text()
    row = page.locator('.cmp-table tr[data-key="producer.A.error"]')
    assert row.get_attribute("class") == "diff new"
    assert row.evaluate("r => getComputedStyle(r.querySelector('td')).backgroundColor") == "rgb(253, 232, 236)"
    assert page.locator(".cmp-steps li.current.lit").count() == 1
    shot(page, "compare", full_page=False)

    page.keyboard.press("b")  # the keys step both sides too
    page.wait_for_selector('#compare[data-at="6"]')
    page.go_back()  # and history goes back to the address before
    page.wait_for_selector('#compare[data-at="7"]')


def test_it_takes_every_key_press_as_a_step_however_fast(page, server):
    page.goto(server.url + "/compare/?scenario=zombie-fencing&a=3.9-librdkafka&b=4-java&at=0")
    page.wait_for_selector('#compare[data-at="0"]')
    for _ in range(6):
        page.keyboard.press("n", delay=10)  # faster than a step's answer: htmx alone dropped some of these
    page.wait_for_selector('#compare[data-at="6"]')
    assert page.url.endswith("at=6")
    for _ in range(2):
        page.keyboard.press("b", delay=10)
    page.wait_for_selector('#compare[data-at="4"]')
    page.keyboard.press("ArrowRight")  # and one more, from where it stopped: no press was left over
    page.wait_for_selector('#compare[data-at="5"]')
    assert page.url.endswith("at=5")


def test_it_keeps_the_step_when_the_pair_changes_and_refuses_the_same_profile_twice(page, server):
    page.goto(server.url + "/compare/?scenario=zombie-fencing&a=3.9-librdkafka&b=4-java&at=0")
    page.wait_for_selector('#compare[data-at="0"]')
    for _ in range(7):  # stepped with htmx: the page was loaded at step 0
        page.locator("#cmp-next").click()
        page.wait_for_selector(f'#compare[data-at="{_ + 1}"]')
    pair = page.locator("#compare-pair")
    pair.locator('select[name="b"]').select_option("3.9-librdkafka")  # the same as A: refused before it is sent
    pair.locator("button.compare-go").click()
    assert pair.locator('select[name="b"]').evaluate("s => s.validationMessage").startswith("Choose two different")
    assert page.url.endswith("at=7") and "b=4-java" in page.url
    pair.locator('select[name="b"]').select_option("4-librdkafka")
    pair.locator("button.compare-go").click()
    page.wait_for_url(re.compile(r"b=4-librdkafka"))
    page.wait_for_selector('#compare[data-at="7"]')  # the same moment, under the new pair
    assert page.locator(".cmp-step code").inner_text() == "A.commit_transaction"
