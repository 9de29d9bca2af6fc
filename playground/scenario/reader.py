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
                "anchors and aliases (&name, *name) are not allowed in a scenario: write each value out",
                event.start_mark,
            )
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_DEPTH} levels deep", event.start_mark
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
            raise self.fail(node, field or "(top level)", f"expected a mapping, got {self.describe(node)}")
        pairs: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, field, "keys must be plain text")
            key = key_node.value
            if key in pairs:
                raise self.fail(
                    key_node,
                    join_field(field, key),
                    f"duplicate key {key!r} (first on line {pairs[key][0].start_mark.line + 1})",
                )
            pairs[key] = (key_node, value_node)
        return pairs

    def sequence(self, node: yaml.Node, field: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, field, f"expected a list, got {self.describe(node)}")
        return list(node.value)

    def string(self, node: yaml.Node, field: str, *, non_empty: bool = True) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, field, f"expected text, got {self.describe(node)}")
        value: str = node.value  # a scalar node's value is its text
        if non_empty and value == "":
            raise self.fail(node, field, "must not be empty")
        return value

    def integer(self, node: yaml.Node, field: str, lo: int | None = None, hi: int | None = None) -> int:
        if not isinstance(node, yaml.ScalarNode) or not INT.match(node.value.replace("_", "")):
            raise self.fail(node, field, f"expected a whole number, got {self.describe(node)}")
        digits = node.value.replace("_", "").lstrip("+-").lstrip("0")
        top = LONG_MAX if hi is None else hi
        if lo is not None:
            bounds = f"between {lo} and {hi}" if hi is not None else f"at least {lo} (and at most {top:,})"
        else:
            bounds = f"at most {top}"
        if len(digits) > len(str(LONG_MAX)):  # int() of thousands of digits is slow, and refused past 4,300
            raise self.fail(node, field, f"must be {bounds}, got a number of {len(digits):,} digits")
        value = int(node.value.replace("_", ""), 10)  # decimal always: `010` is ten, not YAML 1.1's octal eight
        if (lo is not None and value < lo) or value > top:
            raise self.fail(node, field, f"must be {bounds}, got {value}")
        return value

    def boolean(self, node: yaml.Node, field: str) -> bool:
        text: str | None = node.value.lower() if isinstance(node, yaml.ScalarNode) and not node.style else None
        if text not in ("true", "false"):
            raise self.fail(node, field, f"expected true or false, got {self.describe(node)}")
        return text == "true"

    def choice(self, node: yaml.Node, field: str, choices: tuple[str, ...]) -> str:
        value = self.string(node, field)
        if value not in choices:
            raise self.fail(node, field, f"{value!r} is not one of {', '.join(choices)}")
        return value

    def texts(self, node: yaml.Node, field: str) -> dict[str, str]:
        """A text in one or more languages: `plain text` (English) or `{en: ..., zh: ...}`."""
        if isinstance(node, yaml.ScalarNode):
            return {DEFAULT_LANG: self.string(node, field)}
        pairs = self.mapping(node, field)
        if not pairs:
            raise self.fail(node, field, "must not be empty")
        out = {}
        for lang, (key_node, value_node) in pairs.items():
            if not _LANG.match(lang):
                raise self.fail(key_node, join_field(field, lang), "expected a language code such as en or zh")
            out[lang] = self.string(value_node, join_field(field, lang))
        if DEFAULT_LANG not in out:
            raise self.fail(node, field, f"needs an English text ({DEFAULT_LANG}:); have {', '.join(out)}")
        return out

    @staticmethod
    def is_null(node: yaml.Node) -> bool:
        return isinstance(node, yaml.ScalarNode) and not node.style and node.value in _NULLS

    @staticmethod
    def describe(node: yaml.Node) -> str:
        if isinstance(node, yaml.MappingNode):
            return "a mapping"
        if isinstance(node, yaml.SequenceNode):
            return "a list"
        return f"{node.value!r}" if node.value != "" else "nothing"


def join_field(field: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{field}[{key}]"
    return f"{field}.{key}" if field else key


def did_you_mean(name: str, known: Iterable[str]) -> str:
    hint = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {hint[0]!r}?)" if hint else ""


def unknown_name(what: str, name: str, known: Iterable[str], listing: str | None = None, context: str = "") -> str:
    """`unknown actor 'C' (actors: A, B, rc)`: the message names what exists, and the likely intent."""
    known = [str(k) for k in known]
    hint = difflib.get_close_matches(name, known, n=1)
    suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
    return f"unknown {what} {name!r}{context} ({listing or what + 's'}: {', '.join(known) or 'none'}){suggestion}"


def compose(text: str, path: str) -> yaml.Node:
    """The one YAML document of the file, as nodes. Errors here end the check: nothing after them can be read."""
    size = len(text.encode("utf-8"))
    if size > MAX_SOURCE_BYTES:  # files also come from share links and an editor: bound the work
        line = text.encode("utf-8")[:MAX_SOURCE_BYTES].count(b"\n") + 1
        raise ScenarioError(
            path,
            line,
            "file",
            f"too large: {size:,} bytes, at most {MAX_SOURCE_BYTES:,} (line {line} crosses the limit)",
        )
    try:
        refuse_aliases_and_depth(text)
        documents = list(yaml.compose_all(text, Loader=Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        raise ScenarioError(path, line, "yaml", f"{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(path, 0, "yaml", str(exc)) from None
    if not documents or documents[0] is None:
        raise ScenarioError(path, 1, "format", "the file is empty")
    if len(documents) > 1:
        raise ScenarioError(
            path, documents[1].start_mark.line + 1, "yaml", "one scenario per file (found a second YAML document)"
        )
    return documents[0]
