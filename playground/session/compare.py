"""One scenario (or a session's command log) in two profiles, side by side (issue 9's compare view).

Both sides run on the simulator, from the same seed, one command at a time and in step; after each command every
side is read into the same flat list of fields (the step's outcome and the wire errors it met, each producer's
epoch and client state, each transactional id's `__transaction_state` entry, each partition's COMMIT/ABORT markers,
HW and LSO, the scenario database's reconciliation, what each consumer got), and the fields whose values differ are
the differences. The web layer only renders a `Comparison`; nothing here knows about requests.

What a comparison may spend is bounded as a session is (issue 30; README "Limits"): each side's app.sql statements
and reconciliation queries run under db_statement_ms each and db_session_ms in all, and both sides' under the
comparing client's db_ms_per_minute (a session counts the same against its creator's). A budget spent stops the
comparison before the next step that would spend more, and the page says which side stopped before which step.
At most compare_steps steps are run: a longer scenario or log is compared over its first ones, and the page says so.

A comparison is computed once per (what is run, the pair of profiles, the bounds it ran under): a scenario by its
text's content address (models.text_id: a shared scenario's ScenarioText id), a session by its log's version. It is
kept in the database (models.Compared: the fields and values as zlib-compressed JSON, in no language: labels are
translated when shown), so that any step of it, in any server process, costs a lookup; the least recently shown go
past compares_kept. This process keeps the last few decoded.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import zlib
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop as N_

from playground.engine.backend import OK
from playground.engine.spec import (
    APP,
    CONSUMER,
    DEFAULT_PROFILE,
    ActorSpec,
    ClusterSpec,
    Profile,
    Step,
    profile_from_key,
)
from playground.engine.spec import PROFILES as ALL_PROFILES
from playground.models import Compared, Session, text_id
from playground.scenario.database import WithDatabase, with_database
from playground.scenario.engines import make_backend
from playground.session import limits, store
from playground.session.live import CommandError, actor_from_entry, is_command, step_from_entry
from playground.session.replay import spec_of

if TYPE_CHECKING:
    from playground.scenario.database import DatabaseSpec

# Every profile of this playground, in the order the pair's choice lists them.
PROFILES: tuple[Profile, ...] = ALL_PROFILES
# The other side by default: the newest Kafka with the Java client (or, when that is the item's own, the default).
OTHER = Profile("4", "java")
FORMAT = 1  # of a stored comparison (models.Compared): part of its key, so a new format never reads an old one
KEPT_HERE = 16  # decoded comparisons this process keeps (each is the fields and values of every step, both sides)
TOUCH_EVERY_S = 60.0  # a stored comparison's "last shown" is written at most this often (a GET should not write)
# The bounds a comparison runs under: a comparison computed under others is another one.
BOUNDS = (
    "compare_steps",
    "compare_values",
    "db_session_ms",
    "db_statement_ms",
    "db_value_bytes",
    "db_rows",
    "db_bytes",
)

# Client states that are one state under two names (librdkafka's INIT is kafka-clients' UNINITIALIZED): the same for
# the comparison, each still shown as its client names it.
SAME_STATE = {"UNINITIALIZED": "INIT"}
NONE = "—"
MAX_SHOWN = 20  # items of a list a field shows (a partition's markers, what a consumer got): the newest
MAX_VALUE_CHARS = 500  # of a value (a record's value is up to 1 KiB, a reconciliation's row 16 KiB): the rest digested


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
    """One thing to compare: `key` is stable across steps; its group and name are what the page shows, kept as
    messages to translate when shown (a comparison serves every language): `*_msg` with `*_arg` as its %(name)s,
    or, when `*_msg` is empty, `*_arg` as it is (a partition, a transactional id)."""

    key: str
    group_msg: str
    name_msg: str
    group_arg: str = ""
    name_arg: str = ""

    @property
    def group(self) -> str:
        return _label(self.group_msg, self.group_arg)

    @property
    def name(self) -> str:
        return _label(self.name_msg, self.name_arg)


def _label(msg: str, arg: str) -> str:
    if not msg:
        return arg
    return str(_(msg) % {"name": arg} if arg else _(msg))


THIS_STEP = N_("this step")
OUTCOME = Field("outcome", THIS_STEP, N_("outcome"))
WIRE = Field("wire", THIS_STEP, N_("errors on the wire"))


def _wire(entry: Mapping[str, Any]) -> str:
    from playground.sim.errors import CODES

    error = entry["error"]
    code = CODES.get(error)
    return f"{entry['rpc']} {error}" + (f" ({code})" if code is not None else "")


def _values(values: Sequence[Any]) -> str:
    return ", ".join(NONE if v is None else str(v) for v in values) or NONE


class _Tail:
    """A list a field shows that grows with the history (a partition's markers, what a consumer got): how long it is,
    its newest MAX_SHOWN items, and a digest of all of it, kept as items come. A longer list is shown as its length,
    its newest items and the digest, so that two lists that differ anywhere still differ on the page."""

    def __init__(self) -> None:
        self.count = 0
        self.newest: deque[str] = deque(maxlen=MAX_SHOWN)
        self.digest = hashlib.blake2b(digest_size=4)

    def add(self, item: str) -> None:
        self.count += 1
        self.newest.append(item)
        self.digest.update(item.encode() + b"\x1f")

    def text(self, sep: str) -> str:
        if not self.count:
            return NONE
        if self.count <= MAX_SHOWN:
            return sep.join(self.newest)
        return f"({self.count:,}) …{sep}{sep.join(self.newest)} #{self.digest.hexdigest()}"


class _Reader:
    """One side's fields after each command, from the simulator. What the cluster's size bounds (producers,
    transactions, watermarks, the last 200 RPCs: view() with a window of one record or none) is read anew each time;
    what grows with the history (every partition's markers, what every consumer got) only as far as it is new, into
    _Tails: a step costs the same at step 10 and at step 500, whatever the logs hold."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        # the simulator itself (a comparison runs on nothing else): no second reconciliation, and it settles
        self.inner: Any = backend.inner if isinstance(backend, WithDatabase) else backend
        self.seq = -1  # the last RPC seen
        self.since: dict[str, int] = {}  # per partition: the next offset to read
        self.markers: dict[str, _Tail] = {}
        self.got: dict[str, dict[str, _Tail]] = {}
        self.received: dict[str, int] = {}  # per consumer: the records it got, as far as read

    def read(self, actors: Mapping[str, ActorSpec], outcome: str | None) -> list[tuple[Field, str]]:
        """Everything the comparison looks at, right now, in the order the page shows it."""
        view = self.backend.view(log_limit=1)
        out: list[tuple[Field, str]] = [
            (OUTCOME, "" if outcome is None else outcome),
            (WIRE, self._wire(view, outcome)),
        ]
        for name, p in view.get("producers", {}).items():
            group = N_("producer %(name)s")
            error = p.get("last_error") or {}
            out.append((Field(f"producer.{name}.epoch", group, N_("epoch"), name), _or_none(p.get("epoch"))))
            out.append((Field(f"producer.{name}.state", group, N_("client state"), name), str(p.get("state") or NONE)))
            out.append(
                (Field(f"producer.{name}.error", group, N_("last error"), name), str(error.get("error") or NONE))
            )
        for txid, t in sorted(view.get("transactions", {}).items()):
            group = "__transaction_state " + txid
            out.append((Field(f"txn.{txid}.state", "", N_("state"), group), str(t.get("state") or NONE)))
            out.append((Field(f"txn.{txid}.epoch", "", N_("epoch"), group), _or_none(t.get("epoch"))))
        # The logs and what consumers got, once in-flight work has finished (a commit's markers are written after it
        # returns), as observe() reads them: what the producers and the coordinator said is read before, as it was.
        self.inner.settle()
        settled = self.inner.view(log_limit=0)
        partitions = settled.get("partitions", {})
        self._read_markers(partitions)
        for tp in sorted(partitions):
            part = partitions[tp]
            markers = self.markers.get(tp, _Tail()).text("; ")
            out.append((Field(f"log.{tp}.markers", "", N_("COMMIT/ABORT markers"), tp), markers))
            out.append((Field(f"log.{tp}.hw", "", N_("high watermark"), tp), str(part.get("high_watermark"))))
            out.append((Field(f"log.{tp}.lso", "", "", tp, "LSO"), str(part.get("last_stable_offset"))))
        out.extend(_reconciliation(view))
        consumers = settled.get("consumers", {})
        self._read_received(consumers)
        for name, spec in actors.items():
            if spec.kind != CONSUMER:
                continue
            got = NONE
            if name in consumers:
                tails = self.got.get(name, {})
                tps = {tp for tp in partitions if tp.rpartition("-")[0] in spec.topics} | set(tails)
                got = " · ".join(f"{tp}: {tails.get(tp, _Tail()).text(', ')}" for tp in sorted(tps)) or NONE
            out.append((Field(f"consumer.{name}.got", "", N_("got"), f"{spec.isolation_level} {name}"), got))
        return out

    def _wire(self, view: Mapping[str, Any], outcome: str | None) -> str:
        """The errors the brokers answered during the step (the RPCs after the last one seen)."""
        wire: list[str] = []
        top = self.seq
        for entry in view.get("timeline", []):
            top = max(top, int(entry.get("seq", 0)))
            if entry.get("seq", 0) > self.seq and entry.get("error") and entry.get("direction") == "response":
                text = _wire(entry)
                if text not in wire:
                    wire.append(text)
        self.seq = top
        return "; ".join(wire) if outcome is not None else ""

    def _read_markers(self, partitions: Mapping[str, Any]) -> None:
        for tp, part in partitions.items():
            if int(part.get("log_end_offset", 0)) < self.since.get(tp, 0):  # the log was cut: read it again
                self.since[tp], self.markers[tp] = 0, _Tail()
        for tp, entries in self.inner.log_entries(self.since).items():
            for e in entries:
                if e.get("control"):  # "epoch" is translated when shown (_shown): values are in no language
                    self.markers.setdefault(tp, _Tail()).add(f"{e['control']} @{e['offset']} · epoch {e.get('epoch')}")
            if entries:
                self.since[tp] = int(entries[-1]["offset"]) + 1

    def _read_received(self, consumers: Mapping[str, Any]) -> None:
        """What each consumer got since the last step: its last poll's records (the step's), read from the newest
        of what it received; anything else (it got fewer than before: it started over) is read again whole."""
        for name, c in consumers.items():
            total, before = int(c.get("received_total", 0)), self.received.get(name, 0)
            if total == before:
                continue
            polled = self.inner.polled(name) if total > before else []
            if polled and len(polled) == total - before:
                per_tp = Counter(tp for tp, _offset in polled)
                newest = self.inner.view(log_limit=max(per_tp.values()))["consumers"][name]["received"]
                for tp, n in per_tp.items():
                    for record in newest.get(tp, [])[-n:]:
                        self.got.setdefault(name, {}).setdefault(tp, _Tail()).add(_or_none(record.get("value")))
            else:
                self.got[name] = {}
                for tp, values in self.inner.observe().get("consumers", {}).get(name, {}).items():
                    tail = self.got[name].setdefault(tp, _Tail())
                    for value in values:
                        tail.add(_or_none(value))
            self.received[name] = total


def _reconciliation(view: Mapping[str, Any]) -> list[tuple[Field, str]]:
    """The scenario's reconciliation query, as the "database vs Kafka" panel runs it: how many rows disagree, and
    which (the query's rows are at most MAX_ROWS_SHOWN); or its error."""
    rec = (view.get("database") or {}).get("reconcile")
    group = N_("database vs Kafka")
    out: list[tuple[Field, str]] = []
    if rec and rec.get("error"):  # it failed (its statement limit, ...): as the panel says it
        out.append((Field("db.error", group, N_("reconciliation query")), str(rec["error"])))
    if rec and rec.get("columns"):
        checks = list(rec.get("checks") or [])
        gaps = [row for row in rec.get("rows") or [] if any(row[i] == 0 for i in checks)]
        out.append((Field("db.gaps", group, N_("rows where they disagree")), str(len(gaps))))
        columns = ", ".join(rec["columns"])
        out.append((Field("db.gap_rows", group, "", "", columns), " · ".join(_values(row) for row in gaps) or NONE))
    return out


def _bounded(value: str) -> str:
    """A value as kept: its first MAX_VALUE_CHARS characters, and for a longer one how many more and a digest of
    all of it (two values that differ anywhere still differ)."""
    if len(value) <= MAX_VALUE_CHARS:
        return value
    digest = hashlib.blake2b(value.encode(), digest_size=4).hexdigest()
    return f"{value[:MAX_VALUE_CHARS]}… (+{len(value) - MAX_VALUE_CHARS:,}) #{digest}"


def _or_none(value: Any) -> str:
    return NONE if value is None else str(value)


def _shown(key: str, value: str) -> str:
    """A value as the page shows it: the one word inside a value (a marker's epoch) in the page's language."""
    return value.replace(" · epoch ", f" · {_('epoch')} ") if key.endswith(".markers") else value


def _comparable(key: str, value: str) -> str:
    return SAME_STATE.get(value, value) if key.endswith(".state") and key.startswith("producer.") else value


# A side after k commands: the fields read (their indexes in Comparison.fields, in the order read) and their values.
State = tuple[tuple[int, ...], tuple[str, ...]]


class _Fields:
    """The fields both sides have shown so far, each numbered once; each layout of them kept once."""

    def __init__(self) -> None:
        self.fields: list[Field] = []
        self.index: dict[str, int] = {}
        self._layouts: dict[tuple[int, ...], tuple[int, ...]] = {}

    def number(self, f: Field) -> int:
        i = self.index.get(f.key)
        if i is None:
            i = self.index[f.key] = len(self.fields)
            self.fields.append(f)
        return i

    def state(self, read: Sequence[tuple[Field, str]]) -> State:
        layout = tuple(self.number(f) for f, _v in read)
        return self._layouts.setdefault(layout, layout), tuple(v for _f, v in read)


class _Side:
    """One profile's run: a fresh simulator (and the scenario's database beside it), a command at a time."""

    def __init__(
        self,
        name: str,
        profile: Profile,
        what: Subject,
    ) -> None:
        self.name = name
        backend = make_backend("sim", what.cluster, dict(what.actors), seed=what.seed, profile=profile)
        self.backend = with_database(backend, what.database)
        self.actors = dict(what.actors)
        self.reader = _Reader(self.backend)
        self.states: list[State] = []
        self.values_read = 0

    @property
    def sql_ms(self) -> float:
        """What its app.sql statements and reconciliation queries took so far."""
        db = getattr(self.backend, "db", None)
        return 0.0 if db is None else float(db.spent_ms + db.reconcile_ms)

    def read(self, outcome: str | None, fields: _Fields) -> None:
        read = [(f, _bounded(v)) for f, v in self.reader.read(self.actors, outcome)]
        self.values_read += len(read)
        self.states.append(fields.state(read))

    def run(self, command: Command) -> str:
        if command.add is not None:
            self.backend.add_actor(command.add)
            self.actors[command.add.name] = command.add
            return OK
        assert command.step is not None  # a command is a step or an actor added
        return str(self.backend.apply(command.step))

    def close(self) -> None:
        self.backend.close()


# ----------------------------------------------------------------------------------------------- both sides
@dataclass(frozen=True)
class Subject:
    """What is compared: a scenario's steps, or a session's command log (`total`: its steps, of which `commands`
    are the first compare_steps)."""

    title: Any  # {lang: text}, a string, or None (free play)
    cluster: ClusterSpec
    actors: Mapping[str, ActorSpec]
    database: DatabaseSpec | None
    seed: int
    commands: Sequence[Command]
    total: int


@dataclass(frozen=True)
class Stop:
    """Where a budget stopped a comparison: before `step` (the steps before it are compared), on side "a" or "b"
    (its db_session_ms) or on both ("": the comparing client's db_ms_per_minute)."""

    side: str
    step: int
    limit: str


@dataclass(frozen=True)
class Row:
    field: Field
    a: str
    b: str
    differs: bool
    changed: bool  # the pair of values is not what it was before this step (this step made or moved the difference)


@dataclass
class Comparison:
    title: Any  # {lang: text}, a string, or None (free play)
    a: Profile
    b: Profile
    seed: int
    commands: list[Command]  # the steps compared (what the page shows of each: its label and note)
    fields: list[Field]
    states_a: list[State]  # after k commands, k = 0..length
    states_b: list[State]
    total: int  # the steps of what is compared: more than `length` when they were capped or a budget stopped them
    stop: Stop | None = None
    # per k (0..n): the keys that differ after k commands, and those of them this step made or changed
    differing: list[list[str]] = field(default_factory=list)
    new: list[list[str]] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.commands)

    @property
    def shown_title(self) -> Any:
        return _("Free play") if self.title is None else self.title

    def _pairs(self, k: int) -> Iterable[tuple[int, str, str, bool, bool]]:
        """(field, A's value, B's value, differs, changed) after k commands, in the order the page shows them (a field
        only one side has is "—" on the other)."""
        (order_a, values_a), (order_b, values_b) = self.states_a[k], self.states_b[k]
        a, b = dict(zip(order_a, values_a)), dict(zip(order_b, values_b))
        prev_a = dict(zip(*self.states_a[k - 1])) if k else a
        prev_b = dict(zip(*self.states_b[k - 1])) if k else b
        for i in (*order_a, *(i for i in order_b if i not in a)):
            key = self.fields[i].key
            va, vb = a.get(i, NONE), b.get(i, NONE)
            differs = _comparable(key, va) != _comparable(key, vb)
            changed = k > 0 and (prev_a.get(i, NONE), prev_b.get(i, NONE)) != (va, vb)
            yield i, va, vb, differs, differs and (changed or key in ("outcome", "wire"))

    def rows(self, k: int) -> list[Row]:
        """Every field after k commands, side A and side B, in a stable order, as the page shows them."""
        return [
            Row(self.fields[i], _shown(self.fields[i].key, va), _shown(self.fields[i].key, vb), differs, changed)
            for i, va, vb, differs, changed in self._pairs(k)
        ]

    def outcomes(self, k: int) -> tuple[str, str]:
        return (_outcome(self.states_a[k]), _outcome(self.states_b[k])) if k else ("", "")

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


def _outcome(state: State) -> str:
    return state[1][0]  # every read starts with the step's outcome (_read)


def _differences(c: Comparison) -> None:
    c.differing, c.new = [], []
    for k in range(c.length + 1):
        pairs = list(c._pairs(k))
        c.differing.append([c.fields[i].key for i, _a, _b, differs, _c in pairs if differs])
        c.new.append([c.fields[i].key for i, _a, _b, _d, changed in pairs if changed])


def _is_sql(command: Command) -> bool:
    return command.step is not None and command.step.actor == APP and command.step.action == "sql"


def _stopped(sides: Sequence[_Side], k: int, spends: bool, minute_ms: float) -> Stop | None:
    """Whether a bound stops the comparison before step k: the values both sides have read (a step of a big
    cluster reads many: what it costs), or, for a step that runs SQL, a side whose SQL took its db_session_ms (as a
    session's next statement is refused then) or both sides' the client's minute."""
    if sum(side.values_read for side in sides) >= limits.limit("compare_values"):
        return Stop("", k, "compare_values")
    if not spends:
        return None
    session_ms = limits.limit("db_session_ms")
    for side in sides:
        if side.sql_ms >= session_ms:
            return Stop(side.name, k, "db_session_ms")
    if sum(side.sql_ms for side in sides) >= minute_ms:
        return Stop("", k, "db_ms_per_minute")
    return None


def run(what: Subject, a: Profile, b: Profile, client: str = "") -> Comparison:
    """Run `what` under profiles a and b on the simulator (same seed), in step, and read both after every command;
    the SQL both sides spend is charged to `client`'s minute ("": nobody's, the tests' and the command line's)."""
    database = what.database
    spends = database is not None and (bool(database.reconcile) or any(_is_sql(c) for c in what.commands))
    minute_ms = float("inf")
    if spends and client:
        if limits.over("db_ms_per_minute", client):
            raise limits.reached("db_ms_per_minute")
        minute_ms = limits.remaining("db_ms_per_minute", client)
    fields = _Fields()
    sides = [_Side("a", a, what), _Side("b", b, what)]
    stop = None
    try:
        for side in sides:
            side.read(None, fields)
        for k, command in enumerate(what.commands, start=1):
            sql = database is not None and (bool(database.reconcile) or _is_sql(command))
            stop = _stopped(sides, k, sql, minute_ms)
            if stop is not None:
                break
            for side in sides:
                side.read(side.run(command), fields)
    finally:
        spent_ms = sum(side.sql_ms for side in sides)
        for side in sides:
            side.close()
        if client and spent_ms > 0:
            limits.charge("db_ms_per_minute", client, spent_ms)
    done = len(sides[0].states) - 1
    c = Comparison(
        what.title,
        a,
        b,
        what.seed,
        list(what.commands[:done]),
        fields.fields,
        sides[0].states,
        sides[1].states,
        what.total,
        stop,
    )
    _differences(c)
    return c


# ----------------------------------------------------------------------------------------- kept, for every process
_lock = threading.Lock()
_cache: OrderedDict[str, Comparison] = OrderedDict()  # this process's last few, decoded
_touched: dict[str, float] = {}  # when this process last wrote that one of them was shown


def _key(what: str, a: Profile, b: Profile) -> str:
    bounds = [limits.limit(name) for name in BOUNDS]
    return hashlib.sha256(json.dumps([FORMAT, what, a.key, b.key, bounds]).encode()).hexdigest()


def _keep_here(key: str, c: Comparison, shown_at: float) -> Comparison:
    with _lock:
        _cache[key] = c
        _cache.move_to_end(key)
        _touched[key] = shown_at
        while len(_cache) > KEPT_HERE:
            gone, _c = _cache.popitem(last=False)
            _touched.pop(gone, None)
    return c


def _kept(key: str) -> Comparison | None:
    """The comparison under `key`: this process's, or the database's (decoded once here); None when neither. Its
    row's "last shown" is brought up to date at most once a minute, whichever process shows it."""
    now = time.time()
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            stale = now - _touched.get(key, 0.0) > TOUCH_EVERY_S
            if stale:
                _touched[key] = now
    if hit is not None:
        if stale:
            Compared.objects.filter(pk=key).update(used_at=now)
        return hit
    row = Compared.objects.filter(pk=key).values_list("body", "used_at").first()
    if row is None:
        return None
    if now - float(row[1]) > TOUCH_EVERY_S:
        Compared.objects.filter(pk=key).update(used_at=now)
    return _keep_here(key, decode(bytes(row[0])), now)


def _keep(key: str, c: Comparison) -> None:
    """Store a comparison for every process (unless the client's minute stopped it: another client may have more),
    then let the least recently shown go past compares_kept."""
    if c.stop is not None and c.stop.limit == "db_ms_per_minute":
        return
    now = time.time()
    _keep_here(key, c, now)
    Compared.objects.bulk_create([Compared(key=key, body=encode(c), used_at=now)], ignore_conflicts=True)
    kept = limits.limit("compares_kept")
    if Compared.objects.count() > kept:
        old = list(Compared.objects.order_by("-used_at").values_list("key", flat=True)[kept:])
        Compared.objects.filter(key__in=old).delete()


def _computed(key: str, what: Callable[[], Subject], a: Profile, b: Profile, client: str) -> Comparison:
    c = _kept(key)
    if c is None:
        c = run(what(), a, b, client)
        _keep(key, c)
    return c


def of_scenario(scenario: Any, a: Profile, b: Profile, source: str = "", client: str = "") -> Comparison:
    """A scenario (library or shared) under two profiles; `source`: its text (its content address names it)."""

    def what() -> Subject:
        cap = limits.limit("compare_steps")
        commands = commands_of_steps(scenario.steps[:cap])
        return Subject(
            scenario.title,
            scenario.cluster,
            scenario.actors,
            scenario.database,
            scenario.seed,
            commands,
            len(scenario.steps),
        )

    return _computed(_key("text:" + text_id(source or scenario.source), a, b), what, a, b, client)


def of_session(row: Session, a: Profile, b: Profile, client: str = "") -> Comparison:
    """A session's command log (as stored at its row's version), re-run under two profiles on the simulator, whatever
    backend it ran on. Nothing is replayed to find it: the log's rows are read, and only on a miss."""

    def what() -> Subject:
        scenario, cluster, actors = spec_of(row)
        entries, total = store.first_commands(row.id, limits.limit("compare_steps"))
        title = scenario.title if scenario is not None else None
        database = scenario.database if scenario is not None else None
        return Subject(title, cluster, actors, database, row.seed, commands_of_log(entries), total)

    return _computed(_key(f"session:{row.id}:{row.version}", a, b), what, a, b, client)


# -------------------------------------------------------------------------------------------------- stored form
def encode(c: Comparison) -> bytes:
    """A comparison as zlib-compressed JSON: its fields once, and each side as what changed at each step."""
    data = {
        "title": c.title,
        "a": c.a.key,
        "b": c.b.key,
        "seed": c.seed,
        "total": c.total,
        "stop": [c.stop.side, c.stop.step, c.stop.limit] if c.stop is not None else None,
        "commands": [[cmd.label, cmd.note] for cmd in c.commands],
        "fields": [[f.key, f.group_msg, f.name_msg, f.group_arg, f.name_arg] for f in c.fields],
        "sides": [_changes(c.states_a), _changes(c.states_b)],
    }
    return zlib.compress(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode(), 6)


def _changes(states: Sequence[State]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    layout: tuple[int, ...] | None = None
    before: dict[int, str] = {}
    for order, values in states:
        now = dict(zip(order, values))
        step: dict[str, Any] = {"v": [[i, v] for i, v in now.items() if before.get(i) != v]}
        if order != layout:
            step["o"] = list(order)
        out.append(step)
        layout, before = order, now
    return out


def decode(body: bytes) -> Comparison:
    data = json.loads(zlib.decompress(body))
    fields = _Fields()
    for key, group_msg, name_msg, group_arg, name_arg in data["fields"]:
        fields.number(Field(key, group_msg, name_msg, group_arg, name_arg))
    a_states, b_states = (_states(side, fields) for side in data["sides"])
    stop = Stop(*data["stop"]) if data["stop"] else None
    c = Comparison(
        data["title"],
        profile_from_key(data["a"]),
        profile_from_key(data["b"]),
        int(data["seed"]),
        [Command(label, note=note) for label, note in data["commands"]],
        fields.fields,
        a_states,
        b_states,
        int(data["total"]),
        stop,
    )
    _differences(c)
    return c


def _states(changes: Sequence[Mapping[str, Any]], fields: _Fields) -> list[State]:
    out: list[State] = []
    layout: tuple[int, ...] = ()
    values: dict[int, str] = {}
    for step in changes:
        if "o" in step:
            layout = tuple(step["o"])
            layout = fields._layouts.setdefault(layout, layout)
        values.update((int(i), v) for i, v in step["v"])
        out.append((layout, tuple(values[i] for i in layout)))
    return out


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
            "a": _outcome(c.states_a[j]),
            "b": _outcome(c.states_b[j]),
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
        "limits": limit_notes(c),
    }


def limit_notes(c: Comparison) -> list[str]:
    """What a bound cut short, in a sentence: a budget that stopped a side (which one, before which step), or the
    steps a comparison runs at most."""
    if c.stop is not None:
        values = {"k": c.stop.step, "n": f"{limits.limit(c.stop.limit):,}"}
        if c.stop.limit == "db_session_ms":
            side = c.a if c.stop.side == "a" else c.b
            return [
                _(
                    "Side %(side)s (%(profile)s) stopped before step %(k)s: its SQL statements and reconciliation "
                    "queries took %(n)s ms in all, a session's limit (db_session_ms). The steps before it are compared."
                )
                % {**values, "side": c.stop.side.upper(), "profile": side.label}
            ]
        if c.stop.limit == "compare_values":
            return [
                _(
                    "Stopped before step %(k)s: both sides have read %(n)s values (each field after every step), the "
                    "most one comparison reads (compare_values). The steps before it are compared."
                )
                % values
            ]
        return [
            _(
                "Stopped before step %(k)s: your SQL statements took %(n)s ms in the last minute, the limit "
                "(db_ms_per_minute). The steps before it are compared: load the page again in a minute for the rest."
            )
            % values
        ]
    if c.total > c.length:
        return [
            _("This comparison runs the first %(n)s of %(total)s steps, its limit (compare_steps).")
            % {"n": f"{c.length:,}", "total": f"{c.total:,}"}
        ]
    return []


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
