"""Geometry for the two SVG drawings: the coordinator's state machine and the protocol timeline.

Pure functions from data to coordinates; the templates only draw what these return. The state machine's edges
come from the simulator's own transition table (`playground.sim.coordinator.TRANSITIONS`, target -> allowed
previous states); only the placement of the known states is chosen here, and any state not placed is laid out
on a spare row, so a new state in the table still shows up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

# Where Kafka's states sit: the happy path left to right on top, the abort path below.
STATE_POS = {
    "Empty": (62, 30),
    "Ongoing": (200, 30),
    "PrepareCommit": (338, 30),
    "PrepareEpochFence": (131, 98),
    "CompleteCommit": (338, 112),
    "PrepareAbort": (200, 160),
    "CompleteAbort": (338, 205),
    "Dead": (62, 205),
}
NODE_W, NODE_H = 112, 24
SM_W, SM_H = 400, 222


_SM_CACHE: dict[tuple, dict[str, Any]] = {}


def current_state_machine(table: Mapping[str, Iterable[str]] | None = None) -> dict[str, Any] | None:
    """The diagram of a transition table (the backend's, from view()["transitions"], else the simulator's
    TRANSITIONS), computed once per table: it is static."""
    table = {str(k): tuple(str(p) for p in v) for k, v in table.items()} if table else transitions()
    if not table:
        return None
    key = tuple(sorted((k, tuple(v)) for k, v in table.items()))
    if key not in _SM_CACHE:
        _SM_CACHE[key] = state_machine(table)
    return _SM_CACHE[key]


def transitions() -> dict[str, tuple[str, ...]]:
    try:
        from playground.sim.coordinator import TRANSITIONS
    except Exception:  # noqa: BLE001 - the simulator not there yet: no diagram rather than a wrong one
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for target, previous in dict(TRANSITIONS).items():
        out[_name(target)] = tuple(_name(p) for p in previous)
    return out


def _name(state: Any) -> str:
    # The table may use an Enum or plain strings.
    return str(getattr(state, "value", None) if isinstance(getattr(state, "value", None), str) else getattr(state, "name", state))


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
    back: bool = False  # drawn against the main flow (to a state placed left of or above its source)


def state_machine(table: Mapping[str, Iterable[str]]) -> dict[str, Any]:
    """Nodes and edges of the state diagram (static for one table; the template lights the current state)."""
    names: list[str] = []
    for target, previous in table.items():
        for n in (target, *previous):
            if n not in names:
                names.append(n)
    nodes: dict[str, Node] = {}
    spare = 0
    for n in names:
        if n in STATE_POS:
            x, y = STATE_POS[n]
        else:
            x, y = 60 + 130 * (spare % 3), 235 + 50 * (spare // 3)
            spare += 1
        nodes[n] = Node(n, x, y)
    edges: list[Edge] = []
    for target, previous in table.items():
        for src in previous:
            a, b = nodes[src], nodes[target]
            if src == target:
                # A self loop above the node.
                x, y = a.x + a.w / 2 - 22, a.y - a.h / 2
                path = f"M{x:.1f},{y:.1f} c -4,-14 20,-14 16,0"
                edges.append(Edge(src, target, path, loop=True))
                continue
            x1, y1, x2, y2 = _clip(a, b)
            back = b.y < a.y - 5 or (abs(b.y - a.y) <= 5 and b.x < a.x)
            others = [n for n in nodes.values() if n.name not in (src, target)]
            path = _route(x1, y1, x2, y2, others)
            edges.append(Edge(src, target, path, back=back))
    height = max([SM_H] + [n.y + n.h / 2 + 10 for n in nodes.values()])
    return {"nodes": list(nodes.values()), "edges": edges, "width": SM_W, "height": height}


def _route(x1: float, y1: float, x2: float, y2: float, obstacles: list[Node]) -> str:
    """A quadratic curve from (x1, y1) to (x2, y2), bent just enough to pass no other state's box.

    The bend goes to the right of the direction of travel first, so A->B and B->A never overlap."""
    length = math.hypot(x2 - x1, y2 - y1) or 1
    nx, ny = -(y2 - y1) / length, (x2 - x1) / length
    mx, my = (x1 + x2) / 2, (y1 + y2) / 2
    gentle = min(14.0, length / 8)
    best = None
    for bend in (gentle, 32, -32, 52, -52, 75, -75, 100, -100):
        cx, cy = mx + nx * bend, my + ny * bend
        if not any(_hits(x1, y1, cx, cy, x2, y2, n) for n in obstacles):
            best = (cx, cy)
            break
    cx, cy = best or (mx + nx * gentle, my + ny * gentle)
    return f"M{x1:.1f},{y1:.1f} Q{cx:.1f},{cy:.1f} {x2:.1f},{y2:.1f}"


def _hits(x1: float, y1: float, cx: float, cy: float, x2: float, y2: float, n: Node, pad: float = 4) -> bool:
    for i in range(1, 24):
        t = i / 24
        x = (1 - t) ** 2 * x1 + 2 * (1 - t) * t * cx + t * t * x2
        y = (1 - t) ** 2 * y1 + 2 * (1 - t) * t * cy + t * t * y2
        if abs(x - n.x) <= n.w / 2 + pad and abs(y - n.y) <= n.h / 2 + pad:
            return True
    return False


def _clip(a: Node, b: Node) -> tuple[float, float, float, float]:
    """The segment between two node boxes' borders (centre to centre, clipped)."""

    def border(n: Node, dx: float, dy: float) -> tuple[float, float]:
        if dx == 0 and dy == 0:
            return n.x, n.y
        sx = (n.w / 2) / abs(dx) if dx else math.inf
        sy = (n.h / 2) / abs(dy) if dy else math.inf
        s = min(sx, sy)
        return n.x + dx * s, n.y + dy * s

    dx, dy = b.x - a.x, b.y - a.y
    x1, y1 = border(a, dx, dy)
    x2, y2 = border(b, -dx, -dy)
    # Leave room for the arrow head.
    length = math.hypot(x2 - x1, y2 - y1) or 1
    x2 -= (x2 - x1) / length * 2
    y2 -= (y2 - y1) / length * 2
    return x1, y1, x2, y2


