"""Geometry for the two SVG drawings: the coordinator's state machine and the protocol timeline.

Pure functions from data to coordinates; the templates only draw what these return. The state machine's edges
come from the simulator's own transition table (`scenario.engines.coordinator_transitions(kafka)`, target ->
allowed previous states, one table per Kafka release); only the placement of the known states is chosen here, and
any state not placed is laid out on a spare row, so a new state in the table still shows up.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from playground.web import phrases

# Where Kafka's states sit (box centres, in the diagram's own units, drawn about 1:1 in the coordinator panel):
# the happy path left to right on top (Empty -> Ongoing -> PrepareCommit), the fencing/abort path down the
# middle (Ongoing -> PrepareAbort, PrepareEpochFence feeding it from the left), each Complete state under its
# Prepare state, Dead in the bottom left corner. Only positions are chosen here: the edges come from the table.
STATE_POS = {
    "Empty": (34, 22),
    "Ongoing": (160, 22),
    "PrepareCommit": (260, 22),
    "PrepareEpochFence": (84, 74),
    "PrepareAbort": (160, 124),
    "CompleteAbort": (160, 176),
    "CompleteCommit": (260, 176),
    "Dead": (34, 176),
}
NODE_W, NODE_H = 112, 22  # NODE_W: for a state whose label is unknown (unplaced states get their own row)
SM_W, SM_H = 312, 210
# Box width from the label: the stylesheet draws node labels at 10px (about 6 units a character) + padding.
CHAR_W, NODE_PAD = 6.0, 12
LOOP = 9  # height of a self loop's arc above its box


_SM_CACHE: dict[tuple, dict[str, Any]] = {}


def current_state_machine(
    table: Mapping[str, Iterable[str]] | None = None, kafka: str = "3.9"
) -> dict[str, Any] | None:
    """The diagram of a transition table (the backend's, from view()["transitions"], else the simulator's table
    for the Kafka release `kafka`, "3.9" or "4"), computed once per table: it is static."""
    table = {str(k): tuple(str(p) for p in v) for k, v in table.items()} if table else transitions(kafka)
    if not table:
        return None
    key = tuple(sorted((k, tuple(sorted(v))) for k, v in table.items()))
    if key not in _SM_CACHE:
        _SM_CACHE[key] = state_machine(table)
    return _SM_CACHE[key]


def transitions(kafka: str = "3.9") -> dict[str, tuple[str, ...]]:
    """The simulator's transition table for a Kafka release (a profile's `kafka`): the one its coordinator obeys."""
    try:
        from playground.scenario.engines import coordinator_transitions

        table = coordinator_transitions(kafka)
    except Exception:
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for target, previous in dict(table).items():
        out[_name(target)] = tuple(_name(p) for p in previous)
    return out


def _name(state: Any) -> str:
    # The table may use an Enum or plain strings.
    return str(
        getattr(state, "value", None)
        if isinstance(getattr(state, "value", None), str)
        else getattr(state, "name", state)
    )


@dataclass(frozen=True)
class Node:
    name: str
    x: float
    y: float
    w: float = NODE_W
    h: float = NODE_H


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    path: str
    loop: bool = False
    back: bool = False  # drawn against the main flow (to a state placed above its source, or left of it)


def _order(names: Iterable[str]) -> list[str]:
    """Placed states in the layout's order (top to bottom, left to right), then the others as they came."""
    names = list(dict.fromkeys(names))
    placed = sorted((n for n in names if n in STATE_POS), key=lambda n: (STATE_POS[n][1], STATE_POS[n][0]))
    return placed + [n for n in names if n not in STATE_POS]


