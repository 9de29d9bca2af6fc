"""A stretch of a real cluster, as the inspector saw it, written out as a scenario file ("make a scenario of this").

From one report (ClusterInspector.inspect): the partitions' log windows (data batches with producer id and epoch,
COMMIT/ABORT markers) and the transactional ids' __transaction_state timelines. What it writes:

* an actor per producer instance: a transactional id's InitProducerId starts one (epoch e; the timeline says when,
  and which earlier epoch it fenced); a plain producer (producer id -1) and an idempotent one without transactions
  are one actor each; consumers rc (read_committed) and ru (read_uncommitted) poll at the end;
* the steps: each instance's init, its transactions (begin, a produce per record, commit or abort: its own
  markers; an ABORT at a later epoch is the InitProducerId that fenced it, or the coordinator's timeout), the plain
  records; in an order that keeps every partition's offset order (a step writes its records and markers where the
  log has them) and otherwise follows the clocks (record timestamps, __transaction_state update times);
* `expect: logs:` with what the log held (values and markers), so a replay on the simulator shows whether it
  reproduces what the cluster did.

What no client can observe is not there: calls that wrote nothing (a fenced commit, a flush, a failed send), the
applications' own timing, records outside the windows read. A transaction whose records begin before the window is
replayed from the window's start; a marker whose transaction lies wholly before it is left out.

Within the loader's limits (MAX_RECORDS, MAX_ACTORS) the selection comes first: an instance whose transaction is still
open (it holds an LSO) or that a current finding names, then the instances of the selected transactional ids, then
the newest; the file's comment says what was left out and why, and its title names only the ids it holds. Notes
word epochs by difference (the replay's producer ids start at epoch 0) with the cluster's own epochs beside.
"""

from __future__ import annotations

import heapq
import itertools
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, ClusterSpec, TopicSpec
from playground.scenario import writer
from playground.scenario.model import MAX_ACTORS

