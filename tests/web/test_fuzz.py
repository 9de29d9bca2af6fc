"""Nonsense in any form field: a 4xx with a message, never a 500, never a changed session (hypothesis). And every
route of playground/urls.py and playground/routing.py, found by walking their resolvers (a new route is covered
without being listed here): a NUL in each id of the address, in each parameter and form field the views read, in a
header or a cookie, and a form in another charset than UTF-8, are each answered 400 naming what is wrong (a
websocket's handshake is closed with 4400), never a 5xx. `make test` runs this on PostgreSQL too
(PLAYGROUND_TEST_DATABASE=postgres), whose text cannot hold a NUL where SQLite's can."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote

import pytest
from channels.testing import WebsocketCommunicator
from django import forms as djforms
from django.test import Client
from django.urls import URLResolver, get_resolver
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from playground import rooms, session
from playground.asgi import application
from playground.models import Session
from playground.routing import websocket_urlpatterns
from playground.scenario import library

pytestmark = pytest.mark.django_db

ENDPOINTS = {
    "action": ["actor", "action", "consumer", "max"],
    "produce": ["actor", "topic", "partition", "key", "value", "await", "from"],
    "clock": ["seconds"],
    "broker": ["broker", "action"],
    "add-producer": ["mode", "transactional_id"],
    "add-consumer": ["isolation", "group"],
    "step": [],
    "back": [],
    "reset": [],
    "pause": [],
}
PLAUSIBLE = [
    "A",
    "B",
    "rc",
    "ru",
    "orders",
    "0",
    "2",
    "3",
    "-1",
    "99999999999999999999",
    "",
    " ",
    "true",
    "false",
    "init_transactions",
    "produce",
    "poll",
    "stop",
    "start",
    "share",
    "new",
    "plain",
    "read_committed",
    "txn-1",
    "x" * 5000,
    "\x00",
    "☃",
    "<script>",
    "1e3",
    "NaN",
    "null",
    "[]",
    "{}",
]
values = st.one_of(st.sampled_from(PLAUSIBLE), st.text(max_size=60))
FUZZ = hsettings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _prepared(sid):
    session.add_producer(sid, "new")  # A, transactional
    session.apply_step(sid, session.step_from_entry("A.init_transactions"))


@pytest.mark.parametrize("endpoint", sorted(ENDPOINTS))
def test_it_never_fails_with_a_500_on_any_form_input(client, free_session, endpoint):
    sid = free_session.id
    _prepared(sid)

    @FUZZ
    @given(
        data=st.dictionaries(st.sampled_from(ENDPOINTS[endpoint] + ["junk", "csrfmiddlewaretoken"]), values, max_size=8)
    )
    def check(data):
        before = Session.objects.get(pk=sid)
        r = client.post(f"/s/{sid}/{endpoint}/", data)
        assert r.status_code in (204, 400, 404, 409, 422, 429), (r.status_code, data)
        if r.status_code != 204:
            after = Session.objects.get(pk=sid)
            assert after.commands == before.commands and after.version == before.version, data
            assert r.content.strip(), "an error answer carries a message"

    check()


@FUZZ
@given(sid=st.text(min_size=1, max_size=40).filter(lambda s: "/" not in s))
def test_it_answers_404_for_sessions_that_do_not_exist(client, sid, db):
    r = client.post(f"/s/{quote(sid, safe='')}/action/", {"actor": "A", "action": "flush"})
    assert r.status_code in (400, 404)
    r = client.get(f"/s/{quote(sid, safe='')}/")
    assert r.status_code in (400, 404)


def test_it_names_the_bad_field(client, free_session):
    r = client.post(
        f"/s/{free_session.id}/produce/", {"actor": "A", "topic": "orders", "partition": "zero", "value": "v"}
    )
    assert r.status_code == 400
    assert "partition" in r.content.decode()


def test_it_refuses_get_on_commands(client, free_session):
    assert client.get(f"/s/{free_session.id}/step/").status_code == 405


def test_it_limits_value_size_with_a_clear_message(client, free_session, settings):
    settings.PLAYGROUND_LIMITS = {"value_bytes": 16}
    sid = free_session.id
    session.add_producer(sid, "plain")
    r = client.post(f"/s/{sid}/produce/", {"actor": "A", "topic": "orders", "value": "x" * 17})
    assert r.status_code == 400
    assert "at most 16 bytes" in r.content.decode()


def test_it_limits_sessions_per_client_per_minute(client, settings):
    settings.PLAYGROUND_LIMITS = {"sessions_per_minute": 3}
    codes = [client.post("/new/", {"scenario": ""}).status_code for _ in range(4)]
    assert codes == [302, 302, 302, 429]
    r = client.post("/new/", {"scenario": ""})
    assert "last minute" in r.content.decode()
    assert Session.objects.count() == 3


def test_it_refuses_an_unknown_scenario(client):
    r = client.post("/new/", {"scenario": "no-such-thing"})
    assert r.status_code == 404


# ------------------------------------------------------------------------- every route: a NUL, a bad charset
def _walk(patterns, prefix=""):
    """Every route of the resolver, includes followed: "s/<str:sid>/cell/", ..."""
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _walk(p.url_patterns, prefix + str(p.pattern))
        else:
            yield prefix + str(p.pattern)


PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")
ROUTES = sorted(set(_walk(get_resolver().url_patterns)))
WEBSOCKET_ROUTES = sorted(str(p.pattern) for p in websocket_urlpatterns)


def _form_fields() -> set[str]:
    """Every field of every form of ours (playground.web's, the inspector's)."""
    found, todo = set(), [djforms.Form]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("playground."):
            found.update(cls.base_fields)
    return found


READ = re.compile(r"""(?:GET|POST)(?:\.get|\.getlist)?(?:\(|\[)\s*f?"([\w-]+)"|"([\w-]+)" in request\.(?:GET|POST)""")


def _names_read() -> list[str]:
    """The parameters and form fields the views read: every form's fields, and every name read straight from
    request.GET or request.POST in the web layer's source; and one nobody reads."""
    names = _form_fields() | {"junk"}
    for path in (Path(__file__).resolve().parents[2] / "playground" / "web").glob("*.py"):
        names.update(a or b for a, b in READ.findall(path.read_text(encoding="utf-8")))
    return sorted(names)


NAMES = _names_read()
TOKEN = "a" * 32  # the CSRF cookie's secret; sent back as X-CSRFToken, as the pages' scripts do
CHARSETS = ("bogus", "utf-16", "latin-1", "rot13", "utf-8-sig", "x" * 300)
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data; boundary=BOUNDARY")


@pytest.fixture
def browser(db):
    """A browser that holds everything a route may ask for: the CSRF cookie (and the check enforced, as in
    production), a session it drives, a room it runs, a shared scenario; and the ids of those, by parameter name."""
    c = Client(enforce_csrf_checks=True, raise_request_exception=False, HTTP_X_CSRFTOKEN=TOKEN)
    c.cookies["csrftoken"] = TOKEN
    row = session.create(None, backend="fake")
    c.cookies[session.capability.cookie_name(row.id)] = row.drive_secret
    room, secret = rooms.create("T", ["zombie-fencing"])
    c.cookies[rooms.cookie_names(room.pk)[0]] = secret
    entry = library.find("zombie-fencing")
    text = session.keep_text(entry.scenario.source, entry.scenario.id, client="", shared=True)
    ids = {"sid": row.id, "text_id": text.id, "code": room.code}
    # a partition of the session, a record, a language of the scripts' catalogue
    return c, {**ids, "tp": "orders-0", "offset": "0", "part": "value", "lang": "zh-hans"}


def _url(route: str, ids: dict[str, str], nul_in: str = "") -> str:
    def value(m: re.Match) -> str:
        name = m.group(1)
        assert name in ids, f"a route takes <{name}>: give the browser fixture a real {name} to reach it with"
        return "A%00" if name == nul_in else quote(ids[name], safe="")

    return "/" + PARAMETER.sub(value, route)


def _said(r) -> str:
    """The answer's sentence, however the route says it (the editor's check: JSON)."""
    text = r.content.decode()
    if r["Content-Type"].startswith("application/json"):
        return " ".join(f"{e['field']}: {e['message']}" for e in json.loads(text)["errors"])
    return text


def _refused(r, *words: str) -> str:
    """Nothing when `r` is a 400 whose sentence says each of `words`; else what it was instead."""
    said = _said(r) if r.status_code == 400 else ""
    missing = [w for w in words if w not in said]
    return "" if r.status_code == 400 and not missing else f"{r.status_code} (missing {missing}): {r.content[:160]!r}"


def _form(data: dict[str, str], content_type: str) -> bytes:
    if content_type.startswith("multipart/"):
        parts = [f'--BOUNDARY\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n' for k, v in data.items()]
        return ("".join(parts) + "--BOUNDARY--\r\n").encode("utf-8")
    return "&".join(f"{quote(k)}={quote(v)}" for k, v in data.items()).encode("utf-8")


@pytest.mark.parametrize("route", [r for r in ROUTES if PARAMETER.search(r)])
def test_it_answers_a_nul_in_any_id_of_the_address_with_a_400(browser, route):
    c, ids = browser
    wrong = {}
    for name in PARAMETER.findall(route):
        url = _url(route, ids, nul_in=name)
        for method in ("get", "post"):
            problem = _refused(getattr(c, method)(url), "NUL")
            if problem:
                wrong[f"{method.upper()} {url}"] = problem
    assert wrong == {}


@pytest.mark.parametrize("route", ROUTES)
def test_it_answers_a_nul_in_any_parameter_or_form_field_with_a_400_naming_it(browser, route):
    c, ids = browser
    url = _url(route, ids)
    wrong = {}
    for name in NAMES:
        for method, r in (
            ("GET", c.get(url, {name: "A\x00"})),
            ("POST ?", c.post(f"{url}?{quote(name)}=%00")),
            ("POST", c.post(url, {name: "A\x00"})),
            ("POST multipart", c.generic("POST", url, _form({name: "A\x00"}, FORM_TYPES[1]), FORM_TYPES[1])),
        ):
            problem = _refused(r, "NUL", name)
            if problem:
                wrong[f"{method} {url} {name}"] = problem
    assert wrong == {}


@pytest.mark.parametrize("route", ROUTES)
def test_it_answers_a_form_in_another_charset_than_utf8_with_a_400_naming_it(browser, route):
    c, ids = browser
    url = _url(route, ids)
    wrong = {}
    for charset in CHARSETS:
        for content_type in FORM_TYPES:
            body = _form({"csrfmiddlewaretoken": TOKEN, NAMES[0]: "1"}, content_type)
            r = c.generic("POST", url, body, f"{content_type}; charset={charset}")
            problem = _refused(r, "charset=")
            if problem:
                wrong[f"POST {url} {content_type} charset={charset}"] = problem
    assert wrong == {}


@pytest.mark.parametrize("route", ROUTES)
def test_it_answers_a_nul_in_a_header_or_a_cookie_with_a_400_naming_it(browser, route):
    c, ids = browser
    url = _url(route, ids)
    wrong = {}
    for header, meta in (
        ("Idempotency-Key", "HTTP_IDEMPOTENCY_KEY"),
        ("X-Forwarded-For", "HTTP_X_FORWARDED_FOR"),
        ("Hx-Request", "HTTP_HX_REQUEST"),
        ("Accept-Language", "HTTP_ACCEPT_LANGUAGE"),
    ):
        for method in ("get", "post"):
            if problem := _refused(getattr(c, method)(url, **{meta: "1.2.3.4\x00"}), "NUL", header):
                wrong[f"{method.upper()} {url} {header}"] = problem
    # a quoted cookie's \000 is a NUL once Django has read it
    for method in ("get", "post"):
        r = getattr(c, method)(url, HTTP_COOKIE=f'csrftoken={TOKEN}; drive_{ids["sid"]}="\\000"')
        if problem := _refused(r, "NUL", f"drive_{ids['sid']}"):
            wrong[f"{method.upper()} {url} cookie"] = problem
    assert wrong == {}


def test_it_says_what_is_wrong_in_the_visitors_language(browser, settings):
    c, ids = browser
    c.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    said = {
        "path": c.get(f"/s/{ids['sid']}%00/").content.decode(),
        "parameter": c.get(f"/s/{ids['sid']}/?at=%00").content.decode(),
        "field": c.post(f"/s/{ids['sid']}/produce/", {"topic": "\x00"}).content.decode(),
        "header": c.get("/", HTTP_IDEMPOTENCY_KEY="\x00").content.decode(),
        "charset": c.generic(
            "POST", "/new/", b"scenario=", "application/x-www-form-urlencoded; charset=latin-1"
        ).content.decode(),
    }
    assert all("NUL 字符" in text or "请以 UTF-8 发送表单" in text for text in said.values()), said
    assert said["parameter"].startswith("`at`：") and said["field"].startswith("`topic`：")


def test_it_shows_the_editor_its_problem_on_the_line_of_the_nul(browser):
    c, _ids = browser
    text = "format: 1\nid: x\ntitle: a\x00b\n"
    checked = c.post("/editor/check/", {"text": text})
    assert checked.status_code == 400
    assert checked.json()["ok"] is False
    [problem] = checked.json()["errors"]
    assert (problem["line"], problem["field"]) == (3, "text") and "NUL" in problem["message"]
    page = c.post("/editor/play/", {"text": text})
    assert page.status_code == 400 and "<textarea" in page.content.decode()
    assert "title: a\x00b" in page.content.decode() and "NUL" in page.content.decode()  # the text is not lost
    # and its form still plays: its CSRF token is the browser's (the refusal came after the CSRF cookie was read)
    token = re.search(r'name="csrfmiddlewaretoken" value="(\w+)"', page.content.decode()).group(1)
    plain = Client(enforce_csrf_checks=True)
    plain.cookies["csrftoken"] = TOKEN
    assert plain.post("/editor/check/", {"text": "format: 1\n", "csrfmiddlewaretoken": token}).status_code == 200


def test_it_reads_a_form_whose_charset_is_utf8_by_another_name(browser):
    c, _ids = browser
    for charset in ("utf8", "UTF-8", "utf_8"):
        r = c.generic(
            "POST", "/editor/check/", b"text=format%3A+1", f"application/x-www-form-urlencoded; charset={charset}"
        )
        assert r.status_code == 200 and r.json()["ok"] is False, (charset, r.content)


def test_it_answers_a_refused_host_with_a_400_whatever_the_body(browser, settings):
    """Behind https, SecurityMiddleware's redirect meets a Host not allowed before anything reads the body: the 400
    view must not read it (Django's own did, for its CSRF check, and a charset other than UTF-8 failed there)."""
    settings.SECURE_SSL_REDIRECT = True
    c, _ids = browser
    r = c.generic(
        "POST", "/new/", b"scenario=", "application/x-www-form-urlencoded; charset=utf-16", HTTP_HOST="x.example"
    )
    assert r.status_code == 400


@pytest.mark.parametrize("route", WEBSOCKET_ROUTES)
async def test_it_closes_a_websocket_with_a_nul_before_accepting(browser, route):
    _c, ids = browser
    ids = {**ids, "room": ids["code"]}
    where = {f"<{name}>": _url(route, ids, nul_in=name) for name in PARAMETER.findall(route)}
    where["query"] = _url(route, ids) + "?at=%00&lang=%00"
    where["header"] = _url(route, ids)
    wrong = {}
    for what, path in where.items():
        headers = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
        if what == "header":
            headers.append((b"cookie", b"csrftoken=\x00"))
        ws = WebsocketCommunicator(application, path, headers=headers)
        connected, code = await ws.connect()
        if connected or code != 4400:
            wrong[what] = (connected, code)
        await ws.disconnect()
    assert wrong == {}
