"""Walk the scenarios in Chromium the way a user does: gallery -> play -> step/run/back by clicks and keys, and
assert what is on the screen. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re

import pytest

from .conftest import shot

pytestmark = pytest.mark.browser


def _version(page) -> str:
    return page.locator("#state-version").get_attribute("data-version")


def _after(page, action) -> None:
    """Do something that changes the session and wait until the pushed update reached the screen."""
    before = _version(page)
    action()
    page.wait_for_function(f"() => document.querySelector('#state-version').dataset.version !== '{before}'")


def _play(page, server, scenario: str) -> None:
    page.goto(server.url + "/")
    page.locator(f"[data-scenario={scenario}] button", has_text="Play").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    page.wait_for_selector("#ws-status[data-state=open]")


def _step(page, n: int = 1) -> None:
    for _ in range(n):
        _after(page, lambda: page.get_by_role("button", name="step").click())


def _cursor(page) -> str:
    return page.locator("#p-header .cursor").inner_text()


def test_it_walks_the_zombie_fencing_scenario(page, server):
    _play(page, server, "zombie-fencing")
    assert _cursor(page).startswith("0 /")
    _step(page, 4)  # note, A.init, A.begin, A.produce a-1
    a1 = page.locator('.strip[data-tp="orders-0"] .cell[data-fate="open"]')
    assert a1.inner_text() == "a-1"
    _step(page, 2)  # note, B.init_transactions: fences A, aborts its transaction
    strip = page.locator('.strip[data-tp="orders-0"]')
    abort = strip.locator('.cell[data-control="ABORT"]')
    assert abort.inner_text() == "A"
    assert strip.locator('.cell[data-fate="aborted"]').inner_text() == "a-1"
    # Hover a cell: offset, producer id, epoch, sequence and the transaction's fate.
    cell = strip.locator('.cell[data-fate="aborted"]')
    cell.hover()
    title = cell.get_attribute("title")
    assert (
        "offset 0" in title and "PID" in title and "epoch 0" in title and "sequence 0" in title and "aborted" in title
    )
    shot(page, "fencing-1-abort-marker")

    _step(page, 1)  # A.commit_transaction -> _FENCED
    card = page.locator('#p-producers [data-producer="A"]')
    assert card.locator(".badge").inner_text() == "FENCED"
    assert "_FENCED" in card.locator(".lasterr").inner_text()
    assert "fenced" in (card.get_attribute("class") or "")
    page.locator("#p-narrative li.current").wait_for()
    assert "A.commit_transaction" in page.locator("#p-narrative li.current").inner_text()
    assert "_FENCED" in page.locator("#p-header .last").inner_text()
    shot(page, "fencing-2-zombie-commit-fenced")

    # Keyboard: back (time travel rebuilds from the log), then forward again.
    _after(page, lambda: page.keyboard.press("b"))
    assert _cursor(page).startswith("6 /")
    assert page.locator('#p-producers [data-producer="A"] .badge').inner_text() != "FENCED"
    _after(page, lambda: page.keyboard.press("ArrowRight"))
    assert page.locator('#p-producers [data-producer="A"] .badge').inner_text() == "FENCED"

    # Run the rest, watching it go step by step; then the consumers side by side.
    page.get_by_role("button", name="run").click()
    page.wait_for_function(
        "() => document.querySelector('#p-header .cursor').textContent.trim().split(' / ').every((v, i, a) => v === a[0])",
    )
    assert page.get_by_role("button", name="step").is_disabled()
    table = page.locator('.cmp-table[data-tp="orders-0"]')
    heads = [h.strip().split("\n")[0] for h in table.locator("thead th").all_inner_texts()]
    rc_col, ru_col = heads.index("rc"), heads.index("ru")
    rows = {r.locator("td.rec .v").inner_text(): r for r in table.locator("tbody tr").all()}
    cells = lambda value, col: rows[value].locator("td").nth(col).inner_text()  # noqa: E731
    assert "hidden: aborted" in cells("a-1", rc_col)
    assert "✓" in cells("a-1", ru_col)
    assert "✓" in cells("b-1", rc_col)
    assert "hidden: aborted" in cells("b-2", rc_col)
    assert page.locator('#p-producers [data-producer="A"] .badge').inner_text() == "FENCED"  # fenced again in round 3
    # The coordinator's entry and its state machine, current state lit.
    txn = page.locator('.txn[data-txid="order-pay"]')
    assert txn.get_attribute("data-state") == "Empty"
    assert txn.locator(".sm .node.lit").get_attribute("data-state") == "Empty"
    assert page.locator(".seq .msg.err").count() > 0  # errors in red on the timeline
    shot(page, "fencing-3-end")


def test_it_walks_the_shared_id_incident(page, server):
    _play(page, server, "shared-id-incident")
    page.get_by_role("button", name="run").click()
    page.wait_for_function(
        "() => document.querySelector('#p-header .cursor').textContent.trim().split(' / ').every((v, i, a) => v === a[0])"
    )
    pay = page.locator('#p-producers [data-producer="pay"]')
    assert pay.locator(".badge").inner_text() == "FENCED"
    assert "_FENCED" in pay.locator(".lasterr").inner_text()
    counters = pay.locator(".counters")
    assert (
        counters.get_attribute("data-sent"),
        counters.get_attribute("data-landed"),
        counters.get_attribute("data-rc"),
    ) == ("5", "1", "1")
    truth = page.locator('#p-truth [data-producer="pay"]')
    assert [n.inner_text() for n in truth.locator(".n").all()] == ["5", "1", "1"]
    assert "4 sends" in page.locator("#p-truth .gapnote").inner_text()
    assert page.locator('#p-producers [data-producer="monitor"] .badge').inner_text() != "FENCED"
    log = page.locator('.strip[data-tp="order-created-0"] .cell')
    assert [c.inner_text() for c in log.all() if c.inner_text()] == ["order-1", "C"]
    shot(page, "incident-end")


def test_it_plays_free_play_with_two_viewers(page, server, browser):
    page.goto(server.url + "/")
    page.get_by_role("button", name="Start free play").click()
    page.wait_for_selector("#ws-status[data-state=open]")
    url = page.url
    # A second viewer (another browser profile) opens the shared link.
    other_ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    other = other_ctx.new_page()
    other.goto(url)
    other.wait_for_selector("#ws-status[data-state=open]")

    _after(page, lambda: page.get_by_role("button", name="new transactional id").click())
    _after(page, lambda: page.locator("#p-producers .add-producer button", has_text="share").click())
    a, b = page.locator('#p-producers [data-producer="A"]'), page.locator('#p-producers [data-producer="B"]')
    _after(page, lambda: a.get_by_role("button", name="init", exact=True).click())
    _after(page, lambda: a.get_by_role("button", name="begin", exact=True).click())
    # The produce form: topic, partition, key, value.
    a.locator("button.open-produce").click()
    dialog = page.locator("#produce-dialog")
    dialog.locator("select[name=partition]").select_option("1")
    dialog.locator("input[name=key]").fill("order-7")
    dialog.locator("input[name=value]").fill("paid")
    _after(page, lambda: dialog.get_by_role("button", name="Produce").click())
    # the dialog closes on the POST's response, which may reach the page after the pushed update
    dialog.wait_for(state="hidden")
    assert page.locator('.strip[data-tp="orders-1"] .cell[data-fate="open"]').inner_text() == "paid"
    _after(page, lambda: b.get_by_role("button", name="init", exact=True).click())
    _after(page, lambda: a.get_by_role("button", name="commit", exact=True).click())
    assert a.locator(".badge").inner_text() == "FENCED"
    _after(page, lambda: page.locator('[data-consumer="rc"]').get_by_role("button", name="poll").click())
    _after(page, lambda: page.locator('[data-consumer="ru"]').get_by_role("button", name="poll").click())
    # The second viewer saw all of it, live.
    other.wait_for_function(f"() => document.querySelector('#state-version').dataset.version === '{_version(page)}'")
    assert other.locator('#p-producers [data-producer="A"] .badge').inner_text() == "FENCED"
    assert other.locator('.strip[data-tp="orders-1"] .cell[data-control="ABORT"]').count() == 1
    shot(page, "freeplay-fenced")
    shot(other, "freeplay-second-viewer")

    # Bad input shows a message and changes nothing.
    version = _version(page)
    page.evaluate(
        """() => htmx.ajax('POST', location.pathname + 'produce/', {values: {actor: 'A', topic: 'nope', value: 'x'}, swap: 'none'})"""
    )
    page.locator("#toast.show").wait_for()
    assert "topic" in page.locator("#toast").inner_text().lower()
    assert _version(page) == version
    other_ctx.close()


def test_it_posts_a_button_to_its_groups_url_with_the_groups_values_and_its_own(page, server):
    """A group of buttons says its URL and shared values once (a producer's actions: the action URL and the actor;
    the brokers; "+ producer"): each button posts there with its own values over the group's, and a button with a
    URL of its own in the group (produce) posts to that one, the group's actor still sent."""
    page.goto(server.url + "/")
    page.get_by_role("button", name="Start free play").click()
    page.wait_for_selector("#ws-status[data-state=open]")
    _after(page, lambda: page.locator(".add-producer").get_by_role("button", name="new transactional id").click())
    _after(page, lambda: page.locator(".add-producer").get_by_role("button", name="plain").click())
    a, b = page.locator('#p-producers [data-producer="A"]'), page.locator('#p-producers [data-producer="B"]')
    assert a.locator("button[data-post]").count() == 1 and b.locator("button[data-post]").count() == 1  # produce
    _after(page, lambda: a.get_by_role("button", name="init", exact=True).click())
    _after(page, lambda: a.get_by_role("button", name="begin", exact=True).click())
    _after(page, lambda: a.get_by_role("button", name="produce", exact=True).click())
    _after(page, lambda: b.get_by_role("button", name="produce", exact=True).click())
    assert a.locator(".badge").inner_text() == "IN_TRANSACTION" and b.locator(".badge").inner_text() == "READY"
    assert a.locator(".counters").get_attribute("data-sent") == b.locator(".counters").get_attribute("data-sent") == "1"
    _after(page, lambda: page.locator("#p-cluster button.broker").first.click())
    assert page.locator("#p-cluster button.broker.down").count() == 1


def test_it_switches_language(page, server):
    page.goto(server.url + "/")
    shot(page, "gallery")
    page.get_by_role("button", name="中文").click()
    page.wait_for_load_state()
    assert "自由练习" in page.content() or "自由" in page.content()
    page.locator("[data-scenario=zombie-fencing] button.primary").click()
    page.wait_for_selector("#ws-status[data-state=open]")
    _after(page, lambda: page.keyboard.press("n"))
    assert "第一轮" in page.locator("#p-narrative .story").inner_text()
    for _ in range(6):
        _after(page, lambda: page.keyboard.press("n"))
    assert page.locator('#p-producers [data-producer="A"] .badge').inner_text() == "已被隔离"  # the page's word
    assert "epoch 2" in page.locator("#p-narrative .story").inner_text()
    shot(page, "fencing-zh")
    page.get_by_role("button", name="English").click()
    page.wait_for_load_state()
