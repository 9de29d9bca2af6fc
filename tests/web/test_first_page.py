"""What a session's first page carries (tools/bench/web.py measures its bytes): compressed for a browser that
accepts it, and nothing a viewer has not asked for yet."""

from __future__ import annotations

import gzip

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def _session_page(c: Client, **headers: str):
    r = c.post("/new/", {"scenario": "zombie-fencing"})
    assert r.status_code == 302
    return c.get(r["Location"], **headers)


def test_it_sends_a_session_page_gzip_compressed_to_a_browser_that_accepts_it():
    c = Client()
    packed = _session_page(c, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert packed.status_code == 200 and packed["Content-Encoding"] == "gzip"
    html = gzip.decompress(packed.content)
    assert b'id="p-producers"' in html and len(packed.content) < len(html) / 3
    plain = _session_page(c)  # a client that does not say it accepts gzip gets the page as it is
    assert not plain.has_header("Content-Encoding") and b'id="p-producers"' in plain.content
