"""The tap's live page in Chromium (issue 34): behind the inspector's key, fed the report file a tap writes (a real
report: two confluent-kafka producers sharing `pay` through the tap), it draws the actors, the instances and the
fence, and follows the file as the tap writes it again (htmx polling), within the Content-Security-Policy. The
screenshots (1280x720, en and zh) go to test-artifacts/."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

import pytest

from playground.deploy import procs

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.browser]

KEY = secrets.token_urlsafe(18)
REPORT = Path(__file__).resolve().parents[1] / "web" / "data" / "tap-report.json"


@pytest.fixture(scope="module")
def tap_server(tmp_path_factory):
    work = tmp_path_factory.mktemp("tap-page-server")
    report = json.loads(REPORT.read_text())
    report["tap"]["reported_ms"] = int(time.time() * 1000)
    (work / "tap.json").write_text(json.dumps(report))
    env = procs.django_env(work / "db.sqlite3", "", DJANGO_DEBUG="0", KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:9",
                           INSPECTOR_KEY=KEY, PLAYGROUND_TAP_REPORT=str(work / "tap.json"))  # fmt: skip
    procs.migrate(env)
    proc = procs.start_daphne(env, work)
    yield proc, work / "tap.json", report
    proc.stop()


def test_it_shows_the_taps_actors_and_fence_and_follows_its_report(browser, tap_server):
    server, path, _report = tap_server
    for lang, locale in (("en", "en-US"), ("zh", "zh-CN")):
        context = browser.new_context(viewport={"width": 1280, "height": 720}, locale=locale)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
        page.goto(server.url + "/inspect/tap/")
        page.fill("#inspect-key", KEY)
        page.click("#inspect-key-form button")
        page.goto(server.url + "/inspect/tap/")
        page.wait_for_selector("article.tapactor.fenced")
        assert page.locator("article.tapactor").count() == len(json.loads(path.read_text())["connections"])
        assert page.locator("ol.taptimeline li.tapfence").count() == 1
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"tap-page-{lang}.png"))
        if lang == "en":
            # the tap writes its report again: a new connection appears without a reload
            again = json.loads(path.read_text())
            extra = {**again["connections"][0], "connection": 99, "client_id": "late-comer", "closed_ms": None}
            again["connections"].append(extra)
            again["tap"]["reported_ms"] = int(time.time() * 1000)
            path.write_text(json.dumps(again))
            page.wait_for_selector('article.tapactor[data-connection="99"]')
        context.close()
        assert not errors, errors
