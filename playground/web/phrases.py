"""Phrases written in English around values, said in the viewer's language. The backends write a protocol
exchange's lanes and detail in a closed vocabulary (engine/events.py's Rpc: "orders-0 1 record(s), producer 1000
epoch 0 seq 0", "timeout 60000 ms", "group coordinator(b3)"; the simulator's clients, simserver's requests of an
application of one's own, the real-cluster backend), and the panels a step's summary ("from g", "max 3"): each
phrase is a pattern and a msgid with the phrase's values as placeholders. Kafka's own names (API names, COMMIT and
ABORT, read_committed, topics, ids) are not words of them. English stays the text as written (nothing is looked
up); a phrase not listed is shown as it is."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from django.conf import settings
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop as N_

# (the phrase as the backends write it, its words as a msgid with the phrase's values as placeholders), in the order
# they are tried: the longer phrases before the shorter ones inside them.
PHRASES: tuple[tuple[str, str], ...] = (
    (
        r"producer id (?P<pid>-?\d+), producer epoch (?P<epoch>-?\d+)",
        N_("producer id %(pid)s, producer epoch %(epoch)s"),
    ),
    (r"\bproducer (?P<pid>-?\d+) epoch (?P<epoch>-?\d+)", N_("producer %(pid)s epoch %(epoch)s")),
    (r"\bcoordinator epoch (?P<epoch>-?\d+)", N_("coordinator epoch %(epoch)s")),
    (r"\bstart offset (?P<offset>-?\d+)", N_("start offset %(offset)s")),
    (r"\bbase offset (?P<offset>-?\d+(?:, -?\d+)*)", N_("base offset %(offset)s")),
    (r"\b(?P<n>\d+) record\(s\)", N_("%(n)s record(s)")),
    (r"\b(?P<n>\d+) records\b", N_("%(n)s records")),
    (r"\btimeout (?P<ms>\d+) ms", N_("timeout %(ms)s ms")),
    (r"\(idempotent\)|(?<![\w-])idempotent(?![\w-])", N_("(idempotent)")),
    (r"\bseq (?P<seq>-?\d+)", N_("seq %(seq)s")),
    (r"\bbump (?P<pid>-?\d+)/(?P<epoch>-?\d+)", N_("bump %(pid)s/%(epoch)s")),
    (r"(?:^|(?<=, ))transaction (?P<id>[^\s,]+)", N_("transaction %(id)s")),
    (r"(?:^|(?<=, ))group (?P<group>[^\s,]+)", N_("group %(group)s")),
    (r"(?:^|(?<=, ))coordinator (?P<node>-?\d+)", N_("coordinator %(node)s")),
    (r"\bmember id (?P<member>[^\s,]+)", N_("member id %(member)s")),
    (r"\bmember \(new\)", N_("member (new)")),
    (r"\bmember (?P<member>[^\s,]+)", N_("member %(member)s")),
    (r"\bgeneration (?P<generation>-?\d+)", N_("generation %(generation)s")),
    (r"\btopics (?P<topics>[^()]+?)$", N_("topics %(topics)s")),
    (r"\(require stable\)", N_("(require stable)")),
    (r"\bposition (?P<offset>-?\d+)", N_("position %(offset)s")),
    (r" from (?P<offset>-?\d+) \(", N_(" from %(offset)s (")),
    (r"\(held back since (?P<value>'[^']*')\)", N_("(held back since %(value)s)")),
)
# A lane: a client's name, "b2", "bootstrap", "coordinator(b2)", "group coordinator(b3)", "leader orders-0(b1)", the
# network delivering a late write, an operator's tool.
LANES: tuple[tuple[str, str], ...] = (
    (r"^group coordinator\((?P<broker>b-?\d+)\)$", N_("group coordinator(%(broker)s)")),
    (r"^coordinator\((?P<broker>b-?\d+)\)$", N_("coordinator(%(broker)s)")),
    (r"^bootstrap$", N_("bootstrap")),
    (r"^network \(late write of (?P<actor>.+)\)$", N_("network (late write of %(actor)s)")),
    (r"^admin \((?P<tool>.+)\)$", N_("admin (%(tool)s)")),
)
Rules = tuple[tuple[re.Pattern[str], str], ...]


def rules(phrases: tuple[tuple[str, str], ...]) -> Rules:
    return tuple((re.compile(p), msgid) for p, msgid in phrases)


def say(table: Rules, text: str) -> str:
    """`text` with each phrase of `table` said in the viewer's language."""
    lang = get_language()
    if not text or lang == settings.LANGUAGE_CODE:
        return text
    return _said(table, text, lang)


@functools.lru_cache(maxsize=8192)
def _said(table: Rules, text: str, lang: str) -> str:
    # a timeline's rows are mostly the same from one render to the next: each is said once per language
    for pattern, msgid in table:
        text = pattern.sub(_saying(msgid), text)
    return text


def _saying(msgid: str) -> Callable[[re.Match[str]], str]:
    return lambda m: _(msgid) % m.groupdict()


_PHRASES, _LANES = rules(PHRASES), rules(LANES)


def detail(text: str) -> str:
    """An exchange's detail in the viewer's language."""
    return say(_PHRASES, text)


def lane(name: str) -> str:
    """A lane's name in the viewer's language (a client's own name as it is)."""
    return say(_LANES, name)
