"""Configs: DescribeConfigs, and a topic's configs changed by AlterConfigs (all of them replaced) and
IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT) as a KRaft controller changes them
(ConfigurationControlManager: the new configs validated first, LogConfig's names and values, then the resource's
existence; validate_only changes nothing).

A broker's configs are not changed here (the simulated brokers keep the settings they started with): such a resource
is answered INVALID_REQUEST, and the README says so. The other resource types (broker loggers, client metrics,
groups) are refused as Kafka refuses a type it does not know."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from playground.simserver import bounds as kafka_bounds
from playground.simserver.apis.base import api
from playground.simserver.core import Call

Handler = Callable[[Call], None]

TOPIC, BROKER = 2, 4
SOURCE_TOPIC, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 4, 5
# A few of Kafka's defaults (TopicConfig / ServerLogConfigs), shown as a broker without overrides shows them; the
# sizes the server bounds (max.message.bytes, retention.bytes, segment.bytes) come from its own settings (bounds.py).
TOPIC_DEFAULTS = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "message.timestamp.type": "CreateTime",
    "min.insync.replicas": "1",
    "retention.ms": "604800000",
    "unclean.leader.election.enable": "false",
}
# broker settings whose topic configs default to them
BOUNDED_TOPIC_CONFIGS = {
    "max.message.bytes": "message.max.bytes",
    "retention.bytes": "log.retention.bytes",
    "segment.bytes": "log.segment.bytes",
}


def _bounded_entries(core: Any) -> dict[str, tuple[str, int]]:
    """The broker's size settings as DescribeConfigs shows them: a default, or this server's own setting."""
    default = kafka_bounds.Bounds()
    out = {}
    for field, key in kafka_bounds.CONFIG_KEYS.items():
        if key.startswith("sim.") or field in kafka_bounds.RATES:
            continue  # simulator knobs, and quotas (client quotas are not broker configs)
        value = getattr(core.bounds, field)
        out[key] = (str(value), SOURCE_DEFAULT if value == getattr(default, field) else SOURCE_STATIC_BROKER)
    return out


@api(32)
def describe_configs(call: Call) -> None:
    core = call.core
    c = core.cluster
    results = []
    for resource in call.body.resources:
        kind = int(resource.resource_type)
        name = resource.resource_name
        result: dict[str, Any] = {"resource_type": kind, "resource_name": name, "error_message": None, "configs": []}
        entries: dict[str, tuple[str, int]] = {}
        if kind == TOPIC:
            if name not in c.topics:
                result["error_code"] = "UNKNOWN_TOPIC_OR_PARTITION"
            else:
                entries = {k: (v, SOURCE_DEFAULT) for k, v in TOPIC_DEFAULTS.items()}
                broker = _bounded_entries(core)
                entries.update({k: broker[setting] for k, setting in BOUNDED_TOPIC_CONFIGS.items()})
                entries.update({k: (v, SOURCE_TOPIC) for k, v in core.topic_configs.get(name, {}).items()})
        elif kind == BROKER:
            if name and (not name.isdigit() or int(name) not in c.brokers):
                result["error_code"] = "INVALID_REQUEST"
            else:
                tc = c.txn_coordinator
                entries = {
                    "transaction.max.timeout.ms": (str(tc.max_timeout_ms), SOURCE_DEFAULT),
                    "transactional.id.expiration.ms": (str(tc.expiration_ms), SOURCE_DEFAULT),
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
                        str(tc.abort_interval_ms),
                        SOURCE_DEFAULT,
                    ),
                    "transaction.state.log.num.partitions": (str(tc.num_partitions), SOURCE_DEFAULT),
                    "offsets.topic.num.partitions": (str(c.groups.num_partitions), SOURCE_DEFAULT),
                    "auto.create.topics.enable": (
                        str(core.config.get("auto.create.topics.enable", "true")).lower(),
                        SOURCE_DEFAULT,
                    ),
                    "num.partitions": (str(core.config.get("num.partitions", 1)), SOURCE_DEFAULT),
                    **_bounded_entries(core),
                }
        else:
            result["error_code"] = "INVALID_REQUEST"
        keys = resource.configuration_keys
        result["configs"] = [
            {
                "name": k,
                "value": v,
                "read_only": kind == BROKER,
                "config_source": source,
                "is_sensitive": False,
                "synonyms": [],
                "config_type": 0,
                "documentation": None,
            }
            for k, (v, source) in sorted(entries.items())
            if keys is None or k in keys
        ]
        results.append(result)
    call.reply({"throttle_time": 0, "results": results})


# IncrementalAlterConfigs' operations (AlterConfigOp.OpType)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


@api(33)
def alter_configs(call: Call) -> None:
    """AlterConfigs (legacyAlterConfigs): a resource's configs become exactly those given."""
    results = []
    for resource in call.body.resources:
        configs = {c.name: c.value for c in resource.configs if c.value is not None}
        results.append(_alter(call, resource, functools.partial(_replace, configs)))
    call.reply({"throttle_time": 0, "responses": results}, error=_first_error(results))


