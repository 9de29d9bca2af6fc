"""What a Chinese page may still say in Latin letters: the one place the rule is written down.

A zh page (and the scripts' words for it: the djangojs catalogue) says everything in Chinese except:

- **Kafka's own names**, as Kafka and its clients spell them, which Chinese-speaking Kafka users write as they are:
  identifiers (a word with `_` or `.` inside, a capital inside it, or a call: configuration names such as
  transactional.id, error names such as PRODUCER_FENCED and _FENCED, API names such as InitProducerId, fields,
  Java's exceptions and calls such as send().get(), the clients' calls such as commit_transaction); the API names of
  one word (Produce, Fetch: kio's table); the coordinator's transaction states (Ongoing, PrepareCommit: Kafka's
  TransactionState), the markers (COMMIT, ABORT) and a producer's state as its client names it (READY,
  IN_TRANSACTION, FATAL_ERROR: librdkafka's rd_kafka_txn_state_t, kafka-clients' TransactionManager.State); the
  outcomes a step may expect (ok and the error names); and KAFKA_NOUNS, the nouns Chinese Kafka writing keeps in
  Latin letters (topic, offset, epoch, broker, leader, marker, key, value). Producer, consumer, partition, group,
  coordinator and sequence are translated (生产者, 消费者, 分区, 消费组, 协调者, 序号).
- **The scenario format's actors and actions**, as a scenario's steps name them (A.produce, A.crash, broker.stop,
  app, poll); a
  card's button names its call in short (CALL_LABELS: init for init_transactions), its tooltip says it in Chinese.
- **Names of things**: PRODUCTS (Kafka, librdkafka, java as a profile names kafka-clients, SQL, JSON...),
  ABBREVIATIONS (LSO, HW, LEO, PID, KIP, RPC, ID...), UNITS (ms, KB...) and KEYS to press (Esc, Tab).
- **Code, as written**: `<code>`, `<pre>`, `<kbd>`, `<samp>`, a `<textarea>`, an element marked `translate="no"`
  and text between backticks hold a scenario file, a command or a program: any word, but no run of three English
  words with one that only prose has (the, in, this, what...: prose hiding in code).
- **What the user wrote**: a scenario file's texts (its zh ones, or a plain string) and names (actors, topics,
  groups, values, SQL, ids, tags), and what a test typed (a room's title, an attendee's name). The library's own zh
  texts are held to the rule all the same (test_zh_pages.py), with PROSE_TERMS besides: DEBUG, ERROR, GC, OOM, Bean
  and Pod, as Chinese engineering prose writes them.
- **The page's own badges are words, not names**: FENCED, DISCONNECTED, RUNNING, CRASHED and CLOSED say what the
  page saw (no Kafka client has such a state) and are translated (已被隔离, 已断开, 运行中, 已崩溃, 已关闭).
- **Text marked `lang="en"`**: the language switch's "English" (addressed to readers of English), and a client's or
  broker's own message quoted as it wrote it (class "said": librdkafka's "Failed to add offsets to transaction: ...",
  what a reader finds in the application's log).

Numbers, single letters (actor names, keys to press) and words with a digit (b1, v4, orders-0) are names too.
"""

from __future__ import annotations

import html.parser
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

import yaml

KAFKA_NOUNS = frozenset({"topic", "offset", "epoch", "broker", "leader", "follower", "marker", "key", "value"})
# A card's button says its call in short; its title says the call in full, in Chinese.
CALL_LABELS = frozenset({"init", "begin", "offsets", "commit", "abort", "seek"})
PRODUCTS = frozenset(
    {
        "Kafka",
        "kafka",
        "librdkafka",
        "confluent-kafka",
        "kafka-clients",
        "Java",
        "java",
        "Python",
        "Spring",
        "PostgreSQL",
        "SQLite",
        "sqlite",
        "SQL",
        "JSON",
        "YAML",
        "yaml",
        "HTTP",
        "UTF-8",
        "Jepsen",
        "Elle",
        "CodeMirror",
        "Chromium",
    }
)
ABBREVIATIONS = frozenset(
    {"LSO", "HW", "LEO", "PID", "KIP", "RPC", "ID", "NUL", "UTC", "IP", "URL", "API", "EOS", "README", "Cookie"}
)
KEYS = frozenset({"Esc", "Tab", "Enter"})
# Words of the trade that Chinese engineering prose keeps in Latin letters, allowed in the library's zh texts (which
# tell incidents): a log's levels as the log prints them, the JVM's and the kernel's GC and OOM, Spring's Bean and
# Kubernetes' Pod (their Chinese documentation writes them so).
PROSE_TERMS = frozenset({"DEBUG", "ERROR", "GC", "OOM", "Bean", "Pod"})
SWITCH = ("English", "Switch to English")  # the language switch, in the language it switches to
UNITS = frozenset({"ms", "KB", "MB", "GB", "KiB", "MiB"})
# The process's own states: CLIENT_STATES lists them for `expect:`, but no Kafka client has them.
PAGE_STATES = frozenset({"CRASHED", "CLOSED"})

