"""The page names which ending of the AddOffsetsToTxn / AddPartitionsToTxn race a connected kafka-clients application
took (issue 31 item 6): fenced on AddOffsetsToTxn (sendOffsetsToTransaction threw at once: the ending in which a Spring
listener commits past the skipped records) or on AddPartitionsToTxn (the queued AddOffsetsToTxn never went: the
call blocked max.block.ms, the listener rolled back). In both languages.

The clients are confluent-kafka producers that name themselves as kafka-clients in ApiVersions
(client.software.name, KIP-511): the ending is told from the requests and the library the connection named, and
these send the same two requests a kafka-clients application's two endings send first after its fence (an
AddOffsetsToTxn alone; an AddPartitionsToTxn for a produce)."""

from __future__ import annotations

import re

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from playground import session
from playground.web import apppanels, broadcast

from . import zhrule
from .test_listener import (
    QUIET,
    Producer,
    _listeners,  # noqa: F401  (the fixture closes the test's listeners)
    listen,
    quiet,
)
from .test_zh_pages import _free_play, _no_english

pytestmark = [pytest.mark.django_db(transaction=True)]

AS_KAFKA_CLIENTS = {"client.software.name": "apache-kafka-java", "client.software.version": "3.9.1"}


def as_kafka_clients(bootstrap: str, client_id: str, txid: str) -> Producer:
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txid, "client.id": client_id}
    return Producer({**conf, **AS_KAFKA_CLIENTS, **QUIET})


def fenced(bootstrap: str, client_id: str, txid: str) -> Producer:
    first = as_kafka_clients(bootstrap, client_id, txid)
    first.init_transactions(20)
    as_kafka_clients(bootstrap, f"{client_id}-2", txid).init_transactions(20)
    first.begin_transaction()
    return first


def anomalies_panel(page: str) -> str:
    return re.search(r'<div id="p-anomalies".*?\n</div>', page, re.S).group(0)


def test_the_page_names_the_ending_each_fenced_kafka_clients_application_took_in_both_languages(
    client, sim_session, settings
):
    sid = sim_session.id
    bootstrap = listen(client, sid)
    # fenced on AddOffsetsToTxn: the offsets went before any record
    offsets_first = fenced(bootstrap, "listener-a", "payments-0")
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": "payments", **QUIET})
    with pytest.raises(KafkaException):
        offsets_first.send_offsets_to_transaction([TopicPartition("orders", 0, 1)], group.consumer_group_metadata(), 10)
    group.close()
    # fenced on AddPartitionsToTxn: a record went first
    partitions_first = fenced(bootstrap, "listener-b", "payments-1")
    partitions_first.produce("orders", value=b"paid-1", partition=0)
    with pytest.raises(KafkaException):
        partitions_first.flush(10)  # the fence of its AddPartitionsToTxn, fatal
    quiet(sid)

    live = session.load(sid)
    found = apppanels.anomalies(live, broadcast.view_of(live))["findings"]
    endings = {f["params"]["actor"]: f for f in found if f["rule"] == "race-ending"}
    assert all(f["notice"] for f in endings.values())
    assert endings["listener-a"]["kind"] == "race_offsets_first"
    assert endings["listener-b"]["kind"] == "race_partitions_first"
    panel = anomalies_panel(client.get(f"/s/{sid}/").content.decode())
    assert "listener-a (kafka-clients, transactional.id payments-0) was fenced on AddOffsetsToTxn" in panel
    assert "listener-b (kafka-clients, transactional.id payments-1) was fenced on AddPartitionsToTxn" in panel
    assert "blocked max.block.ms and threw TimeoutException" in panel

    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    panel = anomalies_panel(client.get(f"/s/{sid}/").content.decode())
    assert "在 AddOffsetsToTxn 上被隔离" in panel and "在 AddPartitionsToTxn 上被隔离" in panel
    names = _free_play() | zhrule.Authored(
        names=frozenset({"listener-a", "listener-b", "payments-0", "payments-1", "paid-1", "payments"})
    )
    _no_english({"#p-anomalies": (panel, names)})
