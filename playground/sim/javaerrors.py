"""The Java client's exceptions as an application catches them: Errors.java's exception class for each error code,
which of them are ApiExceptions (send() fails its future with those instead of throwing them) and which are
RetriableExceptions (clients/src/main/java/org/apache/kafka/common/errors/, common/protocol/Errors.java).
javaclient.py's model raises them; the step's outcome is the simple class name."""

from __future__ import annotations

from playground.sim.errors import CODES

# Simple class name -> (is an ApiException, is a RetriableException). KafkaException, IllegalStateException and
# CommitFailedException are not ApiExceptions: send() throws them instead of failing the future.
EXCEPTIONS: dict[str, tuple[bool, bool]] = {
    "KafkaException": (False, False),
    "IllegalStateException": (False, False),
    "IllegalArgumentException": (False, False),
    "CommitFailedException": (False, False),
    "ProducerFencedException": (True, False),
    "InvalidProducerEpochException": (True, False),
    "TransactionAbortableException": (True, False),
    "InvalidTxnStateException": (True, False),
    "InvalidPidMappingException": (True, False),
    "UnknownProducerIdException": (True, False),
    "OutOfOrderSequenceException": (True, False),
    "TransactionAbortedException": (True, False),
    "InvalidTxnTimeoutException": (True, False),
    "TransactionalIdAuthorizationException": (True, False),
    "FencedInstanceIdException": (True, False),
    "InvalidRequestException": (True, False),
    "IllegalGenerationException": (True, False),
    "UnknownMemberIdException": (True, False),
    "RebalanceInProgressException": (True, False),
    "TransactionCoordinatorFencedException": (True, False),
    "TimeoutException": (True, True),
    "NotEnoughReplicasException": (True, True),
    "NotLeaderOrFollowerException": (True, True),
    "LeaderNotAvailableException": (True, True),
    "UnknownTopicOrPartitionException": (True, True),
    "NetworkException": (True, True),
    "ConcurrentTransactionsException": (True, True),
    "CoordinatorLoadInProgressException": (True, True),
    "CoordinatorNotAvailableException": (True, True),
    "NotCoordinatorException": (True, True),
    "UnstableOffsetCommitException": (True, True),
}
# Errors.java: the exception class behind each error code.
ERROR_EXCEPTIONS: dict[str, str] = {
    "INVALID_PRODUCER_EPOCH": "InvalidProducerEpochException",
    "PRODUCER_FENCED": "ProducerFencedException",
    "INVALID_TXN_STATE": "InvalidTxnStateException",
    "INVALID_PRODUCER_ID_MAPPING": "InvalidPidMappingException",
    "TRANSACTION_ABORTABLE": "TransactionAbortableException",
    "OUT_OF_ORDER_SEQUENCE_NUMBER": "OutOfOrderSequenceException",
    "UNKNOWN_PRODUCER_ID": "UnknownProducerIdException",
    "CONCURRENT_TRANSACTIONS": "ConcurrentTransactionsException",
    "NOT_ENOUGH_REPLICAS": "NotEnoughReplicasException",
    "NOT_LEADER_OR_FOLLOWER": "NotLeaderOrFollowerException",
    "LEADER_NOT_AVAILABLE": "LeaderNotAvailableException",
    "UNKNOWN_TOPIC_OR_PARTITION": "UnknownTopicOrPartitionException",
    "COORDINATOR_NOT_AVAILABLE": "CoordinatorNotAvailableException",
    "NOT_COORDINATOR": "NotCoordinatorException",
    "COORDINATOR_LOAD_IN_PROGRESS": "CoordinatorLoadInProgressException",
    "INVALID_TRANSACTION_TIMEOUT": "InvalidTxnTimeoutException",
    "ILLEGAL_GENERATION": "IllegalGenerationException",
    "UNKNOWN_MEMBER_ID": "UnknownMemberIdException",
    "REBALANCE_IN_PROGRESS": "RebalanceInProgressException",
    "FENCED_INSTANCE_ID": "FencedInstanceIdException",
    "REQUEST_TIMED_OUT": "TimeoutException",
    "NETWORK_EXCEPTION": "NetworkException",
    "_TRANSPORT": "NetworkException",
    "TRANSACTION_COORDINATOR_FENCED": "TransactionCoordinatorFencedException",
    "UNSTABLE_OFFSET_COMMIT": "UnstableOffsetCommitException",
    "INVALID_REQUEST": "InvalidRequestException",
}


