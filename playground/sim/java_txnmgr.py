"""kafka-clients' producer model, its TransactionManager's requests: the queue ordered by priority (FindCoordinator
first, the end of the transaction last, an epoch bump after it), one transactional request in flight, and each
TxnRequestHandler's request and its error mapping (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit, FindCoordinator).

Follows clients/src/main/java/org/apache/kafka/clients/producer/internals/TransactionManager.java (nextRequest,
lookupCoordinator, the TxnRequestHandler subclasses InitProducerIdHandler, AddPartitionsToTxnHandler,
AddOffsetsToTxnHandler, EndTxnHandler, TxnOffsetCommitHandler, FindCoordinatorHandler, maybeOverrideRetryBackoffMs)
and Sender.java (maybeSendAndPollTransactionalRequest).
"""

from __future__ import annotations

from typing import Any

from playground.sim.clientbase import GroupMetadata
from playground.sim.effects import Reply
from playground.sim.java_base import (
    ABORTABLE_ERROR,
    ABORTING_TRANSACTION,
    ADD_PARTITIONS_OR_OFFSETS,
    ADD_PARTITIONS_RETRY_BACKOFF_MS,
    END_TXN,
    EPOCH_BUMP,
    FATAL_ERROR,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    READY,
    JavaProducerBase,
    TxnRequestHandler,
    TxnResult,
)
from playground.sim.javaerrors import JavaException, exception_for, fenced


