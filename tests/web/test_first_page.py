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


async def _get_static(path: str, accept_encoding: str) -> tuple[dict[bytes, bytes], bytes]:
    from asgiref.testing import ApplicationCommunicator

    from playground.asgi import application

    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "headers": [(b"host", b"127.0.0.1"), (b"accept-encoding", accept_encoding.encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    app = ApplicationCommunicator(application, scope)
    await app.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await app.receive_output(timeout=10)
    headers = {k.lower(): v for k, v in start["headers"]}
    body = b""
    while True:
        message = await app.receive_output(timeout=10)
        body += message.get("body", b"")
        if not message.get("more_body"):
            return headers, body


async def test_it_serves_the_stylesheet_and_scripts_gzip_compressed_in_development_mode_too():
    """`make run` serves /static/ through Django's handler (production mode: WhiteNoise's .gz files): compressed too."""
    from pathlib import Path

    original = (Path(__file__).resolve().parents[2] / "static" / "css" / "playground.css").read_bytes()
    headers, packed = await _get_static("/static/css/playground.css", "gzip, deflate, br")
    assert headers[b"content-encoding"] == b"gzip" and gzip.decompress(packed) == original
    assert len(packed) < len(original) / 3
    headers, plain = await _get_static("/static/css/playground.css", "identity")
    assert b"content-encoding" not in headers and plain == original
