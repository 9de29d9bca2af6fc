"""The consumer groups panel: per group, its state and generation, its members and what each was assigned, per
partition the committed offset, the offsets a transaction sent and has not committed yet (TxnOffsetCommit before
its marker), the members' positions, the LSO, the end and the lag; and its last rebalances with their causes. What
`kafka-consumer-groups.sh --describe` prints, live and at any step of the time slider.

A real cluster's groups are what its AdminClient tells (DescribeGroups, OffsetFetch: `source: admin`): state,
assignor, members and their partitions, committed offsets; not the generation, the rebalances, offsets pending in a
transaction or the KIP-447 checks, and the panel says so. When it cannot describe them, the committed offsets only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GROUPS_SHOWN = 8  # groups on the page (the others are counted)
ROWS_SHOWN = 24  # partitions of one group
REBALANCES_SHOWN = 6  # the last ones, newest first
CHECKS_SHOWN = 4  # the last TxnOffsetCommits' KIP-447 checks, newest first


def groups(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    details = view.get("group_details")
    committed = view.get("groups") or {}
    if details is None:  # a real cluster: OffsetFetch's committed offsets, no coordinator state
        details = {gid: {"committed": {tp: o for tp, o in c.items() if o is not None}} for gid, c in committed.items()}
    consumers = view.get("consumers") or {}
    parts = view.get("partitions") or {}
    cards = [_card(gid, g, consumers, parts) for gid, g in sorted(details.items())[:GROUPS_SHOWN]]
    return {
        "cards": cards,
        "more": max(0, len(details) - GROUPS_SHOWN),
        "coordinator_seen": "group_details" in view,
        "admin": any(g.get("source") == "admin" for g in details.values()),
    }


def _card(gid: str, g: Mapping[str, Any], consumers: Mapping[str, Any], parts: Mapping[str, Any]) -> dict[str, Any]:
    mine = {name: c for name, c in consumers.items() if c.get("group_id") == gid}
    owner = {tp: m.get("name") or m["client_id"] for m in g.get("members") or () for tp in m.get("assignment") or ()}
    pending: dict[str, list[tuple[int, int]]] = {}
    for p in g.get("pending") or ():
        for tp, offset in p["offsets"].items():
            pending.setdefault(tp, []).append((p["producer_id"], offset))
    done = g.get("committed") or {}
    tps = sorted(
        {*done, *pending, *owner, *(tp for c in mine.values() for tp in c.get("positions") or {})},
        key=_tp_order,
    )
    rows = []
    for tp in tps[:ROWS_SHOWN]:
        part = parts.get(tp) or {}
        end = part.get("high_watermark")
        offset = done.get(tp)
        rows.append(
            {
                "tp": tp,
                "committed": offset,
                "pending": [{"producer_id": pid, "offset": o} for pid, o in pending.get(tp, ())],
                "owner": owner.get(tp),
                "positions": [
                    {"consumer": name, "position": c["positions"][tp]}
                    for name, c in sorted(mine.items())
                    if tp in (c.get("positions") or {})
                ],
                "lso": part.get("last_stable_offset"),
                "end": end,
                # kafka-consumer-groups.sh's LAG: the log end a consumer can fetch up to, minus the committed offset
                "lag": end - offset if end is not None and offset is not None else None,
            }
        )
    history = list(g.get("rebalances") or ())
    rebalances = []
    for i in range(len(history) - 1, max(-1, len(history) - 1 - REBALANCES_SHOWN), -1):
        r = history[i]
        # a static member taking its place again in a Stable group keeps the generation: no rebalance
        kept = i > 0 and history[i - 1]["generation"] == r["generation"]
        rebalances.append({**r, "no_rebalance": kept})
    return {
        "group": gid,
        "state": g.get("state"),
        "generation": g.get("generation"),
        "protocol": g.get("protocol"),
        "leader": g.get("leader"),
        "members": g.get("members"),
        "more_members": g.get("more_members", 0),
        "rows": rows,
        "more_rows": max(0, len(tps) - ROWS_SHOWN),
        "rebalances": rebalances,
        "txn_checks": list(reversed(g.get("txn_checks") or ()))[:CHECKS_SHOWN],
    }


def _tp_order(tp: str) -> tuple[str, int]:
    topic, _sep, n = tp.rpartition("-")
    return (topic, int(n)) if n.isdigit() else (tp, -1)
