"""The anomaly checker: over a session's (or a scenario run's) whole history, every place where what the
application was told, what Kafka holds, what consumers got and what the database says do not fit together.
In the style of Jepsen's checkers: each finding names the rule it breaks, the steps and records involved, and
Elle's anomaly name where one applies.

A write is judged once its outcome is known to the application: a plain send when produce() (send()) returns; a
send in a transaction when that transaction ends: commit_transaction() returned ok (the application believes it),
or it returned an error, or a produce() in it did (the application was told it failed), or the application aborted
it, or its producer died or was closed (nobody is left to believe anything). Until then it is not judged: a record a
fence aborted before its producer commits is not lost yet, the commit will tell the application.

Rules:
- `lost-write` (lost update): the application was told a send succeeded (a plain send's produce() returned ok,
  awaited or not; or its transaction's commit returned ok), and read_committed will never deliver it: its record was
  aborted or never landed (a record of a transaction still open is not counted: it may yet commit).
- `aborted-told`: sends of a transaction that was aborted (or never landed) and the application was told so (its
  commit or a produce() in it returned an error): not lost, the application knows; the finding says at which step.
- `failed-write-visible`: a send the application was told failed, or a send of a transaction it aborted itself
  (also one delivered late by the network, `net.late_write`), yet its record was committed.
- `duplicate`: a consumer got the same record twice (redelivered after a crash or a seek), or the same value from
  two records (the producer wrote it twice and both were committed). Consumers that feed a producer (`from:`,
  `send_offsets_to_transaction`, or reading a declared pipeline's input) are a transform's input, re-read on
  recovery by design: their output is checked. With a declared pipeline (`pipeline: {from, to, by}`), also an input
  whose output read_committed delivers more than once (processed twice), however often the input was fetched.
- `lost-input` (with a declared pipeline): an input record whose offset a transform committed (in a transaction, or
  by a plain offset commit) while no output for it is delivered: the transform moved past it without processing it
  (the fenced instance that skipped the rest of its poll, and the next transaction committed past it).
- `aborted-read` (G1a): a read_committed consumer got a record of an aborted transaction.
- `undecided-read` (G1b): a read_committed consumer got a record at or past the last stable offset of the moment
  it read: data of a transaction not decided yet (it overtook the LSO).
- `divergence`: the scenario's reconciliation query shows a row with a failed check (the database and Kafka
  disagree: an order paid and never delivered, stock deducted and the order never sent).

The aborted and undecided reads must never happen on a correct cluster: they check the simulator (and a real
cluster) too.

`Checker` is incremental: a session feeds it the commands and the log entries it has not seen yet, and only the
findings whose records or sends changed are worked out again, so an update costs the same at command 10 and at
10,000 (a declared pipeline's too: scenario/pipelines.py judges again only the keys a change concerns).
`check(history)` runs one over a whole history. Each finding carries a sentence id (`kind`) and its parameters:
`text` is the English sentence (the command line's); the web layer says the same in the viewer's language.
Pure: no Django; the history is plain data (`History`).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import Any, NotRequired, TypedDict, cast

from playground.engine.backend import Backend
from playground.engine.spec import Step
from playground.engine.values import identity
from playground.scenario.model import Pipeline, Scenario
from playground.scenario.pipelines import Pipes

OK = "ok"
RULES = (
    "lost-write",
    "lost-input",
    "aborted-told",
    "failed-write-visible",
    "duplicate",
    "aborted-read",
    "undecided-read",
    "divergence",
)
ELLE = {"lost-write": "lost update", "aborted-read": "G1a", "undecided-read": "G1b"}
# What the application was told, not a fault of Kafka's or the application's bookkeeping: shown, not alarmed.
NOTICES = frozenset({"aborted-told"})
LISTED_MAX = 12  # records (or values) a finding names; the rest are counted
JAVA = "java"


@dataclass(frozen=True)
class Finding:
    rule: str
    kind: str  # which sentence (SENTENCES) says it
    params: Mapping[str, Any] = field(default_factory=dict)  # the sentence's values, plain data
    steps: tuple[int, ...] = ()  # 0-based: positions among a session's commands, or a scenario run's step indexes
    records: tuple[str, ...] = ()  # "orders-0@3"

    @property
    def anomaly(self) -> str | None:
        return ELLE.get(self.rule)

    @property
    def notice(self) -> bool:
        return self.rule in NOTICES

    @property
    def text(self) -> str:
        return english(self)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "anomaly": self.anomaly,
            "notice": self.notice,
            "kind": self.kind,
            "params": dict(self.params),
            "text": self.text,
            "steps": list(self.steps),
            "records": list(self.records),
        }

    def __str__(self) -> str:
        where = f" (steps {', '.join(str(s) for s in self.steps)})" if self.steps else ""
        name = f" [{self.anomaly}]" if self.anomaly else ""
        return f"{self.rule}{name}{where}: {self.text}"


# ------------------------------------------------------------------------------------------------- sentences
# {placeholders} are filled by `english` (and by the web layer, in the viewer's language, from the same params).
SENTENCES = {
    "lost": "{actor} was told its send of {value} to {topic} succeeded ({said}), but read_committed does not "
    "deliver it: {where}",
    "aborted_told": "{actor}'s {sends} to {topics} {were} aborted, and the application was told at step {k} "
    "({op}): {where}",
    "told_failed_visible": "{actor} was told its send of {value} failed ({outcome}), yet it was committed at {records}",
    "aborted_visible": "{actor} aborted the transaction its send of {value} belonged to, yet it was committed at "
    "{records}",
    "aborted_read": "{actor} (read_committed) got {value} at {record}, a record of an aborted transaction",
    "undecided_read": "{actor} (read_committed) got {record} while the last stable offset was {lso}: data of an "
    "undecided transaction",
    "redelivered": "{actor} got {value} at {record} {times} times (redelivered: its position went back, after a "
    "crash or a seek)",
    "written_twice": "{actor} got {value} from {count} records of {topic} ({records}): it was written and committed "
    "more than once",
    "processed_twice": "{input} of {source} was processed {count} times: read_committed delivers its output {records}",
    "input_lost": "{actor} committed {consumer}'s offsets past {inputs} of {source} at step {k} ({how}), yet no output "
    "of theirs to {sink} is delivered: the transform skipped them",
    "divergence": "the reconciliation's row {row} fails {failed}: the database and Kafka disagree",
}
# How the application was told (the client's own names: librdkafka's produce() and commit_transaction(), the Java
# client's send(), Future.get() and commitTransaction()).
SAID = {
    "produce_ok": "produce() returned ok",
    "produce_commit_ok": "produce() returned ok, and commit_transaction() returned ok",
    "send": "send() returned",
    "send_get": "send().get() returned",
    "send_commit": "send() returned, and commitTransaction() returned",
    "send_get_commit": "send().get() returned, and commitTransaction() returned",
}
OPS = {
    "commit": "commit_transaction() returned {outcome}",
    "produce": "produce() returned {outcome}",
    "commit_java": "commitTransaction() threw {outcome}",
    "produce_java": "send() threw {outcome}",
    "produce_get_java": "send().get() threw {outcome}",
    "fenced": "its client raised the fatal error {outcome}",
    "fenced_java": "its client threw {outcome}",
}
HOW = {"txn": "in its transaction, with send_offsets_to_transaction", "commit": "an offset commit"}
FATES = {"aborted": "aborted", "open": "open", "committed": "committed", "plain": "plain"}
NOT_IN_LOG = "it is in no partition's log"


def listed(items: Sequence[Any], more: int = 0) -> str:
    text = ", ".join(str(i) for i in items)
    return f"{text} and {more} more" if more else text


def where_text(where: Sequence[Sequence[str]], more: int = 0) -> str:
    """[[record, fate], ...] as "orders-0@0 (aborted), ..." (empty: the record is in no partition's log)."""
    if not where:
        return NOT_IN_LOG
    return listed([f"{r} ({FATES.get(f, f)})" for r, f in where], more)


def english(f: Finding) -> str:
    p = dict(f.params)
    if "where" in p:
        p["where"] = where_text(p["where"], p.get("where_more", 0))
    if "records" in p:
        p["records"] = listed(p["records"], p.get("records_more", 0))
    if "said" in p:
        p["said"] = SAID[p["said"]]
    if "op" in p:
        p["op"] = OPS[p["op"]].format(outcome=p["outcome"])
    if f.kind == "aborted_told":
        n = len(p["values"])
        p["sends"] = ("send of " if n == 1 else "sends of ") + listed(p["values"], p.get("values_more", 0))
        p["were"] = "was" if n == 1 else "were"
        p["topics"] = ", ".join(p["topics"])
    if f.kind == "divergence":
        p["failed"] = ", ".join(p["failed"])
    if f.kind == "input_lost":
        p["inputs"] = listed(p["inputs"], p.get("inputs_more", 0))
        p["how"] = HOW[p["how"]]
    return SENTENCES[f.kind].format(**p)


# --------------------------------------------------------------------------------------------------- history
class Reads(TypedDict, total=False):
    """What a poll returned, kept with its step (absent: not a poll, or it returned nothing)."""

    read: list[list[Any]]  # [[tp, offset], ...]: lists, as a session's stored log gives them back
    lso: dict[str, int]  # tp -> last stable offset when the poll returned (when the backend can tell)


class HistoryStep(TypedDict):
    """One step of a history: a command of a session's log or a step of a scenario run, with its outcome and, for
    a poll, its Reads (None, or absent: nothing read)."""

    n: int  # position among the session's commands, or the scenario step's index
    actor: str
    action: str
    args: Mapping[str, Any]
    outcome: str
    read: NotRequired[list[list[Any]] | None]
    lso: NotRequired[dict[str, int] | None]


@dataclass
class History:
    """What happened, as any backend can tell it.

    steps: HistoryStep dicts, in the order they ran
    logs: {tp: [{"offset", "value", "key", "producer_id", "transactional", "control"}]} in offset order
    isolation: {consumer: "read_committed" | "read_uncommitted"}
    reconcile: the reconciliation query's {"columns", "rows"}, or None
    client: whose names the sentences use ("librdkafka" or "java")
    pipelines: the application's declared consume-transform-produce pipelines
    """

    steps: Sequence[HistoryStep]
    logs: Mapping[str, list[Mapping[str, Any]]]
    isolation: Mapping[str, str]
    reconcile: Mapping[str, Any] | None = None
    client: str = "librdkafka"
    fates: dict[tuple[str, int], str] = field(default_factory=dict)
    pipelines: Sequence[Pipeline] = ()

    def __post_init__(self) -> None:
        self.fates = fates_of(self.logs)


def reads(backend: Backend, step: Step) -> Reads:
    """What a poll step returned ({"read": [[partition, offset], ...]}) and the last stable offsets of those
    partitions as it returned ({"lso": {...}}, when the backend can tell): kept with the step, for the checker."""
    if step.action != "poll":
        return {}
    got = backend.polled(step.actor)
    if not got:
        return {}
    stable = backend.stable_offsets()
    out: Reads = {"read": [[tp, offset] for tp, offset in got]}
    if stable:
        out["lso"] = {tp: stable[tp] for tp in sorted({tp for tp, _o in got}) if tp in stable}
    return out


def fates_of(logs: Mapping[str, list[Mapping[str, Any]]]) -> dict[tuple[str, int], str]:
    """Each data record's fate, from the log alone: a transactional record is decided by its producer's next
    marker on the partition (COMMIT: committed, ABORT: aborted; none yet: open); a plain record is plain."""
    checker = Checker()
    for tp, log in logs.items():
        checker.add_log(tp, log)
    return dict(checker.fates)


def _topic(tp: str) -> str:
    return tp.rpartition("-")[0]


def _record(tp: str, offset: int) -> str:
    return f"{tp}@{offset}"


def _awaited(s: HistoryStep) -> bool:
    wait = (s.get("args") or {}).get("await", True)
    return not (wait is False or str(wait).lower() in ("false", "no", "0"))


def _capped(items: Sequence[Any]) -> tuple[list[Any], int]:
    return list(items[:LISTED_MAX]), max(0, len(items) - LISTED_MAX)


Key = tuple[str, str]  # (topic, value): a send and the records it may have become
Record = tuple[str, int]  # (tp, offset)


def _least(kept: list[Any], item: Any) -> None:
    """Keep `kept` the LISTED_MAX least distinct items seen (sorted): what a finding lists of a set that only grows,
    without sorting the whole set again."""
    i = bisect_left(kept, item)
    if i >= LISTED_MAX or (i < len(kept) and kept[i] == item):
        return
    kept.insert(i, item)
    del kept[LISTED_MAX:]


@dataclass
class _KeyRecords:
    """A (topic, value)'s records in the order the logs were read, split by what read_committed makes of them as
    their fates change, so that judging the key does not go through all of them (a value sent over and over)."""

    records: list[Record] = field(default_factory=list)
    visible: list[int] = field(default_factory=list)  # indexes into records: committed or plain, in order
    hidden: list[int] = field(default_factory=list)  # indexes into records: open or aborted, in order
    open: int = 0


_NO_RECORDS = _KeyRecords()


@dataclass
class _Doubled:
    """The records one consumer got with one (topic, value), and what a written_twice finding lists of them."""

    order: int  # which (topic, value) the consumer got first
    records: set[Record] = field(default_factory=set)
    least_records: list[Record] = field(default_factory=list)
    least_steps: list[int] = field(default_factory=list)  # of the steps that read any of the records


@dataclass
class _Txn:
    """A transaction as the application sees it, from begin_transaction() until it learns how it ended."""

    sends: list[HistoryStep] = field(default_factory=list)
    told: tuple[int, str, str] | None = None  # (step, op, outcome): the first error a produce() in it returned
    offsets: dict[str, dict[str, int]] = field(default_factory=dict)  # consumer -> {tp: offset} sent in it


@dataclass
class _Told:
    """A transaction that ended in an error the application was told of."""

    ident: int
    actor: str
    sends: list[HistoryStep]
    step: int
    op: str
    outcome: str
    places: list[int] = field(default_factory=list)  # each send's first place among its key's told sends


class Checker:
    """The checker, fed as the history grows: `add_log` (a partition's new entries, in offset order), `add_step`
    (each step after the log entries it may read), `set_reconcile`; `findings()` at any point."""

    def __init__(
        self, isolation: Mapping[str, str] | None = None, client: str = "librdkafka", pipelines: Sequence[Pipeline] = ()
    ) -> None:
        self.isolation = dict(isolation or {})
        self.client = client
        self.pipes = Pipes(tuple(pipelines), LISTED_MAX)
        # the logs
        self.next_offset: dict[str, int] = {}
        self.values: dict[tuple[str, int], Any] = {}
        self.fates: dict[tuple[str, int], str] = {}
        self._waiting: dict[tuple[str, Any], list[int]] = defaultdict(list)  # (tp, producer) -> open offsets
        self._keys: dict[Key, _KeyRecords] = {}
        self._index: dict[Record, int] = {}  # a record's place among its key's records
        # the sends, as the application saw them
        self._txns: dict[str, _Txn] = {}
        self._sent: dict[tuple[str, str], HistoryStep] = {}  # (actor, value) -> that send (for late writes)
        self._app_aborted: set[int] = set()  # steps of sends told ok whose transaction the application aborted
        self._believed: dict[Key, list[HistoryStep]] = defaultdict(list)
        self._committed: set[int] = set()  # believed sends whose transaction's commit returned ok
        self._told_failed: dict[Key, list[HistoryStep]] = defaultdict(list)
        self._aborted: dict[Key, list[HistoryStep]] = defaultdict(list)
        self._told: list[_Told] = []
        self._told_by_key: dict[Key, list[tuple[int, HistoryStep]]] = defaultdict(list)
        # the reads
        self._rc_reads: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)
        self._got: dict[str, dict[Record, list[int]]] = defaultdict(lambda: defaultdict(list))
        self._first_read: dict[str, dict[Record, int]] = defaultdict(dict)  # which record the consumer got first
        self._doubled: dict[str, dict[Key, _Doubled]] = defaultdict(dict)
        self._filed: dict[str, dict[Record, list[Key]]] = defaultdict(lambda: defaultdict(list))  # its _doubled keys
        self._feeders: set[str] = set()
        self._reconcile: Mapping[str, Any] | None = None
        # the findings, by what they depend on (worked out again only when that changed)
        self._by_key: dict[Key, list[Finding]] = {}
        self._by_told: dict[int, Finding] = {}
        self._aborted_reads: dict[tuple[str, int], list[Finding]] = {}
        self._undecided: list[Finding] = []
        self._dups: dict[str, list[Finding]] = {}
        self._redelivered: dict[str, dict[Record, tuple[int, Finding]]] = defaultdict(dict)
        self._twice: dict[str, dict[Key, tuple[int, Finding]]] = defaultdict(dict)
        self._unvalued: dict[str, set[Record]] = defaultdict(set)  # redelivered said before their value was read
        self._divergence: list[Finding] = []
        self._dirty_keys: set[Key] = set()
        self._dirty_records: set[tuple[str, int]] = set()
        self._dirty_consumers: set[str] = set()
        self._dirty_got: dict[str, set[Record]] = defaultdict(set)
        self._dirty_doubled: dict[str, set[Key]] = defaultdict(set)
        self._sorted: list[Finding] | None = None

    # ---- feeding -------------------------------------------------------------------------------------------
    def add_log(self, tp: str, entries: Iterable[Mapping[str, Any]]) -> None:
        """A partition's entries from `next_offset[tp]` on (earlier ones are ignored: the log only grows)."""
        start = self.next_offset.get(tp, 0)
        for e in entries:
            offset = e["offset"]
            if offset < start:
                continue
            start = offset + 1
            producer = e.get("producer_id", e.get("producer"))
            if e.get("control"):
                fate = "committed" if e["control"] == "COMMIT" else "aborted"
                for o in self._waiting.pop((tp, producer), []):
                    self._decide(tp, o, fate)
                continue
            value = identity(e.get("value"))  # the history keeps a long value as this too
            self.values[(tp, offset)] = value
            if self.pipes.pipelines:
                self.pipes.add_record(tp, offset, e, value)
            key = (_topic(tp), str(value))
            records = self._keys.get(key)
            if records is None:
                records = self._keys[key] = _KeyRecords()
            i = self._index[(tp, offset)] = len(records.records)
            records.records.append((tp, offset))
            self._dirty_keys.add(key)
            if e.get("transactional"):
                self.fates[(tp, offset)] = "open"
                self._waiting[(tp, producer)].append(offset)
                records.hidden.append(i)
                records.open += 1
            else:
                self.fates[(tp, offset)] = "plain"
                records.visible.append(i)
        self.next_offset[tp] = start
        self._sorted = None

    def _decide(self, tp: str, offset: int, fate: str) -> None:
        """An open record's fate, by its producer's marker."""
        key = (_topic(tp), str(self.values.get((tp, offset))))
        self.fates[(tp, offset)] = fate
        records, i = self._keys[key], self._index[(tp, offset)]
        records.open -= 1
        if self.pipes.pipelines:
            self.pipes.touched(tp, offset)
        if fate == "committed":
            del records.hidden[bisect_left(records.hidden, i)]
            insort(records.visible, i)
        self._dirty_keys.add(key)
        self._dirty_records.add((tp, offset))

    def set_reconcile(self, rec: Mapping[str, Any] | None) -> None:
        if rec != self._reconcile:
            self._reconcile = rec
            self._divergence = list(_divergence(rec))
            self._sorted = None

    def add_step(self, s: HistoryStep) -> None:
        self._sorted = None
        if s.get("args") and "value" in s["args"]:
            s = {**s, "args": {**s["args"], "value": identity(s["args"]["value"])}}  # as the log's, in add_log
        actor, action, args = s["actor"], s["action"], s["args"] or {}
        outcome = s.get("outcome", OK)
        # a connected client's step also says its library ("client") and, for an error, what its application was told
        # in that library's words ("told": _FENCED, ProducerFencedException; simserver/clients.py)
        said: Mapping[str, Any] = s
        java = said.get("client", self.client) == JAVA
        told_as = str(said.get("told") or outcome)
        txn = self._txns.get(actor)
        if action == "begin_transaction":
            if outcome == OK:
                self._txns[actor] = _Txn()
        elif action == "produce":
            if args.get("from"):
                self._feeder(str(args["from"]))
                if outcome == OK:
                    self.pipes.attach(str(args["from"]), {str(args.get("topic"))})
            if "value" in args:
                key = (str(args.get("topic")), str(args["value"]))
                if outcome == OK:
                    self._sent[(actor, str(args["value"]))] = s
                    if txn is not None:
                        txn.sends.append(s)
                    else:  # a plain send: its outcome is known now
                        self._believe(key, s)
                else:
                    self._told_failed[key].append(s)
                    self._dirty_keys.add(key)
            if outcome != OK and txn is not None and txn.told is None:
                op = "produce_get" if java and _awaited(s) else "produce"
                txn.told = (s["n"], op + ("_java" if java else ""), told_as)
        elif action == "commit_transaction":
            ended = self._txns.pop(actor, None)
            if ended is not None:
                if outcome == OK:
                    sinks = {str(x["args"].get("topic")) for x in ended.sends}
                    for consumer, offsets in ended.offsets.items():
                        self.pipes.attach(consumer, sinks)
                        self.pipes.cover(consumer, offsets, s["n"], actor, "txn")
                    for x in ended.sends:
                        self._committed.add(x["n"])
                        self._believe((str(x["args"]["topic"]), str(x["args"]["value"])), x)
                else:
                    told = ended.told or (s["n"], "commit_java" if java else "commit", told_as)
                    self._tell(actor, ended.sends, *told)
        elif action == "transaction_failed":
            # a connected client's transaction ended by a fence it was answered (simserver/clients.py): its application
            # is told at its next call, as by a failed commit
            ended = self._txns.pop(actor, None)
            if ended is not None:
                told = ended.told or (s["n"], "fenced_java" if java else "fenced", told_as)
                self._tell(actor, ended.sends, *told)
        elif action == "abort_transaction":
            if outcome == OK:
                ended = self._txns.pop(actor, None)
                for x in ended.sends if ended is not None else ():
                    self._app_aborted.add(x["n"])
                    key = (str(x["args"]["topic"]), str(x["args"]["value"]))
                    self._aborted[key].append(x)
                    self._dirty_keys.add(key)
        elif action in ("crash", "restart", "close"):
            self._txns.pop(actor, None)  # nobody is left to believe the open transaction's sends
            self.pipes.positions.pop(actor, None)  # a consumer that comes back reads on from its committed offsets
        elif action == "seek_to_committed":
            self.pipes.positions.pop(actor, None)
        elif action == "send_offsets_to_transaction":
            consumer = str(args.get("consumer") or "")
            if consumer:
                self._feeder(consumer)
            # a scenario's step names its consumer (its positions are sent); a connected client's TxnOffsetCommit
            # names the group and the offsets themselves (simserver/clients.py)
            member = consumer or (f"group {args['group']}" if args.get("group") else "")
            if member and outcome == OK and txn is not None:
                txn.offsets[member] = dict(args.get("offsets") or self.pipes.positions.get(consumer, {}))
        elif action == "commit" and outcome == OK:  # a consumer's own offset commit (plain, outside a transaction)
            self.pipes.cover(
                actor, dict(args.get("offsets") or self.pipes.positions.get(actor, {})), s["n"], actor, "commit"
            )
        elif actor == "net" and action == "late_write":
            earlier = self._sent.get((str(args.get("actor")), str(args.get("of"))))
            if earlier is not None and earlier["n"] in self._app_aborted:
                late: HistoryStep = {
                    **s,
                    "actor": str(args["actor"]),
                    "args": {"topic": earlier["args"]["topic"], "value": args.get("value")},
                }
                key = (str(earlier["args"]["topic"]), str(args.get("value")))
                self._app_aborted.add(s["n"])
                self._aborted[key].append(late)
                self._dirty_keys.add(key)
        for tp, offset in s.get("read") or ():
            self._read(s, tp, int(offset))

    def _believe(self, key: Key, s: HistoryStep) -> None:
        self._believed[key].append(s)
        self._dirty_keys.add(key)

    def _tell(self, actor: str, sends: list[HistoryStep], step: int, op: str, outcome: str) -> None:
        told = _Told(len(self._told), actor, list(sends), step, op, outcome)
        self._told.append(told)
        first: dict[int, int] = {}
        for x in sends:
            key = (str(x["args"]["topic"]), str(x["args"]["value"]))
            told.places.append(first.setdefault(id(x), len(self._told_by_key[key])))
            self._told_by_key[key].append((told.ident, x))
            self._dirty_keys.add(key)

    def _feeder(self, consumer: str) -> None:
        if consumer not in self._feeders:
            self._feeders.add(consumer)
            self._dirty_consumers.add(consumer)

    def _read(self, s: HistoryStep, tp: str, offset: int) -> None:
        actor, record, n = s["actor"], (tp, offset), s["n"]
        if self.pipes.pipelines:
            self.pipes.positions.setdefault(actor, {})[tp] = offset + 1
            if _topic(tp) in self.pipes.sources:
                self._feeder(actor)  # a declared pipeline's input: what must not repeat is its output
            if _topic(tp) in self.pipes.sinks:
                self.pipes.touched(tp, offset)  # an output got: where its finding points
        got = self._got[actor]
        if record not in got:
            self._first_read[actor][record] = len(got)
        steps = got[record]
        steps.append(n)
        key = (_topic(tp), str(self.values.get(record)))
        doubled = self._doubled[actor]
        d = doubled.get(key)
        if d is None:
            d = doubled[key] = _Doubled(len(doubled))
        filed = self._filed[actor][record]
        if key not in filed:  # a record read before its value was known is filed under both
            filed.append(key)
            d.records.add(record)
            _least(d.least_records, record)
            for earlier in steps[:-1]:
                _least(d.least_steps, earlier)
        for k in filed:
            _least(doubled[k].least_steps, n)
            self._dirty_doubled[actor].add(k)
        self._dirty_got[actor].add(record)
        self._dirty_consumers.add(actor)
        if self.isolation.get(actor, "read_committed") != "read_committed":
            return
        self._rc_reads[record].append((s["n"], actor))
        self._dirty_records.add(record)
        lso = (s.get("lso") or {}).get(tp)
        if lso is not None and offset >= lso:
            self._undecided.append(
                Finding(
                    "undecided-read",
                    "undecided_read",
                    {"actor": actor, "record": _record(tp, offset), "lso": lso},
                    (s["n"],),
                    (_record(tp, offset),),
                )
            )

    # ---- judging ---------------------------------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        self._judge()
        if self._sorted is None:
            found = [f for fs in self._by_key.values() for f in fs]
            found += self._by_told.values()
            writes = sorted(found, key=lambda f: (RULES.index(f.rule), f.steps[:1]))
            reads = sorted(
                [*(f for fs in self._aborted_reads.values() for f in fs), *self._undecided],
                key=lambda f: f.steps[:1],
            )
            writes += [Finding("lost-input", "input_lost", *raw) for raw in self.pipes.lost]
            dups = sorted((f for fs in self._dups.values() for f in fs), key=lambda f: f.steps[:1])
            twice = [Finding("duplicate", "processed_twice", *raw) for raw in self.pipes.twice]
            self._sorted = [*writes, *reads, *dups, *twice, *self._divergence]
        return list(self._sorted)

    def _judge(self) -> None:
        told_dirty: set[int] = set()
        for key in self._dirty_keys:
            self._judge_key(key)
            told_dirty |= {ident for ident, _x in self._told_by_key.get(key, ())}
        for ident in told_dirty:
            self._judge_told(self._told[ident])
        for record in self._dirty_records:
            self._judge_reads(record)
        for consumer in self._dirty_consumers:
            self._judge_duplicates(consumer)
        if self.pipes.pipelines and self.pipes.judge(self.fates, self._sent_steps, self._got):
            self._sorted = None
        if self._dirty_keys or self._dirty_records or self._dirty_consumers:
            self._sorted = None
        self._dirty_keys, self._dirty_records, self._dirty_consumers = set(), set(), set()

    def _sent_steps(self, topic: str, record: Record) -> list[int]:
        """The steps of the sends believed to have written `record` (those that name its value)."""
        return [x["n"] for x in self._believed.get((topic, str(self.values.get(record))), ())]

    def _where(self, records: _KeyRecords) -> tuple[list[list[str]], int]:
        """The key's records read_committed does not deliver (the first LISTED_MAX), and how many more."""
        shown = [self._fated(records.records[i]) for i in records.hidden[:LISTED_MAX]]
        return shown, max(0, len(records.hidden) - LISTED_MAX)

    def _fated(self, record: Record) -> list[str]:
        return [_record(*record), self.fates.get(record, "")]

    def _judge_key(self, key: Key) -> None:
        topic, value = key
        out: list[Finding] = []
        records = self._keys.get(key, _NO_RECORDS)
        visible = len(records.visible)
        sends = self._believed.get(key, [])
        # A record of a transaction still open is not lost yet: its producer may still commit it (scenario 06's
        # hanging transaction). The undecided-read rule covers reading it early.
        if sends and len(sends) - visible - records.open > 0:
            last = sends[-1]
            where, more = self._where(records)
            out.append(
                Finding(
                    "lost-write",
                    "lost",
                    {
                        "actor": last["actor"],
                        "value": repr(value),
                        "topic": topic,
                        "said": self._said(last),
                        "where": where,
                        "where_more": more,
                    },
                    tuple(s["n"] for s in sends),
                    tuple(r for r, _fate in where),
                )
            )
        accounted = len(sends)
        for s, kind in chain(
            ((x, "told") for x in self._told_failed.get(key, ())),
            ((x, "aborted") for x in self._aborted.get(key, ())),
        ):
            extra = visible - accounted
            if extra <= 0:
                break
            # the last `extra` visible records, as many as a finding lists
            first = visible - extra
            recs = [_record(*records.records[i]) for i in records.visible[first : first + LISTED_MAX]]
            more = max(0, extra - LISTED_MAX)
            accounted += 1
            params: dict[str, Any] = {"actor": s["actor"], "value": repr(value), "records": recs, "records_more": more}
            if kind == "told":
                params["outcome"] = cast(Mapping[str, Any], s).get("told") or s["outcome"]
            out.append(
                Finding(
                    "failed-write-visible",
                    "told_failed_visible" if kind == "told" else "aborted_visible",
                    params,
                    (s["n"],),
                    tuple(recs),
                )
            )
        if out:
            self._by_key[key] = out
        else:
            self._by_key.pop(key, None)

    def _undelivered_told(self, key: Key) -> int | None:
        """How many of the key's sends in told transactions read_committed does not deliver (None: not judged yet,
        a record with this value is still in an open transaction)."""
        records = self._keys.get(key, _NO_RECORDS)
        if records.open:
            return None
        spare = max(0, len(records.visible) - len(self._believed.get(key, ())))
        return max(0, len(self._told_by_key.get(key, ())) - spare)

    def _judge_told(self, told: _Told) -> None:
        lost: list[HistoryStep] = []
        lost_keys: dict[Key, None] = {}  # in the order of their first lost send
        for x, place in zip(told.sends, told.places):
            key = (str(x["args"]["topic"]), str(x["args"]["value"]))
            undelivered = self._undelivered_told(key)
            if undelivered is None:
                self._by_told.pop(told.ident, None)  # judged once its records are decided
                return
            # the key's first `undelivered` sends in told transactions are the ones read_committed does not deliver
            if place < undelivered:
                lost.append(x)
                lost_keys[key] = None
        if not lost:
            self._by_told.pop(told.ident, None)
            return
        values, values_more = _capped([repr(str(x["args"]["value"])) for x in lost])
        # the lost keys' records read_committed does not deliver, in that order (a record has one key)
        hidden = [self._keys.get(key, _NO_RECORDS) for key in lost_keys]
        shown = [self._fated(r.records[i]) for r in hidden for i in r.hidden[:LISTED_MAX]][:LISTED_MAX]
        more = max(0, sum(len(r.hidden) for r in hidden) - LISTED_MAX)
        self._by_told[told.ident] = Finding(
            "aborted-told",
            "aborted_told",
            {
                "actor": told.actor,
                "values": values,
                "values_more": values_more,
                "topics": sorted({str(x["args"]["topic"]) for x in lost}),
                "k": told.step + 1,
                "op": told.op,
                "outcome": told.outcome,
                "where": shown,
                "where_more": more,
            },
            (*(x["n"] for x in lost), told.step),
            tuple(r for r, _fate in shown),
        )

    def _said(self, s: HistoryStep) -> str:
        committed = s["n"] in self._committed
        if cast(Mapping[str, Any], s).get("client", self.client) != JAVA:
            return "produce_commit_ok" if committed else "produce_ok"
        return ("send_get" if _awaited(s) else "send") + ("_commit" if committed else "")

    def _judge_reads(self, record: tuple[str, int]) -> None:
        if self.fates.get(record) != "aborted" or record not in self._rc_reads:
            self._aborted_reads.pop(record, None)
            return
        tp, offset = record
        self._aborted_reads[record] = [
            Finding(
                "aborted-read",
                "aborted_read",
                {"actor": actor, "value": repr(self.values.get(record)), "record": _record(tp, offset)},
                (n,),
                (_record(tp, offset),),
            )
            for n, actor in self._rc_reads[record]
        ]

    def _judge_duplicates(self, consumer: str) -> None:
        """Only the records and values the consumer got since it was last judged are worked out again."""
        if consumer in self._feeders:
            # A transform's input: re-reading after a crash is how it recovers; what must not repeat is its output,
            # which the consumers reading that output show.
            self._dups.pop(consumer, None)
            self._dirty_got.pop(consumer, None)
            self._dirty_doubled.pop(consumer, None)
            return
        got, redelivered, unvalued = self._got[consumer], self._redelivered[consumer], self._unvalued[consumer]
        # a record's value may have been read since its finding said it (the finding said None)
        for record in self._dirty_got.pop(consumer, set()) | unvalued:
            steps = got[record]
            if len(steps) <= 1:
                continue
            tp, offset = record
            redelivered[record] = (
                self._first_read[consumer][record],
                Finding(
                    "duplicate",
                    "redelivered",
                    {
                        "actor": consumer,
                        "value": repr(self.values.get(record)),
                        "record": _record(tp, offset),
                        "times": len(steps),
                    },
                    tuple(steps),
                    (_record(tp, offset),),
                ),
            )
            if record in self.values:
                unvalued.discard(record)
            else:
                unvalued.add(record)
        twice = self._twice[consumer]
        for key in self._dirty_doubled.pop(consumer, set()):
            d = self._doubled[consumer][key]
            topic, value = key
            if len(d.records) <= 1 or topic in self.pipes.sinks:  # a pipeline's output: judged by its input
                continue
            names = [_record(*r) for r in d.least_records]
            twice[key] = (
                d.order,
                Finding(
                    "duplicate",
                    "written_twice",
                    {
                        "actor": consumer,
                        "value": repr(value),
                        "count": len(d.records),
                        "topic": topic,
                        "records": names,
                        "records_more": max(0, len(d.records) - LISTED_MAX),
                    },
                    tuple(d.least_steps),
                    tuple(names),
                ),
            )
        # in the order the consumer first got the record, then the value
        out = [f for _o, f in sorted(redelivered.values(), key=itemgetter(0))]
        out += [f for _o, f in sorted(twice.values(), key=itemgetter(0))]
        if out:
            self._dups[consumer] = out
        else:
            self._dups.pop(consumer, None)


