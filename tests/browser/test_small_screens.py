"""Every page usable at 1280x720 (issue 33): the session's bar two lines at most in English and Chinese, its title
cut with a tooltip; presenter mode without the connect panel, its narrative rows and partition marks whole; follow-me
beside the attendee's own session from 1440 px on, with its step; the share menu closing as menus do; `x` asking
before it resets."""

from __future__ import annotations

import re
import time

import pytest

from .conftest import shot

pytestmark = pytest.mark.browser

LANGS = {"en": ("en-US", "Play"), "zh": ("zh-CN", "开始")}


def _version(page) -> str:
    return page.locator("#state-version").get_attribute("data-version")


def _step(page, n: int = 1) -> None:
    for _ in range(n):
        before = _version(page)
        page.keyboard.press("n")
        page.wait_for_function(f"() => document.querySelector('#state-version').dataset.version !== '{before}'")


def _open(browser, server, lang: str, width: int, height: int, scenario: str = "shared-id-incident"):
    locale, play = LANGS[lang]
    ctx = browser.new_context(viewport={"width": width, "height": height}, locale=locale)
    if lang == "zh":
        ctx.add_cookies([{"name": "django_language", "value": "zh-hans", "url": server.url}])
    page = ctx.new_page()
    page.goto(server.url + "/")
    page.locator(f"[data-scenario={scenario}] button", has_text=play).click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    page.wait_for_selector("#ws-status[data-state=open]")
    return ctx, page


def _box(page, selector: str) -> dict:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return box


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_it_keeps_the_session_bar_to_two_lines_with_the_whole_title_as_a_tooltip(browser, server, lang):
    # a title cut at 1280 px in each language (zh: shared-id-incident's fits since it says 生产者, not producer)
    scenario = "zombie-fencing" if lang == "zh" else "shared-id-incident"
    for width, height in ((1280, 720), (1440, 900)):
        ctx, page = _open(browser, server, lang, width, height, scenario)
        _step(page, 6)  # a last outcome and the pace button on the line of facts
        bar = _box(page, "header.topbar")
        title = page.locator("#p-header .title strong")
        # two lines: the title's (with the buttons beside it) and the facts'; each of them one line high
        assert bar["height"] <= 64, (lang, width, bar)
        for line in ("#p-header .title strong", "#p-header .meta"):
            assert _box(page, line)["height"] < 24, (lang, width, line)
            assert _box(page, line)["y"] + _box(page, line)["height"] <= bar["y"] + bar["height"]
        # every control of the bar on its first line, inside the window
        for control in page.locator("#p-header .controls button, .static-controls :is(button, select, summary)").all():
            if control.is_visible():
                box = control.bounding_box()
                assert box["y"] + box["height"] <= bar["y"] + 34 and box["x"] + box["width"] <= width, (lang, width)
        # the time slider starts where the bar ends, covering none of it
        assert abs(_box(page, "#timebar")["y"] - (bar["y"] + bar["height"])) <= 1
        whole = title.get_attribute("title")
        assert whole == title.inner_text() and len(whole) > 40
        if width == 1280:
            assert title.evaluate("t => t.scrollWidth > t.clientWidth")  # cut here: the tooltip is what shows it
        shot(page, f"session-bar-{lang}-{width}x{height}", full_page=False)
        ctx.close()


def test_it_shows_a_projector_the_story_whole_and_not_the_way_to_connect(browser, server):
    ctx, page = _open(browser, server, "en", 1280, 720)
    _step(page, 8)
    assert page.locator("#connect").is_visible()
    page.goto(page.url + "?present=1")
    page.wait_for_selector("#ws-status[data-state=open]")
    assert page.locator("body.present").count() == 1 and not page.locator("#connect").is_visible()
    # the bar's line of facts whole, without a tooltip; cut on a narrower projector, its whole text is its tooltip
    meta = page.locator("#p-header .meta")
    assert meta.evaluate("m => m.scrollWidth <= m.clientWidth") and meta.get_attribute("title") is None
    page.set_viewport_size({"width": 1200, "height": 720})
    page.wait_for_function("() => document.querySelector('#p-header .meta').title !== ''")
    assert meta.evaluate("m => m.scrollWidth > m.clientWidth")
    assert meta.get_attribute("title") == " ".join(meta.text_content().split())
    page.set_viewport_size({"width": 1280, "height": 720})
    # "HW 1 · LSO 0 · LEO 1": each mark on one line, beside its partition's whole name
    marks = page.locator(".strip-label .marks")
    assert marks.count() == 2
    for m in marks.all():
        assert m.evaluate("e => e.getBoundingClientRect().height < 20")
    names = page.locator(".strip-label b").evaluate_all("bs => bs.map(b => b.scrollWidth <= b.clientWidth)")
    assert names == [True, True]
    # every row of the narrative whole: a note's text and a command's arguments wrap, none is cut
    cut = page.locator("#p-narrative .steps li .ntext, #p-narrative .steps li .args").evaluate_all(
        "els => els.filter(e => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)"
        ".map(e => e.textContent)"
    )
    assert cut == []
    assert page.locator("#p-narrative .steps li .ntext").count() > 3
    shot(page, "presenter-story-1280x720", full_page=False)
    ctx.close()