CODE_TAGS = frozenset({"code", "pre", "kbd", "samp", "textarea"})
SKIPPED_TAGS = frozenset({"script", "style"})
VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)
# Attributes a reader sees: tooltips, placeholders, labels, and the data-* texts static/js shows (tests/web/jsstrings.py
# finds those).
SHOWN_ATTRIBUTE = re.compile(
    r"^(title|placeholder|aria-label|alt|data-(tip|confirm|template|actor|who|title)|data-label(-[\w-]+)?"
    r"|data-[\w-]+-label)$"
)
WORD = re.compile(r"_*[A-Za-z][A-Za-z0-9]*(?:['’._\-][A-Za-z0-9_]+)*_*")


@cache
def kafka_names() -> frozenset[str]:
    """The names of one word a zh page may show: Kafka's APIs, states, markers and outcomes as the code knows them,
    the format's actions, and the lists above."""
    from kio.schema.index import api_key_map

    from playground.engine.spec import APP, APP_ACTIONS, CLUSTER_ACTORS, CONSUMER_ACTIONS, PRODUCER_ACTIONS
    from playground.protocol.messages import api_name
    from playground.scenario import model

    names = {api_name(k) for k in api_key_map}
    names |= set(model.TXN_STATES) | set(model.MARKERS) | set(model.OUTCOMES)
    names |= set(model.CLIENT_STATES) - PAGE_STATES
    names |= set(PRODUCER_ACTIONS) | set(CONSUMER_ACTIONS) | set(APP_ACTIONS) | {APP}
    names |= set(CLUSTER_ACTORS) | {a for actions in CLUSTER_ACTORS.values() for a in actions}
    return frozenset(names | KAFKA_NOUNS | CALL_LABELS | PRODUCTS | ABBREVIATIONS | UNITS | KEYS)


@dataclass(frozen=True)
class Authored:
    """What a scenario file's author (or a test) wrote, which a zh page shows as written: its texts (zh ones, or in
    the one language a plain string has; SQL) and its names (scalars without a space, and the keys of its mappings
    but the format's own, each with its dotted parts: rc for rc.poll)."""

    texts: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()

    def __or__(self, other: Authored) -> Authored:
        return Authored(self.texts | other.texts, self.names | other.names)


# Mappings whose keys the author names (actors, topics, tables; what expect: names): other keys are the format's.
NAMING = frozenset(
    {"actors", "topics", "tables", "consumers", "logs", "watermarks", "transactions", "groups", "producers", "config"}
)


def authored(source: str) -> Authored:
    texts: set[str] = set()
    names: set[str] = set()
    _collect(yaml.safe_load(source), texts, names, naming=False)
    names |= {part for w in names for part in w.split(".")}
    names |= {w for t in texts if not re.search(r"[^\x00-\x7f]", t) for w in WORD.findall(t)}  # SQL
    return Authored(frozenset(" ".join(t.split()) for t in texts if t.strip()), frozenset(names))


def _collect(node: Any, texts: set[str], names: set[str], naming: bool) -> None:
    if isinstance(node, dict):
        if node and set(node) <= {"en", "zh"}:
            if node.get("zh") is not None:
                texts.add(str(node["zh"]))
            return
        for k, v in node.items():
            if naming:
                names.update(WORD.findall(str(k)))
            _collect(v, texts, names, naming=str(k) in NAMING)
    elif isinstance(node, list):
        for v in node:
            _collect(v, texts, names, naming=False)
    elif node is not None:
        value = str(node)
        if re.search(r"\s|[^\x00-\x7f]", value.strip()):
            texts.add(value)
        else:
            names.add(value)
            names.update(WORD.findall(value))


def is_name(word: str, allowed: Iterable[str] = ()) -> bool:
    """Whether a word may stay in Latin letters on a zh page outside code (the module's rule)."""
    if len(word.strip("_")) <= 1 or re.search(r"\d", word) or re.search(r"\w[_.]\w|^_|[a-z][A-Z]", word):
        return True
    known = kafka_names() | frozenset(allowed)
    if word in known:
        return True
    parts = re.split(r"[-'’]", word)
    return len(parts) > 1 and all(p in known or len(p) <= 1 for p in parts)


