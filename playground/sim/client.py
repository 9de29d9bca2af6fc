"""Producer with confluent-kafka's methods and librdkafka's (2.16) behaviour, on the simulated cluster: the
application's calls. The producer's state and its records' path are rdkafka_base.py's, its transaction manager's
requests rdkafka_txnmgr.py's; the consumer is consumer.py's (imported here too, as confluent_kafka offers both).

Blocking calls run the cluster's scheduler until their result is in (virtual time passes; other clients'
background work and the brokers' timers run meanwhile, in time order). Background work (linger, the
AddPartitionsToTxn registration, Produce requests, retries) is scheduled and happens whenever time moves.

librdkafka facts reproduced by the calls (src/rdkafka_txnmgr.c, rdkafka_msg.c; the requests' own: rdkafka_txnmgr.py):
- produce() on a transactional producer outside a transaction: _STATE (rd_kafka_check_produce); after a fatal
  error: _FATAL. Neither reaches the broker.
- init_transactions() with no timeout waits at most 2 x transaction.timeout.ms and then returns the last
  InitProducerId error (e.g. CONCURRENT_TRANSACTIONS) or _TIMED_OUT.
- commit/abort with nothing registered send no EndTxn. commit after a failed delivery: _INCONSISTENT (abortable).

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

from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from playground.sim.clientbase import CLOSED, CRASHED, GroupMetadata, Message, TopicPartition
from playground.sim.consumer import Consumer
from playground.sim.errors import KafkaError, KafkaException
from playground.sim.rdkafka_base import (
    ABORT_NOT_ACKED,
    ABORTABLE_ERROR,
    ABORTING_TRANSACTION,
    API_VERSIONS,
    BEGIN_ABORT,
    BEGIN_COMMIT,
    COMMIT_NOT_ACKED,
    COMMITTING_TRANSACTION,
    FATAL_ERROR,
    IN_TRANSACTION,
    INIT,
    READY,
    READY_NOT_ACKED,
    WAIT_PID,
    normalize,
)
from playground.sim.rdkafka_txnmgr import TxnManager

if TYPE_CHECKING:  # pragma: no cover
    from playground.sim.cluster import Cluster

# What the simulator's librdkafka model offers, as confluent_kafka does (the client's own names and the states).
__all__ = [
    "ABORTABLE_ERROR",
    "ABORTING_TRANSACTION",
    "ABORT_NOT_ACKED",
    "API_VERSIONS",
    "BEGIN_ABORT",
    "BEGIN_COMMIT",
    "CLOSED",
    "COMMITTING_TRANSACTION",
    "COMMIT_NOT_ACKED",
    "CRASHED",
    "FATAL_ERROR",
    "INIT",
    "IN_TRANSACTION",
    "READY",
    "READY_NOT_ACKED",
    "WAIT_PID",
    "Consumer",
    "GroupMetadata",
    "KafkaError",
    "KafkaException",
    "Message",
    "Producer",
    "TopicPartition",
    "normalize",
]


class Producer(TxnManager):
    """confluent_kafka.Producer on the simulated cluster: Producer(conf, cluster=cluster, name="A")."""

    def __init__(self, conf: dict[str, Any], *, cluster: Cluster, name: str | None = None) -> None:
        super().__init__(conf, cluster=cluster, name=name)
        if self.idempotent and not self.transactional_id:
            self._request_pid()  # rd_kafka_idemp_start at creation

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
