"""The librdkafka producer's transaction manager (and idempotence): its requests to the coordinators and what it
makes of their answers. InitProducerId (rd_kafka_idemp_request_pid, retried every 500 ms), AddPartitionsToTxn
(the partitions produced to, registered in the background), AddOffsetsToTxn then TxnOffsetCommit
(send_offsets_to_transaction), EndTxn and its completion (an epoch bump first when one is needed, KIP-360).

Follows librdkafka 2.16's src/rdkafka_txnmgr.c (rd_kafka_txn_handle_AddPartitionsToTxn, _AddOffsetsToTxn,
_TxnOffsetCommit, _EndTxn, rd_kafka_txn_endtxn_complete, rd_kafka_txn_complete) and rdkafka_idempotence.c.

- AddPartitionsToTxn: PRODUCER_FENCED / INVALID_PRODUCER_EPOCH / INVALID_TXN_STATE are fatal (fencing normalised
  to _FENCED); INVALID_PRODUCER_ID_MAPPING is abortable and needs an epoch bump (KIP-360), done on abort.
- AddOffsetsToTxn: INVALID_PRODUCER_EPOCH / INVALID_TXN_STATE / authorization errors fatal (fencing normalised to
  _FENCED); PRODUCER_FENCED is not in librdkafka's list and would be merely abortable, but Kafka never sends it
  to the v0 request librdkafka uses (see API_VERSIONS): a fenced send_offsets_to_transaction() is fatal _FENCED.
- EndTxn: PRODUCER_FENCED / INVALID_PRODUCER_EPOCH / INVALID_TXN_STATE fatal; INVALID_PRODUCER_ID_MAPPING
  abortable (+ bump); CONCURRENT_TRANSACTIONS and coordinator errors retried.
- InitProducerId: CONCURRENT_TRANSACTIONS and coordinator errors retried every 500 ms; fencing fatal.
- A failed AddPartitionsToTxn still counts as a request sent (txn_req_cnt is restored), so a later abort sends
  EndTxn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playground.sim.clientbase import GroupMetadata
from playground.sim.effects import Reply
from playground.sim.errors import KafkaError
from playground.sim.rdkafka_base import (
    ABORT_NOT_ACKED,
    ABORTING_TRANSACTION,
    API_VERSIONS,
    BEGIN_ABORT,
    BEGIN_COMMIT,
    COMMIT_NOT_ACKED,
    COORDINATOR_ERRORS,
    FENCING,
    IN_TRANSACTION,
    READY,
    READY_NOT_ACKED,
    WAIT_PID,
    ProducerBase,
    _Api,
    normalize,
)


class TxnManager(ProducerBase):
    """The transaction manager's requests and their handlers (the application's calls that start them: client.py)."""

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

            def handler(broker: int, reply: Reply) -> None:
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
        pid, epoch, txid = self.producer_id, self.epoch, self.txn_id
        c = self.cluster

        def send(broker: int) -> None:
            def handler(broker: int, reply: Reply) -> None:
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

    # -- offsets (AddOffsetsToTxn, TxnOffsetCommit) -----------------------------------------------------------
    def _add_offsets(self, api: _Api, offsets: dict[str, int], gm: GroupMetadata, deadline: int) -> None:
        c = self.cluster
        pid, epoch, txid = self.producer_id, self.epoch, self.txn_id

        def send(broker: int) -> None:
            def handler(broker: int, reply: Reply) -> None:
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
            def handler(broker: int, reply: Reply) -> None:
                c.handle_txn_offset_commit(
                    broker,
                    gm.group_id,
                    pid,
                    epoch,
                    gm.generation_id,
                    gm.member_id,
                    offsets,
                    reply,
                    instance_id=gm.group_instance_id,
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

    # -- the end of the transaction (EndTxn) ------------------------------------------------------------------
    def _end_txn(self, commit: bool) -> None:
        c = self.cluster
        pid, epoch, txid = self.producer_id, self.epoch, self.txn_id

        def send(broker: int) -> None:
            def handler(broker: int, reply: Reply) -> None:
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