def test_it_closes_the_share_menu_on_escape_and_on_a_click_outside(browser, server):
    ctx, page = _open(browser, server, "en", 1280, 720)
    share = page.locator("details.links").first
    menu = share.locator(".links-menu")
    share.locator("summary").click()
    assert menu.is_visible()
    page.keyboard.press("Escape")
    menu.wait_for(state="hidden")
    assert page.locator("#ws-moment").get_attribute("data-at") == "live"
    share.locator("summary").click()
    menu.locator("p").first.click()  # inside the menu: it stays
    assert menu.is_visible()
    page.locator(".a-logs h2").click()  # outside: it closes
    menu.wait_for(state="hidden")
    # the compare menu too, and opening one leaves the other closed
    compare = page.locator("details.compare-menu")
    compare.locator("summary").click()
    assert compare.locator(".links-menu").is_visible()
    page.keyboard.press("Escape")
    compare.locator(".links-menu").wait_for(state="hidden")
    ctx.close()


def test_it_asks_before_the_x_key_starts_the_scenario_again(browser, server):
    ctx, page = _open(browser, server, "en", 1280, 720)
    _step(page, 3)
    asked: list[str] = []

    def answer(dialog, accept: bool) -> None:
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda d: answer(d, False))
    page.keyboard.press("x")
    # the dialog reaches this side as an event: wait for it (a busy machine delivers it late), generously capped
    deadline = time.monotonic() + 15
    while not asked and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert asked == ["Start the scenario again? Every step taken so far is undone."]
    assert page.locator("#p-header .cursor").get_attribute("data-step") == "3"
    before = _version(page)
    page.once("dialog", lambda d: answer(d, True))
    page.keyboard.press("x")
    page.wait_for_function(f"() => document.querySelector('#state-version').dataset.version !== '{before}'")
    page.wait_for_selector('#p-header .cursor[data-step="0"]')
    assert len(asked) == 2
    ctx.close()


def test_it_puts_follow_me_beside_the_attendees_session_from_1440_px_with_its_step(browser, server):
    contexts = []

    def context(width: int, height: int):
        ctx = browser.new_context(viewport={"width": width, "height": height}, locale="en-US")
        contexts.append(ctx)
        return ctx.new_page()

    fac = context(1440, 900)
    fac.goto(server.url + "/w/new/")
    fac.locator('input[name=scenario][value="zombie-fencing"]').check()
    fac.locator("#create-room").click()
    fac.wait_for_url(re.compile(r"/w/[A-Z0-9]{6}/board/$"))
    code = fac.locator("#room-code").inner_text()
    fac.wait_for_selector("#ws-status[data-state=open]")
    ada = context(1440, 900)
    ada.goto(server.url + f"/w/?code={code}")
    ada.fill("input[name=name]", "Ada")
    ada.locator("form.join-form button.primary").click()
    ada.wait_for_url(re.compile(r"/s/[^/]+/$"))
    ada.wait_for_selector("#ws-status[data-state=open]")
    fac.locator("#follow-toggle").click()
    fac.wait_for_selector("#present-mine")
    ada.wait_for_selector(".follow-panel iframe[src]")
    follow = ada.frame_locator(".follow-panel iframe")
    follow.locator("#ws-status[data-state=open]").wait_for()

    # Beside: the whole height on the right, Ada's own session (bar, slider, panels) entirely on its left.
    panel = _box(ada, "#follow-panel")
    assert panel["y"] == 0 and panel["height"] == 900 and 500 <= panel["width"] <= 640
    assert panel["x"] + panel["width"] == 1440
    own_right = ada.evaluate(
        "() => Math.max(...[...document.querySelectorAll('header.topbar, #timebar, .roombar, main .panel')]"
        ".map((p) => p.getBoundingClientRect().right))"
    )
    assert own_right <= panel["x"] + 1
    assert ada.evaluate("() => document.documentElement.scrollWidth") <= 1440  # nothing pushed off to the side
    # Ada's exercise and story first in her own first column, her logs beside them
    assert _box(ada, ".a-narr")["x"] < _box(ada, ".a-logs")["x"]
    # in the frame, one column: the facilitator's logs first, then the story
    assert follow.locator(".a-logs").bounding_box()["y"] < follow.locator(".a-narr").bounding_box()["y"]
    assert re.fullmatch(r"step 0 / \d+", ada.locator("#follow-step").inner_text())

    # The facilitator steps: the panel's bar says where their session is.
    own = fac.context.new_page()
    own.goto(server.url + fac.locator("#open-mine").get_attribute("href"))
    own.wait_for_selector("#ws-status[data-state=open]")
    _step(own, 2)
    ada.wait_for_function("() => document.getElementById('follow-step').textContent.startsWith('step 2 / ')")
    shot(ada, "follow-me-beside-1440x900", full_page=False)

    # Folded: its bar alone, at the bottom; Ada's own session takes the whole width again.
    ada.locator("#follow-fold").click()
    ada.wait_for_function("() => document.getElementById('follow-panel').getBoundingClientRect().height < 60")
    assert _box(ada, "#follow-panel")["y"] + _box(ada, "#follow-panel")["height"] == 900
    assert _box(ada, "header.topbar")["width"] == 1440
    ada.locator("#follow-fold").click()
    ada.wait_for_function("() => document.getElementById('follow-panel').getBoundingClientRect().height === 900")

    # Below 1440 px it docks below again, across the width.
    ada.set_viewport_size({"width": 1280, "height": 720})
    ada.wait_for_function("() => document.getElementById('follow-panel').getBoundingClientRect().width === 1280")
    panel = _box(ada, "#follow-panel")
    assert panel["y"] > 360 and panel["y"] + panel["height"] == 720
    shot(ada, "follow-me-below-1280x720", full_page=False)
    for ctx in contexts:
        ctx.close()
