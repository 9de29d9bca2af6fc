"""The consumer groups panel (issue 31): two instances of an application's consumer, connected to a session with
confluent-kafka, share group billing; the panel lists both with their host and partitions, then the one that
closes leaves (LeaveGroup) and the other takes every partition in the next generation, each rebalance with its
cause. A scenario's transaction shows its offsets pending (TxnOffsetCommit before the marker) at the step before
its commit, on the time slider."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from confluent_kafka import Consumer

from playground import session
from playground.scenario import library

from .conftest import hold
from .test_listener import _listeners, listen, wait_for  # noqa: F401 - _listeners: autouse, stops them after each test

pytestmark = [pytest.mark.django_db(transaction=True)]


def _panel(page: str) -> str:
    text = html.unescape(re.sub(r"<[^>]+>", " ", page[page.index('id="p-groups"') : page.index('id="h-db"')]))
    return re.sub(r"\s+", " ", text)


def _page(client, sid: str) -> str:
    return _panel(client.get(f"/s/{sid}/").content.decode())


def _consumer(bootstrap: str, name: str) -> Consumer:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "billing",
            "client.id": name,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    c.subscribe(["orders"])
    return c


def test_it_shows_an_application_s_two_instances_their_partitions_and_the_rebalance_when_one_leaves(
    client, sim_session
):
    sid = sim_session.id
    bootstrap = listen(client, sid)
    one, two = _consumer(bootstrap, "billing-1"), _consumer(bootstrap, "billing-2")
    try:

        def both_assigned() -> bool:
            one.poll(0.2)
            two.poll(0.2)
            return len(one.assignment()) + len(two.assignment()) == 3 and bool(one.assignment() and two.assignment())

        wait_for(both_assigned, "both instances assigned orders' partitions")
        # the page as the listener has fed the session so far (its consumers never stop heartbeating: no quiet moment)
        panel = wait_for(
            lambda: (lambda text: text if "billing-2 joined" in text else None)(_page(client, sid)),
            "the page showing the rebalance",
        )
        assert "billing" in panel and "Stable" in panel
        assert "billing-1" in panel and "billing-2" in panel and "127.0.0.1" in panel
        assert all(tp in panel for tp in ("orders-0", "orders-1", "orders-2"))
        assert "billing-2 joined" in panel
        two.close()

        def one_has_all() -> bool:
            one.poll(0.2)
            return len(one.assignment()) == 3

        wait_for(one_has_all, "the remaining instance assigned every partition")
        wait_for(lambda: "billing-2 left (LeaveGroup)" in _page(client, sid), "the page showing billing-2's leave")
    finally:
        one.close()


def _through_sent_offsets(client, scenario_id: str) -> tuple[Any, list[Any], int]:
    """A session of the library scenario run through its first send_offsets_to_transaction: (row, steps, its index)."""
    entry = library.find(scenario_id)
    row = hold(client, session.create(entry.scenario, source=entry.scenario.source, backend="sim"))
    steps = list(entry.scenario.steps)
    sent = next(i for i, s in enumerate(steps) if s.action == "send_offsets_to_transaction")
    for _ in range(sent + 1):
        session.step(row.id)
    return row, steps, sent


def test_it_shows_a_transaction_s_offsets_pending_before_its_commit_and_committed_after(client):
    row, _steps, _sent = _through_sent_offsets(client, "consume-transform-produce")
    k = session.load(row.id).step_count  # the step the slider names this state by
    panel = _panel(client.get(f"/s/{row.id}/").content.decode())
    card = panel[panel.index("copier-eos") :]
    assert "3 (PID" in card  # input-0's offset 3, pending in the transaction
    assert "TxnOffsetCommit: PID 2 · generation 1 · eos-in → ok" in card  # its KIP-447 check passed
    session.step(row.id)  # commit_transaction: it returns at PrepareCommit, the markers land as time goes on
    for _ in range(4):
        session.step(row.id)
        later = _panel(client.get(f"/s/{row.id}/").content.decode())
        card = later[later.index("copier-eos") : later.index("copier-plain") if "copier-plain" in later else None]
        if "(PID" not in card:
            break
    assert "(PID" not in card and "input-0 eos-in 3 — 3 eos-in" in card  # committed 3, nothing pending
    # the time slider: the step before the commit shows it pending again
    moment = _panel(client.get(f"/s/{row.id}/?at={k}").content.decode())
    assert "3 (PID" in moment[moment.index("copier-eos") :]


def test_it_shows_who_must_rejoin_a_rebalance_during_a_transaction_and_its_offsets_accepted_meanwhile(client):
    row, steps, sent = _through_sent_offsets(client, "rebalance-during-transaction")
    panel = _panel(client.get(f"/s/{row.id}/").content.decode())
    card = panel[panel.index("PreparingRebalance") :]
    assert "generation 1" in card
    assert re.search(r"billing-a .*orders-0 orders-1 rejoins at its next poll", card), card
    assert re.search(r"billing-b .*— waits for the others", card), card
    assert "generation 1 · billing-a ( billing-a ) → ok" in card  # the transaction's offsets, of generation 1
    rejoined = next(i for i, s in enumerate(steps) if i > sent and s.actor == "billing-a" and s.action == "poll")
    for _ in range(rejoined - sent):
        session.step(row.id)
    panel = _panel(client.get(f"/s/{row.id}/").content.decode())
    assert "Stable" in panel and "generation 2" in panel and "rejoin" not in panel and "waits" not in panel
