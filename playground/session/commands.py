"""Changing a session: the commit loop, and the commands that go through it (a step, the narrative's next step,
back, reset, run/pause).

Applying a command: catch up -> validate -> `backend.apply(step)` -> append the row in the same database transaction
that checks the session's version -> announce the change (`signals.changed`; the web layer publishes the changed
panels). Who may do this is checked before, by the one place every route goes through (playground/web/commands.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from django.utils.translation import gettext as _

from playground.engine.backend import BackendError
from playground.engine.spec import (
    APP,
    APP_ACTIONS,
    CLUSTER_ACTORS,
    CONSUMER,
    CONSUMER_ACTIONS,
    PRODUCER,
    PRODUCER_ACTIONS,
    ActorSpec,
    Step,
)
from playground.scenario.exercise import SKIP, pending_question
from playground.scenario.model import MAX_PIPELINES
from playground.session import checkpoints, external, limits, realcluster, signals, store
from playground.session.backends import cluster_problem, detached_message, live_only
from playground.session.cache import CACHE
from playground.session.live import PACE_MAX_MS, PACE_OFF, PACE_WALL, PIPELINE, CommandError, Live, run_entry
from playground.session.replay import catch_up, fresh, owner_of, replay, restore

log = logging.getLogger(__name__)


@dataclass
class Change:
    """What a command did: entries appended; or the log cut to its first `truncate` commands (back); or a new log
    (`replace`: reset); and/or the running flag."""

    append: list[dict[str, Any]] = field(default_factory=list)
    truncate: int | None = None
    replace: list[dict[str, Any]] | None = None
    running: bool | None = None
    message: str = ""

    @property
    def empty(self) -> bool:
        return not self.append and self.truncate is None and self.replace is None and self.running is None


def _stored(live: Live, row: Any, change: Change) -> Live | None:
    """Write the change to the database; the Live that reflects it, or None when another process was first."""
    if change.append:
        ids = store.append(row, change.append, change.running)
        if ids is None:
            return None
        live.pending = []
        for entry, row_id in zip(change.append, ids):
            live.record(entry, row_id)
        # the backend reflects the last entry: entries before it (external clients' inputs cut before a command) were
        # applied when they came in, so only the state after all of them is a checkpoint's
        CACHE.keep_checkpoint(live, live.length)
        checkpoints.maybe_store(live)
    elif change.truncate is not None:
        if not store.truncate(row, change.truncate, change.running):
            return None
        live = restore(live, change.truncate)  # time travel: from the nearest checkpoint (deterministic replay)
    elif change.replace is not None:
        ids = store.replace(row, change.replace, change.running)
        if ids is None:
            return None
        live = fresh(row)
        replay(live, zip(change.replace, ids))
    elif not store.set_running(row, bool(change.running)):
        return None
    live.version = row.version + 1
    if change.running is not None:
        live.running = change.running
    CACHE.put(live)
    return live


def commit(
    session_id: str, mutate: Callable[[Live], Change], *, publish: bool = True, allow_detached: bool = False
) -> tuple[Live, Change]:
    """Catch up, let `mutate` validate and apply to the live backend, then store the result in the log.

    `mutate` raises CommandError before touching the backend when the input is bad. When the database row moved
    under us (another process appended first), the backend we changed is dropped and we try again on top.
    """
    with CACHE.lock(session_id):
        for _attempt in range(5):
            row = store.read(session_id)
            live = catch_up(row)
            live.owner = owner_of(row)  # whose budgets its commands spend
            if live.detached and not allow_detached:
                raise CommandError(detached_message(live.detached), status=409)
            if listening_elsewhere(live):
                raise CommandError(
                    _(
                        "External clients drive this session through a listener in another server process: open the "
                        "session again in a moment, or stop the listener there."
                    ),
                    status=409,
                )
            # what external clients sent since the last entry goes into the log before this command (it came first)
            external.cut(live)
            started = perf_counter()
            try:
                change = mutate(live)
            except (CommandError, limits.LimitExceeded):
                raise
            except BackendError as exc:
                if live_only(live.backend_name):
                    # The real backend checks the cluster before it acts: the session is as it was; keep it, so
                    # the same command can simply be tried again once the cluster answers.
                    log.warning("session %s: %s", session_id, exc)
                    raise CommandError(cluster_problem(exc), status=503) from exc
                CACHE.evict(session_id)
                raise CommandError(str(exc)) from exc
            except Exception as exc:
                # A bug in a backend must not turn into a half-applied session: drop what we built, keep the log.
                log.exception("session %s: the backend failed", session_id)
                CACHE.evict(session_id)
                raise CommandError(_("The backend failed on this command: %(e)s") % {"e": exc}, status=422) from exc
            checkpoints.charge(live, (perf_counter() - started) * 1000)  # what a replay of it takes, about
            if live.pending and change.truncate is None and change.replace is None:
                change.append[:0] = live.pending
            if change.empty:
                return live, change
            stored = _stored(live, row, change)
            if stored is None:
                CACHE.evict(session_id)
                continue
            live = stored
            break
        else:
            raise CommandError(_("The session is busy; try again."), status=409)
    if publish:
        signals.changed.send(sender=Live, live=live, langs=store.parse_langs(row.viewer_langs))
    return live, change


# A listener beats every few seconds (listener.py): once its beat is this old, its process is gone.
LISTENER_STALE_S = 30.0


def listening_elsewhere(live: Live) -> bool:
    """Whether another server process listens for this session's external clients (their requests go into its log
    in the order that process handles them, so nobody else may append meanwhile). A listener beats while it lives:
    a stale beat (LISTENER_STALE_S) means its process is gone (killed, say), and the session is anyone's again. A log
    from before the beat: a listener closes itself after `listener_idle_s` without a client, so one quiet longer is
    gone."""
    if not live.listen or live.listen.get("owner") in ("", external.OWNER) or live.moment is not None:
        return False
    if live.listen.get("session") not in (None, live.session_id):
        return False  # a fork's copy of another session's listener
    now = time.time()
    if live.listener_at is not None:
        return now - live.listener_at < LISTENER_STALE_S
    quiet_ms = now * 1000 - live.external_wall_ms
    return quiet_ms < (limits.limit("listener_idle_s") + 60) * 1000


# ------------------------------------------------------------------------------------------------- validation
def check_actor(live: Live, name: str, kind: str | None = None) -> ActorSpec:
    spec = live.actors.get(name)
    if spec is None:
        raise CommandError(_("There is no actor %(name)s in this session.") % {"name": name})
    if kind is not None and spec.kind != kind:
        raise CommandError(_("%(name)s is not a %(kind)s.") % {"name": name, "kind": kind})
    return spec


def validate_step(live: Live, step: Step) -> None:
    """Everything the backend would call the tool's problem, caught before it gets there."""
    if step.is_note:
        return
    if step.actor == APP:
        if live.scenario is None or live.scenario.database is None or step.action not in APP_ACTIONS:
            raise CommandError(_("This session has no database for app steps."))
        check_sql_budget(live, step)
        return
    if step.actor in CLUSTER_ACTORS:
        if step.action not in CLUSTER_ACTORS[step.actor]:
            raise CommandError(_("Unknown action %(a)s.") % {"a": step.label})
        if step.actor == "broker" and step.action == "abort_transaction":
            name, _dash, number = str(step.args.get("partition", "")).rpartition("-")
            declared = live.cluster.topic(name)
            if declared is None or not number.isdigit() or int(number) >= declared.partitions:
                raise CommandError(_("No partition %(p)s.") % {"p": step.args.get("partition")})
        elif step.actor == "broker":
            broker = step.args.get("broker")
            if not isinstance(broker, int) or isinstance(broker, bool) or not 1 <= broker <= live.cluster.brokers:
                raise CommandError(
                    _("No broker %(b)s: brokers are 1 to %(n)d.") % {"b": broker, "n": live.cluster.brokers}
                )
        if step.actor == "clock":
            ms = step.args.get("ms")
            if not isinstance(ms, int) or isinstance(ms, bool) or not 1 <= ms <= limits.limit("clock_advance_s") * 1000:
                raise CommandError(_("Advance the clock by 1 ms to %(n)d s.") % {"n": limits.limit("clock_advance_s")})
        return
    spec = check_actor(live, step.actor)
    actions = PRODUCER_ACTIONS if spec.kind == PRODUCER else CONSUMER_ACTIONS
    if step.action not in actions:
        raise CommandError(_("%(actor)s cannot %(action)s.") % {"actor": step.actor, "action": step.action})
    if step.action == "produce":
        topic = step.args.get("topic")
        topics = live.topics()
        if topic not in topics:
            raise CommandError(_("No topic %(t)s in this session.") % {"t": topic})
        partition = step.args.get("partition")
        if partition is not None and not (isinstance(partition, int) and 0 <= partition < topics[topic]):
            raise CommandError(_("Topic %(t)s has partitions 0 to %(n)d.") % {"t": topic, "n": topics[topic] - 1})
        limits.check_value(step.args.get("value"), "value")
        limits.check_value(step.args.get("key"), "key")
        if "from" in step.args:
            check_actor(live, step.args["from"], CONSUMER)
    if step.action == "poll" and "max" in step.args:
        limits.check_records(int(step.args["max"]))
    if step.action == "send_offsets_to_transaction":
        consumer = check_actor(live, step.args.get("consumer", ""), CONSUMER)
        if not consumer.group_id:
            raise CommandError(
                _("%(c)s has no group.id: send_offsets_to_transaction needs a group consumer.") % {"c": consumer.name}
            )


