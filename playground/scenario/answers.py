"""What would give a question's answer away: the facts an exercise keeps off its pages until the question's step
has run (issue 33), derived from the scenario's own data rather than written per exercise.

The answer of a question (a `predict:` step), for the profile a session runs and in one language, is:
1. its right choice's text;
2. each Kafka name the right choice has and neither the question nor a wrong choice has: an error, a state or a
   cursor written in capitals or CamelCase (`_FENCED`, `INVALID_PRODUCER_EPOCH`, `LSO`), also in its bare form
   (`FENCED`); a name the right choice follows with a number within a few words ("the LSO is still 0") is that
   name with that number ("LSO 0"), since the name alone is on every page;
3. the kind of error the right choice names (fatal, abortable, retriable) when no wrong choice names it;
4. the error its step expects (`expect:`) unless an earlier question's step expected it (then it is already told);
5. for a step run by a consumer or a producer, what that client shows it has not got yet or why it failed: a
   consumer's reason for each record it has not received (held behind the LSO, hidden as aborted, not polled yet)
   says what its poll returns, a producer's error state says what its call does. The pages mask these for the
   open question's client (playground.web.panels); they are not text, so `facts` leaves them out.
Names and numbers match as whole words and exactly; the kinds of error match case-insensitively.

This module only reads a scenario; the tests walk every question of every exercise against it, and the pages hold
back what it names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from playground.engine.backend import OK
from playground.engine.spec import Step

# a name as Kafka writes one: an error code, a state, a cursor (LSO, HW), an exception class
_NAME = re.compile(
    r"(?<![\w-])(_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|_?[A-Z]{2,}[0-9]*|[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+)(?![\w-])"
)
# a number of its own within a few words after a name ("LSO is still 0"), not one inside a name ("stock-0")
_WORDS_BETWEEN = r"\W+(?:[^\W\d]+\W+){0,3}?"
_NUMBER = r"(?<![\w-])(\d+)(?![\w-])"
# the kinds of error a client gives an application, as the choices of each language write them
ERROR_KINDS = {"en": ("fatal", "abortable", "retriable"), "zh": ("致命", "可中止", "可重试")}


@dataclass(frozen=True)
class Fact:
    """One thing a page must not say while its question is open: `text` as said, `pattern` to find it."""

    text: str
    pattern: re.Pattern[str]

    def found_in(self, page_text: str) -> bool:
        return self.pattern.search(page_text) is not None


def _exact(text: str) -> Fact:
    return Fact(text, re.compile(r"(?<![\w-])" + re.escape(text) + r"(?![\w-])"))


def _words(text: str) -> Fact:
    return Fact(text, re.compile(re.escape(text), re.IGNORECASE))


def _name_facts(right: str, others: Iterable[str]) -> list[Fact]:
    told = {m for text in others for m in _NAME.findall(text)}
    out: list[Fact] = []
    for name in dict.fromkeys(_NAME.findall(right)):
        if name in told:
            continue
        number = re.search(re.escape(name) + _WORDS_BETWEEN + _NUMBER, right)
        if number:
            n = number.group(1)
            out.append(Fact(f"{name} {n}", re.compile(re.escape(name) + _WORDS_BETWEEN + _NUMBER.replace(r"\d+", n))))
            continue
        out.append(_exact(name))
        if name.strip("_") != name:
            out.append(_exact(name.strip("_")))
    return out


def questions(steps: Sequence[Step]) -> list[Step]:
    """The scenario's questions, in order (question 1 is the first)."""
    return [s for s in steps if s.predict]


def number(steps: Sequence[Step], index: int) -> int:
    """The question's number as the pages say it (1 for the first question of the scenario)."""
    return 1 + sum(1 for s in steps if s.predict and s.index < index)


def facts(steps: Sequence[Step], index: int, lang: str) -> list[Fact]:
    """What gives away the answer of the question asked before step `index` (steps resolved for one profile)."""
    step = steps[index]
    predict: Mapping[str, Any] = step.predict or {}
    choices = [c.get(lang) or c.get("en", "") for c in predict["choices"]]
    right = choices[predict["answer"]]
    wrong = [c for i, c in enumerate(choices) if i != predict["answer"]]
    question = predict["question"].get(lang) or predict["question"].get("en", "")
    out = [_words(right), *_name_facts(right, [question, *wrong])]
    said = " ".join([question, *wrong]).lower()
    out += [_words(kind) for kind in ERROR_KINDS.get(lang, ()) if kind in right.lower() and kind not in said]
    earlier = {o for s in steps if s.predict and s.index < index for o in (s.expect or ())}
    for outcome in step.expect or ():
        if outcome != OK and outcome not in earlier and not any(f.text == outcome for f in out):
            out += _name_facts(outcome, ())
    return out


def open_facts(steps: Sequence[Step], open_question: int | None, lang: str) -> list[Fact]:
    """The facts of the open question (none when every question's step has run)."""
    return [] if open_question is None else facts(steps, open_question, lang)
