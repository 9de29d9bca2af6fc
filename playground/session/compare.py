"""One scenario (or a session's command log) in two profiles, side by side (issue 9's compare view).

Both sides run on the simulator, from the same seed, one command at a time; after each command every side is read
into the same flat list of fields (the step's outcome and the wire errors it met, each producer's epoch and client
state, each transactional id's `__transaction_state` entry, each partition's COMMIT/ABORT markers, HW and LSO, what
each consumer got), and the fields whose values differ are the differences. The web layer only renders a
`Comparison`; nothing here knows about requests.

A comparison is computed once for (what is run, seed, the two profiles) and kept in a small cache, so stepping
through it costs a render.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext as _

from playground.engine.backend import OK
from playground.engine.spec import (
    CONSUMER,
    DEFAULT_PROFILE,
    ActorSpec,
    ClusterSpec,
    Profile,
    Step,
    profile_from_key,
)
from playground.engine.spec import PROFILES as ALL_PROFILES
from playground.scenario.engines import make_backend
from playground.session.live import CommandError, actor_from_entry, is_command, step_from_entry

if TYPE_CHECKING:
    from playground.scenario.database import DatabaseSpec

# Every profile of this playground, in the order the pair's choice lists them.
PROFILES: tuple[Profile, ...] = ALL_PROFILES
# The other side by default: the newest Kafka with the Java client (or, when that is the item's own, the default).
OTHER = Profile("4", "java")
MAX_COMMANDS = 2000  # a comparison re-runs everything twice on the simulator: bounded like everything else
CACHE_SIZE = 32

# Client states that are one state under two names (librdkafka's INIT is kafka-clients' UNINITIALIZED): the same for
# the comparison, each still shown as its client names it.
SAME_STATE = {"UNINITIALIZED": "INIT"}


class CompareError(CommandError):
    """Bad input to a comparison: the sentence names what is wrong (400), or what does not exist (404)."""


# --------------------------------------------------------------------------------------------------- profiles
def profile_text(profile: Profile) -> str:
    """A profile as the compare URL spells it: 3.9-librdkafka, 4-java, 3.9-java:3.5."""
    return profile.key


def profile_from_text(name: str, text: str | None, default: Profile) -> Profile:
    """`a=4-java` into a profile (empty: `default`); anything else is a 400 naming the parameter and the choices."""
    if text in (None, ""):
        return default
    try:
        return profile_from_key(str(text))
    except ValueError:
        raise CompareError(
            _("%(name)s: %(value)s is not a profile of this playground; choose one of %(choices)s.")
            % {"name": name, "value": str(text)[:40], "choices": ", ".join(profile_text(p) for p in PROFILES)}
        ) from None


def other_profile(profile: Profile) -> Profile:
    return OTHER if profile != OTHER else DEFAULT_PROFILE


# ----------------------------------------------------------------------------------------------- what is run
@dataclass(frozen=True)
class Command:
    """One step both sides carry out: a scenario's step (a note is a step too, as everywhere: session/live.py), or
    an actor added (a session's "add producer")."""

    label: str
    step: Step | None = None
    add: ActorSpec | None = None
    note: Mapping[str, str] | None = None  # a note's text ({lang: text}): a step that changes nothing


def _command(step: Step) -> Command:
    if step.is_note:
        return Command(step.label, step=step, note=dict(step.args.get("text") or {}))
    if "sql" in step.args:  # a database step: its statement, as the session's narrative shows it
        return Command(f"{step.label}: {step.args['sql']}", step=step)
    return Command(step.label, step=step)


def commands_of_steps(steps: Iterable[Step]) -> list[Command]:
    """A scenario's steps as commands, its notes included: step k here is step k of a session of it."""
    return [_command(step) for step in steps]


def commands_of_log(entries: Iterable[Mapping[str, Any]]) -> list[Command]:
    """A session's command log as commands (an exercise's answers and hints are not commands): step k here is the
    session's step k."""
    out: list[Command] = []
    for entry in entries:
        if not is_command(entry):
            continue
        if "add" in entry:
            spec = actor_from_entry(entry["add"])
            out.append(Command(f"+ {spec.kind} {spec.name}", add=spec))
        else:
            out.append(_command(step_from_entry(entry["step"], int(entry.get("n", 0)))))
    return out


# ----------------------------------------------------------------------------------------------- one side
@dataclass(frozen=True)
class Field:
    """One thing to compare: `key` is stable across steps; `group` and `name` are what the page shows."""

    key: str
    group: str
    name: str


def _wire(entry: Mapping[str, Any]) -> str:
    from playground.sim.errors import CODES

    error = entry["error"]
    code = CODES.get(error)
    return f"{entry['rpc']} {error}" + (f" ({code})" if code is not None else "")


def _values(values: Sequence[Any]) -> str:
    return ", ".join("—" if v is None else str(v) for v in values) or "—"


def _read(
    backend: Any, actors: Mapping[str, ActorSpec], outcome: str | None, last_seq: int
) -> tuple[dict[Field, str], int]:
    """Everything the comparison looks at, from the simulator right now; and the timeline's last sequence number."""
    view = backend.view(log_limit=1)
    seen = backend.observe()
    out: dict[Field, str] = {}
    step = _("this step")
    out[Field("outcome", step, _("outcome"))] = "" if outcome is None else outcome
    wire: list[str] = []
    top = last_seq
    for entry in view.get("timeline", []):
        top = max(top, int(entry.get("seq", 0)))
        if entry.get("seq", 0) > last_seq and entry.get("error") and entry.get("direction") == "response":
            text = _wire(entry)
            if text not in wire:
                wire.append(text)
    out[Field("wire", step, _("errors on the wire"))] = "; ".join(wire) if outcome is not None else ""
    for name, p in view.get("producers", {}).items():
        group = _("producer %(name)s") % {"name": name}
        out[Field(f"producer.{name}.epoch", group, _("epoch"))] = "—" if p.get("epoch") is None else str(p["epoch"])
        out[Field(f"producer.{name}.state", group, _("client state"))] = str(p.get("state") or "—")
        error = p.get("last_error") or {}
        out[Field(f"producer.{name}.error", group, _("last error"))] = str(error.get("error") or "—")
    for txid, t in sorted(view.get("transactions", {}).items()):
        group = "__transaction_state " + txid
        out[Field(f"txn.{txid}.state", group, _("state"))] = str(t.get("state") or "—")
        out[Field(f"txn.{txid}.epoch", group, _("epoch"))] = "—" if t.get("epoch") is None else str(t["epoch"])
    for tp in sorted(seen.get("partitions", {})):
        part = seen["partitions"][tp]
        markers = [
            f"{e['control']} @{e['offset']} · {_('epoch')} {e.get('epoch')}"
            for e in part.get("log", [])
            if e.get("control")
        ]
        out[Field(f"log.{tp}.markers", tp, _("COMMIT/ABORT markers"))] = "; ".join(markers) or "—"
        out[Field(f"log.{tp}.hw", tp, _("high watermark"))] = str(part.get("high_watermark"))
        out[Field(f"log.{tp}.lso", tp, "LSO")] = str(part.get("last_stable_offset"))
    rec = (view.get("database") or {}).get("reconcile")
    if rec and rec.get("columns"):  # the scenario's reconciliation query, as the "database vs Kafka" panel runs it
        group = _("database vs Kafka")
        checks = list(rec.get("checks") or [])
        gaps = [row for row in rec.get("rows") or [] if any(row[i] == 0 for i in checks)]
        out[Field("db.gaps", group, _("rows where they disagree"))] = str(len(gaps))
        out[Field("db.gap_rows", group, ", ".join(rec["columns"]))] = " · ".join(_values(row) for row in gaps) or "—"
    received = seen.get("consumers", {})
    for name, spec in actors.items():
        if spec.kind != CONSUMER:
            continue
        group = f"{spec.isolation_level} {name}"
        per = received.get(name, {})
        got = " · ".join(f"{tp}: {_values(per[tp])}" for tp in sorted(per)) if per else "—"
        out[Field(f"consumer.{name}.got", group, _("got"))] = got
    return out, top


def _comparable(key: str, value: str) -> str:
    return SAME_STATE.get(value, value) if key.endswith(".state") and key.startswith("producer.") else value


def run_side(
    cluster: ClusterSpec,
    actors: Mapping[str, ActorSpec],
    database: DatabaseSpec | None,
    seed: int,
    profile: Profile,
    commands: Sequence[Command],
) -> list[dict[Field, str]]:
    """The fields before any command (index 0) and after each one (index k), on a fresh simulator."""
    from playground.scenario.database import with_database

    backend = with_database(make_backend("sim", cluster, dict(actors), seed=seed, profile=profile), database)
    actors = dict(actors)
    try:
        fields, seq = _read(backend, actors, None, -1)
        states = [fields]
        for command in commands:
            if command.add is not None:
                backend.add_actor(command.add)
                actors[command.add.name] = command.add
                outcome = OK
            else:
                assert command.step is not None  # a command is a step or an actor added
                outcome = backend.apply(command.step)
            fields, seq = _read(backend, actors, outcome, seq)
            states.append(fields)
        return states
    finally:
        backend.close()


# ----------------------------------------------------------------------------------------------- both sides
@dataclass(frozen=True)
class Row:
    field: Field
    a: str
    b: str
    differs: bool
    changed: bool  # the pair of values is not what it was before this step (this step made or moved the difference)


@dataclass
class Comparison:
    title: Any  # {lang: text} or a string
    a: Profile
    b: Profile
    seed: int
    commands: list[Command]
    states_a: list[dict[Field, str]]
    states_b: list[dict[Field, str]]
    # per k (0..n): the keys that differ after k commands, and those of them this step made or changed
    differing: list[list[str]] = field(default_factory=list)
    new: list[list[str]] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.commands)

    def rows(self, k: int) -> list[Row]:
        """Every field after k commands, side A and side B, in a stable order (a field only one side has is "—")."""
        a, b = self.states_a[k], self.states_b[k]
        prev_a, prev_b = self.states_a[max(0, k - 1)], self.states_b[max(0, k - 1)]
        fields = list(a) + [f for f in b if f not in a]
        out = []
        for f in fields:
            va, vb = a.get(f, "—"), b.get(f, "—")
            differs = _comparable(f.key, va) != _comparable(f.key, vb)
            changed = k > 0 and (prev_a.get(f, "—"), prev_b.get(f, "—")) != (va, vb)
            out.append(Row(f, va, vb, differs, differs and (changed or f.key in ("outcome", "wire"))))
        return out

    def outcomes(self, k: int) -> tuple[str, str]:
        return (self.states_a[k][_outcome_field()], self.states_b[k][_outcome_field()]) if k else ("", "")

    def next_difference(self, k: int) -> int | None:
        return next((j for j in range(k + 1, self.length + 1) if self.new[j]), None)

    def previous_difference(self, k: int) -> int | None:
        return next((j for j in range(k - 1, 0, -1) if self.new[j]), None)

    def check_at(self, k: int) -> int:
        if not 0 <= k <= self.length:
            raise CompareError(
                _("Step %(k)s is not in this comparison: it has steps 0 to %(n)d.") % {"k": k, "n": self.length},
                status=404,
            )
        return k


