"""The broker's side in requests: the coordinator's `__transaction_state` entries, the protocol timeline (pinned
fences, InitProducerId, EndTxn, rebalances above the last rows), and the clients connected to a session (the connect
panel). Contexts for templates/playground/panels/, as panels.py's are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from playground.engine.events import FENCE, pinned
from playground.session import external, limits
from playground.web import cut, diagrams
from playground.web.panelparts import LINE_CHARS, error_card, external_card, link

TXNS_SHOWN = 12  # transactional ids the coordinator panel draws (all the session's own, then applications')

TIMELINE_ROWS = 28

# answers to pinned RPCs (fences, InitProducerId, EndTxn, rebalances) older than the rows drawn, listed above them:
# the last fences, and the last of every other kind
PINNED_FENCES, PINNED_EACH = 6, 2

LISTED = 8  # a transaction's partitions and users, listed (the rest are counted)


def _timeout_of(t: Mapping[str, Any], timers: Mapping[str, Any]) -> dict[str, Any]:
    """An open transaction's timeout: past `times_out_ms` (its start + transaction.timeout.ms) the coordinator's
    abort scan, which runs every `scan_every_ms` on its broker's grid of ticks, aborts it at the first tick after
    (`aborted_at_ms`; unknown on a real cluster). So the clock's effect is predictable: +61 s on a 60 s timeout
    may leave it Ongoing until the next tick."""
    start, timeout = t.get("txn_start_time_ms"), t.get("timeout_ms")
    if t.get("state") != "Ongoing" or t.get("pending_state") or start is None or start < 0 or not timeout:
        return {}
    times_out = int(start) + int(timeout)
    every = timers.get("abort_scan_interval_ms")
    tick = (timers.get("next_abort_scan_ms") or {}).get(t.get("coordinator_broker"))
    aborted_at = None
    if every and tick is not None:
        # the scan's ticks are tick + k x every; Kafka aborts a transaction whose start + timeout < now
        k = max(0, -(-(times_out + 1 - int(tick)) // int(every)))
        aborted_at = int(tick) + k * int(every)
    return {"times_out_ms": times_out, "aborted_at_ms": aborted_at, "scan_every_s": (every or 0) // 1000}


TXN_ACTIVE = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


def coordinator(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    """Each transactional id's `__transaction_state` entry, at most TXNS_SHOWN of them: those of the session's own
    producers first, then those in a transaction, then the rest by name (the transactions' list page has them all)."""
    sm = diagrams.current_state_machine(view.get("transitions"))
    users: dict[str, list[dict[str, Any]]] = {}
    own: set[str] = set()
    for name, p in view.get("producers", {}).items():
        if p.get("transactional_id"):
            users.setdefault(p["transactional_id"], []).append(
                {"name": cut.name(name), "epoch": p.get("epoch"), "fenced": bool(p.get("fenced"))}
            )
            if p.get("external") is None:
                own.add(p["transactional_id"])
    txns = view.get("transactions", {})
    order = sorted(txns, key=lambda t: (t not in own, txns[t].get("state") not in TXN_ACTIVE, t))
    entries = []
    timers = live.backend.coordinator_timers() if hasattr(live.backend, "coordinator_timers") else {}
    for txid in order[: max(len(own), TXNS_SHOWN)]:
        t = txns[txid]
        current = t.get("state")
        partitions = list(t.get("partitions") or [])
        used_by = users.get(txid, [])
        entries.append(
            {
                "txid": cut.name(txid),
                "state": current,
                "pid": t.get("producer_id"),
                "epoch": t.get("epoch"),
                "partitions": [cut.name(tp) for tp in partitions[:LISTED]],
                "partitions_more": max(0, len(partitions) - LISTED),
                "timeout_ms": t.get("timeout_ms"),
                "coordinator_partition": t.get("coordinator_partition"),
                "coordinator_broker": t.get("coordinator_broker"),
                "txn_start_time_ms": t.get("txn_start_time_ms"),
                "pending": t.get("pending_state"),
                "users": used_by[:LISTED],
                "users_more": max(0, len(used_by) - LISTED),
                **_timeout_of(t, timers),
            }
        )
    # The diagram's geometry is static (cached in diagrams); the context only says whether there is one.
    stats = view.get("stats") or {}
    return {
        "entries": entries,
        "more": len(order) - len(entries),
        "more_href": link(live, "session-transactions") if len(order) > len(entries) else "",
        "sm": sm is not None,
        "table": view.get("transitions"),
        "stats": {
            k: stats[k]
            for k in (
                "transaction_state_records",
                "transaction_state_bytes",
                "init_producer_id_calls",
                "markers_written",
            )
            if k in stats
        },
    }


# A consumer's poll sends a Fetch (and a ListOffsets at the start) per partition, again and again: drawn, they push
# the transactional RPCs (the story) out of the diagram. Left out unless they carry an error.
CONSUMER_READS = frozenset({"Fetch", "ListOffsets"})


def rpc_event(e: Mapping[str, Any]) -> dict[str, Any]:
    """An RPC of the view's timeline with its names and words cut (a client's client.id or a transactional id in
    a request's detail can be 32,767 characters)."""
    return {
        **e,
        "src": cut.name(e.get("src")) if e.get("src") else e.get("src"),
        "dst": cut.name(e.get("dst")) if e.get("dst") else e.get("dst"),
        "rpc": cut.name(e.get("rpc")),
        "detail": cut.text(e.get("detail"), LINE_CHARS) if e.get("detail") else e.get("detail"),
        "error": cut.name(e.get("error")) if e.get("error") else e.get("error"),
    }


def timeline_events(view: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], int]:
    """The view's RPCs the timeline draws (consumers' routine reads left out), and how many reads were left out."""
    consumers = set(view.get("consumers", {}))
    events, reads = [], 0
    for e in view.get("timeline", []):
        if e.get("rpc") in CONSUMER_READS and not e.get("error") and consumers & {e.get("src"), e.get("dst")}:
            reads += e.get("direction") == "request"
            continue
        events.append(e)
    return events, reads


