"""What a real-cluster session shows: the observer's snapshots (observer.py) turned into the session's events, the
observation the scenario checker compares with the simulator's, and view(), the dashboard's state.

It follows the simulator's shapes (playground/engine/backend.py's contract, playground/sim/cluster.py's view) with what
a client can read of a real cluster: partition logs with control records (a raw Fetch), HW and LSO (ListOffsets at
both isolation levels), the coordinator's state (DescribeTransactions, KIP-664) and every transition it persisted
(`__transaction_state`, TransactionLog.scala's records), the partition leaders' open transactions (DescribeProducers)
and committed group offsets (OffsetFetch). What a client cannot read is said in `unobservable`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.engine import events as ev
from playground.engine.backend import BackendError
from playground.engine.spec import CONSUMER, PRODUCER, Profile
from playground.kafka.actors import Actor
from playground.kafka.emitter import EventEmitter
from playground.kafka.names import SessionNames
from playground.kafka.profiles import client_name
from playground.kafka.wire import LogEntry

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


def log_fates(entries: list[LogEntry]) -> dict[int, str]:
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


def owner_of(actors: dict[str, Actor], producer_id: int, epoch: int) -> str | None:
    """The actor that held this producer id and epoch (its client logged acquiring them)."""
    for a in actors.values():
        if (producer_id, epoch) in a.pid_epochs:
            return a.spec.name
    return None


class ClusterEvents:
    """What the session has already turned into events, so that each snapshot emits only what changed: new records
    and markers, watermarks, leaders, coordinator transitions and loads, group offsets."""

    def __init__(self, names: SessionNames, events: EventEmitter) -> None:
        self.names = names
        self.events = events
        self.txn_state_seen: dict[str, str] = {}  # scenario txid -> last state seen in __transaction_state
        self.watermarks: dict[str, tuple[int, int]] = {}
        self.leaders: dict[str, int | None] = {}
        self.log_seen: dict[str, int] = {}  # scenario tp -> next offset already turned into events
        self.groups_seen: dict[str, dict[str, int | None]] = {}
        self.coordinators: dict[str, int | None] = {}  # scenario txid -> coordinator broker last seen

    def from_snapshot(self, snap: dict[str, Any], actors: dict[str, Actor]) -> None:
        emit = self.events.emit
        for tp, part in snap["partitions"].items():
            seen = self.log_seen.get(tp, 0)
            entries = [e for e in part["entries"] if e.offset >= seen]
            i = 0
            while i < len(entries):
                e = entries[i]
                if e.control:
                    emit(
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
                emit(
                    ev.Append,
                    partition=tp,
                    base_offset=e.offset,
                    count=len(batch),
                    producer_id=e.producer_id,
                    epoch=e.epoch,
                    sequence=e.sequence,
                    transactional=e.transactional,
                    values=tuple(x.to_dict().get("value") for x in batch),
                    client_id=owner_of(actors, e.producer_id, e.epoch),
                )
                i = j + 1
            if entries:
                self.log_seen[tp] = entries[-1].offset + 1
            marks = (part["high_watermark"], part["last_stable_offset"])
            if self.watermarks.get(tp) != marks:
                self.watermarks[tp] = marks
                emit(
                    ev.Watermarks,
                    partition=tp,
                    high_watermark=marks[0],
                    last_stable_offset=marks[1],
                    log_end_offset=marks[0],
                )
            if self.leaders.get(tp, -2) != part.get("leader"):
                self.leaders[tp] = part.get("leader")
                emit(ev.Leader, partition=tp, leader=part.get("leader"), leader_epoch=part.get("leader_epoch", -1))
        for txid, records in snap["txn_log"].items():
            for rec in records:
                frm = self.txn_state_seen.get(txid, "Empty")
                self.txn_state_seen[txid] = rec["state"]
                emit(
                    ev.TxnState,
                    transactional_id=txid,
                    from_state=frm,
                    to_state=rec["state"],
                    producer_id=rec["producer_id"],
                    epoch=rec["epoch"],
                    partitions=tuple(
                        self.names.scenario_tp(t, p) for t, p in rec["partitions"] if t.startswith(self.names.prefix)
                    ),
                    coordinator_broker=snap["transactions"].get(txid, {}).get("coordinator_broker"),
                    persisted=True,
                    record_bytes=rec["record_bytes"],
                )
        for txid, d in snap["transactions"].items():
            broker = d.get("coordinator_broker")
            if txid in self.coordinators and broker is not None and self.coordinators[txid] != broker:
                # another broker leads this __transaction_state partition now: it loaded it (and resends the
                # markers of any transaction it found in Prepare*). Its coordinator epoch is not visible here.
                emit(
                    ev.CoordinatorLoad,
                    txn_partition=d.get("coordinator_partition", -1),
                    broker=broker,
                    coordinator_epoch=-1,
                    resumed=(txid,) if d.get("state") in ("PrepareCommit", "PrepareAbort") else (),
                )
            self.coordinators[txid] = broker
        for group, offsets in snap["groups"].items():
            if self.groups_seen.get(group) != offsets:
                self.groups_seen[group] = dict(offsets)
                emit(
                    ev.GroupOffsets,
                    group=group,
                    state="committed",
                    offsets=tuple((tp, o) for tp, o in offsets.items() if o is not None),
                    producer_id=-1,
                )


def observation(snap: dict[str, Any], actors: dict[str, Actor], names: SessionNames) -> dict[str, Any]:
    """What the scenario checker compares: logs, watermarks, what each consumer received, the coordinator's
    states, committed group offsets."""
    partitions = {}
    for tp, part in snap["partitions"].items():
        partitions[tp] = {
            "log": [e.to_dict() for e in part["entries"]],
            "high_watermark": part["high_watermark"],
            "last_stable_offset": part["last_stable_offset"],
            "log_end_offset": part["high_watermark"],
        }
    consumers = {}
    for name, a in actors.items():
        if a.spec.kind != CONSUMER:
            continue
        per: dict[str, list[Any]] = {f"{t}-{p}": [] for t in a.spec.topics for p in range(names.topics[t].partitions)}
        for tp, entries in a.received.items():
            per.setdefault(tp, []).extend(e["value"] for e in entries)
        consumers[name] = per
    transactions = {}
    for txid, d in snap["transactions"].items():
        if d.get("state") is None:
            continue
        transactions[txid] = {"state": d["state"], "producer_id": d["producer_id"], "epoch": d["producer_epoch"]}
    return {
        "partitions": partitions,
        "consumers": consumers,
        "transactions": transactions,
        "groups": snap["groups"],
    }


def partition_views(
    snap: dict[str, Any], base: dict[str, Any], open_txns: dict[str, dict[str, int]], log_limit: int
) -> dict[str, Any]:
    """view()'s partitions: the observation's, with each record's fate, the window of the log shown, the leader and
    the partition leader's open transactions (producer id -> first offset)."""
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
        partitions[tp] = {
            **base["partitions"][tp],
            "open_transactions": open_txns.get(tp, {}),
            "log": log_entries,
            "topic": topic,
            "partition": int(num),
            "leader": part.get("leader"),
            "log_start_offset": part.get("log_start_offset", 0),
            "window_start": window[0].offset if window else part["high_watermark"],
        }
    return partitions


