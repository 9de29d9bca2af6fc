"""The transaction coordinator's APIs: FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit, KIP-664's DescribeTransactions, ListTransactions and DescribeProducers, and a leader's
WriteTxnMarkers (TransactionCoordinator.scala, KafkaApis)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from playground.protocol.messages import ms
from playground.sim.txnstate import STATE_IDS
from playground.simserver.apis.base import CommitRequest, _endpoint, _tp, api, reply_offsets
from playground.simserver.core import Call

Handler = Callable[[Call], None]


# ---------------------------------------------------------------------------------------------- coordinators

COORDINATOR_KINDS = {0: "group", 1: "transaction"}


@api(10)
def find_coordinator(call: Call) -> None:
    body, version = call.body, call.version
    kind = COORDINATOR_KINDS.get(int(getattr(body, "key_type", 0)))
    keys = list(body.coordinator_keys) if version >= 4 else [body.key]
    answers: list[dict[str, Any]] = []
    for key in keys:
        answer: dict[str, Any] = {"key": key, "node_id": -1, "host": "", "port": -1, "error_message": None}
        if kind is None:
            answer["error_code"] = "INVALID_REQUEST"
        else:

            def reply(error: str | None = None, *, _answer: dict[str, Any] = answer, **result: Any) -> None:
                _answer["error_code"] = error
                if error is None:
                    host, port = _endpoint(call, result["coordinator"])
                    _answer.update(node_id=result["coordinator"], host=host, port=port)

            call.core.cluster.handle_find_coordinator(key, kind, reply)
        answers.append(answer)
    error = next((a.get("error_code") for a in answers if a.get("error_code")), None)
    call.announce(f"b{call.broker}", f"{kind} {', '.join(keys)}")
    detail = ", ".join(f"coordinator {a['node_id']}" for a in answers if a["node_id"] >= 0)
    if version >= 4:
        call.reply({"throttle_time": 0, "coordinators": answers}, error=error, detail=detail)
    else:
        call.reply({"throttle_time": 0, **answers[0]}, error=error, detail=detail)


@api(22)
def init_producer_id(call: Call) -> None:
    body, version = call.body, call.version
    txid = body.transactional_id
    pid = int(getattr(body, "producer_id", -1))
    epoch = int(getattr(body, "producer_epoch", -1))
    expected = (pid, epoch) if pid >= 0 else None
    call.announce(
        f"coordinator(b{call.broker})" if txid else f"b{call.broker}",
        f"{txid or 'idempotent'}" + (f", producer {pid} epoch {epoch}" if expected else ""),
    )

    def reply(error: str | None = None, **result: Any) -> None:
        pid_out = result.get("producer_id", -1) if error is None else -1
        epoch_out = result.get("producer_epoch", -1) if error is None else -1
        call.reply(
            {"throttle_time": 0, "error_code": error, "producer_id": pid_out, "producer_epoch": epoch_out},
            error=error,
            detail=f"producer id {pid_out}, producer epoch {epoch_out}" if error is None else "",
        )

    call.core.cluster.handle_init_producer_id(
        call.broker, txid, ms(body.transaction_timeout), expected, reply, version=version
    )


@api(24)
def add_partitions_to_txn(call: Call) -> None:
    if call.version >= 4:
        _add_partitions_batched(call)
        return
    body, version = call.body, call.version
    c = call.core.cluster
    txid = body.v3_and_below_transactional_id
    pid, epoch = int(body.v3_and_below_producer_id), int(body.v3_and_below_producer_epoch)
    wanted = [(t.name, int(p)) for t in body.v3_and_below_topics for p in t.partitions]
    tps = [_tp(t, p) for t, p in wanted]
    call.announce(f"coordinator(b{call.broker})", f"{txid}, {', '.join(tps)}, producer {pid} epoch {epoch}")

    def respond(errors: dict[tuple[str, int], str | None]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for t, p in wanted:
            by_topic.setdefault(t, []).append({"partition_index": p, "partition_error_code": errors[(t, p)]})
        first = next((e for e in errors.values() if e), None)
        call.reply(
            {
                "throttle_time": 0,
                "results_by_topic_v3_and_below": [
                    {"name": t, "results_by_partition": parts} for t, parts in by_topic.items()
                ],
            },
            error=first,
        )

    unknown = {(t, p) for t, p in wanted if t not in c.topics or not 0 <= p < c.partition_count(t)}
    if unknown:
        # KafkaApis: nothing is added when any partition is unknown; the others were not attempted
        respond({tp: "UNKNOWN_TOPIC_OR_PARTITION" if tp in unknown else "OPERATION_NOT_ATTEMPTED" for tp in wanted})
        return

    def reply(error: str | None = None, **_: Any) -> None:
        respond(dict.fromkeys(wanted, error))

    c.handle_add_partitions(call.broker, txid, pid, epoch, frozenset(tps), reply, version=version)


def _add_partitions_batched(call: Call) -> None:
    """AddPartitionsToTxn v4+, the brokers' batched request (KafkaApis.handleAddPartitionsToTxnRequest): each
    transaction's partitions verified (verifyOnly, what a leader asks for a TV1 producer's Produce) or added; a
    transaction with an unknown partition fails whole (UNKNOWN_TOPIC_OR_PARTITION there, OPERATION_NOT_ATTEMPTED for
    the rest). Answered once every transaction has its result."""
    c = call.core.cluster
    transactions = list(call.body.transactions)
    results: list[dict[str, Any] | None] = [None] * len(transactions)
    call.announce(f"coordinator(b{call.broker})", ", ".join(t.transactional_id for t in transactions))

    def done(n: int, txid: str, errors: dict[tuple[str, int], str | None]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (t, p), error in errors.items():
            by_topic.setdefault(t, []).append({"partition_index": p, "partition_error_code": error})
        results[n] = {
            "transactional_id": txid,
            "topic_results": [{"name": t, "results_by_partition": parts} for t, parts in by_topic.items()],
        }
        if all(r is not None for r in results):
            first = next((e for r in errors.values() for e in [r] if e), None)
            call.reply({"throttle_time": 0, "error_code": None, "results_by_transaction": results}, error=first)

    for n, txn in enumerate(transactions):
        txid, pid, epoch = txn.transactional_id, int(txn.producer_id), int(txn.producer_epoch)
        wanted = [(t.name, int(p)) for t in txn.topics for p in t.partitions]
        unknown = {(t, p) for t, p in wanted if t not in c.topics or not 0 <= p < c.partition_count(t)}
        if unknown:
            done(
                n,
                txid,
                {tp: "UNKNOWN_TOPIC_OR_PARTITION" if tp in unknown else "OPERATION_NOT_ATTEMPTED" for tp in wanted},
            )
        elif txn.verify_only:
            found = c.txn_coordinator.verify_partitions(call.broker, txid, pid, epoch, [_tp(t, p) for t, p in wanted])
            done(n, txid, {(t, p): found[_tp(t, p)] for t, p in wanted})
        else:

            def reply(error: str | None = None, *, _n: int = n, _txid: str = txid, _w: Any = wanted, **_: Any) -> None:
                done(_n, _txid, dict.fromkeys(_w, error))

            tps = frozenset(_tp(t, p) for t, p in wanted)
            c.handle_add_partitions(call.broker, txid, pid, epoch, tps, reply, version=call.version)
    if not transactions:
        call.reply({"throttle_time": 0, "error_code": None, "results_by_transaction": []})


@api(25)
def add_offsets_to_txn(call: Call) -> None:
    body, version = call.body, call.version
    pid, epoch = int(body.producer_id), int(body.producer_epoch)
    call.announce(
        f"coordinator(b{call.broker})",
        f"{body.transactional_id}, group {body.group_id}, producer {pid} epoch {epoch}",
    )

    def reply(error: str | None = None, **_: Any) -> None:
        call.reply({"throttle_time": 0, "error_code": error}, error=error)

    call.core.cluster.handle_add_offsets(
        call.broker, body.transactional_id, pid, epoch, body.group_id, reply, version=version
    )


@api(26)
def end_txn(call: Call) -> None:
    body, version = call.body, call.version
    pid, epoch = int(body.producer_id), int(body.producer_epoch)
    commit = bool(body.committed)
    call.announce(
        f"coordinator(b{call.broker})",
        f"{body.transactional_id} {'COMMIT' if commit else 'ABORT'}, producer {pid} epoch {epoch}",
    )

    def reply(error: str | None = None, **result: Any) -> None:
        call.reply(
            {
                "throttle_time": 0,
                "error_code": error,
                "producer_id": result.get("producer_id", -1),
                "producer_epoch": result.get("producer_epoch", -1),
            },
            error=error,
            detail=f"producer id {result['producer_id']}, producer epoch {result['producer_epoch']}"
            if "producer_id" in result
            else "",
        )

    call.core.cluster.handle_end_txn(call.broker, body.transactional_id, pid, epoch, commit, reply, version=version)


@api(28)
def txn_offset_commit(call: Call) -> None:
    body, version = call.body, call.version
    c = call.core.cluster
    pid, epoch = int(body.producer_id), int(body.producer_epoch)
    commit = CommitRequest.read(call, body.topics)
    call.announce(
        f"group coordinator(b{call.broker})",
        f"{body.transactional_id}, group {body.group_id}, "
        + ", ".join(f"{tp}={off}" for tp, off in commit.offsets.items())
        + f", producer {pid} epoch {epoch}",
    )

    # KafkaApis: the partitions of unknown topics are answered so, the others go to the coordinator
    def reply(error: str | None = None, **_: Any) -> None:
        reply_offsets(call, body.topics, lambda t, p: commit.error(_tp(t, p), error))

    if not commit.known():
        reply()
        return
    c.handle_txn_offset_commit(
        call.broker,
        body.group_id,
        pid,
        epoch,
        # Kafka 4.4's definition renames it (KIP-1319); kio's, from 4.0, has the old name
        int(getattr(body, "generation_id", getattr(body, "generation_id_or_member_epoch", -1))),
        getattr(body, "member_id", ""),
        commit.committable(),
        reply,
        transactional_id=body.transactional_id,
        version=version,
        instance_id=getattr(body, "group_instance_id", None),  # v3+ (KIP-447)
        meta=commit.meta,
        too_large=commit.too_large_known(),
    )


# ---------------------------------------------------------------------------------------------- KIP-664


@api(65)
def describe_transactions(call: Call) -> None:
    tc = call.core.cluster.txn_coordinator
    states = []
    for txid in call.body.transactional_ids:
        st = tc.partitions[tc.partition_for(txid)]
        entry: dict[str, Any] = {
            "transactional_id": txid,
            "transaction_state": "",
            "transaction_timeout_ms": 0,
            "transaction_start_time_ms": -1,
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
        md = tc.cache.get(txid)
        if st.leader != call.broker:
            entry["error_code"] = "NOT_COORDINATOR"
        elif st.loading:
            entry["error_code"] = "COORDINATOR_LOAD_IN_PROGRESS"
        elif md is None or md.state == "Dead":
            entry["error_code"] = "TRANSACTIONAL_ID_NOT_FOUND"
        else:
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(md.partitions):
                topic, _, p = tp.rpartition("-")
                by_topic.setdefault(topic, []).append(int(p))
            entry.update(
                error_code=None,
                transaction_state=md.state,
                transaction_timeout_ms=md.txn_timeout_ms,
                transaction_start_time_ms=md.txn_start_ms,
                producer_id=md.producer_id,
                producer_epoch=md.producer_epoch,
                topics=[{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            )
        states.append(entry)
    call.reply({"throttle_time": 0, "transaction_states": states})


@api(66)
def list_transactions(call: Call) -> None:
    body = call.body
    c = call.core.cluster
    tc = c.txn_coordinator
    state_filters = set(body.state_filters)
    known = set(STATE_IDS)
    pid_filters = {int(p) for p in body.producer_id_filters}
    duration_ms = int(getattr(body, "duration_filter", -1))
    pattern = getattr(body, "transactional_id_pattern", None)
    try:
        regex = re.compile(pattern) if pattern else None
    except re.error:
        call.reply({"error_code": "INVALID_REGULAR_EXPRESSION", "unknown_state_filters": [], "transaction_states": []})
        return
    if any(tc.partitions[p].loading for p in range(tc.num_partitions) if tc.partitions[p].leader == call.broker):
        call.reply(
            {"error_code": "COORDINATOR_LOAD_IN_PROGRESS", "unknown_state_filters": [], "transaction_states": []}
        )
        return
    out = []
    for txid, md in sorted(tc.cache.items()):
        if tc.partitions[tc.partition_for(txid)].leader != call.broker:
            continue
        if state_filters and md.state not in state_filters:
            continue
        if pid_filters and md.producer_id not in pid_filters:
            continue
        if duration_ms >= 0 and (md.state != "Ongoing" or c.now_ms - md.txn_start_ms < duration_ms):
            continue
        if regex is not None and not regex.fullmatch(txid):
            continue
        out.append({"transactional_id": txid, "producer_id": md.producer_id, "transaction_state": md.state})
    call.reply(
        {
            "throttle_time": 0,
            "error_code": None,
            "unknown_state_filters": sorted(state_filters - known),
            "transaction_states": out,
        }
    )


@api(61)
def describe_producers(call: Call) -> None:
    c = call.core.cluster
    topics = []
    for topic in call.body.topics:
        parts = []
        for index in topic.partition_indexes:
            tp = _tp(topic.name, int(index))
            meta = c.partitions.get(tp)
            entry: dict[str, Any] = {"partition_index": int(index), "error_message": None, "active_producers": []}
            if meta is None:
                entry["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
            elif call.broker not in meta.replicas:
                # any replica answers with its own producer state (Partition.activeProducerState); here every
                # replica's log is the leader's
                entry["error_code"] = "NOT_LEADER_OR_FOLLOWER"
            else:
                entry["error_code"] = None
                entry["active_producers"] = [
                    {
                        "producer_id": e.producer_id,
                        "producer_epoch": e.epoch,
                        "last_sequence": e.last_seq,
                        "last_timestamp": e.last_timestamp_ms,
                        "coordinator_epoch": e.coordinator_epoch,
                        "current_txn_start_offset": -1
                        if e.current_txn_first_offset is None
                        else e.current_txn_first_offset,
                    }
                    for e in c.log(tp).producers.values()
                ]
            parts.append(entry)
        topics.append({"name": topic.name, "partitions": parts})
    call.reply({"throttle_time": 0, "topics": topics})


@api(27)
def write_txn_markers(call: Call) -> None:
    """WriteTxnMarkers at a partition leader, as `kafka-transactions.sh abort` sends it for a hanging transaction:
    each marker of the request written by the simulator's leader, answered once all are replicated."""
    c = call.core.cluster
    markers = list(call.body.markers)
    results: list[dict[str, str | None] | None] = [None] * len(markers)
    tps_of = [[_tp(t.name, int(i)) for t in m.topics for i in t.partition_indexes] for m in markers]
    call.announce(
        f"leader {', '.join(tp for tps in tps_of for tp in tps)}(b{call.broker})",
        ", ".join(
            f"{'COMMIT' if m.transaction_result else 'ABORT'} producer {m.producer_id} epoch {m.producer_epoch}"
            for m in markers
        ),
    )

    def respond() -> None:
        out = []
        errors = []
        for marker, found in zip(markers, results):
            assert found is not None
            topics = []
            for topic in marker.topics:
                parts = []
                for index in topic.partition_indexes:
                    error = found.get(_tp(topic.name, int(index)))
                    parts.append({"partition_index": int(index), "error_code": error})
                    if error:
                        errors.append(error)
                topics.append({"name": topic.name, "partitions": parts})
            out.append({"producer_id": int(marker.producer_id), "topics": topics})
        call.reply({"markers": out}, error=errors[0] if errors else None)

    for n, marker in enumerate(markers):

        def reply(error: str | None = None, *, _n: int = n, **result: Any) -> None:
            results[_n] = result.get("errors") or dict.fromkeys(tps_of[_n], error)
            if all(r is not None for r in results):
                respond()

        c.handle_write_txn_markers(
            call.broker,
            int(marker.producer_id),
            int(marker.producer_epoch),
            "COMMIT" if marker.transaction_result else "ABORT",
            int(marker.coordinator_epoch),
            tps_of[n],
            reply,
        )
    if not markers:
        respond()
