"""Chinese pages without English (issue 33): every page a zh reader can open, rendered by Django's test client, and
the scripts' words from the JavaScript catalogue, hold to tests/web/zhrule.py's rule (what may stay in Latin
letters: Kafka's own names, the scenario format's words in code, names of things, what the user wrote). A failure
names the page, the element and the words."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator

import pytest
from django.test import Client
from django.utils import translation

from playground import session
from playground.scenario import library
from playground.web import broadcast

from . import zhrule
from .conftest import hold

pytestmark = pytest.mark.django_db

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
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%[sd]|\{\w+\}")
# What a test types into the pages (a room's title, an attendee's name): user content, like a scenario's.
TYPED = zhrule.Authored(frozenset({"周二的练习"}), frozenset({"Ada", "Grace", "ZZZZZZ"}))


@pytest.fixture
def zh(client, settings):
    settings.PLAYGROUND_DEFAULT_BACKEND = "sim"
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    return client


def _library() -> zhrule.Authored:
    every = zhrule.Authored()
    for entry in library.entries():
        every |= zhrule.authored(entry.scenario.source)
    return every


def _free_play() -> zhrule.Authored:
    """Free play's own names (its topic orders, its consumers rc and ru) and what the tests add to it (group g1)."""
    from playground.session.live import free_play_actors, free_play_cluster

    return zhrule.Authored(
        names=frozenset({t.name for t in free_play_cluster().topics} | set(free_play_actors()) | {"g1"})
    )


def _textarea(page: str) -> str:
    found = re.search(r"<textarea[^>]*>(.*?)</textarea>", page, re.S)
    assert found is not None
    return html.unescape(found.group(1))


def _get(client: Client, url: str, status: int = 200) -> str:
    r = client.get(url)
    assert r.status_code == status, (url, r.status_code)
    return r.content.decode()


def _no_english(pages: dict[str, tuple[str, zhrule.Authored]]) -> None:
    """Each page's English, every piece once, as the failure's message."""
    found = {name: list(dict.fromkeys(zhrule.english_on(page, author))) for name, (page, author) in pages.items()}
    report = "\n".join(f"{name}:\n  " + "\n  ".join(words) for name, words in found.items() if words)
    assert not report, f"English on zh pages:\n{report}"


def _walk(client: Client, name: str) -> Iterator[tuple[str, str]]:
    """A library scenario's session page at its start, at its middle (also as a moment: ?at=k), at its end (with the
    websocket's full snapshot), answering each question on the way; and its pages of lists."""
    entry = library.find(name)
    assert entry is not None, name
    row = hold(client, session.create(entry.scenario, source=entry.scenario.source, backend="sim"))
    steps = entry.scenario.steps
    yield "start", _get(client, f"/s/{row.id}/")
    for i, step in enumerate(steps):
        if step.predict and i not in session.load(row.id).predictions:
            yield f"question at {i}", _get(client, f"/s/{row.id}/")
            session.predict(row.id, i, 0)
        session.step(row.id)
        if i == len(steps) // 2:
            yield "middle", _get(client, f"/s/{row.id}/")
    yield "end", _get(client, f"/s/{row.id}/") + broadcast.snapshot(session.load(row.id), "zh-hans")
    yield "moment", _get(client, f"/s/{row.id}/?at={len(steps) // 2}")
    tp = f"{entry.scenario.cluster.topics[0].name}-0"
    for part in ("p/", f"p/{tp}/", "clients/", "transactions/", "timeline/", "compare/"):
        yield part, _get(client, f"/s/{row.id}/{part}")


SCENARIOS = (
    "zombie-fencing",  # two producers fence each other: FENCED cards, _FENCED and INVALID_PRODUCER_EPOCH
    "ex-who-is-fenced",  # an exercise: goal, hints, questions asked and answered
    "db-incident-in-full",  # the application's database, its reconciliation and anomalies
    "shared-id-incident-java",  # kafka-clients' states and exceptions
    "consume-transform-produce",  # a consumer group, offsets in a transaction
    "coordinator-failover",  # a broker stopped and started
    "hanging-transaction-kafka-3-5",  # an LSO held by a hanging transaction
)


