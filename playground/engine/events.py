"""The event vocabulary: every state change and RPC in the simulated cluster becomes one small frozen event.

Each event has `seq` (a per-cluster counter, the total order), `time_ms` (virtual time), a `kind` and `to_dict()`
(plain JSON-able data). The web layer renders these; the real-cluster backend emits the same kinds for what it
can see. Partitions are named `TOPIC-PARTITION` as Kafka does; brokers by their integer id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    time_ms: int
    kind: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": self.seq, "time_ms": self.time_ms, "kind": self.kind}
        for f in fields(self):
            if f.name not in ("seq", "time_ms"):
                out[f.name] = _plain(getattr(self, f.name))
        return out


@dataclass(frozen=True, slots=True)
class Rpc(Event):
    """One side of a request/response exchange. `src`/`dst` are labels: an actor name, `coordinator(b2)`,
    `leader orders-0(b1)`, `group coordinator(b3)`, or `b1`. `correlation` pairs a response with its request."""

    kind: ClassVar[str] = "rpc"
    rpc: str
    src: str
    dst: str
    direction: str  # "request" | "response"
    error: str | None
    detail: str
    correlation: int


# The RPCs that tell a session's story: a long session's chatter must not push them out of sight (issue 31). A
# producer's InitProducerId and EndTxn, a group's rebalance (JoinGroup, SyncGroup, LeaveGroup), and any answer that
# fenced (Kafka's errors for it: a producer's, and a static member's, KIP-345).
PINNED_RPCS = frozenset({"InitProducerId", "EndTxn", "JoinGroup", "SyncGroup", "LeaveGroup"})
FENCES = frozenset({"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "FENCED_INSTANCE_ID"})
FENCE = "fence"  # the kind of a pinned RPC answered with one of FENCES, whatever its API


def pinned(rpc: Mapping[str, Any]) -> str | None:
    """Which of those an RPC is (its fields, or its row in a view's timeline): FENCE, or the API's name; None for
    any other."""
    if rpc.get("error") in FENCES:
        return FENCE
    name = rpc.get("rpc")
    return str(name) if name in PINNED_RPCS else None


@dataclass(frozen=True, slots=True)
class TxnState(Event):
    """The transaction coordinator completed a transition (and wrote it to `__transaction_state` if `persisted`)."""

    kind: ClassVar[str] = "txn.state"
    transactional_id: str
    from_state: str
    to_state: str
    producer_id: int
    epoch: int
    partitions: tuple[str, ...]
    coordinator_broker: int | None
    persisted: bool
    record_bytes: int  # approximate size of the __transaction_state record (0 when not persisted)


@dataclass(frozen=True, slots=True)
class TxnPending(Event):
    """The coordinator set a pending state (the transition is being written; other requests get 51 meanwhile)."""

    kind: ClassVar[str] = "txn.pending"
    transactional_id: str
    state: str
    pending_state: str
    producer_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class TxnExpired(Event):
    """transactional.id.expiration.ms passed: the coordinator wrote a tombstone and forgot the transactional id."""

    kind: ClassVar[str] = "txn.expired"
    transactional_id: str
    producer_id: int
    epoch: int
    record_bytes: int


@dataclass(frozen=True, slots=True)
class Append(Event):
    """A data batch was appended to a partition log."""

    kind: ClassVar[str] = "log.append"
    partition: str
    base_offset: int
    count: int
    producer_id: int
    epoch: int
    sequence: int
    transactional: bool
    values: tuple[Any, ...]
    client_id: str | None  # the producing client (Kafka's request header carries client.id)


@dataclass(frozen=True, slots=True)
class Marker(Event):
    """A control record (COMMIT or ABORT) was appended; it occupies one offset."""

    kind: ClassVar[str] = "log.marker"
    partition: str
    offset: int
    control: str
    producer_id: int
    epoch: int
    coordinator_epoch: int


@dataclass(frozen=True, slots=True)
class Watermarks(Event):
    kind: ClassVar[str] = "log.watermarks"
    partition: str
    high_watermark: int
    last_stable_offset: int
    log_end_offset: int


@dataclass(frozen=True, slots=True)
class ClientState(Event):
    """A producer's transaction state (librdkafka's, or kafka-clients' TransactionManager state) or a consumer's
    state changed."""

    kind: ClassVar[str] = "client.state"
    actor: str
    from_state: str
    to_state: str


@dataclass(frozen=True, slots=True)
class ClientError(Event):
    """The application saw an error from an API call (or librdkafka raised a fatal/abortable error)."""

    kind: ClassVar[str] = "client.error"
    actor: str
    op: str
    error: str
    fatal: bool
    txn_requires_abort: bool
    detail: str


@dataclass(frozen=True, slots=True)
class Delivery(Event):
    """A delivery report reached the application (served by poll/flush)."""

    kind: ClassVar[str] = "delivery"
    actor: str
    partition: str
    offset: int | None
    value: Any
    error: str | None


@dataclass(frozen=True, slots=True)
class Consume(Event):
    """A consumer returned records to the application."""

    kind: ClassVar[str] = "consume"
    actor: str
    partition: str
    offsets: tuple[int, ...]
    values: tuple[Any, ...]
    position: int


@dataclass(frozen=True, slots=True)
class GroupOffsets(Event):
    """Group offsets changed: `state` is committed (visible), pending (transactional, not yet decided), dropped (the
    transaction aborted) or lost (a Kafka 3.5 coordinator stopped completing its commit, sim/groupoffsets.py)."""

    kind: ClassVar[str] = "group.offsets"
    group: str
    state: str
    offsets: tuple[tuple[str, int], ...]
    producer_id: int


@dataclass(frozen=True, slots=True)
class GroupMembership(Event):
    kind: ClassVar[str] = "group.membership"
    group: str
    generation: int
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Broker(Event):
    kind: ClassVar[str] = "broker"
    broker: int
    up: bool


@dataclass(frozen=True, slots=True)
class Leader(Event):
    kind: ClassVar[str] = "leader"
    partition: str
    leader: int | None
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class CoordinatorLoad(Event):
    """A broker became transaction coordinator for a `__transaction_state` partition and loaded it; Prepare*
    transactions found there have their markers resent."""

    kind: ClassVar[str] = "coordinator.load"
    txn_partition: int
    broker: int
    coordinator_epoch: int
    resumed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Clock(Event):
    kind: ClassVar[str] = "clock"
    from_ms: int
    to_ms: int


@dataclass(frozen=True, slots=True)
class Step(Event):
    """The driver applied a scenario step; `outcome` is "ok" or the error name the application saw."""

    kind: ClassVar[str] = "step"
    label: str
    outcome: str


EVENT_TYPES: tuple[type[Event], ...] = (
    Rpc,
    TxnState,
    TxnPending,
    TxnExpired,
    Append,
    Marker,
    Watermarks,
    ClientState,
    ClientError,
    Delivery,
    Consume,
    GroupOffsets,
    GroupMembership,
    Broker,
    Leader,
    CoordinatorLoad,
    Clock,
    Step,
)
KINDS: dict[str, type[Event]] = {cls.kind: cls for cls in EVENT_TYPES}
