"""The Content-Security-Policy in a real browser: the pages pass it (every browser test checks the pages it opens:
conftest.py's no_csp_violations), and it does refuse what it is there to refuse."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_it_refuses_an_inline_script_that_got_into_a_page(page, server, browser):
    page.goto(server.url + "/")
    page.evaluate(
        """() => { const s = document.createElement("script"); s.textContent = "window.__ran = 1";
                   document.body.appendChild(s); }"""
    )
    page.wait_for_function("() => true")
    assert page.evaluate("() => window.__ran") is None
    deadline_polls = 50
    while not browser.violations and deadline_polls:
        page.wait_for_timeout(100)
        deadline_polls -= 1
    assert any("script-src" in v for v in browser.violations), browser.violations
    browser.violations.clear()  # the refusal this test asked for


def test_it_serves_every_page_with_the_policy_and_without_a_server_name(page, server):
    for path in ("/", "/editor/", "/w/", "/w/new/", "/inspect/"):
        response = page.goto(server.url + path)
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        assert "server" not in response.headers, (path, response.headers.get("server"))