def _outcome_field() -> Field:
    return Field("outcome", _("this step"), _("outcome"))


def _differences(c: Comparison) -> None:
    for k in range(c.length + 1):
        rows = c.rows(k)
        c.differing.append([r.field.key for r in rows if r.differs])
        c.new.append([r.field.key for r in rows if r.changed])


_lock = threading.Lock()
_cache: OrderedDict[str, Comparison] = OrderedDict()


def compare(
    *,
    title: Any,
    cluster: ClusterSpec,
    actors: Mapping[str, ActorSpec],
    database: DatabaseSpec | None,
    seed: int,
    commands: Sequence[Command],
    a: Profile,
    b: Profile,
    identity: str,
) -> Comparison:
    """Run `commands` under profiles a and b on the simulator (same seed) and compare them after every command.
    `identity` names what is run (the scenario's text, or a session's log): with the seed, the profiles and the
    language it is the cache's key."""
    if len(commands) > MAX_COMMANDS:
        raise CompareError(
            _("This log has %(n)d commands; a comparison runs at most %(max)d.")
            % {"n": len(commands), "max": MAX_COMMANDS},
            status=422,
        )
    from django.utils.translation import get_language

    key = hashlib.sha256(
        json.dumps([identity, seed, profile_text(a), profile_text(b), get_language()]).encode()
    ).hexdigest()
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    c = Comparison(
        title,
        a,
        b,
        seed,
        list(commands),
        run_side(cluster, actors, database, seed, a, commands),
        run_side(cluster, actors, database, seed, b, commands),
    )
    _differences(c)
    with _lock:
        _cache[key] = c
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return c


