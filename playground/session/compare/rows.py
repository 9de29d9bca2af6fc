"""A comparison's rows and differences: both sides' states after every step (`Comparison`), each field as a row of
A's and B's values, the fields whose values differ (and those a step made differ), and what the page shows at a step
(`step_view`), bounds that cut it short said in a sentence. The web layer only renders a `Comparison`; nothing here
knows about requests.

Follows each client's own names for one client state (librdkafka's INIT is kafka-clients' UNINITIALIZED: not a
difference), and, for epochs that differ under two transaction versions, Kafka's TransactionCoordinator
(endTransaction bumps the epoch under transaction.version 2, KIP-890).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from playground.engine.spec import Profile
from playground.session import limits
from playground.session.compare.reading import NONE, Field
from playground.session.compare.subject import Command, CompareError

# Client states that are one state under two names (librdkafka's INIT is kafka-clients' UNINITIALIZED): the same for
# the comparison, each still shown as its client names it.
SAME_STATE = {"UNINITIALIZED": "INIT"}


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
