"""What static/js shows its reader, read from the scripts' text: a small lexer of JavaScript (strings, template
literals, regular expressions, comments, names, punctuation) and the places a string reaches the page (a toast, a
prompt, textContent, a tooltip, a validity message...). gettext, ngettext and interpolate are the page's catalogue
(playground/web/jscatalog.py)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from . import zhrule

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "static" / "js"
CATALOGUE_CALLS = {"gettext": 1, "ngettext": 2}
# Calls whose first argument (append: every argument) the reader sees, and properties whose value.
SHOWN_CALLS = {"toast", "prompt", "confirm", "alert", "setCustomValidity", "createTextNode", "append", "Option"}
SHOWN_PROPERTIES = {"textContent", "innerText", "innerHTML", "title", "placeholder", "ariaLabel"}
SHOWN_ATTRIBUTES = {"title", "aria-label", "placeholder", "alt"}
# After these, a slash starts a regular expression (else it divides).
REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^") | {"return", "typeof", "case", "do", "else", "in", "of", "new", "void"}

_TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<name>[A-Za-z_$][\w$]*)|(?P<number>\d[\w.]*)"""
    r"""|(?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|(?P<template>`(?:\\.|[^`\\])*`)"""
    r"""|(?P<punct>=>|===|!==|==|!=|<=|>=|&&|\|\||\+\+|--|[-+*/%=<>!&|^~?:;,.()\[\]{}])""",
    re.S,
)
_REGEX = re.compile(r"/(?:\\.|\[(?:\\.|[^\]\\])*\]|[^/\\\n\[])+/[a-z]*")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    line: int

    @property
    def value(self) -> str:
        """A string literal's text."""
        return ast.literal_eval(self.text) if self.kind == "string" else self.text[1:-1]


def tokens(source: str) -> list[Token]:
    out: list[Token] = []
    pos, line = 0, 1
    while pos < len(source):
        prev = out[-1].text if out else ";"
        if source[pos] == "/" and (prev in REGEX_AFTER) and not source.startswith(("//", "/*"), pos):
            m = _REGEX.match(source, pos)
            if m:
                out.append(Token("regex", m.group(), line))
                pos = m.end()
                continue
        m = _TOKEN.match(source, pos)
        if m is None:
            raise ValueError(f"cannot read the script at line {line}: {source[pos : pos + 40]!r}")
        kind = m.lastgroup or ""
        if kind not in ("space", "comment"):
            out.append(Token(kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    return out


def _closing(toks: list[Token], i: int) -> int:
    """The index of the bracket closing the one at i."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text in "([{":
            depth += 1
        elif toks[j].text in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def _expression_end(toks: list[Token], i: int) -> int:
    """The end of an assigned value starting at i: a ; , ) ] or } at its own depth."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j].text
        if t in "([{":
            depth += 1
        elif t in ")]}":
            if depth == 0:
                return j
            depth -= 1
        elif t in (";", ",") and depth == 0:
            return j
    return len(toks)


def messages(source: str | None = None) -> set[tuple[str, ...]]:
    """Every msgid the scripts ask the catalogue for: (msgid,) or (singular, plural)."""
    found: set[tuple[str, ...]] = set()
    for toks in _scripts(source).values():
        for i, t in enumerate(toks[:-1]):
            if t.kind == "name" and t.text in CATALOGUE_CALLS and toks[i + 1].text == "(":
                args = toks[i + 2 : i + 2 + 2 * CATALOGUE_CALLS[t.text] : 2]
                assert all(a.kind == "string" for a in args), f"{t.text}() of line {t.line} is not given a literal"
                found.add(tuple(a.value for a in args))
    return found


@dataclass(frozen=True)
class Shown:
    """A string literal the reader sees without the catalogue, or a data attribute a script shows."""

    script: str
    line: int
    text: str


def _in_catalogue_call(toks: list[Token], span: range) -> set[int]:
    """The tokens of span inside a gettext/ngettext call (the catalogue's words, not the script's)."""
    inside: set[int] = set()
    for i in span:
        t = toks[i]
        if t.kind == "name" and t.text in CATALOGUE_CALLS and i + 1 < len(toks) and toks[i + 1].text == "(":
            inside.update(range(i, _closing(toks, i + 1) + 1))
    return inside


