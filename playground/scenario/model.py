"""What a scenario file is: its vocabulary (outcome names, settings, transaction states), its limits, and the
loaded form (`Scenario`). No Django, no YAML here: the loader (loader.py) builds these, the runner (run.py) and
the web layer read them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from playground.engine.backend import OK
from playground.engine.spec import (
    CLASSIC_PROFILES,
    CLIENTS,
    DEFAULT_PROFILE,
    JAVA,
    JAVA_RELEASES,
    KAFKA_RELEASES,
    PROFILES,
    ActorSpec,
    ClusterSpec,
    Profile,
    Step,
)
from playground.scenario.messages import Text, _, translated

if TYPE_CHECKING:
    from playground.scenario.database import DatabaseSpec

FORMAT = 1
DEFAULT_LANG = "en"
MARKERS = ("COMMIT", "ABORT")

# Transaction states as Kafka names them (TransactionState.java).
TXN_STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "PrepareEpochFence",
    "Dead",
)

# Outcome names a step may expect: "ok", librdkafka's local errors (leading underscore) as confluent-kafka's
# KafkaError.name() spells them, the broker errors of Errors.java a transactional application can meet, and the
# Java client's exceptions.
# A closed list so that a typo in `expect:` is an error instead of a step that can never pass.
OUTCOMES = frozenset(
    {
        OK,
        # librdkafka local errors (rdkafka.h)
        "_BAD_MSG",
        "_DESTROY",
        "_FAIL",
        "_TRANSPORT",
        "_MSG_TIMED_OUT",
        "_PARTITION_EOF",
        "_UNKNOWN_PARTITION",
        "_UNKNOWN_TOPIC",
        "_ALL_BROKERS_DOWN",
        "_INVALID_ARG",
        "_TIMED_OUT",
        "_QUEUE_FULL",
        "_WAIT_COORD",
        "_UNKNOWN_GROUP",
        "_PREV_IN_PROGRESS",
        "_CONFLICT",
        "_STATE",
        "_NOT_IMPLEMENTED",
        "_NO_OFFSET",
        "_OUTDATED",
        "_TIMED_OUT_QUEUE",
        "_RETRY",
        "_PURGE_QUEUE",
        "_PURGE_INFLIGHT",
        "_FATAL",
        "_INCONSISTENT",
        "_NOT_CONFIGURED",
        "_FENCED",
        "_ASSIGNMENT_LOST",
        # broker errors (Errors.java)
        "UNKNOWN_SERVER_ERROR",
        "OFFSET_OUT_OF_RANGE",
        "UNKNOWN_TOPIC_OR_PARTITION",
        "LEADER_NOT_AVAILABLE",
        "NOT_LEADER_OR_FOLLOWER",
        "REQUEST_TIMED_OUT",
        "NETWORK_EXCEPTION",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "NOT_ENOUGH_REPLICAS",
        "ILLEGAL_GENERATION",
        "UNKNOWN_MEMBER_ID",
        "REBALANCE_IN_PROGRESS",
        "INVALID_REQUEST",
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
        "DUPLICATE_SEQUENCE_NUMBER",
        "INVALID_PRODUCER_EPOCH",
        "INVALID_TXN_STATE",
        "INVALID_PRODUCER_ID_MAPPING",
        "INVALID_TRANSACTION_TIMEOUT",
        "CONCURRENT_TRANSACTIONS",
        "TRANSACTION_COORDINATOR_FENCED",
        "UNKNOWN_PRODUCER_ID",
        "FENCED_INSTANCE_ID",
        "UNSTABLE_OFFSET_COMMIT",
        "PRODUCER_FENCED",
        "TRANSACTIONAL_ID_NOT_FOUND",
        "TRANSACTION_ABORTABLE",
        # the application's database (playground/scenario/database.py): what its driver raises
        "SQL_ERROR",
        "SQL_DENIED",
        "SQL_TIMEOUT",
        "SQL_CONSTRAINT",
        "SQL_LIMIT",
        # the Java client (kafka-clients 3.9 and 4.x; playground/kafka/java/Worker.java): the simple class name of
        # the exception a call throws or a send's future fails with. Kafka's own (KafkaException, and what
        # Errors.java maps each broker error to) and the JDK's that kafka-clients throws (IllegalStateException:
        # a call in the wrong TransactionManager state; TimeoutException is both Kafka's and Future.get()'s).
        "KafkaException",
        "IllegalStateException",
        "IllegalArgumentException",
        "TimeoutException",
        "InterruptException",
        "TransactionAbortedException",
        "CommitFailedException",
        "BufferExhaustedException",
        "SerializationException",
        "RecordTooLargeException",
        "RecordBatchTooLargeException",
        "InvalidTopicException",
        "NoOffsetForPartitionException",
        "UnknownServerException",
        "OffsetOutOfRangeException",
        "UnknownTopicOrPartitionException",
        "LeaderNotAvailableException",
        "NotLeaderOrFollowerException",
        "NetworkException",
        "CoordinatorLoadInProgressException",
        "CoordinatorNotAvailableException",
        "NotCoordinatorException",
        "NotEnoughReplicasException",
        "NotEnoughReplicasAfterAppendException",
        "IllegalGenerationException",
        "UnknownMemberIdException",
        "RebalanceInProgressException",
        "InvalidRequestException",
        "InvalidRecordException",
        "OutOfOrderSequenceException",
        "DuplicateSequenceException",
        "InvalidProducerEpochException",
        "InvalidTxnStateException",
        "InvalidPidMappingException",
        "InvalidTxnTimeoutException",
        "ConcurrentTransactionsException",
        "TransactionCoordinatorFencedException",
        "UnknownProducerIdException",
        "FencedInstanceIdException",
        "UnstableOffsetCommitException",
        "ProducerFencedException",
        "TransactionalIdNotFoundException",
        "TransactionAbortableException",
        "TransactionalIdAuthorizationException",
        "ClusterAuthorizationException",
        "TopicAuthorizationException",
        "GroupAuthorizationException",
        "UnsupportedVersionException",
        "InvalidGroupIdException",
    }
)

TOP_LEVEL_KEYS = (
    "format",
    "id",
    "title",
    "summary",
    "tags",
    "seed",
    "profile",
    "cluster",
    "database",
    "actors",
    "steps",
    "expect",
    "goal",
    "hints",
    "pipeline",
)
PROFILE_KEYS = ("kafka", "client")
REQUIRED_TOP_LEVEL = ("format", "id", "title", "actors", "steps")
EXPECT_KEYS = ("consumers", "logs", "watermarks", "transactions", "groups", "anomalies", "producers", "callbacks")
# A producer's client state as its client names it (`expect: {producers: {A: {state: ...}}}`): librdkafka's
# rd_kafka_txn_state_t (rdkafka_txnmgr.h), kafka-clients' TransactionManager.State, and the process's own.
CLIENT_STATES = (
    "INIT",
    "WAIT_PID",
    "READY_NOT_ACKED",
    "READY",
    "IN_TRANSACTION",
    "BEGIN_COMMIT",
    "COMMITTING_TRANSACTION",
    "COMMIT_NOT_ACKED",
    "BEGIN_ABORT",
    "ABORTING_TRANSACTION",
    "ABORT_NOT_ACKED",
    "ABORTABLE_ERROR",
    "FATAL_ERROR",
    "UNINITIALIZED",
    "INITIALIZING",
    "PREPARED_TRANSACTION",
    "CRASHED",
    "CLOSED",
)

# Outcomes per profile (docs/scenario-format.md, "Outcomes per profile"): a step's `expect:` may be a mapping from
# profile selectors to outcomes, and the `expect:` block may hold `by_profile: {SELECTOR: {checks}}`. A selector is
# a whole profile ("4-java", "3.9-java:3.5"), a Java client of one release ("java:3.5"), a client ("java") or a Kafka
# version ("4"); for a step, `default` is every profile no other key names. The most specific selector naming a
# profile wins: whole profile > client release > client > Kafka version > default (or the plain block).
BY_PROFILE = "by_profile"
DEFAULT_SELECTOR = "default"
PROFILE_SELECTORS = (
    tuple(p.key for p in PROFILES)
    + tuple(f"{JAVA}:{r}" for r in JAVA_RELEASES)
    + tuple(CLIENTS)
    + tuple(KAFKA_RELEASES)
)
# A file's outcomes per profile must name each of these (those of before the client release was a choice); a
# profile added since that no key names is not checked (the run says so: observation["expect"]["unchecked"]).
NAMED_PROFILES = CLASSIC_PROFILES

# What a setting takes: a type (int, bool, str; list for a consumer's topics) or the values Kafka allows.
ConfigKind = type | tuple[str, ...]

# Settings a scenario may override in `cluster.config`, with their types. A closed list: a misspelt setting
# would otherwise be silently ignored and the scenario would show Kafka's default instead.
CLUSTER_CONFIG: dict[str, ConfigKind] = {
    "transaction.timeout.ms": int,  # the producers' default (client setting)
    "transaction.partition.verification.enable": bool,  # KIP-890 part 1, Kafka 3.6+
    "min.insync.replicas": int,  # the topics' (an acks=all write needs that many replicas in sync)
    "transaction.max.timeout.ms": int,
    "transactional.id.expiration.ms": int,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": int,
    "transaction.remove.expired.transaction.cleanup.interval.ms": int,
    "transaction.state.log.num.partitions": int,
    "producer.id.expiration.ms": int,
    "offsets.topic.num.partitions": int,
}
PRODUCER_CONFIG: dict[str, ConfigKind] = {
    "transactional.id": str,
    "transaction.timeout.ms": int,
    "enable.idempotence": bool,
    "acks": ("all", "-1", "0", "1"),
    "linger.ms": int,
    "message.timeout.ms": int,
    "delivery.timeout.ms": int,
    "max.block.ms": int,  # kafka-clients only (librdkafka has no such setting: not applied there)
    "client.id": str,
}
CONSUMER_CONFIG: dict[str, ConfigKind] = {
    "isolation.level": ("read_committed", "read_uncommitted"),
    "group.id": str,
    "group.instance.id": str,  # KIP-345: a static member (a real backend's consumer then subscribes, as it must)
    "topics": list,
    "auto.offset.reset": ("earliest", "latest"),
    "enable.auto.commit": bool,
    "client.id": str,
}

# Settings a Kafka release does not have yet: setting -> (the first release with it, why). A scenario naming one
# cannot run in a profile of an older Kafka (profile_problems).
SETTINGS_SINCE: dict[str, tuple[str, str]] = {
    "transaction.partition.verification.enable": ("3.6", _("KIP-890 part 1's produce-path verification")),
}
KAFKA_ORDER = {"3.5": (3, 5), "3.6": (3, 6), "3.9": (3, 9), "4": (4, 4)}


def profile_problems(cluster: ClusterSpec, actors: Mapping[str, ActorSpec], profile: Profile) -> list[Text]:
    """What a release or a client refuses of a scenario's settings, in the words of its refusal: a broker setting
    the profile's Kafka does not have, and the client settings a client refuses at construction (kafka-clients'
    KafkaProducer: delivery.timeout.ms below linger.ms + request.timeout.ms is a ConfigException; librdkafka's
    rd_kafka_new for a transactional producer: "`message.timeout.ms` must be set <= `transaction.timeout.ms`",
    measured with confluent-kafka 2.16). An empty list: the profile can run it."""
    out = []
    for key in cluster.config:
        since = SETTINGS_SINCE.get(key)
        if since is not None and KAFKA_ORDER[profile.kafka] < KAFKA_ORDER[since[0]]:
            out.append(
                Text(
                    "%(at)s: %(problem)s",
                    {
                        "at": f"cluster.config.{key}",
                        "problem": _("Kafka %(release)s has no such setting (%(kip)s came with Kafka %(since)s)")
                        % {"release": profile.release, "kip": since[1], "since": since[0]},
                    },
                )
            )
    client_defaults = {k: v for k, v in cluster.config.items() if k in ("transaction.timeout.ms",)}
    for name, actor in actors.items():
        if actor.kind != "producer":
            continue
        conf = {**client_defaults, **actor.config}
        delivery = conf.get("delivery.timeout.ms", conf.get("message.timeout.ms"))
        if profile.client == JAVA:
            linger = int(conf.get("linger.ms", 5 if profile.client_release == "4" else 0))
            if delivery is not None and int(delivery) < linger + 30_000:
                out.append(
                    Text(
                        "%(at)s: %(problem)s",
                        {
                            "at": f"actors.{name}",
                            "problem": _(
                                "kafka-clients refuses delivery.timeout.ms %(delivery)s: it should be equal to or larger than "
                                "linger.ms + request.timeout.ms (%(linger)s + 30000)"
                            )
                            % {"delivery": delivery, "linger": linger},
                        },
                    )
                )
        elif actor.transactional_id and delivery is not None:
            txn_timeout = int(conf.get("transaction.timeout.ms", 60_000))
            if int(delivery) > txn_timeout:
                out.append(
                    Text(
                        "%(at)s: %(problem)s",
                        {
                            "at": f"actors.{name}",
                            "problem": _(
                                "librdkafka refuses message.timeout.ms %(delivery)s for a transactional producer: "
                                "`message.timeout.ms` must be set <= `transaction.timeout.ms` (%(timeout)s)"
                            )
                            % {"delivery": delivery, "timeout": txn_timeout},
                        },
                    )
                )
    return out


MAX_BROKERS = 9
MAX_PARTITIONS = 64
# Scenario texts come from share links and an editor on a public server: bound the work one may ask for.
MAX_SOURCE_BYTES = 64 * 1024
MAX_ACTORS = 12
MAX_STEPS = 2000
MAX_DEPTH = 24  # YAML nesting: the deepest library file has 6 levels
MAX_HINTS = 10
MAX_PIPELINES = 8  # stages of a chain
MAX_CHOICES = 6


class ScenarioError(Exception):
    """An invalid scenario file. `str()` is `FILE:LINE: FIELD: message`. `errors` holds every error the loader
    found (this one, the first in the file, among them): it goes on past an actor, a step or an expectation that
    is wrong, so that an editor can mark every bad line at once."""

    def __init__(self, path: str, line: int, field: str, message: str) -> None:
        super().__init__(path, line, field, message)
        self.path, self.line, self.field, self.message = str(path), line, field, message
        self.errors: list[ScenarioError] = [self]

    def as_dict(self, gettext: Callable[[str], str] | None = None) -> dict[str, Any]:
        """The error for an editor; its message in `gettext`'s language when given (playground/scenario/messages.py)."""
        message = translated(self.message, gettext) if gettext is not None else self.message
        return {"line": self.line, "field": self.field, "message": message}

    def said(self, gettext: Callable[[str], str]) -> str:
        """`FILE:LINE: FIELD: message`, the message in `gettext`'s language."""
        return f"{self.path}:{self.line}: {self.field}: {translated(self.message, gettext)}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.message}"