def pinned_events(view: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The RPCs that tell the session's story (events.pinned: fences, InitProducerId, EndTxn, rebalances), every one
    the view keeps, oldest first: those older than its timeline's last RPCs, then those among them."""
    return [*view.get("timeline_pinned", []), *(e for e in view.get("timeline", []) if pinned(e))]


def _pinned_listed(answers: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Of the pinned answers, those listed above the drawing, oldest first: the last PINNED_FENCES fences and the last
    PINNED_EACH of every other kind (however many EndTxn a session answers, its fence stays listed)."""
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for e in answers:
        by_kind.setdefault(pinned(e) or "", []).append(e)
    listed = [e for kind, kept in by_kind.items() for e in kept[-(PINNED_FENCES if kind == FENCE else PINNED_EACH) :]]
    return sorted(listed, key=lambda e: int(e.get("seq", 0)))


def timeline(
    live: Any, view: Mapping[str, Any], before: int | None = None, only_pinned: bool = False
) -> dict[str, Any]:
    """The protocol timeline's last TIMELINE_ROWS RPCs (of those before the RPC numbered `before`, for the
    timeline's own page, which links to the ones before them; of the pinned ones alone with `only_pinned`), and the
    answers to pinned RPCs that came before them (_pinned_listed), which however long the session stay in sight."""
    clients = [cut.name(n) for n in list(view.get("producers", {})) + list(view.get("consumers", {}))]
    events, reads = (pinned_events(view), 0) if only_pinned else timeline_events(view)
    end = (
        len(events)
        if before is None
        else next((i for i, e in enumerate(events) if e.get("seq", 0) >= before), len(events))
    )
    shown = events[max(0, end - TIMELINE_ROWS) : end]
    hidden = end - len(shown)
    first = shown[0].get("seq", 0) if shown else None
    earlier = [] if only_pinned else [e for e in pinned_events(view) if first is None or e.get("seq", 0) < first]
    answers = [e for e in earlier if e.get("direction") == "response"]
    listed = _pinned_listed(answers)
    # drawn as it is rendered (templatetags.timeline_svg): its words, and so its geometry, are the viewer's language's
    return {
        "rows": [rpc_event(e) for e in shown],
        "clients": clients,
        "hidden": hidden,
        "total": end,
        "earlier_href": link(live, "session-timeline", before=first, pinned=1 if only_pinned else None)
        if hidden
        else "",
        "reads_left_out": reads,
        "pinned": [rpc_event(e) for e in listed],
        "pinned_more": len(answers) - len(listed),
        "pinned_href": link(live, "session-timeline", pinned=1) if earlier else "",
        "only_pinned": only_pinned,
    }


# Requests a client sends just to stay in touch: a row of only these (answered ok) is not listed in the narrative.
QUIET_APIS = frozenset(
    {"Fetch", "Heartbeat", "Metadata", "ApiVersions", "FindCoordinator", "ListOffsets", "OffsetFetch"}
)


def quiet(entry: Mapping[str, Any]) -> bool:
    if external.EXT not in entry or entry.get("outcome", "ok") != "ok":
        return False
    return all(api in QUIET_APIS for _who, api, _n in entry[external.EXT].get("sum", []))


def client_rows(view: Mapping[str, Any], counts: bool = False) -> list[dict[str, Any]]:
    """Every application connected to the session's listener (ever), as the connect panel and the clients' page
    list them: producers, then consumers, then admin clients, in the order they came, names cut; with `counts`
    (the clients' page), what each sent, read and asked too (the panel leaves them out: they change with every
    request, and it would be drawn again each time)."""
    ext = view.get("external") or {}
    rows = []
    for kind, group in (("producer", view.get("producers", {})), ("consumer", view.get("consumers", {}))):
        for name, a in group.items():
            x = a.get("external")
            if x is None:
                continue
            row = {
                **(external_card(x) or {}),
                "name": cut.name(name),
                "kind": kind,
                "txid": cut.name(a["transactional_id"]) if a.get("transactional_id") else None,
                "pid": a.get("producer_id"),
                "epoch": a.get("epoch"),
                "group": cut.name(a["group_id"]) if a.get("group_id") else None,
                "state": cut.name(a.get("state")),
            }
            if counts:
                counters = a.get("counters") or {}
                row.update(
                    isolation=a.get("isolation_level"),
                    sent=counters.get("app_sent_ok"),
                    landed=counters.get("landed"),
                    committed=counters.get("read_committed_received"),
                    received=a.get("received_total"),
                    partitions=len(a.get("positions") or {}),
                    requests=x.get("requests"),
                    last_error=error_card(a.get("last_error")),
                )
            rows.append(row)
    for a in ext.get("admins", []):
        software = a.get("software") or ("", "")
        rows.append(
            {
                "name": cut.name(a["name"]),
                "kind": "admin",
                "client_id": cut.name(a.get("client_id")) if a.get("client_id") is not None else None,
                "library": cut.name(software[0]) if software and software[0] else None,
                "version": cut.name(software[1]) if software and software[1] else None,
                "connected": bool(a.get("connected")) and bool(ext.get("listening")),
                **({"requests": a.get("requests")} if counts else {}),
            }
        )
    return rows


def connect(live: Any, view: Mapping[str, Any]) -> dict[str, Any]:
    """Connect your own app: whether this session can serve one (a simulated session, on a server that allows it),
    its bootstrap address while it listens, snippets to point a client at it, and who is connected."""
    from django.conf import settings

    ext = view.get("external") or {}
    listen = getattr(live, "listen", None)
    addresses = [f"{h}:{p}" for h, p in listen["brokers"].values()] if listen else []
    bootstrap = ",".join(addresses)
    every = client_rows(view)
    clients = every[: limits.limit("page_actors")]
    topic = live.cluster.topics[0].name if live.cluster.topics else "orders"
    return {
        "available": bool(getattr(settings, "PLAYGROUND_LISTEN", False)) and live.backend_name == "sim",
        "listening": bool(ext.get("listening")),
        "bootstrap": bootstrap,
        "addresses": addresses,  # shown one host:port to a piece, never broken inside one
        "topic": topic,
        "clients": clients,
        "more": len(every) - len(clients),
        "more_href": link(live, "session-clients") if len(every) > len(clients) else "",
        "connected": sum(1 for c in every if c["connected"]),
        "moment": live.moment is not None,
    }
