"""What a scenario declares, as plain frozen data shared by the scenario loader, both backends and the web layer.

No Django, no I/O: the simulator's driver imports this too. YAML parsing and validation live in
`playground.scenario`; this module only says what a valid scenario *is*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PRODUCER = "producer"
CONSUMER = "consumer"

# The step vocabulary of scenario format 1 (docs: shared/docs/scenario-format.md). Names follow confluent-kafka.
PRODUCER_ACTIONS = (
    "init_transactions",
    "begin_transaction",
    "produce",
    "flush",
    "send_offsets_to_transaction",
    "commit_transaction",
    "abort_transaction",
    "crash",
    "restart",
    "close",
    # a send's future, waited for later (`A.produce: {..., future: f3}` then `A.get: f3`; issue 20)
    "get",
)
CONSUMER_ACTIONS = ("poll", "commit", "seek_to_committed", "crash", "restart")
# `net.late_write` (docs/scenario-format-extensions.md): a Produce request of an earlier transaction, delivered late.
# `broker.abort_transaction` (docs/scenario-format.md): an operator's `kafka-transactions.sh abort` on a partition.
CLUSTER_ACTORS = {
    "clock": ("advance",),
    "broker": ("stop", "start", "abort_transaction"),
    "net": ("late_write",),
}
# The application's database (a scenario's `database:`): SQL as the application runs it, its transactions, its death.
APP = "app"
APP_ACTIONS = ("sql", "db_begin", "db_commit", "db_rollback", "crash")
NOTE = "note"


# Profiles: which Kafka, which client and which release of that client a session speaks (issues 9 and 20). The
# version a profile names is the exact release tools/kafka runs and the simulator models.
KAFKA_RELEASES = {"3.5": "3.5.2", "3.9": "3.9.1", "4": "4.4.0"}
CLIENTS = ("librdkafka", "java")
JAVA = "java"
# kafka-clients releases, by the same version keys as the clusters: a Java client of any of them runs against a
# cluster of any (`java:3.5`). `java` alone is kafka-clients of the cluster's own release, what it has always meant.
JAVA_RELEASES = KAFKA_RELEASES


@dataclass(frozen=True)
class Profile:
    """Kafka version x client x client release. The default is what every scenario file without `profile:` has
    always meant. `client_release` is the kafka-clients version key of a Java client (None is read as the
    cluster's own: `Profile("3.9", "java") == Profile("3.9", "java", "3.9")`); librdkafka has none (one model)."""

    kafka: str = "3.9"
    client: str = "librdkafka"
    client_release: str | None = None

    def __post_init__(self) -> None:
        if self.client == JAVA and self.client_release is None:
            object.__setattr__(self, "client_release", self.kafka)
        elif self.client != JAVA and self.client_release is not None:
            raise ValueError(f"{self.client} has no release to choose (only java does)")

    @property
    def release(self) -> str:
        return KAFKA_RELEASES[self.kafka]

    @property
    def client_version(self) -> str | None:
        """The exact kafka-clients release of a Java client ("3.5.2"); None for librdkafka."""
        return JAVA_RELEASES[self.client_release] if self.client_release is not None else None

    @property
    def own_client(self) -> bool:
        """Whether the client is of the cluster's own release (librdkafka always counts as such)."""
        return self.client_release in (None, self.kafka)

    @property
    def client_key(self) -> str:
        """The client as the format spells it: librdkafka, java (the cluster's own release), java:3.5."""
        return self.client if self.own_client else f"{self.client}:{self.client_release}"

    @property
    def key(self) -> str:
        """The whole profile as the format spells it (a selector, the compare view's URL): 3.9-java, 3.9-java:3.5."""
        return f"{self.kafka}-{self.client_key}"

    @property
    def transaction_version(self) -> int:
        """The transaction protocol the producer's transactions run under: 2 (KIP-890 part 2) only when the cluster
        has it (a 4.x cluster formatted with transaction.version=2) and the client implements it (kafka-clients 4.x;
        librdkafka does not; kafka-clients 3.x does not), else the classic protocol (1). A 4.x client on a 3.x
        cluster finds no transaction.version finalized and stays classic."""
        return 2 if self.kafka == "4" and self.client_release == "4" else 1

    @property
    def finalized_transaction_version(self) -> int:
        """The `transaction.version` feature level a cluster of this version has finalized, as tools/kafka formats
        it and the simulator models it: 2 on 4.x (kafka.sh formats with transaction.version=2, also a new 4.x
        cluster's default), 0 on 3.9 and 3.5 (which do not finalize the feature: ApiVersions lists no level for it).
        The real backend reports what its cluster says instead (playground/kafka/clusters.py)."""
        return 2 if self.kafka == "4" else 0

    @property
    def label(self) -> str:
        client = self.client if self.own_client else f"{self.client} {self.client_version}"
        return f"Kafka {self.release} · {client}"

    def to_dict(self) -> dict[str, Any]:
        return {"kafka": self.kafka, "client": self.client_key}


DEFAULT_PROFILE = Profile()
# Every profile of this playground: each Kafka version with librdkafka, with its own kafka-clients, then with the
# kafka-clients of the other releases.
PROFILES: tuple[Profile, ...] = tuple(
    p
    for kafka in KAFKA_RELEASES
    for p in (
        Profile(kafka, "librdkafka"),
        Profile(kafka, JAVA),
        *(Profile(kafka, JAVA, r) for r in JAVA_RELEASES if r != kafka),
    )
)
# The profiles there were before the client release was a choice (issue 9): each Kafka version of then with its own
# client. A scenario's outcomes per profile must name each of these (docs/scenario-format.md).
CLASSIC_PROFILES: tuple[Profile, ...] = tuple(Profile(k, c) for k in ("3.9", "4") for c in CLIENTS)
CLIENT_KEYS = (*CLIENTS, *(f"{JAVA}:{r}" for r in JAVA_RELEASES))


def parse_client(client: str, kafka: str) -> Profile:
    """`librdkafka`, `java` or `java:3.5` on a cluster of version `kafka`; a ValueError naming the field otherwise."""
    name, colon, release = client.partition(":")
    if name not in CLIENTS or (colon and (name != JAVA or release not in JAVA_RELEASES)):
        raise ValueError(f"client: {client!r} is not a client of this playground ({', '.join(CLIENT_KEYS)})")
    return Profile(kafka, name, release or None)


def parse_profile(kafka: Any = None, client: Any = None, base: Profile = DEFAULT_PROFILE) -> Profile:
    """A profile from text (a form, the command line, a stored row): a part that is None or "" keeps `base`'s; a
    value outside the allowed set is a ValueError whose message names the field and the allowed values. `client`
    may name a kafka-clients release (`java:3.5`); `java` alone is the cluster's own."""
    kafka = base.kafka if kafka in (None, "") else str(kafka)
    client = base.client_key if client in (None, "") else str(client)
    if kafka not in KAFKA_RELEASES:
        raise ValueError(f"kafka: {kafka!r} is not a Kafka version of this playground ({', '.join(KAFKA_RELEASES)})")
    return parse_client(client, kafka)


def profile_from_key(key: str) -> Profile:
    """`3.9-java:3.5` (Profile.key) into a profile; a ValueError otherwise."""
    kafka, dash, client = key.partition("-")
    if not dash:
        raise ValueError(f"{key!r} is not KAFKA-CLIENT (e.g. 3.9-java:3.5)")
    return parse_profile(kafka, client)


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 1


@dataclass(frozen=True)
class ClusterSpec:
    brokers: int = 3
    # Overrides of Kafka's defaults, broker and client settings alike, e.g. {"transaction.timeout.ms": 60000}.
    config: Mapping[str, Any] = field(default_factory=dict)
    topics: tuple[TopicSpec, ...] = ()
    # The topics' replication factor (None: min(3, brokers), what it has always been)
    replication_factor: int | None = None

    def topic(self, name: str) -> TopicSpec | None:
        return next((t for t in self.topics if t.name == name), None)


@dataclass(frozen=True)
class ActorSpec:
    name: str
    kind: str  # PRODUCER or CONSUMER
    # Client configuration as confluent-kafka takes it: transactional.id, isolation.level, group.id, ...
    config: Mapping[str, Any] = field(default_factory=dict)
    topics: tuple[str, ...] = ()  # consumers: what they subscribe to

    @property
    def transactional_id(self) -> str | None:
        return self.config.get("transactional.id")

    @property
    def group_id(self) -> str | None:
        return self.config.get("group.id")

    @property
    def isolation_level(self) -> str:
        level: str = self.config.get("isolation.level", "read_committed")
        return level


@dataclass(frozen=True)
class Step:
    """One line of a scenario's `steps:`: `ACTOR.ACTION` with arguments, or a note.

    For cluster actions the actor is "clock" or "broker"; for a note the actor is "note", the action "note" and
    args is {"text": {lang: text}}.
    """

    actor: str
    action: str
    args: Mapping[str, Any] = field(default_factory=dict)
    expect: tuple[str, ...] | None = None  # acceptable outcomes ("ok" or error names); None: anything goes
    index: int = 0
    line: int = 0  # 1-based line in the scenario file, 0 when the step came from the UI
    # An exercise's question before the step runs: {"question": {lang: text}, "choices": [{lang: text}], "answer": i}.
    # Not part of what the step does: left out of to_dict() (and so of the command log).
    predict: Mapping[str, Any] | None = None

    @property
    def is_note(self) -> bool:
        return self.actor == NOTE

    @property
    def label(self) -> str:
        """The step as the scenario file spells it, e.g. `A.commit_transaction`."""
        return NOTE if self.is_note else f"{self.actor}.{self.action}"

    def to_dict(self) -> Any:
        """The step in the scenario file's own form (what a session's command log stores)."""
        if self.is_note:
            return {NOTE: dict(self.args.get("text", {}))}
        args = dict(self.args)
        if self.expect is not None:
            args["expect"] = self.expect[0] if len(self.expect) == 1 else list(self.expect)
        return {self.label: args} if args else self.label
