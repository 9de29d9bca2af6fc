"""Producer and Consumer with confluent-kafka's methods and librdkafka's (2.16) behaviour, on the simulated cluster.

Blocking calls run the cluster's scheduler until their result is in (virtual time passes; other clients'
background work and the brokers' timers run meanwhile, in time order). Background work (linger, the
AddPartitionsToTxn registration, Produce requests, retries) is scheduled and happens whenever time moves.

librdkafka facts reproduced here (src/rdkafka_txnmgr.c, rdkafka_idempotence.c, rdkafka_request.c, rdkafka_msg.c):
- produce() on a transactional producer outside a transaction: _STATE (rd_kafka_check_produce); after a fatal
  error: _FATAL. Neither reaches the broker.
- A Produce answered INVALID_PRODUCER_EPOCH on a transactional producer raises the fatal error _FENCED; the
  delivery report itself carries INVALID_PRODUCER_EPOCH. Any other permanent produce error in a transaction is
  an abortable error. Abortable and fatal errors purge the queued (not in-flight) messages: their delivery
  reports say _PURGE_QUEUE.
- AddPartitionsToTxn: PRODUCER_FENCED / INVALID_PRODUCER_EPOCH / INVALID_TXN_STATE are fatal (fencing normalised
  to _FENCED); INVALID_PRODUCER_ID_MAPPING is abortable and needs an epoch bump (KIP-360), done on abort.
- AddOffsetsToTxn: INVALID_PRODUCER_EPOCH / INVALID_TXN_STATE / authorization errors fatal (fencing normalised to
  _FENCED); PRODUCER_FENCED is not in librdkafka's list and would be merely abortable, but Kafka never sends it
  to the v0 request librdkafka uses (see API_VERSIONS): a fenced send_offsets_to_transaction() is fatal _FENCED.
- EndTxn: PRODUCER_FENCED / INVALID_PRODUCER_EPOCH / INVALID_TXN_STATE fatal; INVALID_PRODUCER_ID_MAPPING
  abortable (+ bump); CONCURRENT_TRANSACTIONS and coordinator errors retried.
- InitProducerId: CONCURRENT_TRANSACTIONS and coordinator errors retried every 500 ms; fencing fatal;
  init_transactions() with no timeout waits at most 2 x transaction.timeout.ms and then returns the last
  InitProducerId error (e.g. CONCURRENT_TRANSACTIONS) or _TIMED_OUT.
- commit/abort with nothing registered send no EndTxn. commit after a failed delivery: _INCONSISTENT (abortable).
  A failed AddPartitionsToTxn still counts as a request sent (txn_req_cnt is restored), so a later abort sends
  EndTxn.

The transactional calls check in rdkafka_txnmgr.c's order (tests/sim/test_sim_client_audit.py, one test per call):
the arguments, rd_kafka_txn_curr_api_begin (transactional.id configured, no conflicting call in progress), no-op
conditions the public function tests itself (send_offsets_to_transaction with no valid offset succeeds whatever the
state), then the state in the call's op handler (a fatal or abortable state returns its error).

Request versions (API_VERSIONS) are what librdkafka 2.x negotiates with a Kafka 3.9 or 4.x broker (it implements
no part of KIP-890 part 2, so it keeps the classic protocol on 4.x; kafka-clients is javaclient.py):
AddPartitionsToTxn v0 and AddOffsetsToTxn v0 (rd_kafka_AddPartitionsToTxnRequest / rd_kafka_AddOffsetsToTxnRequest: supported range
0..0), EndTxn v1 (0..1), InitProducerId v4 (0..4), TxnOffsetCommit v3 (rdkafka_txnmgr.c: 0..3). The coordinator
answers a stale epoch according to the version (KIP-588): INVALID_PRODUCER_EPOCH below AddPartitionsToTxn/
AddOffsetsToTxn/EndTxn v2 and InitProducerId v4, PRODUCER_FENCED from then on.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from playground.engine import events as ev
from playground.sim.errors import KafkaError, KafkaException
from playground.sim.log import READ_COMMITTED

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
CRASHED = "CRASHED"
CLOSED = "CLOSED"

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


class TopicPartition:
    """confluent_kafka.TopicPartition."""

    __slots__ = ("error", "offset", "partition", "topic")

    def __init__(self, topic: str, partition: int = -1, offset: int = -1001) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.error: KafkaError | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def __repr__(self) -> str:
        return f"TopicPartition{{topic={self.topic},partition={self.partition},offset={self.offset}}}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopicPartition) and self.topic == other.topic and self.partition == other.partition

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))


class Message:
    """confluent_kafka.Message (values are returned as produced: str stays str)."""

    __slots__ = (
        "_error",
        "_key",
        "_offset",
        "_on_delivery",
        "_partition",
        "_topic",
        "_value",
        "enqueued_ms",
        "epoch",
        "producer_id",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        value: Any,
        key: Any = None,
        offset: int = -1001,
        error: KafkaError | None = None,
    ) -> None:
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._key = key
        self._value = value
        self._error = error
        self._on_delivery: Callable[[KafkaError | None, Message], None] | None = None
        self.producer_id = -1
        self.epoch = -1
        self.enqueued_ms = 0

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> Any:
        return self._key

    def value(self) -> Any:
        return self._value

    def error(self) -> KafkaError | None:
        return self._error

    def __repr__(self) -> str:
        return f"Message({self._topic}-{self._partition}@{self._offset} {self._value!r})"


def _conf_ms(conf: dict[str, Any], key: str, default: int) -> int:
    value = conf.get(key, default)
    return int(value)


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


class _Api:
    """The one transactional API call in progress (librdkafka's txn_curr_api)."""

    __slots__ = ("done", "error", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.done = False
        self.error: KafkaError | None = None


class _Client:
    def __init__(self, conf: dict[str, Any], cluster: Cluster, name: str | None) -> None:
        self.conf = dict(conf)
        self.cluster = cluster
        self.name = name or str(self.conf.get("client.id", "rdkafka"))
        self.alive = True
        self.api_cap_ms = _conf_ms(self.conf, "sim.api.timeout.ms", 60_000)

    def _is_alive(self) -> bool:
        return self.alive

    @property
    def now_ms(self) -> int:
        return self.cluster.scheduler.now_ms

    def _after(self, delay_ms: int, fn: Callable[[], None], label: str = "") -> None:
        def run() -> None:
            if self.alive:
                fn()

        self.cluster.scheduler.after(delay_ms, run, label=label or f"{self.name} timer")

    def _deadline(self, timeout: float | None, cap_ms: int | None = None) -> int:
        if timeout is None or timeout < 0:
            return self.now_ms + (cap_ms if cap_ms is not None else self.api_cap_ms)
        return self.now_ms + round(timeout * 1000)

    def _wait(self, done: Callable[[], bool], deadline_ms: int) -> bool:
        return self.cluster.scheduler.run_until(done, deadline_ms)

    def _rpc(
        self,
        name: str,
        broker: int | None,
        dst_label: str,
        detail: str,
        handler: Callable[[Callable[..., None]], None],
        on_response: Callable[[str | None, dict[str, Any]], None],
    ) -> None:
        self.cluster.rpc(
            name,
            self.name,
            broker,
            dst_label,
            detail,
            handler,
            on_response,
            src_alive=self._is_alive,
            version=API_VERSIONS.get(name),
        )

    def _find_coordinator(self, key: str, kind: str, on_found: Callable[[int], None], retry_ms: int = 100) -> None:
        """FindCoordinator through any reachable broker, retried until it answers with a live coordinator."""
        c = self.cluster
        boot = c.any_up_broker()

        def handler(reply: Callable[..., None]) -> None:
            c.handle_find_coordinator(key, kind, reply)

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            if error:
                self._after(
                    retry_ms,
                    lambda: self._find_coordinator(key, kind, on_found, retry_ms),
                    f"{self.name} FindCoordinator retry",
                )
            else:
                on_found(result["coordinator"])

        self._rpc("FindCoordinator", boot, f"b{boot}" if boot else "bootstrap", f"{kind} {key}", handler, on_response)

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


class Producer(_Client):
    """confluent_kafka.Producer on the simulated cluster: Producer(conf, cluster=cluster, name="A")."""

    def __init__(self, conf: dict[str, Any], *, cluster: Cluster, name: str | None = None) -> None:
        super().__init__(conf, cluster, name)
        c = self.conf
        self.transactional_id: str | None = c.get("transactional.id") or None
        self.idempotent = self.transactional_id is not None or _bool(c.get("enable.idempotence", False))
        acks = str(c.get("acks", c.get("request.required.acks", "all"))).lower()
        self.acks = -1 if acks in ("all", "-1") else int(acks)
        if self.idempotent:
            self.acks = -1
        self.linger_ms = _conf_ms(c, "linger.ms", _conf_ms(c, "queue.buffering.max.ms", 5))
        self.transaction_timeout_ms = _conf_ms(c, "transaction.timeout.ms", 60_000)
        self.message_timeout_ms = _conf_ms(c, "message.timeout.ms", _conf_ms(c, "delivery.timeout.ms", 300_000))
        self.retry_backoff_ms = _conf_ms(c, "retry.backoff.ms", 100)
        self.batch_num_messages = _conf_ms(c, "batch.num.messages", 10_000)
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
        if self.idempotent and not self.transactional_id:
            self._request_pid()  # rd_kafka_idemp_start at creation

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

    # -- producer id ------------------------------------------------------------------------------------------
    def _request_pid(self, bump: bool = False) -> None:
        """rd_kafka_idemp_request_pid: InitProducerId, from the transaction coordinator when transactional."""
        if self._pid_requesting or not self.alive:
            return
        self._pid_requesting = True
        c = self.cluster
        expected = (self.producer_id, self.epoch) if bump and self.producer_id >= 0 else None

        def send(broker: int | None) -> None:
            detail = f"{self.transactional_id or '(idempotent)'} timeout {self.transaction_timeout_ms} ms" + (
                f", bump {expected[0]}/{expected[1]}" if expected else ""
            )

            def handler(reply: Callable[..., None]) -> None:
                c.handle_init_producer_id(
                    broker,
                    self.transactional_id,
                    self.transaction_timeout_ms,
                    expected,
                    reply,
                    version=API_VERSIONS["InitProducerId"],
                )

            label = f"coordinator(b{broker})" if self.transactional_id else f"b{broker}"
            self._rpc("InitProducerId", broker, label, detail, handler, on_response)

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            self._pid_requesting = False
            if error is None:
                self.producer_id = result["producer_id"]
                self.epoch = result["producer_epoch"]
                self._next_seq.clear()
                self.txn_init_err = None
                self._pid_assigned()
                return
            if error in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"):
                self._set_fatal(
                    "_FENCED",
                    f"Producer fenced by newer instance: Failed to acquire transactional PID from broker: {error}",
                )
                return
            if error in (
                "INVALID_TRANSACTION_TIMEOUT",
                "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                "CLUSTER_AUTHORIZATION_FAILED",
            ):
                self._set_fatal(error, f"Failed to acquire transactional PID: {error}")
                return
            if error in COORDINATOR_ERRORS:
                self._coord = None
            self.txn_init_err = error
            # rd_kafka_idemp_pid_timer_restart: try again after 500 ms
            self._after(500, lambda: self._request_pid(bump), f"{self.name} InitProducerId retry")

        if self.transactional_id:
            self._with_coordinator(send)
        else:
            send(c.any_up_broker())

    def _with_coordinator(self, then: Callable[[int], None]) -> None:
        if self._coord is not None:
            then(self._coord)
            return

        def found(broker: int) -> None:
            self._coord = broker
            then(broker)

        self._find_coordinator(self.transactional_id or "", "transaction", found)

    def _pid_assigned(self) -> None:
        if self.transactional_id:
            if self.state == WAIT_PID:
                self._set_state(READY_NOT_ACKED)
                self._api_result(None)
            elif self._epoch_bump_then is not None:
                then, self._epoch_bump_then = self._epoch_bump_then, None
                then()
        for tp in list(self._queues):
            self._kick(tp, self._linger_left(tp))

    # -- produce ----------------------------------------------------------------------------------------------
    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int = -1,
        on_delivery: Callable[[KafkaError | None, Message], None] | None = None,
        callback: Callable[[KafkaError | None, Message], None] | None = None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> None:
        self.stats["produce_calls"] += 1
        if not self.alive:
            raise RuntimeError("Producer has been closed")
        if self.fatal_error is not None:
            raise KafkaException(
                KafkaError(
                    "_FATAL", f"Producing not allowed since a previous fatal error was raised: {self.fatal_errstr}"
                )
            )
        if self.transactional_id and self.state != IN_TRANSACTION:
            raise KafkaException(KafkaError("_STATE", f"Producing not allowed in transactional state {self.state}"))
        count = self.cluster.partition_count(topic)
        if count == 0:
            raise KafkaException(KafkaError("_UNKNOWN_TOPIC", f"Unknown topic {topic}"))
        if partition is None or partition < 0:
            partition = self._partitioner(key, count)
        elif partition >= count:
            raise KafkaException(KafkaError("_UNKNOWN_PARTITION", f"Unknown partition {topic} [{partition}]"))
        msg = Message(topic, partition, value, key)
        msg._on_delivery = on_delivery or callback
        msg.enqueued_ms = self.now_ms
        tp = f"{topic}-{partition}"
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        queue.append(msg)
        self.in_flight_count += 1
        if (
            self.transactional_id
            and tp not in self._registered
            and tp not in self._pending_parts
            and tp not in self._waitresp_parts
        ):
            self._pending_parts.add(tp)
            self._schedule_register(0)
        delay = 0 if self._flushing else self.linger_ms
        if delay == 0 or tp not in self._send_scheduled:  # else the linger timer already running takes it along
            self._kick(tp, delay)

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

        def handler(reply: Callable[..., None]) -> None:
            c.handle_produce(
                leader, tp, txid, pid, epoch, seq, transactional, values, keys, acks, reply, client_id=self.name
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

    # -- transaction registration (AddPartitionsToTxn) --------------------------------------------------------
    def _schedule_register(self, delay_ms: int) -> None:
        if self._register_scheduled:
            return
        self._register_scheduled = True

        def go() -> None:
            self._register_scheduled = False
            self._register_partitions()

        self._after(delay_ms, go, f"{self.name} register partitions")

    def _register_partitions(self) -> None:
        if not self._pending_parts or self._waitresp_parts or self.state not in (IN_TRANSACTION, BEGIN_COMMIT):
            return
        if self.fatal_error is not None or self.producer_id < 0:
            return
        parts = frozenset(self._pending_parts)
        self._pending_parts.clear()
        self._waitresp_parts |= parts
        self.txn_req_cnt += 1
        pid, epoch, txid = self.producer_id, self.epoch, self.transactional_id
        c = self.cluster

        def send(broker: int) -> None:
            def handler(reply: Callable[..., None]) -> None:
                c.handle_add_partitions(
                    broker, txid, pid, epoch, parts, reply, version=API_VERSIONS["AddPartitionsToTxn"]
                )

            self._rpc(
                "AddPartitionsToTxn",
                broker,
                f"coordinator(b{broker})",
                f"{', '.join(sorted(parts))}, producer {pid} epoch {epoch}",
                handler,
                on_response,
            )

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            self._waitresp_parts -= parts
            if error != "_TRANSPORT" and self.state not in (IN_TRANSACTION, BEGIN_COMMIT):
                # rd_kafka_txn_handle_AddPartitionsToTxn: an answer after the transaction failed or is being
                # aborted is _OUTDATED: un-counted (txn_req_cnt--) and otherwise ignored
                self.txn_req_cnt -= 1
                return
            if error is None:
                self._registered |= parts
                for tp in sorted(parts):
                    self._kick(tp, self._linger_left(tp))
                self._schedule_register(0)
                return
            # any other error: librdkafka decrements txn_req_cnt and counts it back at once ("we can't be sure if
            # the request was received by the broker"), so that abort_transaction() sends EndTxn
            if self.state not in (IN_TRANSACTION, BEGIN_COMMIT):
                return  # a transport error while aborting: nothing left to register
            self._pending_parts |= parts
            if error in COORDINATOR_ERRORS:
                self._coord = None
                self._schedule_register(500)  # librdkafka's AddPartitionsToTxn retry backoff
            elif error in ("CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS", "UNKNOWN_TOPIC_OR_PARTITION"):
                self._schedule_register(20 if error == "CONCURRENT_TRANSACTIONS" else 500)
            elif error in FENCING or error in (
                "INVALID_TXN_STATE",
                "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                "CLUSTER_AUTHORIZATION_FAILED",
            ):
                self._set_fatal(normalize(error), f"Failed to add partitions to transaction: {normalize(error)}")
            elif error in ("INVALID_PRODUCER_ID_MAPPING", "UNKNOWN_PRODUCER_ID"):
                self._set_abortable(error, f"Failed to add partition(s) to transaction: {error}", requires_bump=True)
            else:
                self._set_abortable(error, f"Failed to add partition(s) to transaction: {error}")

        self._with_coordinator(send)

    # -- poll / flush -----------------------------------------------------------------------------------------
    def poll(self, timeout: float | None = 0) -> int:
        if timeout and timeout > 0:
            deadline = self._deadline(timeout)
            self._wait(lambda: bool(self._drs), deadline)
        return self._serve_drs()

    def flush(self, timeout: float | None = None) -> int:
        deadline = self._deadline(timeout)
        self._flushing += 1
        try:
            for tp in list(self._queues):
                if self._queues[tp]:
                    self._kick(tp, 0)
            # outstanding() == 0, spelled out: this runs after every scheduler entry while flushing
            self._wait(lambda: self.in_flight_count == len(self._drs), deadline)
        finally:
            self._flushing -= 1
        self._serve_drs()
        return self.in_flight_count

    def outstanding(self) -> int:
        """Messages produced and not yet answered by the cluster (reports not yet served excluded)."""
        return self.in_flight_count - len(self._drs)

    def __len__(self) -> int:
        return self.in_flight_count

    # -- transactional API ------------------------------------------------------------------------------------
    def init_transactions(self, timeout: float | None = None) -> None:
        cap = self.transaction_timeout_ms * 2  # librdkafka caps an infinite init timeout at 2 x txn timeout
        deadline = self._deadline(timeout, cap)
        api = self._api_begin("init_transactions")
        error = self._require(INIT, WAIT_PID, READY_NOT_ACKED)
        if error is not None:
            self._api_return(api, error)
        if self.state == READY_NOT_ACKED:
            api.done = True
        else:
            self._set_state(WAIT_PID)
            self.txn_init_err = None
            self._request_pid()
        if not self._wait(lambda: api.done, deadline):
            err = normalize(self.txn_init_err) if self.txn_init_err else "_TIMED_OUT"
            if err in ("_TRANSPORT", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"):
                err = "_TIMED_OUT"
            self._api_return(
                api, KafkaError(err, f"Failed to initialize Producer ID: {err}", retriable=True), resumable=True
            )
        if api.error is not None:
            self._api_return(api, api.error)
        self._set_state(READY)
        self._api_return(api, None)

    def begin_transaction(self) -> None:
        api = self._api_begin("begin_transaction")
        error = self._require(READY)
        if error is not None:
            self._api_return(api, error)
        self._set_state(IN_TRANSACTION)
        self.txn_dr_fails = 0
        self.txn_err = None
        self.txn_errstr = ""
        self._api_return(api, None)

    def send_offsets_to_transaction(
        self, positions: Iterable[TopicPartition], group_metadata: GroupMetadata, timeout: float | None = None
    ) -> None:
        """rd_kafka_send_offsets_to_transaction: the arguments, then rd_kafka_txn_curr_api_begin (transactional,
        no conflicting call; the timeout capped to transaction.timeout.ms), then offsets holding nothing valid
        return success *before* the transaction state is looked at (rd_kafka_topic_partition_list_match with
        rd_kafka_topic_partition_match_valid_offset: "nothing was consumed, this is not an error, do nothing"),
        and only then rd_kafka_txn_op_send_offsets_to_transaction requires IN_TRANSACTION."""
        if group_metadata is None or positions is None:
            raise KafkaException(KafkaError("_INVALID_ARG", "cgmetadata and offsets are required parameters"))
        api = self._api_begin("send_offsets_to_transaction")
        # cap_timeout: an infinite or longer timeout becomes the transaction timeout
        cap = self.now_ms + self.transaction_timeout_ms
        deadline = min(self._deadline(timeout, self.transaction_timeout_ms), cap)
        offsets = {tp.name: tp.offset for tp in positions if tp.offset >= 0}
        if not offsets:
            self._api_return(api, None)  # nothing consumed: nothing to do, whatever the state
            return
        error = self._require(IN_TRANSACTION)
        if error is not None:
            self._api_return(api, error)
        self.txn_req_cnt += 1
        self._add_offsets(api, offsets, group_metadata, deadline)
        if not self._wait(lambda: api.done, deadline):
            self._api_return(api, KafkaError("_TIMED_OUT", "send_offsets_to_transaction timed out", retriable=True))
        self._api_return(api, api.error)

    def _add_offsets(self, api: _Api, offsets: dict[str, int], gm: GroupMetadata, deadline: int) -> None:
        c = self.cluster
        pid, epoch, txid = self.producer_id, self.epoch, self.transactional_id

        def send(broker: int) -> None:
            def handler(reply: Callable[..., None]) -> None:
                c.handle_add_offsets(
                    broker, txid, pid, epoch, gm.group_id, reply, version=API_VERSIONS["AddOffsetsToTxn"]
                )

            self._rpc(
                "AddOffsetsToTxn",
                broker,
                f"coordinator(b{broker})",
                f"group {gm.group_id}, producer {pid} epoch {epoch}",
                handler,
                on_response,
            )

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            if api.done:
                return
            if error is None:
                self._txn_offset_commit(api, offsets, gm, deadline)
                return
            if error in COORDINATOR_ERRORS:
                self._coord = None
            if error in COORDINATOR_ERRORS or error in (
                "CONCURRENT_TRANSACTIONS",
                "COORDINATOR_LOAD_IN_PROGRESS",
                "UNKNOWN_TOPIC_OR_PARTITION",
            ):
                if self.now_ms < deadline:
                    self._after(
                        self.retry_backoff_ms,
                        lambda: self._with_coordinator(send),
                        f"{self.name} AddOffsetsToTxn retry",
                    )
                    return
                self._api_result(KafkaError(error, retriable=True))
                return
            self.txn_req_cnt -= 1
            code = normalize(error)
            if error in (
                "INVALID_PRODUCER_EPOCH",
                "INVALID_TXN_STATE",
                "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                "CLUSTER_AUTHORIZATION_FAILED",
            ):
                self._set_fatal(code, f"Failed to add offsets to transaction: {error}")
                return
            # everything else, PRODUCER_FENCED included, is "permanent": an abortable error
            reason = f"Failed to add offsets to transaction: {error}"
            self._set_abortable(code, reason)
            self._api_result(KafkaError(code, reason, txn_requires_abort=True))

        self._with_coordinator(send)

    def _txn_offset_commit(self, api: _Api, offsets: dict[str, int], gm: GroupMetadata, deadline: int) -> None:
        c = self.cluster
        pid, epoch, _txid = self.producer_id, self.epoch, self.transactional_id

        def send(broker: int) -> None:
            def handler(reply: Callable[..., None]) -> None:
                c.handle_txn_offset_commit(
                    broker, gm.group_id, pid, epoch, gm.generation_id, gm.member_id, offsets, reply
                )

            self._rpc(
                "TxnOffsetCommit",
                broker,
                f"group coordinator(b{broker})",
                f"group {gm.group_id} {', '.join(f'{k}={v}' for k, v in sorted(offsets.items()))}, "
                f"producer {pid} epoch {epoch}",
                handler,
                on_response,
            )

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            if api.done:
                return
            if error is None:
                self._api_result(None)
                return
            if error in COORDINATOR_ERRORS or error in (
                "CONCURRENT_TRANSACTIONS",
                "COORDINATOR_LOAD_IN_PROGRESS",
                "UNKNOWN_TOPIC_OR_PARTITION",
                "REQUEST_TIMED_OUT",
            ):
                if self.now_ms < deadline:
                    self._after(
                        500,
                        lambda: self._find_coordinator(gm.group_id, "group", send),
                        f"{self.name} TxnOffsetCommit retry",
                    )
                    return
                error = "_TIMED_OUT"
            code = normalize(error)
            if error in (
                "INVALID_PRODUCER_EPOCH",
                "INVALID_TXN_STATE",
                "INVALID_PRODUCER_ID_MAPPING",
                "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                "CLUSTER_AUTHORIZATION_FAILED",
            ):
                self._set_fatal(code, f"Failed to commit offsets to transaction: {error}")
                return
            reason = f"Failed to commit offsets to transaction: {error}"
            self._set_abortable(code, reason)
            self._api_result(KafkaError(code, reason, txn_requires_abort=True))

        self._find_coordinator(gm.group_id, "group", send)

    def commit_transaction(self, timeout: float | None = None) -> None:
        deadline = self._deadline(timeout)
        api = self._api_begin("commit_transaction")
        error = self._require(IN_TRANSACTION, BEGIN_COMMIT, COMMITTING_TRANSACTION, COMMIT_NOT_ACKED)
        if error is not None:
            self._api_return(api, error)
        if self.state == IN_TRANSACTION:
            self._set_state(BEGIN_COMMIT)
            self._schedule_register(0)  # anything still pending goes out with the flush
        if self.flush(max(0.0, (deadline - self.now_ms) / 1000)) > 0:
            self._api_return(
                api,
                KafkaError(
                    "_TIMED_OUT", "Failed to flush all outstanding messages within the API timeout", retriable=True
                ),
                resumable=True,
            )
        if self.state == COMMIT_NOT_ACKED:
            self._finish_txn()
            self._api_return(api, None)
            return
        error = self._require(BEGIN_COMMIT, COMMITTING_TRANSACTION)
        if error is not None:
            self._api_return(api, error)
        if self.state == BEGIN_COMMIT:
            if self.txn_dr_fails > 0:
                reason = f"{self.txn_dr_fails} message(s) failed delivery (see individual delivery reports)"
                self._set_abortable("_INCONSISTENT", reason)
                self._api_return(api, KafkaError("_INCONSISTENT", reason, txn_requires_abort=True))
            if self.txn_req_cnt == 0:
                self._set_state(COMMIT_NOT_ACKED)  # nothing registered: no EndTxn
                self._finish_txn()
                self._api_return(api, None)
                return
            self._set_state(COMMITTING_TRANSACTION)
            api.done = False
            self._end_txn(commit=True)
        if not self._wait(lambda: api.done, deadline):
            self._api_return(
                api, KafkaError("_TIMED_OUT", "commit_transaction timed out", retriable=True), resumable=True
            )
        if api.error is not None:
            self._api_return(api, api.error)
        self._finish_txn()
        self._api_return(api, None)

    def abort_transaction(self, timeout: float | None = None) -> None:
        deadline = self._deadline(timeout)
        api = self._api_begin("abort_transaction")
        error = self._require(IN_TRANSACTION, BEGIN_ABORT, ABORTING_TRANSACTION, ABORTABLE_ERROR, ABORT_NOT_ACKED)
        if error is not None:
            self._api_return(api, error)
        if self.state in (IN_TRANSACTION, ABORTABLE_ERROR):
            self._set_state(BEGIN_ABORT)
            self._pending_parts.clear()
        self._purge_queues()
        self._wait(lambda: self.outstanding() == 0, deadline)
        self._serve_drs()
        if self.outstanding() > 0:
            self._api_return(
                api,
                KafkaError(
                    "_TIMED_OUT", "Failed to flush all outstanding messages within the API timeout", retriable=True
                ),
                resumable=True,
            )
        if self.state == ABORT_NOT_ACKED:
            self._finish_txn()
            self._api_return(api, None)
            return
        error = self._require(BEGIN_ABORT, ABORTING_TRANSACTION)
        if error is not None:
            self._api_return(api, error)
        if self.state == BEGIN_ABORT:
            api.done = False
            self._set_state(ABORTING_TRANSACTION)
            if self.txn_req_cnt == 0:
                self._endtxn_complete(commit=False)
            else:
                self._end_txn(commit=False)
        if not self._wait(lambda: api.done, deadline):
            self._api_return(
                api, KafkaError("_TIMED_OUT", "abort_transaction timed out", retriable=True), resumable=True
            )
        if api.error is not None:
            self._api_return(api, api.error)
        self._finish_txn()
        self._api_return(api, None)

    def _end_txn(self, commit: bool) -> None:
        c = self.cluster
        pid, epoch, txid = self.producer_id, self.epoch, self.transactional_id

        def send(broker: int) -> None:
            def handler(reply: Callable[..., None]) -> None:
                c.handle_end_txn(broker, txid, pid, epoch, commit, reply, version=API_VERSIONS["EndTxn"])

            self._rpc(
                "EndTxn",
                broker,
                f"coordinator(b{broker})",
                f"{'commit' if commit else 'abort'}, producer {pid} epoch {epoch}",
                handler,
                on_response,
            )

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            if self._api is None or self._api.done:
                return
            if error is None:
                self._endtxn_complete(commit)
                return
            if error in COORDINATOR_ERRORS:
                self._coord = None
                self._after(self.retry_backoff_ms, lambda: self._with_coordinator(send), f"{self.name} EndTxn retry")
                return
            if error in ("CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS"):
                self._after(self.retry_backoff_ms, lambda: self._with_coordinator(send), f"{self.name} EndTxn retry")
                return
            code = normalize(error)
            reason = f"EndTxn {'commit' if commit else 'abort'} failed: {error}"
            if error in FENCING or error in (
                "INVALID_TXN_STATE",
                "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                "CLUSTER_AUTHORIZATION_FAILED",
            ):
                self._set_fatal(code, f"Failed to end transaction: {error}")
                return
            requires_bump = error in ("INVALID_PRODUCER_ID_MAPPING", "UNKNOWN_PRODUCER_ID")
            if requires_bump and not commit:
                # KIP-360: let the idempotence layer bump the epoch, then the abort is done
                self.txn_requires_epoch_bump = True
                self._endtxn_complete(commit=False)
                return
            if self.state == ABORTING_TRANSACTION:
                self._set_state(BEGIN_ABORT)
            self._set_abortable(code, reason, requires_bump=requires_bump)
            self._api_result(KafkaError(code, reason, txn_requires_abort=True))

        self._with_coordinator(send)

    def _endtxn_complete(self, commit: bool) -> None:
        """rd_kafka_txn_endtxn_complete: an epoch bump first if one is needed (after an abort)."""
        if self.txn_requires_epoch_bump and not commit:

            def bumped() -> None:
                self._set_state(ABORT_NOT_ACKED)
                self._api_result(None)

            self._epoch_bump_then = bumped
            self._request_pid(bump=True)
            return
        self._set_state(COMMIT_NOT_ACKED if commit else ABORT_NOT_ACKED)
        self._api_result(None)

    def _finish_txn(self) -> None:
        """rd_kafka_txn_complete: back to READY with no partitions."""
        self._registered.clear()
        self._pending_parts.clear()
        self._waitresp_parts.clear()
        self.txn_requires_epoch_bump = False
        self.txn_req_cnt = 0
        self.txn_err = None
        self._set_state(READY)

    # -- lifecycle --------------------------------------------------------------------------------------------
    def close(self, timeout: float | None = None) -> None:
        """confluent-kafka >= 2.16: close() aborts an open transaction; otherwise outstanding messages are
        flushed first."""
        if not self.alive:
            return
        try:
            if self.transactional_id and self.state in (
                IN_TRANSACTION,
                ABORTABLE_ERROR,
                BEGIN_ABORT,
                ABORTING_TRANSACTION,
                BEGIN_COMMIT,
            ):
                self.abort_transaction(timeout)
            elif self.fatal_error is None:
                self.flush(timeout)
        except KafkaException:
            pass
        self._purge_queues()
        self._serve_drs()
        self.alive = False
        self._set_state(CLOSED)

    def crash(self) -> None:
        """The process dies: nothing more is sent, buffered records and undelivered reports are lost. Requests
        already on the wire still reach the brokers."""
        self.alive = False
        self._queues.clear()
        self._drs.clear()
        self._set_state(CRASHED)


class GroupMetadata:
    """What consumer_group_metadata() returns (KIP-447): group id, generation and member id."""

    __slots__ = ("generation_id", "group_id", "member_id")

    def __init__(self, group_id: str, generation_id: int = -1, member_id: str = "") -> None:
        self.group_id = group_id
        self.generation_id = generation_id
        self.member_id = member_id

    def __repr__(self) -> str:
        return f"GroupMetadata({self.group_id}, generation {self.generation_id}, {self.member_id})"


class Consumer(_Client):
    """confluent_kafka.Consumer on the simulated cluster: Consumer(conf, cluster=cluster, name="rc").

    poll/consume fetch from the partition leaders (one Fetch round trip per leader), capped at the LSO for
    read_committed (the default isolation level, as in librdkafka) and at the high watermark otherwise."""

    def __init__(self, conf: dict[str, Any], *, cluster: Cluster, name: str | None = None) -> None:
        super().__init__(conf, cluster, name)
        c = self.conf
        self.group_id: str | None = c.get("group.id") or None
        self.isolation_level = str(c.get("isolation.level", READ_COMMITTED))
        self.auto_offset_reset = str(c.get("auto.offset.reset", "latest"))
        self.enable_auto_commit = _bool(c.get("enable.auto.commit", True))
        self.auto_commit_interval_ms = _conf_ms(c, "auto.commit.interval.ms", 5000)
        self.fetch_wait_max_ms = _conf_ms(c, "fetch.wait.max.ms", 500)
        self.state = "RUNNING"
        self.topics: tuple[str, ...] = ()
        self.member_id: str | None = None
        self.generation = -1
        self.assigned: list[str] = []
        self.manual = False
        self.positions: dict[str, int] = {}
        # partitions where the application has been served something (a record or, silently, a control record):
        # librdkafka's app position is INVALID (-1001) until then
        self._served: set[str] = set()
        self._joining = False
        self._buffer: deque[Message] = deque()
        self.received: dict[str, list[tuple[int, Any]]] = {}
        self._auto_commit_started = False

    # -- assignment -------------------------------------------------------------------------------------------
    def subscribe(self, topics: list[str], on_assign: Any = None, on_revoke: Any = None) -> None:
        if not self.group_id:
            raise KafkaException(KafkaError("_INVALID_ARG", "subscribe() requires group.id"))
        self.topics = tuple(topics)
        self.manual = False

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.manual = True
        self.assigned = [tp.name for tp in partitions]
        self._served.clear()
        for tp in partitions:
            if tp.offset >= 0:
                self.positions[tp.name] = tp.offset
            else:
                self.positions.pop(tp.name, None)

    def assignment(self) -> list[TopicPartition]:
        return [self._tp(name) for name in self.assigned]

    @staticmethod
    def _tp(name: str, offset: int = -1001) -> TopicPartition:
        topic, _, part = name.rpartition("-")
        return TopicPartition(topic, int(part), offset)

    def _ensure_member(self, deadline: int) -> bool:
        """JoinGroup/SyncGroup until this member has an assignment in a Stable group (False while rebalancing)."""
        if self.manual:
            return True
        c = self.cluster
        if self.member_id is None and not self._joining:
            self._joining = True

            def send(broker: int) -> None:
                def handler(reply: Callable[..., None]) -> None:
                    c.handle_join_group(broker, self.group_id, self.name, self.topics, reply)

                def on_response(error: str | None, result: dict[str, Any]) -> None:
                    if error:
                        self._after(self.api_retry_ms, lambda: self._find_coordinator(self.group_id, "group", send))
                        return
                    self._joining = False
                    self.member_id = result["member_id"]

                self._rpc(
                    "JoinGroup",
                    broker,
                    f"group coordinator(b{broker})",
                    f"group {self.group_id}, topics {', '.join(self.topics)}",
                    handler,
                    on_response,
                )

            self._find_coordinator(self.group_id, "group", send)
            self._wait(lambda: self.member_id is not None, deadline)
        if self.member_id is None:
            return False
        current = c.groups.assignment(self.group_id, self.member_id)
        if current is None:
            return False
        generation, parts = current
        if generation != self.generation:
            # eager rebalance: everything revoked, the new assignment starts from the committed offsets
            self.generation = generation
            self.assigned = list(parts)
            self.positions.clear()
            self._served.clear()
            self._buffer.clear()
            c.emit(
                ev.ClientState,
                actor=self.name,
                from_state="REBALANCING",
                to_state=f"ASSIGNED {','.join(parts) or '-'} (generation {generation})",
            )
        return True

    api_retry_ms = 100

    def _ensure_positions(self, deadline: int) -> None:
        missing = [tp for tp in self.assigned if tp not in self.positions]
        if not missing:
            return
        committed: dict[str, int | None] = {}
        if self.group_id:
            got = self._fetch_committed(
                tuple(missing), require_stable=self.isolation_level == READ_COMMITTED, deadline=deadline
            )
            if got is None:
                return  # UNSTABLE_OFFSET_COMMIT or coordinator trouble: try again on the next poll
            committed = got
        for tp in missing:
            off = committed.get(tp)
            if off is not None:
                self.positions[tp] = off
            else:
                reset = self._list_offset(
                    tp, latest=self.auto_offset_reset in ("latest", "end", "largest"), deadline=deadline
                )
                if reset is not None:
                    self.positions[tp] = reset

    def _fetch_committed(
        self, partitions: tuple[str, ...], require_stable: bool, deadline: int
    ) -> dict[str, int | None] | None:
        c = self.cluster
        box: dict[str, Any] = {}

        def send(broker: int) -> None:
            def handler(reply: Callable[..., None]) -> None:
                c.handle_offset_fetch(broker, self.group_id, partitions, require_stable, reply)

            def on_response(error: str | None, result: dict[str, Any]) -> None:
                box["error"] = error
                box["offsets"] = result.get("offsets")

            self._rpc(
                "OffsetFetch",
                broker,
                f"group coordinator(b{broker})",
                f"group {self.group_id} {', '.join(partitions)}{' (require stable)' if require_stable else ''}",
                handler,
                on_response,
            )

        self._find_coordinator(self.group_id, "group", send)
        self._wait(lambda: "error" in box, deadline)
        if box.get("error") is not None or "error" not in box:
            return None
        return box["offsets"]

    def _list_offset(self, tp: str, latest: bool, deadline: int) -> int | None:
        c = self.cluster
        leader = c.leader_of(tp)
        box: dict[str, Any] = {}

        def handler(reply: Callable[..., None]) -> None:
            c.handle_list_offsets(leader, tp, latest, self.isolation_level, reply)

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            box["error"] = error
            box["offset"] = result.get("offset")

        self._rpc(
            "ListOffsets",
            leader,
            f"leader {tp}(b{leader})",
            f"{tp} {'LATEST' if latest else 'EARLIEST'} {self.isolation_level}",
            handler,
            on_response,
        )
        self._wait(lambda: "error" in box, deadline)
        return box.get("offset") if box.get("error") is None else None

    # -- consuming --------------------------------------------------------------------------------------------
    def _fetch_round(self, max_records: int | None, deadline: int) -> None:
        """One Fetch round trip to every leader of an assigned partition with a known position."""
        c = self.cluster
        wanted = [tp for tp in self.assigned if tp in self.positions]
        if not wanted:
            return
        pending = {"n": 0}
        for tp in wanted:
            leader = c.leader_of(tp)
            position = self.positions[tp]
            pending["n"] += 1

            def handler(
                reply: Callable[..., None], tp: str = tp, leader: int | None = leader, position: int = position
            ) -> None:
                c.handle_fetch(
                    leader, tp, position, self.isolation_level, max_records, reply, max_wait_ms=self.fetch_wait_max_ms
                )

            def on_response(error: str | None, result: dict[str, Any], tp: str = tp, position: int = position) -> None:
                pending["n"] -= 1
                if error is not None or self.positions.get(tp) != position:
                    return
                for offset, key, value, pid, epoch in result["records"]:
                    msg = Message(*self._split(tp), value, key, offset)
                    msg.producer_id, msg.epoch = pid, epoch
                    self._buffer.append(msg)
                if result["records"] or result["position"] != position:
                    self._served.add(tp)
                self.positions[tp] = result["position"]

            self._rpc(
                "Fetch",
                leader,
                f"leader {tp}(b{leader})",
                f"{tp} from {position} ({self.isolation_level})",
                handler,
                on_response,
            )
        self._wait(lambda: pending["n"] == 0, deadline)

    @staticmethod
    def _split(tp: str) -> tuple[str, int]:
        topic, _, part = tp.rpartition("-")
        return topic, int(part)

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        if not self.alive:
            raise RuntimeError("Consumer closed")
        deadline = self._deadline(timeout, 1000)
        if not self._buffer:
            if self.group_id and not self.manual and not self.topics:
                return []
            if self._ensure_member(deadline):
                self._ensure_positions(deadline)
                self._fetch_round(num_messages, deadline)
                self._start_auto_commit()
        out = []
        while self._buffer and len(out) < num_messages:
            out.append(self._buffer.popleft())
        self._record(out)
        return out

    def poll(self, timeout: float | None = None) -> Message | None:
        got = self.consume(1, timeout)
        return got[0] if got else None

    def _record(self, messages: list[Message]) -> None:
        by_tp: dict[str, list[Message]] = {}
        for m in messages:
            tp = f"{m._topic}-{m._partition}"
            by_tp.setdefault(tp, []).append(m)
            self.received.setdefault(tp, []).append((m._offset, m._value))
        for tp, msgs in by_tp.items():
            self.cluster.emit(
                ev.Consume,
                actor=self.name,
                partition=tp,
                offsets=tuple(m._offset for m in msgs),
                values=tuple(m._value for m in msgs),
                position=self.positions.get(tp, msgs[-1]._offset + 1),
            )

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        out = []
        for tp in partitions:
            # the application's position: what was returned to it (records still buffered do not count)
            buffered = next(
                (m._offset for m in self._buffer if m._topic == tp.topic and m._partition == tp.partition), None
            )
            pos = buffered if buffered is not None else self.positions.get(tp.name, -1001)
            if tp.name not in self._served:
                pos = -1001
            out.append(TopicPartition(tp.topic, tp.partition, pos))
        return out

    def seek(self, partition: TopicPartition) -> None:
        self.positions[partition.name] = partition.offset
        self._served.add(partition.name)
        self._buffer = deque(
            m for m in self._buffer if not (m._topic == partition.topic and m._partition == partition.partition)
        )

    def committed(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        if not self.group_id:
            raise KafkaException(KafkaError("_INVALID_ARG", "committed() requires group.id"))
        deadline = self._deadline(timeout, 10_000)
        names = tuple(tp.name for tp in partitions)
        got = self._fetch_committed(names, require_stable=self.isolation_level == READ_COMMITTED, deadline=deadline)
        if got is None:
            raise KafkaException(KafkaError("_TIMED_OUT", "committed() did not get stable offsets"))
        return [
            TopicPartition(tp.topic, tp.partition, got.get(tp.name) if got.get(tp.name) is not None else -1001)
            for tp in partitions
        ]

    def commit(
        self, message: Message | None = None, offsets: list[TopicPartition] | None = None, asynchronous: bool = True
    ) -> list[TopicPartition] | None:
        if not self.group_id:
            raise KafkaException(KafkaError("_INVALID_ARG", "commit() requires group.id"))
        if offsets is not None:
            to_commit = {tp.name: tp.offset for tp in offsets}
        elif message is not None:
            to_commit = {f"{message._topic}-{message._partition}": message._offset + 1}
        else:
            current = self.position(self.assignment())
            to_commit = {tp.name: tp.offset for tp in current if tp.offset >= 0}
        if not to_commit:
            raise KafkaException(KafkaError("_NO_OFFSET", "No offset to commit"))
        c = self.cluster
        box: dict[str, Any] = {}

        def send(broker: int) -> None:
            def handler(reply: Callable[..., None]) -> None:
                c.handle_offset_commit(
                    broker,
                    self.group_id,
                    self.generation if not self.manual else -1,
                    self.member_id or "",
                    to_commit,
                    reply,
                )

            def on_response(error: str | None, result: dict[str, Any]) -> None:
                box["error"] = error

            self._rpc(
                "OffsetCommit",
                broker,
                f"group coordinator(b{broker})",
                f"group {self.group_id} {', '.join(f'{k}={v}' for k, v in sorted(to_commit.items()))}",
                handler,
                on_response,
            )

        self._find_coordinator(self.group_id, "group", send)
        if asynchronous:
            return None
        self._wait(lambda: "error" in box, self._deadline(None, 10_000))
        if "error" not in box:
            raise KafkaException(KafkaError("_TIMED_OUT", "commit timed out"))
        if box["error"] is not None:
            raise KafkaException(KafkaError(box["error"]))
        return [self._tp(k, v) for k, v in sorted(to_commit.items())]

    def _start_auto_commit(self) -> None:
        if not self.enable_auto_commit or not self.group_id or self._auto_commit_started:
            return
        self._auto_commit_started = True

        def tick() -> None:
            if not self.alive:
                return
            try:
                if any(tp in self.positions for tp in self.assigned):
                    self.commit(asynchronous=True)
            except KafkaException:
                pass
            self.cluster.scheduler.after(
                self.auto_commit_interval_ms, tick, category="timer", label=f"{self.name} auto commit"
            )

        self.cluster.scheduler.after(
            self.auto_commit_interval_ms, tick, category="timer", label=f"{self.name} auto commit"
        )

    def consumer_group_metadata(self) -> GroupMetadata:
        if not self.group_id:
            raise KafkaException(KafkaError("_INVALID_ARG", "consumer_group_metadata() requires group.id"))
        return GroupMetadata(self.group_id, self.generation, self.member_id or "")

    def close(self) -> None:
        if not self.alive:
            return
        if self.enable_auto_commit and self.group_id and self.positions:
            try:
                self.commit(asynchronous=False)
            except KafkaException:
                pass
        if self.group_id and self.member_id:
            self.cluster.handle_leave_group(self.group_id, self.member_id)
        self.alive = False
        self.state = CLOSED

    def crash(self) -> None:
        """The process dies: no LeaveGroup; the group notices when the session times out."""
        if self.group_id and self.member_id:
            self.cluster.member_crashed(self.group_id, self.member_id)
        self.alive = False
        self.state = CRASHED
        self._buffer.clear()
