"""Browser tests: Playwright's sync API driving Debian's Chromium (/usr/bin/chromium, never a downloaded build)
against a Daphne server on a free port, on the simulator. A missing Chromium is a failure, not a skip."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from playground.deploy import procs

CHROMIUM = os.environ.get("PLAYGROUND_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = procs.ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("browser-server")
    # one client (127.0.0.1) starts every test's sessions: at its own pace the suite passed the 10 a minute a person
    # gets (a 429 on a POST /new/, and the test waited for a page that never came)
    env = procs.django_env(work / "db.sqlite3", "", PLAYGROUND_RUN_STEP_MS="150", DJANGO_DEBUG="0",
                           PLAYGROUND_LIMITS="sessions_per_minute=1000")  # fmt: skip
    procs.migrate(env)
    proc = procs.start_daphne(env, work)
    yield proc
    proc.stop()


@pytest.fixture(autouse=True)
def no_server_errors(request):
    """A browser test fails when the server answered anything with a 500 meanwhile: the page may look as if it only
    waited (a 500 on a navigation leaves the test waiting for a page that never comes), the log says why."""
    if "server" not in request.fixturenames:
        yield
        return
    log = request.getfixturevalue("server").log
    start = log.stat().st_size
    yield
    with log.open("rb") as f:
        f.seek(start)
        new = f.read().decode("utf-8", "replace")
    assert "Internal Server Error" not in new and "Traceback" not in new, (
        f"the server failed during the test:\n{new[-4000:]}"
    )


# Every page and frame of every context reports what the Content-Security-Policy refused (a blocked script or
# style, a connection elsewhere): the pages must pass the policy they are served with (playground/deploy/headers.py).
CSP_WATCH = """
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolation(e.violatedDirective + " refused " + (e.blockedURI || "inline") + " on " + location.pathname
                        + (e.sample ? " (" + e.sample + ")" : ""));
});
"""


# How long any wait of a browser test may take before it fails: make test runs these beside the real clusters' stages
# and franz-go's, on a 2-core machine, where a page's websocket or a room's move can take many seconds. Every wait is
# for a condition, so a generous cap costs nothing when things go well (a test sets no tighter cap of its own).
PATIENCE_MS = 60_000


class WatchedBrowser:
    """The browser, with every context it makes watched for CSP violations (collected in `violations`)."""

    def __init__(self, browser) -> None:
        self._browser = browser
        self.violations: list[str] = []

    def new_context(self, **kwargs):
        context = self._browser.new_context(**kwargs)
        context.set_default_timeout(PATIENCE_MS)
        context.expose_binding("__cspViolation", lambda _source, text: self.violations.append(text))
        context.add_init_script(CSP_WATCH)
        return context

    def __getattr__(self, name):
        return getattr(self._browser, name)


@pytest.fixture(scope="session")
def browser():
    if not (os.path.exists(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(f"Chromium not found at {CHROMIUM}: `apt-get install -y chromium` (make test does it)")
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        expect.set_options(timeout=PATIENCE_MS)
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield WatchedBrowser(b)
        b.close()


@pytest.fixture(autouse=True)
def no_csp_violations(request):
    """A browser test fails when a page it opened broke the Content-Security-Policy."""
    if "browser" not in request.fixturenames and "page" not in request.fixturenames:
        yield
        return
    watched = request.getfixturevalue("browser")
    watched.violations.clear()
    yield
    assert not watched.violations, f"Content-Security-Policy violations: {watched.violations}"


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, locale="en-US")
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    ARTIFACTS.mkdir(exist_ok=True)
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        pg.screenshot(path=str(ARTIFACTS / f"FAILED-{request.node.name}.png"), full_page=True)
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def shot(page, name: str, full_page: bool = True) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
