"""Comparisons kept for every process: each computed once per (what is run, the pair of profiles, the bounds it ran
under), a scenario by its text's content address (models.text_id: a shared scenario's ScenarioText id), a session by
its log's version.

Follows models.Compared: a comparison is kept in the database (the fields and values as zlib-compressed JSON, in no
language: labels are translated when shown), so that any step of it, in any server process, costs a lookup; the
least recently shown go past compares_kept. This process keeps the last few decoded.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from playground.engine.spec import Profile, profile_from_key
from playground.models import Compared, Session, text_id
from playground.session import limits, store
from playground.session.compare.reading import Field
from playground.session.compare.rows import Comparison, State, Stop, _differences, _Fields
from playground.session.compare.running import run
from playground.session.compare.subject import Command, Subject, commands_of_log, commands_of_steps
from playground.session.replay import spec_of

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
