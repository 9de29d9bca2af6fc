"""Nonsense in any form field: a 4xx with a message, never a 500, never a changed session (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from playground import session
from playground.models import Session

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
FUZZ = hsettings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


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
@given(sid=st.text(min_size=1, max_size=40).filter(lambda s: "/" not in s and "\x00" not in s))
def test_it_answers_404_for_sessions_that_do_not_exist(client, sid, db):
    from urllib.parse import quote

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
