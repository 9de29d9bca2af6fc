"""The door of playground/web/badinput.py as production meets it: real requests at a real Daphne (Django's ASGI
request, not the test client's WSGI one), whose database is SQLite, or PostgreSQL when the web tests run on it
(PLAYGROUND_TEST_DATABASE=postgres), where a NUL that reached a query was a 500."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from playground.deploy import procs

from .http import Browserish
from .test_fuzz import PARAMETER, ROUTES


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("badinput-daphne")
    env = procs.django_env(work / "db.sqlite3", "", DJANGO_DEBUG="0")
    procs.migrate(env)
    proc = procs.start_daphne(env, work)
    yield proc
    proc.stop()


def test_it_answers_a_nul_in_any_id_with_a_400_saying_so(server):
    c = Browserish(server.url)
    answers = {}
    for route in (r for r in ROUTES if PARAMETER.search(r)):
        url = "/" + PARAMETER.sub("A%00", route)
        answers[url] = c.get(url)
    wrong = {url: a for url, a in answers.items() if a[0] != 400 or "NUL" not in a[1]}
    assert wrong == {} and len(answers) > 20


def test_it_answers_a_nul_in_a_parameter_in_the_visitors_language(server):
    c = Browserish(server.url, {"Accept-Language": "zh-CN"})
    assert c.get(f"/editor/?sc={quote(chr(0))}") == (400, "`sc`：地址参数中不允许出现 NUL 字符（%00）。")


@pytest.mark.parametrize("charset", ["utf-16", "latin-1", "bogus"])
def test_it_answers_a_form_in_another_charset_with_a_400_saying_so(server, charset):
    c = Browserish(server.url)
    c.csrf()  # the CSRF cookie, as the attacker had: its check reads the body
    content_type = f"application/x-www-form-urlencoded; charset={charset}"
    status, body, _headers = c.post("/new/", {"scenario": ""}, headers={"Content-Type": content_type})
    assert (status, body) == (
        400,
        f"Content-Type: charset={charset} is not read here: send forms in UTF-8 (charset=utf-8, or no charset).",
    )
