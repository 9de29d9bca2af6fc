"""Chinese pages say everything in Chinese: every string the UI translates has a translation in
locale/zh_Hans/LC_MESSAGES/django.po, and no English string of that catalogue reaches a zh page.

The catalogue is read from the code itself (gettext calls, also inside f-strings, which xgettext and so
makemessages miss; {% translate %} and {% blocktranslate %} in the templates), not from the .po alone: a string
missing from the .po is exactly what would reach a zh page in English."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.utils import translation

from playground import session
from playground.scenario import library
from playground.web import broadcast

from .conftest import hold

ROOT = Path(__file__).resolve().parents[2]
PO = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
GETTEXT = {"_": 1, "N_": 1, "gettext": 1, "gettext_noop": 1, "gettext_lazy": 1, "ngettext": 2, "ngettext_lazy": 2}
TRANSLATE = re.compile(r"""\{%\s*translate\s+(?:"([^"]*)"|'([^']*)')""")
BLOCK = re.compile(r"\{%\s*blocktranslate\b([^%]*)%\}(.*?)\{%\s*endblocktranslate\s*%\}", re.S)
VARIABLE = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%[sd]|\{\w+\}|<[^>]*>")


def _in_code() -> set[tuple[str, ...]]:
    """Every msgid of the code: (msgid,) or (msgid, msgid_plural)."""
    found: set[tuple[str, ...]] = set()
    for path in (ROOT / "playground").rglob("*.py"):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in GETTEXT:
                args = node.args[: GETTEXT[node.func.id]]
                if args and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args):
                    found.add(tuple(str(a.value) for a in args))
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        found.update((m.group(1) if m.group(1) is not None else m.group(2),) for m in TRANSLATE.finditer(text))
        for m in BLOCK.finditer(text):
            parts = re.split(r"\{%\s*plural\s*%\}", m.group(2))
            if "trimmed" in m.group(1):
                parts = [" ".join(p.split()) for p in parts]
            found.add(tuple(VARIABLE.sub(lambda v: f"%({v.group(1)})s", p) for p in parts))
    return found


def _po() -> dict[tuple[str, ...], tuple[list[str], bool]]:
    """The .po's entries: msgid(s) -> (msgstrs, fuzzy); obsolete (#~) entries are left out."""
    entries: dict[tuple[str, ...], tuple[list[str], bool]] = {}
    for block in PO.read_text(encoding="utf-8").split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        fuzzy = False
        for line in block.splitlines():
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            elif m := re.match(r'^(msgid_plural|msgid|msgstr(?:\[\d+\])?)\s+(".*")$', line):
                key = m.group(1)
                fields[key] = ast.literal_eval(m.group(2))
            elif line.startswith('"') and key:
                fields[key] += ast.literal_eval(line)
        if fields.get("msgid"):
            ident = (fields["msgid"], fields["msgid_plural"]) if "msgid_plural" in fields else (fields["msgid"],)
            entries[ident] = ([v for k, v in sorted(fields.items()) if k.startswith("msgstr")], fuzzy)
    return entries


def test_it_has_a_chinese_translation_for_every_string_the_ui_translates():
    po = _po()
    untranslated = sorted(ident for ident in _in_code() if ident not in po or po[ident][1] or not all(po[ident][0]))
    assert untranslated == [], f"{len(untranslated)} strings without a zh translation: {untranslated[:20]}"


def _english_fragments() -> set[str]:
    """The catalogue's English as it could appear on a page: each msgid's literal text between its placeholders,
    where long enough (three words) that a Chinese page showing it can only have shown the English string."""
    fragments: set[str] = set()
    for ident, (strs, _fuzzy) in _po().items():
        if any(s == ident[0] for s in strs):
            continue  # the same in both languages (a Kafka word, a name)
        for text in ident:
            for part in PLACEHOLDER.split(text):
                part = part.strip(" :·,.;()→…")
                if len(part.split()) >= 3 and re.search(r"[a-z]{3}", part):
                    fragments.add(part)
    return fragments