# ------------------------------------------------------------------------------------------------- timeline
LANE_W = 150
ROW_H = 22
TOP = 44
MIN_WIDTH = 960
LEFT = 62


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


def lane_label(lane: str) -> list[str]:
    """"leader orders-0(b1)" -> ["leader orders-0", "(b1)"]: two short lines instead of one long one."""
    head, paren, tail = lane.rpartition("(")
    if paren and head and tail.endswith(")"):
        return [head.strip(), f"({tail}"]
    return [lane]


def timeline(events: list[Mapping[str, Any]], clients: list[str], rows: int = 40) -> dict[str, Any]:
    shown = list(events)[-rows:]
    lanes = lane_order(shown, clients)
    labels = {lane: lane_label(lane) for lane in lanes}
    widths = {lane: max(84, 6.4 * max(len(line) for line in labels[lane]) + 14) for lane in lanes}
    # Spread the lanes over the panel's usual width: labels of arrows between neighbours need the room.
    total = sum(widths.values())
    if lanes and total < MIN_WIDTH - LEFT:
        widths = {lane: w * (MIN_WIDTH - LEFT) / total for lane, w in widths.items()}
    xs: dict[str, float] = {}
    x = LEFT
    for lane in lanes:
        xs[lane] = x + widths[lane] / 2
        x += widths[lane]
    arrows = []
    for i, e in enumerate(shown):
        y = TOP + 14 + i * ROW_H
        x1, x2 = xs.get(e.get("src"), LEFT), xs.get(e.get("dst"), LEFT)
        if x1 == x2:
            x2 = x1 + 30
        label = str(e.get("rpc", ""))
        if e.get("detail"):
            label += f" ({e['detail']})"
        if e.get("error"):
            label += f" → {e['error']}"
        arrows.append(
            {
                "x1": x1,
                "x2": x2,
                "y": y,
                "mid": (x1 + x2) / 2,
                "label": label,
                "error": bool(e.get("error")),
                "response": e.get("direction") == "response",
                "t": e.get("time_ms", 0),
                "title": f"#{e.get('seq', '')} t={e.get('time_ms', 0)} ms {e.get('src')} → {e.get('dst')}: {label}",
            }
        )
    height = TOP + 24 + len(shown) * ROW_H
    width = max(x + 10, max((a["mid"] + 4 * len(a["label"]) for a in arrows), default=0))
    return {
        "lanes": [{"name": lane, "lines": labels[lane], "x": xs[lane]} for lane in lanes],
        "arrows": arrows,
        "width": width,
        "height": height,
        "bottom": height - 6,
        "hidden": max(0, len(events) - len(shown)),
        "total": len(events),
    }
