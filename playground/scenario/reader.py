"""Reading a scenario file's YAML: composed into nodes only, never constructed by YAML's rules, so `no`, `010` and
`1e3` stay the text that was written; each scalar gets the type the schema asks for (Reader), and every node keeps
its line for the error that names it. Anchors, aliases and deep nesting are refused before anything is composed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

import yaml

from playground.scenario.messages import Text, _
from playground.scenario.model import DEFAULT_LANG, MAX_DEPTH, MAX_SOURCE_BYTES, ScenarioError

if TYPE_CHECKING:
    from playground.scenario.database import DatabaseSpec

T = TypeVar("T")
D = TypeVar("D")

INT = re.compile(r"^[+-]?[0-9]+$")
LONG_MAX = 2**63 - 1  # the largest whole number a scenario holds: Kafka's longs (offsets, timeouts) and SQLite's
_LANG = re.compile(r"^[a-z]{2,3}(?:-[A-Za-z0-9]+)?$")
_NULLS = ("", "~", "null", "Null", "NULL")

# libyaml (PyYAML's C parser) when it is there: composing a 300-line file in pure Python takes tens of ms, too slow
# for an editor that checks as the author types.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """A safe loader without implicit resolvers: every plain scalar composes as a string node."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}


def refuse_aliases_and_depth(text: str) -> None:
    """Anchors and aliases are refused (a few lines of aliases make a tree of billions of nodes to walk: the
    "billion laughs"), and so is nesting deeper than MAX_DEPTH (composing recurses once per level). Checked on
    the event stream, which is flat, before anything is composed."""
    depth = 0
    for event in yaml.parse(text, Loader=Loader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.composer.ComposerError(
                None,
                None,
                _("anchors and aliases (&name, *name) are not allowed in a scenario: write each value out"),
                event.start_mark,
            )
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, _("nested more than %(n)s levels deep") % {"n": MAX_DEPTH}, event.start_mark
                )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


class Reader:
    """Walks the node tree of one file; every check raises ScenarioError with the node's line. Independent parts of
    the file (an actor, a step, an expectation block) are checked through `attempt`, which notes an error and goes
    on, so that one pass finds every bad line."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.errors: list[ScenarioError] = []
        self.broken: set[str] = set()  # actors whose declaration has an error
        self.database: DatabaseSpec | None = None  # the scenario's database, once read (app.* steps need one)
        self.step_expects: dict[int, dict[str, tuple[str, ...]]] = {}  # steps whose outcomes are stated per profile
        self.futures: dict[str, dict[str, int]] = {}  # actor -> the futures its produce steps named -> their line

    @overload
    def attempt(self, check: Callable[..., T], *args: Any) -> T | None: ...
    @overload
    def attempt(self, check: Callable[..., T], *args: Any, default: D) -> T | D: ...
    def attempt(self, check: Callable[..., T], *args: Any, default: Any = None) -> Any:
        try:
            return check(*args)
        except ScenarioError as exc:
            self.errors.append(exc)
            return default

    def raise_errors(self) -> None:
        if self.errors:
            errors = sorted(self.errors, key=lambda e: e.line)
            errors[0].errors = errors
            raise errors[0]

    def fail(self, node: yaml.Node | int, field: str, message: str) -> ScenarioError:
        line = node if isinstance(node, int) else node.start_mark.line + 1
        return ScenarioError(self.path, line, field, message)

    def mapping(
        self, node: yaml.Node, field: str, *, allow_null: bool = False
    ) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """The mapping's pairs by key text, in file order; duplicate keys are an error (YAML would keep the last)."""
        if allow_null and self.is_null(node):
            return {}
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(
                node, field or "(top level)", _("expected a mapping, got %(x)s") % {"x": self.describe(node)}
            )
        pairs: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, field, _("keys must be plain text"))
            key = key_node.value
            if key in pairs:
                raise self.fail(
                    key_node,
                    join_field(field, key),
                    _("duplicate key %(key)s (first on line %(line)s)")
                    % {"key": repr(key), "line": pairs[key][0].start_mark.line + 1},
                )
            pairs[key] = (key_node, value_node)
        return pairs

    def sequence(self, node: yaml.Node, field: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, field, _("expected a list, got %(x)s") % {"x": self.describe(node)})
        return list(node.value)

    def string(self, node: yaml.Node, field: str, *, non_empty: bool = True) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, field, _("expected text, got %(x)s") % {"x": self.describe(node)})
        value: str = node.value  # a scalar node's value is its text
        if non_empty and value == "":
            raise self.fail(node, field, _("must not be empty"))
        return value

    def integer(self, node: yaml.Node, field: str, lo: int | None = None, hi: int | None = None) -> int:
        if not isinstance(node, yaml.ScalarNode) or not INT.match(node.value.replace("_", "")):
            raise self.fail(node, field, _("expected a whole number, got %(x)s") % {"x": self.describe(node)})
        digits = node.value.replace("_", "").lstrip("+-").lstrip("0")
        top = LONG_MAX if hi is None else hi
        if lo is not None:
            bounds = (
                _("between %(lo)s and %(hi)s") % {"lo": lo, "hi": hi}
                if hi is not None
                else _("at least %(lo)s (and at most %(top)s)") % {"lo": lo, "top": f"{top:,}"}
            )
        else:
            bounds = _("at most %(top)s") % {"top": top}
        if len(digits) > len(str(LONG_MAX)):  # int() of thousands of digits is slow, and refused past 4,300
            raise self.fail(
                node,
                field,
                _("must be %(bounds)s, got a number of %(n)s digits") % {"bounds": bounds, "n": f"{len(digits):,}"},
            )
        value = int(node.value.replace("_", ""), 10)  # decimal always: `010` is ten, not YAML 1.1's octal eight
        if (lo is not None and value < lo) or value > top:
            raise self.fail(node, field, _("must be %(bounds)s, got %(value)s") % {"bounds": bounds, "value": value})
        return value

    def boolean(self, node: yaml.Node, field: str) -> bool:
        text: str | None = node.value.lower() if isinstance(node, yaml.ScalarNode) and not node.style else None
        if text not in ("true", "false"):
            raise self.fail(node, field, _("expected true or false, got %(x)s") % {"x": self.describe(node)})
        return text == "true"

    def choice(self, node: yaml.Node, field: str, choices: tuple[str, ...]) -> str:
        value = self.string(node, field)
        if value not in choices:
            raise self.fail(
                node,
                field,
                _("%(value)s is not one of %(choices)s") % {"value": repr(value), "choices": ", ".join(choices)},
            )
        return value

    def texts(self, node: yaml.Node, field: str) -> dict[str, str]:
        """A text in one or more languages: `plain text` (English) or `{en: ..., zh: ...}`."""
        if isinstance(node, yaml.ScalarNode):
            return {DEFAULT_LANG: self.string(node, field)}
        pairs = self.mapping(node, field)
        if not pairs:
            raise self.fail(node, field, _("must not be empty"))
        out = {}
        for lang, (key_node, value_node) in pairs.items():
            if not _LANG.match(lang):
                raise self.fail(key_node, join_field(field, lang), _("expected a language code such as en or zh"))
            out[lang] = self.string(value_node, join_field(field, lang))
        if DEFAULT_LANG not in out:
            raise self.fail(
                node,
                field,
                _("needs an English text (%(lang)s:); have %(have)s") % {"lang": DEFAULT_LANG, "have": ", ".join(out)},
            )
        return out

    @staticmethod
    def is_null(node: yaml.Node) -> bool:
        return isinstance(node, yaml.ScalarNode) and not node.style and node.value in _NULLS

    @staticmethod
    def describe(node: yaml.Node) -> str:
        if isinstance(node, yaml.MappingNode):
            return _("a mapping")
        if isinstance(node, yaml.SequenceNode):
            return _("a list")
        return f"{node.value!r}" if node.value != "" else _("nothing")