PIPELINE_BY = ("key", "value", "header")
HEADER_NAME_CHARS = 249  # a header name of `by: header` (as long as a topic's name may be)


@dataclass(frozen=True)
class Pipeline:
    """`pipeline: {from: orders, to: payments, by: key}`: the application reads `from` and writes, for each input
    record, an output to `to` with the same key (or value), committing the input's offset in the output's transaction.
    `by: header, header: NAME`: the output carries header NAME with the value of the input's own header NAME (a
    correlation id the application passes on), or, when the input has no such header, the input's key (an order id
    the application puts in a header of its payment). The anomaly checker then judges the pipeline exactly-once: an
    input lost when its offset was committed in a transaction that carried no output for it, a duplicate when its
    output was committed twice."""

    source: str  # `from`, a topic
    sink: str  # `to`, a topic
    by: str = "key"  # PIPELINE_BY: what an output shares with its input
    header: str | None = None  # `by: header`'s header name

    def to_dict(self) -> dict[str, str]:
        out = {"from": self.source, "to": self.sink, "by": self.by}
        if self.header is not None:
            out["header"] = self.header
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Pipeline:
        return cls(str(d["from"]), str(d["to"]), str(d.get("by", "key")), d.get("header"))


@dataclass(frozen=True, eq=False)
class Scenario:
    format: int
    id: str
    title: Mapping[str, str]
    summary: Mapping[str, str]
    tags: tuple[str, ...]
    seed: int
    cluster: ClusterSpec
    actors: Mapping[str, ActorSpec]
    steps: tuple[Step, ...]
    expect: Mapping[str, Any] | None
    path: str = ""
    source: str = ""
    # "logs.orders-0" -> line of that expectation in the file, for failure messages.
    expect_lines: Mapping[str, int] = field(default_factory=dict)
    # Exercises: `goal:` (expect's keys, checked after every command, shown as a checklist) and `hints:`.
    goal: Mapping[str, Any] | None = None
    goal_lines: Mapping[str, int] = field(default_factory=dict)
    hints: tuple[Mapping[str, str], ...] = ()
    # The application's consume-transform-produce pipelines (`pipeline:`), for the anomaly checker.
    pipelines: tuple[Pipeline, ...] = ()
    # The application's database beside Kafka, or None.
    database: DatabaseSpec | None = None
    # Which Kafka and which client the scenario is told in (`profile:`); a file without it: Kafka 3.9, librdkafka.
    # `steps`, `expect` and `expect_lines` are resolved for this profile (for_profile resolves them for another).
    profile: Profile = DEFAULT_PROFILE
    # Outcomes per profile as written: step index -> {selector: outcomes} for steps whose `expect:` is a mapping;
    # the `expect:` block without `by_profile` (and its lines); selector -> (block, lines) of `expect.by_profile`.
    step_expects: Mapping[int, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    expect_base: Mapping[str, Any] | None = None
    expect_base_lines: Mapping[str, int] = field(default_factory=dict)
    expect_profiles: Mapping[str, tuple[Mapping[str, Any], Mapping[str, int]]] = field(default_factory=dict)

    def text(self, name: str, lang: str = DEFAULT_LANG) -> str:
        """`title` or `summary` in `lang`, falling back to English."""
        return pick(getattr(self, name), lang)

    @property
    def per_profile(self) -> bool:
        """Whether any outcome (or a prediction's answer) of this scenario is stated per profile."""
        return bool(
            self.step_expects or self.expect_profiles or any(s.predict and "answers" in s.predict for s in self.steps)
        )

    def for_profile(self, profile: Profile) -> Scenario:
        """The scenario as run in `profile`: `profile` set, each step's `expect` and the `expect:` block (with its
        lines) resolved for it. Cheap, and `self` when nothing changes."""
        if profile == self.profile:
            return self
        return self.resolved(profile)

    def resolved(self, profile: Profile) -> Scenario:
        steps = tuple(_step_for(s, self.step_expects.get(s.index), profile) for s in self.steps)
        expect, lines = self.expect_base, self.expect_base_lines
        if self.expect_profiles:
            expect, lines = block_for(self.expect_base, self.expect_base_lines, self.expect_profiles, profile)
        return replace(self, profile=profile, steps=steps, expect=expect, expect_lines=lines)


def _step_for(step: Step, expects: Mapping[str, tuple[str, ...]] | None, profile: Profile) -> Step:
    """A step as run in `profile`: its outcomes and its prediction's right answer, where they are given per profile."""
    if expects is not None:
        step = replace(step, expect=outcomes_for(expects, profile))
    if step.predict and "answers" in step.predict:
        answer = for_profile(step.predict["answers"], profile)
        if answer is not None:  # a profile no key names keeps the file's own profile's answer
            step = replace(step, predict={**step.predict, "answer": answer})
    return step


def selectors_of(profile: Profile) -> tuple[str, ...]:
    """The selectors naming `profile`, most specific first: ("4-java", "java:4", "java", "4"),
    ("3.9-librdkafka", "librdkafka", "3.9")."""
    release = (f"{JAVA}:{profile.client_release}",) if profile.client_release is not None else ()
    return (profile.key, *release, profile.client, profile.kafka)


def canonical_selector(selector: str) -> str:
    """A whole profile's selector as Profile.key spells it: "3.9-java:3.9" is "3.9-java"."""
    kafka, dash, client = selector.partition("-")
    if dash and client == f"{JAVA}:{kafka}":
        return f"{kafka}-{JAVA}"
    return selector


def for_profile(by_selector: Mapping[str, Any], profile: Profile) -> Any:
    """What a mapping by profile selectors gives `profile`: the most specific selector's, else `default`'s, else
    None (a step's acceptable outcomes, a prediction's right answer)."""
    for selector in (*selectors_of(profile), DEFAULT_SELECTOR):
        if selector in by_selector:
            return by_selector[selector]
    return None


def outcomes_for(by_selector: Mapping[str, tuple[str, ...]], profile: Profile) -> tuple[str, ...] | None:
    outcomes = for_profile(by_selector, profile)
    return None if outcomes is None else tuple(outcomes)


# How deep each block's checks sit: consumers.NAME.TP and groups.GROUP.TP are checks, logs.TP, watermarks.TP and
# transactions.TXID are, and anomalies is one check of its own.
_CHECK_DEPTH = {
    "consumers": 2,
    "groups": 2,
    "logs": 1,
    "watermarks": 1,
    "transactions": 1,
    "anomalies": 0,
    "producers": 1,
    "callbacks": 2,
}


def outcome_matches(expected: str, outcome: str, message: str | None) -> bool:
    """Whether an outcome as a file states it holds: the name alone matches the outcome's name; `NAME: text` also
    needs `text` in the message (of the exception, or librdkafka's error string)."""
    name, colon, text = expected.partition(": ")
    return name == outcome and (not colon or text in (message or ""))


def block_for(
    base: Mapping[str, Any] | None,
    base_lines: Mapping[str, int],
    by_profile: Mapping[str, tuple[Mapping[str, Any], Mapping[str, int]]],
    profile: Profile,
) -> tuple[dict[str, Any] | None, dict[str, int]]:
    """The `expect:` block in `profile`: the plain block, then each check named under a selector naming `profile`
    replacing the same check (Kafka version, then client, then whole profile: the most specific is applied last)."""
    expect: dict[str, Any] = {k: _copy(v) for k, v in (base or {}).items()}
    lines = dict(base_lines)
    applied = False
    for selector in reversed(selectors_of(profile)):
        if selector not in by_profile:
            continue
        block, block_lines = by_profile[selector]
        applied = True
        for section, value in block.items():
            depth = _CHECK_DEPTH[section]
            if depth == 0:
                expect[section] = _copy(value)
                continue
            target = expect.setdefault(section, {})
            for name, inner in value.items():
                if depth == 2:
                    target.setdefault(name, {}).update(_copy(inner))
                else:
                    target[name] = _copy(inner)
        lines.update(block_lines)
    if base is None and not applied:
        return None, lines
    return expect, lines


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return list(value)
    return value


def pick(texts: Mapping[str, str] | str | None, lang: str = DEFAULT_LANG) -> str:
    """One language out of a {lang: text} mapping (a note's text, a title), falling back to English."""
    if not texts:
        return ""
    if isinstance(texts, str):
        return texts
    return texts.get(lang) or texts.get(DEFAULT_LANG) or next(iter(texts.values()))
