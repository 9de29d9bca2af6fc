"""Every string the UI translates has a Chinese translation in locale/zh_Hans/LC_MESSAGES/django.po (and the
scripts' in djangojs.po), the committed .mo files are the .po files compiled, and the loader's messages are built
for translation. That a zh page shows no English is tests/web/test_zh_pages.py's.

The catalogue is read from the code itself (gettext calls, also inside f-strings, which xgettext and so
makemessages miss; {% translate %} and {% blocktranslate %} in the templates), not from the .po alone: a string
missing from the .po is exactly what would reach a zh page in English."""

from __future__ import annotations

import ast
import gettext
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES"
PO = MESSAGES / "django.po"
GETTEXT = {
    "_": 1,
    "N_": 1,
    "gettext": 1,
    "gettext_noop": 1,
    "gettext_lazy": 1,
    "ngettext": 2,
    "ngettext_lazy": 2,
    "pgettext": 2,
}
TRANSLATE = re.compile(r"""\{%\s*translate\s+(?:"([^"]*)"|'([^']*)')(?:\s+context\s+(?:"([^"]*)"|'([^']*)'))?""")
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
                    texts = [str(a.value) for a in args]
                    if node.func.id == "pgettext":  # as gettext keys it: context, EOT, msgid
                        texts = [f"{texts[0]}\x04{texts[1]}"]
                    found.add(tuple(texts))
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        for m in TRANSLATE.finditer(text):
            msgid = m.group(1) if m.group(1) is not None else m.group(2)
            context = m.group(3) if m.group(3) is not None else m.group(4)
            found.add((msgid if context is None else f"{context}\x04{msgid}",))
        for m in BLOCK.finditer(text):
            parts = re.split(r"\{%\s*plural\s*%\}", m.group(2))
            if "trimmed" in m.group(1):
                parts = [" ".join(p.split()) for p in parts]
            found.add(tuple(VARIABLE.sub(lambda v: f"%({v.group(1)})s", p) for p in parts))
    return found


def _po(path: Path = PO) -> dict[tuple[str, ...], tuple[list[str], bool]]:
    """A .po's entries: msgid(s) -> (msgstrs, fuzzy); obsolete (#~) entries are left out."""
    entries: dict[tuple[str, ...], tuple[list[str], bool]] = {}
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        fuzzy = False
        for line in block.splitlines():
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            elif m := re.match(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s+(".*")$', line):
                key = m.group(1)
                fields[key] = ast.literal_eval(m.group(2))
            elif line.startswith('"') and key:
                fields[key] += ast.literal_eval(line)
        if fields.get("msgid"):
            if "msgctxt" in fields:  # as gettext keys it: context, EOT, msgid
                fields["msgid"] = f"{fields.pop('msgctxt')}\x04{fields['msgid']}"
            ident = (fields["msgid"], fields["msgid_plural"]) if "msgid_plural" in fields else (fields["msgid"],)
            entries[ident] = ([v for k, v in sorted(fields.items()) if k.startswith("msgstr")], fuzzy)
    return entries


def test_it_has_a_chinese_translation_for_every_string_the_ui_translates():
    po = _po()
    untranslated = sorted(ident for ident in _in_code() if ident not in po or po[ident][1] or not all(po[ident][0]))
    assert untranslated == [], f"{len(untranslated)} strings without a zh translation: {untranslated[:20]}"


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


def test_it_has_a_chinese_translation_for_every_word_of_the_scripts():
    from .jsstrings import messages

    po = _po(MESSAGES / "djangojs.po")
    untranslated = sorted(ident for ident in messages() if ident not in po or po[ident][1] or not all(po[ident][0]))
    assert untranslated == []


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_it_commits_each_catalogue_compiled(domain):
    """The .mo Django reads holds what the .po says, entry for entry (compile with msgfmt after editing a .po)."""
    with (MESSAGES / f"{domain}.mo").open("rb") as mo:
        compiled = gettext.GNUTranslations(mo)._catalog  # type: ignore[attr-defined]
    written: dict[object, str] = {}
    for ident, (strs, fuzzy) in _po(MESSAGES / f"{domain}.po").items():
        if fuzzy:
            continue
        if len(ident) == 1:
            written[ident[0]] = strs[0]
        else:
            written.update({(ident[0], i): s for i, s in enumerate(strs)})
    compiled = {k: v for k, v in compiled.items() if k != ""}
    assert compiled == written