def check(history: History) -> list[Finding]:
    checker = Checker(history.isolation, history.client, history.pipelines)
    for tp, log in history.logs.items():
        checker.add_log(tp, log)
    for s in history.steps:
        checker.add_step(s)
    checker.set_reconcile(history.reconcile)
    return checker.findings()


# -------------------------------------------------------------------------------------------------- database
def _divergence(rec: Mapping[str, Any] | None) -> Iterable[Finding]:
    if not rec or not rec.get("rows"):
        return
    columns, rows = rec["columns"], rec["rows"]
    checks = rec.get("checks")
    if checks is None:  # a result without the database's own reading: every all-0/1 column is a check
        checks = [i for i in range(len(columns)) if all(r[i] in (0, 1) for r in rows)]
    for r in rows:
        failed = [columns[i] for i in checks if r[i] == 0]
        if failed:
            ident = ", ".join(f"{c}={v}" for c, v in zip(columns, r) if columns.index(c) not in checks)
            yield Finding("divergence", "divergence", {"row": ident or str(r), "failed": failed})


def history_of_run(scenario: Scenario, record: Sequence[HistoryStep], observation: Mapping[str, Any]) -> History:
    """A `scenario run`'s history: the steps it recorded, the observation's logs and database."""
    logs = {tp: p["log"] for tp, p in observation["partitions"].items()}
    isolation = {n: a.isolation_level for n, a in scenario.actors.items() if a.kind == "consumer"}
    return History(
        list(record),
        logs,
        isolation,
        (observation.get("database") or {}).get("reconcile"),
        client=scenario.profile.client,
        pipelines=scenario.pipelines,
    )


def summary(findings: Iterable[Finding]) -> dict[str, int]:
    return dict(Counter(f.rule for f in findings))
