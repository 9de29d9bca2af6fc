"""ApiVersions and Metadata, topics (CreateTopics, CreatePartitions, DeleteTopics) and DescribeCluster: what a
client asks before it sends anything (KafkaApis.handleApiVersionsRequest,
handleTopicMetadataRequest, ...; the controller's ReplicationControlManager for what topics may be made).

Topics are made as a KRaft controller makes them: checked in Kafka's order (the name, duplicates, existence, the
partition count and replication factor, the configs' values: INVALID_CONFIG), then the create-topic policy
(bounds.py: POLICY_VIOLATION with the policy's message), for CreateTopics, CreatePartitions and a topic Metadata
creates on the fly (whose refusal the client never hears of: the controller's answer goes to the broker, and the
topic simply does not appear)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playground.protocol import apiversions
from playground.simserver import bounds as kafka_bounds
from playground.simserver.apis.base import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_OPERATIONS,
    LEGAL_TOPIC,
    SOFTWARE,
    TOPIC_OPERATIONS,
    _config_bool,
    _endpoint,
    _topic_name,
    _tp,
    api,
)
from playground.simserver.core import Call

Handler = Callable[[Call], None]


# ---------------------------------------------------------------------------------------------- ApiVersions


@api(18)
def api_versions(call: Call) -> None:
    body, version, core = call.body, call.version, call.core
    name = getattr(body, "client_software_name", None)
    software_version = getattr(body, "client_software_version", None)
    if version >= 3 and not (SOFTWARE.match(name or "") and SOFTWARE.match(software_version or "")):
        call.reply({"error_code": "INVALID_REQUEST", "api_keys": []}, error="INVALID_REQUEST")
        return
    if name is not None and software_version is not None:
        call.conn.software = (name, software_version)
    supported = apiversions.SUPPORTED_FEATURES[core.kafka]
    finalized = apiversions.FINALIZED_FEATURES[core.kafka]
    call.reply(
        {
            "api_keys": [
                {"api_key": key, "min_version": lo, "max_version": hi} for key, (lo, hi) in core.advertised.items()
            ],
            "throttle_time": 0,
            "supported_features": [
                {"name": n, "min_version": lo, "max_version": hi}
                for n, (lo, hi) in supported.items()
                if version >= 4 or lo > 0  # KIP-1022: v3 and older leave out features that may be disabled
            ],
            "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
            "finalized_features": [
                {"name": n, "min_version_level": lo, "max_version_level": hi} for n, (lo, hi) in finalized.items()
            ],
        }
    )


# The metadata offset at which the features were finalized: any non-negative number (a real cluster's grows as its
# metadata log does; a client only compares it with what it saw before).
FINALIZED_FEATURES_EPOCH = 1


# ---------------------------------------------------------------------------------------------- Metadata


def _brokers(call: Call) -> list[dict[str, Any]]:
    c = call.core.cluster
    out = []
    for b in c.broker_ids:
        if c.broker_up(b):
            host, port = _endpoint(call, b)
            out.append({"node_id": b, "host": host, "port": port, "rack": None})
    return out


def _controller(call: Call) -> int:
    """A KRaft broker names a random live broker as controller (clients never talk to the real controllers); the
    simulator names the first live one."""
    up = call.core.cluster.any_up_broker()
    return up if up is not None else -1


def _topic_metadata(call: Call, topic: str, include_ops: bool) -> dict[str, Any]:
    c = call.core.cluster
    parts = []
    for p in range(c.partition_count(topic)):
        meta = c.partitions[_tp(topic, p)]
        live = [b for b in meta.replicas if c.broker_up(b)]
        leader = meta.leader if meta.leader is not None and c.broker_up(meta.leader) else -1
        parts.append(
            {
                "error_code": None if leader >= 0 else "LEADER_NOT_AVAILABLE",
                "partition_index": p,
                "leader_id": leader,
                "leader_epoch": meta.leader_epoch,
                "replica_nodes": list(meta.replicas),
                "isr_nodes": live,
                "offline_replicas": [b for b in meta.replicas if b not in live],
            }
        )
    return {
        "error_code": None,
        "name": topic,
        "topic_id": call.core.topic_id(topic),
        "is_internal": call.core.internal(topic),
        "partitions": parts,
        "topic_authorized_operations": TOPIC_OPERATIONS if include_ops else AUTHORIZED_OPERATIONS_OMITTED,
    }


@api(3)
def metadata(call: Call) -> None:
    body, version, core = call.body, call.version, call.core
    c = core.cluster
    include_ops = bool(getattr(body, "include_topic_authorized_operations", False))
    requested = body.topics
    if requested is None or (version == 0 and not requested):
        topics = [_topic_metadata(call, t, include_ops) for t in c.topics]
    else:
        auto_create = bool(getattr(body, "allow_auto_topic_creation", True)) and _config_bool(
            core.config, "auto.create.topics.enable", True
        )
        topics = []
        for item in requested:
            name, topic_id = _topic_name(call, item)
            if name is not None and name in c.topics:
                topics.append(_topic_metadata(call, name, include_ops))
            elif topic_id is not None and not getattr(item, "name", None):
                topics.append({"error_code": "UNKNOWN_TOPIC_ID", "name": None, "topic_id": topic_id, "partitions": []})
            elif name is None or not LEGAL_TOPIC.match(name) or name in (".", ".."):
                topics.append({"error_code": "INVALID_TOPIC_EXCEPTION", "name": name, "partitions": []})
            elif auto_create:
                # KRaft creates the topic through the controller; this answer comes before its leaders exist (and
                # before the controller's answer: a topic the policy refuses is simply not made)
                partitions = int(core.config.get("num.partitions", 1))
                if _policy(call, name, partitions, partitions, {}) is None:
                    _create(call, name, partitions, {})
                topics.append({"error_code": "LEADER_NOT_AVAILABLE", "name": name, "partitions": []})
            else:
                topics.append({"error_code": "UNKNOWN_TOPIC_OR_PARTITION", "name": name, "partitions": []})
    call.reply(
        {
            "throttle_time": 0,
            "brokers": _brokers(call),
            "cluster_id": core.cluster_id,
            "controller_id": _controller(call),
            "topics": topics,
            "cluster_authorized_operations": CLUSTER_OPERATIONS
            if getattr(body, "include_cluster_authorized_operations", False)
            else AUTHORIZED_OPERATIONS_OMITTED,
        }
    )


# ---------------------------------------------------------------------------------------------- topics


def _create(call: Call, name: str, partitions: int, configs: dict[str, str], replication: int | None = None) -> None:
    call.core.cluster.create_topic(name, partitions, replication)
    call.core.topic_id(name)
    if configs:
        call.core.topic_configs[name] = configs


def _policy(
    call: Call, name: str, partitions: int, added: int, configs: dict[str, str], new_topic: bool = True
) -> str | None:
    """The create-topic policy's refusal of `name` at `partitions` partitions (`added` of them new), or None."""
    c = call.core.cluster
    user = c.user_topics()
    return kafka_bounds.policy_violation(
        call.core.bounds,
        topic=name,
        partitions=partitions,
        added=added,
        configs=configs,
        topics_now=len(user),
        partitions_now=sum(c.partition_count(t) for t in user),
        new_topic=new_topic,
    )


