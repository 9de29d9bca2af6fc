"""The room on a projector: the board and presenter mode read from the back of a room at 1280x720 and 1920x1080
(a facilitator and three attendees in separate browsers)."""

from __future__ import annotations

import re

import pytest

from .conftest import shot

pytestmark = pytest.mark.browser

SIZES = ((1280, 720), (1920, 1080))


def _px(page, selector: str) -> float:
    """The text size the room sees, in screen pixels: the computed size times the page's zoom (the drawn box over the
    laid-out one)."""
    return page.eval_on_selector(
        selector,
        "(el) => parseFloat(getComputedStyle(el).fontSize) * el.getBoundingClientRect().height / el.offsetHeight",
    )


def _fits(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


def _step(page) -> None:
    """The next step, or the question before it answered."""
    before = page.locator("#state-version").get_attribute("data-version")
    if page.locator(".question").count():
        page.locator(".question .choices button").first.click()
    else:
        page.keyboard.press("n")
    page.wait_for_function("(v) => document.querySelector('#state-version').dataset.version !== v", arg=before)


def test_it_shows_the_board_and_presenter_mode_readable_from_the_back_of_the_room(browser, server):
    contexts = []

    def context(width: int = 1280, height: int = 720):
        ctx = browser.new_context(viewport={"width": width, "height": height}, locale="en-US")
        contexts.append(ctx)
        return ctx.new_page()

    fac = context()
    fac.goto(server.url + "/w/new/")
    fac.locator('input[name=scenario][value="ex-who-is-fenced"]').check()
    fac.locator("#create-room").click()
    fac.wait_for_url(re.compile(r"/w/[A-Z0-9]{6}/board/$"))
    code = fac.locator("#room-code").inner_text()
    for name in ("Ada", "Lin", "Bo"):
        page = context()
        page.goto(server.url + f"/w/?code={code}")
        page.fill("input[name=name]", name)
        page.locator("form.join-form button.primary").click()
        page.wait_for_url(re.compile(r"/s/[^/]+/$"))
        page.wait_for_selector("#ws-status[data-state=open]")
        while page.locator(".question").count() == 0:
            _step(page)
        _step(page)  # the question answered
    fac.wait_for_function("() => document.querySelectorAll('#room-questions .dist').length > 0")
    fac.reload()
    fac.wait_for_selector("#ws-status[data-state=open]")

    for width, height in SIZES:
        fac.set_viewport_size({"width": width, "height": height})
        shot(fac, f"workshop-board-{width}x{height}", full_page=False)
        # The cards and the room's answers fill the screen: names and answers large, the first question above the fold.
        assert _px(fac, ".seat .who") >= 18 and _px(fac, "#room-questions .dist li") >= 16 and _fits(fac)
        assert fac.locator("#room-questions .answered").first.bounding_box()["y"] < height / 2
        # the agenda and the facilitator's own session in view below the answers, which scroll in their panel
        for control in ("#h-agenda", "#follow-toggle", "#open-mine"):
            box = fac.locator(control).bounding_box()
            assert box["y"] + box["height"] <= height, (control, width, height)

    # The spotlight: a presenter-mode page zoomed once, for the projector's width (not again by the board's zoom).
    fac.locator(".seat .spotlight").first.click()
    spot = fac.frame_locator("#spotlight iframe")
    spot.locator("#ws-status[data-state=open]").wait_for()
    assert "Ada" in fac.locator("#spotlight-who").inner_text()
    assert spot.locator("body").evaluate("(b) => getComputedStyle(b).zoom") == "1.6"
    assert fac.locator("#spotlight iframe").evaluate("(f) => f.getBoundingClientRect().width / f.offsetWidth") == 1
    fac.locator("#spotlight-close").click()

    # Presenter mode: the facilitator's own session, every log cell and panel text large enough for a projector.
    mine = fac.locator("#open-mine").get_attribute("href")
    own = fac.context.new_page()  # the facilitator's browser: the room's capability opens their session
    own.goto(server.url + mine)
    own.wait_for_selector("#ws-status[data-state=open]")
    for _k in range(4):
        _step(own)
    own.goto(own.url.split("?")[0] + "?present=1")
    own.wait_for_selector("#ws-status[data-state=open]")
    for width, height in SIZES:
        own.set_viewport_size({"width": width, "height": height})
        shot(own, f"presenter-{width}x{height}", full_page=False)
        # (10.5 px log cells and 13 px text before, at either size)
        assert _px(own, ".panel") >= 18 and _px(own, ".strip .cells .cell") >= 16 and _fits(own)
    for ctx in contexts:
        ctx.close()