# A call (send(), EndTxn(commit)), never a plural's "(s)".
_CALL = re.compile(r"(\w+)(?=\((?!s\)))")
# Prose hiding in code: three words of letters in a row, one of them a word only prose has (SQL's "integer primary
# key" and a placeholder such as NAME are code).
_RUN = re.compile(r"(?<![\w.\-])(?:[A-Za-z]+ ){2,}[A-Za-z]+(?![\w.\-])")
_PROSE_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "is",
        "are",
        "was",
        "be",
        "it",
        "its",
        "in",
        "on",
        "of",
        "to",
        "for",
        "with",
        "and",
        "or",
        "but",
        "what",
        "which",
        "who",
        "how",
        "my",
        "your",
        "our",
        "their",
        "you",
        "we",
        "i",
    ]
)


# An address or a path (/inspect/), a placeholder a script fills ({name}, %(n)s).
_NOT_WORDS = re.compile(r"\b\w+://\S+|(?<![\w.])/[\w.\-]+/[\w.\-/?=&]*|\{\w+\}|%\(\w+\)[sd]")


def english(text: str, allowed: Iterable[str] = (), code: bool = False) -> list[str]:
    """The words of a text that break the rule; in code (and between backticks), its runs of prose. A word cut
    short ("kafka-transac…") is a name shown whole on hover."""
    found: list[str] = []
    text = _NOT_WORDS.sub(" ", text)
    for i, part in enumerate(text.split("`")):
        if code or i % 2:
            found += [r for r in (m.group() for m in _RUN.finditer(part)) if _PROSE_WORDS & set(r.lower().split())]
            continue
        calls = {m.start() for m in _CALL.finditer(part)}
        found += [
            m.group()
            for m in WORD.finditer(part)
            if m.start() not in calls and not part.startswith("…", m.end()) and not is_name(m.group(), allowed)
        ]
    return found


@dataclass(frozen=True)
class Shown:
    """A piece of a page a reader sees: its text, whether it is code, and where it is (for the failure message)."""

    text: str
    code: bool
    where: str


class _Reader(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, str, str]] = []  # tag, code, declared English ("", "en", "said"), where
        self.shown: list[Shown] = []
        self.english: list[tuple[str, str]] = []  # (how it is declared, text)

    def _state(self) -> tuple[bool, bool, str, str]:
        skipped = any(t in SKIPPED_TAGS for t, *_ in self.stack)
        top = self.stack[-1] if self.stack else ("", False, "", "")
        return skipped, top[1], top[2], top[3]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        skipped, code, declared, where = self._state()
        where = f"{where}>{tag}" + (f"#{a['id']}" if a.get("id") else "")
        if not declared and a.get("lang", "").startswith("en"):
            declared = "said" if "said" in a.get("class", "").split() else "en"
        code = code or tag in CODE_TAGS or a.get("translate") == "no"
        if not skipped:
            for name, value in a.items():
                shown = SHOWN_ATTRIBUTE.match(name) or (
                    name == "value" and tag == "input" and a.get("type") in ("submit", "button", "reset")
                )
                if shown and value.strip():
                    if declared:
                        self.english.append((declared, value))
                    else:
                        self.shown.append(Shown(value, False, f"{where}@{name}"))
        if tag not in VOID_TAGS:
            self.stack.append((tag, code, declared, where))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID_TAGS:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        skipped, code, declared, where = self._state()
        if skipped or not data.strip():
            return
        if declared:
            self.english.append((declared, data))
        else:
            self.shown.append(Shown(data, code, where))


def shown(page: str) -> tuple[list[Shown], list[tuple[str, str]]]:
    """What a page shows its reader, and the texts it declares English (lang="en"; "said": a quoted message)."""
    reader = _Reader()
    reader.feed(page)
    reader.close()
    return reader.shown, reader.english


def english_on(page: str, author: Authored = Authored()) -> list[str]:
    """Each piece of the page that breaks the rule, with where it is and the words; and any text declared English
    that is not the language switch's. The author's texts are taken out of a piece first, and a piece that is part
    of one of them is the author's."""
    texts = sorted(author.texts, key=len, reverse=True)
    pieces, declared = shown(page)
    found = []
    for p in pieces:
        text = " ".join(p.text.split())
        if any(text.rstrip("…. ") in t for t in texts):
            continue
        for t in texts:
            text = text.replace(t, " ")
        if words := english(text, author.names, p.code):
            found.append(f"{p.where}: {words} in {p.text.strip()[:120]!r}")
    found += [f"lang=en: {t!r}" for how, t in declared if how != "said" and t.strip() not in SWITCH]
    return found
