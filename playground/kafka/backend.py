"""The real-cluster backend: the same scenario steps and live actions against an Apache Kafka cluster named in the
server's settings, through confluent-kafka.

Design (see playground/engine/backend.py for the contract and shared/docs/design.md, "Notes for the real backend").
This module runs the steps; each other idea has its module:

* the cluster: only the one in the server's settings, checked to be the profile's Kafka (`clusters.py`);
* names: every topic, transactional id and group under the session's own prefix `pg-<8 hex>-` (`names.py`);
* the session's topics: created at the start, deleted on close(), recorded meanwhile in a registry that outlives
  the process, so that a killed process's topics are swept by the next one (`topics.py`, `owners.py`);
* actors: each in a worker process of its own, `crash` a SIGKILL, `restart` a fresh process (`actors.py`,
  `profiles.py` for what each client is given, `worker.py` and `java_worker.py` for the processes);
* what the cluster holds, read from outside the actors (`observer.py`, `wire.py`), turned into events, the
  observation and view() (`observation.py`, `emitter.py` for the events' clock);
* broker steps through the server's broker control command (`brokers.py`), late writes (`latewrite.py`).

Every network wait is bounded. An unreachable cluster is a `BackendError` within a few seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from playground.engine import events as ev
from playground.engine.backend import OK, Backend, BackendError, ProfileError
from playground.engine.spec import CONSUMER, DEFAULT_PROFILE, PRODUCER, ActorSpec, ClusterSpec, Profile, Step, TopicSpec
from playground.kafka import actors as act
from playground.kafka import brokers, clusters, topics
from playground.kafka import observation as obs_view
from playground.kafka.actors import Actor
from playground.kafka.adminabort import apply_abort
from playground.kafka.clusters import kafka_settings
from playground.kafka.emitter import EventEmitter
from playground.kafka.latewrite import apply_late_write
from playground.kafka.names import SessionNames, new_prefix
from playground.kafka.observation import ClusterEvents, log_fates
from playground.kafka.observation import observation as build_observation
from playground.kafka.observer import PREPARE_STATES, Observer, ObserverError
from playground.kafka.profiles import (
    ACTOR_PROCESSES,
    BROKER_SETTINGS,
    FENCED_OUTCOMES,
    TOPIC_SETTINGS,
    actor_config,
    solo_group,
)
from playground.kafka.wire import WireError
from playground.kafka.worker import WorkerError

log = logging.getLogger(__name__)

__all__ = ["KafkaBackend", "kafka_settings", "log_fates"]

QUIESCE_S = 15.0  # longest wait for markers / LSO / stable offsets before observing
MARKERS_S = 10.0  # longest wait for a commit's or an abort's markers before the next step


class KafkaBackend(Backend):
    name = "kafka"

    def __init__(
        self,
        cluster: ClusterSpec,
        actors: Mapping[str, ActorSpec],
        *,
        seed: int = 0,
        on_event: Callable[[Any], None] | None = None,
        settings: Mapping[str, Any] | None = None,
        profile: Profile = DEFAULT_PROFILE,
    ) -> None:
        """`settings` overrides what kafka_settings() found (keys: bootstrap, client, broker_control, base_dir,
        max_sleep_s, owners_dir); for code that picks the cluster itself, e.g. a test running a scenario on a second,
        dedicated cluster. Never filled from user input."""
        if profile.client not in ACTOR_PROCESSES:
            raise ProfileError(f"the real-cluster backend has no {profile.client} worker")
        self.profile = profile
        self._lock = threading.RLock()
        self.cluster = cluster
        self.seed = seed
        self.on_event = on_event
        self.settings = kafka_settings(profile.kafka)
        bootstrap_setting = clusters.SETTINGS[profile.kafka][0]
        if settings:
            unknown = set(settings) - set(self.settings)
            if unknown:
                raise ValueError(f"unknown Kafka backend settings: {sorted(unknown)}")
            self.settings.update(settings)
        if not self.settings["bootstrap"]:
            raise BackendError(
                f"No Kafka {profile.release} cluster is configured: set {bootstrap_setting} in the server's settings "
                f"(for a local one: bash tools/kafka/kafka.sh start --version {profile.kafka} --nodes 3)."
            )
        self.prefix = new_prefix()
        self.events = EventEmitter(on_event)
        self.topics: dict[str, TopicSpec] = {t.name: t for t in cluster.topics}
        self.names = SessionNames(self.prefix, self.topics)
        self.actors: dict[str, Actor] = {}
        self.stopped_brokers: set[int] = set()
        self.closed = False
        # produce steps whose Java Sender's AddPartitionsToTxn the worker holds for a race (hold_before_races)
        self._holds: set[int] = set()
        self._message: str | None = None  # the last step's error message (outcome_message)
        self._seen = ClusterEvents(self.names, self.events)
        self._clock_capped: list[str] = []
        self._ignored_cluster = {k: v for k, v in cluster.config.items() if k in BROKER_SETTINGS}
        self.observer = Observer(self.settings["bootstrap"], self.settings["client"], self.prefix)
        try:
            self.observer.check_reachable()
            try:  # the cluster reached must be the Kafka the profile names; its transaction.version as it says
                self.cluster_version = clusters.check(self.observer.wire, profile, bootstrap_setting)
            except clusters.ClusterMismatch as e:
                self.observer.close()
                raise ProfileError(str(e)) from None
            except WireError as e:
                raise ObserverError(f"the versions of the cluster in {bootstrap_setting} (ApiVersions): {e}") from None
            self.transaction_version = self.cluster_version.transaction_version
            self.brokers = self.observer.broker_ids()
            real = {self.names.real_topic(t.name): t.partitions for t in cluster.topics}
            # the file's cluster shape: its replication factor (at most one replica per broker) and min.insync.replicas
            rf = min(cluster.replication_factor or 3, len(self.brokers))
            topic_config = {k: str(v) for k, v in cluster.config.items() if k in TOPIC_SETTINGS}
            topics.create(self.observer, self.settings, self.prefix, real, rf=rf, config=topic_config)
        except ObserverError as e:
            self.observer.close()
            raise BackendError(str(e)) from None
        try:
            for spec in actors.values():
                self._register(spec, start=False)
            # the workers boot in parallel (worker.BOOT_SLOTS at a time); now wait for each
            for a in self.actors.values():
                act.finish_start(a, self.names, self.topics, self.events)
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------------------------------- names

    @property
    def timeline(self) -> deque[dict[str, Any]]:
        return self.events.timeline

    def _emit(self, cls: type, t: float | None = None, **values: Any) -> None:
        self.events.emit(cls, t, **values)

    def _txids(self) -> list[str]:
        out: list[str] = []
        for a in self.actors.values():
            tid = a.spec.transactional_id
            if tid and tid not in out:
                out.append(tid)
        return sorted(out)

    def _groups(self) -> dict[str, list[str]]:
        """group -> scenario topic-partitions its consumers read."""
        out: dict[str, list[str]] = {}
        for a in self.actors.values():
            if a.spec.kind == CONSUMER and a.spec.group_id:
                tps = out.setdefault(a.spec.group_id, [])
                for t in a.spec.topics:
                    for p in range(self.topics[t].partitions):
                        if f"{t}-{p}" not in tps:
                            tps.append(f"{t}-{p}")
        return out

    # ----------------------------------------------------------------------------------------- actors

    def _register(self, spec: ActorSpec, start: bool = True) -> Actor:
        if spec.name in self.actors:
            raise BackendError(f"actor {spec.name!r} exists already")
        if spec.kind not in (PRODUCER, CONSUMER):
            raise BackendError(f"actor {spec.name!r}: unknown kind {spec.kind!r}")
        for t in spec.topics:
            self.names.real_topic(t)
        config = actor_config(
            spec,
            prefix=self.prefix,
            bootstrap=self.settings["bootstrap"],
            client=self.settings["client"],
            cluster_config=self.cluster.config,
            profile=self.profile,
        )
        actor = Actor(spec=spec, real_config=config)
        self.actors[spec.name] = actor
        act.spawn(actor, self.profile)
        if start:
            try:
                act.finish_start(actor, self.names, self.topics, self.events)
            except BaseException:
                # Forget the half-started actor, so that adding it again (a retry) is possible.
                self.actors.pop(spec.name, None)
                if actor.proc is not None:
                    actor.proc.kill()
                raise
        return actor

    def add_actor(self, actor: ActorSpec) -> None:
        with self._lock:
            self._register(actor)

    def _call(self, actor: Actor, op: str, **args: Any) -> dict[str, Any]:
        return act.call(actor, op, self.events, self.names, **args)

    # ----------------------------------------------------------------------------------------- steps

    def hold_before_races(self, steps: Sequence[Step]) -> None:
        """Where a scenario states how kafka-clients' race between AddOffsetsToTxn and AddPartitionsToTxn goes
        (send_offsets_to_transaction's `first`, issue 31 item 6), the fire-and-forget produce steps of that producer
        right before it hold the Sender's AddPartitionsToTxn in the worker until the AddOffsetsToTxn is queued
        (Worker.java's RaceQueue): an application makes the two calls microseconds apart, a step here is a round
        trip to the worker. librdkafka's workers have no such race to hold."""
        if self.profile.client != "java":
            return
        for i, step in enumerate(steps):
            if step.action != "send_offsets_to_transaction" or "first" not in step.args:
                continue
            for earlier in reversed(steps[:i]):
                if earlier.is_note or earlier.actor != step.actor:
                    continue
                if earlier.action != "produce" or earlier.args.get("await", True) is not False:
                    break
                self._holds.add(earlier.index)

    def apply(self, step: Step) -> str:
        with self._lock:
            if self.closed:
                raise BackendError("this session's backend is closed")
            self._message = None
            if step.is_note:
                return OK
            if step.actor == "clock":
                outcome = self._advance(int(step.args.get("ms", 0)))
            elif step.actor == "broker" and step.action == "abort_transaction":  # an operator's abort
                outcome = apply_abort(self, step)
            elif step.actor == "broker":
                outcome = self._broker_step(step)
            elif step.actor == "net":  # a Produce request of an earlier transaction, delivered late
                outcome = apply_late_write(self, step)
            else:
                actor = self.actors.get(step.actor)
                if actor is None:
                    raise BackendError(f"unknown actor {step.actor!r} (actors: {', '.join(self.actors) or 'none'})")
                if step.action not in ("crash", "restart"):
                    # a cluster that went away: a clear error within seconds, not a client timing out after 15 s
                    try:
                        self.observer.check_alive()
                    except ObserverError as e:
                        raise BackendError(str(e)) from None
                try:
                    outcome = self._actor_step(actor, step)
                except WorkerError as e:
                    # the client did not answer in time (a stuck or unreachable cluster): the worker is gone
                    actor.state = "CRASHED"
                    actor.last_error = {"op": step.action, "error": "_TIMED_OUT", "detail": str(e)}
                    self._emit(
                        ev.ClientError,
                        actor=actor.spec.name,
                        op=step.action,
                        error="_TIMED_OUT",
                        fatal=True,
                        txn_requires_abort=False,
                        detail=str(e),
                    )
                    outcome = "_TIMED_OUT"
            if self.on_event is not None:
                try:
                    self._sync_cluster()
                except ObserverError as e:
                    log.warning("observing after %s: %s", step.label, e)
            self._emit(ev.Step, label=step.label, outcome=outcome)
            error = self.actors[step.actor].last_error if step.actor in self.actors else None
            self._message = str(error.get("detail") or "") or None if outcome != OK and error else None
            return outcome

    def outcome_message(self) -> str | None:
        """The failed step's error as the client described it (the Java worker: the exception's class and message,
        and the wire error behind it; librdkafka: its error string)."""
        return self._message

    def client_state(self, actor: str) -> str | None:
        a = self.actors.get(actor)
        return a.state if a is not None and a.spec.kind == PRODUCER else None

    def _advance(self, ms: int) -> str:
        """A real cluster's clock cannot be moved: sleep. Beyond the configured cap the sleep is cut short and
        view()["unobservable"] says so (e.g. 192h for transactional.id expiry cannot happen on a real cluster)."""
        cap = self.settings["max_sleep_s"]
        seconds = min(ms / 1000.0, cap)
        if ms / 1000.0 > cap:
            self._clock_capped.append(
                f"clock.advance of {ms / 1000:.0f} s slept only {cap:.0f} s: a real cluster's time cannot be advanced."
            )
        start = self.events.now_ms()
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, 0.5))
        self._emit(ev.Clock, from_ms=start, to_ms=self.events.now_ms())
        return OK

    def _broker_step(self, step: Step) -> str:
        template = self.settings["broker_control"]
        if not template:
            raise BackendError(
                f"{step.label}: this server cannot stop or start brokers (KAFKA_BROKER_CONTROL is not configured)"
            )
        broker = brokers.broker_of(step, self.observer, self.names, self._txids())
        known = set(self.brokers) | self.stopped_brokers
        if broker not in known:
            raise BackendError(f"{step.label}: broker {broker} is not part of the cluster (brokers: {sorted(known)})")
        action = step.action
        if action not in ("stop", "start"):
            raise BackendError(f"{step.label}: unknown broker action")
        brokers.run_broker_control(template, self.settings["base_dir"], action, broker, step.label)
        if action == "stop":
            self.stopped_brokers.add(broker)
        else:
            self.stopped_brokers.discard(broker)
        self._emit(ev.Broker, broker=broker, up=action == "start")
        # bounded: until the cluster's metadata agrees (leaders moved away from / back to the broker)
        self.observer.wait_broker(broker, up=action == "start", timeout_s=brokers.BROKER_SETTLE_TIMEOUT_S)
        return OK

    def _actor_step(self, actor: Actor, step: Step) -> str:
        action = step.action
        name = actor.spec.name
        if action == "get" or "future" in step.args or "callback" in step.args:
            # a send's future and its callback's invocations (issue 20) are modelled by the simulator; the workers
            # do not keep futures by name nor report callbacks yet: refused, never run as something else
            raise ProfileError(
                f"{step.label}: futures (future:, get) and callbacks (callback:) run on the simulator only for now"
            )
        if action == "crash":
            if actor.proc is not None:
                actor.proc.kill()
            before = actor.state
            actor.state = "CRASHED"
            act.retire(actor)
            self._emit(ev.ClientState, actor=name, from_state=before, to_state="CRASHED")
            return OK
        if action == "restart":
            before = actor.state
            if actor.running:
                assert actor.proc is not None
                actor.proc.kill()  # the old instance goes away as a process does on restart
            act.retire(actor)
            act.spawn(actor, self.profile)
            actor.rr.clear()
            actor.last_poll = []
            actor.last_error = None
            actor.fenced = False
            act.finish_start(actor, self.names, self.topics, self.events)
            self._emit(ev.ClientState, actor=name, from_state=before, to_state=actor.state)
            return OK
        if not actor.running:
            # the application is gone (crashed or closed): there is nobody to make the call (as the simulator)
            raise BackendError(f"{actor.spec.kind} {name!r} is {actor.state}: restart it first")

        if actor.spec.kind == PRODUCER:
            result = self._producer_step(actor, step)
        else:
            result = self._consumer_step(actor, step)
        outcome = str(result.get("outcome", OK))
        if outcome != OK:
            actor.last_error = {"op": action, "error": outcome, "detail": result.get("detail", "")}
            if outcome in FENCED_OUTCOMES or "fenced" in result.get("detail", "").lower():
                actor.fenced = True
            self._emit(
                ev.ClientError,
                actor=name,
                op=action,
                error=outcome,
                fatal=bool(result.get("fatal")),
                txn_requires_abort=bool(result.get("txn_requires_abort")),
                detail=result.get("detail", ""),
            )
        return outcome

    def _producer_step(self, actor: Actor, step: Step) -> dict[str, Any]:
        a, args = step.action, step.args
        if a in ("commit_transaction", "abort_transaction"):
            res = self._call(actor, a)
            if res.get("outcome", OK) == OK and actor.spec.transactional_id:
                self._await_markers(actor.spec.transactional_id)
            return res
        if a in ("init_transactions", "begin_transaction", "flush"):
            return self._call(actor, a)
        if a == "produce":
            topic = args["topic"]
            real = self.names.real_topic(topic)
            wait = bool(args.get("await", True))
            if "from" in args:
                src = self.actors.get(args["from"])
                if src is None or src.spec.kind != CONSUMER:
                    raise BackendError(f"{step.label}: {args['from']!r} is not a consumer of this session")
                records = []
                for r in src.last_poll:
                    part = r["partition"]
                    if part >= self.topics[topic].partitions:
                        raise BackendError(f"{step.label}: {topic} has no partition {part}")
                    records.append({"topic": real, "partition": part, "key": r.get("key"), "value": r.get("value")})
                hold = {"hold_add_partitions": True} if step.index in self._holds else {}
                res = self._call(actor, "produce_many", records=records, wait=wait, **hold)
                for d in res.get("deliveries", []):
                    self._delivery_event(actor, d)
                return res
            key = args.get("key")
            part = args.get("partition")
            if part is None:
                part = act.partition_for(actor, self.topics[topic].partitions, key)
            hold = {"hold_add_partitions": True} if step.index in self._holds else {}
            res = self._call(
                actor, "produce", topic=real, partition=part, key=key, value=args.get("value"), wait=wait, **hold
            )
            if res.get("delivery"):
                self._delivery_event(actor, res["delivery"])
            return res
        if a == "send_offsets_to_transaction":
            consumer = self.actors.get(args["consumer"])
            if consumer is None or consumer.spec.kind != CONSUMER:
                raise BackendError(f"{step.label}: {args['consumer']!r} is not a consumer of this session")
            if not consumer.running:
                return {"outcome": "_STATE", "detail": f"consumer {consumer.spec.name} is not running"}
            meta = self._call(consumer, "group_metadata")
            offsets = [[t, p, o] for t, p, o in meta["positions"] if o >= 0]
            first = {"first": args["first"]} if "first" in args else {}
            return self._call(
                actor, "send_offsets_to_transaction", offsets=offsets, group_metadata=meta["group_metadata"], **first
            )
        if a == "close":
            res = self._call(actor, "close")
            before = actor.state
            if res.get("outcome", OK) == OK:
                actor.state = "CLOSED"
                act.retire(actor)
                self._emit(ev.ClientState, actor=actor.spec.name, from_state=before, to_state="CLOSED")
            return res
        raise BackendError(f"{step.label}: a producer cannot {a}")

    def _delivery_event(self, actor: Actor, d: dict[str, Any]) -> None:
        self._emit(
            ev.Delivery,
            actor=actor.spec.name,
            partition=self.names.scenario_tp(d["topic"], d["partition"]),
            offset=d.get("offset"),
            value=d.get("value"),
            error=d.get("error"),
        )

    def _await_markers(self, txid: str) -> None:
        """commit_transaction()/abort_transaction() return once PrepareCommit/PrepareAbort is durable, before the
        coordinator has written the markers. In the simulator (and on a quiet cluster) the markers land before the
        next step's request reaches a leader: they leave the coordinator as its answer does. On a loaded machine a
        real cluster can let the next step's record overtake them (seen: a plain send ahead of the COMMIT marker in
        hanging-transaction-blocks-lso at load 60), which is the machine's pace, not Kafka's behaviour: wait, bounded,
        until the transaction has left Prepare* (its markers are written) before the next step."""
        deadline = time.monotonic() + MARKERS_S
        while time.monotonic() < deadline:
            try:
                state = (
                    self.observer.describe_transactions([self.prefix + txid]).get(self.prefix + txid, {}).get("state")
                )
            except ObserverError:
                return  # the observation says what the cluster holds; this wait only orders steps
            if state not in PREPARE_STATES:
                return
            time.sleep(0.02)

    def _consumer_step(self, actor: Actor, step: Step) -> dict[str, Any]:
        a = step.action
        if a == "poll":
            # What the application would see "now": wait (bounded) until the cluster is quiescent first, so a
            # poll right after commit_transaction() sees the markers that commit's return did not wait for.
            self._quiesce()
            res = self._call(actor, "poll", max=step.args.get("max"))
            actor.last_poll = res.get("records", [])
            actor.generation = res.get("generation")
            by_tp: dict[str, list[dict[str, Any]]] = {}
            for r in actor.last_poll:
                tp = self.names.scenario_tp(r["topic"], r["partition"])
                entry = {"offset": r["offset"], "value": r["value"]}
                actor.received.setdefault(tp, []).append(entry)
                by_tp.setdefault(tp, []).append(r)
            for tp, rs in by_tp.items():
                self._emit(
                    ev.Consume,
                    actor=actor.spec.name,
                    partition=tp,
                    offsets=tuple(r["offset"] for r in rs),
                    values=tuple(r["value"] for r in rs),
                    position=actor.positions.get(tp, rs[-1]["offset"] + 1),
                )
            return res
        if a == "commit":
            if not actor.spec.group_id:
                return {"outcome": "_INVALID_ARG", "detail": "a consumer without group.id cannot commit"}
            return self._call(actor, "commit")
        if a == "seek_to_committed":
            actor.positions.clear()
            return self._call(actor, "seek_to_committed")
        raise BackendError(f"{step.label}: a consumer cannot {a}")

    # ----------------------------------------------------------------------------------------- observing

    def _quiesce(self, timeout_s: float = QUIESCE_S) -> bool:
        """Wait (bounded) until the cluster is quiescent for this session: producers' queues drained, no
        transaction in PrepareCommit/PrepareAbort (markers written), every partition's LSO caught up with its
        high watermark unless an Ongoing transaction holds it, committed offsets stable (OffsetFetch with
        require_stable answers). commit_transaction() returns once PrepareCommit is durable, BEFORE the markers
        land: without this wait an observation would race the coordinator. Returns False if time ran out."""
        deadline = time.monotonic() + timeout_s
        for actor in self.actors.values():
            if actor.spec.kind == PRODUCER and actor.running and actor.queue:
                try:
                    while time.monotonic() < deadline:
                        self._call(actor, "status")
                        if not actor.queue:
                            break
                        time.sleep(0.05)
                except WorkerError:
                    pass
        try:
            return self.observer.wait_quiescent(
                [self.prefix + t for t in self._txids()],
                [self.names.real_tp(tp) for tp in self.names.all_tps()],
                [self.prefix + g for g in self._groups()],
                deadline,
            )
        except ObserverError as e:
            raise BackendError(str(e)) from None

    def observe(self) -> dict[str, Any]:
        with self._lock:
            self._quiesce()
            try:
                snap = self._snapshot(stable_groups=True)
            except ObserverError as e:
                raise BackendError(str(e)) from None
            self._seen.from_snapshot(snap, self.actors)
            return build_observation(snap, self.actors, self.names)

    def _snapshot(self, stable_groups: bool) -> dict[str, Any]:
        real_tps = {tp: self.names.real_tp(tp) for tp in self.names.all_tps()}
        return self.observer.snapshot(
            real_tps,
            {t: self.prefix + t for t in self._txids()},
            {g: (self.prefix + g, [real_tps[tp] for tp in tps]) for g, tps in self._groups().items()},
            stable_groups=stable_groups,
        )

    def _sync_cluster(self) -> None:
        """Read what changed on the cluster (new records and markers, watermarks, coordinator transitions, group
        offsets) and emit it as events. Cheap enough to run after every step when someone listens."""
        self._seen.from_snapshot(self._snapshot(stable_groups=False), self.actors)

    def group_generation(self, actor: str) -> int | None:
        a = self.actors.get(actor)
        return a.generation if a is not None else None

    def polled(self, actor: str) -> list[tuple[str, int]]:
        a = self.actors.get(actor)
        return [(self.names.scenario_tp(r["topic"], r["partition"]), r["offset"]) for r in (a.last_poll if a else [])]

    def stable_offsets(self) -> dict[str, int]:
        """Every partition's LSO, asked right after the poll the checker compares it with: a broker never returns a
        read_committed consumer a record at or past the LSO of that moment, and the LSO only grows."""
        with self._lock:
            try:
                got = self.observer.stable_offsets(
                    [(self.names.real_topic(t.name), p) for t in self.topics.values() for p in range(t.partitions)]
                )
            except ObserverError:
                return {}  # the check of those reads is left out, not guessed
        return {self.names.scenario_tp(t, p): o for (t, p), o in got.items() if o is not None}

    def _open_transactions(self) -> dict[str, dict[str, int]]:
        """KIP-664 DescribeProducers: each partition leader's open transactions (first offset per producer)."""
        out: dict[str, dict[str, int]] = {}
        for tp in self.names.all_tps():
            try:
                out[tp] = {
                    str(d["producer_id"]): d["current_txn_start_offset"]
                    for d in self.observer.describe_producers(*self.names.real_tp(tp))
                    if d["current_txn_start_offset"] is not None
                }
            except ObserverError:
                out[tp] = {}
        return out

    def view(self, log_limit: int = 200) -> dict[str, Any]:
        with self._lock:
            try:
                snap = self._snapshot(stable_groups=False)
            except ObserverError as e:
                raise BackendError(str(e)) from None
            self._seen.from_snapshot(snap, self.actors)
            base = build_observation(snap, self.actors, self.names)
            brokers_up = {
                str(b): {"up": b not in self.stopped_brokers and b in snap["brokers"]}
                for b in sorted(set(self.brokers) | self.stopped_brokers | set(snap["brokers"]))
            }
            out = {
                **base,
                "partitions": obs_view.partition_views(snap, base, self._open_transactions(), log_limit),
                "backend": "kafka",
                "time_ms": self.events.now_ms(),
                "brokers": brokers_up,
                "producers": obs_view.producer_views(snap, self.actors),
                "consumers": obs_view.consumer_views(self.actors, log_limit),
                "transactions": obs_view.transaction_views(snap, self.names, self.events),
                "timeline": list(self.timeline),
                "unobservable": self.unobservable(),
            }
            groups = self._groups()
            if groups:
                try:
                    described = self.observer.describe_groups([self.prefix + g for g in groups])
                except ObserverError:
                    described = None  # the groups panel shows the committed offsets alone, as before
                if described is not None:
                    real = {self.prefix + g: g for g in groups}
                    out["group_details"] = obs_view.group_details(
                        {real[g]: d for g, d in described.items()}, snap["groups"], self.names, self.prefix, self.actors
                    )
            return out

    def unobservable(self) -> list[str]:
        return obs_view.unobservable(
            self.profile,
            self._ignored_cluster,
            dict(self.cluster.config),
            self._clock_capped,
            bool(self.settings["broker_control"]),
            self.actors,
        )

    # ----------------------------------------------------------------------------------------- closing

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            procs = [a.proc for a in self.actors.values() if a.proc is not None and a.proc.alive]
            # ask every worker to close its client, then wait for them together (bounded)
            for p in procs:
                p.request_exit(3.0)
            deadline = time.monotonic() + 6.0
            for p in procs:
                p.join(max(0.0, deadline - time.monotonic()))
            for a in self.actors.values():  # every one, a worker still waiting to start included (boot.py)
                if a.proc is not None:
                    a.proc.kill()
            # a session that stopped brokers of a shared cluster starts them again
            for broker in sorted(self.stopped_brokers):
                try:
                    label = f"closing: broker.start {broker}"
                    brokers.run_broker_control(
                        self.settings["broker_control"], self.settings["base_dir"], "start", broker, label
                    )
                    self.stopped_brokers.discard(broker)
                except BackendError as e:
                    log.warning("%s", e)
            solo = [
                solo_group(self.prefix, n)
                for n, a in self.actors.items()
                if a.spec.kind == CONSUMER and not a.spec.group_id
            ]
            topics.delete(
                self.observer,
                self.settings["owners_dir"],
                self.prefix,
                [self.prefix + t for t in self.topics],
                [self.prefix + g for g in self._groups()] + solo,
            )
            self.observer.close()

    def __del__(self) -> None:  # a forgotten backend must not leave worker processes behind
        try:
            if not self.closed:
                for a in self.actors.values():
                    if a.proc is not None:
                        a.proc.kill()
        except Exception:
            pass
