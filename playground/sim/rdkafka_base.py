"""The librdkafka producer's state and the path of its records: the transaction state and its error states (fatal,
abortable: rd_kafka_txn_set_fatal_error, rd_kafka_txn_set_abortable_error0, the one transactional API call in
progress), and a record's way from the partition queue to a delivery report: linger, one ProduceRequest in flight
per partition, its answer, retries, purges. The transaction manager's requests are rdkafka_txnmgr.py's; the
application's calls client.py's.

Follows librdkafka 2.16's src/rdkafka_msg.c (partitioning), rdkafka_broker.c and rdkafka_request.c (the
ProduceRequest and its response handling), rdkafka_txnmgr.c (the states and error setters) and rdkafka_idempotence.c.

- A Produce answered INVALID_PRODUCER_EPOCH on a transactional producer raises the fatal error _FENCED; the
  delivery report itself carries INVALID_PRODUCER_EPOCH. Any other permanent produce error in a transaction is
  an abortable error. Abortable and fatal errors purge the queued (not in-flight) messages: their delivery
  reports say _PURGE_QUEUE.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from playground.engine import events as ev
from playground.sim.clientbase import Client, Message, conf_bool, conf_ms
from playground.sim.effects import Reply
from playground.sim.errors import KafkaError, KafkaException

if TYPE_CHECKING:  # pragma: no cover
    from playground.sim.cluster import Cluster

# librdkafka transaction states (rd_kafka_txn_state2str)
INIT = "INIT"
WAIT_PID = "WAIT_PID"
READY_NOT_ACKED = "READY_NOT_ACKED"
READY = "READY"
IN_TRANSACTION = "IN_TRANSACTION"
BEGIN_COMMIT = "BEGIN_COMMIT"
COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
COMMIT_NOT_ACKED = "COMMIT_NOT_ACKED"
BEGIN_ABORT = "BEGIN_ABORT"
ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
ABORT_NOT_ACKED = "ABORT_NOT_ACKED"
ABORTABLE_ERROR = "ABORTABLE_ERROR"
FATAL_ERROR = "FATAL_ERROR"

FENCING = ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED")
RETRIABLE_PRODUCE = frozenset(
    {
        "NOT_LEADER_OR_FOLLOWER",
        "LEADER_NOT_AVAILABLE",
        "NOT_ENOUGH_REPLICAS",
        "REQUEST_TIMED_OUT",
        "UNKNOWN_TOPIC_OR_PARTITION",
        "_TRANSPORT",
        "NETWORK_EXCEPTION",
    }
)
COORDINATOR_ERRORS = frozenset({"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "_TRANSPORT"})
INFINITE = -1
# librdkafka's request ApiVersions against Kafka 3.9 (src/rdkafka_request.c, rdkafka_txnmgr.c)
API_VERSIONS = {"InitProducerId": 4, "AddPartitionsToTxn": 0, "AddOffsetsToTxn": 0, "EndTxn": 1, "TxnOffsetCommit": 3}


def normalize(error: str) -> str:
    """rd_kafka_txn_normalize_err: one fencing error for the application."""
    if error in FENCING:
        return "_FENCED"
    if error == "_TIMED_OUT_QUEUE":
        return "_TIMED_OUT"
    return error


class _Api:
    """The one transactional API call in progress (librdkafka's txn_curr_api)."""

    __slots__ = ("done", "error", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.done = False
        self.error: KafkaError | None = None


class ProducerBase(Client):
    """The state of a librdkafka producer handle (rd_kafka_t with its rk_eos), its error states, and its records'
    path to the partition leaders."""

    api_versions = API_VERSIONS

    def __init__(self, conf: dict[str, Any], *, cluster: Cluster, name: str | None = None) -> None:
        super().__init__(conf, cluster, name)
        c = self.conf
        self.transactional_id: str | None = c.get("transactional.id") or None
        self.idempotent = self.transactional_id is not None or conf_bool(c.get("enable.idempotence", False))
        acks = str(c.get("acks", c.get("request.required.acks", "all"))).lower()
        self.acks = -1 if acks in ("all", "-1") else int(acks)
        if self.idempotent:
            self.acks = -1
        self.linger_ms = conf_ms(c, "linger.ms", conf_ms(c, "queue.buffering.max.ms", 5))
        self.transaction_timeout_ms = conf_ms(c, "transaction.timeout.ms", 60_000)
        self.message_timeout_ms = conf_ms(c, "message.timeout.ms", conf_ms(c, "delivery.timeout.ms", 300_000))
        self.retry_backoff_ms = conf_ms(c, "retry.backoff.ms", 100)
        self.batch_num_messages = conf_ms(c, "batch.num.messages", 10_000)
        self.state = INIT if self.transactional_id else READY
        self.producer_id = -1
        self.epoch = -1
        self._pid_requesting = False
        self._coord: int | None = None
        self._api: _Api | None = None
        self.txn_err: str | None = None
        self.txn_errstr = ""
        self.txn_requires_epoch_bump = False
        self.txn_init_err: str | None = None
        self.txn_dr_fails = 0
        self.txn_req_cnt = 0
        self.fatal_error: str | None = None
        self.fatal_errstr = ""
        self._registered: set[str] = set()
        self._pending_parts: set[str] = set()
        self._waitresp_parts: set[str] = set()
        self._register_scheduled = False
        self._queues: dict[str, deque[Message]] = {}
        self._inflight: dict[str, list[Message]] = {}
        self._next_seq: dict[str, int] = {}
        self._send_scheduled: set[str] = set()
        self._flushing = 0
        self._rr = 0
        self._drs: deque[tuple[Message, KafkaError | None]] = deque()
        self.in_flight_count = 0  # messages queued or in flight (not yet reported)
        self.stats = {"app_sent_ok": 0, "produce_calls": 0, "delivered": 0, "failed": 0}
        self._epoch_bump_then: Callable[[], None] | None = None

    @property
    def txn_id(self) -> str:
        """transactional.id, where only a transactional producer gets (the requests of its transactions)."""
        assert self.transactional_id is not None, "a transactional request from a producer without transactional.id"
        return self.transactional_id

    # -- states -----------------------------------------------------------------------------------------------
    def _set_state(self, new: str) -> None:
        if new == self.state:
            return
        old = self.state
        self.state = new
        self.cluster.emit(ev.ClientState, actor=self.name, from_state=old, to_state=new)

    def _require(self, *states: str) -> KafkaError | None:
        if not self.transactional_id:
            return KafkaError("_NOT_CONFIGURED", "The Transactional API requires transactional.id to be configured")
        if self.state in states:
            return None
        if self.state == FATAL_ERROR:
            return KafkaError(self.txn_err or "_FATAL", self.txn_errstr, fatal=True)
        if self.state == ABORTABLE_ERROR:
            return KafkaError(self.txn_err or "_STATE", self.txn_errstr, txn_requires_abort=True)
        return KafkaError("_STATE", f"Operation not valid in state {self.state}")

    def _set_fatal(self, error: str, reason: str) -> None:
        """rd_kafka_txn_set_fatal_error / rd_kafka_set_fatal_error: sticky; queued messages are purged."""
        if self.fatal_error is None:
            self.fatal_error = error
            self.fatal_errstr = reason
        if self.transactional_id:
            self.txn_err = error
            self.txn_errstr = reason
            self._set_state(FATAL_ERROR)
        self._emit_error("background", KafkaError(error, reason, fatal=True))
        self._purge_queues()
        self._api_result(KafkaError(error, reason, fatal=True))

    def _set_abortable(self, error: str, reason: str, requires_bump: bool = False) -> None:
        """rd_kafka_txn_set_abortable_error0."""
        if self.fatal_error is not None:
            return
        if requires_bump:
            self.txn_requires_epoch_bump = True
        if self.txn_err:
            return
        self.txn_err = error
        self.txn_errstr = reason
        if self.state in (IN_TRANSACTION, BEGIN_COMMIT, COMMITTING_TRANSACTION):
            self._set_state(ABORTABLE_ERROR)
        self._emit_error("background", KafkaError(error, reason, txn_requires_abort=True))
        self._purge_queues()

    def _api_begin(self, name: str) -> _Api:
        """rd_kafka_txn_curr_api_begin: a transactional producer (rd_kafka_ensure_transactional), then no other
        API call in progress (_CONFLICT); the same call again resumes it."""
        if not self.transactional_id:
            raise KafkaException(
                KafkaError("_NOT_CONFIGURED", "The Transactional API requires transactional.id to be configured")
            )
        api = self._api
        if api is not None and api.name != name:
            raise KafkaException(
                KafkaError("_CONFLICT", f"Conflicting {api.name} API call is already in progress", retriable=True)
            )
        if api is None or api.done:
            api = self._api = _Api(name)
        return api

    def _api_result(self, error: KafkaError | None) -> None:
        api = self._api
        if api is not None and not api.done:
            api.done = True
            api.error = error

    def _api_return(self, api: _Api, error: KafkaError | None, resumable: bool = False) -> None:
        if (not resumable or error is None) and self._api is api:
            self._api = None
        if error is not None:
            self._emit_error(api.name, error)
            raise KafkaException(error)

    # -- the records' path: partition queues, ProduceRequest, delivery reports --------------------------------
    def _partitioner(self, key: Any, count: int) -> int:
        if key is None:
            # the scenario format: round robin for keyless records (librdkafka itself picks at random)
            self._rr += 1
            return (self._rr - 1) % count
        data = key.encode() if isinstance(key, str) else bytes(key)
        return (zlib.crc32(data) & 0xFFFFFFFF) % count  # consistent_random: CRC32 of the key

    def _kick(self, tp: str, delay_ms: int) -> None:
        if tp in self._send_scheduled and delay_ms > 0:
            return
        self._send_scheduled.add(tp)

        def go() -> None:
            self._send_scheduled.discard(tp)
            self._send(tp)

        self._after(delay_ms, go, f"{self.name} linger {tp}")

    def _linger_left(self, tp: str) -> int:
        queue = self._queues.get(tp)
        if not queue or self._flushing:
            return 0
        return max(0, queue[0].enqueued_ms + self.linger_ms - self.now_ms)

    def _send(self, tp: str) -> None:
        queue = self._queues.get(tp)
        if not queue or tp in self._inflight or self.fatal_error is not None:
            return
        if self.idempotent and self.producer_id < 0:
            return  # no producer id yet: held until InitProducerId answers
        if self.transactional_id and tp not in self._registered:
            return  # partition not yet added to the transaction
        batch = [queue.popleft() for _ in range(min(len(queue), self.batch_num_messages))]
        seq = -1
        if self.idempotent:
            seq = self._next_seq.get(tp, 0)
            self._next_seq[tp] = seq + len(batch)
        self._inflight[tp] = batch
        self._send_batch(tp, batch, seq, self.producer_id, self.epoch, self.now_ms + self.message_timeout_ms)

    def _send_batch(self, tp: str, batch: list[Message], seq: int, pid: int, epoch: int, expires_ms: int) -> None:
        c = self.cluster
        leader = c.leader_of(tp)
        values = tuple([m._value for m in batch])
        keys = None if all(m._key is None for m in batch) else tuple([m._key for m in batch])
        transactional = self.transactional_id is not None
        txid = self.transactional_id
        acks = self.acks

        def handler(broker: int, reply: Reply) -> None:
            c.handle_produce(
                broker, tp, txid, pid, epoch, seq, transactional, values, keys, acks, reply, client_id=self.name
            )

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            self._on_produce_response(tp, batch, seq, pid, epoch, expires_ms, error, result)

        detail = f"{tp} {len(batch)} record(s), producer {pid} epoch {epoch} seq {seq}"
        for m in batch:
            m.producer_id, m.epoch = pid, epoch
        if acks == 0:
            self._rpc("Produce", leader, f"leader {tp}(b{leader})", detail, handler, lambda e, r: None)
            self._after(
                0, lambda: self._on_produce_response(tp, batch, seq, pid, epoch, expires_ms, None, {"base_offset": -1})
            )
            return
        self._rpc("Produce", leader, f"leader {tp}(b{leader})", detail, handler, on_response)

    def _on_produce_response(
        self,
        tp: str,
        batch: list[Message],
        seq: int,
        pid: int,
        epoch: int,
        expires_ms: int,
        error: str | None,
        result: dict[str, Any],
    ) -> None:
        if error in RETRIABLE_PRODUCE and self.fatal_error is None:
            if self.now_ms + self.retry_backoff_ms < expires_ms:
                self._after(
                    self.retry_backoff_ms,
                    lambda: self._send_batch(tp, batch, seq, pid, epoch, expires_ms),
                    f"{self.name} produce retry {tp}",
                )
                return
            error = "_MSG_TIMED_OUT"
        self._inflight.pop(tp, None)
        if error is None:
            base = result.get("base_offset", -1)
            for i, m in enumerate(batch):
                m._offset = base + i if base >= 0 else -1001
                m._error = None  # _report(m, None), inlined: once per record
            self._drs.extend((m, None) for m in batch)
        else:
            for m in batch:
                self._report(m, KafkaError(error))
            if seq >= 0 and self._next_seq.get(tp) == seq + len(batch) and pid == self.producer_id:
                # the broker did not take this batch: the next one reuses its sequence numbers (in librdkafka
                # the idempotence layer renumbers after an epoch bump; the effect on the broker is the same)
                self._next_seq[tp] = seq
            if self.transactional_id and error == "INVALID_PRODUCER_EPOCH":
                self._set_fatal(
                    "_FENCED",
                    f"ProduceRequest for {tp} with {len(batch)} message(s) failed: "
                    f"{error}: transactional producer fenced by newer producer instance",
                )
            elif self.transactional_id:
                self._set_abortable(
                    error,
                    f"ProduceRequest for {tp} with {len(batch)} message(s) failed: {error}: "
                    "current transaction must be aborted",
                )
        self._kick(tp, 0)

    def _report(self, msg: Message, error: KafkaError | None) -> None:
        """Queue a delivery report; the application sees it in poll()/flush()."""
        msg._error = error
        if error is not None and self.transactional_id:
            self.txn_dr_fails += 1
        self._drs.append((msg, error))

    def _purge_queues(self) -> None:
        for tp, queue in self._queues.items():
            while queue:
                self._report(queue.popleft(), KafkaError("_PURGE_QUEUE", "Purged in queue"))
            self._send_scheduled.discard(tp)

    def _serve_drs(self) -> int:
        served = 0
        cluster = self.cluster
        while self._drs:
            msg, error = self._drs.popleft()
            self.in_flight_count -= 1
            served += 1
            if error is None:
                self.stats["delivered"] += 1
            else:
                self.stats["failed"] += 1
            if cluster.observed:  # one report per record: skip assembling events nobody sees
                cluster.emit(
                    ev.Delivery,
                    actor=self.name,
                    partition=f"{msg._topic}-{msg._partition}",
                    offset=msg._offset if error is None else None,
                    value=msg._value,
                    error=None if error is None else error.name(),
                )
            else:
                cluster.skip_event()
            if msg._on_delivery is not None:
                msg._on_delivery(error, msg)
        return served

    def _emit_error(self, op: str, error: KafkaError, detail: str = "") -> None:
        self.cluster.emit(
            ev.ClientError,
            actor=self.name,
            op=op,
            error=error.name(),
            fatal=error.fatal(),
            txn_requires_abort=error.txn_requires_abort(),
            detail=detail or error.str(),
        )
