"""A Chinese page in Chromium at 1280x720: what the scripts write into it (the time slider's label, the toasts of a
copied link and of a server out of reach) comes from the page's catalogue in Chinese, under the page's
Content-Security-Policy, and the page as the browser holds it then shows no English (tests/web/zhrule.py)."""

from __future__ import annotations

import re

import pytest

from playground.scenario import library
from tests.web import zhrule

from .conftest import shot

pytestmark = pytest.mark.browser


def _steps(page, n: int) -> None:
    for _ in range(n):
        before = page.locator("#state-version").get_attribute("data-version")
        page.keyboard.press("n")
        page.wait_for_function(f"() => document.querySelector('#state-version').dataset.version !== '{before}'")


def test_it_says_the_scripts_words_in_chinese_on_a_chinese_page(browser, server):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720}, locale="zh-CN")
    ctx.add_cookies([{"name": "django_language", "value": "zh-hans", "url": server.url}])
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.url + "/")
    page.locator("[data-scenario=zombie-fencing] button", has_text="开始").click()
    page.wait_for_url(re.compile(r"/s/[^/]+/$"))
    page.wait_for_selector("#ws-status[data-state=open]")
    _steps(page, 4)
    assert page.locator("#scrub-label").inner_text() == "实时 · 第 4 步"
    page.keyboard.press("[")
    page.wait_for_selector('#ws-moment[data-at="3"]', state="attached")
    assert page.locator("#scrub-label").inner_text() == "正在查看第 3 步 · 实时：第 4 步"
    page.locator("summary", has_text="分享").click()
    page.locator("#copy-step-link").click()
    page.wait_for_function("() => document.getElementById('toast').classList.contains('show')")
    assert page.locator("#toast").inner_text().startswith("已复制：" + server.url)
    page.keyboard.press("Escape")
    shown = page.content()  # the page as the scripts left it: the toast, the label
    ctx.set_offline(True)
    page.locator("#p-header button[data-key=n]").click()
    page.wait_for_function("() => document.getElementById('toast').textContent === '无法连接服务器。'")
    ctx.set_offline(False)
    author = zhrule.authored(library.find("zombie-fencing").scenario.source)
    assert zhrule.english_on(shown, author) == []
    shot(page, "zh-session-1280x720", full_page=False)
    ctx.close()
    assert not errors, errors