def test_the_librarys_chinese_texts_say_everything_in_chinese_but_names():
    """A library scenario's zh texts are shown as written (what the user wrote), so the pages' walk cannot judge
    them: here they are held to the rule itself (tests/web/zhrule.py: 生产者, 分区, 消费者, 批次 in running text;
    Kafka's own names such as transactional.id or ProducerFencedException, the file's own names, commands and code
    between backticks, and the few words of the trade zhrule.PROSE_TERMS lists stay)."""
    found = []
    for entry in library.entries():
        author = zhrule.authored(entry.scenario.source)
        for text in author.texts:
            if not re.search(r"[\u4e00-\u9fff]", text):
                continue
            words = zhrule.english(text, author.names | zhrule.PROSE_TERMS)
            if words:
                found.append(f"{entry.scenario.id}: {', '.join(words)} in {text[:80]}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("name", SCENARIOS)
def test_it_shows_no_english_on_a_chinese_session_page(zh, name):
    author = zhrule.authored(library.find(name).scenario.source)
    pages = {where: (page, author) for where, page in _walk(zh, name)}
    assert "生产者" in pages["end"][0] and "分区" in pages["end"][0]
    _no_english(pages)


def test_it_shows_no_english_in_a_chinese_free_play_session(zh):
    row = hold(zh, session.create(None, backend="sim"))
    for command, data in (
        ("add-producer", {"mode": "new"}),
        ("add-producer", {"mode": "plain"}),
        ("add-consumer", {"isolation": "read_committed", "group": "g1"}),
        ("action", {"actor": "A", "action": "init_transactions"}),
        ("action", {"actor": "A", "action": "begin_transaction"}),
        ("produce", {"actor": "A", "topic": "orders", "value": "v1"}),
        ("action", {"actor": "A", "action": "crash"}),
        ("clock", {"seconds": "90"}),
        ("broker", {"broker": "1", "action": "stop"}),
    ):
        assert zh.post(f"/s/{row.id}/{command}/", data).status_code == 204, (command, data)
    page = _get(zh, f"/s/{row.id}/") + broadcast.snapshot(session.load(row.id), "zh-hans")
    names = _free_play() | zhrule.Authored(names=frozenset(re.findall(r'data-(?:producer|consumer)="([^"]+)"', page)))
    assert ">CRASHED<" not in page and ">已崩溃<" in page
    _no_english({"free play": (page, names)})


def test_it_shows_no_english_on_the_chinese_gallery_editor_and_compare(zh):
    every = _library()
    pages = {
        "gallery": (_get(zh, "/"), every),
        "compare at 0": (_get(zh, "/compare/?scenario=zombie-fencing&a=3.9-librdkafka&b=4-java&at=0"), every),
        "compare at 7": (_get(zh, "/compare/?scenario=zombie-fencing&a=3.9-librdkafka&b=4-java&at=7"), every),
        "compare, java": (_get(zh, "/compare/?scenario=shared-id-incident-java&a=4-java&b=3.5-java"), every),
        "compare, a crash": (
            _get(zh, "/compare/?scenario=crash-mid-transaction&a=3.9-librdkafka&b=4-java&at=9"),
            every,
        ),
    }
    assert "已崩溃" in pages["compare, a crash"][0]  # a client's state of the page's own, said in Chinese
    editor = _get(zh, "/editor/")
    editor_text = _textarea(editor)
    pages["editor"] = (editor, zhrule.authored(editor_text))
    assert "title: 我的场景" in editor_text and "en:" not in editor_text  # the starter text is the reader's language's
    assert "summary: 这个场景展示什么，用一两句话说明。" in editor_text  # its summary too: in the catalogue
    # the editor with a broken scenario: every problem the loader found, said in Chinese (Play stays on the editor)
    r = zh.post("/editor/play/", {"text": BROKEN})
    assert r.status_code == 400
    pages["editor, broken"] = (r.content.decode(), zhrule.authored(BROKEN))
    checked = zh.post("/editor/check/", {"text": BROKEN}).json()
    said = "".join(f"<p><code>{e['field']}</code> {e['message']}</p>" for e in checked["errors"])
    pages["editor's check"] = (said, zhrule.authored(BROKEN))
    assert len(checked["errors"]) >= 8 and "未知的" in said
    for text in ("format: 1\n\tid: x\n", "format: 1\nid: [x\n"):  # a YAML syntax error: the parser's words too
        error = zh.post("/editor/check/", {"text": text}).json()["errors"][0]
        assert error["field"] == "yaml"
        pages[f"editor's check of {text!r}"] = (f"<p>{error['message']}</p>", zhrule.Authored())
    # a text saved and shared: its own page
    r = zh.post("/editor/save/", {"text": editor_text})
    assert r.status_code == 302, r.content
    pages["shared"] = (_get(zh, r["Location"]), zhrule.authored(editor_text))
    _no_english(pages)


@pytest.mark.django_db(transaction=True)
def test_it_shows_no_english_on_a_chinese_rooms_pages(zh, settings):
    """The facilitator's pages and an attendee's, before and after the attendee played the exercise to its end
    (a fenced producer on the board's card), answering its questions, with follow-me on, and after a move."""
    every = _library() | TYPED
    pages = {"join": (_get(zh, "/w/"), every), "new room": (_get(zh, "/w/new/"), every)}
    r = zh.post("/w/create/", {"title": "周二的练习", "scenario": ["ex-who-is-fenced", "zombie-fencing"]})
    assert r.status_code == 302, r.content
    code = r["Location"].strip("/").split("/")[-2]
    # the join code as a whole and as the rule reads words in it (a code that opens with a digit, 4DZXYE, is DZXYE)
    every |= zhrule.Authored(names=frozenset({code, *zhrule.WORD.findall(code)}))
    pages["board, empty"] = (_get(zh, r["Location"]), every)
    attendee = Client()
    attendee.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    r = attendee.post("/w/join/", {"code": code, "name": "Ada"})
    assert r.status_code == 302, r.content
    r = attendee.get(r["Location"])
    assert r.status_code == 302 and r["Location"].startswith("/s/")
    mine = r["Location"]
    pages["attendee's session"] = (_get(attendee, mine), every)
    pages["board"] = (_get(zh, f"/w/{code}/board/"), every)
    sid = mine.strip("/").split("/")[-1]
    for i, step in enumerate(session.load(sid).steps):
        if step.predict:
            assert attendee.post(f"/s/{sid}/predict/", {"n": i, "choice": 0}).status_code == 204
            pages[f"questions at {i}"] = (_get(zh, f"/w/{code}/questions/"), every)
        assert attendee.post(f"/s/{sid}/step/").status_code == 204
    pages["attendee's session, played"] = (_get(attendee, mine), every)
    pages["board, played"] = (_get(zh, f"/w/{code}/board/"), every)
    assert "被隔离" in pages["board, played"][0]  # the card's last error: a producer fenced, said in Chinese
    assert zh.post(f"/w/{code}/follow/", {"on": "1"}).status_code in (200, 204)
    pages["attendee's session, following"] = (_get(attendee, mine), every)
    pages["board, following"] = (_get(zh, f"/w/{code}/board/"), every)
    assert zh.post(f"/w/{code}/move/", {"item": 1}).status_code in (200, 204, 302)
    pages["board, moved"] = (_get(zh, f"/w/{code}/board/"), every)
    wrong = Client()
    wrong.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    r = wrong.post("/w/join/", {"code": "ZZZZZZ", "name": "Grace"})
    pages["a wrong code"] = (r.content.decode(), every)
    _no_english(pages)


def test_it_shows_no_english_on_the_chinese_inspector_and_error_pages(zh, settings):
    pages = {"inspector, off": (_get(zh, "/inspect/", 503), zhrule.Authored())}
    settings.INSPECTOR_KEY = "k" * 40
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:9"
    pages["inspector's key"] = (_get(zh, "/inspect/", 403), zhrule.Authored())
    r = zh.post("/inspect/key/", {"key": "wrong"})
    pages["inspector, a wrong key"] = (r.content.decode(), zhrule.Authored())
    pages["404"] = (_get(zh, "/no/such/page/", 404), zhrule.Authored())
    pages["no such session"] = (_get(zh, "/s/nosuchsession/", 404), zhrule.Authored())
    row = session.create(None, backend="sim")
    r = Client(HTTP_COOKIE=f"{settings.LANGUAGE_COOKIE_NAME}=zh-hans").post(f"/s/{row.id}/step/")
    assert r.status_code == 403
    pages["a command without the drive link"] = (f"<p>{r.content.decode()}</p>", zhrule.Authored())
    r = zh.get("/s/x/", {"at": "\x00"})
    pages["400"] = (r.content.decode(), zhrule.Authored())
    from django.template.loader import render_to_string

    with translation.override("zh-hans"):
        pages["500"] = (render_to_string("500.html"), zhrule.Authored())
    _no_english(pages)


def _catalogue(client: Client, lang: str) -> dict[str, str | list[str]]:
    r = client.get(f"/jsi18n/{lang}.js")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/javascript")
    found = re.search(r"var catalog = (\{.*?\});\n", r.content.decode(), re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_it_says_every_word_of_the_scripts_in_chinese_from_their_catalogue(client):
    from .jsstrings import messages

    used = messages()
    assert len(used) >= 10  # the scripts were read
    zh = _catalogue(client, "zh-hans")
    missing = sorted(m for m in used if m[0] not in zh)
    assert missing == []
    english = {m: zhrule.english(re.sub(r"%\(\w+\)s", "", str(zh[m[0]]))) for m in used}
    assert {m: words for m, words in english.items() if words} == {}
    assert _catalogue(client, "en") == {}  # English is the scripts' own: nothing to look up


def test_it_would_notice_english_on_a_chinese_page():
    """The rule fails on what the issue saw in English (a test that cannot fail is no test), and lets Kafka's names,
    the format's words in code and the author's names through."""
    issue = (
        "<h2>Producer</h2>",
        "<h2>Partition 日志</h2>",
        '<span class="badge">RUNNING</span>',
        '<span class="badge">FENCED</span>',
        "<span>DISCONNECTED</span>",
        "<span>+ producer</span>",
        "<button>+10 min</button>",
        "<button>+1 day</button>",
        "<text>Produce (orders-0 1 record(s))</text>",
        "<text>Produce (base offset 0)</text>",
        "<text>InitProducerId (timeout 60000 ms)</text>",
        '<g data-tip="#1 producer id 0"></g>',
        "<textarea>summary: What this shows, in a sentence or two.</textarea>",
        '<a title="Copy this link">⎘</a>',
        '<p lang="en">Copied</p>',
    )
    assert [page for page in issue if not zhrule.english_on(page)] == []
    names = (
        "<p>InitProducerId · Produce · EndTxn(commit) → PRODUCER_FENCED / _FENCED</p>",
        "<p>transactional.id 的 epoch 2 · offset 4 · LSO 3 · HW 5 · LEO 5</p>",
        "<p>协调者状态 Ongoing → PrepareCommit → CompleteCommit；客户端状态 READY、IN_TRANSACTION</p>",
        "<pre>actors:\n  A: {producer: {transactional.id: t}}\nsteps:\n  - A.init_transactions</pre>",
        "<button>init</button><button>commit</button>",
        '<form><button lang="en" title="Switch to English">English</button></form>',
    )
    assert {page: zhrule.english_on(page) for page in names} == {page: [] for page in names}
    assert zhrule.english_on("<p>ledger-writer 写入 orders</p>", zhrule.Authored(names=frozenset({"ledger-writer"})))
    assert not zhrule.english_on(
        "<p>ledger-writer 写入 orders</p>", zhrule.Authored(names=frozenset({"ledger-writer", "orders"}))
    )


def test_it_shows_no_string_of_the_scripts_without_the_catalogue():
    from . import jsstrings

    assert jsstrings.shown_without_catalogue() == []
    assert jsstrings.prose_without_catalogue() == []
    unread = [s for s in jsstrings.shown_data_attributes() if not zhrule.SHOWN_ATTRIBUTE.match(s.text)]
    assert unread == []  # a data attribute a script shows is one the pages' test reads


def test_it_would_notice_a_script_showing_english_of_its_own():
    from . import jsstrings

    script = """
    function toast(text) { document.getElementById("toast").textContent = text; }
    document.addEventListener("htmx:sendError", function () { toast("The server cannot be reached."); });
    el.textContent = n === 1 ? "one step" : n + " steps";
    b.setCustomValidity(same ? form.dataset.why || "same profile" : "");
    button.setAttribute("title", "Copy this link");
    var later = "Copied to the clipboard";
    var fine = /^#drive=([A-Za-z0-9_-]{16,128})$/.exec(location.hash), sel = ".strip .cells, [data-step]";
    ok.textContent = interpolate(gettext("live · step %(n)s"), { n: n }, true) + " ✓";
    who.textContent = (who.dataset.template || "{name}").replace("{name}", t.dataset.who);
    """
    assert [s.text for s in jsstrings.shown_without_catalogue(script)] == [
        "The server cannot be reached.",
        "one step",
        " steps",
        "same profile",
        "Copy this link",
    ]
    assert [s.text for s in jsstrings.prose_without_catalogue(script)] == [
        "The server cannot be reached.",
        "one step",
        "same profile",
        "Copy this link",
        "Copied to the clipboard",
    ]
    assert [s.text for s in jsstrings.shown_data_attributes(script)] == ["data-why", "data-template", "data-who"]
    assert jsstrings.messages(script) == {("live · step %(n)s",)}


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_it_keeps_every_chinese_translation_within_the_rule(domain):
    """Every translation, shown on a page this walk reaches or not (the inspector's watch page needs a cluster),
    says in Chinese what is not a name: the placeholders aside, and free play's own names (its topic orders)."""
    from .test_i18n import MESSAGES, _po

    free_play = _free_play()
    english = {}
    for ident, (strs, _fuzzy) in _po(MESSAGES / f"{domain}.po").items():
        for text in strs:
            if words := zhrule.english_on(f"<p>{PLACEHOLDER.sub('', text)}</p>", free_play):
                english[ident[0]] = words
    assert english == {}


def _inspector_findings() -> dict:
    """Findings as the inspector's detectors make them (a stalled LSO with other producers' records held and a
    coordinator's abort to come, frequent re-inits, a hanging transaction, a shared transactional id), grouped."""
    from playground.inspector import detectors

    now = 1_800_000_000_000
    stall = {
        "topic": "orders",
        "partition": 0,
        "last_stable_offset": 3,
        "high_watermark": 9,
        "entries": [{"kind": "data", "offset": o, "producer_id": 7 if o < 5 else 8} for o in range(3, 9)],
        "open_transactions": [
            {
                "holds_lso": True,
                "age_ms": 90_000,
                "producer_id": 7,
                "producer_epoch": 0,
                "transactional_id": None,
                "start_offset": 3,
                "last_write_age_ms": 80_000,
                "coordinator_state": "Ongoing",
                "transaction_timeout_ms": 120_000,
                "started_ms": now - 90_000,
            }
        ],
    }
    found = detectors.lso_stall_findings([stall], None, now)
    inits = [{"time_ms": now - 60_000 * (5 - i), "producer_id": 7, "producer_epoch": i, "offset": i} for i in range(5)]
    found += detectors.frequent_reinit_findings({"pay": inits}, 2)
    hanging = {
        "topic": "orders",
        "partition": 1,
        "producer_id": 9,
        "producer_epoch": 2,
        "coordinator_epoch": 0,
        "current_txn_start_offset": 4,
        "last_timestamp": now - 10**7,
        "duration_ms": 10**7,
        "verdict": "hanging",
        "reason": "",
        "reason_said": ["no_txid", {}],
        "coordinator": {},
        "command": "kafka-transactions.sh abort",
    }
    found += detectors.hanging_findings([hanging], lambda txid: True)
    fence = {"event": "fenced_by_init", "time_ms": now, "producer_epoch": 1, "partitions": [["orders", 2]], "offset": 6}
    init = {"time_ms": now, "producer_id": 7, "producer_epoch": 2, "offset": 7, "fence": fence}
    init["previous"] = {"producer_id": 7, "producer_epoch": 0, "last_activity_ms": now - 500, "last_event": "produce"}
    found += detectors.shared_id_findings({}, {"pay": [init]}, {}, None)
    assert {f.kind for f in found} == {"lso_stall", "frequent_reinit", "hanging_transaction", "shared_transactional_id"}
    return {"findings": [f.to_dict() for f in found], "hanging": [hanging]}


def test_it_says_the_inspectors_findings_in_chinese():
    """Issue 33: the inspector's findings (their summary, why, evidence, how sure) were English on a zh page."""
    from django.template.loader import render_to_string

    from playground.inspector import detectors
    from playground.inspector.sentences import SENTENCES
    from playground.web import inspectpage
    from playground.web.templatetags.inspecttags import said

    report = _inspector_findings()
    groups = [inspectpage.group_context(g) for g in detectors.group_findings(report["findings"])]
    stalls = [inspectpage.stall_context(f) for f in report["findings"] if f["kind"] == "lso_stall"]
    hanging = [{**h, "when": "00:00:00", "for": inspectpage.age(h["duration_ms"])} for h in report["hanging"]]
    names = zhrule.Authored(names=frozenset({"pay", "orders"}))
    with translation.override("zh-hans"):
        pages = {
            "findings": (render_to_string("playground/inspect/_findings.html", {"groups": groups}), names),
            "stalls": (render_to_string("playground/inspect/_stalls.html", {"stalls": stalls}), names),
            "hanging": (render_to_string("playground/inspect/_hanging.html", {"hanging": hanging}), names),
        }
        # every sentence the inspector may say, each value a number
        for key, text in SENTENCES.items():
            values = dict.fromkeys(re.findall(r"\{(\w+)\}", text), "1")
            pages[f"sentence {key}"] = (f"<p>{said([key, values])}</p>", zhrule.Authored())
    assert "生产者 ID" in pages["findings"][0] and "确定" in pages["findings"][0]
    _no_english(pages)
    with translation.override("en"):  # the English page says what the command line says
        english = render_to_string("playground/inspect/_findings.html", {"groups": groups})
    assert all(html.escape(g["summary"], quote=True) in english for g in groups)
