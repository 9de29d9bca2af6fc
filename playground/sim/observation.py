"""What the backend contract (playground/engine/backend.py) shows of the simulated cluster: `observe()`, the state
to compare with a real cluster's, and `view()`, everything the dashboard shows; and the actors SimBackend keeps, the
application's side of each client (what it believes it sent, the last error it saw).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.engine import events as ev
from playground.engine.spec import ActorSpec
from playground.sim.client import CLOSED, CRASHED, Consumer, Message, Producer
from playground.sim.cluster import Cluster
from playground.sim.coordinator import transitions_for
from playground.sim.groupview import group_details
from playground.sim.javaclient import JavaProducer


class ProducerActor:
    def __init__(self, spec: ActorSpec) -> None:
        self.spec = spec
        self.client: Producer | JavaProducer | None = None
        self.app_sent_ok = 0
        self.last_error: dict[str, Any] | None = None
        self.fenced = False
        # the sends' futures the steps named (`future: f3`): a kafka-clients future, or librdkafka's delivery report
        self.futures: dict[str, Any] = {}


class ConsumerActor:
    def __init__(self, spec: ActorSpec) -> None:
        self.spec = spec
        self.client: Consumer | None = None
        self.received: dict[str, list[tuple[int, Any]]] = {}
        self.last_poll: list[Message] = []
        self.last_error: dict[str, Any] | None = None


def observe(cluster: Cluster, consumers: Mapping[str, ConsumerActor]) -> dict[str, Any]:
    """The contract's observe(), of a settled cluster."""
    return {
        "partitions": {name: partition(cluster, name) for name in user_partitions(cluster)},
        "consumers": _consumers_received(cluster, consumers),
        "transactions": {
            txid: {k: snap[k] for k in ("state", "producer_id", "epoch")}
            for txid, snap in transactions(cluster).items()
        },
        "groups": groups(cluster, consumers),
    }


def view(
    cluster: Cluster,
    producers: Mapping[str, ProducerActor],
    consumers: Mapping[str, ConsumerActor],
    *,
    backend: str,
    kafka: str,
    landed: Mapping[str, int],
    rc_received: Mapping[str, int],
    log_limit: int = 200,
) -> dict[str, Any]:
    """The contract's view(): observe()'s keys and everything else the dashboard shows."""
    c = cluster
    partitions = {}
    for name in user_partitions(cluster):
        log = c.log(name)
        start = max(log.log_start_offset, log.log_end_offset - max(0, log_limit))
        data = partition(cluster, name, start, fate=True)
        meta = c.partitions[name]
        data.update(
            {
                "topic": meta.topic,
                "partition": meta.partition,
                "leader": meta.leader,
                "log_start_offset": log.log_start_offset,
                "window_start": start,
                # extensions
                "replicas": list(meta.replicas),
                "leader_epoch": meta.leader_epoch,
                "open_transactions": {str(pid): first for pid, first in log.open_transactions().items()},
                "abort_index": [t._asdict() for t in log.aborted[-50:]],
            }
        )
        partitions[name] = data
    shown_producers = {}
    for name, entry in producers.items():
        p = entry.client
        landed_count = landed.get(name, 0)
        rc_count = rc_received.get(name, 0)
        shown_producers[name] = {
            "transactional_id": entry.spec.transactional_id,
            "producer_id": p.producer_id if p is not None and p.producer_id >= 0 else None,
            "epoch": p.epoch if p is not None and p.epoch >= 0 else None,
            "state": p.state if p is not None else CRASHED,
            "last_error": entry.last_error,
            "fenced": entry.fenced,
            "counters": {
                "app_sent_ok": entry.app_sent_ok,
                "landed": landed_count,
                "read_committed_received": rc_count,
            },
            # extensions
            "queued": p.outstanding() if p is not None and p.alive else 0,
            "fatal_error": p.fatal_error if p is not None else None,
            "client": "java" if isinstance(p, JavaProducer) else "librdkafka",
        }
    shown_consumers = {}
    for name, actor in consumers.items():
        cons = actor.client
        shown_consumers[name] = {
            "isolation_level": cons.isolation_level if cons else actor.spec.isolation_level,
            "group_id": actor.spec.group_id,
            "topics": list(actor.spec.topics),
            "state": "CRASHED"
            if cons is None or cons.state == CRASHED
            else ("CLOSED" if cons.state == CLOSED else "RUNNING"),
            "positions": dict(sorted(cons.positions.items())) if cons else {},
            "received": {
                tp: [{"offset": o, "value": v} for o, v in recs[-log_limit:]] for tp, recs in actor.received.items()
            },
            "received_total": sum(len(recs) for recs in actor.received.values()),
            "last_error": actor.last_error,
        }
    txns = {}
    for txid, snap in transactions(cluster).items():
        txns[txid] = {
            k: snap[k]
            for k in (
                "state",
                "producer_id",
                "epoch",
                "partitions",
                "timeout_ms",
                "coordinator_partition",
                "coordinator_broker",
                "txn_start_time_ms",
                "pending_state",
            )
        }
    timeline = [_rpc_row(e) for e in c.timeline]
    first_kept = timeline[0]["seq"] if timeline else None
    # the pinned RPCs older than the last ones (those are in `timeline` already)
    pinned = [_rpc_row(e) for e in c.pinned_before(first_kept)]
    return {
        "backend": backend,
        "time_ms": c.now_ms,
        "brokers": {str(b): {"up": s.up} for b, s in c.brokers.items()},
        "partitions": partitions,
        "producers": shown_producers,
        "consumers": shown_consumers,
        "transactions": txns,
        "groups": groups(cluster, consumers),
        "group_details": group_details(cluster.groups),
        "timeline": timeline,
        "timeline_pinned": pinned,
        "unobservable": [],
        # extensions
        "transitions": {k: sorted(v) for k, v in transitions_for(kafka).items()},
        "stats": c.stats(),
    }