def state_machine(table: Mapping[str, Iterable[str]]) -> dict[str, Any]:
    """Nodes and edges of the state diagram (static for one table; the template lights the current state).

    Every edge is a gentle curve between two box borders, bent only as much as it takes to pass clear of every
    other box and to cross as few of the edges already drawn as it can; a self loop is a small arc on its box's
    top right corner."""
    names = _order(n for target, previous in table.items() for n in (target, *previous))
    nodes: dict[str, Node] = {}
    spare = 0
    bottom = max(y for _, y in STATE_POS.values())
    for n in names:
        w = round(CHAR_W * len(n) + NODE_PAD)
        if n in STATE_POS:
            x, y = STATE_POS[n]
        else:
            x, y = 62 + 124 * (spare % 2), bottom + 46 * (1 + spare // 2)
            spare += 1
        nodes[n] = Node(n, x, y, w=w)
    pairs = [(src, dst) for dst, previous in table.items() for src in previous]
    # Short edges along the flow first (they get the straight lines), the long ways back last.
    pairs.sort(
        key=lambda e: (
            _is_back(nodes[e[0]], nodes[e[1]]),
            _dist(nodes[e[0]], nodes[e[1]]),
            names.index(e[0]),
            names.index(e[1]),
        )
    )
    drawn: list[list[tuple[float, float]]] = []
    edges: list[Edge] = []
    for src, dst in pairs:
        a, b = nodes[src], nodes[dst]
        if src == dst:
            loop_x, loop_y = a.x + a.w / 2 - 16, a.y - a.h / 2 + 0.5
            path = f"M{loop_x:.1f},{loop_y:.1f} c 0,-{LOOP} 12,-{LOOP} 11,-1.5"
            edges.append(Edge(src, dst, path, loop=True))
            continue
        others = [n for n in nodes.values() if n.name not in (src, dst)]
        path, points = _route(a, b, others, drawn)
        drawn.append(points)
        edges.append(Edge(src, dst, path, back=_is_back(a, b)))
    height = max([SM_H] + [n.y + n.h / 2 + 8 for n in nodes.values()])
    return {"nodes": list(nodes.values()), "edges": edges, "width": SM_W, "height": height}


def _is_back(a: Node, b: Node) -> bool:
    return b.y < a.y - 5 or (abs(b.y - a.y) <= 5 and b.x < a.x)


def _dist(a: Node, b: Node) -> float:
    return math.hypot(b.x - a.x, b.y - a.y)


BENDS = (0, 10, -10, 20, -20, 32, -32, 46, -46, 62, -62, 80, -80, 100, -100, 125, -125)


def _route(
    a: Node, b: Node, obstacles: list[Node], drawn: list[list[tuple[float, float]]]
) -> tuple[str, list[tuple[float, float]]]:
    """The curve from box a to box b: a quadratic Bezier whose control point sits `bend` off the middle of the
    centre line; the best bend passes no other box, crosses the fewest edges drawn so far, and is the smallest."""
    length = _dist(a, b) or 1
    nx, ny = -(b.y - a.y) / length, (b.x - a.x) / length
    mx, my = (a.x + b.x) / 2, (a.y + b.y) / 2
    best: tuple[tuple[int, int, int, bool], str, list[tuple[float, float]]] | None = None
    for bend in BENDS:
        cx, cy = mx + nx * bend, my + ny * bend
        x1, y1 = _border(a, cx, cy)
        x2, y2 = _border(b, cx, cy)
        # Keep the control point where it bends the clipped curve as much as it would the centre one.
        ccx, ccy = (x1 + x2) / 2 + nx * bend, (y1 + y2) / 2 + ny * bend
        # Room for the arrow head.
        d = math.hypot(x2 - ccx, y2 - ccy) or 1
        x2, y2 = x2 - (x2 - ccx) / d * 2, y2 - (y2 - ccy) / d * 2
        pts = _sample(x1, y1, ccx, ccy, x2, y2)
        hits = sum(1 for n in obstacles if _hits(pts, n))
        if any(not (2 <= x <= SM_W - 2 and 2 <= y <= SM_H - 2) for x, y in pts):
            hits += 1
        crossings = sum(_crossings(pts, other) + _near(pts, other) for other in drawn)
        score = (hits, crossings, abs(bend), bend < 0)
        if best is None or score < best[0]:
            best = (score, f"M{x1:.1f},{y1:.1f} Q{ccx:.1f},{ccy:.1f} {x2:.1f},{y2:.1f}", pts)
    assert best is not None  # BENDS is not empty
    return best[1], best[2]


def _sample(
    x1: float, y1: float, cx: float, cy: float, x2: float, y2: float, steps: int = 24
) -> list[tuple[float, float]]:
    out = []
    for i in range(steps + 1):
        t = i / steps
        out.append(
            (
                (1 - t) ** 2 * x1 + 2 * (1 - t) * t * cx + t * t * x2,
                (1 - t) ** 2 * y1 + 2 * (1 - t) * t * cy + t * t * y2,
            )
        )
    return out


def _hits(pts: list[tuple[float, float]], n: Node, pad: float = 5) -> bool:
    return any(abs(x - n.x) <= n.w / 2 + pad and abs(y - n.y) <= n.h / 2 + pad for x, y in pts)


def _box(pts: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    xs, ys = [x for x, _ in pts], [y for _, y in pts]
    return min(xs), min(ys), max(xs), max(ys)


def _apart(a: tuple[float, float, float, float], b: tuple[float, float, float, float], gap: float = 0) -> bool:
    return a[2] + gap < b[0] or b[2] + gap < a[0] or a[3] + gap < b[1] or b[3] + gap < a[1]


def _crossings(p: list[tuple[float, float]], q: list[tuple[float, float]]) -> int:
    """How many times two sampled curves cross (shared end points at a box do not count). Curves (and segments)
    whose bounding boxes do not meet are not compared point by point: the layout tries 17 bends for each of some
    20 edges against every edge drawn before, which took a second of a server's CPU per table without it."""
    inner_p, inner_q = p[2 : len(p) - 2], q[2 : len(q) - 2]
    if len(inner_p) < 2 or len(inner_q) < 2 or _apart(_box(inner_p), _box(inner_q)):
        return 0
    segments_q = [(q[j], q[j + 1], _box([q[j], q[j + 1]])) for j in range(2, len(q) - 3)]
    count = 0
    for i in range(2, len(p) - 3):
        box_p = _box([p[i], p[i + 1]])
        for q1, q2, box_q in segments_q:
            if not _apart(box_p, box_q) and _segments_cross(p[i], p[i + 1], q1, q2):
                count += 1
    return count


def _near(p: list[tuple[float, float]], q: list[tuple[float, float]], gap: float = 5) -> int:
    """1 when two curves run alongside each other (away from their ends) closer than `gap`: as bad as a crossing."""
    inner_p, inner = p[2:-2], q[2:-2]
    if not inner_p or not inner or _apart(_box(inner_p), _box(inner), gap):
        return 0
    return int(any(math.hypot(x - u, y - v) < gap for x, y in inner_p for u, v in inner))


def _segments_cross(p1, p2, q1, q2) -> bool:
    def side(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    d1, d2 = side(q1, q2, p1), side(q1, q2, p2)
    d3, d4 = side(p1, p2, q1), side(p1, p2, q2)
    return (d1 > 0) != (d2 > 0) and (d3 > 0) != (d4 > 0)


def _border(n: Node, tx: float, ty: float) -> tuple[float, float]:
    """Where the ray from the centre of n's pill-shaped box towards (tx, ty) leaves it."""
    dx, dy = tx - n.x, ty - n.y
    d = math.hypot(dx, dy)
    if d == 0:
        return n.x, n.y
    dx, dy = dx / d, dy / d
    r = n.h / 2
    lo, hi = 0.0, n.w / 2 + n.h
    for _ in range(30):
        mid = (lo + hi) / 2
        x, y = abs(dx * mid), abs(dy * mid)
        inside = y <= r and (x <= n.w / 2 - r or math.hypot(x - (n.w / 2 - r), y) <= r)
        lo, hi = (mid, hi) if inside else (lo, mid)
    return n.x + dx * lo, n.y + dy * lo


# ------------------------------------------------------------------------------------------------- timeline
# The timeline is laid out in its own units for the panel's usual width and drawn at width 100% (viewBox), so it
# fits the panel it lands in. Text scales with it, so the template bounds the scale: below MIN_SCALE the SVG keeps
# its minimum width and the panel scrolls (many lanes), above MAX_SCALE it stops growing (very wide windows).
FIT_WIDTH = 960  # the timeline panel's inner width in 1024..1440 px windows
MIN_SCALE, MAX_SCALE = 0.9, 1.15
MIN_LANE = 64  # the least room per lane (more for a longer header): one-letter clients still get a readable arrow
ROW_H = 22
TOP = 44
LEFT = 62  # the time column
RIGHT = 6
FOOT = 30  # lane names again under the lifelines, when the diagram is too wide to see its headers and end at once
# Text widths, in units per character, measured in Chromium with DejaVu Sans (the widest of the stack) and rounded
# up: arrow labels at 10.5px (5.5, errors bold 6.9), lane headers at 11px bold (6.6).
LABEL_CHAR, ERROR_CHAR, LANE_CHAR = 6.0, 7.0, 6.8
LABEL_MAX = 600  # a longer label is shortened (hovering shows it whole): read at a glance, even on a long arrow
LANE_MAX = 22  # characters per line of a lane header (cells: a Chinese character takes two)


def lane_order(events: list[Mapping[str, Any]], clients: list[str]) -> list[str]:
    """Clients in the session's order, then coordinators, then partition leaders, then anything else."""
    seen: list[str] = []
    for e in events:
        for end in (e.get("src"), e.get("dst")):
            if end and end not in seen:
                seen.append(end)

    def rank(lane: str) -> tuple[int, int, str]:
        if lane in clients:
            return (0, clients.index(lane), lane)
        if lane.startswith("coordinator"):
            return (1, 0, lane)
        if lane.startswith("group"):
            return (2, 0, lane)
        if lane.startswith("leader"):
            return (3, 0, lane)
        return (4, 0, lane)

    return sorted(seen, key=rank)


def cells(text: str) -> int:
    """A text's width in Latin characters: a wide character (Chinese) is drawn about twice as wide."""
    if text.isascii():
        return len(text)
    return len(text) + sum(unicodedata.east_asian_width(c) in "WF" for c in text)


def lane_label(lane: str) -> list[str]:
    """ "leader orders-0(b1)" -> ["leader orders-0", "(b1)"]: two short lines instead of one long one."""
    head, paren, tail = lane.rpartition("(")
    if paren and head and tail.endswith(")"):
        lines = [head.strip(), f"({tail}"]
    else:
        lines = [lane]
    return [shorten(line, LANE_MAX) for line in lines]


def shorten(text: str, n: int) -> str:
    """At most n cells, the cut marked with an ellipsis."""
    if cells(text) <= n:
        return text
    room, end = n - 1, 0
    for ch in text:  # as many characters as fit in n - 1 cells, the ellipsis in the last one
        room -= 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        if room < 0:
            break
        end += 1
    return text[:end] + "…"


def lane_xs(lanes: list[str], labels: Mapping[str, list[str]]) -> tuple[dict[str, float], float]:
    """Each lane's x and the drawing's width: lanes as wide as their headers (at least MIN_LANE), spread over
    FIT_WIDTH when they need less, so arrows between neighbours have room for their labels."""
    widths = {lane: max(MIN_LANE, LANE_CHAR * max(cells(line) for line in labels[lane]) + 14) for lane in lanes}
    total = sum(widths.values())
    room = FIT_WIDTH - LEFT - RIGHT
    if lanes and total < room:
        widths = {lane: w * room / total for lane, w in widths.items()}
    xs: dict[str, float] = {}
    x = float(LEFT)
    for lane in lanes:
        xs[lane] = x + widths[lane] / 2
        x += widths[lane]
    return xs, max(FIT_WIDTH, math.ceil(x + RIGHT))


def rpc_label(e: Mapping[str, Any], budget: float = math.inf) -> str:
    """ "Rpc (detail) → ERROR" in at most `budget` units. Too long, the detail gives way first (its start is kept:
    version, partition, producer), then the RPC's name; the error, the reason the row is red, stays whole."""
    rpc, detail, error = str(e.get("rpc", "")), str(e.get("detail") or ""), str(e.get("error") or "")
    tail = f" → {error}" if error else ""

    def join(d: str) -> str:
        return rpc + (f" ({d})" if d else "") + tail

    if budget == math.inf:
        return join(detail)
    n = int(budget // (ERROR_CHAR if error else LABEL_CHAR))

    room = n - cells(join("")) - 3  # characters left for the detail in "rpc (detail) → ERROR"
    for label in (join(detail), join(shorten(detail, room)) if room >= 6 else "", join("…") if detail else ""):
        if label and cells(label) <= n:
            return label
    if error and n >= cells(tail) + 4:
        return shorten(rpc, n - cells(tail)) + tail
    return shorten(join(detail), n)


def place(label: str, error: bool, x1: float, x2: float, width: float) -> float:
    """The label's centre: over the middle of its arrow, moved in as far as it takes to stay inside the drawing
    (a label wider than its arrow, on the first or last lane, would otherwise run off the edge)."""
    half = cells(label) * (ERROR_CHAR if error else LABEL_CHAR) / 2
    lo, hi = LEFT + half, width - RIGHT - half
    return min(max((x1 + x2) / 2, lo), max(lo, hi))


def timeline(events: list[Mapping[str, Any]], clients: list[str], rows: int = 40) -> dict[str, Any]:
    """The drawing's lanes and arrows, their words in the viewer's language (phrases)."""
    shown: list[Mapping[str, Any]] = [
        {**e, "detail": phrases.detail(str(e.get("detail") or ""))} for e in list(events)[-rows:]
    ]
    lanes = lane_order(shown, clients)
    said = {lane: phrases.lane(lane) for lane in lanes}
    labels = {lane: lane_label(said[lane]) for lane in lanes}
    xs, width = lane_xs(lanes, labels)
    arrows = []
    for i, e in enumerate(shown):
        y = TOP + 14 + i * ROW_H
        x1, x2 = xs.get(e.get("src") or "", LEFT), xs.get(e.get("dst") or "", LEFT)
        if x1 == x2:
            x2 = x1 + 30
        error = bool(e.get("error"))
        full = rpc_label(e)
        label = rpc_label(e, min(width - LEFT - RIGHT, LABEL_MAX))
        arrows.append(
            {
                "x1": x1,
                "x2": x2,
                "y": y,
                "mid": place(label, error, x1, x2, width),
                "label": label,
                "short": label != full,
                "error": error,
                "response": e.get("direction") == "response",
                "t": e.get("time_ms", 0),
                "title": f"#{e.get('seq', '')} t={e.get('time_ms', 0)} ms {said.get(e.get('src') or '', e.get('src'))}"
                f" → {said.get(e.get('dst') or '', e.get('dst'))}: {full}",
            }
        )
    # Wider than the usual panel holds even at MIN_SCALE: it scrolls sideways, and the scrollbar is at the bottom.
    foot = width > FIT_WIDTH / MIN_SCALE
    height = TOP + 24 + len(shown) * ROW_H + (FOOT if foot else 0)
    return {
        "lanes": [{"name": said[lane], "lines": labels[lane], "x": xs[lane]} for lane in lanes],
        "arrows": arrows,
        "width": width,
        "height": height,
        "bottom": TOP + 18 + len(shown) * ROW_H,
        "foot": foot,
        "min_width": round(width * MIN_SCALE),
        "max_width": round(width * MAX_SCALE),
        "hidden": max(0, len(events) - len(shown)),
        "total": len(events),
    }
