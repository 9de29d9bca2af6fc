"""librdkafka's debug log, read as the client-observable RPC timeline of an actor (runs in the worker process).

confluent-kafka hands librdkafka's log lines to a Python logger; with the debug contexts `eos` and `protocol`,
librdkafka logs each request it sends and each response it receives (rdkafka_broker.c: "Sent XRequest (vN, ...
CorrId n)", "Received XResponse ..."), its transaction manager's state changes (rdkafka_txnmgr.c: "Transaction state
change A -> B"), the producer id and epoch it acquired ("Acquired PID{Id:..,Epoch:..}") and the broker errors its
handlers met ("Broker: <description>", mapped back to Kafka's error names through librdkafka's own table). A line
that does not parse is dropped, never an error.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from typing import Any

_RPC_RE = re.compile(
    r"^(?P<broker>\S+): (?P<dir>Sent|Received) (?P<rpc>[A-Za-z]+?)(?:Request|Response) \(v(?P<ver>\d+)"
    r"(?:, (?P<bytes>\d+) bytes)?.*?CorrId (?P<corr>\d+)"
)
_TXNSTATE_RE = re.compile(r"Transaction state change (\w+) -> (\w+)")
_PID_RE = re.compile(r"Acquired PID\{Id:(-?\d+),Epoch:(-?\d+)")
_BROKER_ERR_RE = re.compile(r"Broker: ([^:(\n]+?)(?:$|[:(]| \()")
# librdkafka log facility -> the RPC whose outcome it reports
_FAC_RPC = {
    "GETPID": "InitProducerId",
    "ADDPARTS": "AddPartitionsToTxn",
    "ADDOFFSETS": "AddOffsetsToTxn",
    "TXNOFFSET": "TxnOffsetCommit",
    "TXNOFFSETS": "TxnOffsetCommit",
    "ENDTXN": "EndTxn",
    "PRODUCE": "Produce",
    "MSGSET": "Produce",
    "TXNERR": None,  # which RPC: from the text ("ProduceRequest for orders [0] ... failed: Broker: ...")
    "REQERR": None,
}
_REQ_IN_TEXT_RE = re.compile(r"\b([A-Z][A-Za-z]+)Request\b")
# "AddOffsetsToTxn response from TxnCoordinator/2: _FENCED ()": librdkafka already mapped the broker's code
_MAPPED_RE = re.compile(r"^(\w+) response from \S+: (_[A-Z_]+) \(")
TIMELINE_RPCS = {
    "InitProducerId",
    "AddPartitionsToTxn",
    "AddOffsetsToTxn",
    "TxnOffsetCommit",
    "EndTxn",
    "Produce",
    "FindCoordinator",
    "OffsetCommit",
    "OffsetFetch",
    # Not ListOffsets: a consumer repeats it on every poll and, like Fetch, it would push the transactional RPCs
    # out of the timeline's last 200 entries.
    "JoinGroup",
    "SyncGroup",
}


def camel_to_state(name: str) -> str:
    """librdkafka's txn state names (InTransaction) as the contract spells them (IN_TRANSACTION)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).upper()


class LogCollector(logging.Handler):
    """Receives librdkafka's log lines (through confluent-kafka's `logger`) and keeps the interesting ones."""

    def __init__(self, broker_error_names: dict[str, str]) -> None:
        super().__init__(level=logging.DEBUG)
        self.items: deque[dict[str, Any]] = deque(maxlen=2000)  # between two answers; older lines are dropped
        self._mu = threading.Lock()
        self.last_rpc: dict[str, dict[str, Any]] = {}
        self.pid_epochs: list[tuple[int, int]] = []
        self.txn_state = "INIT"
        self.error_names = broker_error_names

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._emit(record)
        except Exception:  # a log line we misparse must never take the actor down
            pass

    def _emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        # confluent-kafka formats "FAC [rdkafka#producer-1] [thrd:...]: text"
        fac, _, rest = msg.partition(" ")
        text = rest.split("]: ", 1)[1] if "]: " in rest else rest
        now = time.time()
        with self._mu:
            m = _RPC_RE.match(text)
            if m:
                rpc = m.group("rpc")
                if rpc not in TIMELINE_RPCS:
                    return
                item = {
                    "type": "rpc",
                    "t": now,
                    "rpc": rpc,
                    "broker": m.group("broker"),
                    "direction": "request" if m.group("dir") == "Sent" else "response",
                    "version": int(m.group("ver")),
                    "corr": int(m.group("corr")),
                    "error": None,
                    "detail": "",
                }
                self.items.append(item)
                if item["direction"] == "response":
                    self.last_rpc[rpc] = item
                return
            m = _TXNSTATE_RE.search(text)
            if m:
                frm, to = camel_to_state(m.group(1)), camel_to_state(m.group(2))
                self.txn_state = to
                self.items.append({"type": "state", "t": now, "from": frm, "to": to})
                return
            m = _PID_RE.search(text)
            if m:
                pe = (int(m.group(1)), int(m.group(2)))
                self.pid_epochs.append(pe)
                self.items.append({"type": "pid", "t": now, "producer_id": pe[0], "epoch": pe[1]})
                return
            if fac in _FAC_RPC and "Broker: " in text:
                em = _BROKER_ERR_RE.search(text)
                if em:
                    name = self.error_names.get(em.group(1).strip())
                    rpc = _FAC_RPC.get(fac)
                    if rpc is None:
                        rm = _REQ_IN_TEXT_RE.search(text)
                        rpc = rm.group(1) if rm else None
                    target = self.last_rpc.get(rpc) if rpc else None
                    if name and target is not None and target["error"] is None:
                        target["error"] = name
                        target["detail"] = text[:200]
                return
            m = _MAPPED_RE.match(text)
            if m and fac in _FAC_RPC:
                target = self.last_rpc.get(m.group(1))
                if target is not None and target["error"] is None:
                    target["error"] = m.group(2)
                    target["detail"] = "as librdkafka reports it (it does not log the broker's error code here)"
            if fac == "ENDTXN":
                m2 = re.search(r"EndTxn returned (\w+)", text)
                target = self.last_rpc.get("EndTxn")
                if m2 and target is not None and m2.group(1) != "NO_ERROR" and target["error"] is None:
                    target["error"] = m2.group(1)

    def drain(self) -> list[dict[str, Any]]:
        with self._mu:
            out = list(self.items)
            self.items.clear()
            return out


def broker_error_names() -> dict[str, str]:
    """librdkafka's description of a broker error ("Producer attempted an operation with an old epoch") ->
    Kafka's name (PRODUCER_FENCED), so log lines can be mapped back to error names."""
    from confluent_kafka import KafkaError

    out = {}
    for attr in dir(KafkaError):
        code = getattr(KafkaError, attr)
        if isinstance(code, int) and not attr.startswith("__") and code > 0:
            try:
                e = KafkaError(code)
                desc = e.str()
            except Exception:
                continue
            if desc.startswith("Broker: "):
                out[desc[len("Broker: ") :]] = e.name()
    return out
