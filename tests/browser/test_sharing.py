"""Writing and sharing in Chromium, as a user does: write a scenario with an error, see it flagged on its line, fix
it, play it, save it and open its /sc/ link in a second browser, fork at step 3, scrub back and forth, and open the
watch link in another browser: every control disabled, and a forged POST refused."""

from __future__ import annotations

import re

import pytest

from .conftest import shot

pytestmark = pytest.mark.browser

# A scenario written in the editor, with a misspelt action on line 14.
TEXT = """format: 1
id: written-here
title: {en: Written in the browser, zh: 在浏览器里写的}
summary: Two producers, one transactional.id.
cluster:
  topics:
    orders: {partitions: 2}
actors:
  A: {producer: {transactional.id: shared}}
  B: {producer: {transactional.id: shared}}
  rc: {consumer: {topics: [orders]}}
steps:
  - A.init_transactions
  - A.begin_transactoin
  - A.produce: {topic: orders, partition: 0, value: a-1}
  - B.init_transactions
  - A.commit_transaction: {expect: _FENCED}
  - rc.poll
"""


def _version(page) -> str:
    return page.locator("#state-version").get_attribute("data-version")


def _set_text(page, text: str) -> None:
    """Replace the editor's whole text in one change, as a paste does; then type a character and take it back, so
    that the check runs on keystrokes too."""
    page.evaluate(
        """text => { const v = CM.EditorView.findFromDOM(document.querySelector('.cm-editor'));
                               v.dispatch({changes: {from: 0, to: v.state.doc.length, insert: text}}); }""",
        text,
    )
    page.locator(".cm-content").click()
    page.keyboard.press("End")
    page.keyboard.type(" ")
    page.keyboard.press("Backspace")


def _live(page) -> None:
    page.wait_for_selector("#ws-status[data-state=open]")


def _scrub(page, k: int) -> None:
    page.evaluate(
        "k => { const s = document.getElementById('scrub'); s.value = k; s.dispatchEvent(new Event('input')); }", k
    )
    page.wait_for_selector(f'#ws-moment[data-at="{k}"]', state="attached")


def test_it_writes_plays_shares_forks_scrubs_and_watches(browser, server):
    author = browser.new_context(viewport={"width": 1440, "height": 1000}, locale="en-US")
    page = author.new_page()
    page.goto(server.url + "/")
    page.locator("#write-scenario").click()
    page.wait_for_selector(".cm-editor")

    # An error, flagged on its line; then fixed.
    _set_text(page, TEXT)
    page.wait_for_selector("#editor-status.bad")
    assert page.locator(".cm-inline-error").inner_text().startswith("unknown action 'begin_transactoin'")
    problem = page.locator("#editor-problems li")
    assert problem.count() == 1 and problem.get_attribute("data-line") == "14"
    assert page.locator(".cm-lint-marker-error").count() >= 1
    shot(page, "editor-error", full_page=False)
    _set_text(page, TEXT.replace("begin_transactoin", "begin_transaction"))
    page.wait_for_selector("#editor-status.ok")
    assert "Written in the browser" in page.locator("#editor-status").inner_text()
    assert page.locator(".cm-inline-error").count() == 0
    shot(page, "editor", full_page=False)

    # Save and share: the /sc/ page, opened in a second browser, plays for whoever opens it.
    page.locator("#editor-save").click()
    page.wait_for_url(re.compile(r"/sc/[a-z2-7]{26}/$"))
    link = page.url
    reader = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    other = reader.new_page()
    other.goto(link)
    assert "Written in the browser" in other.locator("h1").inner_text()
    assert other.locator(".shared-steps li").count() == 6
    shot(other, "shared-scenario")
    other.locator("#shared-play").click()
    other.wait_for_url(re.compile(r"/s/[^/]+/$"))
    _live(other)
    assert other.locator("#p-header .cursor").inner_text().startswith("0 /")

    # The author plays it: steps through, forks at step 3, scrubs the fork.
    page.goto(link)
    page.locator("#shared-play").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    _live(page)
    sid = page.url.rstrip("/").rsplit("/", 1)[-1]
    for _ in range(6):
        before = _version(page)
        page.keyboard.press("n")
        page.wait_for_function(f"() => document.querySelector('#state-version').dataset.version !== '{before}'")
    assert page.locator(".scrub-track .mark.m-fenced").count() >= 1  # A's commit: _FENCED, marked on the slider
    _scrub(page, 3)
    assert "viewing step 3 · live: step 6" in page.locator("#scrub-label").inner_text()
    assert page.locator("#p-header .cursor").inner_text().startswith("3 /")
    assert page.locator('button[data-post*="/step/"]').is_disabled()  # an earlier step is read-only
    assert "?at=3" in page.url
    page.locator("#fork-here").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    _live(page)
    fork = page.url.rstrip("/").rsplit("/", 1)[-1]
    assert fork != sid
    assert "forked from" in page.locator("#p-header .origin").inner_text()
    assert page.locator("#p-header .cursor").inner_text().startswith("3 /")
    before = _version(page)
    page.keyboard.press("n")  # the fork is the forker's to drive
    page.wait_for_function(f"() => document.querySelector('#state-version').dataset.version !== '{before}'")
    assert page.locator("#p-header .cursor").inner_text().startswith("4 /")
    _scrub(page, 1)
    _scrub(page, 3)
    page.locator("#scrub-live").click()
    page.wait_for_selector('#ws-moment[data-at="live"]', state="attached")
    assert "live" in page.locator("#scrub-label").inner_text()
    shot(page, "fork-scrubbed", full_page=False)

    # The watch link in another browser: everything shown, every control disabled, a forged POST refused.
    watcher = browser.new_context(viewport={"width": 1440, "height": 1000}, locale="en-US")
    w = watcher.new_page()
    w.goto(f"{server.url}/s/{sid}/")
    _live(w)
    assert "Watching" in w.locator(".watchnote").inner_text()
    buttons = w.locator("main.board button, #p-header button, .static-controls fieldset button")
    assert buttons.count() > 10
    assert all(buttons.nth(i).is_disabled() for i in range(buttons.count()))
    assert w.locator("#scrub").is_enabled() and w.locator("#fork-here").is_enabled()  # watching may scrub and fork
    status = w.evaluate(
        """url => fetch(url, {method: 'POST', headers: {'X-CSRFToken': document.querySelector('meta[name=csrf-token]').content,
                            'Content-Type': 'application/x-www-form-urlencoded'}, body: 'x=1'}).then(r => r.status)""",
        f"/s/{sid}/step/",
    )
    assert status == 403
    shot(w, "watch-link", full_page=False)
    for context in (author, reader, watcher):
        context.close()


