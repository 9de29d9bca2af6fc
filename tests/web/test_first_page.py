"""What a session's first page carries (tools/bench/web.py measures its bytes): compressed for a browser that
accepts it, and nothing a viewer has not asked for yet."""

from __future__ import annotations

import gzip
import urllib.request
import zlib
from pathlib import Path

import pytest
from django.test import Client

from playground.deploy import minify

pytestmark = pytest.mark.django_db


def _session_page(c: Client, **headers: str):
    r = c.post("/new/", {"scenario": "zombie-fencing"})
    assert r.status_code == 302
    return c.get(r["Location"], **headers)


def test_it_sends_a_session_page_gzip_compressed_to_a_browser_that_accepts_it():
    c = Client()
    packed = _session_page(c, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert packed.status_code == 200 and packed["Content-Encoding"] == "gzip"
    html = gzip.decompress(packed.content)
    assert b'id="p-producers"' in html and len(packed.content) < len(html) / 3
    plain = _session_page(c)  # a client that does not say it accepts gzip gets the page as it is
    assert not plain.has_header("Content-Encoding") and b'id="p-producers"' in plain.content


@pytest.fixture(scope="module")
def daphne(tmp_path_factory):
    """`make run`'s server: Daphne in development mode, /static/ served by Django's handler."""
    from playground.deploy import procs

    work = tmp_path_factory.mktemp("first-page-daphne")
    env = procs.django_env(work / "db.sqlite3", "")
    procs.migrate(env)
    proc = procs.start_daphne(env, work)
    yield proc
    proc.stop()


def _get(url: str, accept_encoding: str) -> tuple[dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": accept_encoding})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return {k.lower(): v for k, v in answer.headers.items()}, answer.read()


def _as_a_browser_decodes(packed: bytes) -> bytes:
    """One gzip member, as browsers and curl decode it (gzip.decompress reads on into any further member)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    return d.decompress(packed) + d.flush()


STATIC = Path(__file__).resolve().parents[2] / "static"


def test_it_serves_every_stylesheet_and_script_gzip_compressed_and_whole_in_development_mode_too(daphne):
    """`make run` serves /static/ through Django's handler (production mode: WhiteNoise's .gz files): compressed too,
    and whole, also the files longer than one 64 KB block of a streamed answer (compressing the stream made a gzip
    member per block: browsers read the first, and the vendored editor broke off after 64 KB)."""
    files = sorted(p for p in STATIC.rglob("*") if p.suffix in (".css", ".js"))
    assert any(p.stat().st_size > 64 * 1024 for p in files)
    for path in files:
        name = path.relative_to(STATIC).as_posix()
        served = minify.minify(name, path.read_bytes())
        headers, packed = _get(f"{daphne.url}/static/{name}", "gzip, deflate, br")
        assert headers["content-encoding"] == "gzip" and _as_a_browser_decodes(packed) == served, name
        headers, plain = _get(f"{daphne.url}/static/{name}", "identity")
        assert "content-encoding" not in headers and plain == served, name
        assert headers["content-length"] == str(len(served)), name
    _headers, packed = _get(f"{daphne.url}/static/css/playground.css", "gzip")
    assert len(packed) < len((STATIC / "css" / "playground.css").read_bytes()) / 3


def test_it_serves_our_own_css_and_js_minified_in_development_mode_and_the_vendored_files_as_shipped(daphne):
    """static/ keeps the hand-written files; `make run` minifies ours as it serves them (deploy/minify.py), from the
    file as it is now, and leaves the vendored ones (htmx, its ws extension, CodeMirror) as their makers made them."""
    files = sorted(p for p in STATIC.rglob("*") if p.suffix in (".css", ".js"))
    ours = [p for p in files if "vendor" not in p.relative_to(STATIC).parts]
    assert {"playground.css", "pages.css", "playground.js", "rooms.js", "editor.js"} <= {p.name for p in ours}
    for path in files:
        name = path.relative_to(STATIC).as_posix()
        original = path.read_bytes()
        _headers, served = _get(f"{daphne.url}/static/{name}", "identity")
        if path in ours:
            # comments and indentation gone; what is left is the same code (minify.py: nothing renamed)
            assert len(served) < 0.9 * len(original) and b"\n  " not in served and b"/* " not in served, name
            comment = b"/*" if path.suffix == ".css" else b"// "
            assert original.startswith(comment) and not served.startswith(comment), name
        else:
            assert served == original, name


# What a session's first page and its CSS and JS weigh, uncompressed, as `make run` serves them: 135.4 KB today (en;
# zh 136.4 KB): the page 34.8 KB, playground.css 30.7 KB and playground.js 11.8 KB (minified as served), htmx 52.2 KB,
# its ws extension 5.1 KB, the catalogue 0.8 KB. 160 KB before our CSS and JS were minified, more rules moved to
# pages.css and the page said its buttons' URLs and its notes once; 178.6 KB before the other pages' rules first moved
# to pages.css. Issue 33's aim is 120 KB: htmx, its ws extension and the catalogue take 58.1 KB of it, which leaves
# 61.9 KB for the page, its stylesheet and its script (77.4 KB), so the aim is missed while the session page keeps
# htmx. This bound keeps the page from growing back; lower it as the page gets lighter.
FIRST_PAGE_MAX_BYTES = 138_000


def _first_page_bytes(c: Client, scenario: str) -> dict[str, int]:
    """A session page as its view renders it, and every stylesheet and script it links, as `make run` serves them
    (/static/ from the app's static files, ours minified, the catalogue from its view): bytes of each, uncompressed."""
    import re

    from django.contrib.staticfiles import finders

    r = c.post("/new/", {"scenario": scenario})
    assert r.status_code == 302
    page = c.get(r["Location"])
    assert page.status_code == 200 and b'id="p-producers"' in page.content
    sizes = {"page": len(page.content)}
    html = page.content.decode()
    linked = re.findall(r'<(?:script|link)\b[^>]*\b(?:src|href)="(/[^"]+)"', html)
    assert any(u.endswith(".css") for u in linked) and any(".js" in u for u in linked), linked
    for url in linked:
        path = url.split("?")[0]
        if path.startswith("/static/"):
            found = finders.find(path[len("/static/") :])
            assert found, url
            sizes[path] = len(minify.minify(path[len("/static/") :], Path(found).read_bytes()))
        else:
            answer = c.get(url)
            assert answer.status_code == 200, url
            sizes[path] = len(answer.content)
    return sizes


@pytest.mark.parametrize("lang", ["en", "zh-hans"])
def test_a_session_page_with_its_css_and_js_weighs_no_more_than_today(lang, settings):
    """The first page as a browser loads it: the session page's HTML, its stylesheet (the other pages' rules are in
    pages.css, which it does not link) and its scripts, htmx and its ws extension among them, ours as served."""
    c = Client()
    c.cookies[settings.LANGUAGE_COOKIE_NAME] = lang
    sizes = _first_page_bytes(c, "zombie-fencing")
    assert "/static/css/pages.css" not in sizes and [u for u in sizes if "htmx" in u], sizes
    assert sum(sizes.values()) <= FIRST_PAGE_MAX_BYTES, sizes


def test_the_other_pages_link_the_rules_the_session_page_leaves_out():
    c = Client()
    gallery = c.get("/").content.decode()
    assert "css/playground.css" in gallery and "css/pages.css" in gallery
    compare = c.get("/compare/?scenario=zombie-fencing&a=3.9-librdkafka&b=4-java").content.decode()
    assert "css/pages.css" in compare and "htmx" in compare


def _selectors(stylesheet: str) -> list[str]:
    """A stylesheet's selectors, one by one (comments, declarations and at-rules' preludes left out)."""
    import re

    text = re.sub(r"/\*.*?\*/", "", (STATIC / "css" / stylesheet).read_text(), flags=re.S)
    text = re.sub(r"@[^{;]*\{", "", re.sub(r"\{[^{}]*\}", "\n", text))  # rules, then the @media around them
    return [s.strip() for part in text.split("\n") for s in part.replace("}", "").split(",") if s.strip()]


def _classes(selector: str) -> set[str]:
    import re

    return set(re.findall(r"\.(-?[_a-zA-Z][\w-]*)", re.sub(r":not\([^)]*\)", "", selector)))


def _classes_styled(stylesheet: str) -> set[str]:
    return {c for s in _selectors(stylesheet) for c in _classes(s)}


def _classes_used(html: str) -> set[str]:
    import re

    return {c for attr in re.findall(r'class="([^"]*)"', html) for c in attr.split()}


def _elements(html: str) -> list[tuple[tuple[str, frozenset[str], str], ...]]:
    """Every element of a page as its ancestry, the root first: each (tag, classes, id)."""
    from html.parser import HTMLParser

    void = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
    out: list = []
    open_: list = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            node = (tag, frozenset((a.get("class") or "").split()), a.get("id") or "")
            out.append((*open_, node))
            if tag not in void:
                open_.append(node)

        def handle_startendtag(self, tag, attrs):
            self.handle_starttag(tag, attrs)
            if tag not in void:
                open_.pop()

        def handle_endtag(self, tag):
            while open_ and open_.pop()[0] != tag:
                pass

    Parser().feed(html)
    return out


def _may_match(selector: str, elements) -> bool:
    """Whether a selector may match one of the elements: each compound's tag, classes and id, right to left through
    the ancestry (a child combinator read as a descendant one, pseudo-classes and attributes as met: it errs towards
    a match)."""
    import re

    def compound(c: str):
        c = re.sub(r"::?[\w-]+(\([^)]*\))?|\[[^\]]*\]", "", c)
        tag = re.match(r"^[a-zA-Z][\w-]*", c)
        return (
            (tag.group(0).lower() if tag else ""),
            set(re.findall(r"\.([\w-]+)", c)),
            set(re.findall(r"#([\w-]+)", c)),
        )

    def fits(node, want) -> bool:
        tag, classes, ids = want
        return (not tag or node[0] == tag) and classes <= node[1] and ids <= {node[2]}

    parts = [compound(c) for c in re.split(r"\s*[>+~]\s*|\s+", selector.strip()) if c]
    for chain in elements:
        if not fits(chain[-1], parts[-1]):
            continue
        i = len(parts) - 2
        for node in reversed(chain[:-1]):
            if i >= 0 and fits(node, parts[i]):
                i -= 1
        if i < 0:
            return True
    return False


def test_it_keeps_the_rules_only_other_pages_match_in_pages_css_which_they_link():
    """The gallery's header and footer, the editor's cheatsheet, a shared scenario's page, the workshop's forms, the
    list pages' records, the inspector's and the tap's pages are styled by pages.css alone, which those pages link."""
    session_css, pages_css = _classes_styled("playground.css"), _classes_styled("pages.css")
    moved = {"foot", "cheat", "shared-card", "shared-steps", "room-forms", "room-card", "agenda-pick", "agenda-item"}
    moved |= {"ipart", "itxid", "tapgrid", "tapactor", "taptimeline", "records"}
    assert moved <= pages_css and not moved & session_css, (moved - pages_css, moved & session_css)
    c = Client()
    r = c.post("/new/", {"scenario": "zombie-fencing"})
    pages = {"/": {"foot"}, "/editor/": {"cheat"}, "/w/": {"room-card"}, "/w/new/": {"room-forms", "agenda-pick"}}
    pages[r["Location"] + "p/orders-0/"] = {"records"}
    for url, classes in pages.items():
        page = c.get(url)
        assert page.status_code == 200, url
        html = page.content.decode()
        assert "/static/css/pages.css" in html and classes <= _classes_used(html), url


@pytest.mark.parametrize("scenario", ["zombie-fencing", "db-incident-in-full", "ex-who-is-fenced", ""])
def test_a_session_page_names_no_class_that_only_pages_css_styles(scenario):
    """What a session page draws is styled by playground.css alone: its first page does not load pages.css. At the
    start and after some steps, no rule of pages.css may match an element of the page."""
    pages_css = _selectors("pages.css")
    c = Client()
    r = c.post("/new/", {"scenario": scenario})
    sid = r["Location"].split("/")[2]
    if not scenario:
        for mode in ("new", "plain"):
            assert c.post(f"/s/{sid}/add-producer/", {"mode": mode}).status_code == 204
    for _ in range(2):
        html = c.get(r["Location"]).content.decode()
        assert "/static/css/pages.css" not in html
        elements = _elements(html)
        assert not [s for s in pages_css if _may_match(s, elements)]
        for _ in range(8):
            c.post(f"/s/{sid}/step/")


def test_a_session_page_says_a_button_groups_url_and_actor_once_and_each_note_once():
    """A producer's or a consumer's buttons post to their group's URL with its actor (playground.js), the brokers'
    and "+ producer"'s to theirs: each URL is said once per group, not on every button; a note's text is said once
    (playground.js makes a cut one's tooltip), a button's title never repeats its label."""
    import html as entities
    import json
    import re

    c = Client()
    r = c.post("/new/", {"scenario": "zombie-fencing"})
    sid = r["Location"].split("/")[2]
    page = c.get(r["Location"]).content.decode()
    groups = re.findall(r"<div class=\"actions\"[^>]* data-post=\"([^\"]+)\" data-vals='([^']*)'>(.*?)</div>", page)
    assert len(groups) == 6  # A, B and feed; ru, in and rc
    for url, vals, buttons in groups:
        assert url == f"/s/{sid}/action/" and list(json.loads(entities.unescape(vals))) == ["actor"]
        assert re.findall(r'data-post="([^"]+)"', buttons) in ([], [f"/s/{sid}/produce/"])
        for own in re.findall(r"data-vals='([^']*)'", buttons):
            assert "actor" not in json.loads(entities.unescape(own))
    assert page.count(f"/s/{sid}/action/") == 6
    assert page.count(f"/s/{sid}/broker/") == 1 and page.count(f"/s/{sid}/add-producer/") == 1
    assert not re.findall(r'title="([^"]*)">\1</button>', page)
    notes = re.findall(r'<span class="ntext">(.*?)</span></li>', page)
    assert len(notes) == 8 and all(page.count(n) == 1 for n in notes)
    assert 'class="ntext" title=' not in page and 'class="args" title=' not in page
