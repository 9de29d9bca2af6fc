"""The protocol timeline's SVG: every lane inside the drawing, long labels shortened (whole in the hover tip), and
many lanes scrolling rather than shrinking.

The SVG is read back as XML and checked in its own units (the viewBox): the page draws it at width 100%, so what
lies inside the viewBox lies inside the panel. Text extents are estimated with the layout's own character widths
(rounded up from Chromium's DejaVu Sans, the widest font of the stylesheet's stack)."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from playground.scenario import load_scenario
from playground.scenario.engines import make_backend
from playground.web import diagrams, panels
from playground.web.templatetags.playground import timeline_svg

ROOT = Path(__file__).resolve().parents[2]
PANEL_PX = 978  # the timeline panel's inner width in a 1024x768 window (984 at 1440x900)
LONG = (
    "v0, Failed to add partition order-created-0 to transaction: Broker: Producer attempted an operation with an old "
    "epoch. Either there is a newer producer with the same transactionalId, or the producer's transaction has been "
    "expired by the broker"
)


def _svg(rows: list[dict], clients: list[str]) -> ET.Element:
    """The panel's drawing of these RPCs, as a page renders it."""
    return ET.fromstring(str(timeline_svg({"rows": rows, "clients": clients})))


def _box(svg: ET.Element) -> tuple[float, float]:
    _, _, w, h = (float(v) for v in svg.get("viewBox").split())
    return w, h


def _scale_bounds(svg: ET.Element) -> tuple[float, float]:
    style = dict(part.split(":") for part in svg.get("style").split(";") if part)
    return float(style["min-width"].removesuffix("px")), float(style["max-width"].removesuffix("px"))


def _lanes(svg: ET.Element) -> list[ET.Element]:
    return [t for t in svg.iter("text") if t.get("class") == "lane"]


def _labels(svg: ET.Element) -> list[tuple[ET.Element, ET.Element]]:
    """(arrow group, its label text) pairs."""
    return [(g, g.find("text")) for g in svg.iter("g") if "msg" in g.get("class", "").split()]


def _extent(g: ET.Element, text: ET.Element) -> tuple[float, float]:
    per = diagrams.ERROR_CHAR if "err" in g.get("class").split() else diagrams.LABEL_CHAR
    half = len(text.text) * per / 2
    return float(text.get("x")) - half, float(text.get("x")) + half


def _assert_inside(svg: ET.Element) -> None:
    width, height = _box(svg)
    assert svg.get("width") == "100%" and svg.get("height") is None  # fitted to the panel, height from the viewBox
    for line in svg.iter("line"):
        for x in (line.get("x1"), line.get("x2")):
            assert 0 <= float(x) <= width, ET.tostring(line)
        for y in (line.get("y1"), line.get("y2")):
            assert 0 <= float(y) <= height, ET.tostring(line)
    for lane in _lanes(svg):
        half = diagrams.LANE_CHAR * max(len(s.text) for s in lane.iter("tspan")) / 2
        assert half <= float(lane.get("x")) <= width - half, lane.get("data-tip")
    for g, text in _labels(svg):
        left, right = _extent(g, text)
        assert left >= diagrams.LEFT and right <= width - diagrams.RIGHT, text.text


def _played(name: str) -> dict:
    """The timeline panel's context at the end of a library scenario, on the simulator."""
    scenario = load_scenario(ROOT / "scenarios" / name)
    backend = make_backend("sim", scenario.cluster, scenario.actors, seed=scenario.seed)
    try:
        for step in scenario.steps:
            backend.apply(step)
        return panels.timeline(None, backend.view())
    finally:
        backend.close()


@pytest.mark.parametrize("name", ["02-zombie-fencing.yaml", "03-shared-id-incident.yaml"])
def test_it_draws_every_lane_of_a_scenario_inside_the_panel(name):
    played = _played(name)
    p, svg = diagrams.timeline(played["rows"], played["clients"]), _svg(played["rows"], played["clients"])
    _assert_inside(svg)
    width, _ = _box(svg)
    # The zombie-fencing scenario's ten lanes once made a 1042 px wide SVG in a 984 px panel: now the drawing
    # scales into the panel at either window size, text no smaller than MIN_SCALE, so nothing scrolls.
    low, high = _scale_bounds(svg)
    assert low <= PANEL_PX <= high
    assert PANEL_PX / width >= diagrams.MIN_SCALE
    # A lane for each end of every arrow drawn (read back from the arrows' hover text), none left out.
    ends = {end for a in p["arrows"] for end in re.match(r"#\S* t=\S+ ms (.+?) → (.+?): ", a["title"]).groups()}
    assert {lane.get("data-tip") for lane in _lanes(svg)} == ends


def _row(
    seq: int, src: str, dst: str, rpc: str, detail: str = "", error: str | None = None, direction: str = "request"
) -> dict:
    return {
        "seq": seq,
        "time_ms": 500 + seq,
        "rpc": rpc,
        "src": src,
        "dst": dst,
        "direction": direction,
        "detail": detail,
        "error": error,
    }