def _sql_spent_ms(live: Live) -> float:
    return float(getattr(getattr(live.backend, "db", None), "spent_ms", 0.0))


def check_sql_budget(live: Live, step: Step) -> None:
    """An app.sql step only while the session's statements have taken less than their time in all (each replay of
    the log, in another process, at `?at=`, in a fork or a comparison, runs them again) and its creator's sessions
    less than theirs in the last minute. Checked before the command, never on a replay, so a stored log replays
    the same everywhere."""
    if step.actor == APP and step.action == "sql":
        limits.check_sql_time(_sql_spent_ms(live))
        if limits.over("db_ms_per_minute", live.owner):
            raise limits.reached("db_ms_per_minute")


def _run_charged(live: Live, entry: dict[str, Any]) -> dict[str, Any]:
    """run_entry, with the SQL time it took counted against the session's creator."""
    before = _sql_spent_ms(live)
    done = run_entry(live, entry)
    spent = _sql_spent_ms(live) - before
    if spent > 0:
        limits.charge("db_ms_per_minute", live.owner, spent)
    return done


# --------------------------------------------------------------------------------------------------- commands
def _paced(live: Live, entry: dict[str, Any]) -> dict[str, Any]:
    """The entry with the wall time since the previous paced command, when the session runs at its user's pace."""
    if not live.paced or live.moment is not None:
        return entry
    now_ms = int(time.time() * 1000)
    elapsed = 0 if live.paced_at_ms is None else max(0, min(PACE_MAX_MS, now_ms - live.paced_at_ms))
    return {**entry, "at_ms": now_ms, **({"elapsed_ms": elapsed} if elapsed else {})}


