"""Running what is compared in two profiles, in step, under a session's bounds: both sides on the simulator, from the
same seed, one command at a time, each read after every command.

Follows a session's SQL budgets (issue 30; README "Limits"; session/limits.py): each side's app.sql statements and
reconciliation queries run under db_statement_ms each and db_session_ms in all, and both sides' under the comparing
client's db_ms_per_minute (a session counts the same against its creator's). A budget spent stops the comparison
before the next step that would spend more, and the page says which side stopped before which step. At most
compare_steps steps are run (kept.py gives it no more: a longer scenario or log is compared over its first ones, and
the page says so), and at most compare_values values read.
"""

from __future__ import annotations

from collections.abc import Sequence

from playground.engine.backend import OK
from playground.engine.spec import APP, Profile
from playground.scenario.database import with_database
from playground.scenario.engines import make_backend
from playground.session import limits
from playground.session.compare.reading import _bounded, _Reader
from playground.session.compare.rows import Comparison, State, Stop, _differences, _Fields
from playground.session.compare.subject import Command, Subject


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
