"""What a 1440 px wide screen shows whole (issue 17): a step of the narrative on one line with its outcome, a past
note cut to a line with its whole text as a tooltip (a step's arguments too, when cut), partition names unbroken, the
header's clock and step."""

from __future__ import annotations

import re

import pytest

from .conftest import shot

pytestmark = pytest.mark.browser


def test_it_keeps_names_outcomes_and_the_clock_on_one_line_at_1440_px(browser, server):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, locale="en-US")
    page = ctx.new_page()
    page.goto(server.url + "/")
    page.locator("[data-scenario=shared-id-incident] button", has_text="Play").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    page.wait_for_selector("#ws-status[data-state=open]")
    for _ in range(14):
        before = page.locator("#state-version").get_attribute("data-version")
        page.keyboard.press("n")
        page.wait_for_function(f"() => document.querySelector('#state-version').dataset.version !== '{before}'")
    one_line = "els => els.filter(e => e.getBoundingClientRect().height > 24)"  # two lines are 28 px and more
    # a fire-and-forget produce: label, arguments (cut, with a tooltip) and "→ ok" on one line
    steps = page.locator("#p-narrative .steps li:not(.note)")
    assert steps.count() > 10 and steps.evaluate_all(one_line) == []
    # the tooltip is given when the pointer reaches a cut text (playground.js), and only to a cut one
    produce = page.locator("#p-narrative .steps li", has_text="fire-and-forget").first
    produce.locator(".args").hover()
    assert produce.locator(".args").get_attribute("title").endswith("fire-and-forget")
    note = page.locator("#p-narrative .steps li.note .ntext").first
    note.hover()
    assert note.evaluate("e => e.scrollHeight > e.clientHeight") and len(note.get_attribute("title")) > 80
    assert note.get_attribute("title").startswith(note.inner_text().strip().rstrip("…")[:40])
    whole = page.locator("#p-narrative .steps li:not(.note) .args").last
    whole.hover()
    assert whole.evaluate("e => e.scrollWidth <= e.clientWidth") and whole.get_attribute("title") is None
    # partition names whole, and the header's "t = 00:00.542" and "step 14 / 30" unbroken
    assert page.locator(".strip-label b").evaluate_all(one_line) == []
    assert page.locator(".strip-label b").all_inner_texts() == ["order-audit-0", "order-created-0"]
    assert page.locator("#p-header .nw").evaluate_all(one_line) == []
    # the pace button's stopwatch is drawn, not a glyph (U+23F1 showed as an empty box where the font lacks it)
    icon = page.locator("#p-header button.pace svg.icon").bounding_box()
    assert icon is not None and 8 <= icon["width"] <= 20
    shot(page, "session-1440", full_page=False)
    ctx.close()


def test_it_keeps_the_editors_cheatsheet_and_an_exercises_choices_inside_their_panels(browser, server):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, locale="en-US")
    page = ctx.new_page()
    page.goto(server.url + "/editor/")
    page.wait_for_selector("#editor-form[data-ready=true]")
    sheet = page.locator(".cheatsheet")
    assert sheet.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    assert sheet.evaluate("e => e.getBoundingClientRect().right <= document.documentElement.clientWidth")

    page.goto(server.url + "/")
    page.locator("[data-scenario=ex-isolation-levels] button", has_text="Play").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    page.wait_for_selector("#ws-status[data-state=open]")
    for _ in range(40):
        if page.locator(".question .choices button").count():
            break
        before = page.locator("#state-version").get_attribute("data-version")
        page.keyboard.press("n")
        page.wait_for_function(f"() => document.querySelector('#state-version').dataset.version !== '{before}'")
    question = page.locator(".question").first
    right = question.evaluate("q => q.getBoundingClientRect().right")
    edges = question.locator(".choices button").evaluate_all("bs => bs.map(b => b.getBoundingClientRect().right)")
    assert edges and max(edges) <= right
    shot(page, "exercise-question-1440", full_page=False)
    ctx.close()
