"""The connect panel and its neighbours (issue 33): the command log numbers its rows as the header counts steps (what
connected clients did is a step, the listener opening is not), the bootstrap address breaks between its host:port
pairs and never inside one, and a fence a connected client was answered is said as its application was told it, in
its own client library's words (librdkafka's _FENCED, kafka-clients' exceptions), not as the broker's error code."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string

from playground.scenario.anomalies import Checker
from playground.simserver.clients import told_of

from .test_listener import _listeners, listen  # noqa: F401  (the fixture closes the test's listeners)

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_it_says_a_fence_in_each_client_librarys_words():
    assert told_of("librdkafka", "EndTxn", "INVALID_PRODUCER_EPOCH") == "_FENCED"
    assert told_of("librdkafka", "Produce", "INVALID_PRODUCER_EPOCH") == "_FENCED"
    assert told_of("java", "EndTxn", "INVALID_PRODUCER_EPOCH") == "ProducerFencedException"
    assert told_of("java", "AddPartitionsToTxn", "PRODUCER_FENCED") == "ProducerFencedException"
    assert told_of("java", "Produce", "INVALID_PRODUCER_EPOCH") == "InvalidProducerEpochException"
    assert told_of("java", "TxnOffsetCommit", "INVALID_PRODUCER_EPOCH", ("apache-kafka-java", "3.9.1")) == (
        "ProducerFencedException"
    )
    assert told_of("java", "TxnOffsetCommit", "INVALID_PRODUCER_EPOCH", ("apache-kafka-java", "3.5.2")) == (
        "InvalidProducerEpochException"
    )


def _fenced_commit(client: str, told: str) -> str:
    """A connected client's transaction: a send acknowledged, then its EndTxn answered INVALID_PRODUCER_EPOCH. The
    session's own profile is librdkafka; the client's step names its own library."""
    checker = Checker()
    checker.add_log(
        "orders-0",
        [
            {"offset": 0, "value": "z", "producer": 0, "transactional": True},
            {"offset": 1, "producer": 0, "control": "ABORT"},
        ],
    )
    base = {"actor": "pay", "client": client}
    checker.add_step({**base, "n": 0, "action": "begin_transaction", "args": {}, "outcome": "ok"})  # type: ignore[typeddict-item]
    checker.add_step(
        {**base, "n": 1, "action": "produce", "args": {"topic": "orders", "value": "z"}, "outcome": "ok"}  # type: ignore[typeddict-item]
    )
    step = {**base, "n": 2, "action": "commit_transaction", "args": {}, "outcome": "INVALID_PRODUCER_EPOCH"}
    checker.add_step({**step, "told": told})  # type: ignore[typeddict-item]
    (found,) = [f for f in checker.findings() if f.rule == "aborted-told"]
    return found.text


def test_an_aborted_told_finding_names_what_the_application_was_told_not_the_brokers_answer():
    librdkafka = _fenced_commit("librdkafka", "_FENCED")
    assert "commit_transaction() returned _FENCED" in librdkafka and "INVALID_PRODUCER_EPOCH" not in librdkafka
    java = _fenced_commit("java", "ProducerFencedException")
    assert "commitTransaction() threw ProducerFencedException" in java and "INVALID_PRODUCER_EPOCH" not in java


def test_the_address_breaks_between_host_port_pairs_never_inside_one():
    addresses = ["127.0.0.1:45903", "127.0.0.1:34355", "127.0.0.1:32799"]
    p = {
        "listening": True,
        "available": True,
        "bootstrap": ",".join(addresses),
        "addresses": addresses,
        "clients": [],
        "connected": 0,
    }
    html = render_to_string("playground/panels/connect.html", {"p": p, "u": {}, "drives": True})
    code = re.search(r'<code id="bootstrap-servers">(.*?)</code>', html).group(1)
    assert code == ",<wbr>".join(f'<span class="hp">{a}</span>' for a in addresses)
    css = (__import__("pathlib").Path(__file__).resolve().parents[2] / "static/css/playground.css").read_text()
    assert ".connect .addr .hp { white-space: nowrap; }" in css
    assert "break-all" not in re.search(r"\.connect \.addr code \{[^}]*\}", css).group(0)


def test_the_command_log_numbers_its_rows_as_the_header_counts_steps_and_the_listener_is_not_one(client, sim_session):
    sid = sim_session.id
    assert client.post(f"/s/{sid}/add-producer/", {"mode": "new"}).status_code == 204
    listen(client, sid)  # an entry of the log, not a step: it belongs to step 1
    assert client.post(f"/s/{sid}/add-producer/", {"mode": "plain"}).status_code == 204
    page = client.get(f"/s/{sid}/").content.decode()
    assert re.search(r'class="cursor" data-step="2">2<', page), "the header counts two steps"
    mine = re.search(r'<ol class="mine">(.*?)</ol>', page, re.S).group(1)
    numbers = re.findall(r'<span class="k" title="[^"]*">([^<]*)</span>', mine)
    assert numbers == ["1", "·", "2"], mine
    assert "not a step" in mine
