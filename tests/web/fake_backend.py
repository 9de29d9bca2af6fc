"""A small stand-in backend for the web layer's tests: it honours the `Backend` contract's shapes (view(), apply
outcomes, add_actor), with just enough transaction behaviour (epochs, fencing, markers, LSO) to draw every panel.

It is NOT the simulator and makes no claim to be Kafka: the web tests use it so that they test the web layer.
Registered under the backend name "fake" by tests/web/conftest.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.engine.backend import OK, Backend, BackendError
from playground.engine.spec import CONSUMER, DEFAULT_PROFILE, PRODUCER, ActorSpec, ClusterSpec, Profile, Step


class FakeBackend(Backend):
    name = "fake"

    def __init__(
        self,
        cluster: ClusterSpec,
        actors: Mapping[str, ActorSpec],
        *,
        seed: int = 0,
        on_event=None,
        profile: Profile = DEFAULT_PROFILE,
    ) -> None:
        self.profile = profile
        self.cluster = cluster
        self.time_ms = 0
        self.next_pid = 1000
        self.logs: dict[str, list[dict[str, Any]]] = {
            f"{t.name}-{p}": [] for t in cluster.topics for p in range(t.partitions)
        }
        self.brokers = {str(b): {"up": True} for b in range(1, cluster.brokers + 1)}
        self.txns: dict[str, dict[str, Any]] = {}
        self.producers: dict[str, dict[str, Any]] = {}
        self.consumers: dict[str, dict[str, Any]] = {}
        self.timeline: list[dict[str, Any]] = []
        self.rr = 0
        for spec in actors.values():
            self.add_actor(spec)

    # -- actors
    def fenced_actors(self) -> frozenset[str]:
        return frozenset(n for n, p in self.producers.items() if p["fenced"])

    def add_actor(self, actor: ActorSpec) -> None:
        if actor.kind == PRODUCER:
            self.producers[actor.name] = {
                "spec": actor,
                "producer_id": None,
                "epoch": None,
                "state": "INIT",
                "last_error": None,
                "fenced": False,
                "seq": {},
                "open": [],
                "counters": {"app_sent_ok": 0, "landed": 0, "read_committed_received": 0},
            }
        elif actor.kind == CONSUMER:
            parts = [tp for tp in self.logs if tp.rpartition("-")[0] in actor.topics]
            self.consumers[actor.name] = {
                "spec": actor,
                "state": "RUNNING",
                "positions": dict.fromkeys(parts, 0),
                "received": {tp: [] for tp in parts},
            }
        else:
            raise BackendError(f"unknown kind {actor.kind}")

    def _rpc(self, rpc: str, src: str, dst: str, detail: str = "", error: str | None = None) -> None:
        self.time_ms += 1
        for direction, a, b, err in (("request", src, dst, None), ("response", dst, src, error)):
            self.timeline.append(
                {
                    "seq": len(self.timeline),
                    "time_ms": self.time_ms,
                    "rpc": rpc,
                    "src": a,
                    "dst": b,
                    "direction": direction,
                    "error": err,
                    "detail": detail,
                }
            )

    # -- partitions
    def _lso(self, tp: str) -> int:
        log = self.logs[tp]
        for e in log:
            if e.get("fate") == "open":
                return e["offset"]
        return len(log)

    def apply(self, step: Step) -> str:
        if step.is_note:
            return OK
        if step.actor == "clock":
            self.time_ms += int(step.args.get("ms", 0))
            return OK
        if step.actor == "broker":
            self.brokers[str(step.args["broker"])]["up"] = step.action == "start"
            return OK
        if step.actor in self.producers:
            return self._producer(self.producers[step.actor], step)
        if step.actor in self.consumers:
            return self._consumer(self.consumers[step.actor], step)
        raise BackendError(f"no actor {step.actor}")

    def _fail(self, p: dict, op: str, error: str, detail: str = "") -> str:
        p["last_error"] = {"op": op, "error": error, "detail": detail}
        if error == "_FENCED":
            p["fenced"] = True
            p["state"] = "FATAL_ERROR"
        return error

    def _producer(self, p: dict, step: Step) -> str:
        spec: ActorSpec = p["spec"]
        txid = spec.transactional_id
        a = step.action
        if p["state"] in ("CRASHED",) and a != "restart":
            return self._fail(p, a, "_STATE", "crashed")
        if p["fenced"] and a not in ("restart", "crash", "close"):
            return self._fail(p, a, "_FENCED", "fenced")
        if a == "init_transactions":
            if not txid:
                return self._fail(p, a, "_NOT_CONFIGURED", "no transactional.id")
            t = self.txns.get(txid)
            if t is None:
                t = self.txns[txid] = {
                    "state": "Empty",
                    "producer_id": self.next_pid,
                    "epoch": 0,
                    "partitions": [],
                    "timeout_ms": 60000,
                    "coordinator_partition": 7,
                    "coordinator_broker": 2,
                    "txn_start_time_ms": None,
                    "pending_state": None,
                }
                self.next_pid += 1
            else:
                if t["state"] == "Ongoing":
                    self._end(txid, t, commit=False)
                    t["epoch"] += 1
                t["epoch"] += 1
                t["state"] = "Empty"
                for other in self.producers.values():
                    if other is not p and other["spec"].transactional_id == txid and other["epoch"] is not None:
                        other["stale"] = True
            self._rpc("InitProducerId", step.actor, "coordinator(b2)", txid)
            p.update(producer_id=t["producer_id"], epoch=t["epoch"], state="READY", stale=False)
            return OK
        if a == "begin_transaction":
            if p["state"] != "READY":
                return self._fail(p, a, "_STATE", "not ready")
            p["state"] = "IN_TRANSACTION"
            return OK
        if a == "produce":
            tp = f"{step.args['topic']}-{step.args.get('partition', 0)}"
            if txid and p["state"] != "IN_TRANSACTION":
                return self._fail(p, a, "_STATE", "no transaction")
            if p.get("stale"):
                self._rpc("Produce", step.actor, "leader " + tp + "(b1)", error="INVALID_PRODUCER_EPOCH")
                return self._fail(p, a, "INVALID_PRODUCER_EPOCH", "stale epoch")
            if p["producer_id"] is None:
                p["producer_id"], p["epoch"] = self.next_pid, 0
                self.next_pid += 1
                p["state"] = "READY"
            log = self.logs[tp]
            seq = p["seq"].get(tp, 0)
            p["seq"][tp] = seq + 1
            entry = {
                "offset": len(log),
                "key": step.args.get("key"),
                "value": step.args.get("value"),
                "producer_id": p["producer_id"],
                "epoch": p["epoch"],
                "sequence": seq,
                "transactional": bool(txid),
                "fate": "open" if txid else "plain",
                "actor": step.actor,
            }
            log.append(entry)
            if txid:
                t = self.txns[txid]
                if tp not in t["partitions"]:
                    t["partitions"].append(tp)
                    self._rpc("AddPartitionsToTxn", step.actor, "coordinator(b2)", tp)
                t["state"] = "Ongoing"
                t["txn_start_time_ms"] = t["txn_start_time_ms"] or self.time_ms
                p["open"].append(entry)
            self._rpc("Produce", step.actor, f"leader {tp}(b1)", f"offset {entry['offset']}")
            p["counters"]["app_sent_ok"] += 1
            p["counters"]["landed"] += 1
            return OK
        if a in ("commit_transaction", "abort_transaction"):
            if p["state"] != "IN_TRANSACTION":
                return self._fail(p, a, "_STATE", "no transaction")
            if p.get("stale"):
                self._rpc(
                    "EndTxn",
                    step.actor,
                    "coordinator(b2)",
                    "commit" if a.startswith("commit") else "abort",
                    "PRODUCER_FENCED",
                )
                return self._fail(p, a, "_FENCED", "EndTxn: PRODUCER_FENCED")
            self._end(txid, self.txns[txid], commit=a == "commit_transaction")
            p["state"] = "READY"
            return OK
        if a in ("flush", "send_offsets_to_transaction"):
            return OK
        if a == "crash":
            p["state"] = "CRASHED"
            return OK
        if a == "restart":
            p.update(state="INIT", fenced=False, producer_id=None, epoch=None, last_error=None)
            return OK
        if a == "close":
            p["state"] = "CLOSED"
            return OK
        return OK

    def _end(self, txid: str, t: dict, commit: bool) -> None:
        for tp in t["partitions"]:
            log = self.logs[tp]
            for e in log:
                if e.get("fate") == "open" and e["producer_id"] == t["producer_id"]:
                    e["fate"] = "committed" if commit else "aborted"
            log.append(
                {
                    "offset": len(log),
                    "control": "COMMIT" if commit else "ABORT",
                    "producer_id": t["producer_id"],
                    "epoch": t["epoch"],
                    "fate": "marker",
                }
            )
            self._rpc("WriteTxnMarkers", "coordinator(b2)", f"leader {tp}(b1)", "COMMIT" if commit else "ABORT")
        self._rpc("EndTxn", txid, "coordinator(b2)", "commit" if commit else "abort")
        t.update(state="CompleteCommit" if commit else "CompleteAbort", partitions=[], txn_start_time_ms=None)
        for p in self.producers.values():
            p["open"] = []

    def _consumer(self, c: dict, step: Step) -> str:
        spec: ActorSpec = c["spec"]
        if step.action == "poll":
            rc = spec.isolation_level == "read_committed"
            for tp, pos in c["positions"].items():
                log = self.logs[tp]
                end = self._lso(tp) if rc else len(log)
                for e in log[pos:end]:
                    if "control" in e or (rc and e["fate"] == "aborted"):
                        continue
                    c["received"][tp].append({"offset": e["offset"], "value": e["value"]})
                    if rc and e.get("actor") in self.producers:
                        self.producers[e["actor"]]["counters"]["read_committed_received"] += 1
                c["positions"][tp] = max(pos, end)
            self._rpc("Fetch", step.actor, "leader orders-0(b1)", spec.isolation_level)
            return OK
        if step.action == "crash":
            c["state"] = "CRASHED"
        if step.action == "restart":
            c["state"] = "RUNNING"
        return OK

    # -- reading
    def observe(self) -> dict[str, Any]:
        v = self.view()
        return {k: v[k] for k in ("partitions", "transactions")}

    def view(self, log_limit: int = 200) -> dict[str, Any]:
        parts = {}
        for tp, log in self.logs.items():
            topic, _, n = tp.rpartition("-")
            window = log[-log_limit:] if log_limit else []
            parts[tp] = {
                "topic": topic,
                "partition": int(n),
                "leader": 1,
                "log_start_offset": 0,
                "window_start": window[0]["offset"] if window else len(log),
                "log": [{k: v for k, v in e.items() if k != "actor"} for e in window],
                "high_watermark": len(log),
                "last_stable_offset": self._lso(tp),
                "log_end_offset": len(log),
            }
        return {
            "backend": "fake",
            "time_ms": self.time_ms,
            "brokers": self.brokers,
            "partitions": parts,
            "producers": {
                n: {k: p[k] for k in ("producer_id", "epoch", "state", "last_error", "fenced", "counters")}
                | {"transactional_id": p["spec"].transactional_id}
                for n, p in self.producers.items()
            },
            "consumers": {
                n: {
                    "isolation_level": c["spec"].isolation_level,
                    "group_id": c["spec"].group_id,
                    "topics": list(c["spec"].topics),
                    "state": c["state"],
                    "positions": dict(c["positions"]),
                    "received": {tp: list(r) for tp, r in c["received"].items()},
                }
                for n, c in self.consumers.items()
            },
            "transactions": {k: dict(v) for k, v in self.txns.items()},
            "groups": {},
            "timeline": self.timeline[-200:],
            "unobservable": [],
        }
