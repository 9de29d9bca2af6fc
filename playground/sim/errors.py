"""Error codes as Kafka (Errors.java) and librdkafka (rdkafka.h) number them, and a KafkaError/KafkaException pair
that behaves like confluent_kafka's, so code written against the simulator's client reads like real client code.

Broker errors keep Kafka's names (PRODUCER_FENCED is 90, INVALID_PRODUCER_EPOCH 47). librdkafka's local errors
start with an underscore (_FENCED, _STATE, _FATAL, ...), exactly as confluent_kafka.KafkaError names them.
"""

from __future__ import annotations

import builtins

# Errors.java @ apache/kafka 3.9 (only the ones the simulator can produce or a client reacts to).
BROKER_ERRORS: dict[str, int] = {
    "UNKNOWN_SERVER_ERROR": -1,
    "NONE": 0,
    "OFFSET_OUT_OF_RANGE": 1,
    "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "LEADER_NOT_AVAILABLE": 5,
    "NOT_LEADER_OR_FOLLOWER": 6,
    "REQUEST_TIMED_OUT": 7,
    "NETWORK_EXCEPTION": 13,
    "COORDINATOR_LOAD_IN_PROGRESS": 14,
    "COORDINATOR_NOT_AVAILABLE": 15,
    "NOT_COORDINATOR": 16,
    "NOT_ENOUGH_REPLICAS": 19,
    "ILLEGAL_GENERATION": 22,
    "UNKNOWN_MEMBER_ID": 25,
    "REBALANCE_IN_PROGRESS": 27,
    "INVALID_REQUEST": 42,
    "OUT_OF_ORDER_SEQUENCE_NUMBER": 45,
    "DUPLICATE_SEQUENCE_NUMBER": 46,
    "INVALID_PRODUCER_EPOCH": 47,
    "INVALID_TXN_STATE": 48,
    "INVALID_PRODUCER_ID_MAPPING": 49,
    "INVALID_TRANSACTION_TIMEOUT": 50,
    "CONCURRENT_TRANSACTIONS": 51,
    "TRANSACTION_COORDINATOR_FENCED": 52,
    "UNKNOWN_PRODUCER_ID": 59,
    "FENCED_INSTANCE_ID": 82,
    "UNSTABLE_OFFSET_COMMIT": 88,
    "PRODUCER_FENCED": 90,
    "BROKER_ID_NOT_REGISTERED": 102,
    "TRANSACTIONAL_ID_NOT_FOUND": 105,
    "TRANSACTION_ABORTABLE": 120,
}

# rdkafka.h: librdkafka's local (client-side) errors.
LOCAL_ERRORS: dict[str, int] = {
    "_BAD_MSG": -199,
    "_DESTROY": -197,
    "_FAIL": -196,
    "_TRANSPORT": -195,
    "_MSG_TIMED_OUT": -192,
    "_PARTITION_EOF": -191,
    "_UNKNOWN_PARTITION": -190,
    "_UNKNOWN_TOPIC": -188,
    "_ALL_BROKERS_DOWN": -187,
    "_INVALID_ARG": -186,
    "_TIMED_OUT": -185,
    "_QUEUE_FULL": -184,
    "_WAIT_COORD": -180,
    "_UNKNOWN_GROUP": -179,
    "_PREV_IN_PROGRESS": -177,
    "_CONFLICT": -173,
    "_STATE": -172,
    "_NOT_IMPLEMENTED": -170,
    "_NO_OFFSET": -168,
    "_OUTDATED": -167,
    "_TIMED_OUT_QUEUE": -166,
    "_RETRY": -153,
    "_PURGE_QUEUE": -152,
    "_PURGE_INFLIGHT": -151,
    "_FATAL": -150,
    "_INCONSISTENT": -149,
    "_NOT_CONFIGURED": -145,
    "_FENCED": -144,
}

CODES: dict[str, int] = {**BROKER_ERRORS, **LOCAL_ERRORS}
NAMES: dict[int, str] = {code: name for name, code in CODES.items()}

# Kafka's RetriableException subclasses among the codes above (what the Java client would retry by itself).
RETRIABLE = frozenset(
    {
        "COORDINATOR_LOAD_IN_PROGRESS",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "NOT_LEADER_OR_FOLLOWER",
        "LEADER_NOT_AVAILABLE",
        "NOT_ENOUGH_REPLICAS",
        "REQUEST_TIMED_OUT",
        "NETWORK_EXCEPTION",
        "UNKNOWN_TOPIC_OR_PARTITION",
        "CONCURRENT_TRANSACTIONS",
        "UNSTABLE_OFFSET_COMMIT",
        "_TRANSPORT",
        "_TIMED_OUT",
    }
)


def code_of(name: str) -> int:
    return CODES[name]


def name_of(code: int) -> str:
    return NAMES.get(code, f"ERR_{code}")


class KafkaError:
    """Mirrors confluent_kafka.KafkaError: an error code plus librdkafka's flags."""

    __slots__ = ("_code", "_fatal", "_retriable", "_str", "_txn_requires_abort")

    def __init__(
        self,
        error: int | str,
        reason: str | None = None,
        fatal: bool = False,
        retriable: bool | None = None,
        txn_requires_abort: bool = False,
    ) -> None:
        self._code = CODES[error] if isinstance(error, str) else int(error)
        self._str = reason if reason is not None else self.name()
        self._fatal = fatal
        self._retriable = (self.name() in RETRIABLE) if retriable is None else retriable
        self._txn_requires_abort = txn_requires_abort

    def code(self) -> int:
        return self._code

    def name(self) -> str:
        return name_of(self._code)

    def str(self) -> str:
        return self._str

    def fatal(self) -> bool:
        return self._fatal

    def retriable(self) -> bool:
        return self._retriable

    def txn_requires_abort(self) -> bool:
        return self._txn_requires_abort

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KafkaError):
            return self._code == other._code
        if isinstance(other, int):
            return self._code == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._code)

    def __repr__(self) -> builtins.str:  # `str` is the method above in here (confluent_kafka's KafkaError.str())
        flags = [
            f
            for f, on in (
                ("fatal", self._fatal),
                ("retriable", self._retriable),
                ("txn_requires_abort", self._txn_requires_abort),
            )
            if on
        ]
        extra = "".join("," + f for f in flags)
        return f'KafkaError{{code={self.name()},val={self._code},str="{self._str}"{extra}}}'

    __str__ = __repr__


# confluent_kafka exposes every code as a class attribute: KafkaError._FENCED, KafkaError.PRODUCER_FENCED, ...
for _name, _code in CODES.items():
    setattr(KafkaError, _name, _code)


class KafkaException(Exception):
    """Mirrors confluent_kafka.KafkaException: args[0] is the KafkaError."""

    def __init__(self, error: KafkaError | str | int, reason: str | None = None, **flags: bool) -> None:
        if not isinstance(error, KafkaError):
            error = KafkaError(error, reason, **flags)
        super().__init__(error)

    @property
    def error(self) -> KafkaError:
        error: KafkaError = self.args[0]
        return error

    def __str__(self) -> str:
        return str(self.args[0])
