"""A connected application judged as a pipeline from the page (issue 31): a transactional listener that reads orders,
pays only the first of three and commits its offsets past all three (the fenced instance's skipped poll). The
checker cannot know which payment belongs to which order until the driver says so; then it names the two orders
lost, in the log, so a watcher, a reload or another process sees the same. Only the driver may say it; nonsense is
refused with what is wrong."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from django.test import Client

from playground import session
from playground.session.cache import CACHE
from playground.session.history import findings

from .test_listener import _listeners, listen, quiet, wait_for  # noqa: F401 - _listeners: autouse, stops them after each test

pytestmark = [pytest.mark.django_db(transaction=True)]


def _skipping_listener(bootstrap: str, payment_key: str = "k1") -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a handle collected mid-request fails the future
    admin.create_topics([NewTopic("payments", 1)])["payments"].result(30)
    orders = Producer({"bootstrap.servers": bootstrap})
    for key in ("k1", "k2", "k3"):
        orders.produce("orders", key=key, value=f"order {key}", partition=0)
    assert orders.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "pay",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition("orders", 0, 0)])
    got = []
    wait_for(lambda: got.extend(consumer.consume(3, 0.5)) or len(got) >= 3, "the three orders")
    payer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "payer"})
    payer.init_transactions(30)
    payer.begin_transaction()
    # then fenced, in the story: k2, k3 skipped. The payment names its order in a header too, as a listener often does
    payer.produce("payments", key=payment_key, value="paid k1", partition=0, headers=[("order-id", b"k1")])
    payer.send_offsets_to_transaction([TopicPartition("orders", 0, 3)], consumer.consumer_group_metadata(), 30)
    payer.commit_transaction(30)
    consumer.close()


def _lost(sid: str) -> list:
    return [f for f in findings(session.load(sid), None) if f.rule == "lost-input"]


def test_a_driver_declares_a_connected_application_s_pipeline_and_the_checker_names_the_skipped_inputs(
    client, sim_session
):
    sid = sim_session.id
    _skipping_listener(listen(client, sid))
    quiet(sid)
    assert _lost(sid) == []  # which payment is whose order is the application's business
    stranger = Client()
    assert stranger.post(f"/s/{sid}/pipeline/", {"source": "orders", "sink": "payments"}).status_code == 403
    r = client.post(f"/s/{sid}/pipeline/", {"source": "orders", "sink": "refunds"})
    assert r.status_code == 400 and "refunds" in r.content.decode() and "payments" in r.content.decode()
    assert client.post(f"/s/{sid}/pipeline/", {"source": "orders"}).status_code == 400
    assert client.post(f"/s/{sid}/pipeline/", {"source": "orders", "sink": "orders"}).status_code == 400
    assert (
        client.post(f"/s/{sid}/pipeline/", {"source": "orders", "sink": "payments", "by": "header"}).status_code == 400
    )
    assert session.load(sid).declared_pipelines is None  # nothing of that reached the log

    assert client.post(f"/s/{sid}/pipeline/", {"source": "orders", "sink": "payments", "by": "key"}).status_code == 204
    (lost,) = _lost(sid)
    assert lost.records == ("orders-0@1", "orders-0@2") and lost.params["consumer"] == "group pay"
    page = client.get(f"/s/{sid}/").content.decode()
    assert "Judged as pipelines" in page and "orders-0@1, orders-0@2 of orders" in page
    # in the log: another process (this one, its cache emptied) replays it to the same judgement
    assert client.post(f"/s/{sid}/unlisten/").status_code == 204
    CACHE.evict(sid)
    assert [f.records for f in _lost(sid)] == [("orders-0@1", "orders-0@2")]
    assert client.post(f"/s/{sid}/pipeline/", {"source": "orders", "sink": "payments"}).status_code == 409  # twice

    assert client.post(f"/s/{sid}/pipeline/", {"clear": "1"}).status_code == 204
    assert _lost(sid) == [] and "Judged as pipelines" not in client.get(f"/s/{sid}/").content.decode()


def test_a_connected_application_s_payments_matched_to_their_orders_by_a_header(client, sim_session):
    """Payments keyed by their own ids, each carrying its order's key in header order-id (sent over the wire by
    confluent-kafka): by key nothing matches, by that header the two skipped orders are named."""
    sid = sim_session.id
    _skipping_listener(listen(client, sid), payment_key="pay-1")
    quiet(sid)
    form = {"source": "orders", "sink": "payments", "by": "header", "header": "order-id"}
    assert client.post(f"/s/{sid}/pipeline/", form).status_code == 204
    assert session.load(sid).declared_pipelines[0].header == "order-id"
    assert [f.records for f in _lost(sid)] == [("orders-0@1", "orders-0@2")]
    page = client.get(f"/s/{sid}/").content.decode()
    assert 'by header <code translate="no">order-id</code>' in page
    # saved as a scenario, the declaration stays
    assert client.post(f"/s/{sid}/unlisten/").status_code == 204
    text = client.get(f"/s/{sid}/scenario.yaml").content.decode()
    assert "{from: orders, to: payments, by: header, header: order-id}" in text, text