@api(44)
def incremental_alter_configs(call: Call) -> None:
    """IncrementalAlterConfigs (incrementalAlterConfigResource): each config set, deleted, or (a LIST config)
    appended to or subtracted from."""
    results = []
    for resource in call.body.resources:
        ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
        results.append(_alter(call, resource, functools.partial(_apply, ops)))
    call.reply({"throttle_time": 0, "responses": results}, error=_first_error(results))


def _replace(configs: dict[str, str], current: dict[str, str]) -> dict[str, str]:
    return dict(configs)


def _apply(ops: list[tuple[str, int, str | None]], current: dict[str, str]) -> dict[str, str] | str:
    """The configs after the operations, or INVALID_CONFIG's message."""
    out = dict(current)
    for name, op, value in ops:
        if op == SET and value is not None:
            out[name] = value
        elif op in (SET, DELETE):
            out.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if name not in kafka_bounds.LIST_TOPIC_CONFIGS:
                return f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST."
            parts = [p for p in out.get(name, TOPIC_DEFAULTS.get(name, "")).split(",") if p]
            for item in (value or "").split(","):
                if op == APPEND and item not in parts:
                    parts.append(item)
                elif op == SUBTRACT and item in parts:
                    parts.remove(item)
            out[name] = ",".join(parts)
        else:
            return f"Unknown operation {op} for key {name}"
    return out


def _alter(call: Call, resource: Any, change: Callable[[dict[str, str]], dict[str, str] | str]) -> dict[str, Any]:
    core = call.core
    kind, name = int(resource.resource_type), resource.resource_name
    result: dict[str, Any] = {"resource_type": kind, "resource_name": name, "error_code": None, "error_message": None}
    if kind == BROKER:
        result.update(error_code="INVALID_REQUEST", error_message="the simulated brokers' configs do not change")
        return result
    if kind != TOPIC:
        result.update(error_code="INVALID_REQUEST", error_message=f"Unexpected resource type {kind}")
        return result
    configs = change(core.topic_configs.get(name, {}))
    if isinstance(configs, str):
        result.update(error_code="INVALID_CONFIG", error_message=configs)
    elif invalid := kafka_bounds.invalid_topic_config(configs):
        result.update(error_code="INVALID_CONFIG", error_message=invalid)
    elif name not in core.cluster.topics or core.internal(name):
        result.update(error_code="UNKNOWN_TOPIC_OR_PARTITION", error_message=f"The topic '{name}' does not exist.")
    elif not call.body.validate_only:
        core.topic_configs[name] = configs
    return result


def _first_error(results: list[dict[str, Any]]) -> str | None:
    return next((r["error_code"] for r in results if r["error_code"]), None)
