"""Exercises: a scenario's `goal:` checked after every command, its `hints:`, and the `predict:` questions of its
steps (docs/scenario-format-extensions.md).

An exercise does not give its answers away (`Reveal`): a step's `expect` shows once the step has run, a note that
follows a question once that question's step has run (answered or skipped first), the goal's values once every
question has been revealed (until then the checklist names what to reach, not what it will hold; an item already
reached shows what it holds, which the panels show anyway), and the open question's client keeps what would tell
its step's outcome (`asked`: a producer's error state, a consumer's reasons for what it has not got) until that
step has run; answers.py names what a question's answer is. A scenario that asks nothing keeps showing everything.

The goal is checked against what the session shows now (the backend's view), not against `observe()`, which
lets time run until the cluster is quiescent: a check must never move the session it checks. Answers and hints
are entries of the session's own command log ({"predict": {"n": k, "choice": i}}, {"hint": k}), so they replay,
fork and scrub with it; a room's distribution of answers is counted from its sessions' logs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from playground.engine.backend import Backend
from playground.engine.spec import Step
from playground.scenario import answers
from playground.scenario.model import Scenario
from playground.scenario.run import Check, build_observation, checks

GOAL_LOG_LIMIT = 500  # log entries per partition the goal's checks read (an exercise's logs are short)
SKIP = -1  # the answer of whoever skipped a question


def observation_of(view: Mapping[str, Any], scenario_id: str = "") -> dict[str, Any]:
    """The contract's observation built from a view (producer ids normalised as `scenario run` does)."""
    raw = {
        "partitions": {
            tp: {
                "log": p.get("log", []),
                "high_watermark": p.get("high_watermark"),
                "last_stable_offset": p.get("last_stable_offset"),
            }
            for tp, p in view.get("partitions", {}).items()
        },
        "consumers": {
            name: {tp: [r["value"] for r in records] for tp, records in (c.get("received") or {}).items()}
            for name, c in view.get("consumers", {}).items()
        },
        "transactions": view.get("transactions", {}),
        "groups": view.get("groups", {}),
    }
    return build_observation(scenario_id, view.get("backend", ""), 0, [], raw)


class Progress(Protocol):
    """What an exercise reads of a session (playground.session.live.Live, a layer above)."""

    @property
    def scenario(self) -> Scenario | None: ...
    @property
    def backend(self) -> Backend: ...
    @property
    def steps(self) -> tuple[Step, ...]: ...
    @property
    def cursor(self) -> int: ...  # how many of the scenario's steps have been applied
    @property
    def predictions(self) -> Mapping[int, int]: ...  # scenario step -> the answer given


@dataclass(frozen=True)
class GoalItem:
    kind: str  # consumers | logs | watermarks | transactions | groups
    subject: str  # "rc orders-0", "orders-0", "order-pay", "copier orders-0"
    wanted: Any
    seen: Any
    ok: bool

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "subject": self.subject, "wanted": self.wanted, "seen": self.seen, "ok": self.ok}


def _item(check: Check) -> GoalItem:
    kind, _dot, subject = check.key.partition(".")
    return GoalItem(kind, subject.replace(".", " "), check.wanted, check.seen, check.ok)


def goal_items(live: Progress) -> list[GoalItem]:
    """The scenario's goal, checked against the session as it is now ([] when it has none)."""
    scenario = live.scenario
    if scenario is None or not scenario.goal:
        return []
    view = live.backend.view(GOAL_LOG_LIMIT)
    return [_item(c) for c in checks(scenario.goal, scenario.goal_lines, observation_of(view, scenario.id))]


def pending_question(live: Progress) -> int | None:
    """The next scenario step's index when it asks a question this session has not answered yet."""
    steps = live.steps
    k = live.cursor
    if k < len(steps) and steps[k].predict and k not in live.predictions:
        return k
    return None


def is_exercise(scenario: Scenario | None) -> bool:
    """A goal, hints or a question: the scenario is an exercise (its panel shows, and it keeps its answers back)."""
    return scenario is not None and bool(scenario.goal or scenario.hints or any(s.predict for s in scenario.steps))


@dataclass(frozen=True)
class Reveal:
    """What an exercise shows of its answers at a point of a session: `open_question` is the first question whose
    step has not run yet (None: every answer may show); `exercise` False shows everything (a plain scenario)."""

    exercise: bool
    open_question: int | None

    def note(self, index: int) -> bool:
        """A note shows unless a question before it still waits for its step to run (the note explains it)."""
        return not self.exercise or self.open_question is None or index < self.open_question

    def expect(self, done: bool) -> bool:
        """A step's `expect` (the outcome it should give) shows once the step has run."""
        return not self.exercise or done

    def goal_values(self, ok: bool) -> bool:
        """A goal item's values show once reached, or when no question is left to give away."""
        return not self.exercise or ok or self.open_question is None


@dataclass(frozen=True)
class Asked:
    """The client whose step the open question asks about, and the question's number as the pages say it."""

    actor: str
    number: int


def asked(live: Progress) -> Asked | None:
    """The open question's client (None: no question is open, or a scenario that asks nothing)."""
    k = reveal(live).open_question
    if k is None:
        return None
    return Asked(live.steps[k].actor, answers.number(live.steps, k))


def reveal(live: Progress) -> Reveal:
    """The session's reveal: questions count as revealed once their step has run (the cursor passed them)."""
    if not is_exercise(live.scenario):
        return Reveal(False, None)
    k = live.cursor
    return Reveal(True, next((s.index for s in live.steps if s.predict and s.index >= k), None))


def distribution(answers: Iterable[int], choices: int) -> dict[str, Any]:
    """How a room (or one session) answered: counts per choice, and how many skipped."""
    counted = Counter(answers)
    return {
        "counts": [counted.get(i, 0) for i in range(choices)],
        "skipped": counted.get(SKIP, 0),
        "total": sum(counted.values()),
    }
