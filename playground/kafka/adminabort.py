"""`broker.abort_transaction: {partition: P}` on a real cluster: what `kafka-transactions.sh abort --topic T
--partition N --start-offset O` does (tools/.../TransactionsCommand.java, AbortTransactionCommand, KIP-664).

DescribeProducers on the partition's leader gives the open transactions (CurrentTransactionStartOffset); the oldest
is aborted as Admin.abortTransaction does it (clients/.../admin/internals/AbortTransactionHandler.java): a
WriteTxnMarkers v1 request with an ABORT marker for that producer id, its epoch and its coordinator epoch (-1 read
as 0, as the tool does), sent to the leader. Its answer is the step's outcome; no open transaction is
INVALID_TXN_STATE without sending anything, as on the simulator (playground/sim/adminabort.py).
"""

from __future__ import annotations

import time
from typing import Any

from kio.schema.types import ProducerId, TopicName
from kio.schema.write_txn_markers.v1.request import WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest
from kio.static.primitive import i16, i32

from playground.engine import events as ev
from playground.engine.backend import OK, BackendError

from .wire import WireError, error_name

NO_OPEN_TRANSACTION = "INVALID_TXN_STATE"
SETTLE_WAIT_S = 5.0  # as net.late_write's: no transaction of the session half-completed when the operator acts


def apply_abort(backend: Any, step: Any) -> str:
    tp = str(step.args.get("partition", ""))
    topic, _dash, number = tp.rpartition("-")
    if topic not in backend.topics or not number.isdigit():
        raise BackendError(f"{step.label}: no partition {tp!r} in this session")
    partition = int(number)
    real_topic = backend.prefix + topic
    obs = backend.observer
    wire = obs.wire
    txids = [backend.prefix + a.spec.transactional_id for a in backend.actors.values() if a.spec.transactional_id]
    deadline = time.monotonic() + SETTLE_WAIT_S
    while txids and time.monotonic() < deadline:
        try:
            states = {t: s.get("state") for t, s in obs.describe_transactions(txids).items()}
        except Exception:
            break
        if not any(s in ("PrepareCommit", "PrepareAbort") for s in states.values()):
            break
        time.sleep(0.05)
    try:
        producers = wire.describe_producers(real_topic, partition)
        candidates = sorted(
            (p["current_txn_start_offset"], p) for p in producers if p["current_txn_start_offset"] is not None
        )
        if not candidates:
            return NO_OPEN_TRANSACTION
        start, state = candidates[0]
        coordinator_epoch = max(int(state["coordinator_epoch"]), 0)
        src, dst = "admin (kafka-transactions.sh abort)", f"leader {tp}"
        backend.events.emit(
            ev.Rpc,
            rpc="WriteTxnMarkers",
            src=src,
            dst=dst,
            direction="request",
            error=None,
            detail=f"v1, ABORT producer {state['producer_id']} epoch {state['epoch']} coordinator epoch "
            f"{coordinator_epoch} -> {tp} (start offset {start})",
        )
        req = WriteTxnMarkersRequest(
            markers=(
                WritableTxnMarker(
                    producer_id=ProducerId(int(state["producer_id"])),
                    producer_epoch=i16(int(state["epoch"])),
                    transaction_result=False,
                    topics=(WritableTxnMarkerTopic(name=TopicName(real_topic), partition_indexes=(i32(partition),)),),
                    coordinator_epoch=i32(coordinator_epoch),
                ),
            )
        )
        resp = wire.send_to(wire.leader(real_topic, partition, refresh=True), req)
    except WireError as e:
        raise BackendError(f"{step.label}: {e}") from None
    code = 0
    for marker in resp.markers:
        for t in marker.topics:
            for p in t.partitions:
                code = code or int(p.error_code)
    error = error_name(code) if code else None
    backend.events.emit(ev.Rpc, rpc="WriteTxnMarkers", src=dst, dst=src, direction="response", error=error, detail="v1")
    return error or OK
