"""The seed's application (examples/spring-incident): a Spring Kafka service whose payment and monitoring producers
end up with one transactional id, pointed at a session's listener. The session shows the incident: the fence, the
aborted batch, the send that returned while nothing landed, the ledger's reads; and the app's own account disagrees
with Kafka's as the incident's did."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from playground import session
from playground.session import external, listener
from playground.session.history import findings
from playground.web import broadcast

from .conftest import hold
from .test_listener import _listeners, listen, quiet  # noqa: F401  (the fixture closes the test's listeners)

pytestmark = [pytest.mark.django_db(transaction=True)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spring-incident"
BUILD_TIMEOUT_S = 600  # the first build downloads spring-kafka and its jars
RUN_TIMEOUT_S = 180


def test_the_incidents_spring_service_shows_its_fence_its_aborted_batch_and_its_lost_payment(client):
    build = subprocess.run(["bash", str(EXAMPLE / "build.sh")], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert build.returncode == 0, build.stderr[-3000:]
    row = hold(client, session.create(None, backend="sim"))
    bootstrap = listen(client, row.id)
    run = subprocess.run(
        ["bash", str(EXAMPLE / "run.sh"), bootstrap], capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    assert run.returncode == 0, run.stderr[-3000:]
    app = json.loads(run.stdout.strip().splitlines()[-1])
    # the app's own account: every payment paid and sent, fewer confirmed downstream
    assert app["paid_in_database"] == app["sends_returned"] > app["ledger_confirmed"] > 0, app
    assert app["batches_failed"] == 1, app

    quiet(row.id, disconnected=True)
    listener.stop(row.id)  # everything the clients did is in the log now
    live = session.load(row.id)
    view = broadcast.view_of(live)
    producers = view["producers"]
    first, fencer, second = producers["payment-service-1"], producers["monitoring-1"], producers["payment-service-2"]
    assert first["fenced"] and first["state"] == "FENCED"
    assert first["transactional_id"] == fencer["transactional_id"] == "payments-tx-0"
    assert fencer["epoch"] > first["epoch"] and second["transactional_id"] == "payments-tx-1"
    assert first["external"]["software"]["library"] == "apache-kafka-java"
    # the sends that returned while nothing landed: the fenced producer's records landed and none was committed; the
    # payment service's producers committed what the ledger confirmed, fewer than the sends that returned
    assert first["counters"]["landed"] >= 1 and first["counters"]["read_committed_received"] == 0, first["counters"]
    payments = [p["counters"] for n, p in producers.items() if n.startswith("payment-service")]
    assert sum(c["read_committed_received"] for c in payments) == app["ledger_confirmed"] < app["sends_returned"]
    # the aborted batch: the fenced transaction's record struck through, an ABORT marker after it
    orders = [e for tp, p in view["partitions"].items() if tp.startswith("orders-") for e in p["log"]]
    assert any(e.get("fate") == "aborted" for e in orders)
    assert any(e.get("control") == "ABORT" for e in orders)
    committed = [e for e in orders if e.get("fate") == "committed" and str(e.get("value", "")).startswith("paid:")]
    assert len(committed) == app["ledger_confirmed"]
    # the ledger's reads, read_committed, in its group
    ledger = view["consumers"]["ledger"]
    assert ledger["group_id"] == "ledger" and ledger["isolation_level"] == "read_committed"
    assert ledger["received_total"] >= app["ledger_confirmed"]
    # the anomaly checker: the fenced producer's sends were aborted, and its application was told (its client was
    # answered the fence; the commit threw: the app counted a failed batch), so not a lost write (issue 17)
    found = findings(live)
    told = [f for f in found if f.rule == "aborted-told"]
    assert told and "payment-service-1" in told[0].text, [(f.rule, f.text) for f in found]
    # and the page says so
    page = client.get(f"/s/{row.id}/").content.decode()
    assert 'data-producer="payment-service-1"' in page and "apache-kafka-java" in page
    assert external.core_of(live.backend) is not None
