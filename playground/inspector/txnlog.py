"""__transaction_state, read incrementally, as a timeline per transactional id.

Follows Kafka's transaction coordinator (core: TransactionCoordinator.scala, TransactionMetadata.scala,
TransactionStateManager.scala; 3.9): every state transition the coordinator completes is a record keyed by the
transactional id in partition abs(hashCode(id)) % partitions; values are decoded by playground/kafka/wire.py.
What the records mean (Kafka 3.9, transaction protocol version 1):

* InitProducerId writes Empty with the new epoch. Over an Ongoing transaction it first aborts it with a bumped
  epoch (prepareFenceProducerEpoch, never persisted, then PrepareAbort at epoch+1 and CompleteAbort), answers
  CONCURRENT_TRANSACTIONS, and the client's retry writes Empty at epoch+2: fencing the previous instance.
* The first AddPartitionsToTxn of a transaction writes Ongoing (and again for each new partition).
* EndTxn writes PrepareCommit/PrepareAbort at the same epoch, then CompleteCommit/CompleteAbort once every marker
  is written.
* A transaction older than its timeout is aborted by the coordinator (abortTimedOutTransactions), also with a
  bumped epoch: PrepareAbort at epoch+1 whose update time is at least start + timeout.
* An expired id becomes a tombstone.

Transaction version 2 (KIP-890 part 2, Kafka 4.x with 4.x clients) bumps the epoch at every EndTxn; records that say
so (client_transaction_version >= 2) are not read as fences. Only version 1 (Kafka 3.9, the test cluster) is tested.

Reading is incremental and bounded: only the coordinator partitions of the ids asked for, from where the last read
stopped; the first read of a partition starts at the offset of `now - INSPECTOR_TXN_LOG_LOOKBACK_S` (ListOffsets by
timestamp), and one poll reads at most INSPECTOR_TXN_LOG_MAX_RECORDS records of a partition.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from playground.inspector.client import TXN_TOPIC, ReadOnlyWire
from playground.kafka.wire import decode_txn_key, decode_txn_value

CLIENT_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort")
MAX_IDS = 10_000  # ids whose history is kept (least recently written dropped first)


class TxnStateLog:
    """The decoded records of __transaction_state for allowed transactional ids, kept per id."""

    def __init__(self) -> None:
        self.next_offset: dict[int, int] = {}  # partition -> next offset to read
        self.read_from: dict[int, int] = {}  # partition -> where reading began (the timeline's horizon)
        self.records: OrderedDict[str, deque[dict[str, Any]]] = OrderedDict()
        self.records_read = 0

    def reset(self) -> None:
        self.next_offset.clear()
        self.read_from.clear()
        self.records.clear()
        self.records_read = 0

    def poll(
        self,
        client: ReadOnlyWire,
        partitions: set[int],
        *,
        allowed: Callable[[str], bool],
        now_ms: int,
        lookback_ms: int,
        max_records: int,
        history_max: int,
    ) -> None:
        new_parts = [p for p in sorted(partitions) if p not in self.next_offset]
        if new_parts:
            tps = [(TXN_TOPIC, p) for p in new_parts]
            starts = client.list_offsets(tps, max(0, now_ms - lookback_ms))
            ends = client.list_offsets(tps)
            for p in new_parts:
                start = starts.get((TXN_TOPIC, p))
                self.next_offset[p] = start if start is not None else (ends.get((TXN_TOPIC, p)) or 0)
                self.read_from[p] = self.next_offset[p]
        for p in sorted(partitions):
            entries, _marks = client.read_range(TXN_TOPIC, p, self.next_offset[p], None, max_records)
            for e in entries:
                self.records_read += 1
                if e.control or e.key is None:
                    continue
                try:
                    txid = decode_txn_key(e.key)
                except Exception:
                    continue
                if txid is None or not allowed(txid):
                    continue  # other ids are neither kept nor shown
                try:
                    value = decode_txn_value(e.value)
                except Exception:
                    value = {"state": "Undecodable", "producer_id": -1, "epoch": -1, "partitions": []}
                rec: dict[str, Any] = {"offset": e.offset, "txn_partition": p, "timestamp_ms": e.timestamp_ms}
                if value is None:
                    rec.update(
                        state="Dead",
                        producer_id=-1,
                        epoch=-1,
                        partitions=[],
                        tombstone=True,
                        last_update_ms=e.timestamp_ms,
                    )
                else:
                    rec.update(value)
                rec["partitions"] = [list(tp) for tp in rec.get("partitions", [])]
                hist = self.records.get(txid)
                if hist is None:
                    hist = self.records[txid] = deque(maxlen=history_max)
                hist.append(rec)
                self.records.move_to_end(txid)
                while len(self.records) > MAX_IDS:
                    self.records.popitem(last=False)
            if entries:
                self.next_offset[p] = entries[-1].next_offset

    def history(self, txid: str) -> list[dict[str, Any]]:
        return list(self.records.get(txid, ()))


def annotate(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of one id with what each one means (`event`), in offset order."""
    out = []
    prev: dict[str, Any] | None = None
    client_epoch: tuple[Any, Any] | None = None  # (producer id, epoch) of the last client-driven record
    for r in sorted(records, key=lambda r: r["offset"]):
        r = dict(r)
        state, key = r.get("state"), (r.get("producer_id"), r.get("epoch"))
        if r.get("tombstone") or state == "Dead":
            event = "expired"
        elif state == "Empty":
            event = (
                "init"
                if prev is None or (prev.get("producer_id"), prev.get("epoch")) != key or prev.get("state") != "Empty"
                else "unchanged"
            )
        elif state == "Ongoing":
            same = (
                prev is not None
                and prev.get("state") == "Ongoing"
                and (prev.get("producer_id"), prev.get("epoch")) == key
            )
            event = "add_partitions" if same else "begin"
        elif state == "PrepareCommit":
            event = "commit_requested"
        elif state == "PrepareAbort":
            # transaction version 2 (KIP-890, Kafka 4.x clients) bumps the epoch at every EndTxn: not a fence there
            tv2 = (r.get("client_transaction_version") or 0) >= 2
            if not tv2 and client_epoch is not None and key[0] == client_epoch[0] and key[1] > client_epoch[1]:
                start, timeout = r.get("txn_start_time_ms"), r.get("timeout_ms")
                timed_out = (
                    start is not None and timeout is not None and (r.get("last_update_ms") or 0) >= start + timeout
                )
                event = "timed_out" if timed_out else "fenced_by_init"
            else:
                event = "abort_requested"
        elif state == "CompleteCommit":
            event = "committed"
        elif state == "CompleteAbort":
            event = "aborted"
        else:
            event = str(state).lower()
        r["event"] = event
        if event in ("init", "begin", "add_partitions", "commit_requested", "abort_requested"):
            client_epoch = key
        out.append(r)
        prev = r
    return out