def test_it_shortens_a_long_error_label_and_keeps_it_whole_in_the_tip():
    # A real cluster's error, answered to the leftmost lane: its label, centred on the arrow, ran off the left edge.
    rows = [
        _row(1, "pay", "coordinator(b2)", "AddPartitionsToTxn", "v0, order-created-0, producer 0 epoch 0"),
        _row(2, "coordinator(b2)", "pay", "AddPartitionsToTxn", LONG, "INVALID_PRODUCER_EPOCH", "response"),
        _row(
            3, "monitor", "leader order-audit-0(b1)", "Produce", "order-audit-0 1 record(s), producer 0 epoch 1 seq 1"
        ),
    ]
    svg = _svg(rows, ["pay", "monitor"])
    _assert_inside(svg)
    (g1, short1), (g2, short2), (_g3, _short3) = _labels(svg)
    assert short1.text == "AddPartitionsToTxn (v0, order-created-0, producer 0 epoch 0)"  # short labels as they were
    assert "short" not in g1.get("class")
    # The detail gives way; the RPC's name and the error stay, and hovering shows everything.
    assert short2.text.startswith("AddPartitionsToTxn (v0, Failed to add partition")
    assert short2.text.endswith("…) → INVALID_PRODUCER_EPOCH")
    assert len(short2.text) * diagrams.ERROR_CHAR <= diagrams.LABEL_MAX
    assert "short" in g2.get("class").split()
    assert (
        g2.get("data-tip") == f"#2 t=502 ms coordinator(b2) → pay: AddPartitionsToTxn ({LONG}) → INVALID_PRODUCER_EPOCH"
    )


def test_it_shortens_a_label_even_without_an_error_or_a_detail_to_give():
    assert (
        diagrams.rpc_label({"rpc": "Produce", "detail": "x" * 300}, 120) == "Produce (" + "x" * 9 + "…)"
    )  # 20 characters
    assert diagrams.rpc_label({"rpc": "R" * 50, "error": "NOT_COORDINATOR"}, 210) == "R" * 11 + "… → NOT_COORDINATOR"
    assert diagrams.rpc_label({"rpc": "EndTxn", "detail": "v1, commit", "error": "X"}) == "EndTxn (v1, commit) → X"


@settings(max_examples=300)
@given(st.text(alphabet="ab 日本語タ…\u0301", max_size=40), st.integers(min_value=1, max_value=30))
def test_it_shortens_to_the_longest_start_that_fits_beside_its_ellipsis(text, n):
    short = diagrams.shorten(text, n)
    if diagrams.cells(text) <= n:
        assert short == text
    else:
        start = short.removesuffix("…")
        assert text.startswith(start) and diagrams.cells(start) <= n - 1
        assert len(start) == len(text) or diagrams.cells(text[: len(start) + 1]) > n - 1


def test_it_keeps_the_spacing_and_scrolls_with_many_lanes():
    producers = [chr(ord("A") + i) for i in range(12)]
    consumers = [f"c{i}" for i in range(12)]
    servers = ["coordinator(b2)", "group coordinator(b1)"] + [f"leader orders-{i}(b{i % 3 + 1})" for i in range(6)]
    rows = [
        _row(i, c, servers[i % len(servers)], "InitProducerId", "v4, order-pay timeout 60000 ms")
        for i, c in enumerate(producers + consumers)
    ]
    rows.append(_row(99, "leader orders-5(b3)", "A", "AddOffsetsToTxn", LONG, "INVALID_PRODUCER_EPOCH", "response"))
    p = diagrams.timeline(rows, producers + consumers)
    svg = _svg(rows, producers + consumers)
    _assert_inside(svg)
    xs = [lane["x"] for lane in p["lanes"]]
    assert len(xs) == 32
    assert min(b - a for a, b in itertools.pairwise(xs)) >= diagrams.MIN_LANE
    # Never drawn smaller than MIN_SCALE: wider than the panel, so the panel scrolls (.seq-wrap) instead.
    low, _ = _scale_bounds(svg)
    assert low == round(_box(svg)[0] * diagrams.MIN_SCALE) > PANEL_PX
    # Scrolled sideways, the lanes' names are under the lifelines too (next to the scrollbar).
    assert p["foot"] and len(_lanes(svg)) == 2 * len(xs)


def test_it_shortens_a_long_lane_name_with_the_whole_name_on_hover():
    lane = "leader a-topic-with-a-very-long-name-for-audit-0(b1)"
    svg = _svg([_row(1, "A", lane, "Produce")], ["A"])
    _assert_inside(svg)
    header = next(t for t in _lanes(svg) if t.get("data-tip") == lane)
    lines = [s.text for s in header.iter("tspan")]
    assert lines[0].endswith("…") and len(lines[0]) == diagrams.LANE_MAX and lines[1] == "(b1)"


def test_it_fits_a_small_timeline_to_the_panel_width_as_before():
    # Few lanes are spread over the panel's width, so arrows between neighbours have room for their labels.
    p = diagrams.timeline(
        [
            _row(1, "A", "coordinator(b2)", "InitProducerId"),
            _row(2, "coordinator(b2)", "A", "InitProducerId", direction="response"),
        ],
        ["A"],
    )
    assert p["width"] == diagrams.FIT_WIDTH and not p["foot"]
    a, coordinator = (lane["x"] for lane in p["lanes"])
    assert coordinator - a > 400  # side by side (as wide as their headers) they would be 76 apart