def join_field(field: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{field}[{key}]"
    return f"{field}.{key}" if field else key


def did_you_mean(name: str, known: Iterable[str]) -> str:
    hint = difflib.get_close_matches(name, list(known), n=1)
    return _(" (did you mean %(name)s?)") % {"name": repr(hint[0])} if hint else ""


def unknown_name(what: str, name: str, known: Iterable[str], listing: str | None = None, context: str = "") -> str:
    """`unknown actor 'C' (actors: A, B, rc)`: the message names what exists, and the likely intent. `what`,
    `listing` and `context` come translated (the caller's gettext); `listing` defaults to `what`'s plural."""
    known = [str(k) for k in known]
    hint = difflib.get_close_matches(name, known, n=1)
    suggestion = _("; did you mean %(name)s?") % {"name": repr(hint[0])} if hint else ""
    # Translators: the plural of a kind of name (English adds an s: actor -> actors)
    listing = listing or _("%(what)ss") % {"what": what}
    return _("unknown %(what)s %(name)s%(context)s (%(listing)s: %(known)s)%(suggestion)s") % {
        "what": what,
        "name": repr(name),
        "context": context,
        "listing": listing,
        "known": ", ".join(known) or _("none"),
        "suggestion": suggestion,
    }


# libyaml's (and PyYAML's) wording of the syntax errors an editor's author meets most
_YAML_PROBLEMS: dict[str, str] = {
    str(text): text
    for text in (
        _("mapping values are not allowed in this context"),
        _("mapping values are not allowed here"),
        _("did not find expected key"),
        _("did not find expected ',' or ']'"),
        _("did not find expected ',' or '}'"),
        _("did not find expected '-' indicator"),
        _("did not find expected node content"),
        _("found unexpected end of stream"),
        _("found character that cannot start any token"),
        _("found a tab character that violates indentation"),
        _("could not find expected ':'"),
        _("block sequence entries are not allowed in this context"),
    )
}


def _yaml_problem(problem: str | None) -> str:
    text = str(problem)
    return _YAML_PROBLEMS.get(text, text)


def compose(text: str, path: str) -> yaml.Node:
    """The one YAML document of the file, as nodes. Errors here end the check: nothing after them can be read."""
    size = len(text.encode("utf-8"))
    if size > MAX_SOURCE_BYTES:  # files also come from share links and an editor: bound the work
        line = text.encode("utf-8")[:MAX_SOURCE_BYTES].count(b"\n") + 1
        raise ScenarioError(
            path,
            line,
            "file",
            _("too large: %(size)s bytes, at most %(max)s (line %(line)s crosses the limit)")
            % {"size": f"{size:,}", "max": f"{MAX_SOURCE_BYTES:,}", "line": line},
        )
    try:
        refuse_aliases_and_depth(text)
        documents = list(yaml.compose_all(text, Loader=Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        # ours (a Text, translatable) from refuse_aliases_and_depth, or the YAML parser's own words: the ones an
        # author meets most, translatable too; any other stays as the parser says it
        problem = exc.problem or exc.context
        raise ScenarioError(
            path, line, "yaml", problem if isinstance(problem, Text) else _yaml_problem(problem)
        ) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(path, 0, "yaml", str(exc)) from None
    if not documents or documents[0] is None:
        raise ScenarioError(path, 1, "format", _("the file is empty"))
    if len(documents) > 1:
        raise ScenarioError(
            path, documents[1].start_mark.line + 1, "yaml", _("one scenario per file (found a second YAML document)")
        )
    return documents[0]
