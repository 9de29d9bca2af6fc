"""A session as one server process holds it: the backend built from the log, and the log it reflects.

A `Live` is the head of a session's log in this process (or, for scrubbing, a read-only moment of it: `moment`
is the step it shows). Its `commands` are the log's entries with their outcomes, `row_ids` the database rows they
came from: if the row at our last position is still a live row of the log, everything before it is too ("back"
and "reset" drop a suffix of the log or all of it), so a process knows whether its backend is still current.

Everything derived from the log that the panels read on every update (the narrative's cursor, the scrubber's
marks) is kept up to date as entries are recorded, so an update costs the same at command 10 and at 10,000.

One step numbering everywhere (the header, the time slider, `?at=k`, a fork, the anomaly panel, compare): step k is
the session after its first k commands, where a command is what the backend carries out (a scenario's step, its
notes included, a command of the user's own, an actor added). An exercise's answers and hints and the pace switch
are entries of the log but not steps: they belong to the step before them.
"""

from __future__ import annotations

import copy
import re
import time
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from playground.engine.backend import OK, Backend
from playground.engine.spec import (
    CONSUMER,
    DEFAULT_PROFILE,
    NOTE,
    PRODUCER,
    ActorSpec,
    ClusterSpec,
    Profile,
    Step,
    TopicSpec,
)
from playground.scenario.anomalies import reads
from playground.scenario.model import Pipeline, Scenario
from playground.session import external

GROUP_PREFIX = "session-"
PACE_WALL, PACE_OFF = "wall", "off"  # a {"pace": ...} entry of the log
PIPELINE = "pipeline"  # a {"pipeline": [{"from", "to", "by"}, ...]} entry: the pipelines declared from the page
PACE_MAX_MS = 10 * 60_000  # a longer pause between two commands passes as this much (a break, not a pace)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

