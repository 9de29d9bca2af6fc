"""The tap's live page reads what a tap published in the database (`manage.py tap --publish NAME`, models.TapReport),
so that it shows a tap running on any host: the latest published tap, or the one `?tap=` names, with its fragment
polling that one; a tap's file on this host still comes first when no tap is named."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from django.test import Client

from playground.models import TapReport
from playground.web import inspectpage

REPORT = Path(__file__).parent / "data" / "tap-report.json"
KEY = "k" * 40
pytestmark = pytest.mark.django_db


@pytest.fixture
def keyed(settings) -> Client:
    settings.INSPECTOR_KEY = KEY
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:9"
    settings.PLAYGROUND_TAP_REPORT = ""
    c = Client()
    c.cookies[inspectpage.COOKIE] = inspectpage.cookie_value()
    return c


def report_of(upstream: str, clients: int) -> dict:
    report = json.loads(REPORT.read_text())
    report["tap"]["upstream"] = upstream
    report["tap"]["reported_ms"] = int(time.time() * 1000)
    report["connections"] = report["connections"][:clients]
    return report


def test_it_says_how_to_start_a_tap_when_none_has_reported(keyed):
    html = keyed.get("/inspect/tap/").content.decode()
    assert "No tap has reported" in html and "manage.py tap --publish" in html


def test_it_shows_the_latest_published_tap_and_the_one_named(keyed):
    TapReport.publish("billing", report_of("billing-kafka:9092", 1))
    TapReport.publish("payments", report_of("payments-kafka:9092", 2))
    html = keyed.get("/inspect/tap/").content.decode()
    assert "<code>payments-kafka:9092</code>" in html and html.count('class="tapactor') == 2
    assert 'hx-get="/inspect/tap/live/?tap=payments"' in html
    assert 'href="?tap=billing"' in html and 'href="?tap=payments" aria-current="page"' in html
    live = keyed.get("/inspect/tap/live/?tap=billing").content.decode()
    assert "<code>billing-kafka:9092</code>" in live and live.count('class="tapactor') == 1
    assert 'hx-get="/inspect/tap/live/?tap=billing"' in live
    assert "has the tap stopped?" not in live
    # a name no tap published: the latest one; a NUL in it, refused by name (PostgreSQL could not compare it)
    assert "<code>payments-kafka:9092</code>" in keyed.get("/inspect/tap/?tap=nobody").content.decode()
    refused = keyed.get("/inspect/tap/?tap=%00nobody")
    assert refused.status_code == 400 and "tap:" in refused.content.decode()


def test_it_shows_this_hosts_file_first_when_no_tap_is_named(keyed, settings, tmp_path):
    TapReport.publish("payments", report_of("payments-kafka:9092", 2))
    path = tmp_path / "tap.json"
    path.write_text(json.dumps(report_of("local-kafka:9092", 1)))
    settings.PLAYGROUND_TAP_REPORT = str(path)
    html = keyed.get("/inspect/tap/").content.decode()
    assert "<code>local-kafka:9092</code>" in html and 'href="?tap=payments"' in html
    assert "<code>payments-kafka:9092</code>" in keyed.get("/inspect/tap/?tap=payments").content.decode()


def test_it_refuses_a_published_tap_without_the_inspectors_key(keyed):
    TapReport.publish("payments", report_of("payments-kafka:9092", 2))
    assert Client().get("/inspect/tap/?tap=payments").status_code == 403
    assert Client().get("/inspect/tap/live/?tap=payments").status_code == 403