def set_pace(session_id: str, on: bool) -> Live:
    """The simulator's clock follows the user's pace (on), or steps run back to back in virtual time (off)."""

    def mutate(live: Live) -> Change:
        if live_only(live.backend_name):
            raise CommandError(_("A real cluster keeps its own time: the pace is the simulator's."))
        if live.paced == on:
            return Change()
        entry: dict[str, Any] = {"pace": PACE_WALL if on else PACE_OFF}
        if on:
            entry["at_ms"] = int(time.time() * 1000)
        return Change(append=[entry], message="ok")

    live, _change = commit(session_id, mutate)
    return live


def apply_step(session_id: str, step: Step) -> tuple[Live, str]:
    """A command from the UI (a button, a form): one step outside the scenario's narrative."""

    def mutate(live: Live) -> Change:
        limits.check_commands(live.length + 1)
        validate_step(live, step)
        entry = _run_charged(live, _paced(live, {"step": step.to_dict()}))
        return Change(append=[entry], message=entry["outcome"])

    live, change = commit(session_id, mutate)
    return live, change.message


def _next_scenario_step(live: Live) -> Change:
    steps = live.steps
    k = live.cursor
    if k >= len(steps):
        return Change(running=False if live.running else None, message="end")
    limits.check_commands(live.length + 1)
    check_sql_budget(live, steps[k])
    entry = _run_charged(live, _paced(live, {"step": steps[k].to_dict(), "n": k}))
    done = k + 1 >= len(steps)
    return Change(append=[entry], running=False if (done and live.running) else None, message=entry["outcome"])


def _unanswered(live: Live) -> None:
    if pending_question(live) is not None:
        raise CommandError(_("The next step asks a question first: answer it (or skip it), then step."), status=409)


def step(session_id: str) -> tuple[Live, str]:
    """The scenario's next step ("step" button)."""

    def mutate(live: Live) -> Change:
        if live.scenario is None:
            raise CommandError(_("Free play has no scenario steps."))
        if live.cursor >= len(live.steps):
            raise CommandError(_("The scenario is over: reset to play it again."), status=409)
        _unanswered(live)
        return _next_scenario_step(live)

    live, change = commit(session_id, mutate)
    return live, change.message


def run_one(session_id: str) -> bool:
    """One step of a "run": applies the next scenario step if the session is still running. False: stop."""

    def mutate(live: Live) -> Change:
        if not live.running or live.scenario is None:
            return Change()
        if pending_question(live) is not None:
            return Change(running=False, message="question")  # a run stops at a question: the viewer answers it
        return _next_scenario_step(live)

    live, change = commit(session_id, mutate)
    return live.running and live.cursor < len(live.steps) and change.message not in ("end", "question")


def set_running(session_id: str, running: bool) -> Live:
    def mutate(live: Live) -> Change:
        if running:
            if live.scenario is None:
                raise CommandError(_("Free play has no scenario steps to run."))
            if live.cursor >= len(live.steps):
                raise CommandError(_("The scenario is over: reset to play it again."), status=409)
        if live.running == running:
            return Change()
        return Change(running=running)

    live, _change = commit(session_id, mutate, allow_detached=not running)
    return live