@api(19)
def create_topics(call: Call) -> None:
    body = call.body
    core = call.core
    c = core.cluster
    live = sum(1 for b in c.broker_ids if c.broker_up(b))
    results = []
    names = [t.name for t in body.topics]
    for topic in body.topics:
        name = topic.name
        partitions = int(topic.num_partitions)
        replication = int(topic.replication_factor)
        if partitions == -1:
            partitions = int(core.config.get("num.partitions", 1))
        if replication == -1:
            replication = int(core.config.get("default.replication.factor", c.replication_factor))
        configs = {cfg.name: cfg.value for cfg in topic.configs if cfg.value is not None}
        result: dict[str, Any] = {"name": name, "error_message": None, "num_partitions": -1, "replication_factor": -1}
        if names.count(name) > 1:
            result.update(error_code="INVALID_REQUEST", error_message=f"Duplicate topic name {name}")
        elif not LEGAL_TOPIC.match(name) or name in (".", ".."):
            result.update(error_code="INVALID_TOPIC_EXCEPTION", error_message=f"Topic name {name!r} is illegal")
        elif name in c.topics:
            result.update(error_code="TOPIC_ALREADY_EXISTS", error_message=f"Topic '{name}' already exists.")
        elif topic.assignments:
            result.update(error_code="INVALID_REQUEST", error_message="manual replica assignments are not simulated")
        elif partitions < 1:
            result.update(error_code="INVALID_PARTITIONS", error_message="Number of partitions must be larger than 0.")
        elif replication < 1 or replication > live:
            result.update(
                error_code="INVALID_REPLICATION_FACTOR",
                error_message=f"Unable to replicate the partition {replication} time(s): The target replication "
                f"factor of {replication} cannot be reached because only {live} broker(s) are registered.",
            )
        elif invalid := kafka_bounds.invalid_topic_config(configs):
            result.update(error_code="INVALID_CONFIG", error_message=invalid)
        elif refused := _policy(call, name, partitions, partitions, configs):
            result.update(error_code="POLICY_VIOLATION", error_message=refused)
        else:
            validate_only = bool(getattr(body, "validate_only", False))  # v1+
            if not validate_only:
                _create(call, name, partitions, configs, replication)
            result.update(
                error_code=None,
                topic_id=core.topic_id(name) if not validate_only else None,
                num_partitions=partitions,
                replication_factor=replication,
                configs=[
                    {"name": k, "value": v, "read_only": False, "config_source": 1, "is_sensitive": False}
                    for k, v in configs.items()
                ],
            )
        results.append(result)
    error = next((r.get("error_code") for r in results if r.get("error_code")), None)
    call.announce(f"b{call.broker}", ", ".join(names))
    call.reply({"throttle_time": 0, "topics": results}, error=error)


