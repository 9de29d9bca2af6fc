"""One scenario (or a session's command log) in two profiles, side by side (issue 9's compare view).

Both sides run on the simulator, from the same seed, one command at a time and in step; after each command every
side is read into the same flat list of fields, and the fields whose values differ are the differences. The web
layer only renders a `Comparison`; nothing here knows about requests.

One idea a module, each importing only those before it: `subject` (the pair of profiles and what both sides run),
`reading` (one side's fields after every step, read incrementally), `rows` (the comparison's rows and differences,
and what the page shows at a step), `running` (both sides in step under a session's SQL budgets and the compare
bounds) and `kept` (each comparison computed once and kept in the database and this process: models.Compared).
This package's names are those callers import.
"""

from playground.session.compare.kept import (
    BOUNDS,
    FORMAT,
    KEPT_HERE,
    TOUCH_EVERY_S,
    decode,
    encode,
    of_scenario,
    of_session,
)
from playground.session.compare.reading import (
    MAX_SHOWN,
    MAX_VALUE_CHARS,
    NONE,
    OUTCOME,
    THIS_STEP,
    WIRE,
    Field,
)
from playground.session.compare.rows import SAME_STATE, Comparison, Row, State, Stop, limit_notes, step_view
from playground.session.compare.running import run
from playground.session.compare.subject import (
    OTHER,
    PROFILES,
    Command,
    CompareError,
    Subject,
    commands_of_log,
    commands_of_steps,
    other_profile,
    profile_from_text,
    profile_text,
)

__all__ = [
    "BOUNDS",
    "FORMAT",
    "KEPT_HERE",
    "MAX_SHOWN",
    "MAX_VALUE_CHARS",
    "NONE",
    "OTHER",
    "OUTCOME",
    "PROFILES",
    "SAME_STATE",
    "THIS_STEP",
    "TOUCH_EVERY_S",
    "WIRE",
    "Command",
    "CompareError",
    "Comparison",
    "Field",
    "Row",
    "State",
    "Stop",
    "Subject",
    "commands_of_log",
    "commands_of_steps",
    "decode",
    "encode",
    "limit_notes",
    "of_scenario",
    "of_session",
    "other_profile",
    "profile_from_text",
    "profile_text",
    "run",
    "step_view",
]
