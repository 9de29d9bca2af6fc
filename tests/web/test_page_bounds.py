"""Every page and every frame bounded, whatever the clients wrote (issue 30): a session flooded by applications
connected to its listener (tests/web/flood.py: 2,000 batches of 100 KB records over 80 partitions, 500 client ids,
10 KB transactional ids, consumers and groups by the hundred) opens as a page of less than a megabyte at any step,
its websocket's snapshot and updates come in frames of less than a megabyte, log.json comes a page at a time, and
every "earlier" and "more" of the page leads to what it leaves out."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from playground import session
from playground.asgi import application
from playground.web import broadcast, cut, logpanels, panels, protocolpanels

from . import flood
from .conftest import hold

pytestmark = [pytest.mark.django_db(transaction=True)]

MB = 1_000_000
TOO_LARGE = "too large to show live"


@pytest.fixture
def flooded(client):
    row = hold(client, session.create(None, backend="sim"))
    return row.id, flood.build(row.id, flood.Flood())


def _page(client, url: str) -> str:
    r = client.get(url)
    assert r.status_code == 200, (url, r.status_code, r.content[:300])
    assert len(r.content) < MB, (url, len(r.content))
    return r.content.decode()


def _href(html: str, pattern: str) -> str:
    """The first link whose address matches `pattern` (a regular expression)."""
    m = re.search(r'href="(' + pattern + r')"', html)
    assert m is not None, f"no link matching {pattern}"
    return unescape(m.group(1))


def _nothing_raw(html: str) -> None:
    """What the clients wrote shows cut and escaped: no 10 KB id, no 100 KB value, no markup, no bidi override."""
    assert "T" * 200 not in html and "O" * 200 not in html and "0123456789" * 30 not in html
    assert "<script>alert" not in html and "\u202e" not in html


async def _frames_until_version(ws: WebsocketCommunicator) -> list[str]:
    frames = []
    while True:
        frames.append(await ws.receive_from(timeout=60))
        if 'id="state-version"' in frames[-1]:
            return frames


def _version(frame: str) -> int:
    m = re.search(r'id="state-version" data-version="(\d+)"', frame)
    assert m is not None
    return int(m.group(1))


def _snapshot_and_update(sid: str, lang: str, change) -> tuple[list[str], list[str]]:
    async def go() -> tuple[list[str], list[str]]:
        ws = WebsocketCommunicator(
            application,
            f"/ws/s/{sid}/?lang={lang}",
            headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")],
        )
        connected, _ = await ws.connect(timeout=30)
        assert connected
        try:
            snapshot = await _frames_until_version(ws)
            await database_sync_to_async(change)()
            return snapshot, await _frames_until_version(ws)
        finally:
            await ws.disconnect()

    return async_to_sync(go)()


def test_it_keeps_every_page_frame_and_log_page_of_a_flooded_session_under_a_megabyte(client, flooded):
    sid, fl = flooded
    middle = fl.steps[len(fl.steps) // 2]
    for url in (f"/s/{sid}/", f"/s/{sid}/?at={middle}"):
        page = _page(client, url)
        _nothing_raw(page)
        assert page.count('class="strip"') == logpanels.PAGE_STRIPS  # 80 partitions: 64 strips, the rest listed
        assert page.count('class="pcard') <= 12 + 24  # the session's own producers and `page_actors` others
    assert "offsets before" not in page  # nothing was deleted by retention

    # the websocket: a snapshot, then an update after a row more of requests, in both languages
    for lang in ("en", "zh-hans"):
        snapshot, update = _snapshot_and_update(sid, lang, lambda lang=lang: flood.more(sid, fl, f"late-{lang}"))
        for frame in snapshot + update:
            assert len(frame.encode()) < MB and TOO_LARGE not in frame
            _nothing_raw(frame)
        assert 'id="p-logs"' in "".join(snapshot) and 'id="strip-flood-0"' in "".join(update)
        assert _version(update[-1]) == _version(snapshot[-1]) + 1  # the update of the row more

    # log.json, page by page: every command once, in order
    url, seen, pages = f"/s/{sid}/log.json", 0, 0
    length = session.load(sid).length
    while url:
        r = client.get(url)
        assert r.status_code == 200 and len(r.content) < MB, (url, len(r.content))
        body = r.json()
        assert body["from"] == seen and body["length"] == length
        seen, url, pages = body["to"], body["next"], pages + 1
    assert seen == length and pages > 1

    # the applications, from the first page of log.json on
    url, actors = f"/s/{sid}/log.json?limit=1", 0
    while url:
        r = client.get(url)
        assert len(r.content) < MB
        actors += len(r.json()["external"])
        url = r.json()["external_next"]
    assert actors == r.json()["external_total"] > fl.plain_clients


def test_it_leads_from_every_more_and_earlier_of_the_page_to_what_it_leaves_out(client):
    row = hold(client, session.create(None, backend="sim"))
    sid = row.id
    fl = flood.build(sid, flood.Flood(partitions=70, batches=1400, value_bytes=20_000, plain_clients=60, groups=40))
    page = _page(client, f"/s/{sid}/")

    # flood-1's strip: its newest cells, and "earlier" to the offsets before them, back to offset 0
    strip = page[page.index('id="strip-flood-1"') :]
    earlier = _href(strip, r"/s/[^\"]+/p/flood-1/\?[^\"]*")
    listed = _page(client, earlier)
    while (prev := re.search(r'href="([^"]+)" rel="prev"', listed)) is not None:
        listed = _page(client, unescape(prev.group(1)))
    first = re.search(r'<tr class="f-\w+" id="o0">.*?</tr>', listed, re.S)
    assert first is not None and "held 1" in first.group(0)  # the open transaction's record, at offset 0
    assert 'class="cur cur-LSO"' in listed  # ... which holds the LSO

    # a big value, cut on the partition's page, in full on its own link; a binary one as it was sent
    text = _page(client, f"/s/{sid}/p/flood-0/?from=0")
    full = client.get(_href(text, r"/s/[^\"]+/p/flood-0/\d+/value/"))
    assert full.status_code == 200 and len(full.content) >= fl.value_bytes - 10
    assert full.content.decode().startswith("000000 <script>alert('x')</script>")
    binary = client.get(f"/s/{sid}/p/flood-0/{_plain_offset(client, sid)}/value/")
    assert binary["Content-Type"] == "application/octet-stream" and binary.content.startswith(b"\xc3\x28 not utf-8")

    # the 64 strips drawn, and every one of the 80 partitions listed
    partitions = _page(client, _href(page, r"/s/[^\"]+/p/"))
    assert partitions.count("/p/flood-") == fl.partitions

    # every application, page by page, from the producers' "more"
    url, names = _href(page, r"/s/[^\"]+/clients/"), 0
    while True:
        listed = _page(client, url)
        names += listed.count("<tr class=")
        nxt = re.search(r'href="([^"]+)">next page', listed)
        if nxt is None:
            break
        url = unescape(nxt.group(1))
    assert names == len(protocolpanels.client_rows(broadcast.view_of(session.load(sid)))) > 100

    # every transactional id from the coordinator's "more", the timeline's earlier RPCs, the narrative's log
    txns = _page(client, _href(page, r"/s/[^\"]+/transactions/"))
    assert txns.count("<tr><td><code>") == fl.open_txns + 1
    timeline = _page(client, _href(page, r"/s/[^\"]+/timeline/\?before=\d+"))
    assert "<svg" in timeline and "earlier RPCs" in timeline and "newest RPCs" in timeline
    log = client.get(_href(page, r"/s/[^\"]+/log\.json\?from=\d+&amp;limit=\d+"))
    assert log.status_code == 200 and log.json()["commands"]

    # at an earlier step, the links stay at that step
    middle = fl.steps[len(fl.steps) // 2]
    at_page = _page(client, f"/s/{sid}/?at={middle}")
    assert f"at={middle}" in _href(at_page, r"/s/[^\"]+/p/flood-1/\?[^\"]*")


def _plain_offset(client, sid: str) -> int:
    """An offset of flood-0 written by a plain client (a key and value that are not UTF-8)."""
    live = session.load(sid)
    from playground.session import logwindow

    for e in logwindow.read(live, "flood-0", 0, 10_000)["entries"]:
        if e.get("producer_id") == -1:
            return int(e["offset"])
    raise AssertionError("no plain record in flood-0")


# ------------------------------------------------------------------------------------ what a page shows of a value
def test_it_shows_bytes_escaped_invisible_characters_visible_and_long_names_cut_but_distinct(settings):
    assert cut.text(b"\xc3\x28 ok", 20) == "\\xc3( ok"
    assert cut.text("a\u202eb\nc", 20) == "a\\u202eb\\nc"
    assert cut.text("x" * 30, 10) == "x" * 9 + "…" and cut.text(b"\x00" * 30, 10).endswith("…")
    assert len(cut.text(b"\xff" * 1000, 10)) == 10 and cut.text(None, 5) == ""
    one, two = cut.name("T" * 10_000 + "1"), cut.name("T" * 10_000 + "2")
    assert one != two and len(one) == len(two) == 40 and one.startswith("T" * 30)
    assert cut.name("orders-consumer") == "orders-consumer"
    assert cut.strings({"value": "'" + "v" * 500 + "'", "where": [["orders-0@1", "aborted"]] * 3}, 20, 2) == {
        "value": "'" + "v" * 18 + "…",
        "where": [["orders-0@1", "aborted"]] * 2,
    }


def test_it_says_on_the_strip_which_offsets_retention_deleted(client):
    row = hold(client, session.create(None, backend="sim"))
    live = session.load(row.id)
    view = broadcast.view_of(live)
    part = view["partitions"]["orders-0"]
    part.update(log_start_offset=1200, window_start=1200, high_watermark=1260, last_stable_offset=1260)
    part["log_end_offset"] = 1260
    part["log"] = [{"offset": o, "value": f"v{o}", "producer_id": -1, "fate": "plain"} for o in range(1200, 1260)]
    (strip,) = [s for s in panels.logs(live, view)["strips"] if s["tp"] == "orders-0"]
    assert strip["log_start"] == 1200 and strip["hidden"] == 60 - logpanels.LOG_WINDOW
    html = broadcast.render("logs", panels.logs(live, view), "en", row.id)
    assert "offsets before 1200 deleted by retention" in html
    assert "earlier: offsets 1200–1211 not shown" in html


@pytest.mark.parametrize(
    ("query", "message"),
    [("from=-1", "from: "), ("to=x", "to: "), ("before=1.5", "before: "), ("from=" + "9" * 30, "from: ")],
)
def test_it_answers_a_bad_window_with_a_400_naming_it(client, query, message):
    row = hold(client, session.create(None, backend="sim"))
    r = client.get(f"/s/{row.id}/p/orders-0/?{query}")
    assert r.status_code == 400 and r.content.decode().startswith(message)
    assert client.get(f"/s/{row.id}/p/nope-0/").status_code == 404
    assert client.get(f"/s/{row.id}/p/orders-0/0/value/").status_code == 404  # no record there yet
    assert client.get(f"/s/{row.id}/log.json?limit=0").status_code == 400
    assert json.loads(client.get(f"/s/{row.id}/log.json?limit=1").content)["next"] is None


def test_it_draws_the_slider_of_a_log_of_failing_requests_from_long_named_clients_in_a_bounded_track():
    from types import SimpleNamespace

    names = [["c" * 30_000 + str(i), "Produce", 3] for i in range(12)]
    commands = [{"ext": {"sum": names}, "outcome": "OUT_OF_ORDER_SEQUENCE_NUMBER"} for _ in range(20_000)]
    marks = [(i, "fenced" if i % 2 else "error") for i in range(20_000)]
    live = SimpleNamespace(step_count=20_000, marks=marks, commands=commands, step_of=lambda seq: seq + 1)
    html = broadcast.render("scrubber", panels.scrubber(live, {}), "en", "sid")
    assert len(html.encode()) < 150_000 and "c" * 100 not in html
    assert 333 <= html.count('class="mark m-error"') <= 334 and 333 <= html.count('class="mark m-fenced"') <= 334


def test_it_writes_a_flooded_session_as_a_scenario_file_the_editor_can_load(client):
    from playground.scenario import check_text
    from playground.scenario.model import MAX_SOURCE_BYTES

    row = hold(client, session.create(None, backend="sim"))
    flood.build(row.id, flood.Flood(partitions=20, batches=200, open_txns=0, plain_clients=5, consumers=1, groups=1))
    r = client.get(f"/s/{row.id}/scenario.yaml")
    text = r.content.decode()
    assert r.status_code == 200 and len(r.content) < MAX_SOURCE_BYTES  # 200 values of 100 KB made 16 MB
    scenario, problems = check_text(text)
    assert problems == [] and scenario is not None
    assert "The session went on; the rest is in its log." in text and "T" * 100 not in text
    assert _page(client, f"/editor/?session={row.id}")


def test_it_draws_the_heaviest_view_clients_can_make_within_a_frame_and_a_page():
    """The view at every bound at once: 200 partitions of a 240-character topic, values of 4-byte characters and
    binary keys, 300 consumers (12 of the session's own) at every offset, 50 producers and transactional ids of
    10,000 characters in transactions over every partition. Each panel fits a websocket frame, and all of them a
    page, with room for the rest of it."""
    from types import SimpleNamespace

    from playground.engine.spec import TopicSpec
    from playground.session import limits

    tps = [f"{'t' * 240}-{p}" for p in range(200)]
    entry = {"value": "😀" * 1000, "key": b"\xff" * 300, "epoch": 1, "transactional": True}
    parts = {
        tp: {
            "log": [
                {**entry, "offset": o, "producer_id": o % 50, "sequence": o, "fate": "open"} for o in range(1000, 1048)
            ],
            "high_watermark": 1040,
            "last_stable_offset": 1001,
            "log_end_offset": 1048,
            "log_start_offset": 10,
            "leader": 1,
        }
        for tp in tps
    }
    ext = {"client_id": "x" * 5000, "software": {"library": "l" * 5000, "version": "v" * 5000}, "connected": True}
    consumers = {
        (f"own{c}" if c < 12 else "x" * 5000 + str(c)): {
            "isolation_level": "read_committed" if c % 2 else "read_uncommitted",
            "group_id": "g" * 5000 + str(c),
            "topics": ["t" * 240],
            "positions": dict.fromkeys(tps, 1000 + c % 48),
            "received": {tp: [{"offset": o, "value": None} for o in range(1000, 1000 + c % 48)] for tp in tps[:5]},
            "received_total": 10**6,
            **({"external": ext} if c >= 12 else {}),
        }
        for c in range(300)
    }
    producers = {
        "p" * 5000 + str(i): {"transactional_id": "T" * 10_000 + str(i), "producer_id": i, "epoch": 1, "external": ext}
        for i in range(50)
    }
    txn = {"state": "Ongoing", "producer_id": 1, "epoch": 1, "partitions": tps, "timeout_ms": 60000}
    view = {
        "partitions": parts,
        "consumers": consumers,
        "producers": producers,
        "transactions": {"T" * 10_000 + str(i): txn for i in range(50)},
        "timeline": [],
    }
    live = SimpleNamespace(
        session_id="sid",
        moment=None,
        listen=None,
        backend=SimpleNamespace(),
        backend_name="sim",
        derived={},
        commands=[],
        length=0,
        cluster=SimpleNamespace(topics=(TopicSpec("orders", 3),)),
        transactional_ids=list,
        next_value=lambda name: "v",
        scenario=None,  # free play: no exercise question holds a client's state back
    )
    frame = limits.limit("frame_bytes")
    for lang in ("en", "zh-hans"):
        sizes = {
            name: len(broadcast.render(name, panels.BUILDERS[name](live, view), lang, "sid").encode())
            for name in ("logs", "consumers", "producers", "truth", "connect", "coordinator")
        }
        assert max(sizes.values()) < frame * 0.7, sizes
        assert sum(sizes.values()) < 650_000, sizes  # the slider's track, the narrative, the timeline: < 200 KB more