@api(20)
def delete_topics(call: Call) -> None:
    body, version = call.body, call.version
    core = call.core
    if version >= 6:
        wanted = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(n, None) for n in body.topic_names]
    results = []
    for name, topic_id in wanted:
        if not name and topic_id is not None:
            name = core.topic_of(topic_id)
        result: dict[str, Any] = {"name": name, "topic_id": topic_id, "error_message": None}
        if name is None:
            result["error_code"] = "UNKNOWN_TOPIC_ID"
        elif name not in core.cluster.topics:
            result["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
        elif core.internal(name):
            result.update(error_code="INVALID_REQUEST", error_message=f"Cannot delete internal topic {name}")
        else:
            result["topic_id"] = core.topic_id(name)
            delete_topic(core, name)
            result["error_code"] = None
        results.append(result)
    error = next((r.get("error_code") for r in results if r.get("error_code")), None)
    call.announce(f"b{call.broker}", ", ".join(str(n) for n, _ in wanted))
    call.reply({"throttle_time": 0, "responses": results}, error=error)


def delete_topic(core: Any, name: str) -> None:
    """A topic and its partitions leave the cluster, and what the server kept about them."""
    count = core.cluster.partition_count(name)
    core.cluster.delete_topic(name)
    core.forget_topic(name)
    core.storage.forget(_tp(name, p) for p in range(count))


@api(37)
def create_partitions(call: Call) -> None:
    """CreatePartitions (ReplicationControlManager.createPartitions): a topic grows, never shrinks; the new
    partitions are placed as the topic's first ones were."""
    body = call.body
    c = call.core.cluster
    names = [t.name for t in body.topics]
    results = []
    for topic in body.topics:
        name, count = topic.name, int(topic.count)
        result: dict[str, Any] = {"name": name, "error_code": None, "error_message": None}
        current = c.partition_count(name)
        if names.count(name) > 1:
            result.update(error_code="INVALID_REQUEST", error_message=f"Duplicate topic name {name}")
        elif name not in c.topics or call.core.internal(name):
            result["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
        elif count == current:
            result.update(error_code="INVALID_PARTITIONS", error_message=f"Topic already has {current} partition(s).")
        elif count < current:
            result.update(
                error_code="INVALID_PARTITIONS",
                error_message=f"The topic {name} currently has {current} partition(s); {count} would not be an "
                "increase.",
            )
        elif topic.assignments:
            result.update(error_code="INVALID_REQUEST", error_message="manual replica assignments are not simulated")
        elif refused := _policy(call, name, count, count - current, {}, new_topic=False):
            result.update(error_code="POLICY_VIOLATION", error_message=refused)
        elif not body.validate_only:
            c.add_partitions(name, count)
        results.append(result)
    error = next((r["error_code"] for r in results if r["error_code"]), None)
    call.announce(f"b{call.broker}", ", ".join(f"{t.name} to {int(t.count)}" for t in body.topics))
    call.reply({"throttle_time": 0, "results": results}, error=error)


@api(60)
def describe_cluster(call: Call) -> None:
    body = call.body
    core = call.core
    if int(getattr(body, "endpoint_type", 1)) != 1:
        call.reply(
            {"error_code": "UNSUPPORTED_ENDPOINT_TYPE", "error_message": "only brokers answer here", "cluster_id": ""},
            error="UNSUPPORTED_ENDPOINT_TYPE",
        )
        return
    brokers = [
        {"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": None, "is_fenced": False}
        for b in _brokers(call)
    ]
    call.reply(
        {
            "throttle_time": 0,
            "error_code": None,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": core.cluster_id,
            "controller_id": _controller(call),
            "brokers": brokers,
            "cluster_authorized_operations": CLUSTER_OPERATIONS
            if body.include_cluster_authorized_operations
            else AUTHORIZED_OPERATIONS_OMITTED,
        }
    )