def producer_views(snap: dict[str, Any], actors: dict[str, Actor]) -> dict[str, Any]:
    rc_received: dict[tuple[str, int], bool] = {}
    for a in actors.values():
        if a.spec.kind == CONSUMER and a.spec.isolation_level == "read_committed":
            for tp, received in a.received.items():
                for r in received:
                    rc_received[(tp, r["offset"])] = True
    producers = {}
    for name, a in actors.items():
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
    return producers


def consumer_views(actors: dict[str, Actor], log_limit: int) -> dict[str, Any]:
    consumers = {}
    for name, a in actors.items():
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
    return consumers


def transaction_views(snap: dict[str, Any], names: SessionNames, events: EventEmitter) -> dict[str, Any]:
    transactions = {}
    for txid, d in snap["transactions"].items():
        if d.get("state") is None:
            continue
        transactions[txid] = {
            "state": d["state"],
            "producer_id": d["producer_id"],
            "epoch": d["producer_epoch"],
            "partitions": sorted(
                names.scenario_tp(t, p) for t, p in d.get("partitions", []) if t.startswith(names.prefix)
            ),
            "timeout_ms": d.get("transaction_timeout_ms"),
            "coordinator_partition": d.get("coordinator_partition"),
            "coordinator_broker": d.get("coordinator_broker"),
            "txn_start_time_ms": events.session_ms(d.get("transaction_start_time_ms")),
            "pending_state": None,
        }
    return transactions