MAX_RECORDS = 300  # produce steps in one file: the newest stretch is kept (the loader takes 2,000 steps, 64 KB)
MARKER_GROUP_MS = 500  # one EndTxn's markers on several partitions are written within this of each other
ABORT_SCAN_MS = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms (Kafka's default)
CONSUMERS = 2  # rc and ru
CLIENT_TIMEOUT_MS = 60_000  # transaction.timeout.ms when a client does not set it (librdkafka, Java): not written


@dataclass
class Entry:
    tp: str
    topic: str
    partition: int
    offset: int
    ts: int
    pid: int
    epoch: int
    control: str | None
    transactional: bool
    key: str | None
    value: str | None


@dataclass(eq=False)
class Instance:
    """A transactional producer instance: one epoch of a producer id, from its InitProducerId."""

    pid: int
    epoch: int
    txid: str | None
    init_ts: int | None = None
    timeout_ms: int | None = None
    fence_epoch: int | None = None  # the epoch its InitProducerId used to abort the previous instance's transaction
    units: list[Unit] = field(default_factory=list)
    name: str = ""


@dataclass(eq=False)
class Unit:
    """One transaction of an instance, over every partition it wrote to."""

    inst: Instance
    records: list[Entry] = field(default_factory=list)
    markers: list[Entry] = field(default_factory=list)
    end: str = "open"  # COMMIT | ABORT (its own), fenced, timed_out, open, unknown (marker not read)
    cause: Any = None  # fenced: the Instance whose init aborted it; timed_out: (pid, epoch) of the abort

    @property
    def first_ts(self) -> int:
        return min(e.ts for e in self.records)


@dataclass(eq=False)
class Node:
    """A step of the scenario."""

    n: int
    ts: float
    actor: Any  # Instance, or the name of a non-transactional producer, or None (clock)
    action: str
    args: dict[str, Any] = field(default_factory=dict)
    writes: list[Entry] = field(default_factory=list)  # the log entries this step puts where the log has them
    note: str = ""


def txid_names(report: Mapping[str, Any]) -> dict[int, str]:
    """producer id -> transactional id, as far as the report names them (allowed ids only)."""
    out: dict[int, str] = {}
    for part in report.get("partitions", []):
        for x in part["transactions"] + part["producers"] + part["open_transactions"]:
            if x.get("transactional_id"):
                out.setdefault(x["producer_id"], x["transactional_id"])
    for t in report.get("transactional_ids", []):
        for r in t["timeline"]:
            if r.get("producer_id", -1) >= 0:
                out.setdefault(r["producer_id"], t["transactional_id"])
    return out


def _entries(part: Mapping[str, Any]) -> list[Entry]:
    tp = f"{part['topic']}-{part['partition']}"
    return [
        Entry(
            tp,
            part["topic"],
            part["partition"],
            e["offset"],
            e["timestamp_ms"] or 0,
            e["producer_id"],
            e["producer_epoch"],
            e.get("control"),
            e["transactional"],
            e.get("key"),
            e.get("value"),
        )
        for e in part["entries"]
    ]


class _Builder:
    def __init__(self, report: Mapping[str, Any]) -> None:
        self.report = report
        self.names = txid_names(report)
        self.inst: dict[tuple[int, int], Instance] = {}
        self.timed_out: dict[tuple[int, int], dict[str, Any]] = {}  # (pid, abort epoch) -> the timeline record
        self.moments: dict[tuple[int, int], list[tuple[int, str]]] = {}  # (pid, epoch) -> (time, COMMIT | ABORT)
        self.plain: list[Entry] = []
        self.orphans: set[tuple[str, int]] = set()  # markers of transactions that lie before the window
        self.parts = [p for p in report.get("partitions", []) if p["entries"]]
        self.selected_ids = {t["transactional_id"] for t in report.get("transactional_ids", [])}
        self.current = {
            (f["evidence"].get("producer_id"), f["evidence"].get("producer_epoch"))
            for f in report.get("findings", [])
            if f["kind"] in ("lso_stall", "hanging_transaction", "long_open_transaction")
        }
        self._instances_from_timelines()
        self._units_from_logs()

    # ---- who wrote what

    def _instances_from_timelines(self) -> None:
        for t in self.report.get("transactional_ids", []):
            for r in t["timeline"]:
                key = (r.get("producer_id"), r.get("epoch"))
                if r["event"] == "init":
                    self.inst[key] = Instance(
                        key[0], key[1], t["transactional_id"], r.get("last_update_ms"), r.get("timeout_ms")
                    )
                elif r["event"] == "timed_out":
                    self.timed_out[key] = r
                what = {"commit_requested": "COMMIT", "abort_requested": "ABORT"}.get(r["event"])
                if what and r.get("last_update_ms") is not None:
                    self.moments.setdefault(key, []).append((r["last_update_ms"], what))
            for init in t["inits"]:
                fence = init.get("fence")
                i = self.inst.get((init["producer_id"], init["producer_epoch"]))
                if i is not None and fence and fence["event"] == "fenced_by_init":
                    i.fence_epoch = fence["producer_epoch"]
                    # the fence is the first attempt of this init (its retry writes Empty at the new epoch)
                    i.init_ts = min(x for x in (i.init_ts, fence.get("time_ms")) if x is not None)

    def _instance(self, pid: int, epoch: int) -> Instance:
        if (pid, epoch) not in self.inst:
            self.inst[(pid, epoch)] = Instance(pid, epoch, self.names.get(pid))
        return self.inst[(pid, epoch)]

    def _end_of(self, pid: int, epoch: int, marker_epoch: int | None, outcome: str) -> tuple[str, Any]:
        if outcome in ("open", "unknown"):
            return outcome, None
        if marker_epoch == epoch:
            return outcome, None
        fencer = next((i for i in self.inst.values() if i.pid == pid and i.fence_epoch == marker_epoch), None)
        if fencer is not None:
            return "fenced", fencer
        if (pid, marker_epoch) in self.timed_out:
            return "timed_out", (pid, marker_epoch)
        # no timeline to say which: a later instance of this producer id fenced it, else the coordinator timed it out
        later = sorted(
            (i for i in self.inst.values() if i.pid == pid and i.epoch > (marker_epoch or 0)), key=lambda i: i.epoch
        )
        if later:
            later[0].fence_epoch = marker_epoch
            return "fenced", later[0]
        return "timed_out", (pid, marker_epoch)

    def _units_from_logs(self) -> None:
        spans = []  # (instance, span, records, marker entry)
        for part in self.parts:
            by_offset = {e.offset: e for e in _entries(part)}
            for e in by_offset.values():
                if e.control is None and not e.transactional:
                    self.plain.append(e)
            for s in part["transactions"]:
                records = [by_offset[o] for o in s["data_offsets"] if o in by_offset]
                marker = by_offset.get(s["marker_offset"]) if s["marker_offset"] is not None else None
                if not records:
                    if marker is not None:
                        self.orphans.add((marker.tp, marker.offset))
                    continue
                spans.append((self._instance(s["producer_id"], s["epochs"][0]), s, records, marker))
        # transactions of an instance: one EndTxn's markers on several partitions are close in time; a fence or a
        # timeout ends the one open transaction; a transaction still open is one too
        groups: dict[tuple, Unit] = {}
        own: list[tuple[Instance, str, Entry, list[Entry]]] = []
        for inst, s, records, marker in spans:
            end, cause = self._end_of(inst.pid, inst.epoch, s["marker_epoch"], s["outcome"])
            if marker is None and end not in ("open", "unknown"):
                end, cause = "unknown", None
            if end in ("COMMIT", "ABORT"):
                assert marker is not None  # a marker-less span ended "unknown" above
                own.append((inst, end, marker, records))
                continue
            key = (
                (id(inst), end, id(cause) if end == "fenced" else cause) if end != "unknown" else (id(inst), end, id(s))
            )
            unit = groups.setdefault(key, Unit(inst, end=end, cause=cause))
            unit.records += records
            if marker is not None:
                unit.markers.append(marker)
        for u in groups.values():
            u.inst.units.append(u)
        own.sort(key=lambda x: (x[2].ts, x[2].tp))
        current: dict[int, Unit] = {}
        for inst, end, marker, records in own:
            last = current.get(id(inst))
            if (
                last is None
                or last.end != end
                or marker.ts - last.markers[0].ts > MARKER_GROUP_MS
                or marker.tp in {m.tp for m in last.markers}
            ):
                last = current[id(inst)] = Unit(inst, end=end)
                inst.units.append(last)
            last.records += records
            last.markers.append(marker)
        for inst in self.inst.values():
            for u in inst.units:
                u.records.sort(key=lambda e: (e.ts, e.tp, e.offset))
            inst.units.sort(key=lambda u: u.first_ts)

    # ---- what is kept: the newest stretch, within the loader's limits

    def moment(self, inst: Instance, what: str, before: float, default: float) -> float:
        """When the coordinator got an EndTxn of this instance (its PrepareCommit/PrepareAbort record), the latest one
        at or before `before`: a truer clock for the step than its markers' (they are written after EndTxn returns,
        and the application may have moved on meanwhile)."""
        times = [t for t, w in self.moments.get((inst.pid, inst.epoch), []) if w == what and t <= before]
        return max(times) if times else default

    def priority(self, inst: Instance) -> int:
        """What the selection points at comes first: 0, an instance whose transaction is still open (it holds an
        LSO) or that a current finding names; 1, an instance of a transactional id the viewer selected; 2, the rest."""
        if any(u.end == "open" for u in inst.units) or (inst.pid, inst.epoch) in self.current:
            return 0
        return 1 if inst.txid in self.selected_ids else 2

    def keep(self) -> tuple[list[Instance], list[Entry], list[str]]:
        dropped: list[str] = []
        plain = sorted(self.plain, key=lambda e: (e.ts, e.tp, e.offset))
        insts = [i for i in self.inst.values() if i.units]
        ts = sorted([e.ts for e in plain] + [e.ts for i in insts for u in i.units for e in u.records])
        if len(ts) > MAX_RECORDS:
            cut = ts[-MAX_RECORDS]
            for i in insts:
                # the newest stretch; an open transaction stays whenever it began (it is what holds the LSO)
                i.units = [u for u in i.units if u.first_ts >= cut or (self.priority(i) == 0 and u.end == "open")]
            plain = [e for e in plain if e.ts >= cut]
            dropped.append(f"records before {_utc(cut)} (at most {MAX_RECORDS} records in a scenario)")
        room = (
            MAX_ACTORS
            - CONSUMERS
            - (1 if any(e.pid < 0 for e in plain) else 0)
            - (1 if any(e.pid >= 0 for e in plain) else 0)
        )

        def start(i: Instance) -> float:
            return i.init_ts or i.units[0].first_ts

        insts = sorted((i for i in insts if i.units), key=lambda i: (start(i), i.pid, i.epoch))
        if len(insts) > room:
            # the selection first (open transactions, then the selected ids), newest first within each; then the newest
            ranked = sorted(insts, key=lambda i: (self.priority(i), -start(i)))
            kept, left = ranked[:room], ranked[room:]
            insts = sorted(kept, key=lambda i: (start(i), i.pid, i.epoch))
            names = ", ".join(
                f"{i.txid or f'producer id {i.pid}'} epoch {i.epoch} ({_utc(start(i))})"
                for i in sorted(left, key=start)
            )
            dropped.append(
                f"{len(left)} producer instance(s), a scenario has at most {MAX_ACTORS} actors; kept first: those "
                f"with a transaction still open or named by a current finding, then those of the selected "
                f"transactional ids, then the newest. Left out: {names}"
            )
        # an init that fenced a transaction kept is kept with it, even when it wrote nothing itself (if there is
        # room; if not, that transaction's end is left out)
        for i in list(insts):
            for u in i.units:
                if u.end == "fenced" and u.cause not in insts:
                    if len(insts) < room:
                        insts.append(u.cause)
                    else:
                        u.end, u.cause, u.markers = "unknown", None, []
                        dropped.append(
                            f"the InitProducerId that fenced {i.txid} epoch {i.epoch} (no room for its instance: its "
                            "ABORT markers are not replayed)"
                        )
        return insts, plain, dropped


def _utc(ms: int | float | None) -> str:
    if ms is None:
        return "?"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _order(nodes: list[Node], edges: Iterable[tuple[Node, Node]]) -> list[Node]:
    """Nodes in an order that keeps every edge (a before b), earliest clock first among those free to go; a cycle
    (clocks and offsets that disagree) falls back to the clocks."""
    after: dict[int, list[Node]] = {n.n: [] for n in nodes}
    needs = {n.n: 0 for n in nodes}
    for a, b in edges:
        if a is not b:
            after[a.n].append(b)
            needs[b.n] += 1
    ready = [(n.ts, n.n, n) for n in nodes if needs[n.n] == 0]
    heapq.heapify(ready)
    out: list[Node] = []
    while ready:
        _ts, _n, node = heapq.heappop(ready)
        out.append(node)
        for b in after[node.n]:
            needs[b.n] -= 1
            if needs[b.n] == 0:
                heapq.heappush(ready, (b.ts, b.n, b))
    if len(out) < len(nodes):
        placed = {n.n for n in out}
        out += sorted((n for n in nodes if n.n not in placed), key=lambda n: (n.ts, n.n))
    return out


def _steps(insts: list[Instance], plain: list[Entry], b: _Builder) -> list[Node]:
    nodes: list[Node] = []
    edges: list[tuple[Node, Node]] = []

    def node(ts: float, actor: Any, action: str, **kw: Any) -> Node:
        nodes.append(Node(len(nodes), ts, actor, action, **kw))
        return nodes[-1]

    def produce(actor: Any, e: Entry) -> Node:
        args = {"topic": e.topic, "partition": e.partition}
        if e.key is not None:
            args["key"] = e.key
        args["value"] = e.value if e.value is not None else ""
        return node(e.ts, actor, "produce", args=args, writes=[e])

    init_of: dict[int, Node] = {}
    advance_of: dict[Any, Node] = {}
    for inst in insts:
        first = min((u.first_ts for u in inst.units), default=None)
        init_ts = inst.init_ts if inst.init_ts is not None else (first or 0) - 0.5
        init_of[id(inst)] = node(init_ts, inst, "init_transactions")
    for inst in insts:
        chain = [init_of[id(inst)]]
        for u in inst.units:
            # begin_transaction is the client's own (no request): just before its first record was created
            chain.append(node(u.first_ts - 0.25, inst, "begin_transaction"))
            chain += [produce(inst, e) for e in u.records]
            if u.end in ("COMMIT", "ABORT"):
                action = "commit_transaction" if u.end == "COMMIT" else "abort_transaction"
                first_marker = min(m.ts for m in u.markers)
                when = max(b.moment(inst, u.end, first_marker, first_marker), *(e.ts for e in u.records))
                chain.append(node(when, inst, action, writes=list(u.markers)))
            elif u.end == "fenced" and u.cause is not None:
                init_of[id(u.cause)].writes += u.markers
            elif u.end == "timed_out":
                adv = advance_of.get(u.cause)
                if adv is None:
                    timeout = (b.timed_out.get(u.cause) or {}).get("timeout_ms") or inst.timeout_ms or 60_000
                    inst.timeout_ms = timeout
                    adv = advance_of[u.cause] = node(
                        min((m.ts for m in u.markers), default=u.first_ts),
                        None,
                        "advance",
                        args={"ms": timeout + ABORT_SCAN_MS},
                    )
                adv.writes += u.markers
                edges.append((chain[-1], adv))
        edges += list(itertools.pairwise(chain))
    # instances of one transactional id follow each other: an instance writes nothing once the next one has started
    by_txid: dict[Any, list[Instance]] = {}
    for inst in insts:
        by_txid.setdefault(inst.txid or inst.pid, []).append(inst)
    for group in by_txid.values():
        group.sort(key=lambda i: (i.init_ts or 0, i.pid, i.epoch))
        for earlier, later in itertools.pairwise(group):
            last = [n for n in nodes if n.actor is earlier][-1]
            edges.append((last, init_of[id(later)]))
    for name in ("plain", "idem"):
        mine = [produce(name, e) for e in plain if (e.pid < 0) == (name == "plain")]
        edges += list(itertools.pairwise(mine))
    # every partition's log in offset order: the step that wrote each entry, one after the other
    by_tp: dict[str, list[tuple[int, Node]]] = {}
    for n in nodes:
        for e in n.writes:
            by_tp.setdefault(e.tp, []).append((e.offset, n))
    for writes in by_tp.values():
        writes.sort(key=lambda x: x[0])
        edges += [(a, b) for (_o1, a), (_o2, b) in itertools.pairwise(writes)]
    return _order(nodes, edges)


def _notes(order: list[Node], insts: list[Instance]) -> None:
    """A sentence where something happens that the file's reader should not miss."""
    open_on: dict[str, Instance] = {}
    warned: set[str] = set()
    for n in order:
        if n.action == "init_transactions" and n.writes:
            fenced = sorted({u.inst.name for i in insts for u in i.units if u.end == "fenced" and u.cause is n.actor})
            tps = ", ".join(sorted({e.tp for e in n.writes}))
            who = " and ".join(fenced)
            old = min((i.epoch for i in insts if i.name in fenced), default=None)
            cluster = (
                f" (on the cluster: epoch {old}, ABORT at {n.actor.fence_epoch}, then {n.actor.epoch})"
                if old is not None
                else ""
            )
            # the replay's epochs start at 0, the cluster's where that producer id had got to: say it by difference
            n.note = (
                f"{n.actor.name} starts with the same transactional.id {n.actor.txid}: its InitProducerId aborts "
                f"{who}'s open transaction with an ABORT at {who}'s epoch + 1 on {tps}, and gets epoch + 2{cluster}. "
                f"{who} is fenced."
            )
        elif n.action == "advance":
            n.note = (
                f"The coordinator aborts the transaction that outlived its transaction.timeout.ms (ABORT at a bumped "
                f"epoch on {', '.join(sorted({e.tp for e in n.writes}))}): the clock jumps past it."
            )
        elif n.action == "produce" and isinstance(n.actor, str):
            tp = n.writes[0].tp
            holder = open_on.get(tp)
            if holder is not None and tp not in warned:
                warned.add(tp)
                n.note = (
                    f"A record without a transaction lands on {tp} inside {holder.name}'s open transaction: "
                    "read_committed consumers get it only once that transaction ends."
                )
        for e in n.writes:
            if isinstance(n.actor, Instance) and e.control is None:
                open_on[e.tp] = n.actor
            elif e.control is not None:
                open_on.pop(e.tp, None)


def scenario_text(report: Mapping[str, Any]) -> str:
    """The scenario file's text for what the report shows (parses with playground.scenario.check_text)."""
    b = _Builder(report)
    insts, plain, dropped = b.keep()
    kept_ids = sorted({i.txid for i in insts if i.txid})
    order = _steps(insts, plain, b)
    # actors named in the order they first act: A, B, C... for instances
    letters = iter("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    for n in order:
        if isinstance(n.actor, Instance) and not n.actor.name:
            n.actor.name = next(letters)
    for inst in insts:
        inst.name = inst.name or next(letters)
    _notes(order, insts)

    kept = {(e.tp, e.offset) for n in order for e in n.writes}
    parts = {}
    for part in b.parts:
        log = [e for e in _entries(part) if (e.tp, e.offset) in kept]
        if log:
            parts[log[0].tp] = {"log": [{"control": e.control} if e.control else {"value": e.value or ""} for e in log]}
    topics: dict[str, int] = {}
    for part in report.get("partitions", []):
        topics[part["topic"]] = min(64, max(topics.get(part["topic"], 1), part["partition"] + 1))

    actors = [
        ActorSpec(
            i.name,
            PRODUCER,
            {
                "transactional.id": i.txid or f"producer-id-{i.pid}",
                **({"transaction.timeout.ms": i.timeout_ms} if i.timeout_ms not in (None, CLIENT_TIMEOUT_MS) else {}),
            },
        )
        for i in sorted(insts, key=lambda i: i.name)
    ]
    if any(e.pid < 0 for e in plain):
        actors.append(ActorSpec("plain", PRODUCER, {"enable.idempotence": False}))
    if any(e.pid >= 0 for e in plain):
        actors.append(ActorSpec("idem", PRODUCER, {}))
    if topics:
        actors += [
            ActorSpec("rc", CONSUMER, {"isolation.level": "read_committed"}, tuple(topics)),
            ActorSpec("ru", CONSUMER, {"isolation.level": "read_uncommitted"}, tuple(topics)),
        ]

    commands: list[dict[str, Any]] = []
    for n in order:
        if n.note:
            commands.append({"step": {"note": {"en": n.note}}})
        label = (
            f"clock.{n.action}"
            if n.actor is None
            else f"{n.actor.name if isinstance(n.actor, Instance) else n.actor}.{n.action}"
        )
        commands.append({"step": {label: n.args} if n.args else label, "outcome": "ok"})
    still_open = [(i.name, sorted({e.tp for e in u.records})) for i in insts for u in i.units if u.end == "open"]
    for name, tps in still_open:
        commands.append(
            {
                "step": {
                    "note": {
                        "en": f"{name}'s transaction was still open when the inspector looked: it "
                        f"holds the LSO of {', '.join(tps)}."
                    }
                }
            }
        )
    if topics:
        commands += [{"step": "rc.poll", "outcome": "ok"}, {"step": "ru.poll", "outcome": "ok"}]

    return writer.write(
        scenario_id="observed-"
        + datetime.fromtimestamp(report.get("fetched_at_ms", 0) / 1000, tz=UTC).strftime("%Y%m%d-%H%M%S"),
        title={"en": "Observed on the cluster: " + ", ".join(kept_ids or list(topics) or ["nothing"])},
        summary={"en": _summary(report, dropped)},
        tags=["observed", *sorted({f["kind"].replace("_", "-") for f in report.get("findings", [])})],
        seed=0,
        cluster=ClusterSpec(
            brokers=min(9, max(1, len(report.get("cluster", {}).get("brokers", [])) or 3)),
            topics=tuple(TopicSpec(t, n) for t, n in topics.items()),
        ),
        actors=actors,
        commands=commands,
        observation={"partitions": parts},
        comment=_comment(report, insts, plain, dropped),
    )


def _summary(report: Mapping[str, Any], dropped: list[str]) -> str:
    counts: dict[tuple[str, str], int] = {}
    for f in report.get("findings", []):
        counts[(f["kind"], f["subject"])] = counts.get((f["kind"], f["subject"]), 0) + 1
    found = [f"{k} on {s}" + (f" ({n}x)" if n > 1 else "") for (k, s), n in counts.items()]
    text = "What the inspector read on a real cluster, replayed step by step."
    text += f" Findings: {'; '.join(found)}." if found else ""
    return text + (" Some of what was read is left out (see the comment at the top)." if dropped else "")


def _comment(report: Mapping[str, Any], insts: list[Instance], plain: list[Entry], dropped: list[str]) -> str:
    lines = [
        f"Made by the inspector (/inspect/) from the Kafka cluster at {report.get('cluster', {}).get('bootstrap', '?')}, "
        f"read at {_utc(report.get('fetched_at_ms'))}."
    ]
    for part in report.get("partitions", []):
        if part["windows"]:
            read = ", ".join(f"[{w['start']}, {w['end']})" for w in part["windows"])
            lines.append(
                f"{part['topic']}-{part['partition']}: offsets {read} read; LSO {part['last_stable_offset']}, "
                f"HW {part['high_watermark']} (the replay starts its own log at offset 0)."
            )
    for i in sorted(insts, key=lambda i: i.name):
        lines.append(f"{i.name}: transactional.id {i.txid or '(not shown)'}, producer id {i.pid}, epoch {i.epoch}.")
    pids = sorted({e.pid for e in plain})
    if any(p < 0 for p in pids):
        lines.append("plain: records with producer id -1 (enable.idempotence=false).")
    if any(p >= 0 for p in pids):
        lines.append(
            f"idem: records of idempotent producers without a transaction (producer ids {', '.join(str(p) for p in pids if p >= 0)})."
        )
    for d in dropped:
        lines += textwrap.wrap(f"Left out: {d}.", 110, subsequent_indent="  ")
    lines.append(
        "Not observable, so not here: calls that wrote nothing (a fenced commit, a flush, a send that failed),"
    )
    lines.append(
        "the applications' own timing, and records outside the windows read. Values are shown as the inspector"
    )
    lines.append("shows them (INSPECTOR_VALUE_MAX_CHARS, INSPECTOR_HASH_VALUES).")
    return "\n".join(lines)
