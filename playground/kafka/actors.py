"""A real-cluster session's actors: each producer or consumer of the scenario, the worker process its client runs in,
and what its worker's answers mean for the session.

Each actor runs in a worker process of its own (worker.py for librdkafka, java_worker.py for kafka-clients): `crash`
kills it (SIGKILL: no abort, no close, buffered records lost), `restart` starts a fresh one. A worker's answer
carries what its client logged (the RPC timeline, transaction state changes, the producer ids and epochs it
acquired: librdkafka's debug contexts eos and protocol, kafka-clients' DEBUG log of NetworkClient and
TransactionManager); `absorb` turns it into the session's events and the actor's client-side state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from playground.engine import events as ev
from playground.engine.backend import BackendError
from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, Profile, TopicSpec
from playground.kafka.emitter import EventEmitter
from playground.kafka.java_worker import JavaActorProcess
from playground.kafka.names import SessionNames
from playground.kafka.profiles import ACTOR_PROCESSES, FENCED_OUTCOMES, WorkerHandle
from playground.kafka.worker import WorkerError

# kafka-clients' defaults (ProducerConfig): how long a record may take, and one request
DELIVERY_TIMEOUT_MS = 120_000
REQUEST_TIMEOUT_MS = 30_000
MAX_BLOCK_MS = 60_000  # kafka-clients' max.block.ms default

# Per-operation budgets (seconds). Each is passed to the client; the worker's parent waits a margin more.
OP_TIMEOUT_S = {
    # generous, because a loaded test machine is slow, yet bounded; an unreachable cluster is caught before
    # any of these by a quick metadata check (see KafkaBackend.apply)
    "init_transactions": 30.0,
    "begin_transaction": 5.0,
    "produce": 20.0,
    "produce_many": 30.0,
    "flush": 20.0,
    "send_offsets_to_transaction": 30.0,
    "commit_transaction": 30.0,
    "abort_transaction": 30.0,
    "close": 20.0,
    "poll": 20.0,
    "commit": 15.0,
    "seek_to_committed": 15.0,
    "assign": 10.0,
    "subscribe": 10.0,
    "positions": 10.0,
    "group_metadata": 10.0,
    "status": 5.0,
}


@dataclass
class Actor:
    spec: ActorSpec
    real_config: dict[str, Any]
    proc: WorkerHandle | None = None
    state: str = "INIT"
    last_error: dict[str, Any] | None = None
    fenced: bool = False
    pid_epochs: list[tuple[int, int]] = field(default_factory=list)
    sent_ok_before: int = 0  # app_sent_ok of earlier incarnations
    sent_ok: int = 0
    queue: int = 0
    ignored_settings: list[str] = field(default_factory=list)
    # consumers
    received: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # scenario tp -> [{"offset","value"}]
    last_poll: list[dict[str, Any]] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    generation: int | None = None  # a static member's group generation at its last poll
    incarnation: int = 0
    rr: dict[str, int] = field(default_factory=dict)  # round-robin counters per topic (unkeyed records)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.alive


def broker_label(raw: str) -> str:
    """librdkafka's broker names -> the timeline's labels."""
    name, _, nid = raw.rpartition("/")
    if name == "TxnCoordinator":
        return f"coordinator(b{nid})"
    if name == "GroupCoordinator":
        return f"group coordinator(b{nid})"
    if nid == "bootstrap":
        return "bootstrap"
    return f"b{nid}" if nid.isdigit() else raw


def partition_for(actor: Actor, partitions: int, key: str | None) -> int | None:
    """No partition given: a keyed record goes where the client's default partitioner puts it (librdkafka:
    consistent_random, CRC32 of the key; kafka-clients: murmur2 of the key), so None is passed on; a keyless one
    round robin over the producer's sends, as the scenario format says (librdkafka itself would pick at random)."""
    if key is not None:
        return None
    i = actor.rr.get("*", 0)
    actor.rr["*"] = i + 1
    return i % partitions


def spawn(actor: Actor, profile: Profile) -> None:
    """Start the actor's worker process; `finish_start` waits until it is ready (several boot in parallel)."""
    try:
        actor.proc = ACTOR_PROCESSES[profile.client](actor.spec.name, actor.spec.kind, actor.real_config, profile)
    except WorkerError as e:  # e.g. the Java worker could not be built
        raise BackendError(f"actor {actor.spec.name}: the client did not start: {e}") from None
    actor.incarnation += 1


def finish_start(actor: Actor, names: SessionNames, topics: dict[str, TopicSpec], events: EventEmitter) -> None:
    assert actor.proc is not None
    try:
        ready = actor.proc.wait_ready()
    except WorkerError as e:
        raise BackendError(f"actor {actor.spec.name}: the client did not start: {e}") from None
    actor.ignored_settings = ready["result"].get("ignored_settings", [])
    actor.state = "INIT" if actor.spec.transactional_id or actor.spec.kind == CONSUMER else "READY"
    if actor.spec.kind == CONSUMER:
        actor.state = "RUNNING"
        if actor.spec.config.get("group.instance.id"):
            # a static member (KIP-345) is a member of its group only through subscribe(): the group assigns
            call(actor, "subscribe", events, names, topics=[names.real_topic(t) for t in actor.spec.topics])
            return
        parts = [[names.real_topic(t), p] for t in actor.spec.topics for p in range(topics[t].partitions)]
        call(actor, "assign", events, names, partitions=parts, from_committed=bool(actor.spec.group_id))