# Outcomes that say the producer was fenced (librdkafka's and Kafka's names), for the scrubber's marks.
FENCING_OUTCOMES = frozenset({"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})


class CommandError(Exception):
    """Bad input: the user gets a 4xx with this message and the session is unchanged."""

    status = 400

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def group_name(session_id: str) -> str:
    return f"{GROUP_PREFIX}{session_id}"


# --------------------------------------------------------------------------------------------------- free play
def free_play_cluster() -> ClusterSpec:
    return ClusterSpec(brokers=3, topics=(TopicSpec("orders", 3),))


def free_play_actors() -> dict[str, ActorSpec]:
    return {
        "rc": ActorSpec("rc", CONSUMER, {"isolation.level": "read_committed"}, ("orders",)),
        "ru": ActorSpec("ru", CONSUMER, {"isolation.level": "read_uncommitted"}, ("orders",)),
    }


# ------------------------------------------------------------------------------------------- entries as logged
def step_from_entry(obj: Any, index: int = 0) -> Step:
    """A step in the scenario file's own form (what `Step.to_dict()` gives) back into a `Step`."""
    if isinstance(obj, str):
        actor, _sep, action = obj.partition(".")
        return Step(actor=actor, action=action, index=index)
    if isinstance(obj, Mapping) and len(obj) == 1:
        ((label, args),) = obj.items()
        if label == NOTE:
            text = args if isinstance(args, Mapping) else {"en": str(args)}
            return Step(actor=NOTE, action=NOTE, args={"text": dict(text)}, index=index)
        actor, _sep, action = str(label).partition(".")
        args = dict(args or {})
        expect = args.pop("expect", None)
        if expect is not None:
            expect = tuple(expect) if isinstance(expect, (list, tuple)) else (str(expect),)
        return Step(actor=actor, action=action, args=args, expect=expect, index=index)
    raise ValueError(f"not a step: {obj!r}")


def actor_to_entry(spec: ActorSpec) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec.config)
    if spec.kind == CONSUMER:
        body["topics"] = list(spec.topics)
    return {spec.name: {spec.kind: body}}


def actor_from_entry(obj: Mapping[str, Any]) -> ActorSpec:
    ((name, decl),) = obj.items()
    ((kind, body),) = decl.items()
    body = dict(body)
    topics = tuple(body.pop("topics", ()) or ())
    return ActorSpec(name=name, kind=kind, config=body, topics=topics)


def is_command(entry: Mapping[str, Any]) -> bool:
    """A step or an actor added: what the backend carries out (an exercise's answer or hint is not)."""
    return "step" in entry or "add" in entry


def mark_of(entry: Mapping[str, Any]) -> str | None:
    """What the scrubber marks a command with: "fenced" (a producer was fenced by it or got a fencing error),
    "error" (any other outcome than ok), "note" (a narrative note), or None."""
    if entry.get("fenced") or entry.get("outcome") in FENCING_OUTCOMES:
        return "fenced"
    if entry.get("outcome", OK) != OK:
        return "error"
    step = entry.get("step")
    if isinstance(step, Mapping) and NOTE in step:
        return "note"
    return None


# --------------------------------------------------------------------------------------------- the live part
@dataclass(frozen=True)
class Checkpoint:
    """The backend after a session's first `length` commands, frozen (cache.freeze), with everything the Live
    derives from those commands: restoring it costs a thaw, never a walk over the commands before it."""

    state: bytes
    actors: Mapping[str, ActorSpec]
    cursor: int
    step_outcomes: Mapping[int, str]
    own_count: int
    marks: int  # how many of the session's marks fall before it
    produced: Mapping[str, int]
    predictions: Mapping[int, int]
    hints_shown: int
    paced: bool = False
    paced_at_ms: int | None = None
    listen: Mapping[str, Any] | None = None
    external_wall_ms: int = 0
    external_bytes: int = 0
    commands: int = 0  # how many of the entries before it are commands (steps)
    scenario_steps: Mapping[int, int] = field(default_factory=dict)
    derived: Mapping[str, Any] = field(default_factory=dict)  # Live.derived as it was: a moment goes on from there
    # The anomaly checker fed with exactly these commands, frozen (session/history.py: early steps only), or None.
    checker: bytes | None = None
    pipelines: tuple[Pipeline, ...] | None = None  # as declared from the page by then (None: the scenario's)

    @property
    def size(self) -> int:
        """Bytes it holds (what the checkpoints' budget counts)."""
        return len(self.state) + len(self.checker or b"")


@dataclass
class Live:
    """A backend built in this process, and the log it reflects."""

    session_id: str
    backend_name: str
    seed: int
    scenario: Scenario | None
    cluster: ClusterSpec
    actors: dict[str, ActorSpec]
    backend: Backend
    version: int = 0
    commands: list[dict[str, Any]] = field(default_factory=list)
    row_ids: list[int] = field(default_factory=list)
    running: bool = False
    listener_at: float | None = None  # the listener's heartbeat as the row says it (time.time()), if any
    last_error: str | None = None
    # A real-cluster session that is not live in this process: "" (live), "not_here" (created by another process,
    # or before a restart, or closed for idleness), "moved" (re-run or reset in another process), "ended".
    detached: str = ""
    last_used: float = field(default_factory=time.monotonic)
    # Where the session came from, for the page: {"session": id, "at": k} when it was forked.
    origin: dict[str, Any] | None = None
    # Set on a read-only moment (scrubbing, `?at=k`): the step shown, and the log's length at the head.
    moment: int | None = None
    head_length: int | None = None
    replica: bool = False  # a moment of a real-cluster session: the simulator's replay of its log
    seat: dict[str, Any] | None = None  # a workshop's session: store.seat_of() (room, code, attendee, name, item)
    profile: Profile = DEFAULT_PROFILE  # which Kafka and which client (the session's row says)
    owner: str = ""  # whose per-client budgets it spends (its commands, its reconciliation): replay.owner_of
    sql_checkpointed_ms: float = 0.0  # its database's statements' time at its latest checkpoint (cache.py)
    # The simulator's state after every CHECKPOINT_EVERY commands (see cache.py); never on a moment.
    checkpoints: dict[int, Checkpoint] = field(default_factory=dict)
    # Derived from the log as entries are recorded (so a panel update does not walk 10,000 commands):
    cursor: int = 0  # how many of the scenario's steps have been applied (the narrative's position)
    step_outcomes: dict[int, str] = field(default_factory=dict)  # scenario step index -> its outcome
    own_count: int = 0  # commands outside the scenario's narrative (the user's own)
    marks: list[tuple[int, str]] = field(default_factory=list)  # (seq, mark_of(entry)) for marked commands
    command_seqs: list[int] = field(default_factory=list)  # the entry position of each command: step k+1's
    scenario_steps: dict[int, int] = field(default_factory=dict)  # scenario step index -> the step number it ran as
    produced: dict[str, int] = field(default_factory=dict)  # produce commands per actor, for one-click values
    predictions: dict[int, int] = field(default_factory=dict)  # exercise: scenario step -> the answer given
    hints_shown: int = 0  # exercise: hints revealed so far
    # The consume-transform-produce pipelines the anomaly checker judges, as declared from the page (a {"pipeline":
    # [...]} entry: a connected application's mapping of inputs to outputs); None: the scenario's own `pipeline:`.
    declared_pipelines: tuple[Pipeline, ...] | None = None
    # At its user's pace (a {"pace": "wall"} entry; the simulator only): each command records the wall time since
    # the previous one (elapsed_ms) and that time passes on the simulator's clock before it (run_entry).
    paced: bool = False
    paced_at_ms: int | None = None  # the wall clock (ms) of the last paced entry
    # External clients (session/external.py): the listen entry in force (None: nobody listens), the wall time of the
    # last entry of theirs, and what the listener fed this process's backend that the log does not hold yet: entries
    # cut but not stored (the commit loop stores them first), and the inputs since the last cut.
    listen: Mapping[str, Any] | None = None
    external_wall_ms: int = 0
    external_bytes: int = 0  # what the log stores of the clients' requests (their packed inputs), bounded
    pending: list[dict[str, Any]] = field(default_factory=list)
    ext_inputs: list[tuple[int, int, int, int, bytes]] = field(default_factory=list)
    # The anomaly checker fed with this Live's log so far (session/history.py); never copied: a Live rebuilt from a
    # checkpoint starts its own.
    anomalies: Any = None
    # What the panels derive from the log and keep up to date the same way (web/panels.py: sends per topic).
    derived: dict[str, Any] = field(default_factory=dict)
    # Checkpoints stored with the log (session/checkpoints.py): the milliseconds applying entries took since the last
    # one was stored (what a replay of them would take), and (length, last row) of those stored, once read.
    replay_ms: float = 0.0
    stored_checkpoints: list[tuple[int, int]] | None = None

    # ---- the log -------------------------------------------------------------------------------------------
    def record(self, entry: dict[str, Any], row_id: int = 0) -> None:
        """One more entry of the log (with its outcome) is reflected by the backend. An external clients' entry is
        kept without its payload (its row holds it; a replay reads it there)."""
        self.commands.append(external.without_payload(entry))
        self.row_ids.append(row_id)
        self._derive(len(self.commands) - 1, entry)

    def _derive(self, seq: int, entry: Mapping[str, Any]) -> None:
        if external.is_external(entry):
            if external.LISTEN in entry:
                self.listen = entry[external.LISTEN]
            elif external.UNLISTEN in entry:
                self.listen = None
            elif external.EXT in entry:
                # what connected clients did is a step of the session's own numbering: the slider and ?at=k move
                # through it as through the session's commands
                self.command_seqs.append(seq)
                self.external_bytes += int(entry[external.EXT].get("size") or 0)
            body = next(entry[k] for k in external.KINDS if k in entry)
            self.external_wall_ms = int(body.get("wall_ms") or self.external_wall_ms)
            mark = mark_of(entry)
            if mark is not None:
                self.marks.append((seq, mark))
            return
        if "at_ms" in entry:
            self.paced_at_ms = int(entry["at_ms"])
        if "pace" in entry:  # the pace switched on or off: not a command
            self.paced = entry["pace"] == PACE_WALL
            return
        if "predict" in entry:  # an exercise's answer, not a command: nothing else to derive
            self.predictions[int(entry["predict"]["n"])] = int(entry["predict"]["choice"])
            return
        if "hint" in entry:
            self.hints_shown = max(self.hints_shown, int(entry["hint"]) + 1)
            return
        if PIPELINE in entry:  # not a command: what the checker judges from now on, so it reads the log again
            self.declared_pipelines = tuple(Pipeline.from_dict(p) for p in entry[PIPELINE])
            self.anomalies = None
            return
        if is_command(entry):
            self.command_seqs.append(seq)
        if "n" in entry:
            n = int(entry["n"])
            self.cursor = max(self.cursor, n + 1)
            self.step_outcomes[n] = entry.get("outcome", OK)
            self.scenario_steps[n] = len(self.command_seqs)
        else:
            self.own_count += 1
        mark = mark_of(entry)
        if mark is not None:
            self.marks.append((seq, mark))
        step = entry.get("step")
        if step is not None:
            label = step if isinstance(step, str) else next(iter(step), "")
            actor, _sep, action = label.partition(".")
            if action == "produce":
                self.produced[actor] = self.produced.get(actor, 0) + 1

    def checkpoint(self, state: bytes, checker: bytes | None = None) -> Checkpoint:
        return Checkpoint(
            state,
            dict(self.actors),
            self.cursor,
            dict(self.step_outcomes),
            self.own_count,
            len(self.marks),
            dict(self.produced),
            dict(self.predictions),
            self.hints_shown,
            self.paced,
            self.paced_at_ms,
            self.listen,
            self.external_wall_ms,
            self.external_bytes,
            len(self.command_seqs),
            dict(self.scenario_steps),
            copy.deepcopy(self.derived),
            checker,
            self.declared_pipelines,
        )

    def resume(self, head: Live, length: int, cp: Checkpoint) -> None:
        """Take the first `length` commands of `head` and what `cp` (the checkpoint at `length`) derived from them."""
        self.commands, self.row_ids = head.commands[:length], head.row_ids[:length]
        self.actors = dict(cp.actors)
        self.cursor, self.step_outcomes, self.own_count = cp.cursor, dict(cp.step_outcomes), cp.own_count
        self.marks, self.produced = head.marks[: cp.marks], dict(cp.produced)
        self.predictions, self.hints_shown = dict(cp.predictions), cp.hints_shown
        self.paced, self.paced_at_ms = cp.paced, cp.paced_at_ms
        self.command_seqs, self.scenario_steps = head.command_seqs[: cp.commands], dict(cp.scenario_steps)
        self.derived = copy.deepcopy(dict(cp.derived))  # what the panels derived from a prefix of these commands
        self.sql_checkpointed_ms = float(getattr(getattr(self.backend, "db", None), "spent_ms", 0.0))
        self.listen, self.external_wall_ms, self.external_bytes = cp.listen, cp.external_wall_ms, cp.external_bytes
        self.declared_pipelines = cp.pipelines

    @property
    def pipelines(self) -> tuple[Pipeline, ...]:
        """The pipelines the anomaly checker judges: as declared from the page, else the scenario's."""
        if self.declared_pipelines is not None:
            return self.declared_pipelines
        return self.scenario.pipelines if self.scenario is not None else ()

    @property
    def length(self) -> int:
        """Entries of the log (commands, answers, hints, pace switches)."""
        return len(self.commands)

    @property
    def step_count(self) -> int:
        """Steps so far: the log's commands (see the module's docstring)."""
        return len(self.command_seqs)

    def entries_at(self, k: int) -> int:
        """How many of the log's entries step k is made of: every entry before the (k+1)-th command."""
        return self.command_seqs[k] if k < len(self.command_seqs) else len(self.commands)

    def step_of(self, seq: int) -> int:
        """The step a log entry belongs to: the number of commands up to and including it."""
        return bisect_right(self.command_seqs, seq)

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self.scenario.steps) if self.scenario is not None else ()

    def producers(self) -> list[str]:
        return [n for n, a in self.actors.items() if a.kind == PRODUCER]

    def consumers(self) -> list[str]:
        return [n for n, a in self.actors.items() if a.kind == CONSUMER]

    def topics(self) -> dict[str, int]:
        return {t.name: t.partitions for t in self.cluster.topics}

    def transactional_ids(self) -> list[str]:
        seen: list[str] = []
        for a in self.actors.values():
            if a.kind == PRODUCER and a.transactional_id and a.transactional_id not in seen:
                seen.append(a.transactional_id)
        return seen

    def next_value(self, actor: str) -> str:
        """A default record value for one-click produce: the actor's name and a counter, e.g. A-3."""
        return f"{actor}-{self.produced.get(actor, 0) + 1}"