def _rpc_row(e: ev.Rpc) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "time_ms": e.time_ms,
        "rpc": e.rpc,
        "src": e.src,
        "dst": e.dst,
        "direction": e.direction,
        "error": e.error,
        "detail": e.detail,
    }


def user_partitions(cluster: Cluster) -> list[str]:
    return [f"{t}-{p}" for t in cluster.user_topics() for p in range(cluster.partition_count(t))]


def partition(cluster: Cluster, name: str, start: int = 0, fate: bool = False) -> dict[str, Any]:
    log = cluster.log(name)
    entries = []
    for offset, batch, j in log.entries(start):
        entry = _entry(offset, batch, j)
        if fate:
            entry["fate"] = batch.fate()
        entries.append(entry)
    return {
        "log": entries,
        "high_watermark": log.high_watermark,
        "last_stable_offset": log.last_stable_offset,
        "log_end_offset": log.log_end_offset,
    }


def _entry(offset: int, batch: Any, j: int) -> dict[str, Any]:
    if batch.control is not None:
        return {"offset": offset, "control": batch.control, "producer_id": batch.producer_id, "epoch": batch.epoch}
    entry = {
        "offset": offset,
        "key": batch.key_at(j),
        "value": batch.values[j],
        "producer_id": batch.producer_id,
        "epoch": batch.epoch,
        "sequence": batch.base_sequence + j if batch.base_sequence >= 0 else -1,
        "transactional": batch.transactional,
    }
    # a connected client's record keeps its headers (the values of a batch it sent, simserver/batches.py)
    headers_at = getattr(batch.values, "headers_at", None)
    headers = headers_at(j) if headers_at is not None else None
    if headers:
        entry["headers"] = headers
    return entry


def _consumers_received(cluster: Cluster, consumers: Mapping[str, ConsumerActor]) -> dict[str, dict[str, list[Any]]]:
    out = {}
    for name, entry in consumers.items():
        per: dict[str, list[Any]] = {
            f"{t}-{p}": [] for t in entry.spec.topics for p in range(cluster.partition_count(t))
        }
        for tp, records in entry.received.items():
            per.setdefault(tp, []).extend(v for _, v in records)
        out[name] = per
    return out


def transactions(cluster: Cluster) -> dict[str, dict[str, Any]]:
    tc = cluster.txn_coordinator
    out = {}
    for txid in tc.known_ids():
        snap = tc.snapshot(txid)
        if snap is not None:
            out[txid] = snap
    return out


def groups(cluster: Cluster, consumers: Mapping[str, ConsumerActor]) -> dict[str, dict[str, int | None]]:
    out: dict[str, dict[str, int | None]] = {}
    for entry in consumers.values():
        gid = entry.spec.group_id
        if not gid:
            continue
        per = out.setdefault(gid, {})
        for t in entry.spec.topics:
            for p in range(cluster.partition_count(t)):
                per.setdefault(f"{t}-{p}", None)
    for gid, per in out.items():
        per.update(cluster.groups.committed(gid))
        out[gid] = dict(sorted(per.items()))
    return out