def of_scenario(scenario: Any, a: Profile, b: Profile, source: str = "") -> Comparison:
    """A scenario (library or shared) under two profiles."""
    return compare(
        title=scenario.title,
        cluster=scenario.cluster,
        actors=scenario.actors,
        database=scenario.database,
        seed=scenario.seed,
        commands=commands_of_steps(scenario.steps),
        a=a,
        b=b,
        identity="scenario:" + (source or scenario.source or scenario.id),
    )


def of_session(live: Any, a: Profile, b: Profile) -> Comparison:
    """A session's command log, re-run under two profiles on the simulator (whatever backend it ran on)."""
    from playground.session.replay import _declared_actors

    entries = [{k: v for k, v in e.items() if k not in ("outcome", "fenced")} for e in live.commands]
    title = live.scenario.title if live.scenario is not None else _("Free play")
    return compare(
        title=title,
        cluster=live.cluster,
        actors=_declared_actors(live),
        database=live.scenario.database if live.scenario is not None else None,
        seed=live.seed,
        commands=commands_of_log(entries),
        a=a,
        b=b,
        identity="session:"
        + json.dumps([live.scenario.source if live.scenario else "", entries], sort_keys=True, default=str),
    )


# ------------------------------------------------------------------------------------------------ for the page
def step_view(c: Comparison, k: int, lang: str) -> dict[str, Any]:
    """What the page shows at step k: the command and its notes, both outcomes, the fields by group (each row lit
    when the sides differ, brighter when this step made the difference), the differences' summary, the step list,
    and where the stepping buttons go."""
    from playground.scenario.i18n import pick

    rows = c.rows(k)
    groups: list[tuple[str, list[Row]]] = []
    for row in rows:
        if row.field.key in ("outcome", "wire"):
            continue
        if not groups or groups[-1][0] != row.field.group:
            groups.append((row.field.group, []))
        groups[-1][1].append(row)
    by_key = {r.field.key: r for r in rows}
    command = c.commands[k - 1] if k else None
    after: list[str] = []  # the notes right after this step: a scenario often explains a step just after it
    for cmd in c.commands[k:]:
        if cmd.note is None:
            break
        after.append(pick(cmd.note, lang))
    steps = [
        {
            "k": j,
            "label": cmd.label,
            "note": pick(cmd.note, lang) if cmd.note is not None else None,
            "a": c.states_a[j][_outcome_field()],
            "b": c.states_b[j][_outcome_field()],
            "lit": bool(c.new[j]),
            "differs": bool(c.differing[j]),
        }
        for j, cmd in enumerate(c.commands, start=1)
    ]
    return {
        "command": command,
        "notes": [pick(command.note, lang)] if command is not None and command.note is not None else [],
        "notes_after": after if command is None or command.note is None else [],
        "outcome": by_key["outcome"],
        "wire": by_key["wire"],
        "tv_epochs": _tv_epoch_note(c, rows),
        "sides": [
            {
                "name": name,
                "label": p.label,
                # as a session's header shows it: the level the cluster has finalized / the protocol this client runs
                "cluster_tv": p.finalized_transaction_version,
                "tv": p.transaction_version,
                "outcome": getattr(by_key["outcome"], name),
                "wire": getattr(by_key["wire"], name),
            }
            for name, p in (("a", c.a), ("b", c.b))
        ],
        "groups": groups,
        "diffs": [r for r in rows if r.differs],
        "new": sum(1 for r in rows if r.changed),
        "steps": steps,
        "prev": k - 1 if k > 0 else None,
        "next": k + 1 if k < c.length else None,
        "prev_diff": c.previous_difference(k),
        "next_diff": c.next_difference(k),
    }


def _tv_epoch_note(c: Any, rows: list[Any]) -> str:
    """Why epochs differ when only one side runs KIP-890's protocol: the coordinator bumps the epoch at every EndTxn
    under transaction.version 2 (TransactionCoordinator.endTransaction), never under 1. Empty when it does not apply."""
    if c.a.transaction_version == c.b.transaction_version:
        return ""
    if not any(r.differs and r.field.key.endswith(".epoch") for r in rows):
        return ""
    v2 = c.a if c.a.transaction_version == 2 else c.b
    return str(
        _(
            "The epochs differ because %(side)s runs transaction.version 2 (KIP-890): its coordinator bumps the producer "
            "epoch at every commit and abort (EndTxn), so each transaction ended adds one; under transaction.version 1 "
            "the epoch changes only at InitProducerId and when a transaction is fenced or times out."
        )
        % {"side": v2.label}
    )