def test_it_keeps_the_editors_draft_stays_on_errors_and_edits_a_played_scenario_again(browser, server):
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000}, locale="en-US")
    page = ctx.new_page()
    page.goto(server.url + "/editor/")
    page.wait_for_selector("#editor-form[data-ready=true]")
    # Play with an error: nothing is sent, the editor says why and shows the line
    _set_text(page, TEXT)
    page.wait_for_selector("#editor-status.bad")
    page.locator("#editor-play").click()
    page.wait_for_selector("#editor-refused", state="visible")
    assert page.locator("#editor-refused").inner_text().startswith("Fix the problems listed below first")
    assert page.url.endswith("/editor/")
    # fixed and played; Back shows the draft, not the example
    _set_text(page, TEXT.replace("begin_transactoin", "begin_transaction"))
    page.wait_for_selector("#editor-status.ok")
    page.wait_for_selector("#editor-refused", state="hidden")
    page.locator("#editor-play").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    _live(page)
    page.go_back()
    page.wait_for_selector("#editor-form[data-ready=true]")
    page.wait_for_function("() => document.querySelector('.cm-content').textContent.includes('written-here')")
    assert "Written in the browser" in page.locator(".cm-content").inner_text()
    assert page.locator("#editor-draft").is_visible()
    # the session links back to its text; a draft of that text is kept under its own key
    page.go_forward()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    href = page.locator("#edit-scenario").get_attribute("href")
    page.goto(server.url + href)
    page.wait_for_selector("#editor-form[data-ready=true]")
    assert "written-here" in page.locator(".cm-content").inner_text()
    assert page.locator("#editor-draft").is_hidden()  # nothing typed on this text yet
    # discarding the empty editor's draft brings the example back
    page.goto(server.url + "/editor/")
    page.wait_for_selector("#editor-form[data-ready=true]")
    page.locator("#editor-draft-discard").click()
    assert "my-scenario" in page.locator(".cm-content").inner_text() and page.locator("#editor-draft").is_hidden()
    ctx.close()


def test_it_takes_the_keys_after_the_slider_was_dragged(browser, server):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, locale="en-US")
    page = ctx.new_page()
    page.goto(server.url + "/")
    page.locator("[data-scenario=zombie-fencing] button", has_text="Play").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    _live(page)
    for _ in range(4):
        before = _version(page)
        page.keyboard.press("n")
        page.wait_for_function(f"() => document.querySelector('#state-version').dataset.version !== '{before}'")
    _scrub(page, 2)
    page.focus("#scrub")  # as a drag leaves it
    page.keyboard.press("]")
    page.wait_for_selector('#ws-moment[data-at="3"]', state="attached")
    page.keyboard.press("[")
    page.wait_for_selector('#ws-moment[data-at="2"]', state="attached")
    assert "viewing step 2 · live: step 4" in page.locator("#scrub-label").inner_text()
    ctx.close()


def test_it_says_the_editors_check_in_chinese_on_a_chinese_page(browser, server):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, locale="zh-CN")
    ctx.add_cookies([{"name": "django_language", "value": "zh-hans", "url": server.url}])
    page = ctx.new_page()
    page.goto(server.url + "/editor/")
    page.wait_for_selector("#editor-form[data-ready=true]")
    _set_text(page, TEXT)
    page.wait_for_selector("#editor-status.bad")
    assert page.locator("#editor-status").inner_text() == "1 个问题"
    assert "line" not in page.locator("#editor-problems li .goto").inner_text()
    _set_text(page, TEXT.replace("begin_transactoin", "begin_transaction"))
    page.wait_for_selector("#editor-status.ok")
    assert page.locator("#editor-status").inner_text() == "✓ 在浏览器里写的 · 6 步 · 3 个角色"
    ctx.close()