def unobservable(
    profile: Profile,
    ignored_cluster: dict[str, Any],
    cluster_config: dict[str, Any],
    clock_capped: list[str],
    broker_control: bool,
    actors: dict[str, Actor],
) -> list[str]:
    """view()["unobservable"]: what this session cannot show or apply, in sentences."""
    out = list(UNOBSERVABLE_BASE)
    if profile.client == "java":  # the timeline comes from kafka-clients' log, not librdkafka's
        out = [UNOBSERVABLE_JAVA_TIMELINE if line.startswith("The RPC timeline is") else line for line in out]
    for k, v in sorted(ignored_cluster.items()):
        out.append(
            f"cluster.config {k}={v} is a broker setting: a shared real cluster runs with its own, so it is not applied."
        )
    for k, v in sorted(cluster_config.items()):
        if k.startswith("sim."):
            out.append(f"cluster.config {k}={v} only shapes the simulator (a real cluster has its own latencies).")
    out.extend(clock_capped)
    if not broker_control:
        out.append("Brokers cannot be stopped or started from here (KAFKA_BROKER_CONTROL is not configured).")
    for a in actors.values():
        for k in a.ignored_settings:
            out.append(
                f"{a.spec.name}: setting {k} is not a {client_name(profile)} client setting and was not applied."
            )
    return out


def group_details(
    described: Mapping[str, Mapping[str, Any]],
    committed: Mapping[str, Mapping[str, int | None]],
    names: SessionNames,
    prefix: str,
    actors: Mapping[str, Actor],
) -> dict[str, dict[str, Any]]:
    """The groups panel's groups, as a real cluster's AdminClient tells them (DescribeGroups, OffsetFetch) in the
    simulator's shape (sim/groupview.py): members named as the session's actors (their client.id is the session's
    prefix and the actor's name), their partitions in the scenario's names. What DescribeGroups does not tell is
    None or empty (`source: admin`): the generation, the leader, the rebalances, offsets pending in a transaction,
    the KIP-447 checks."""
    out: dict[str, dict[str, Any]] = {}
    for gid, d in sorted(described.items()):
        members = []
        for m in d["members"]:
            client_id = str(m["client_id"])
            own = client_id[len(prefix) :] if client_id.startswith(prefix) else None
            assigned = []
            for topic, partition in m["assignment"]:
                try:
                    assigned.append(names.scenario_tp(topic, partition))
                except BackendError:
                    assigned.append(f"{topic}-{partition}")  # a topic not of this session
            members.append(
                {
                    "member_id": m["member_id"],
                    "client_id": client_id,
                    "name": own if own in actors else client_id,
                    "host": m["host"],
                    "instance_id": m["instance_id"],
                    "alive": True,
                    "assignment": sorted(assigned),
                    "more_assigned": 0,
                }
            )
        out[gid] = {
            "source": "admin",
            "state": d["state"],
            "generation": None,
            "protocol": d["protocol"],
            "leader": None,
            "members": members,
            "more_members": 0,
            "committed": {tp: o for tp, o in sorted((committed.get(gid) or {}).items()) if o is not None},
            "pending": [],
            "txn_checks": [],
            "rebalances": [],
        }
    return out
