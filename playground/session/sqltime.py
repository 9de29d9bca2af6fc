"""The reconciliation query's time in a live session, counted (design.md, principle 10; README "Limits").

A session's app.sql statements are bounded where a command runs them (commands.check_sql_budget: the session's
db_session_ms in all, its creator's db_ms_per_minute). The reconciliation query (playground/scenario/database.py)
runs at another moment: whenever the session is shown (the update after a command, a viewer's snapshot, a step of
`?at=`), up to db_statement_ms each time. So it is counted here, where a session is read for showing: its time is
charged to the session's creator's db_ms_per_minute, and while that is spent the query is not run and the panel
says why. It is not counted in db_session_ms, which bounds what every replay of the log pays again: a replay runs
no reconciliation. (A comparison runs it after every step of both sides and counts it there too:
session/compare/running.py.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext as _

from playground.session import limits

if TYPE_CHECKING:
    from playground.session.live import Live


def view(live: Live, log_limit: int) -> dict[str, Any]:
    """`live.backend.view(log_limit)`, its reconciliation query counted against `live.owner`'s minute (or, that
    spent, not run)."""
    db = getattr(live.backend, "db", None)
    if db is None or not db.spec.reconcile:
        return live.backend.view(log_limit)
    who = live.owner
    if limits.over("db_ms_per_minute", who):
        db.reconcile_refused = "SQL_LIMIT: " + _("the reconciliation query waits. %(why)s") % {
            "why": limits.reached("db_ms_per_minute")
        }
    before = db.reconcile_ms
    try:
        return live.backend.view(log_limit)
    finally:
        db.reconcile_refused = None
        spent = db.reconcile_ms - before
        if spent > 0:
            limits.charge("db_ms_per_minute", who, spent)
