"""Hanging transactions, found as `kafka-transactions.sh find-hanging` finds them, and the command that aborts one.

Follows Apache Kafka's tools/src/main/java/org/apache/kafka/tools/TransactionsCommand.java,
FindHangingTransactionsCommand (KIP-664):

1. candidates: DescribeProducers on the partitions searched; every active producer with a
   CurrentTransactionStartOffset whose LastTimestamp is older than the maximum transaction timeout
   (`--max-transaction-timeout`, default 15 min; here INSPECTOR_MAX_TRANSACTION_TIMEOUT_MS);
2. ListTransactions filtered by those producer ids gives their transactional ids;
3. a candidate is hanging when no transactional id has its producer id, when DescribeTransactions does not know
   that id, or when the id's current transaction does not list the partition (the coordinator will never write
   a marker there).

A candidate the coordinator still lists is not hanging by that definition (the coordinator will abort it when its
transaction.timeout.ms runs out); Kafka's tool leaves it out. It still holds the partition's LSO for everyone,
so it is reported here too, as `verdict: "still_tracked"`, and kept apart from the hanging ones.

The abort command is AbortTransactionCommand's: `abort --topic --partition` with `--producer-id --producer-epoch
--coordinator-epoch` (any broker version; a coordinator epoch of -1, a producer that never had a marker, becomes 0
as the tool itself does) or `--start-offset` (brokers 3.0+). It is shown, never run.
"""

from __future__ import annotations

import shlex
from typing import Any

from playground.inspector.client import TP, ReadOnlyWire
from playground.inspector.sentences import say


def abort_command(
    bootstrap: str, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int | None
) -> str:
    ce = coordinator_epoch if coordinator_epoch is not None and coordinator_epoch >= 0 else 0
    return (
        f"kafka-transactions.sh --bootstrap-server {shlex.quote(bootstrap)} abort --topic {shlex.quote(topic)} "
        f"--partition {partition} --producer-id {producer_id} --producer-epoch {producer_epoch} --coordinator-epoch {ce}"
    )


def abort_command_by_offset(bootstrap: str, topic: str, partition: int, start_offset: int) -> str:
    return (
        f"kafka-transactions.sh --bootstrap-server {shlex.quote(bootstrap)} abort --topic {shlex.quote(topic)} "
        f"--partition {partition} --start-offset {start_offset}"
    )


def candidates(
    producers: dict[TP, list[dict[str, Any]] | str], now_ms: int, max_timeout_ms: int
) -> list[dict[str, Any]]:
    """Step 1: open transactions whose producer's last write is older than the maximum transaction timeout."""
    out = []
    for (topic, partition), states in sorted(producers.items()):
        if isinstance(states, str):
            continue  # that partition could not be described (reported with the partition)
        for st in states:
            if st["current_txn_start_offset"] is None:
                continue
            duration = now_ms - st["last_timestamp"]
            if duration > max_timeout_ms:
                out.append({"topic": topic, "partition": partition, **st, "duration_ms": duration})
    return out


def classify(
    cands: list[dict[str, Any]],
    txid_of: dict[int, str],
    describe: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """Steps 2-3 (filterHangingTransactions): `txid_of` from ListTransactions by producer id, `describe` from
    DescribeTransactions of those ids."""
    out = []
    for c in cands:
        txid = txid_of.get(c["producer_id"])
        desc = describe.get(txid) if txid else None
        tp = f"{c['topic']}-{c['partition']}"
        if txid is None:
            verdict, reason_said = "hanging", ["no_txid", {}]
        elif desc is None or desc.get("state") is None:
            verdict, reason_said = "hanging", ["txid_unknown", {}]
        elif [c["topic"], c["partition"]] not in [list(tp) for tp in desc.get("partitions", [])]:
            values = {"state": desc.get("state"), "pid": desc.get("producer_id"), "epoch": desc.get("producer_epoch")}
            verdict, reason_said = "hanging", ["not_listed", {**values, "tp": tp}]
        else:
            verdict, reason_said = "still_tracked", ["still_listed", {"tp": tp, "state": desc.get("state")}]
        reason = say(reason_said)  # the English (the command line's); the page says it in its reader's language
        out.append(
            {
                **c,
                "transactional_id": txid,
                "coordinator": desc,
                "verdict": verdict,
                "reason": reason,
                "reason_said": reason_said,
            }
        )
    return out


def find_hanging(
    client: ReadOnlyWire,
    tps: list[TP],
    *,
    now_ms: int,
    max_timeout_ms: int,
    n_txn_partitions: int,
    producers: dict[TP, list[dict[str, Any]] | str] | None = None,
) -> list[dict[str, Any]]:
    """The whole search on `tps` (already allowed). `producers`: DescribeProducers answers already at hand."""
    if producers is None:
        producers = client.describe_producers_of(tps)
    cands = candidates({tp: producers[tp] for tp in tps if tp in producers}, now_ms, max_timeout_ms)
    if not cands:
        return []
    pids = sorted({c["producer_id"] for c in cands})
    txid_of = {
        t["producer_id"]: t["transactional_id"]
        for t in client.list_transactions(producer_ids=pids)
        if t["producer_id"] in pids
    }
    describe = (
        {txid: client.describe_transaction(txid, n_txn_partitions) for txid in sorted(set(txid_of.values()))}
        if n_txn_partitions
        else {}
    )
    return classify(cands, txid_of, describe)
