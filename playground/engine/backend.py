"""The one interface both backends implement: the simulator (`playground.sim.driver.SimBackend`) and a real
cluster through confluent-kafka (`playground.kafka.backend.KafkaBackend`). It imports neither: whoever chooses an
engine builds it (`playground.scenario.engines.make_backend`).

The scenario runner, the live session and the web layer only ever talk to a backend through this interface, and
they only ever read the plain, JSON-able dicts it returns. A backend never raises for something Kafka or the
client would report as an error: that is an *outcome* (see `apply`). It raises `BackendError` for what is the
tool's problem rather than Kafka's (an unreachable cluster, an actor that does not exist).

## `observe()` -> dict  (what `scenario run --json` is built from; producer ids are raw here)
{
  "partitions": {"orders-0": {
      "log": [ {"offset": 0, "key": "k" | None, "value": "txn1-p0", "producer_id": 1000, "epoch": 0,
                "sequence": 0, "transactional": True},
               {"offset": 1, "control": "ABORT", "producer_id": 1000, "epoch": 1} ],
      "high_watermark": 2, "last_stable_offset": 2, "log_end_offset": 2}},
  "consumers":    {"rc": {"orders-0": ["value", ...]}},          # everything each consumer received, all polls
  "transactions": {"order-pay": {"state": "Empty", "producer_id": 1000, "epoch": 2}},
  "groups":       {"copier": {"orders-0": 3 | None}},             # committed offsets of every group an actor uses
}
A non-idempotent record has producer_id -1 and epoch -1, as Kafka stores it.

## `view(log_limit)` -> dict  (what the dashboard renders; a superset of observe())
observe()'s keys, where each partition additionally has
    "topic", "partition", "leader" (broker id or None), "log_start_offset", "window_start" (offset of the first
    entry in "log": only the last `log_limit` entries are included), and each log entry has
    "fate": "committed" | "aborted" | "open" | "plain" (non-transactional) | "marker",
plus
  "backend": "sim" | "kafka", "time_ms": virtual (sim) or wall-clock ms since the session began (kafka),
  "brokers": {"1": {"up": True}, ...},
  "producers": {NAME: {"transactional_id": str | None, "producer_id": int | None, "epoch": int | None,
                       "state": client state as librdkafka names it (e.g. "INIT", "READY", "IN_TRANSACTION",
                                "COMMITTING_TRANSACTION", "ABORTABLE_ERROR", "FATAL_ERROR", "CRASHED", "CLOSED"),
                       "last_error": {"op": "commit_transaction", "error": "_FENCED", "detail": "..."} | None,
                       "fenced": bool,
                       "counters": {"app_sent_ok": sends the application believes succeeded (awaited and
                                        delivered, or fired and forgotten without an exception from produce()),
                                    "landed": records of this actor in the logs,
                                    "read_committed_received": of those, received by a read_committed consumer}}},
  "consumers":  {NAME: {"isolation_level": ..., "group_id": ..., "topics": [...], "state": "RUNNING" | "CRASHED",
                        "positions": {"orders-0": 3},
                        "received": {"orders-0": [{"offset": 0, "value": "v"}]},  # the last `log_limit` per partition
                        "received_total": N}},  # every record received, all partitions
  "transactions": {TXID: {"state", "producer_id", "epoch", "partitions": ["orders-0"], "timeout_ms",
                          "coordinator_partition" (__transaction_state partition), "coordinator_broker",
                          "txn_start_time_ms" | None, "pending_state" | None}},
  "timeline": [ {"seq", "time_ms", "rpc": "EndTxn", "src": "A" | "coordinator(b2)" | "leader orders-0(b1)",
                 "dst": ..., "direction": "request" | "response", "error": "PRODUCER_FENCED" | None,
                 "detail": "commit, epoch 0"} ]   # the most recent 200
  "timeline_pinned": [ ... ]  # optional: the RPCs events.pinned names (fences, InitProducerId, EndTxn, rebalances)
                              # older than `timeline`'s, a bounded number of each kind, in `timeline`'s shape
  "unobservable": [ "what this backend cannot see, in a sentence each" ],  # e.g. the real coordinator's RPCs
  "group_details": {GROUP: {"state", "generation", "protocol", "leader", "members": [{"member_id", "client_id",
                     "host", "instance_id", "alive", "assignment": [tp], "rebalance": None | "rejoin" | "waiting"}],
                     "committed": {tp: offset},
                     "pending": [{"producer_id", "offsets": {tp: offset}}] (TxnOffsetCommit before its marker),
                     "rebalances": [{"time_ms", "generation", "causes": [{"cause", "member"}], "members"}]}}
                   # optional: the group coordinator's state, where the backend can read it (the simulator's)
  "transitions": {target state: [allowed previous states]}: the coordinator's table, for the state diagram,
  "stats": {"init_producer_id": N, "transaction_state_records": N, "transaction_state_bytes": N,
            "markers": N, ...}: cost counters, where the backend can count them
}
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from playground.engine.spec import ActorSpec, ClusterSpec, Step

OK = "ok"
WHOLE_LOG = 100_000  # entries per partition: the whole log of any session a server keeps


class BackendError(Exception):
    """The tool's problem, not Kafka's: an unreachable cluster, an unknown actor, a misconfigured server."""


class ProfileError(BackendError):
    """This backend cannot run the session's profile: no model or worker of that client yet, or the server's cluster
    for that Kafka version is another version. Not a passing failure: trying again gives the same answer."""


class Backend(ABC):
    name: str

    @abstractmethod
    def __init__(
        self,
        cluster: ClusterSpec,
        actors: Mapping[str, ActorSpec],
        *,
        seed: int = 0,
        on_event: Callable[[Any], None] | None = None,
    ) -> None:
        """Create the topics and the actors' clients. `on_event` receives every event as it happens."""

    @abstractmethod
    def add_actor(self, actor: ActorSpec) -> None:
        """A new producer or consumer in a running session (the dashboard's "add producer")."""

    @abstractmethod
    def apply(self, step: Step) -> str:
        """Carry out one step and return its outcome: "ok" or the error name the application sees
        (`_FENCED`, `_STATE`, `INVALID_PRODUCER_EPOCH`, ...). A note returns "ok" and does nothing."""

    @abstractmethod
    def observe(self) -> dict[str, Any]:
        """The state to compare between backends, once the cluster is quiescent (markers written, LSO caught up)."""

    @abstractmethod
    def view(self, log_limit: int = 200) -> dict[str, Any]:
        """Everything the dashboard shows, right now."""

    def fenced_actors(self) -> frozenset[str]:
        """Names of the producers that are fenced right now (view()["producers"][name]["fenced"]), cheaply: the
        session calls it around every command to note which command fenced whom. A backend that cannot tell
        cheaply answers the empty set (the command's own error outcome is marked anyway)."""
        return frozenset()

    def outcome_message(self) -> str | None:
        """The message of the exception or error behind the last step's outcome (Throwable.getMessage(),
        KafkaError.str()), when the backend knows it; None after an "ok"."""
        return None

    def client_state(self, actor: str) -> str | None:
        """The producer's client state right now, as its client names it (kafka-clients' TransactionManager.State,
        librdkafka's txn state), when the backend can tell; None otherwise."""
        return None

    def group_generation(self, actor: str) -> int | None:
        """The generation of the group a static member (group.instance.id) was in at its last poll, as its client
        knows it (consumer_group_metadata()), when the backend can tell; None otherwise."""
        return None

    def callbacks(self) -> list[dict[str, Any]]:
        """Every invocation of a record's callback so far, in order, for the sends that asked for one
        (`callback: true`): {"actor", "value", "outcome", "message"}."""
        return []

    def polled(self, actor: str) -> list[tuple[str, int]]:
        """The records (partition, offset) the consumer's last poll returned: what the anomaly checker reads."""
        return []

    def stable_offsets(self) -> dict[str, int]:
        """The last stable offset of every partition right now, when the backend can tell cheaply ({} otherwise):
        the checker compares what a read_committed poll returned with it."""
        return {}

    def log_entries(self, since: Mapping[str, int]) -> dict[str, list[dict[str, Any]]]:
        """Every partition's log entries (as view() gives them) from offset `since[tp]` on (from the start when a
        partition is not named): what the anomaly checker has not read yet. A backend that can read a log from an
        offset cheaply says so by overriding this; here, from the whole log of view()."""
        out: dict[str, list[dict[str, Any]]] = {}
        for tp, part in self.view(WHOLE_LOG).get("partitions", {}).items():
            start = since.get(tp, 0)
            out[tp] = [e for e in part.get("log", []) if e["offset"] >= start]
        return out

    def coordinator_timers(self) -> dict[str, Any]:
        """When the transaction coordinators act by themselves next: {"abort_scan_interval_ms": n,
        "next_abort_scan_ms": {broker: t or None}} (the scan that aborts transactions past their timeout). A backend
        that cannot know (a real cluster's brokers keep their own schedule) says nothing."""
        return {}

    def close(self) -> None:  # noqa: B027 - a backend with nothing to release need not say so
        """Release clients, processes and (real cluster) the session's topics."""

    def discard(self) -> None:  # noqa: B027 - a backend whose state holds no reference cycles need not say so
        """Nothing will read or change this state again (a moment scrubbed past): drop the references that make it
        a cycle, so that it is freed at once instead of waiting for the garbage collector (whose passes over a long
        session's leftovers fall into whichever request is running when they come)."""
