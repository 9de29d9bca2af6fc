"""The real-cluster backend: the same scenario steps and live actions against an Apache Kafka cluster named in the
server's settings, through confluent-kafka.

Design (see playground/engine/backend.py for the contract and shared/docs/design.md, "Notes for the real backend"):

* Only the cluster in settings: `settings.KAFKA_BOOTSTRAP_SERVERS` (or the environment variable of that name) for
  a profile of Kafka 3.9, `KAFKA4_BOOTSTRAP_SERVERS` for Kafka 4.x (`clusters.py`, which also checks that the
  cluster reached is that version), plus `KAFKA_CLIENT_CONFIG` (security settings and the like). Nothing a user
  types becomes a network address.
* Every session gets a prefix of its own, `pg-<8 hex>-`: its topics (`pg-1a2b3c4d-orders`), transactional ids
  and group ids live under it, so sessions on one cluster never see each other. Topics are deleted on close().
  The backend refuses any topic outside its prefix. Observations map names back to the scenario's.
* A process killed before close() leaves its topics behind (Kafka never deletes a topic by itself): each prefix is
  recorded in a registry that outlives the process (`owners.py`), and the first backend of a process deletes the
  topics and groups of prefixes whose owner process is dead, for its cluster only.
* Times in view() count from the session's start, wall clock: `time_ms`, and the coordinator's transaction start
  (DescribeTransactions' TransactionStartTimeMs, an epoch in the coordinator's clock) on the same origin.
* Each actor runs in a worker process of its own (`worker.py`): `crash` kills it (SIGKILL: no abort, no close,
  buffered records lost), `restart` starts a fresh one. `close` calls confluent-kafka's close(), which since 2.16
  aborts an open transaction: a close is not a crash.
* What the cluster holds is read by `observer.py`: partition logs including control records with producer id and
  epoch (a raw Fetch), HW and LSO (ListOffsets at both isolation levels), the coordinator's state
  (DescribeTransactions, `__transaction_state` decoded), committed group offsets (OffsetFetch, require_stable).
* Every network wait is bounded. An unreachable cluster is a `BackendError` within a few seconds.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import shlex
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playground.engine import events as ev
from playground.engine.backend import OK, Backend, BackendError, ProfileError
from playground.engine.spec import CONSUMER, DEFAULT_PROFILE, PRODUCER, ActorSpec, ClusterSpec, Profile, Step, TopicSpec
from playground.kafka import clusters, owners
from playground.kafka.java_worker import JavaActorProcess
from playground.kafka.latewrite import apply_late_write
from playground.kafka.observer import Observer, ObserverError
from playground.kafka.wire import WireError
from playground.kafka.worker import ActorProcess, WorkerError

log = logging.getLogger(__name__)

# The broker settings a scenario's cluster.config may name. A real, shared cluster runs with its own settings:
# these cannot be applied per session (they are reported in view()["unobservable"]).
BROKER_SETTINGS = {
    "transaction.max.timeout.ms",
    "transactional.id.expiration.ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "transaction.remove.expired.transaction.cleanup.interval.ms",
    "transaction.state.log.num.partitions",
    "producer.id.expiration.ms",
    "offsets.topic.num.partitions",
}
# cluster.config keys that are client settings (the producers' default)
CLIENT_SETTINGS = {"transaction.timeout.ms"}

# Per-operation budgets (seconds). Each is passed to librdkafka; the worker's parent waits a margin more.
OP_TIMEOUT_S = {
    # generous, because a loaded test machine is slow, yet bounded; an unreachable cluster is caught before
    # any of these by a quick metadata check (see apply)
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
    "positions": 10.0,
    "group_metadata": 10.0,
    "status": 5.0,
}

# The worker process of an actor, per client (the profile's `client`): librdkafka through confluent-kafka in a Python
# process (worker.py), or kafka-clients of the profile's Kafka release in a JVM (java_worker.py, java/Worker.java).
# Both answer the same operations with the same shapes; outcomes are named as each client names its errors.
ACTOR_PROCESSES: dict[str, Callable[[str, str, dict[str, Any], Profile], Any]] = {
    "librdkafka": lambda name, kind, config, profile: ActorProcess(name, kind, config),
    "java": lambda name, kind, config, profile: JavaActorProcess(name, kind, config, release=profile.release),
}
# kafka-clients blocks initTransactions, commitTransaction, abortTransaction, sendOffsetsToTransaction, and a send
# that waits for metadata, for at most max.block.ms (60 s by default): kept below every budget of OP_TIMEOUT_S, so
# that the client's own TimeoutException comes before the parent gives up on the worker.
JAVA_MAX_BLOCK_MS = 15000
# How each client tells an application it was fenced: librdkafka's _FENCED, the Java client's exception, the wire
# error when a send's delivery report carries it.
FENCED_OUTCOMES = frozenset({"_FENCED", "PRODUCER_FENCED", "ProducerFencedException"})
# librdkafka's names of client settings a scenario may give -> kafka-clients' names of the same settings
JAVA_SETTING_NAMES = {"message.timeout.ms": "delivery.timeout.ms"}

QUIESCE_S = 15.0  # longest wait for markers / LSO / stable offsets before observing
MAX_SLEEP_S = 120.0  # clock.advance sleeps for real; one step sleeps at most this (settings: KAFKA_MAX_SLEEP_S)
BROKER_CONTROL_TIMEOUT_S = 150.0

UNOBSERVABLE_BASE = [
    "The transaction coordinator's own RPCs (WriteTxnMarkers to partition leaders) are not visible to clients; "
    "markers are shown when they appear in the partition logs, coordinator transitions when they appear in "
    "__transaction_state.",
    "The coordinator's pending (in-memory) state and PrepareEpochFence are never written to __transaction_state "
    "and not reported by DescribeTransactions.",
    "The RPC timeline is what librdkafka logs (debug contexts eos, protocol): times are when the log line reached "
    "the worker, consumer Fetch and ListOffsets requests are left out, and where librdkafka logs only its own mapping of an answer "
    "(AddOffsetsToTxn: _FENCED) the broker's error code is not visible.",
    "A partition's log end offset beyond the high watermark (records not yet replicated) cannot be read by a "
    "client: log_end_offset is shown as the high watermark.",
    "Consumers are assigned every partition of their topics (no group rebalance), starting at the group's "
    "committed offsets or at the beginning.",
]

UNOBSERVABLE_JAVA_TIMELINE = (
    "The RPC timeline is what kafka-clients logs at DEBUG (NetworkClient: each request's and response's header and "
    "body, the error code read from the body; TransactionManager: its state transitions): times are when the log "
    "line was written in the worker, consumer Fetch, ListOffsets and Metadata requests are left out, and which "
    "broker answered as coordinator is inferred from the request's kind (the client logs only a node id)."
)


def kafka_settings(kafka: str = DEFAULT_PROFILE.kafka) -> dict[str, Any]:
    """The cluster this server may talk to for sessions of Kafka version `kafka` (clusters.SETTINGS: 3.9 on
    KAFKA_BOOTSTRAP_SERVERS, 4.x on KAFKA4_BOOTSTRAP_SERVERS, each with its broker control). Django settings decide
    when they are configured (settings.py reads them and KAFKA_CLIENT_* from the environment); a setting they do not
    define, and every setting outside Django (tools/bench), comes from the environment variable of the same name."""
    bootstrap_setting, control_setting = clusters.SETTINGS[kafka]
    conf: Any = None
    try:
        from django.conf import settings

        if settings.configured:
            conf = settings
    except Exception:  # Django not installed/configured: the environment decides
        conf = None

    def get(name: str, default: Any) -> Any:
        if conf is not None and hasattr(conf, name):
            return getattr(conf, name)
        return os.environ.get(name, default)

    bootstrap = str(get(bootstrap_setting, "") or "")
    client = get("KAFKA_CLIENT_CONFIG", None)
    if not isinstance(client, dict):
        client = {
            k[len("KAFKA_CLIENT_") :].lower().replace("_", "."): v
            for k, v in os.environ.items()
            if k.startswith("KAFKA_CLIENT_") and k != "KAFKA_CLIENT_CONFIG"
        }
    client = dict(client)
    for forbidden in ("bootstrap.servers", "metadata.broker.list", "debug", "logger"):
        client.pop(forbidden, None)  # the cluster comes from KAFKA_BOOTSTRAP_SERVERS only
    base_dir = (
        Path(conf.BASE_DIR) if conf is not None and hasattr(conf, "BASE_DIR") else Path(__file__).resolve().parents[2]
    )
    # the registry of which process owns which prefixes (owners.py): KAFKA_OWNERS_DIR, else VAR_DIR/kafka-owners
    var_dir = conf.VAR_DIR if conf is not None and hasattr(conf, "VAR_DIR") else os.environ.get("PLAYGROUND_VAR_DIR")
    owners_dir = str(get("KAFKA_OWNERS_DIR", "") or "")
    return {
        "bootstrap": bootstrap.strip(),
        "client": client,
        "broker_control": str(get(control_setting, "") or "").strip(),
        "base_dir": base_dir,
        "max_sleep_s": float(get("KAFKA_MAX_SLEEP_S", MAX_SLEEP_S) or MAX_SLEEP_S),
        "owners_dir": Path(owners_dir) if owners_dir else Path(var_dir or base_dir / "var") / "kafka-owners",
    }


@dataclass
class _Actor:
    spec: ActorSpec
    real_config: dict[str, Any]
    proc: ActorProcess | JavaActorProcess | None = None
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
    incarnation: int = 0
    rr: dict[str, int] = field(default_factory=dict)  # round-robin counters per topic (unkeyed records)


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
        self.prefix = f"pg-{secrets.token_hex(4)}-"
        self.t0_wall = time.time()
        self._seq = 0
        self.timeline: deque[dict[str, Any]] = deque(maxlen=200)
        self.topics: dict[str, TopicSpec] = {t.name: t for t in cluster.topics}
        self.actors: dict[str, _Actor] = {}
        self.stopped_brokers: set[int] = set()
        self.closed = False
        self._txn_state_seen: dict[str, str] = {}  # scenario txid -> last state seen in __transaction_state
        self._watermarks: dict[str, tuple[int, int]] = {}
        self._leaders: dict[str, int | None] = {}
        self._log_seen: dict[str, int] = {}  # scenario tp -> next offset already turned into events
        self._groups_seen: dict[str, dict[str, int | None]] = {}
        self._coordinators: dict[str, int | None] = {}  # scenario txid -> coordinator broker last seen
        self._clock_capped: list[str] = []
        self._ignored_cluster = {k: v for k, v in cluster.config.items() if k in BROKER_SETTINGS}
        self.observer = Observer(self.settings["bootstrap"], self.settings["client"], self.prefix)
        creating = False
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
            rf = min(3, len(self.brokers))
            # The first backend of this process on this cluster deletes what killed processes left behind
            # (bounded, never raises). Then this prefix is recorded as ours before anything exists under it.
            owners.sweep_once(self.settings["bootstrap"], self.settings["client"], self.settings["owners_dir"])
            owners.register(self.settings["owners_dir"], self.prefix, self.settings["bootstrap"])
            creating = True
            self.observer.create_topics({self._real_topic(t.name): t.partitions for t in cluster.topics}, rf)
        except ObserverError as e:
            if creating:  # topics created before the failure must not outlive it
                try:
                    self.observer.delete_session([self.prefix + t for t in self.topics], [], timeout_s=5.0)
                    owners.unregister(self.settings["owners_dir"], self.prefix)
                except ObserverError:
                    pass  # still recorded: swept once this process is gone
            self.observer.close()
            raise BackendError(str(e)) from None
        try:
            for spec in actors.values():
                self._register(spec, start=False)
            # the workers boot (spawn + import confluent_kafka) in parallel; now wait for each
            for a in self.actors.values():
                self._finish_start(a)
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------------------------------- names

    def _real_topic(self, name: str) -> str:
        if name not in self.topics:
            raise BackendError(
                f"topic {name!r} is not part of this session (topics: {', '.join(self.topics) or 'none'})"
            )
        return self.prefix + name

    def _scenario_topic(self, real: str) -> str:
        if not real.startswith(self.prefix):
            raise BackendError(f"topic {real!r} is outside this session's prefix {self.prefix!r}")
        return real[len(self.prefix) :]

    def _real_tp(self, tp: str) -> tuple[str, int]:
        topic, _, num = tp.rpartition("-")
        return self._real_topic(topic), int(num)

    def _scenario_tp(self, real_topic: str, partition: int) -> str:
        return f"{self._scenario_topic(real_topic)}-{partition}"

    def _all_tps(self) -> list[str]:
        return [f"{t.name}-{p}" for t in self.topics.values() for p in range(t.partitions)]

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

    # ----------------------------------------------------------------------------------------- events

    def _now_ms(self, t: float | None = None) -> int:
        return int(((t if t is not None else time.time()) - self.t0_wall) * 1000)

    def _session_ms(self, epoch_ms: int | None) -> int | None:
        """A broker's wall-clock epoch in ms -> ms since the session began, the origin of view()["time_ms"] (the
        dashboard shows both as t=mm:ss.mmm). Only this session's transactional ids are described, so a time before
        the session began, or after now, is the coordinator's clock differing from this server's: shown as 0 or now,
        never as a negative time."""
        if epoch_ms is None or epoch_ms < 0:
            return None
        return max(0, min(self._now_ms(), self._now_ms(epoch_ms / 1000.0)))

    def _emit(self, cls: type, t: float | None = None, **values: Any) -> None:
        self._seq += 1
        for f in dataclasses.fields(cls):  # a field the vocabulary gained that a real cluster cannot tell: None
            if f.name not in values and f.name not in ("seq", "time_ms"):
                values[f.name] = None
        event = cls(seq=self._seq, time_ms=self._now_ms(t), **values)
        if cls is ev.Rpc:
            self.timeline.append(
                {
                    k: v
                    for k, v in event.to_dict().items()
                    if k in ("seq", "time_ms", "rpc", "src", "dst", "direction", "error", "detail")
                }
            )
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # a listener's bug must not break the session
                log.exception("on_event listener failed")

    def _broker_label(self, raw: str) -> str:
        """librdkafka's broker names -> the timeline's labels."""
        name, _, nid = raw.rpartition("/")
        if name == "TxnCoordinator":
            return f"coordinator(b{nid})"
        if name == "GroupCoordinator":
            return f"group coordinator(b{nid})"
        if nid == "bootstrap":
            return "bootstrap"
        return f"b{nid}" if nid.isdigit() else raw

    def _absorb(self, actor: _Actor, msg: dict[str, Any]) -> dict[str, Any]:
        """Take a worker's answer: logs -> timeline/events, client state, producer ids."""
        result = msg.get("result", {})
        for item in msg.get("logs", []):
            if item["type"] == "rpc":
                peer = self._broker_label(item["broker"])
                src, dst = (actor.spec.name, peer) if item["direction"] == "request" else (peer, actor.spec.name)
                detail = f"v{item['version']}" + (f", {item['detail']}" if item.get("detail") else "")
                self._emit(
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
                self._emit(
                    ev.ClientState, item["t"], actor=actor.spec.name, from_state=item["from"], to_state=item["to"]
                )
        if actor.spec.kind == PRODUCER:
            if msg.get("txn_state") and actor.spec.transactional_id:
                actor.state = msg["txn_state"]
            elif actor.state == "INIT":
                actor.state = "READY"
            for pe in msg.get("pid_epochs", []):
                pe = tuple(pe)
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
                self._emit(
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
                    actor.positions[self._scenario_tp(t, p)] = o
        return result

    # ----------------------------------------------------------------------------------------- actors

    def _actor_config(self, spec: ActorSpec) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap.servers": self.settings["bootstrap"], **self.settings["client"]}
        conf.update({k: v for k, v in self.cluster.config.items() if k in CLIENT_SETTINGS and spec.kind == PRODUCER})
        for k, v in spec.config.items():
            if k == "topics":
                continue
            if k == "transactional.id" or k == "group.id":
                v = self.prefix + str(v)
            conf[k] = v
        java = self.profile.client == "java"
        if java:
            for rd_name, java_name in JAVA_SETTING_NAMES.items():
                if rd_name in conf:
                    conf.setdefault(java_name, conf.pop(rd_name))
        # keep failures bounded and quick to surface
        conf.setdefault("socket.connection.setup.timeout.ms", 5000)
        conf.setdefault("reconnect.backoff.max.ms", 1000)
        if spec.kind == PRODUCER:
            if java:  # the worker reads kafka-clients' DEBUG log lines itself (java/ClientLog.java)
                conf.setdefault("max.block.ms", JAVA_MAX_BLOCK_MS)
            else:
                conf["debug"] = "eos,protocol"
            conf.setdefault("linger.ms", 5)
        else:
            if not java:
                conf["debug"] = "protocol"
            if "group.id" not in conf:
                # librdkafka wants a group id even for a consumer that only assigns; it never commits under it
                conf["group.id"] = f"{self.prefix}_solo-{spec.name}"
            conf.setdefault("enable.auto.commit", False)  # commits are steps, unless the scenario says otherwise
            conf.setdefault("auto.offset.reset", "earliest")
        conf.setdefault("client.id", f"{self.prefix}{spec.name}")
        for k in conf:
            if not isinstance(conf[k], (str, int, float, bool)):
                conf[k] = str(conf[k])
        return conf

    def _register(self, spec: ActorSpec, start: bool = True) -> _Actor:
        if spec.name in self.actors:
            raise BackendError(f"actor {spec.name!r} exists already")
        if spec.kind not in (PRODUCER, CONSUMER):
            raise BackendError(f"actor {spec.name!r}: unknown kind {spec.kind!r}")
        for t in spec.topics:
            self._real_topic(t)
        actor = _Actor(spec=spec, real_config=self._actor_config(spec))
        self.actors[spec.name] = actor
        self._spawn(actor)
        if start:
            try:
                self._finish_start(actor)
            except BaseException:
                # Forget the half-started actor, so that adding it again (a retry) is possible.
                self.actors.pop(spec.name, None)
                if actor.proc is not None:
                    actor.proc.kill()
                raise
        return actor

    def _spawn(self, actor: _Actor) -> None:
        try:
            actor.proc = ACTOR_PROCESSES[self.profile.client](
                actor.spec.name, actor.spec.kind, actor.real_config, self.profile
            )
        except WorkerError as e:  # e.g. the Java worker could not be built
            raise BackendError(f"actor {actor.spec.name}: the client did not start: {e}") from None
        actor.incarnation += 1

    def _finish_start(self, actor: _Actor) -> None:
        assert actor.proc is not None
        try:
            ready = actor.proc.wait_ready()
        except WorkerError as e:
            raise BackendError(f"actor {actor.spec.name}: the client did not start: {e}") from None
        actor.ignored_settings = ready["result"].get("ignored_settings", [])
        actor.state = "INIT" if actor.spec.transactional_id or actor.spec.kind == CONSUMER else "READY"
        if actor.spec.kind == CONSUMER:
            actor.state = "RUNNING"
            parts = [[self._real_topic(t), p] for t in actor.spec.topics for p in range(self.topics[t].partitions)]
            self._call(actor, "assign", partitions=parts, from_committed=bool(actor.spec.group_id))

    def add_actor(self, actor: ActorSpec) -> None:
        with self._lock:
            self._register(actor)

    def _call(self, actor: _Actor, op: str, **args: Any) -> dict[str, Any]:
        if actor.proc is None or not actor.proc.alive:
            raise WorkerError(f"actor {actor.spec.name} has no running client")
        msg = actor.proc.call(op, timeout_s=OP_TIMEOUT_S.get(op, 15.0), **args)
        return self._absorb(actor, msg)

    # ----------------------------------------------------------------------------------------- steps

    def apply(self, step: Step) -> str:
        with self._lock:
            if self.closed:
                raise BackendError("this session's backend is closed")
            if step.is_note:
                return OK
            if step.actor == "clock":
                outcome = self._advance(int(step.args.get("ms", 0)))
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
            return outcome

    def _advance(self, ms: int) -> str:
        """A real cluster's clock cannot be moved: sleep. Beyond the configured cap the sleep is cut short and
        view()["unobservable"] says so (e.g. 192h for transactional.id expiry cannot happen on a real cluster)."""
        cap = self.settings["max_sleep_s"]
        seconds = min(ms / 1000.0, cap)
        if ms / 1000.0 > cap:
            self._clock_capped.append(
                f"clock.advance of {ms / 1000:.0f} s slept only {cap:.0f} s: a real cluster's time cannot be advanced."
            )
        start = self._now_ms()
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, 0.5))
        self._emit(ev.Clock, from_ms=start, to_ms=self._now_ms())
        return OK

    def _broker_step(self, step: Step) -> str:
        template = self.settings["broker_control"]
        if not template:
            raise BackendError(
                f"{step.label}: this server cannot stop or start brokers (KAFKA_BROKER_CONTROL is not configured)"
            )
        if "coordinator_of" in step.args:
            txid = str(step.args["coordinator_of"])
            if txid not in self._txids():
                raise BackendError(f"{step.label}: {txid!r} is not a transactional id of this session")
            try:
                broker = self.observer.coordinator_of(self.prefix + txid)
            except ObserverError as e:
                raise BackendError(f"{step.label}: cannot find the coordinator of {txid!r}: {e}") from None
        elif "leader_of" in step.args:  # the simulator's extension: whichever broker leads that partition now
            try:
                broker = self.observer.leader_of(*self._real_tp(str(step.args["leader_of"])))
            except ObserverError as e:
                raise BackendError(f"{step.label}: {e}") from None
        else:
            broker = int(step.args["broker"])
        known = set(self.brokers) | self.stopped_brokers
        if broker not in known:
            raise BackendError(f"{step.label}: broker {broker} is not part of the cluster (brokers: {sorted(known)})")
        action = step.action
        if action not in ("stop", "start"):
            raise BackendError(f"{step.label}: unknown broker action")
        self._run_broker_control(action, broker, step.label)
        if action == "stop":
            self.stopped_brokers.add(broker)
        else:
            self.stopped_brokers.discard(broker)
        self._emit(ev.Broker, broker=broker, up=action == "start")
        # bounded: until the cluster's metadata agrees (leaders moved away from / back to the broker)
        self.observer.wait_broker(broker, up=action == "start", timeout_s=30.0)
        return OK

    def _run_broker_control(self, action: str, broker: int, label: str) -> None:
        """KAFKA_BROKER_CONTROL from settings, e.g. `bash tools/kafka/kafka.sh {action}-node {broker}`: split like a
        shell would, {action} and {broker} filled in per argument (never through a shell), bounded in time."""
        template = self.settings["broker_control"]
        argv = [part.format(action=action, broker=int(broker)) for part in shlex.split(template)]
        try:
            proc = subprocess.run(
                argv,
                cwd=str(self.settings["base_dir"]),
                capture_output=True,
                text=True,
                timeout=BROKER_CONTROL_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BackendError(f"{label}: the broker control command failed: {e}") from None
        if proc.returncode != 0:
            raise BackendError(
                f"{label}: the broker control command exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
            )

    def _partition_for(self, actor: _Actor, topic: str, key: str | None) -> int | None:
        """No partition given: a keyed record goes where the client's default partitioner puts it (librdkafka:
        consistent_random, CRC32 of the key; kafka-clients: murmur2 of the key), so None is passed on; a keyless one round robin over the producer's sends, as
        the scenario format says (librdkafka itself would pick at random)."""
        if key is not None:
            return None
        i = actor.rr.get("*", 0)
        actor.rr["*"] = i + 1
        return i % self.topics[topic].partitions

    def _actor_step(self, actor: _Actor, step: Step) -> str:
        action = step.action
        name = actor.spec.name
        if action == "crash":
            if actor.proc is not None:
                actor.proc.kill()
            before = actor.state
            actor.state = "CRASHED"
            self._retire(actor)
            self._emit(ev.ClientState, actor=name, from_state=before, to_state="CRASHED")
            return OK
        if action == "restart":
            before = actor.state
            if actor.proc is not None and actor.proc.alive:
                actor.proc.kill()  # the old instance goes away as a process does on restart
            self._retire(actor)
            self._spawn(actor)
            actor.rr.clear()
            actor.last_poll = []
            actor.last_error = None
            actor.fenced = False
            self._finish_start(actor)
            self._emit(ev.ClientState, actor=name, from_state=before, to_state=actor.state)
            return OK
        if actor.proc is None or not actor.proc.alive:
            # the application is gone (crashed or closed): there is nobody to make the call (as the simulator)
            raise BackendError(f"{actor.spec.kind} {name!r} is {actor.state}: restart it first")

        if actor.spec.kind == PRODUCER:
            result = self._producer_step(actor, step)
        else:
            result = self._consumer_step(actor, step)
        outcome = result.get("outcome", OK)
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

    def _retire(self, actor: _Actor) -> None:
        actor.sent_ok_before += actor.sent_ok
        actor.sent_ok = 0
        actor.queue = 0
        if actor.proc is not None:
            actor.proc.kill()

    def _producer_step(self, actor: _Actor, step: Step) -> dict[str, Any]:
        a, args = step.action, step.args
        if a in ("init_transactions", "begin_transaction", "commit_transaction", "abort_transaction", "flush"):
            return self._call(actor, a)
        if a == "produce":
            topic = args["topic"]
            real = self._real_topic(topic)
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
                res = self._call(actor, "produce_many", records=records, wait=wait)
                for d in res.get("deliveries", []):
                    self._delivery_event(actor, d)
                return res
            key = args.get("key")
            part = args.get("partition")
            if part is None:
                part = self._partition_for(actor, topic, key)
            res = self._call(actor, "produce", topic=real, partition=part, key=key, value=args.get("value"), wait=wait)
            if res.get("delivery"):
                self._delivery_event(actor, res["delivery"])
            return res
        if a == "send_offsets_to_transaction":
            consumer = self.actors.get(args["consumer"])
            if consumer is None or consumer.spec.kind != CONSUMER:
                raise BackendError(f"{step.label}: {args['consumer']!r} is not a consumer of this session")
            if consumer.proc is None or not consumer.proc.alive:
                return {"outcome": "_STATE", "detail": f"consumer {consumer.spec.name} is not running"}
            meta = self._call(consumer, "group_metadata")
            offsets = [[t, p, o] for t, p, o in meta["positions"] if o >= 0]
            return self._call(
                actor, "send_offsets_to_transaction", offsets=offsets, group_metadata=meta["group_metadata"]
            )
        if a == "close":
            res = self._call(actor, "close")
            before = actor.state
            if res.get("outcome", OK) == OK:
                actor.state = "CLOSED"
                self._retire(actor)
                self._emit(ev.ClientState, actor=actor.spec.name, from_state=before, to_state="CLOSED")
            return res
        raise BackendError(f"{step.label}: a producer cannot {a}")

    def _delivery_event(self, actor: _Actor, d: dict[str, Any]) -> None:
        self._emit(
            ev.Delivery,
            actor=actor.spec.name,
            partition=self._scenario_tp(d["topic"], d["partition"]),
            offset=d.get("offset"),
            value=d.get("value"),
            error=d.get("error"),
        )

    def _consumer_step(self, actor: _Actor, step: Step) -> dict[str, Any]:
        a = step.action
        if a == "poll":
            # What the application would see "now": wait (bounded) until the cluster is quiescent first, so a
            # poll right after commit_transaction() sees the markers that commit's return did not wait for.
            self._quiesce()
            res = self._call(actor, "poll", max=step.args.get("max"))
            actor.last_poll = res.get("records", [])
            by_tp: dict[str, list[dict[str, Any]]] = {}
            for r in actor.last_poll:
                tp = self._scenario_tp(r["topic"], r["partition"])
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
            if actor.spec.kind == PRODUCER and actor.proc is not None and actor.proc.alive and actor.queue:
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
                [self._real_tp(tp) for tp in self._all_tps()],
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
            self._events_from(snap)
            return self._observation(snap)

    def _snapshot(self, stable_groups: bool) -> dict[str, Any]:
        real_tps = {tp: self._real_tp(tp) for tp in self._all_tps()}
        return self.observer.snapshot(
            real_tps,
            {t: self.prefix + t for t in self._txids()},
            {g: (self.prefix + g, [real_tps[tp] for tp in tps]) for g, tps in self._groups().items()},
            stable_groups=stable_groups,
        )

    def _observation(self, snap: dict[str, Any]) -> dict[str, Any]:
        partitions = {}
        for tp, part in snap["partitions"].items():
            partitions[tp] = {
                "log": [e.to_dict() for e in part["entries"]],
                "high_watermark": part["high_watermark"],
                "last_stable_offset": part["last_stable_offset"],
                "log_end_offset": part["high_watermark"],
            }
        consumers = {}
        for name, a in self.actors.items():
            if a.spec.kind != CONSUMER:
                continue
            per = {f"{t}-{p}": [] for t in a.spec.topics for p in range(self.topics[t].partitions)}
            for tp, entries in a.received.items():
                per.setdefault(tp, []).extend(e["value"] for e in entries)
            consumers[name] = per
        transactions = {}
        for txid, d in snap["transactions"].items():
            if d.get("state") is None:
                continue
            transactions[txid] = {"state": d["state"], "producer_id": d["producer_id"], "epoch": d["epoch"]}
        return {
            "partitions": partitions,
            "consumers": consumers,
            "transactions": transactions,
            "groups": snap["groups"],
        }

    def _sync_cluster(self) -> None:
        """Read what changed on the cluster (new records and markers, watermarks, coordinator transitions, group
        offsets) and emit it as events. Cheap enough to run after every step when someone listens."""
        snap = self._snapshot(stable_groups=False)
        self._events_from(snap)

    def _owner_of(self, producer_id: int, epoch: int) -> str | None:
        """The actor that held this producer id and epoch (librdkafka logged it acquiring them)."""
        for a in self.actors.values():
            if (producer_id, epoch) in a.pid_epochs:
                return a.spec.name
        return None

    def _events_from(self, snap: dict[str, Any]) -> None:
        for tp, part in snap["partitions"].items():
            seen = self._log_seen.get(tp, 0)
            entries = [e for e in part["entries"] if e.offset >= seen]
            i = 0
            while i < len(entries):
                e = entries[i]
                if e.control:
                    self._emit(
                        ev.Marker,
                        partition=tp,
                        offset=e.offset,
                        control=e.control,
                        producer_id=e.producer_id,
                        epoch=e.epoch,
                        coordinator_epoch=e.coordinator_epoch or 0,
                    )
                    i += 1
                    continue
                j = i
                while (
                    j + 1 < len(entries)
                    and not entries[j + 1].control
                    and entries[j + 1].producer_id == e.producer_id
                    and entries[j + 1].epoch == e.epoch
                    and entries[j + 1].offset == entries[j].offset + 1
                ):
                    j += 1
                batch = entries[i : j + 1]
                self._emit(
                    ev.Append,
                    partition=tp,
                    base_offset=e.offset,
                    count=len(batch),
                    producer_id=e.producer_id,
                    epoch=e.epoch,
                    sequence=e.sequence,
                    transactional=e.transactional,
                    values=tuple(x.to_dict().get("value") for x in batch),
                    client_id=self._owner_of(e.producer_id, e.epoch),
                )
                i = j + 1
            if entries:
                self._log_seen[tp] = entries[-1].offset + 1
            marks = (part["high_watermark"], part["last_stable_offset"])
            if self._watermarks.get(tp) != marks:
                self._watermarks[tp] = marks
                self._emit(
                    ev.Watermarks,
                    partition=tp,
                    high_watermark=marks[0],
                    last_stable_offset=marks[1],
                    log_end_offset=marks[0],
                )
            if self._leaders.get(tp, -2) != part.get("leader"):
                self._leaders[tp] = part.get("leader")
                self._emit(
                    ev.Leader, partition=tp, leader=part.get("leader"), leader_epoch=part.get("leader_epoch", -1)
                )
        for txid, records in snap["txn_log"].items():
            for rec in records:
                frm = self._txn_state_seen.get(txid, "Empty")
                self._txn_state_seen[txid] = rec["state"]
                self._emit(
                    ev.TxnState,
                    transactional_id=txid,
                    from_state=frm,
                    to_state=rec["state"],
                    producer_id=rec["producer_id"],
                    epoch=rec["epoch"],
                    partitions=tuple(
                        self._scenario_tp(t, p) for t, p in rec["partitions"] if t.startswith(self.prefix)
                    ),
                    coordinator_broker=snap["transactions"].get(txid, {}).get("coordinator_broker"),
                    persisted=True,
                    record_bytes=rec["record_bytes"],
                )
        for txid, d in snap["transactions"].items():
            broker = d.get("coordinator_broker")
            if txid in self._coordinators and broker is not None and self._coordinators[txid] != broker:
                # another broker leads this __transaction_state partition now: it loaded it (and resends the
                # markers of any transaction it found in Prepare*). Its coordinator epoch is not visible here.
                self._emit(
                    ev.CoordinatorLoad,
                    txn_partition=d.get("coordinator_partition", -1),
                    broker=broker,
                    coordinator_epoch=-1,
                    resumed=(txid,) if d.get("state") in ("PrepareCommit", "PrepareAbort") else (),
                )
            self._coordinators[txid] = broker
        for group, offsets in snap["groups"].items():
            if self._groups_seen.get(group) != offsets:
                self._groups_seen[group] = dict(offsets)
                self._emit(
                    ev.GroupOffsets,
                    group=group,
                    state="committed",
                    offsets=tuple((tp, o) for tp, o in offsets.items() if o is not None),
                    producer_id=-1,
                )

    def polled(self, actor: str) -> list[tuple[str, int]]:
        a = self.actors.get(actor)
        return [(self._scenario_tp(r["topic"], r["partition"]), r["offset"]) for r in (a.last_poll if a else [])]

    def stable_offsets(self) -> dict[str, int]:
        """Every partition's LSO, asked right after the poll the checker compares it with: a broker never returns a
        read_committed consumer a record at or past the LSO of that moment, and the LSO only grows."""
        with self._lock:
            try:
                got = self.observer.stable_offsets(
                    [(self._real_topic(t.name), p) for t in self.topics.values() for p in range(t.partitions)]
                )
            except ObserverError:
                return {}  # the check of those reads is left out, not guessed
        return {self._scenario_tp(t, p): o for (t, p), o in got.items() if o is not None}

    def view(self, log_limit: int = 200) -> dict[str, Any]:
        with self._lock:
            try:
                snap = self._snapshot(stable_groups=False)
            except ObserverError as e:
                raise BackendError(str(e)) from None
            self._events_from(snap)
            base = self._observation(snap)
            partitions = {}
            for tp, part in snap["partitions"].items():
                entries = part["entries"]
                fates = log_fates(entries)
                window = entries[-log_limit:] if log_limit else []
                topic, _, num = tp.rpartition("-")
                log_entries = []
                for e in window:
                    d = e.to_dict()
                    d["fate"] = fates[e.offset]
                    log_entries.append(d)
                real = self._real_tp(tp)
                try:
                    # KIP-664 DescribeProducers: the partition leader's open transactions (first offset per producer)
                    open_txns = {
                        str(d["producer_id"]): d["current_txn_start_offset"]
                        for d in self.observer.describe_producers(*real)
                        if d["current_txn_start_offset"] is not None
                    }
                except ObserverError:
                    open_txns = {}
                partitions[tp] = {
                    **base["partitions"][tp],
                    "open_transactions": open_txns,
                    "log": log_entries,
                    "topic": topic,
                    "partition": int(num),
                    "leader": part.get("leader"),
                    "log_start_offset": part.get("log_start_offset", 0),
                    "window_start": window[0].offset if window else part["high_watermark"],
                }
            rc_received: dict[tuple[str, int], bool] = {}
            for a in self.actors.values():
                if a.spec.kind == CONSUMER and a.spec.isolation_level == "read_committed":
                    for tp, entries in a.received.items():
                        for e in entries:
                            rc_received[(tp, e["offset"])] = True
            producers = {}
            for name, a in self.actors.items():
                if a.spec.kind != PRODUCER:
                    continue
                mine = set(a.pid_epochs)
                landed = rc = 0
                for tp, part in snap["partitions"].items():
                    for e in part["entries"]:
                        if not e.control and (e.producer_id, e.epoch) in mine:
                            landed += 1
                            rc += (tp, e.offset) in rc_received
                pid, epoch = a.pid_epochs[-1] if a.pid_epochs else (None, None)
                producers[name] = {
                    "transactional_id": a.spec.transactional_id,
                    "producer_id": pid,
                    "epoch": epoch,
                    "state": a.state,
                    "last_error": a.last_error,
                    "fenced": a.fenced,
                    "counters": {
                        "app_sent_ok": a.sent_ok_before + a.sent_ok,
                        "landed": landed,
                        "read_committed_received": rc,
                    },
                }
            consumers = {}
            for name, a in self.actors.items():
                if a.spec.kind != CONSUMER:
                    continue
                consumers[name] = {
                    "isolation_level": a.spec.isolation_level,
                    "group_id": a.spec.group_id,
                    "topics": list(a.spec.topics),
                    "state": "CRASHED" if a.state == "CRASHED" else "RUNNING",
                    "positions": dict(a.positions),
                    "received": {tp: list(v[-log_limit:]) for tp, v in a.received.items()},
                    "received_total": sum(len(v) for v in a.received.values()),
                }
            transactions = {}
            for txid, d in snap["transactions"].items():
                if d.get("state") is None:
                    continue
                transactions[txid] = {
                    "state": d["state"],
                    "producer_id": d["producer_id"],
                    "epoch": d["epoch"],
                    "partitions": sorted(
                        self._scenario_tp(t, p) for t, p in d.get("partitions", []) if t.startswith(self.prefix)
                    ),
                    "timeout_ms": d.get("timeout_ms"),
                    "coordinator_partition": d.get("coordinator_partition"),
                    "coordinator_broker": d.get("coordinator_broker"),
                    "txn_start_time_ms": self._session_ms(d.get("txn_start_time_ms")),
                    "pending_state": None,
                }
            brokers = {
                str(b): {"up": b not in self.stopped_brokers and b in snap["brokers"]}
                for b in sorted(set(self.brokers) | self.stopped_brokers | set(snap["brokers"]))
            }
            return {
                **base,
                "partitions": partitions,
                "backend": "kafka",
                "time_ms": self._now_ms(),
                "brokers": brokers,
                "producers": producers,
                "consumers": consumers,
                "transactions": transactions,
                "timeline": list(self.timeline),
                "unobservable": self.unobservable(),
            }

    def unobservable(self) -> list[str]:
        out = list(UNOBSERVABLE_BASE)
        if self.profile.client == "java":  # the timeline comes from kafka-clients' log, not librdkafka's
            out = [UNOBSERVABLE_JAVA_TIMELINE if line.startswith("The RPC timeline is") else line for line in out]
        for k, v in sorted(self._ignored_cluster.items()):
            out.append(
                f"cluster.config {k}={v} is a broker setting: a shared real cluster runs with its own, so it is not applied."
            )
        for k, v in sorted(self.cluster.config.items()):
            if k.startswith("sim."):
                out.append(f"cluster.config {k}={v} only shapes the simulator (a real cluster has its own latencies).")
        out.extend(self._clock_capped)
        if not self.settings["broker_control"]:
            out.append("Brokers cannot be stopped or started from here (KAFKA_BROKER_CONTROL is not configured).")
        for a in self.actors.values():
            for k in a.ignored_settings:
                out.append(
                    f"{a.spec.name}: setting {k} is not a {'kafka-clients' if self.profile.client == 'java' else 'librdkafka'} "
                    "client setting and was not applied."
                )
        return out

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
                p.kill()
            # a session that stopped brokers of a shared cluster starts them again
            for broker in sorted(self.stopped_brokers):
                try:
                    self._run_broker_control("start", broker, f"closing: broker.start {broker}")
                    self.stopped_brokers.discard(broker)
                except BackendError as e:
                    log.warning("%s", e)
            try:
                self.observer.delete_session(
                    [self.prefix + t for t in self.topics],
                    [self.prefix + g for g in self._groups()]
                    + [
                        f"{self.prefix}_solo-{n}"
                        for n, a in self.actors.items()
                        if a.spec.kind == CONSUMER and not a.spec.group_id
                    ],
                )
                owners.unregister(self.settings["owners_dir"], self.prefix)
            except ObserverError as e:
                # still recorded as this process's: a later sweep deletes them once this process is gone
                log.warning("closing session %s: %s", self.prefix, e)
            self.observer.close()

    def __del__(self) -> None:  # a forgotten backend must not leave worker processes behind
        try:
            if not self.closed:
                for a in self.actors.values():
                    if a.proc is not None:
                        a.proc.kill()
        except Exception:
            pass


def log_fates(entries: list[Any]) -> dict[int, str]:
    """committed | aborted | open | plain | marker, per offset: a transactional record's fate is the next marker of
    its producer id in the same partition."""
    fates: dict[int, str] = {}
    pending: dict[int, list[int]] = {}
    for e in entries:
        if e.control:
            fates[e.offset] = "marker"
            for off in pending.pop(e.producer_id, []):
                fates[off] = "committed" if e.control == "COMMIT" else "aborted"
        elif e.transactional:
            pending.setdefault(e.producer_id, []).append(e.offset)
            fates[e.offset] = "open"
        else:
            fates[e.offset] = "plain"
    return fates
