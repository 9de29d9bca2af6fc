"""What a profile's client means on a real cluster: which worker process runs an actor, and the client settings it
is given.

A profile names a Kafka version and a client (playground/engine/spec.py). The client picks the worker: librdkafka
through confluent-kafka in a Python process (worker.py), or kafka-clients of the profile's Kafka release in a JVM
(java_worker.py, java/Worker.java). Both answer the same operations with the same shapes; outcomes are named as each
client names its errors. Settings follow each client's own names (librdkafka's CONFIGURATION.md, kafka-clients'
ProducerConfig/ConsumerConfig): a scenario's librdkafka name with a different kafka-clients name is renamed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from playground.engine.spec import PRODUCER, ActorSpec, Profile
from playground.kafka.java_worker import JavaActorProcess
from playground.kafka.worker import ActorProcess

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
    "transaction.partition.verification.enable",
}
# cluster.config keys that are topic settings: given to the session's own topics when they are created
TOPIC_SETTINGS = {"min.insync.replicas"}
# cluster.config keys that are client settings (the producers' default)
CLIENT_SETTINGS = {"transaction.timeout.ms"}

WorkerHandle = ActorProcess | JavaActorProcess
ACTOR_PROCESSES: dict[str, Callable[[str, str, dict[str, Any], Profile], WorkerHandle]] = {
    "librdkafka": lambda name, kind, config, profile: ActorProcess(name, kind, config),
    # kafka-clients of the profile's client release (the cluster's own unless the profile names another)
    "java": lambda name, kind, config, profile: JavaActorProcess(
        name, kind, config, release=profile.client_version or profile.release
    ),
}
# kafka-clients blocks initTransactions, commitTransaction, abortTransaction, sendOffsetsToTransaction, and a send
# that waits for metadata, for at most max.block.ms (60 s by default): kept below every budget of actors.OP_TIMEOUT_S,
# so that the client's own TimeoutException comes before the parent gives up on the worker.
JAVA_MAX_BLOCK_MS = 15000
# How each client tells an application it was fenced: librdkafka's _FENCED, the Java client's exception, the wire
# error when a send's delivery report carries it.
FENCED_OUTCOMES = frozenset({"_FENCED", "PRODUCER_FENCED", "ProducerFencedException"})
# librdkafka's names of client settings a scenario may give -> kafka-clients' names of the same settings
JAVA_SETTING_NAMES = {"message.timeout.ms": "delivery.timeout.ms"}


def client_name(profile: Profile) -> str:
    return "kafka-clients" if profile.client == "java" else "librdkafka"


def actor_config(
    spec: ActorSpec,
    *,
    prefix: str,
    bootstrap: str,
    client: Mapping[str, Any],
    cluster_config: Mapping[str, Any],
    profile: Profile,
) -> dict[str, Any]:
    """The client configuration of one actor: the server's cluster and client settings, the scenario's settings
    with its ids under the session's prefix, and bounds that make failures quick to surface."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, **client}
    conf.update({k: v for k, v in cluster_config.items() if k in CLIENT_SETTINGS and spec.kind == PRODUCER})
    for k, v in spec.config.items():
        if k == "topics":
            continue
        if k == "transactional.id" or k == "group.id":
            v = prefix + str(v)
        conf[k] = v
    java = profile.client == "java"
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
            conf["group.id"] = solo_group(prefix, spec.name)
        conf.setdefault("enable.auto.commit", False)  # commits are steps, unless the scenario says otherwise
        conf.setdefault("auto.offset.reset", "earliest")
    conf.setdefault("client.id", f"{prefix}{spec.name}")
    for k in conf:
        if not isinstance(conf[k], (str, int, float, bool)):
            conf[k] = str(conf[k])
    return conf


def solo_group(prefix: str, actor: str) -> str:
    """The group id of a consumer the scenario gave none (deleted with the session's groups)."""
    return f"{prefix}_solo-{actor}"