class JavaTxnManager(JavaProducerBase):
    """The TransactionManager's request queue and its handlers."""

    # -- the transactional request queue ----------------------------------------------------------------------
    def _enqueue(self, handler: TxnRequestHandler) -> None:
        self._requests.append((handler.priority, next(self._request_seq), handler))
        self._requests.sort(key=lambda t: (t[0], t[1]))

    def _lookup_coordinator(self, kind: str, key: str) -> None:
        self._coordinators[kind] = None
        result = TxnResult("FindCoordinator")

        def send(handler: TxnRequestHandler, broker: int | None) -> None:
            c = self.cluster

            def server(broker: int, reply: Reply) -> None:
                c.handle_find_coordinator(key, kind, reply)

            self._rpc(
                "FindCoordinator",
                broker,
                f"b{broker}",
                f"{kind} {key}",
                server,
                lambda err, res: self._txn_response(handler, err, res),
            )

        def on_response(handler: TxnRequestHandler, error: str | None, res: dict[str, Any]) -> None:
            if error is None:
                self._coordinators[kind] = res["coordinator"]
                result.succeed()
            elif exception_for(error).retriable:
                self._reenqueue(handler)
            else:
                self._fatal(handler, exception_for(error))

        handler = TxnRequestHandler("FindCoordinator", FIND_COORDINATOR, result, send, on_response, coordinator=None)
        self._enqueue(handler)

    def _reenqueue(self, handler: TxnRequestHandler, backoff_ms: int | None = None) -> None:
        handler.is_retry = True
        if backoff_ms is not None:
            handler.backoff_ms = backoff_ms
        self._enqueue(handler)

    def _fatal(self, handler: TxnRequestHandler, error: JavaException) -> None:
        handler.result.fail(error)
        self._transition_to_fatal(error)

    def _abortable(self, handler: TxnRequestHandler, error: JavaException) -> None:
        handler.result.fail(error)
        self._transition_to_abortable(error)

    def _abortable_if_possible(self, handler: TxnRequestHandler, error: JavaException) -> None:
        if self._can_handle_abortable():
            if self._client_bump_needed():
                self.epoch_bump_required = True
            self._abortable(handler, error)
        else:
            self._fatal(handler, error)

    def _next_request(self, has_incomplete: bool) -> TxnRequestHandler | None:
        """TransactionManager.nextRequest."""
        if self.new_partitions and any(self._unnoticed.get(tp) != self.now_ms for tp in self.new_partitions):
            self._unnoticed.clear()
            self._enqueue(self._add_partitions_handler())
        if not self._requests:
            return None
        handler = self._requests[0][2]
        if handler.is_end_txn and has_incomplete:
            return None  # "Do not send the EndTxn until all batches have been flushed"
        self._requests.pop(0)
        self._dequeued = True
        # maybeTerminateRequestWithError (a FindCoordinator may go on if the transaction will be aborted)
        if (
            self.state in (ABORTABLE_ERROR, FATAL_ERROR)
            and self.last_error is not None
            and not (self.state == ABORTABLE_ERROR and handler.name == "FindCoordinator")
        ):
            handler.result.fail(self.last_error)
            return None
        if handler.is_end_txn and not self.transaction_started:
            # nothing was added to the transaction (TV2: nothing sent): no EndTxn
            handler.result.succeed()
            if self.state != FATAL_ERROR:
                self._complete_transaction()
            return self._requests.pop(0)[2] if self._requests else None
        return handler

    def _maybe_send_txn_request(self) -> bool:
        """Sender.maybeSendAndPollTransactionalRequest: True when a transactional request is in flight or was
        dealt with (then no produce data goes out in this round)."""
        if self._txn_inflight:
            return True
        if self.state in (ABORTABLE_ERROR, ABORTING_TRANSACTION) and (
            any(self._accumulator.values()) or self._retry_batch
        ):
            reason = self.last_error or JavaException(
                "TransactionAbortedException", "Failing batch since transaction was aborted"
            )
            self._abort_undrained(reason)
        has_incomplete = self._incomplete()
        self._dequeued = False
        handler = self._next_request(has_incomplete)
        if handler is None:
            if self._dequeued:
                self._wakeup()  # a request was failed or skipped: the Sender loops on at once
            return False
        if handler.coordinator is not None and self._coordinators[handler.coordinator] is None:
            key = handler.key or self.transactional_id or ""
            self._lookup_coordinator(handler.coordinator, key)
            self._reenqueue(handler)
            self._wakeup()
            return True
        target = (
            self._coordinators[handler.coordinator] if handler.coordinator is not None else self.cluster.any_up_broker()
        )
        if target is None:
            self._reenqueue(handler)
            self._wakeup(self.retry_backoff_ms)
            return True
        self._txn_inflight = True
        delay = 0
        if handler.is_retry:
            delay = handler.backoff_ms if handler.backoff_ms is not None else self.retry_backoff_ms
        if delay:
            self._after(delay, lambda: handler.send(self._target_of(handler)), f"{self.name} {handler.name} retry")
        else:
            handler.send(target)
        return True

    def _target_of(self, handler: TxnRequestHandler) -> int | None:
        if handler.coordinator is not None:
            return self._coordinators[handler.coordinator]
        return self.cluster.any_up_broker()

    def _txn_response(self, handler: TxnRequestHandler, error: str | None, result: dict[str, Any]) -> None:
        """TxnRequestHandler.onComplete: a disconnect looks the coordinator up again and retries."""
        self._txn_inflight = False
        if not self.alive:
            return
        if error == "_TRANSPORT":
            if handler.coordinator is not None:
                self._lookup_coordinator(handler.coordinator, handler.key or self.transactional_id or "")
            self._reenqueue(handler)
        else:
            try:
                handler.on_response(error, result)
            except JavaException as exc:
                exc.kept()
                # an invalid transition met while handling the answer (3.5 does not poison the manager for it):
                # Sender.run logs it ("Uncaught error in kafka producer I/O thread") and loops on; whatever the
                # handler had not done yet stays undone
                self._emit_error("background", exc, fatal=self.state == FATAL_ERROR)
        self._wakeup()

    # -- handlers ---------------------------------------------------------------------------------------------
    def _init_producer_id_handler(self, result: TxnResult, bump: tuple[int, int] | None) -> TxnRequestHandler:
        c = self.cluster
        txid = self.transactional_id
        version = self.versions["InitProducerId"]

        def send(handler: TxnRequestHandler, broker: int | None) -> None:
            detail = f"{txid or '(idempotent)'} timeout {self.transaction_timeout_ms} ms" + (
                f", bump {bump[0]}/{bump[1]}" if bump else ""
            )

            def server(broker: int, reply: Reply) -> None:
                c.handle_init_producer_id(broker, txid, self.transaction_timeout_ms, bump, reply, version=version)

            label = f"coordinator(b{broker})" if txid else f"b{broker}"
            self._rpc(
                "InitProducerId", broker, label, detail, server, lambda err, res: self._txn_response(handler, err, res)
            )

        def on_response(handler: TxnRequestHandler, error: str | None, res: dict[str, Any]) -> None:
            if error is None:
                self._set_producer_id(res["producer_id"], res["producer_epoch"])
                self._transition(READY, sender_thread=True)
                self.last_error = None
                result.succeed()
            elif error in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"):
                self._lookup_coordinator("transaction", txid or "")
                self._reenqueue(handler)
            elif exception_for(error).retriable:
                self._reenqueue(handler)
            elif error in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"):
                self._fatal(handler, fenced(error))
            elif error == "TRANSACTION_ABORTABLE":
                self._abortable(handler, exception_for(error))
            else:
                self._fatal(
                    handler,
                    JavaException("KafkaException", f"Unexpected error in InitProducerIdResponse; {error}", wire=error),
                )

        handler = TxnRequestHandler(
            "InitProducerId",
            EPOCH_BUMP if bump else INIT_PRODUCER_ID,
            result,
            send,
            on_response,
            coordinator="transaction" if txid else None,
        )
        return handler

    def _add_partitions_handler(self) -> TxnRequestHandler:
        """AddPartitionsToTxnHandler (TV1 only)."""
        self.pending_partitions |= self.new_partitions
        self.new_partitions = set()
        parts = frozenset(self.pending_partitions)
        pid, epoch, txid = self.producer_id, self.epoch, self.txn_id
        c = self.cluster
        version = self.versions["AddPartitionsToTxn"]
        result = TxnResult("AddPartitionsToTxn")

        def send(handler: TxnRequestHandler, broker: int | None) -> None:
            def server(broker: int, reply: Reply) -> None:
                c.handle_add_partitions(broker, txid, pid, epoch, parts, reply, version=version)

            self._rpc(
                "AddPartitionsToTxn",
                broker,
                f"coordinator(b{broker})",
                f"{', '.join(sorted(parts))}, producer {pid} epoch {epoch}",
                server,
                lambda err, res: self._txn_response(handler, err, res),
            )

        def on_response(handler: TxnRequestHandler, error: str | None, res: dict[str, Any]) -> None:
            handler.backoff_ms = None
            if error is None:
                self.pending_partitions -= parts
                self.partitions_in_txn |= parts
                self.transaction_started = True
                result.succeed()
            elif error == "CONCURRENT_TRANSACTIONS":
                # the previous transaction is still completing: retry soon (maybeOverrideRetryBackoffMs)
                self._reenqueue(handler, ADD_PARTITIONS_RETRY_BACKOFF_MS if not self.partitions_in_txn else None)
            elif not self._coordinator_error(handler, error, txid):
                self.pending_partitions -= parts
                self._abortable(
                    handler,
                    JavaException(
                        "KafkaException", f"Could not add partitions to transaction due to errors: {error}", wire=error
                    ),
                )

        handler = TxnRequestHandler("AddPartitionsToTxn", ADD_PARTITIONS_OR_OFFSETS, result, send, on_response)
        return handler

    def _coordinator_error(self, handler: TxnRequestHandler, error: str, txid: str | None) -> bool:
        """An error TransactionManager.java's coordinator handlers (AddPartitionsToTxnHandler,
        AddOffsetsToTxnHandler, EndTxnHandler) all treat alike, handled; False for one each handles its own way."""
        if error in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"):
            self._lookup_coordinator("transaction", txid or "")
            self._reenqueue(handler)
        elif exception_for(error).retriable:
            self._reenqueue(handler)
        elif error in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"):
            self._fatal(handler, fenced(error))
        elif error == "INVALID_TXN_STATE" and self.release == "3.5" and not handler.is_end_txn:
            # 3.5 (before KAFKA-14278): AddPartitionsToTxnHandler wraps it in a KafkaException; AddOffsetsToTxnHandler
            # has no branch for it and ends in its "Unexpected error"
            if handler.name != "AddPartitionsToTxn":
                return False
            cause = exception_for(error, "The producer attempted a transactional operation in an invalid state.")
            self._fatal(handler, JavaException("KafkaException", f"{cause.name}: {cause.message}", cause=cause))
        elif error in ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "INVALID_TXN_STATE") or (
            error == "INVALID_PRODUCER_ID_MAPPING" and self.release == "4"
        ):
            self._fatal(handler, exception_for(error))
        elif error in ("UNKNOWN_PRODUCER_ID", "INVALID_PRODUCER_ID_MAPPING"):
            self._abortable_if_possible(handler, exception_for(error))
        elif error == "TRANSACTION_ABORTABLE":
            self._abortable(handler, exception_for(error))
        else:
            return False
        return True

    def _end_txn_handler(self, result: TxnResult, commit: bool) -> TxnRequestHandler:
        c = self.cluster
        txid = self.txn_id
        version = self.versions["EndTxn"]

        def send(handler: TxnRequestHandler, broker: int | None) -> None:
            # the producer id and epoch at the time it goes out (a TV2 bump may have changed them)
            pid, epoch = self.producer_id, self.epoch

            def server(broker: int, reply: Reply) -> None:
                c.handle_end_txn(broker, txid, pid, epoch, commit, reply, version=version)

            self._rpc(
                "EndTxn",
                broker,
                f"coordinator(b{broker})",
                f"{'commit' if commit else 'abort'}, producer {pid} epoch {epoch}",
                server,
                lambda err, res: self._txn_response(handler, err, res),
            )

        def on_response(handler: TxnRequestHandler, error: str | None, res: dict[str, Any]) -> None:
            if error is None:
                # EndTxn v5+: the producer id and epoch of the next transaction (bumped; a new id at epoch 0 after
                # an overflow); older versions answer -1
                if res.get("producer_id", -1) != -1:
                    self._set_producer_id(res["producer_id"], res["producer_epoch"])
                self._complete_transaction()
                result.succeed()
            elif not self._coordinator_error(handler, error, txid):
                self._fatal(
                    handler, JavaException("KafkaException", f"Unhandled error in EndTxnResponse: {error}", wire=error)
                )

        handler = TxnRequestHandler(
            f"EndTxn({str(commit).lower()})", END_TXN, result, send, on_response, is_end_txn=True
        )
        return handler

    def _add_offsets_handler(self, result: TxnResult, offsets: dict[str, int], gm: GroupMetadata) -> TxnRequestHandler:
        """AddOffsetsToTxnHandler (TV1): the result completes when the TxnOffsetCommit it queues does."""
        c = self.cluster
        pid, epoch, txid = self.producer_id, self.epoch, self.txn_id
        version = self.versions["AddOffsetsToTxn"]

        def send(handler: TxnRequestHandler, broker: int | None) -> None:
            def server(broker: int, reply: Reply) -> None:
                c.handle_add_offsets(broker, txid, pid, epoch, gm.group_id, reply, version=version)

            self._rpc(
                "AddOffsetsToTxn",
                broker,
                f"coordinator(b{broker})",
                f"group {gm.group_id}, producer {pid} epoch {epoch}",
                server,
                lambda err, res: self._txn_response(handler, err, res),
            )

        def on_response(handler: TxnRequestHandler, error: str | None, res: dict[str, Any]) -> None:
            if error is None:
                self._enqueue(self._txn_offset_commit_handler(result, offsets, gm))
                self.transaction_started = True
            elif not self._coordinator_error(handler, error, txid):
                self._fatal(
                    handler,
                    JavaException(
                        "KafkaException", f"Unexpected error in AddOffsetsToTxnResponse: {error}", wire=error
                    ),
                )

        handler = TxnRequestHandler("AddOffsetsToTxn", ADD_PARTITIONS_OR_OFFSETS, result, send, on_response)
        return handler

    def _txn_offset_commit_handler(
        self, result: TxnResult, offsets: dict[str, int], gm: GroupMetadata
    ) -> TxnRequestHandler:
        """TxnOffsetCommitHandler, to the group coordinator."""
        c = self.cluster
        pending = dict(offsets)
        txid = self.transactional_id
        version = self.versions["TxnOffsetCommit"]

        def send(handler: TxnRequestHandler, broker: int | None) -> None:
            pid, epoch = self.producer_id, self.epoch
            commit = dict(pending)

            def server(broker: int, reply: Reply) -> None:
                c.handle_txn_offset_commit(
                    broker,
                    gm.group_id,
                    pid,
                    epoch,
                    gm.generation_id,
                    gm.member_id,
                    commit,
                    reply,
                    transactional_id=txid,
                    version=version,
                    instance_id=gm.group_instance_id,
                )

            self._rpc(
                "TxnOffsetCommit",
                broker,
                f"group coordinator(b{broker})",
                f"group {gm.group_id} {', '.join(f'{k}={v}' for k, v in sorted(commit.items()))}, "
                f"producer {pid} epoch {epoch}",
                server,
                lambda err, res: self._txn_response(handler, err, res),
            )

        def on_response(handler: TxnRequestHandler, error: str | None, res: dict[str, Any]) -> None:
            if error is None:
                pending.clear()
            elif error in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT"):
                self._lookup_coordinator("group", gm.group_id)
            elif exception_for(error).retriable and (
                self.release != "3.5" or error in ("UNKNOWN_TOPIC_OR_PARTITION", "COORDINATOR_LOAD_IN_PROGRESS")
            ):
                pass  # retried with the same coordinator (3.5: only these two; the rest were "Unexpected")
            elif error == "INVALID_PRODUCER_EPOCH" and self.release == "3.5":
                # 3.5 (before KAFKA-14278) passes it on as it is, not as ProducerFencedException
                self._fatal(handler, exception_for(error))
            elif error in ("FENCED_INSTANCE_ID", "TRANSACTION_ABORTABLE"):
                self._abortable(handler, exception_for(error))
            elif error in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
                self._abortable(
                    handler,
                    JavaException(
                        "CommitFailedException",
                        "Transaction offset Commit failed due to consumer group metadata mismatch: " + error,
                        wire=error,
                    ),
                )
            elif error in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"):
                self._fatal(handler, fenced(error))
            else:
                self._fatal(
                    handler,
                    JavaException(
                        "KafkaException", f"Unexpected error in TxnOffsetCommitResponse: {error}", wire=error
                    ),
                )
            if result.done:
                pending.clear()
            elif not pending:
                result.succeed()
            else:
                self._reenqueue(handler)

        handler = TxnRequestHandler(
            "TxnOffsetCommit",
            ADD_PARTITIONS_OR_OFFSETS,
            result,
            send,
            on_response,
            coordinator="group",
            key=gm.group_id,
        )
        return handler
