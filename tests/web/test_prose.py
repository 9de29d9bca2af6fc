"""A scenario's summary and notes mark a command, an option or a value as `code` (docs/scenario-format.md): every page
that shows them shows code, never a backtick, in both languages (a tooltip, plain text, keeps them)."""

from __future__ import annotations

import html
import re

import pytest

from playground import session
from playground.scenario import library
from playground.scenario.i18n import pick
from playground.web.templatetags.playground import prose

from .conftest import hold

pytestmark = pytest.mark.django_db

LANGS = ("en", "zh-hans")


def _ticked(lang: str) -> dict[str, list[str]]:
    """The library scenarios' texts in `lang` that mark code, by scenario: its summary and its notes."""
    found = {}
    for entry in library.entries():
        scenario = entry.scenario
        notes = [step.args.get("text") for step in scenario.steps if step.is_note]
        texts = [t for t in (pick(x, lang) for x in (scenario.summary, *notes)) if "`" in t]
        if texts:
            found[scenario.id] = texts
    return found


def _narrative(page: str) -> str:
    found = re.search(r'<div id="p-narrative".*?</ol>\s*</div>', page, re.S)
    assert found is not None
    return found.group(0)


def _text(fragment: str) -> str:
    """What a reader sees of an HTML fragment: its text, not its attributes."""
    return html.unescape(re.sub(r"<[^>]*>", "", fragment))


def test_it_marks_code_after_escaping_so_that_a_text_cannot_write_markup():
    assert prose("run `kill -9` then <b>`a<b>`</b>") == (
        "run <code>kill -9</code> then &lt;b&gt;<code>a&lt;b&gt;</code>&lt;/b&gt;"
    )
    assert prose({"en": "`x`", "zh": "值 `x`"}, "zh") == "值 <code>x</code>"
    assert prose("a lone ` stays") == "a lone ` stays" and prose("an empty `` too") == "an empty `` too"


def test_it_finds_the_library_scenarios_that_mark_code():
    assert {"hanging-transaction-kafka-3-5", "shared-id-incident-java", "crash-mid-transaction"} <= set(_ticked("zh"))
    assert "hanging-transaction-kafka-3-5" in _ticked("en")


@pytest.mark.parametrize("lang", LANGS)
def test_it_shows_every_marked_word_of_the_library_as_code_in_the_narrative(client, settings, lang):
    settings.PLAYGROUND_DEFAULT_BACKEND = "sim"
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = lang
    found = []
    for name, texts in _ticked(lang).items():
        scenario = library.find(name).scenario
        row = hold(client, session.create(scenario, source=scenario.source, backend="sim"))
        pages = [_narrative(client.get(f"/s/{row.id}/").content.decode())]  # the summary, before the first step
        for i, step in enumerate(scenario.steps):
            if step.predict and i not in session.load(row.id).predictions:
                session.predict(row.id, i, 0)  # an exercise's note stays held until its question is answered
            session.step(row.id)
            if step.is_note:  # the note as the current step's story, and in the list
                pages.append(_narrative(client.get(f"/s/{row.id}/").content.decode()))
        shown = "".join(pages)
        if "`" in _text(shown):
            found.append(f"{name}: a backtick in {re.findall(r'[^<>]{0,30}`[^<>]{0,30}', _text(shown))[:3]}")
        for word in {w for text in texts for w in re.findall(r"`([^`\n]+)`", text)}:
            if f"<code>{html.escape(word, quote=True)}</code>" not in shown:
                found.append(f"{name}: {word!r} not shown as code")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("lang", LANGS)
def test_it_shows_marked_words_as_code_on_the_gallery_the_compare_page_and_a_shared_scenario(client, settings, lang):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = lang
    gallery = client.get("/").content.decode()
    summaries = "".join(re.findall(r'<p class="summary">.*?</p>', gallery, re.S))
    marked = any("`" in pick(e.scenario.summary, lang) for e in library.entries())  # zh's do, en's not yet
    assert ("<code>" in summaries) == marked and "`" not in _text(summaries)
    compare = client.get("/compare/?scenario=hanging-transaction-kafka-3-5&a=3.5-librdkafka&b=3.9-librdkafka")
    body = compare.content.decode()
    notes = "".join(re.findall(r'<blockquote class="cmp-note.*?</blockquote>|<span class="lbl ntext".*?</span>', body))
    assert "ntext" in notes and "`" not in _text(notes)
    r = client.post("/editor/save/", {"text": library.find("hanging-transaction-kafka-3-5").scenario.source})
    assert r.status_code == 302, r.content
    shared = client.get(r["Location"]).content.decode()
    quoted = "".join(re.findall(r'<p class="summary">.*?</p>|<ol class="shared-steps">.*?</ol>', shared, re.S))
    assert "<code>" in quoted and "`" not in _text(quoted)