def inits(timeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every InitProducerId in an annotated timeline, with what the previous instance (the epoch it replaced) was
    doing: its last client-driven transition, whether it had an open transaction, how that transaction ended."""
    out = []
    prev_instance: dict[str, Any] | None = None
    fence: dict[str, Any] | None = None
    for r in timeline:
        ev = r["event"]
        if ev in ("fenced_by_init", "timed_out"):
            fence = {
                "event": ev,
                "offset": r["offset"],
                "time_ms": r.get("last_update_ms"),
                "producer_epoch": r.get("epoch"),
                "partitions": r.get("partitions", []),
            }
        if ev == "init":
            out.append(
                {
                    "offset": r["offset"],
                    "time_ms": r.get("last_update_ms"),
                    "producer_id": r.get("producer_id"),
                    "producer_epoch": r.get("epoch"),
                    "previous": dict(prev_instance) if prev_instance else None,
                    "fence": fence if prev_instance else None,
                }
            )
            prev_instance = {
                "producer_id": r.get("producer_id"),
                "producer_epoch": r.get("epoch"),
                "last_activity_ms": r.get("last_update_ms"),
                "last_event": "init",
                "open": False,
                "open_partitions": [],
                "open_since_ms": None,
                "last_outcome": None,
            }
            fence = None
            continue
        if prev_instance is None:
            # the timeline began mid-life (lookback): the first client-driven record names the instance
            if ev in ("begin", "add_partitions", "commit_requested", "abort_requested"):
                prev_instance = {
                    "producer_id": r.get("producer_id"),
                    "producer_epoch": r.get("epoch"),
                    "last_activity_ms": None,
                    "last_event": None,
                    "open": False,
                    "open_partitions": [],
                    "open_since_ms": None,
                    "last_outcome": None,
                }
            else:
                continue
        if ev in ("begin", "add_partitions"):
            prev_instance.update(
                open=True, open_partitions=r.get("partitions", []), open_since_ms=r.get("txn_start_time_ms")
            )
        if ev in ("begin", "add_partitions", "commit_requested", "abort_requested"):
            prev_instance.update(last_activity_ms=r.get("last_update_ms"), last_event=ev)
        if ev in ("committed", "aborted"):
            prev_instance.update(open=False, last_outcome=ev)
    return out
