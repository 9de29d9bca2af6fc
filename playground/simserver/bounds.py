"""What a broker bounds in what its clients send, in Kafka's own settings and with Kafka's own errors: the door.

The settings, read from the server's config (`simcluster --config KEY=VALUE`; a session's listener takes the
deployment's bounds, session/limits.py, and records them in its log so that a replay bounds the same way):
- `message.max.bytes` (1048588): a record batch larger than this, or than its topic's `max.message.bytes`, is refused
  with MESSAGE_TOO_LARGE (UnifiedLog.analyzeAndValidateRecords); larger than the topic's `segment.bytes`:
  RECORD_LIST_TOO_LARGE (UnifiedLog.append).
- `socket.request.max.bytes` (104857600): a larger frame closes the connection before its body is read
  (SocketServer; protocol/framing.py). `queued.max.request.bytes` (-1, none): the memory the requests being read
  take together; a connection whose next request cannot have it is not read meanwhile (the asyncio layer).
- `fetch.max.bytes` (57671680): the most a Fetch answer holds (after its first batch, KIP-74).
- `log.segment.bytes` (1 GiB) and `log.retention.bytes` (-1, none): the defaults of the topic configs `segment.bytes`
  and `retention.bytes` (storage.py deletes whole segments past retention, as Kafka's log retention does).
- `offset.metadata.max.bytes` (4096): an OffsetCommit's or TxnOffsetCommit's metadata string longer than this (in
  Java's characters) is not committed, its partition answered OFFSET_METADATA_TOO_LARGE, the others committed
  (GroupMetadataManager.storeOffsets, OffsetMetadataManager.isMetadataInvalid).
- `connections.max.idle.ms` (600000): a connection with no traffic that long is closed (Selector's idle expiry; the
  asyncio layer keeps it).
- `producer_byte_rate`, `consumer_byte_rate` (none): client quotas, per broker, as `kafka-configs --entity-type users
  --entity-default` sets them: every client of a PLAINTEXT listener is User:ANONYMOUS, so the quota is shared by all
  the clients of this cluster (quotas.py; a Produce or Fetch over it is answered with `throttle_time_ms` and its
  connection is muted that long, KIP-219). `request_percentage` (none): the request quota, percent of a thread's
  time; it measures CPU time, so only the asyncio layer of a session's listener keeps it.
- `max.connection.creation.rate` (none): connections each broker's listener accepts a second; past it the next
  connection waits, connected and unread, for the acceptor's throttle time (KIP-612; the asyncio layer,
  quotas.AcceptQuota).
- A create-topic policy (`create.topic.policy.class.name` with these parameters: `sim.policy.max.partitions.per.topic`,
  `sim.policy.max.partitions` in all, `sim.policy.max.topics`, `sim.policy.max.message.bytes` for a topic's
  `max.message.bytes`): CreateTopics, CreatePartitions and auto-creation over them are refused with
  POLICY_VIOLATION and the policy's message (ControllerApis / ReplicationControlManager apply it).
- `sim.retained.max.bytes` (none): the disk. Once the records the cluster retains (whatever retention left) reach
  it, a Produce is refused with POLICY_VIOLATION and a message saying so (a real broker whose log directory is full
  takes it offline; here the cluster stays up and says why).
Kafka's defaults when a setting is absent, so that `simcluster` behaves as a stock broker does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

# Kafka's defaults (ServerConfigs, SocketServerConfigs, ServerLogConfigs)
MESSAGE_MAX_BYTES = 1_048_588
SOCKET_REQUEST_MAX_BYTES = 104_857_600
FETCH_MAX_BYTES = 57_671_680
LOG_SEGMENT_BYTES = 1 << 30
CONNECTIONS_MAX_IDLE_MS = 600_000
OFFSET_METADATA_MAX_BYTES = 4096
# LegacyRecord.RECORD_OVERHEAD_V0: the smallest segment.bytes a topic may have (TopicConfig's validator)
MIN_SEGMENT_BYTES = 14


@dataclass(frozen=True)
class Bounds:
    message_max_bytes: int = MESSAGE_MAX_BYTES
    socket_request_max_bytes: int = SOCKET_REQUEST_MAX_BYTES
    queued_max_request_bytes: int = -1
    fetch_max_bytes: int = FETCH_MAX_BYTES
    log_segment_bytes: int = LOG_SEGMENT_BYTES
    log_retention_bytes: int = -1
    connections_max_idle_ms: int = CONNECTIONS_MAX_IDLE_MS
    offset_metadata_max_bytes: int = OFFSET_METADATA_MAX_BYTES
    producer_byte_rate: float | None = None
    consumer_byte_rate: float | None = None
    request_percentage: float | None = None
    max_connection_creation_rate: float | None = None
    policy_max_partitions_per_topic: int | None = None
    policy_max_partitions: int | None = None
    policy_max_topics: int | None = None
    policy_max_message_bytes: int | None = None
    retained_max_bytes: int | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Bounds:
        values: dict[str, Any] = {}
        for f in fields(cls):
            key = CONFIG_KEYS[f.name]
            if key not in config or config[key] in (None, ""):
                continue
            number = float(config[key])
            values[f.name] = number if f.name in RATES else int(number)
        return cls(**values)

    def to_config(self) -> dict[str, str]:
        """The settings that differ from Kafka's defaults, as config keys (what a listen entry records)."""
        default = Bounds()
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value != getattr(default, f.name):
                out[CONFIG_KEYS[f.name]] = str(value)
        return out


