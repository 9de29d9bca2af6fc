"""The tap's live page (/inspect/tap/, issue 34) behind the inspector's key: fed a report `manage.py tap` wrote (a
real one: two confluent-kafka producers sharing `pay` through the tap in front of the served simulator), it draws the
connections as actors, the transactional id's instances and the fence on a timeline, polls itself again, and says
when the tap has stopped reporting; without the key every route is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from playground.web import inspectpage

REPORT = Path(__file__).parent / "data" / "tap-report.json"
KEY = "k" * 40


@pytest.fixture
def fed(settings, tmp_path):
    report = json.loads(REPORT.read_text())
    path = tmp_path / "tap.json"
    path.write_text(json.dumps(report))
    settings.INSPECTOR_KEY = KEY
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:9"
    settings.PLAYGROUND_TAP_REPORT = str(path)
    return path, report


def keyed() -> Client:
    c = Client()
    c.cookies[inspectpage.COOKIE] = inspectpage.cookie_value()
    return c


def test_it_refuses_the_page_and_its_fragment_without_the_inspectors_key(fed, db):
    assert Client().get("/inspect/tap/").status_code == 403
    assert Client().get("/inspect/tap/live/").status_code == 403
    wrong = Client()
    wrong.cookies[inspectpage.COOKIE] = "x" * 40
    assert wrong.get("/inspect/tap/live/").status_code == 403


def test_it_draws_the_connections_the_transactional_ids_instances_and_the_fence(fed, db, monkeypatch):
    path, report = fed
    page = keyed().get("/inspect/tap/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'hx-get="/inspect/tap/live/"' in html and 'hx-trigger="every 2s"' in html
    for c in report["connections"]:
        assert f'data-connection="{c["connection"]}"' in html
        assert c["client"] in html
    assert "confluent-kafka-python 2.16.1-rdkafka-2.16.0" in html
    (fence,) = [f for f in report["findings"] if f["finding"] == "fence"]
    fenced_conn = fence["fenced"]["connections"][0]
    assert f'class="tapactor fenced" data-connection="{fenced_conn}"' in html.replace(" closed", "")
    assert '<code>pay</code> <span class="badge tone-bad">2 instances</span>' in html
    assert fence["next_error"]["error"] in html and "monitoring" in html and "payment-service" in html
    assert 'href="/s/Ab3dEf6hIj9kLm2nOp5qRs/"' in html
    assert "has the tap stopped?" in html  # the fed report is old: the tap is not reporting any more

    # the fragment follows the file: a fresher report, no warning; no file, the page says so
    import time

    report["tap"]["reported_ms"] = int(time.time() * 1000)
    report["connections"] = report["connections"][:1]
    path.write_text(json.dumps(report))
    live = keyed().get("/inspect/tap/live/").content.decode()
    assert live.startswith('<div id="tap-live"') and "has the tap stopped?" not in live
    assert live.count('class="tapactor') == 1
    path.unlink()
    assert "has not written" in keyed().get("/inspect/tap/live/").content.decode()


def test_it_withholds_transactional_ids_outside_the_inspectors_allow_list(fed, db, settings):
    settings.INSPECTOR_TRANSACTIONAL_IDS = ["orders-*"]
    html = keyed().get("/inspect/tap/").content.decode()
    assert "<code>pay</code>" not in html and "1 withheld" in html
    assert "No fence seen" in html


def test_it_says_everything_on_the_chinese_tap_page_in_chinese_but_kafkas_names_and_the_clients(fed, db, settings):
    from . import zhrule
    from .test_zh_pages import _no_english

    path, report = fed
    c = keyed()
    c.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    # the clients' own words: their client.ids, software and addresses, as they sent them
    said = zhrule.Authored()
    for conn in report["connections"]:
        said |= zhrule.authored(json.dumps({"zh": [conn["client_id"], conn["client"]]}))
    page = c.get("/inspect/tap/")
    assert page.status_code == 200 and "连接" in page.content.decode()
    path.unlink()
    empty = c.get("/inspect/tap/live/")
    _no_english({"tap page": (page.content.decode(), said), "no report": (empty.content.decode(), said)})
