"""What the client models share: confluent_kafka's TopicPartition, Message and consumer group metadata, and a client
on the simulated cluster (Client): its configuration, its blocking calls (they run the cluster's scheduler until
their answer is in, so virtual time passes and other clients' background work and the brokers' timers run meanwhile,
in time order), its RPCs (through Cluster.rpc, to the cluster's request methods) and FindCoordinator.

The models: the librdkafka producer (client.py, with rdkafka_base.py and rdkafka_txnmgr.py), the consumer
(consumer.py, librdkafka's; it stands for the Java consumer too) and kafka-clients' producer (javaclient.py, with
java_base.py, java_txnmgr.py and java_sender.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from playground.sim.effects import Reply
from playground.sim.errors import KafkaError

if TYPE_CHECKING:  # pragma: no cover
    from playground.sim.cluster import Cluster

# the client's process, not a protocol state: what the view shows after crash() and close()
CRASHED = "CRASHED"
CLOSED = "CLOSED"


class TopicPartition:
    """confluent_kafka.TopicPartition."""

    __slots__ = ("error", "offset", "partition", "topic")

    def __init__(self, topic: str, partition: int = -1, offset: int = -1001) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.error: KafkaError | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def __repr__(self) -> str:
        return f"TopicPartition{{topic={self.topic},partition={self.partition},offset={self.offset}}}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopicPartition) and self.topic == other.topic and self.partition == other.partition

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))


class Message:
    """confluent_kafka.Message (values are returned as produced: str stays str)."""

    __slots__ = (
        "_error",
        "_key",
        "_offset",
        "_on_delivery",
        "_partition",
        "_topic",
        "_value",
        "enqueued_ms",
        "epoch",
        "producer_id",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        value: Any,
        key: Any = None,
        offset: int = -1001,
        error: KafkaError | None = None,
    ) -> None:
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._key = key
        self._value = value
        self._error = error
        self._on_delivery: Callable[[KafkaError | None, Message], None] | None = None
        self.producer_id = -1
        self.epoch = -1
        self.enqueued_ms = 0

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> Any:
        return self._key

    def value(self) -> Any:
        return self._value

    def error(self) -> KafkaError | None:
        return self._error

    def __repr__(self) -> str:
        return f"Message({self._topic}-{self._partition}@{self._offset} {self._value!r})"


class GroupMetadata:
    """What consumer_group_metadata() returns (KIP-447): group id, generation, member id and group.instance.id."""

    __slots__ = ("generation_id", "group_id", "group_instance_id", "member_id")

    def __init__(
        self, group_id: str, generation_id: int = -1, member_id: str = "", group_instance_id: str | None = None
    ) -> None:
        self.group_id = group_id
        self.generation_id = generation_id
        self.member_id = member_id
        self.group_instance_id = group_instance_id

    def __repr__(self) -> str:
        return f"GroupMetadata({self.group_id}, generation {self.generation_id}, {self.member_id})"


def conf_ms(conf: dict[str, Any], key: str, default: int) -> int:
    value = conf.get(key, default)
    return int(value)


def conf_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


class Client:
    """A client process on the simulated cluster. `api_versions`: the ApiVersion it sends per request name (shown
    in the timeline and deciding how the brokers answer); a request not named there goes without one."""

    api_versions: Mapping[str, int] = {}

    def __init__(self, conf: dict[str, Any], cluster: Cluster, name: str | None) -> None:
        self.conf = dict(conf)
        self.cluster = cluster
        self.name = name or str(self.conf.get("client.id", "rdkafka"))
        self.alive = True
        self.api_cap_ms = conf_ms(self.conf, "sim.api.timeout.ms", 60_000)

    def _is_alive(self) -> bool:
        return self.alive

    def discard(self) -> None:
        """Backend.discard: drop the callbacks this client keeps that refer back to it."""

    @property
    def now_ms(self) -> int:
        return self.cluster.scheduler.now_ms

    def _after(self, delay_ms: int, fn: Callable[[], None], label: str = "") -> None:
        def run() -> None:
            if self.alive:
                fn()

        self.cluster.scheduler.after(delay_ms, run, label=label or f"{self.name} timer")

    def _deadline(self, timeout: float | None, cap_ms: int | None = None) -> int:
        if timeout is None or timeout < 0:
            return self.now_ms + (cap_ms if cap_ms is not None else self.api_cap_ms)
        return self.now_ms + round(timeout * 1000)

    def _wait(self, done: Callable[[], bool], deadline_ms: int) -> bool:
        return self.cluster.scheduler.run_until(done, deadline_ms)

    def _rpc(
        self,
        name: str,
        broker: int | None,
        dst_label: str,
        detail: str,
        handler: Callable[[int, Reply], None],
        on_response: Callable[[str | None, dict[str, Any]], None],
    ) -> None:
        self.cluster.rpc(
            name,
            self.name,
            broker,
            dst_label,
            detail,
            handler,
            on_response,
            src_alive=self._is_alive,
            version=self.api_versions.get(name),
        )

    def _find_coordinator(self, key: str, kind: str, on_found: Callable[[int], None], retry_ms: int = 100) -> None:
        """FindCoordinator through any reachable broker, retried until it answers with a live coordinator."""
        c = self.cluster
        boot = c.any_up_broker()

        def handler(broker: int, reply: Reply) -> None:
            c.handle_find_coordinator(key, kind, reply)

        def on_response(error: str | None, result: dict[str, Any]) -> None:
            if error:
                self._after(
                    retry_ms,
                    lambda: self._find_coordinator(key, kind, on_found, retry_ms),
                    f"{self.name} FindCoordinator retry",
                )
            else:
                on_found(result["coordinator"])

        self._rpc("FindCoordinator", boot, f"b{boot}" if boot else "bootstrap", f"{kind} {key}", handler, on_response)