CONFIG_KEYS = {
    "message_max_bytes": "message.max.bytes",
    "socket_request_max_bytes": "socket.request.max.bytes",
    "queued_max_request_bytes": "queued.max.request.bytes",
    "fetch_max_bytes": "fetch.max.bytes",
    "log_segment_bytes": "log.segment.bytes",
    "log_retention_bytes": "log.retention.bytes",
    "connections_max_idle_ms": "connections.max.idle.ms",
    "offset_metadata_max_bytes": "offset.metadata.max.bytes",
    "producer_byte_rate": "producer_byte_rate",
    "consumer_byte_rate": "consumer_byte_rate",
    "request_percentage": "request_percentage",
    "max_connection_creation_rate": "max.connection.creation.rate",
    "policy_max_partitions_per_topic": "sim.policy.max.partitions.per.topic",
    "policy_max_partitions": "sim.policy.max.partitions",
    "policy_max_topics": "sim.policy.max.topics",
    "policy_max_message_bytes": "sim.policy.max.message.bytes",
    "retained_max_bytes": "sim.retained.max.bytes",
}
RATES = frozenset({"producer_byte_rate", "consumer_byte_rate", "request_percentage", "max_connection_creation_rate"})


# ---------------------------------------------------------------------------------------------- topic configs
# The topic configs whose values this server reads, with the broker setting each defaults to.
TOPIC_CONFIG_DEFAULTS = {
    "max.message.bytes": "message_max_bytes",
    "segment.bytes": "log_segment_bytes",
    "retention.bytes": "log_retention_bytes",
}


def topic_config_int(bounds: Bounds, configs: Mapping[str, str], key: str) -> int:
    """A topic's setting as it is in force: its own value, or the broker's default."""
    value = configs.get(key)
    if value is not None:
        return int(value)
    return int(getattr(bounds, TOPIC_CONFIG_DEFAULTS[key]))


def invalid_topic_config(configs: Mapping[str, str]) -> str | None:
    """INVALID_CONFIG's message for a name or value Kafka's validators refuse (LogConfig.validateNames and its
    ConfigDef), else None."""
    for key in configs:
        if key not in TOPIC_CONFIG_NAMES:
            return f"Unknown topic config name: {key}"
    for key, (kind, low) in _TOPIC_CONFIG_TYPES.items():
        if key not in configs:
            continue
        raw = configs[key]
        try:
            value = int(raw)
        except (TypeError, ValueError):
            return f"Invalid value {raw} for configuration {key}: Not a number of type {kind}"
        if low is not None and value < low:
            return f"Invalid value {value} for configuration {key}: Value must be at least {low}"
    return None


# A topic's configs (TopicConfig and the replication throttles of QuotaConfigs, Kafka 3.9), and those of type LIST
TOPIC_CONFIG_NAMES = frozenset(
    {
        "segment.bytes", "segment.ms", "segment.jitter.ms", "segment.index.bytes", "flush.messages", "flush.ms",
        "retention.bytes", "retention.ms", "remote.storage.enable", "local.retention.ms", "local.retention.bytes",
        "remote.log.copy.disable", "remote.log.delete.on.disable", "max.message.bytes", "index.interval.bytes",
        "file.delete.delay.ms", "delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms",
        "min.cleanable.dirty.ratio", "cleanup.policy", "unclean.leader.election.enable", "min.insync.replicas",
        "compression.type", "compression.gzip.level", "compression.zstd.level", "preallocate",
        "message.format.version", "message.timestamp.type", "message.timestamp.difference.max.ms",
        "message.timestamp.before.max.ms", "message.timestamp.after.max.ms", "message.downconversion.enable",
        "leader.replication.throttled.replicas", "follower.replication.throttled.replicas",
    }
)  # fmt: skip
LIST_TOPIC_CONFIGS = frozenset(
    {"cleanup.policy", "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)

# key -> (ConfigDef type, the validator's least value)
_TOPIC_CONFIG_TYPES = {
    "max.message.bytes": ("INT", 0),
    "segment.bytes": ("INT", MIN_SEGMENT_BYTES),
    "retention.bytes": ("LONG", None),
}


# ---------------------------------------------------------------------------------------------- the policy
def policy_violation(
    bounds: Bounds,
    *,
    topic: str,
    partitions: int,
    added: int,
    configs: Mapping[str, str],
    topics_now: int,
    partitions_now: int,
    new_topic: bool = True,
) -> str | None:
    """The create-topic policy's refusal (its PolicyViolationException message), or None: `partitions` the topic's
    count after the request, `added` how many of them the request adds, `partitions_now` the cluster's user
    partitions before it, `topics_now` its user topics."""
    if bounds.policy_max_partitions_per_topic is not None and partitions > bounds.policy_max_partitions_per_topic:
        return (
            f"Topic {topic} would have {partitions} partitions; this cluster's policy allows at most "
            f"{bounds.policy_max_partitions_per_topic} per topic."
        )
    if bounds.policy_max_topics is not None and new_topic and topics_now + 1 > bounds.policy_max_topics:
        return f"This cluster's policy allows at most {bounds.policy_max_topics} topics; it has {topics_now}."
    if bounds.policy_max_partitions is not None and partitions_now + added > bounds.policy_max_partitions:
        return (
            f"Topic {topic} would bring the cluster to {partitions_now + added} partitions; this cluster's policy "
            f"allows at most {bounds.policy_max_partitions} in all."
        )
    limit = bounds.policy_max_message_bytes
    if limit is not None and "max.message.bytes" in configs and int(configs["max.message.bytes"]) > limit:
        return (
            f"Topic {topic}: max.message.bytes={configs['max.message.bytes']} is over this cluster's policy of at "
            f"most {limit}."
        )
    return None
