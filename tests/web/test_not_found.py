"""A wrong link under DEBUG (`make run`) shows the site's own 404 page in the visitor's language, not Django's debug
page (playground/web/notfound.py); with DEBUG off, Django's handler404 shows the same page."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("debug", [True, False])
def test_it_shows_the_sites_own_404_page_for_an_address_nothing_is_at(client, settings, debug):
    settings.DEBUG = debug
    r = client.get("/no/such/page/")
    html = r.content.decode()
    assert r.status_code == 404
    assert "Nothing is at this address." in html and 'class="topbar"' in html
    assert "Using the URLconf" not in html and "technical_404" not in html and "urlpatterns" not in html


def test_it_shows_a_views_own_404_sentence_on_the_sites_page_under_debug(client, settings):
    settings.DEBUG = True
    r = client.get("/s/nope/")
    html = r.content.decode()
    assert r.status_code == 404 and 'class="topbar"' in html
    assert "Using the URLconf" not in html and "Raised by:" not in html


def test_it_says_not_found_in_chinese_under_debug(client, settings):
    settings.DEBUG = True
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    r = client.get("/no/such/page/")
    assert r.status_code == 404 and "这个地址上什么也没有。" in r.content.decode()


def test_it_still_adds_the_missing_slash_under_debug(client, settings):
    settings.DEBUG = True
    r = client.get("/editor")
    assert r.status_code == 301 and r["Location"] == "/editor/"
