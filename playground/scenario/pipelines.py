"""The anomaly checker's view of declared consume-transform-produce pipelines (`pipeline: {from, to, by}`): which
inputs a transform committed past without their output (`lost-input`), and which inputs have their output delivered
more than once (processed twice: a `duplicate`).

An input's output is the record of the pipeline's `to` topic with the same key (or value, `by: value`; with
`by: header, header: NAME`, the output's header NAME holds the input's own header NAME, or the input's key when it
has none: the header a consume-transform-produce application passes on, or sets to the order it answers). A consumer
belongs to a pipeline once a transaction that sent to its `to` topic also sent the consumer's offsets
(send_offsets_to_transaction; a connected client's TxnOffsetCommit names the group and the offsets), or once a send
to it names the consumer (`from:`). Its offsets are committed at the positions it had read up to (the last record it
got + 1; or the offsets a client sent): in a committed transaction, or by its own offset commit.

Incremental as the rest of the checker (anomalies.py): what changed marks the keys it concerns, and only those keys
are judged again: a commit that moves a partition's committed offset from a to b marks the inputs in [a, b). Pure
data in, plain tuples out (anomalies.py makes them findings).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from playground.engine.values import identity
from playground.scenario.model import Pipeline

Record = tuple[str, int]  # (tp, offset)
Commit = tuple[int, str, str, str]  # (step, actor, how: "txn" | "commit", consumer): who moved a committed offset
Raw = tuple[dict[str, Any], tuple[int, ...], tuple[str, ...]]  # a finding's params, steps and records


def _topic(tp: str) -> str:
    return tp.rpartition("-")[0]


def _mapped(p: Pipeline, is_input: bool, e: Mapping[str, Any], value: Any) -> Any:
    """What maps a record of the stage to its input or output (None: nothing)."""
    if p.by == "key":
        return e.get("key")
    if p.by == "value":
        return value
    found = (e.get("headers") or {}).get(p.header)
    if found is None and is_input:
        return e.get("key")
    return found


def _name(record: Record) -> str:
    return f"{record[0]}@{record[1]}"


@dataclass
class _Stage:
    """One declared pipeline's inputs and outputs by what maps them (key or value), and its findings by key."""

    pipeline: Pipeline
    inputs: dict[str, list[Record]] = field(default_factory=lambda: defaultdict(list))
    outputs: dict[str, list[Record]] = field(default_factory=lambda: defaultdict(list))
    offsets: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))  # tp -> inputs' offsets
    keys: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # tp -> their keys, in that order
    dirty: set[str] = field(default_factory=set)
    twice: dict[str, Raw] = field(default_factory=dict)
    lost: dict[str, list[tuple[Commit, Record]]] = field(default_factory=dict)