def _visible(html: str) -> str:
    """A page's text and the attributes a reader sees (titles, placeholders, labels)."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    shown = " ".join(re.findall(r'(?:title|placeholder|aria-label|data-t-[\w-]+)="([^"]*)"', html))
    text = re.sub(r"<[^>]+>", " ", html)
    return " ".join(f"{text} {shown}".replace("&#x27;", "'").replace("&quot;", '"').replace("&amp;", "&").split())


# A scenario with a problem on most of its lines: what the loader says about each reaches the editor's page.
BROKEN = """format: 1
id: Bad_Id
title: broken
profil: {}
cluster:
  brokers: 3
  topics:
    orders: {partitions: 2}
actors:
  A:
    producer: {transactional.id: t, lingr.ms: 5}
  C:
    consumer: {topics: [orders]}
steps:
  - A.init_transaction
  - A.produce: {topic: order, value: x}
  - C.poll: {max: 0}
  - B.commit_transaction
  - clock.advance: soon
  - broker.stop: 7
  - note
expect:
  logs:
    orders-9: [x]
  groups: {}
"""


def test_it_builds_every_message_of_the_scenario_loader_for_translation():
    """The loader's messages reach the editor: each is a `_("...")` message id (playground/scenario/messages.py),
    never an f-string or a bare literal, which a zh page would show in English."""
    untranslatable = []
    for name in ("reader", "loader", "loadsteps", "loaddb", "model"):
        path = ROOT / "playground" / "scenario" / f"{name}.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            message = {"fail": 2, "ScenarioError": 3, "ComposerError": 2}.get(callee)
            if message is not None and len(node.args) > message:
                arg = node.args[message]
                if isinstance(arg, ast.JoinedStr) or (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    untranslatable.append(f"{path.name}:{node.lineno}")
    assert untranslatable == []


@pytest.mark.django_db
def test_it_shows_no_english_string_of_the_catalogue_on_a_chinese_page(client, settings):
    with translation.override("en"):  # the pages activate zh in this thread: the tests after it expect English
        _no_english_on_chinese_pages(client, settings)


def _no_english_on_chinese_pages(client, settings):
    settings.PLAYGROUND_DEFAULT_BACKEND = "sim"
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    pages = {}
    for name, url in (
        ("gallery", "/"),
        ("editor", "/editor/"),
        ("compare", "/compare/?scenario=zombie-fencing&a=3.9-librdkafka&b=4-java&at=7"),
    ):
        r = client.get(url)
        assert r.status_code == 200, url
        pages[name] = r.content.decode()
    for name in ("zombie-fencing", "db-incident-in-full"):
        entry = library.find(name)
        assert entry is not None
        row = session.create(entry.scenario, source=entry.scenario.source, backend="sim")
        hold(client, row)
        for _ in entry.scenario.steps:
            session.step(row.id)
        pages[name] = client.get(f"/s/{row.id}/").content.decode() + broadcast.snapshot(session.load(row.id), "zh-hans")
    # the editor with a broken scenario: every problem the loader found, said in Chinese (Play stays on the editor)
    r = client.post("/editor/play/", {"text": BROKEN})
    assert r.status_code == 400
    pages["editor, broken"] = r.content.decode()
    checked = client.post("/editor/check/", {"text": BROKEN}).json()
    pages["editor's check"] = "".join(f"<p>{e['message']}</p>" for e in checked["errors"])
    assert len(checked["errors"]) >= 8 and "未知的" in pages["editor, broken"]
    # a YAML syntax error (a tab, an unclosed bracket): the parser's words, in Chinese too
    for text in ("format: 1\n\tid: x\n", "format: 1\nid: [x\n"):
        said = client.post("/editor/check/", {"text": text}).json()["errors"][0]
        assert said["field"] == "yaml" and not re.search(r"[a-z]{4}", said["message"]), said
        pages[f"editor's check of {text!r}"] = f"<p>{said['message']}</p>"
    assert "zh-hans" in pages["gallery"] and "第一轮" in pages["zombie-fencing"]
    assert "中止" in pages["db-incident-in-full"]  # the anomaly panel's sentence, in Chinese
    fragments = _english_fragments()
    assert len(fragments) > 200  # the catalogue was read
    seen = {name: sorted(f for f in fragments if f in _visible(html)) for name, html in pages.items()}
    assert seen == {name: [] for name in pages}