def back(session_id: str) -> Live:
    """Time travel one step back: the log without the last scenario step (and what came after it); in free play,
    without the last command. The rows stay, marked dropped."""

    def mutate(live: Live) -> Change:
        if live_only(live.backend_name):
            raise CommandError(_("A real cluster cannot be rewound: reset starts again on fresh topics."), status=409)
        if not live.commands:
            raise CommandError(_("Nothing to undo: this is the start."), status=409)
        cut = live.length - 1
        if live.scenario is not None and live.cursor > 0:
            k = live.cursor - 1
            cut = next(i for i in range(live.length - 1, -1, -1) if live.commands[i].get("n") == k)
        return Change(truncate=cut, running=False)

    live, _change = commit(session_id, mutate)
    return live


def predict(session_id: str, n: int, choice: int) -> Live:
    """An answer to the question of scenario step n, before that step runs (SKIP: no answer)."""

    def mutate(live: Live) -> Change:
        steps = live.steps
        question = steps[n].predict if 0 <= n < len(steps) else None
        if not question:
            raise CommandError(_("Step %(n)s asks no question.") % {"n": n + 1})
        if n in live.predictions:
            raise CommandError(_("This question is answered already."), status=409)
        if n < live.cursor:
            raise CommandError(_("This step has run: its answer is shown."), status=409)
        if choice != SKIP and not 0 <= choice < len(question["choices"]):
            raise CommandError(_("Choose one of the %(n)d answers.") % {"n": len(question["choices"])})
        return Change(append=[{"predict": {"n": n, "choice": choice}, "outcome": "ok"}])

    live, _change = commit(session_id, mutate)
    return live


def hint(session_id: str) -> Live:
    """Reveal the exercise's next hint."""

    def mutate(live: Live) -> Change:
        hints = live.scenario.hints if live.scenario is not None else ()
        if live.hints_shown >= len(hints):
            raise CommandError(_("No more hints."), status=409)
        return Change(append=[{"hint": live.hints_shown, "outcome": "ok"}])

    live, _change = commit(session_id, mutate)
    return live


def _topics(live: Live) -> list[str]:
    """The session's topics: its scenario's, and those its applications created (every partition has an LSO)."""
    names = {t.name for t in live.cluster.topics} | {tp.rpartition("-")[0] for tp in live.backend.stable_offsets()}
    return sorted(n for n in names if not n.startswith("__"))


def set_pipelines(session_id: str, add: Mapping[str, str] | None) -> Live:
    """Judge the session as a consume-transform-produce pipeline: one more stage `add` ({"from", "to", "by"}, topics
    of the session's cluster), or none at all (None). From the page, for a connected application whose mapping of
    inputs to outputs the checker cannot know; it replaces the scenario's `pipeline:` from then on."""

    def mutate(live: Live) -> Change:
        stages = [p.to_dict() for p in live.pipelines]
        if add is not None:
            topics = _topics(live)
            for end in ("from", "to"):
                if add[end] not in topics:
                    raise CommandError(
                        _("There is no topic %(topic)s in this session (topics: %(topics)s).")
                        % {"topic": add[end], "topics": ", ".join(topics) or _("none")}
                    )
            if add["from"] == add["to"]:
                raise CommandError(_("A pipeline writes to another topic than it reads."))
            if dict(add) in stages:
                raise CommandError(_("This pipeline is judged already."), status=409)
            if len(stages) >= MAX_PIPELINES:
                raise CommandError(_("At most %(n)s pipelines.") % {"n": MAX_PIPELINES})
            stages.append(dict(add))
        elif not stages:
            raise CommandError(_("No pipeline is judged."), status=409)
        else:
            stages = []
        return Change(append=[{PIPELINE: stages, "outcome": "ok"}])

    live, _change = commit(session_id, mutate)
    return live


def kept_on_reset(live: Live) -> list[dict[str, Any]]:
    """What "reset" keeps: free play keeps the actors that were added; a scenario keeps nothing."""
    return [{"add": e["add"], "outcome": "ok"} for e in live.commands if "add" in e] if live.scenario is None else []


def reset(session_id: str) -> Live:
    """Start again: a new, empty log (free play keeps the actors that were added). On a real cluster: a fresh
    backend (new topics under a new prefix) and the old one closed, its topics deleted."""
    if live_only(store.read(session_id).backend):
        return realcluster.restart(session_id, kept_on_reset)

    def mutate(live: Live) -> Change:
        keep = kept_on_reset(live)
        if len(keep) == live.length and not live.running:
            return Change()
        return Change(replace=keep, running=False)

    live, _change = commit(session_id, mutate)
    return live
