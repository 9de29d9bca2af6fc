"""What a comparison compares: the pair of profiles, as the compare URL spells them, and what both sides run, a
scenario's steps or a session's command log as commands (issue 9's compare view).

Follows session/live.py's one step numbering (a note is a step; an exercise's answers and hints are not): step k
here is step k of a session of the same scenario, or the session's own step k. Bad input (a profile that is not one
of this playground's) is a `CompareError`, a sentence naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext as _

from playground.engine.spec import DEFAULT_PROFILE, ActorSpec, ClusterSpec, Profile, Step, profile_from_key
from playground.engine.spec import PROFILES as ALL_PROFILES
from playground.session.live import CommandError, actor_from_entry, is_command, step_from_entry

if TYPE_CHECKING:
    from playground.scenario.database import DatabaseSpec

# Every profile of this playground, in the order the pair's choice lists them.
PROFILES: tuple[Profile, ...] = ALL_PROFILES
# The other side by default: the newest Kafka with the Java client (or, when that is the item's own, the default).
OTHER = Profile("4", "java")


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