def _not_shown(toks: list[Token], span: range) -> set[int]:
    """The first argument of each .replace( in span (what is looked for) and of each getAttribute( (a name)."""
    return {
        i + 2
        for i in span
        if toks[i].text in ("replace", "getAttribute") and i + 2 < len(toks) and toks[i + 1].text == "("
    }


def _shown_spans(toks: list[Token]) -> list[range]:
    spans = []
    for i, t in enumerate(toks[:-1]):
        nxt = toks[i + 1].text
        if t.kind == "name" and t.text in SHOWN_CALLS and nxt == "(":
            end = _closing(toks, i + 1)
            spans.append(range(i + 2, end if t.text == "append" else min(end, _expression_end(toks, i + 2))))
        elif t.kind == "name" and t.text == "setAttribute" and nxt == "(" and toks[i + 2].kind == "string":
            if toks[i + 2].value in SHOWN_ATTRIBUTES:
                spans.append(range(i + 3, _closing(toks, i + 1)))
        elif t.kind == "name" and t.text in SHOWN_PROPERTIES and i > 0 and toks[i - 1].text == "." and nxt == "=":
            spans.append(range(i + 2, _expression_end(toks, i + 2)))
    return spans


def shown_without_catalogue(source: str | None = None) -> list[Shown]:
    """String literals the reader sees that do not come from the catalogue: those with a word zhrule's rule does
    not let through (outside a placeholder: {name}, %(n)s), in what a toast, a prompt, textContent, a tooltip or a
    validity message shows."""
    found: list[Shown] = []
    for script, toks in _scripts(source).items():
        for span in _shown_spans(toks):
            skip = _in_catalogue_call(toks, span) | _not_shown(toks, span)
            for i in span:
                t = toks[i]
                if i in skip or t.kind not in ("string", "template"):
                    continue
                if zhrule.english(re.sub(r"\{\w+\}|%\(\w+\)s|\$\{[^}]*\}", "", t.value)):
                    found.append(Shown(script, t.line, t.value))
    return found


def shown_data_attributes(source: str | None = None) -> list[Shown]:
    """The data-* attributes whose text a script shows (dataset.fooBar or getAttribute("data-foo-bar") in what a
    toast, textContent... shows), as the page spells them: the page's test must read each of them."""
    found: list[Shown] = []
    for script, toks in _scripts(source).items():
        for span in _shown_spans(toks):
            for i in span:
                if toks[i].text == "dataset" and i + 2 < len(toks) and toks[i + 1].text == ".":
                    name = re.sub(r"[A-Z]", lambda m: "-" + m.group().lower(), toks[i + 2].text)
                    found.append(Shown(script, toks[i].line, f"data-{name}"))
                elif toks[i].text == "getAttribute" and toks[i + 2].kind == "string":
                    found.append(Shown(script, toks[i].line, toks[i + 2].value))
    return found


def prose_without_catalogue(source: str | None = None) -> list[Shown]:
    """Any string literal that reads as a sentence (two words of letters only with a space between them, not a
    CSS selector nor a list of class names) outside the catalogue's calls: a sentence kept in a variable before it
    is shown."""
    found: list[Shown] = []
    for script, toks in _scripts(source).items():
        skip = _in_catalogue_call(toks, range(len(toks)))
        for i, t in enumerate(toks):
            if i in skip or t.kind not in ("string", "template"):
                continue
            if t.value == "use strict" or re.search(r"^[.#\[]|[\[\]>=#]", t.value):
                continue
            if re.search(r"(?:^|[\s(])[A-Za-z]{2,} [A-Za-z]{2,}(?:$|[\s.,:;!?)])", t.value):
                found.append(Shown(script, t.line, t.value))
    return found


def _scripts(source: str | None) -> dict[str, list[Token]]:
    if source is not None:
        return {"<given>": tokens(source)}
    return {path.name: tokens(path.read_text(encoding="utf-8")) for path in sorted(SCRIPTS.glob("*.js"))}