class JavaException(Exception):
    """A Java exception as the application catches it: `name` is its simple class name (the step's outcome),
    `wire` the broker error code behind it, `cause` what it wraps (KafkaException's getCause())."""

    def __init__(
        self, name: str, message: str = "", *, wire: str | None = None, cause: JavaException | None = None
    ) -> None:
        super().__init__(message or name)
        self.name = name
        self.message = message or name
        self.wire = wire
        self.cause = cause

    def kept(self) -> JavaException:
        """This exception as the client keeps it (a future's, the manager's last error, the application's): without
        the tracebacks of where it and what it was raised while handling were raised. Their frames hold the client
        that keeps it, a reference cycle (Backend.discard)."""
        pending: list[BaseException | None] = [self]
        while pending:
            exc = pending.pop()
            if exc is not None and exc.__traceback__ is not None:
                exc.__traceback__ = None
                pending += [exc.__context__, exc.__cause__, getattr(exc, "cause", None)]
        return self

    @property
    def api(self) -> bool:
        return EXCEPTIONS.get(self.name, (False, False))[0]

    @property
    def retriable(self) -> bool:
        return EXCEPTIONS.get(self.name, (False, False))[1]

    def wire_label(self) -> str | None:
        """e.g. "PRODUCER_FENCED (90)": the error on the wire, from this exception or what it wraps."""
        wire = self.wire or (self.cause.wire if self.cause is not None else None)
        if wire is None or wire not in CODES:
            return None
        return f"{wire} ({CODES[wire]})"

    def describe(self) -> str:
        text = f"{self.name}: {self.message}"
        if self.cause is not None:
            text += f"; caused by {self.cause.name}: {self.cause.message}"
        return text

    def __repr__(self) -> str:
        return f"JavaException({self.describe()})"


# Errors.java's default message of each error (apache/kafka 3.9): what Errors.exception() gives a response without
# an error message of its own, and so what getMessage() says.
ERROR_MESSAGES = {
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
    "NOT_LEADER_OR_FOLLOWER": (
        "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition."
    ),
    "REQUEST_TIMED_OUT": "The request timed out.",
    "NETWORK_EXCEPTION": "The server disconnected before a response was received.",
    "COORDINATOR_LOAD_IN_PROGRESS": "The coordinator is loading and hence can't process requests.",
    "COORDINATOR_NOT_AVAILABLE": "The coordinator is not available.",
    "NOT_COORDINATOR": "This is not the correct coordinator.",
    "NOT_ENOUGH_REPLICAS": "Messages are rejected since there are fewer in-sync replicas than required.",
    "OUT_OF_ORDER_SEQUENCE_NUMBER": "The broker received an out of order sequence number.",
    "DUPLICATE_SEQUENCE_NUMBER": "The broker received a duplicate sequence number.",
    "INVALID_PRODUCER_EPOCH": "Producer attempted to produce with an old epoch.",
    "INVALID_TXN_STATE": "The producer attempted a transactional operation in an invalid state.",
    "INVALID_PRODUCER_ID_MAPPING": (
        "The producer attempted to use a producer id which is not currently assigned to its transactional id."
    ),
    "INVALID_TRANSACTION_TIMEOUT": (
        "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms)."
    ),
    "CONCURRENT_TRANSACTIONS": (
        "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing."
    ),
    "TRANSACTION_COORDINATOR_FENCED": (
        "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer."
    ),
    "FENCED_INSTANCE_ID": (
        "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id."
    ),
    "UNSTABLE_OFFSET_COMMIT": "There are unstable offsets that need to be cleared.",
    "PRODUCER_FENCED": ("There is a newer producer with the same transactionalId which fences the current one."),
    "TRANSACTION_ABORTABLE": (
        "The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID."
    ),
}


def exception_for(error: str, message: str = "") -> JavaException:
    """Errors.exception(): the exception class of a broker error code, with Errors.java's message unless given."""
    return JavaException(
        ERROR_EXCEPTIONS.get(error, "KafkaException"), message or ERROR_MESSAGES.get(error, error), wire=error
    )


def fenced(error: str) -> JavaException:
    """What every transactional handler makes of INVALID_PRODUCER_EPOCH or PRODUCER_FENCED from a coordinator:
    ProducerFencedException ("We could still receive INVALID_PRODUCER_EPOCH from old versioned transaction
    coordinator, just treat it the same as PRODUCE_FENCED"); `wire` keeps what actually came."""
    return JavaException(
        "ProducerFencedException",
        "There is a newer producer with the same transactionalId which fences the current one.",
        wire=error,
    )
