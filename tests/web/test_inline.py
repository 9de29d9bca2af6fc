"""Django's middleware on the event loop (playground/deploy/inline.py): under ASGI, no middleware method of a request
goes through a thread hop; a command's capability check reads the session's drive key once per process."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from playground.deploy import inline
from playground.session import capability, store

pytestmark = pytest.mark.django_db(transaction=True)


async def test_it_runs_every_middleware_of_a_request_on_the_event_loop(hops):
    from django.test import AsyncClient

    import playground.asgi  # noqa: F401  (what Daphne imports: it sets the middleware's async path)

    hops.clear()
    response = await AsyncClient().get("/healthz")
    assert response.status_code == 200
    # the view (a sync one) and Django's own signals still hop; CSRF's process_view is adapted by Django's handler;
    # "ok" is too short for GZip to compress: it does not go to GZip's thread either
    middleware = [n for n in hops if "Middleware" in n and not n.endswith("process_view")]
    assert middleware == []
    assert any(n == "healthz" for n in hops)
    # and they still did their work
    assert response.headers["X-Frame-Options"] == "DENY" and response.headers["X-Content-Type-Options"] == "nosniff"


async def test_it_compresses_a_page_in_gzips_thread(hops):
    from django.test import AsyncClient

    import playground.asgi  # noqa: F401

    hops.clear()
    response = await AsyncClient().get("/", headers={"Accept-Encoding": "gzip"})
    assert response.status_code == 200 and response.headers["Content-Encoding"] == "gzip"
    # zlib releases the GIL: the page is compressed beside the event loop
    assert [n for n in hops if "Middleware" in n and not n.endswith("process_view")] == [
        "GZipMiddleware.process_response"
    ]


async def test_it_checks_a_short_form_for_a_nul_on_the_event_loop_and_a_long_one_in_a_thread(hops):
    from django.test import AsyncClient

    import playground.asgi  # noqa: F401

    hops.clear()
    short = await AsyncClient().post("/editor/check/", {"text": "format: 1\n"})
    assert short.status_code == 200 and "refusal_of" not in hops
    long = await AsyncClient().post("/editor/check/", {"text": "format: 1\n" + "# a comment\n" * 400})
    assert long.status_code == 200 and "refusal_of" in hops  # ~5 KB: read beside the event loop


async def test_it_answers_a_refused_request_under_asgi_too(hops):
    from django.test import AsyncClient

    import playground.asgi  # noqa: F401

    hops.clear()
    response = await AsyncClient().get("/s/%00/")
    assert response.status_code == 400 and b"NUL" in response.content
    assert "answer" in hops and response.headers["X-Frame-Options"] == "DENY"  # the rest of the chain answered it


def test_it_leaves_the_sync_path_to_django():
    from django.middleware.security import SecurityMiddleware
    from django.utils.deprecation import MiddlewareMixin

    inline.run_djangos_inline()
    assert SecurityMiddleware.__call__ is MiddlewareMixin.__call__  # the test client's and runserver's path
    response = Client().get("/healthz")
    assert response.headers["X-Frame-Options"] == "DENY" and response.headers["X-Content-Type-Options"] == "nosniff"


def test_it_reads_a_sessions_drive_key_once_per_process():
    r = Client().post("/new/", {"scenario": "zombie-fencing"})
    sid = r["Location"].rstrip("/").rsplit("/", 1)[-1]
    store._kept_drive_key.cache_clear()
    with CaptureQueriesContext(connection) as first:
        digest = store.drive_key_of(sid)
    with CaptureQueriesContext(connection) as again:
        assert store.drive_key_of(sid) == digest
    assert len(first) == 1 and len(again) == 0
    assert digest == capability.digest(r.cookies[capability.cookie_name(sid)].value)


def test_it_still_answers_404_for_no_such_session():
    kept = store._kept_drive_key.cache_info().currsize
    with pytest.raises(store.CommandError) as raised:
        store.drive_key_of("no-such-session")
    assert raised.value.status == 404
    assert store._kept_drive_key.cache_info().currsize == kept  # "no-such-session" is not kept


def test_it_reads_the_drive_key_a_page_checks_once_per_process_too():
    client = Client()
    r = client.post("/new/", {"scenario": "zombie-fencing"})
    page = r["Location"]
    assert client.get(page).status_code == 200
    with CaptureQueriesContext(connection) as again:
        response = client.get(page)
    assert not [q["sql"] for q in again if '"drive_key"' in q["sql"]]
    # and it still tells the driver from a watcher
    assert b" watch" not in _body_class(response.content)
    assert b" watch" in _body_class(Client().get(page).content)
    assert store.drive_key("no-such-session") == ""


def _body_class(html: bytes) -> bytes:
    return html.split(b"<body", 1)[1].split(b">", 1)[0]
