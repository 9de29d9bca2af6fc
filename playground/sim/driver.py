"""SimBackend: the scenario steps of scenario-format.md executed against the simulated cluster.

Time: steps run back to back in virtual time. A blocking call (init, an awaited produce, commit, abort,
send_offsets, a consumer poll) runs the scheduler until its answer is in, so whatever else is in flight
(other clients' background sends, markers) happens meanwhile in time order. A fire-and-forget produce only
queues the record; it goes out with the next thing that lets time pass.

Pace: a live session at its user's pace records the wall time between commands with each command; `pass_time`
lets it pass on the virtual clock before the step (so background work happens meanwhile, as on a real cluster), and
a replay passes the same time: still deterministic.

Quiescence (what `observe()` waits for): in-flight work is finished: markers are written, the high watermark
and LSO caught up, queued records sent, retries done. Timers that would change the story (the coordinator's
transaction-timeout abort scan finding a timed-out transaction, transactional.id expiry, a consumer's session
timeout) do not fire; periodic scans that would find nothing run on the way. The wait is bounded (30 s of
virtual time). So `observe()` never makes a transaction time out that the steps did not already time out.

Profiles: the cluster runs the profile's Kafka release (3.5, 3.9, or 4.x with transaction.version=2) and the
producers are librdkafka's model (client.Producer) or kafka-clients' (javaclient.JavaProducer, of the profile's
client release: the cluster's own unless the profile names another, speaking the request versions the two
negotiate, apiversions.py). A
Java step's outcome is the simple class name of the exception the application catches (an awaited produce: the
cause of the ExecutionException that Future.get() throws); its `last_error` adds the error code on the wire. The
consumers are one model for both clients (their fetch and offset behaviour is the brokers'); a Java consumer's
errors are named as KafkaConsumer raises them (JAVA_CONSUMER_EXCEPTIONS).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from typing import Any

from playground.engine import events as ev
from playground.engine.backend import OK, Backend, BackendError, ProfileError
from playground.engine.spec import CONSUMER, DEFAULT_PROFILE, PRODUCER, ActorSpec, ClusterSpec, Profile, Step
from playground.sim import adminabort, latewrite, observation
from playground.sim.apiversions import java_versions, librdkafka_produce_version
from playground.sim.client import Consumer, Message, Producer, TopicPartition
from playground.sim.cluster import Cluster
from playground.sim.errors import KafkaException
from playground.sim.javaclient import API_VERSIONS, JavaProducer
from playground.sim.javaerrors import ERROR_MESSAGES, JavaException
from playground.sim.log import READ_COMMITTED
from playground.sim.observation import ConsumerActor, ProducerActor

# Client settings a cluster-level `config:` passes on to every client (the rest are broker settings).
CLIENT_KEYS = frozenset(
    {
        "transaction.timeout.ms",
        "linger.ms",
        "queue.buffering.max.ms",
        "message.timeout.ms",
        "delivery.timeout.ms",
        "retry.backoff.ms",
        "acks",
        "request.required.acks",
        "enable.idempotence",
        "batch.num.messages",
        "isolation.level",
        "auto.offset.reset",
        "enable.auto.commit",
        "auto.commit.interval.ms",
        "sim.api.timeout.ms",
    }
)
# What KafkaConsumer raises where the consumer model names a librdkafka error (commitSync, committed, poll).
JAVA_CONSUMER_EXCEPTIONS = {
    "ILLEGAL_GENERATION": "CommitFailedException",
    "UNKNOWN_MEMBER_ID": "CommitFailedException",
    "REBALANCE_IN_PROGRESS": "RebalanceInProgressException",
    "_TIMED_OUT": "TimeoutException",
    "_INVALID_ARG": "InvalidGroupIdException",
    "NOT_COORDINATOR": "TimeoutException",
    "COORDINATOR_NOT_AVAILABLE": "TimeoutException",
    "_TRANSPORT": "TimeoutException",
    # KIP-345: another instance took the consumer's group.instance.id. kafka-clients' commitSync() throws
    # FencedInstanceIdException when its OffsetCommit is answered FENCED_INSTANCE_ID; once its heartbeat was, the
    # coordinator has reset the member (AbstractCoordinator.HeartbeatResponseHandler: resetStateOnResponseError) and
    # commitSync() fails before sending, with CommitFailedException (not part of an active group), while poll() throws
    # the heartbeat thread's FencedInstanceIdException. The model's librdkafka consumer says _FATAL for a commit
    # after its fenced heartbeat (its only fatal error)
    "FENCED_INSTANCE_ID": "FencedInstanceIdException",
    "_FATAL": "CommitFailedException",
}
# kafka-clients' message of those two (ConsumerCoordinator.sendOffsetCommitRequest, Errors.FENCED_INSTANCE_ID)
JAVA_CONSUMER_MESSAGES = {
    "FencedInstanceIdException": ERROR_MESSAGES["FENCED_INSTANCE_ID"],
    "CommitFailedException": (
        "Offset commit cannot be completed since the consumer is not part of an active group for auto partition "
        "assignment; it is likely that the consumer was kicked out of the group."
    ),
}
SETTLE_MAX_MS = 30_000
POLL_ROUNDS_MAX = 1000
POLL_BATCH = 500


def _ms(value: Any) -> int:
    if isinstance(value, bool):
        raise BackendError(f"expected a number of milliseconds, got {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip().lower()
    for suffix, factor in (("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)):
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return int(float(text[: -len(suffix)]) * factor)
    if text.isdigit():
        return int(text)
    raise BackendError(f"cannot read {value!r} as a duration")


class SimBackend(Backend):
    name = "sim"

    def __init__(
        self,
        cluster: ClusterSpec,
        actors: Mapping[str, ActorSpec],
        *,
        seed: int = 0,
        on_event: Callable[[Any], None] | None = None,
        keep_events: bool = True,
        profile: Profile = DEFAULT_PROFILE,
    ) -> None:
        if profile.client not in ("librdkafka", "java"):
            raise ProfileError(f"the simulator has no model of the {profile.client} client")
        self.profile = profile
        self.spec = cluster
        self.seed = seed
        self.config = dict(cluster.config)
        if cluster.replication_factor is not None:  # the file's cluster shape (a simulator knob may still override)
            self.config.setdefault("sim.replication.factor", cluster.replication_factor)
        self._external = on_event
        self._spans: dict[str, tuple[list[int], list[tuple[int, str | None]]]] = {}
        self._landed: dict[str, int] = {}
        self._rc_seen: set[tuple[str, int]] = set()
        self._rc_received: dict[str, int] = {}  # producing actor -> its records a read_committed consumer got
        # keep_events=False: a live session's simulator keeps no list of every event (the view reads the timeline's
        # last 200 RPCs); the list would grow without end and weigh down every checkpoint.
        self.java = profile.client == "java"
        self.cluster = Cluster(
            cluster.brokers,
            self.config,
            {t.name: t.partitions for t in cluster.topics},
            seed=seed,
            on_event=self._on_event,
            keep_events=keep_events,
            kafka=profile.kafka,
        )
        if "session.timeout.ms" in self.config:
            self.cluster.groups.session_timeout_ms = int(self.config["session.timeout.ms"])
        self.producers: dict[str, ProducerActor] = {}
        self.consumers: dict[str, ConsumerActor] = {}
        self._message: str | None = None  # the last step's error message (outcome_message)
        self._callbacks: list[dict[str, Any]] = []
        for actor in actors.values():
            self.add_actor(actor)

    # -- events -----------------------------------------------------------------------------------------------
    @property
    def events(self) -> list[ev.Event]:
        return self.cluster.events

    def _on_event(self, event: ev.Event) -> None:
        if isinstance(event, ev.Append) and not event.partition.startswith("__"):
            bases, spans = self._spans.setdefault(event.partition, ([], []))
            bases.append(event.base_offset)
            spans.append((event.base_offset + event.count, event.client_id))
            if event.client_id is not None:
                self._landed[event.client_id] = self._landed.get(event.client_id, 0) + event.count
        if self._external is not None:
            self._external(event)

    def _owner(self, tp: str, offset: int) -> str | None:
        found = self._spans.get(tp)
        if not found:
            return None
        bases, spans = found
        i = bisect.bisect_right(bases, offset) - 1
        if i >= 0 and offset < spans[i][0]:
            return spans[i][1]
        return None

    # -- actors -----------------------------------------------------------------------------------------------
    def fenced_actors(self) -> frozenset[str]:
        return frozenset(name for name, actor in self.producers.items() if actor.fenced)

    def add_actor(self, actor: ActorSpec) -> None:
        if actor.name in self.producers or actor.name in self.consumers:
            raise BackendError(f"actor {actor.name!r} already exists")
        if actor.kind == PRODUCER:
            entry = ProducerActor(actor)
            self.producers[actor.name] = entry
            entry.client = self._new_producer(actor)
        elif actor.kind == CONSUMER:
            for topic in actor.topics:
                if self.cluster.partition_count(topic) == 0:
                    raise BackendError(f"actor {actor.name!r} subscribes to unknown topic {topic!r}")
            entry_c = ConsumerActor(actor)
            self.consumers[actor.name] = entry_c
            entry_c.client = self._new_consumer(actor)
        else:
            raise BackendError(f"actor {actor.name!r} has unknown kind {actor.kind!r}")

    def _client_conf(self, actor: ActorSpec) -> dict[str, Any]:
        conf = {k: v for k, v in self.config.items() if k in CLIENT_KEYS}
        conf.update(actor.config)
        conf["client.id"] = actor.name
        return conf

    def _new_producer(self, actor: ActorSpec) -> Producer | JavaProducer:
        conf = self._client_conf(actor)
        # the scenario format: a producer without transactional.id is idempotent unless it says otherwise
        conf.setdefault("enable.idempotence", True)
        if self.java:
            release = self.profile.client_release or self.profile.kafka
            return JavaProducer(conf, cluster=self.cluster, name=actor.name, release=release)
        return Producer(conf, cluster=self.cluster, name=actor.name)

    def _new_consumer(self, actor: ActorSpec) -> Consumer:
        conf = self._client_conf(actor)
        # scenarios read topics from the start and commit only when told to
        conf.setdefault("auto.offset.reset", "earliest")
        conf.setdefault("enable.auto.commit", False)
        consumer = Consumer(conf, cluster=self.cluster, name=actor.name)
        if actor.group_id:
            consumer.subscribe(list(actor.topics))
        else:
            consumer.assign(
                [TopicPartition(t, p) for t in actor.topics for p in range(self.cluster.partition_count(t))]
            )
        return consumer

    # -- steps ------------------------------------------------------------------------------------------------
    def apply(self, step: Step) -> str:
        self._message = None
        if step.is_note:
            outcome = OK
        else:
            outcome = self._apply(step)
        self.cluster.emit(ev.Step, label=step.label, outcome=outcome)
        return outcome

    def _apply(self, step: Step) -> str:
        actor, action, args = step.actor, step.action, dict(step.args)
        args.pop("expect", None)
        if actor == "clock":
            if action != "advance":
                raise BackendError(f"clock has no action {action!r}")
            self.cluster.advance(_ms(args.get("ms", args.get("value", 0))))
            return OK
        if actor == "broker" and action == "abort_transaction":
            error, _info = adminabort.abort(self.cluster, str(args["partition"]))
            return error or OK
        if actor == "broker":
            broker = self._broker_arg(args)
            if action == "stop":
                self.cluster.stop_broker(broker)
            elif action == "start":
                self.cluster.start_broker(broker)
            else:
                raise BackendError(f"broker has no action {action!r}")
            return OK
        if actor == "net":
            return self._late_write(args)
        if actor in self.producers:
            return self._producer_step(self.producers[actor], action, args)
        if actor in self.consumers:
            return self._consumer_step(self.consumers[actor], action, args)
        raise BackendError(f"unknown actor {actor!r}")

    def _late_write(self, args: dict[str, Any]) -> str:
        """`net.late_write`: playground/sim/latewrite.py delivers the held-back Produce request to the leader."""
        entry = self.producers.get(str(args.get("actor")))
        if entry is None or not entry.spec.transactional_id:
            raise BackendError(f"net.late_write: {args.get('actor')!r} is not a transactional producer")
        # the Produce version the actor's client sends to this cluster (librdkafka 10, 9 to a 3.5 broker; kafka-clients:
        # what its producer negotiated, apiversions.py)
        if self.java:
            release, kafka = self.profile.client_release or self.profile.kafka, self.profile.kafka
            version = java_versions(API_VERSIONS, release, kafka, tv2=release == kafka == "4")["Produce"]
        else:
            version = librdkafka_produce_version(self.profile.kafka)
        try:
            error, _info = latewrite.deliver(
                self.cluster,
                transactional_id=entry.spec.transactional_id,
                of=str(args["of"]),
                value=str(args["value"]),
                key=args.get("key"),
                version=version,
                actor=entry.spec.name,
            )
        except latewrite.LateWriteError as e:
            raise BackendError(str(e)) from None
        return error or OK

    def _broker_arg(self, args: dict[str, Any]) -> int:
        """`{"broker": 2}`; extensions: `{"coordinator_of": TXID}`, `{"leader_of": "orders-0"}`."""
        if "coordinator_of" in args:
            broker = self.cluster.txn_coordinator.coordinator_of(str(args["coordinator_of"]))
        elif "leader_of" in args:
            broker = self.cluster.leader_of(str(args["leader_of"]))
        else:
            broker = args.get("broker", args.get("value"))
        if not isinstance(broker, int) or broker not in self.cluster.brokers:
            raise BackendError(f"no broker {broker!r} (brokers are {list(self.cluster.brokers)})")
        return broker

    def _fail(self, entry: Any, op: str, exc: KafkaException | JavaException) -> str:
        if isinstance(exc, JavaException):
            exc.kept()
            # the librdkafka model announces what an API call returns itself; an exception is the driver's to see
            client = getattr(entry, "client", None)
            state = getattr(client, "state", None)
            self.cluster.emit(
                ev.ClientError,
                actor=entry.spec.name,
                op=op,
                error=exc.name,
                fatal=state == "FATAL_ERROR",
                txn_requires_abort=state == "ABORTABLE_ERROR",
                detail=exc.describe(),
            )
            entry.last_error = {"op": op, "error": exc.name, "detail": exc.describe()}
            self._message = exc.message
            wire = exc.wire_label()
            if wire is not None:
                entry.last_error["wire"] = wire  # extension: the broker error behind the exception, with its code
            if isinstance(entry, ProducerActor) and exc.name == "ProducerFencedException":
                entry.fenced = True
            return exc.name
        error = exc.error
        entry.last_error = {"op": op, "error": error.name(), "detail": error.str()}
        self._message = error.str()
        if isinstance(entry, ProducerActor) and error.name() == "_FENCED":
            entry.fenced = True
        return error.name()

    def _producer_step(self, entry: ProducerActor, action: str, args: dict[str, Any]) -> str:
        if action == "restart":
            if entry.client is not None:
                if entry.client.alive:
                    entry.client.crash()
                entry.client.discard()  # nothing refers to the old instance any more: no cycle left behind
            entry.client = self._new_producer(entry.spec)
            entry.fenced = False
            entry.last_error = None  # a new instance has raised nothing yet (as the real backend's restart)
            entry.futures.clear()  # the old instance's futures went with it
            return OK
        p = entry.client
        if p is None or not p.alive:
            state = p.state if p is not None else "gone"
            raise BackendError(f"producer {entry.spec.name!r} is {state}: restart it first")
        # kafka-clients' KafkaProducer or librdkafka's: the scenario's actions are their methods (init_transactions
        # is initTransactions(), produce is send(), ...); what differs is the send, flush's timeout (the Java one has
        # none) and the exception an error surfaces as
        java = isinstance(p, JavaProducer)
        try:
            if action == "init_transactions":
                p.init_transactions()
            elif action == "begin_transaction":
                p.begin_transaction()
            elif action == "produce":
                if "future" in args:
                    return self._produce_future(entry, p, args)
                return (
                    self._java_produce(entry, p, args) if isinstance(p, JavaProducer) else self._produce(entry, p, args)
                )
            elif action == "get":
                return self._get(entry, p, str(args.get("future")))
            elif action == "flush":
                if p.flush() and not java:
                    return "_TIMED_OUT"
            elif action == "send_offsets_to_transaction":
                name = args.get("consumer")
                if name not in self.consumers:
                    raise BackendError(f"send_offsets_to_transaction names unknown consumer {name!r}")
                consumer = self.consumers[name].client
                assert consumer is not None
                positions = consumer.position(consumer.assignment())
                if isinstance(p, JavaProducer):
                    # `first:` the request kafka-clients queues first when AddOffsetsToTxn races the Sender's
                    # AddPartitionsToTxn (javaclient.py); librdkafka has no such race to choose
                    first = str(args.get("first", "AddOffsetsToTxn"))
                    p.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), first=first)
                else:
                    p.send_offsets_to_transaction(positions, consumer.consumer_group_metadata())
            elif action == "commit_transaction":
                p.commit_transaction()
            elif action == "abort_transaction":
                p.abort_transaction()
            elif action == "crash":
                p.crash()
            elif action == "close":
                p.close()
            else:
                raise BackendError(f"producer {entry.spec.name!r} has no action {action!r}")
        except (KafkaException, JavaException) as exc:
            self._note_fenced(entry)
            return self._fail(entry, action, exc)
        self._note_fenced(entry)
        return OK

    def _note_fenced(self, entry: ProducerActor) -> None:
        if entry.client is not None and entry.client.fatal_error in ("_FENCED", "ProducerFencedException"):
            entry.fenced = True

    def _java_produce(self, entry: ProducerActor, p: JavaProducer, args: dict[str, Any]) -> str:
        """send(); awaited: Future.get() on each record, whose failure the application sees as the
        ExecutionException's cause. Fire-and-forget: only what send() itself throws is seen."""
        wait = args.get("await", True)
        if isinstance(wait, str):
            wait = wait.lower() not in ("false", "no", "0")
        records = self._records(args)
        futures = []
        for topic, partition, key, value in records:
            try:
                callback = self._java_callback(entry, value) if args.get("callback") else None
                part = None if partition < 0 else partition
                futures.append(p.send(topic, value=value, key=key, partition=part, callback=callback))
            except JavaException as exc:
                self._note_fenced(entry)
                return self._fail(entry, "produce", exc)
            if not wait:
                entry.app_sent_ok += 1
        outcome = OK
        if wait:
            for future in futures:
                try:
                    p.get(future)
                    entry.app_sent_ok += 1
                except JavaException as exc:
                    if outcome == OK:
                        outcome = self._fail(entry, "produce", exc)
        self._note_fenced(entry)
        return outcome

    def _records(self, args: dict[str, Any]) -> list[tuple[str, int, Any, Any]]:
        """(topic, partition or -1, key, value) of a produce step: one record, or what a consumer last polled."""
        source = args.get("from")
        if source is not None:
            if source not in self.consumers:
                raise BackendError(f"produce from unknown consumer {source!r}")
            topic = args.get("topic")
            return [(topic or m.topic(), m.partition(), m.key(), m.value()) for m in self.consumers[source].last_poll]
        topic = args.get("topic")
        if topic is None:
            raise BackendError("produce needs a topic")
        partition = args.get("partition")
        key = args.get("key")
        return [
            (
                str(topic),
                -1 if partition is None else int(partition),
                None if key is None else str(key),
                None if args.get("value") is None else str(args.get("value")),
            )
        ]

    def _produce(self, entry: ProducerActor, p: Producer, args: dict[str, Any]) -> str:
        wait = args.get("await", True)
        if isinstance(wait, str):
            wait = wait.lower() not in ("false", "no", "0")
        # an undeclared topic or partition reaches librdkafka, which answers _UNKNOWN_TOPIC/_UNKNOWN_PARTITION
        records = self._records(args)
        reports: list[tuple[Any, Message]] = []
        outcome = OK
        record_callback = bool(args.get("callback"))
        for topic, partition, key, value in records:
            try:

                def on_delivery(err: Any, msg: Message, value: Any = value) -> None:
                    if wait:
                        reports.append((err, msg))
                    if record_callback:
                        self._record_callback(entry, value, err.name() if err else OK, err.str() if err else None)

                p.produce(
                    topic,
                    value=value,
                    key=key,
                    partition=partition,
                    on_delivery=on_delivery if wait or record_callback else None,
                )
            except KafkaException as exc:
                self._note_fenced(entry)
                return self._fail(entry, "produce", exc)
            if not wait:
                entry.app_sent_ok += 1
        if wait:
            p.flush()
            for err, _msg in reports:
                if err is None:
                    entry.app_sent_ok += 1
                elif outcome == OK:
                    outcome = err.name()
                    entry.last_error = {"op": "produce", "error": err.name(), "detail": err.str()}
                    self._message = err.str()
            if len(reports) < len(records) and outcome == OK:
                outcome = "_TIMED_OUT"
        self._note_fenced(entry)
        return outcome

    # -- futures and callbacks ----------------------------------------------------------------------------------
    def _record_callback(self, entry: ProducerActor, value: Any, outcome: str, message: str | None) -> None:
        self._callbacks.append({"actor": entry.spec.name, "value": value, "outcome": outcome, "message": message})

    def _java_callback(self, entry: ProducerActor, value: Any) -> Any:
        """Callback.onCompletion, recording each invocation (kafka-clients may call one twice: at once for a send
        refused with an ApiException, and again when its record, kept in the accumulator, fails with the batch)."""

        def on_completion(metadata: Any, exc: JavaException | None) -> None:
            self._record_callback(entry, value, exc.name if exc else OK, exc.message if exc else None)

        return on_completion

    def _produce_future(self, entry: ProducerActor, p: Producer | JavaProducer, args: dict[str, Any]) -> str:
        """`produce: {..., future: f3}`: send() (produce()) and keep its future (its delivery report) for a later
        `get`. The outcome is send()'s own: ok once it returned, or what it threw."""
        ((topic, partition, key, value),) = self._records(args)
        name = str(args["future"])
        if isinstance(p, JavaProducer):
            callback = self._java_callback(entry, value) if args.get("callback") else None
            try:
                part = None if partition < 0 else partition
                entry.futures[name] = p.send(topic, value=value, key=key, partition=part, callback=callback)
            except JavaException as exc:
                entry.futures.pop(name, None)
                self._note_fenced(entry)
                return self._fail(entry, "produce", exc)
            return OK
        slot: dict[str, Any] = {}
        record_callback = bool(args.get("callback"))

        def on_delivery(err: Any, msg: Message) -> None:
            slot["error"] = err
            if record_callback:
                self._record_callback(entry, value, err.name() if err else OK, err.str() if err else None)

        try:
            p.produce(topic, value=value, key=key, partition=partition, on_delivery=on_delivery)
        except KafkaException as exc:
            entry.futures.pop(name, None)
            self._note_fenced(entry)
            return self._fail(entry, "produce", exc)
        entry.futures[name] = slot
        return OK

    def _get(self, entry: ProducerActor, p: Producer | JavaProducer, name: str) -> str:
        """`get: f3`: Future.get() on the send's future (kafka-clients), or librdkafka's poll() until that
        message's delivery report is served; the outcome is the send's result."""
        if name not in entry.futures:
            raise BackendError(f"{entry.spec.name} has no future {name!r} (a produce names it with future: {name})")
        future = entry.futures[name]
        if isinstance(p, JavaProducer):
            try:
                p.get(future)
            except JavaException as exc:
                self._note_fenced(entry)
                return self._fail(entry, "get", exc)
            entry.app_sent_ok += 1
            return OK
        deadline = p.now_ms + p.api_cap_ms
        for _ in range(POLL_ROUNDS_MAX):
            if "error" in future or p.now_ms >= deadline:
                break
            p.poll(max(0.001, (deadline - p.now_ms) / 1000))
        if "error" not in future:
            self._message = "no delivery report for the message"
            return "_TIMED_OUT"
        err = future["error"]
        self._note_fenced(entry)
        if err is not None:
            entry.last_error = {"op": "get", "error": err.name(), "detail": err.str()}
            self._message = err.str()
            return str(err.name())
        entry.app_sent_ok += 1
        return OK

    def outcome_message(self) -> str | None:
        return self._message

    def client_state(self, actor: str) -> str | None:
        entry = self.producers.get(actor)
        if entry is None or entry.client is None:
            return None
        return str(entry.client.state)

    def callbacks(self) -> list[dict[str, Any]]:
        return list(self._callbacks)

    def _consumer_step(self, entry: ConsumerActor, action: str, args: dict[str, Any]) -> str:
        if action == "restart":
            if entry.client is not None and entry.client.alive:
                entry.client.crash()
            entry.client = self._new_consumer(entry.spec)
            entry.last_poll = []
            entry.last_error = None
            return OK
        c = entry.client
        if c is None or not c.alive:
            raise BackendError(f"consumer {entry.spec.name!r} is {c.state if c else 'gone'}: restart it first")
        try:
            if action == "poll":
                if self.java and c.fatal_error is not None:
                    # kafka-clients' poll() throws what its heartbeat thread was answered (FENCED_INSTANCE_ID);
                    # librdkafka's poll() serves it as an error event and returns no records
                    raise KafkaException(c.fatal_error)
                self._poll(entry, c, args.get("max"))
            elif action == "commit":
                c.commit(asynchronous=False)
            elif action == "seek_to_committed":
                self._seek_to_committed(c)
            elif action == "crash":
                c.crash()
            else:
                raise BackendError(f"consumer {entry.spec.name!r} has no action {action!r}")
        except KafkaException as exc:
            outcome = self._fail(entry, action, exc)
            if self.java:
                # KafkaConsumer's exception for the same situation (commitSync without anything consumed is a no-op)
                if outcome == "_NO_OFFSET":
                    entry.last_error = None
                    return OK
                outcome = JAVA_CONSUMER_EXCEPTIONS.get(outcome, "KafkaException")
                assert entry.last_error is not None  # _fail has just set it
                entry.last_error["error"] = outcome
                if exc.error.name() in ("FENCED_INSTANCE_ID", "_FATAL"):
                    self._message = JAVA_CONSUMER_MESSAGES[outcome]
            return outcome
        return OK

    def _poll(self, entry: ConsumerActor, c: Consumer, max_records: Any) -> None:
        limit = None if max_records is None else int(max_records)
        got: list[Message] = []
        for _ in range(POLL_ROUNDS_MAX):
            want = POLL_BATCH if limit is None else min(POLL_BATCH, limit - len(got))
            if want <= 0:
                break
            batch = c.consume(want, timeout=1.0)
            if not batch:
                break
            got.extend(batch)
        entry.last_poll = got
        rc = c.isolation_level == READ_COMMITTED
        for m in got:
            tp = f"{m.topic()}-{m.partition()}"
            entry.received.setdefault(tp, []).append((m.offset(), m.value()))
            if rc and (tp, m.offset()) not in self._rc_seen:
                self._rc_seen.add((tp, m.offset()))
                owner = self._owner(tp, m.offset())
                if owner is not None:
                    self._rc_received[owner] = self._rc_received.get(owner, 0) + 1

    def _seek_to_committed(self, c: Consumer) -> None:
        parts = c.assignment()
        committed = (
            c.committed(parts) if c.group_id else [TopicPartition(tp.topic, tp.partition, -1001) for tp in parts]
        )
        for tp in committed:
            offset = tp.offset if tp.offset >= 0 else self.cluster.log(tp.name).log_start_offset
            c.seek(TopicPartition(tp.topic, tp.partition, offset))

    # -- pace -------------------------------------------------------------------------------------------------
    def pass_time(self, ms: int) -> list[str]:
        """Let `ms` pass on the virtual clock before a step, as the wall time between two commands of a live session
        at its user's pace passes for a real cluster (the session records it with the step, so a replay passes the
        same time). Meanwhile queued records go out, answers arrive, and the coordinator's timers run: a fence
        reaches a producer in the background as it does librdkafka's, and its next call fails at once. Returns
        the producers that learnt meanwhile that they were fenced (or hit another fatal error)."""
        fatal_before = {n for n, e in self.producers.items() if e.client is not None and e.client.fatal_error}
        self.cluster.advance(ms)
        for entry in self.producers.values():
            self._note_fenced(entry)
        return sorted(
            n
            for n, e in self.producers.items()
            if e.client is not None and e.client.fatal_error and n not in fatal_before
        )

    # -- observation ------------------------------------------------------------------------------------------
    def settle(self) -> bool:
        """Let in-flight work finish (see the module docstring)."""
        return self.cluster.settle(SETTLE_MAX_MS)

    def observe(self) -> dict[str, Any]:
        self.settle()
        return observation.observe(self.cluster, self.consumers)

    def group_generation(self, actor: str) -> int | None:
        entry = self.consumers.get(actor)
        return entry.client.generation if entry is not None and entry.client is not None else None

    def polled(self, actor: str) -> list[tuple[str, int]]:
        entry = self.consumers.get(actor)
        return [(f"{m.topic()}-{m.partition()}", m.offset()) for m in entry.last_poll] if entry else []

    def stable_offsets(self) -> dict[str, int]:
        return {name: self.cluster.log(name).last_stable_offset for name in observation.user_partitions(self.cluster)}

    def log_entries(self, since: Mapping[str, int]) -> dict[str, list[dict[str, Any]]]:
        # only what the caller has not read: a session's checker asks after every command, at any log length
        return {
            name: observation.partition(self.cluster, name, since.get(name, 0))["log"]
            for name in observation.user_partitions(self.cluster)
        }

    def coordinator_timers(self) -> dict[str, Any]:
        # read only: the abort scans' next ticks as brokers.PeriodicScan scheduled them
        scans = {b: scan for (b, kind), scan in self.cluster._scans.items() if kind == "abort"}
        return {
            "abort_scan_interval_ms": self.cluster.txn_coordinator.abort_interval_ms,
            "next_abort_scan_ms": {b: scan.scheduled_ms for b, scan in sorted(scans.items())},
        }

    def view(self, log_limit: int = 200) -> dict[str, Any]:
        return observation.view(
            self.cluster,
            self.producers,
            self.consumers,
            backend=self.name,
            kafka=self.profile.kafka,
            landed=self._landed,
            rc_received=self._rc_received,
            log_limit=log_limit,
        )

    def discard(self) -> None:
        self.cluster.discard()  # its listeners hold this backend's _on_event
        self._callbacks.clear()
        for producer in self.producers.values():
            if producer.client is not None:
                producer.client.discard()

    def close(self) -> None:
        for entry in self.producers.values():
            if entry.client is not None and entry.client.alive:
                entry.client.alive = False
        for entry_c in self.consumers.values():
            if entry_c.client is not None and entry_c.client.alive:
                entry_c.client.alive = False