def budget_s(actor: Actor, op: str, args: dict[str, Any]) -> float:
    """How long an operation may take: OP_TIMEOUT_S, except a Java producer's awaited send, which waits as
    Future.get() does, until kafka-clients itself completes or fails the record: within delivery.timeout.ms of
    the send, plus a request in flight (request.timeout.ms). Its Sender may legitimately sleep that long: a record
    that joins a batch held back outside a transaction wakes nothing, and goes out at the Sender's next poll
    (request.timeout.ms later; measured, tests/kafka/test_java_client.py)."""
    base = OP_TIMEOUT_S.get(op, 15.0)
    if op in ("produce", "produce_many") and args.get("wait", True) and isinstance(actor.proc, JavaActorProcess):
        conf = actor.real_config
        delivery_ms = int(conf.get("delivery.timeout.ms", DELIVERY_TIMEOUT_MS))
        request_ms = int(conf.get("request.timeout.ms", REQUEST_TIMEOUT_MS))
        return max(base, (delivery_ms + request_ms) / 1000)
    if op == "send_offsets_to_transaction" and isinstance(actor.proc, JavaActorProcess):
        # an AddOffsetsToTxn queued behind a fatal AddPartitionsToTxn is never answered: the call waits max.block.ms
        # and throws TimeoutException (issue 31 item 6)
        return max(base, int(actor.real_config.get("max.block.ms", MAX_BLOCK_MS)) / 1000 + base)
    return base


def call(actor: Actor, op: str, events: EventEmitter, names: SessionNames, **args: Any) -> dict[str, Any]:
    """One operation in the actor's worker, bounded by `budget_s`; WorkerError when it is gone or too slow."""
    if actor.proc is None or not actor.proc.alive:
        raise WorkerError(f"actor {actor.spec.name} has no running client")
    msg = actor.proc.call(op, timeout_s=budget_s(actor, op, args), **args)
    return absorb(actor, msg, events, names)


def retire(actor: Actor) -> None:
    """The actor's client is gone (crash, restart, close): its counters move to the earlier incarnations'."""
    actor.sent_ok_before += actor.sent_ok
    actor.sent_ok = 0
    actor.queue = 0
    if actor.proc is not None:
        actor.proc.kill()


def absorb(actor: Actor, msg: dict[str, Any], events: EventEmitter, names: SessionNames) -> dict[str, Any]:
    """Take a worker's answer: logs -> timeline/events, client state, producer ids."""
    result: dict[str, Any] = msg.get("result", {})
    for item in msg.get("logs", []):
        if item["type"] == "rpc":
            peer = broker_label(item["broker"])
            src, dst = (actor.spec.name, peer) if item["direction"] == "request" else (peer, actor.spec.name)
            detail = f"v{item['version']}" + (f", {item['detail']}" if item.get("detail") else "")
            events.emit(
                ev.Rpc,
                item["t"],
                rpc=item["rpc"],
                src=src,
                dst=dst,
                direction=item["direction"],
                error=item.get("error"),
                detail=detail,
                correlation=item["corr"],
            )
        elif item["type"] == "state" and actor.spec.transactional_id:
            events.emit(ev.ClientState, item["t"], actor=actor.spec.name, from_state=item["from"], to_state=item["to"])
    if actor.spec.kind == PRODUCER:
        if msg.get("txn_state") and actor.spec.transactional_id:
            actor.state = msg["txn_state"]
        elif actor.state == "INIT":
            actor.state = "READY"
        for raw in msg.get("pid_epochs", []):
            pe = (int(raw[0]), int(raw[1]))
            if pe not in actor.pid_epochs:
                actor.pid_epochs.append(pe)
        st = result.get("state", {})
        actor.sent_ok = st.get("app_sent_ok", actor.sent_ok)
        actor.queue = st.get("queue", 0)
        for raised in st.get("raised", []):
            # an error confluent-kafka raised from poll()/flush() (a fatal error surfaces there first)
            # (Java: the failure of a fire-and-forget send, which only its callback saw, op "send")
            op = raised.get("op", "poll")
            actor.last_error = {"op": op, "error": raised["outcome"], "detail": raised.get("detail", "")}
            if raised["outcome"] in FENCED_OUTCOMES:
                actor.fenced = True
            events.emit(
                ev.ClientError,
                actor=actor.spec.name,
                op=op,
                error=raised["outcome"],
                fatal=bool(raised.get("fatal")),
                txn_requires_abort=bool(raised.get("txn_requires_abort")),
                detail=raised.get("detail", ""),
            )
    else:
        for t, p, o in result.get("state", {}).get("positions", []):
            if o >= 0:
                actor.positions[names.scenario_tp(t, p)] = o
    return result