class Pipes:
    def __init__(self, pipelines: tuple[Pipeline, ...], listed_max: int) -> None:
        self.pipelines = pipelines
        self.listed_max = listed_max
        self.stages = [_Stage(p) for p in pipelines]
        self.sources = {p.source for p in pipelines}
        self.sinks = {p.sink for p in pipelines}
        self.topics = self.sources | self.sinks
        self.mapped: dict[tuple[int, Record], str] = {}  # (stage, record) -> its key or value
        self.positions: dict[str, dict[str, int]] = {}  # consumer -> {tp: offset after the last record it got}
        self.attached: dict[str, set[str]] = defaultdict(set)  # consumer -> the `to` topics it feeds
        # (consumer, tp) -> the commits that moved its committed offset forward: (offset, step, actor, how), both
        # increasing (a commit that moves nothing forward is past no input that an earlier one was not)
        self.commits: dict[tuple[str, str], list[tuple[int, int, str, str]]] = defaultdict(list)
        self.lost: list[Raw] = []
        self.twice: list[Raw] = []

    # ---- fed by the checker --------------------------------------------------------------------------------
    def add_record(self, tp: str, offset: int, e: Mapping[str, Any], value: Any) -> None:
        topic = _topic(tp)
        for i, stage in enumerate(self.stages):
            p = stage.pipeline
            if topic not in (p.source, p.sink):
                continue
            mapped = _mapped(p, topic == p.source, e, value)
            if mapped is None:
                continue  # nothing maps it to an input or an output
            key = str(identity(mapped))
            self.mapped[(i, (tp, offset))] = key
            if topic == p.source:
                stage.inputs[key].append((tp, offset))
                stage.offsets[tp].append(offset)
                stage.keys[tp].append(key)
            else:
                stage.outputs[key].append((tp, offset))
            stage.dirty.add(key)

    def touched(self, tp: str, offset: int) -> None:
        """A record's fate was decided, or a consumer got an output: its key's findings change."""
        for i, stage in enumerate(self.stages):
            key = self.mapped.get((i, (tp, offset)))
            if key is not None:
                stage.dirty.add(key)

    def attach(self, consumer: str, sinks: set[str]) -> None:
        new = sinks - self.attached[consumer]
        if not new:
            return
        self.attached[consumer] |= new
        for stage in self.stages:
            if stage.pipeline.sink in new:  # its commits so far now count for this stage
                for (who, tp), moves in self.commits.items():
                    if who == consumer and moves:
                        self._mark(stage, tp, 0, moves[-1][0])

    def cover(self, consumer: str, offsets: Mapping[str, Any], n: int, actor: str, how: str) -> None:
        for tp, value in sorted(offsets.items()):
            upto = int(value)
            moves = self.commits[(consumer, str(tp))]
            before = moves[-1][0] if moves else 0
            if upto <= before:
                continue
            moves.append((upto, n, actor, how))
            for stage in self.stages:
                if stage.pipeline.sink in self.attached[consumer]:
                    self._mark(stage, str(tp), before, upto)

    def _mark(self, stage: _Stage, tp: str, start: int, end: int) -> None:
        offsets = stage.offsets.get(tp)
        if offsets:
            stage.dirty.update(stage.keys[tp][bisect_left(offsets, start) : bisect_left(offsets, end)])

    # ---- judging -------------------------------------------------------------------------------------------
    def judge(
        self,
        fates: Mapping[Record, str],
        sent_steps: Callable[[str, Record], list[int]],
        got: Mapping[str, Mapping[Record, list[int]]],
    ) -> bool:
        """The dirty keys judged again; True when a finding changed. `sent_steps(topic, record)`: the steps of the
        sends that wrote a record (when they name its value)."""
        changed = False
        for stage in self.stages:
            for key in stage.dirty:
                changed |= self._judge_key(stage, key, fates, sent_steps, got)
            stage.dirty = set()
        if changed:
            self._collect()
        return changed

    def _judge_key(
        self,
        stage: _Stage,
        key: str,
        fates: Mapping[Record, str],
        sent_steps: Callable[[str, Record], list[int]],
        got: Mapping[str, Mapping[Record, list[int]]],
    ) -> bool:
        p = stage.pipeline
        visible = ("committed", "plain")
        made = [r for r in stage.outputs.get(key, ()) if fates.get(r) in visible]
        undecided = any(fates.get(r) == "open" for r in stage.outputs.get(key, ()))
        inputs = [r for r in stage.inputs.get(key, ()) if fates.get(r) in visible]
        twice = lost = None
        if inputs and len(made) > len(inputs):
            names = [_name(r) for r in made]
            # the sends that wrote them (when they name their value), and where a consumer first got each
            steps = {n for r in made for n in sent_steps(p.sink, r)}
            steps |= {at[0] for kept in got.values() for r in made if (at := kept.get(r))}
            params = {
                "input": _name(inputs[0]),
                "source": p.source,
                "count": len(made),
                "records": names[: self.listed_max],
                "records_more": max(0, len(names) - self.listed_max),
            }
            twice = (params, tuple(sorted(steps)), (_name(inputs[0]), *names[: self.listed_max]))
        if not made and not undecided:
            lost = [(by, r) for r in inputs if (by := self._committed_past(p, r)) is not None] or None
        before = (stage.twice.get(key), stage.lost.get(key))
        for found, kept in ((twice, stage.twice), (lost, stage.lost)):
            if found is None:
                kept.pop(key, None)
            else:
                kept[key] = found  # type: ignore[assignment]
        return before != (twice, lost)

    def _committed_past(self, p: Pipeline, record: Record) -> Commit | None:
        """The first commit of a consumer of `p` past `record`."""
        tp, offset = record
        first: Commit | None = None
        for consumer, sinks in self.attached.items():
            moves = self.commits.get((consumer, tp)) if p.sink in sinks else None
            if not moves:
                continue
            i = bisect_right(moves, offset, key=lambda m: m[0])  # the first that moved it past `offset`
            if i < len(moves) and (first is None or moves[i][1] < first[0]):
                first = (moves[i][1], moves[i][2], moves[i][3], consumer)
        return first

    def _collect(self) -> None:
        self.twice = [raw for stage in self.stages for raw in stage.twice.values()]
        self.twice.sort(key=lambda raw: raw[2])
        skipped: dict[tuple[int, Commit], list[Record]] = defaultdict(list)
        for i, stage in enumerate(self.stages):
            for found in stage.lost.values():
                for by, record in found:
                    skipped[(i, by)].append(record)
        self.lost = []
        for (i, (n, actor, how, consumer)), records in sorted(skipped.items(), key=lambda kv: (kv[0][1][0], kv[0][0])):
            p = self.stages[i].pipeline
            names = [_name(r) for r in sorted(records)]
            shown = names[: self.listed_max]
            params = {
                "actor": actor,
                "consumer": consumer,
                "inputs": shown,
                "inputs_more": len(names) - len(shown),
                "source": p.source,
                "sink": p.sink,
                "k": n + 1,
                "how": how,
            }
            self.lost.append((params, (n,), tuple(shown)))