def run_entry(live: Live, entry: Mapping[str, Any]) -> dict[str, Any]:
    """Carry out a logged entry (a step, or an actor added) on the live backend; the entry as it should be logged
    now: with the outcome it gave, and the producers it left fenced that were not before."""
    if external.is_external(entry):
        body = {k: v for k, v in entry.items() if k != "outcome"}
        return {**body, "outcome": external.apply(live.backend, body, external.position_of(live))}
    if not is_command(entry):
        return {**entry, "outcome": "ok"}
    if external.core_of(live.backend) is not None:
        # clients are served: while they are connected the clock follows the wall clock, so the time since the last
        # thing they did passes before the step or the actor added (recorded, so that a replay passes it too: an
        # actor made later starts its clients' timers later)
        vt = external.now_of(live)
        if vt is not None:
            entry = {**entry, "vt": vt}
        external.before_step(live.backend, entry, external.position_of(live))
    if "add" in entry:
        spec = actor_from_entry(entry["add"])
        live.backend.add_actor(spec)
        live.actors[spec.name] = spec
        return {**{k: entry[k] for k in ("add", "vt") if k in entry}, "outcome": "ok"}
    step = step_from_entry(entry["step"], int(entry.get("n", 0)))
    before = live.backend.fenced_actors()
    out: dict[str, Any] = {"step": entry["step"]}
    if "n" in entry:
        out["n"] = entry["n"]
    elapsed = int(entry.get("elapsed_ms") or 0)
    pass_time = getattr(live.backend, "pass_time", None)
    if elapsed > 0 and pass_time is not None and not step.is_note:
        # the wall time the user took before this command passes on the simulator's clock first (recorded: a
        # replay passes the same time); what changed meanwhile is what made the outcome depend on timing
        out["elapsed_ms"] = elapsed
        meanwhile = pass_time(elapsed)
        if meanwhile:
            out["meanwhile_fatal"] = meanwhile
    if "at_ms" in entry:
        out["at_ms"] = entry["at_ms"]
    if "vt" in entry:
        out["vt"] = entry["vt"]
    outcome = live.backend.apply(step)
    external.after_step(live.backend)
    out["outcome"] = outcome
    newly = sorted(live.backend.fenced_actors() - before)
    if newly:
        out["fenced"] = newly
    out.update(reads(live.backend, step))
    return out
