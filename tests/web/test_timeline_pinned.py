"""The RPCs that tell a session's story stay findable however long it runs (issue 31): a fence, InitProducerId, EndTxn
and the group's rebalance are kept apart from the simulator's last 200 RPCs, listed above the timeline's drawing once
they are older than what it draws, and on a page of their own."""

from __future__ import annotations

from types import SimpleNamespace

from django.template.loader import render_to_string

from playground.engine.spec import ActorSpec, ClusterSpec, Step, TopicSpec
from playground.sim.driver import SimBackend
from playground.web import panels, protocolpanels


def _do(backend: SimBackend, label: str, **args) -> str:
    actor, _, action = label.partition(".")
    return backend.apply(Step(actor, action, args))


def _fenced_then_busy(transactions: int) -> SimBackend:
    """`zombie` is fenced by `payments` (one transactional id), then `ticker` commits `transactions` transactions."""
    actors = {
        name: ActorSpec(name, "producer", {"transactional.id": txid})
        for name, txid in (("zombie", "pay"), ("payments", "pay"), ("ticker", "tick"))
    }
    backend = SimBackend(ClusterSpec(brokers=1, topics=(TopicSpec("orders", 1),), config={}), actors)
    assert _do(backend, "zombie.init_transactions") == "ok"
    assert _do(backend, "zombie.begin_transaction") == "ok"
    assert _do(backend, "payments.init_transactions") == "ok"
    _do(backend, "zombie.produce", topic="orders", partition=0, value="late")
    assert _do(backend, "zombie.commit_transaction") != "ok"
    assert _do(backend, "ticker.init_transactions") == "ok"
    for i in range(transactions):
        for label, args in (
            ("ticker.begin_transaction", {}),
            ("ticker.produce", {"topic": "orders", "partition": 0, "value": f"t-{i}"}),
            ("ticker.commit_transaction", {}),
        ):
            assert _do(backend, label, **args) == "ok"
    return backend


def test_it_keeps_the_fence_and_the_inits_after_hundreds_of_later_transactions_pushed_them_out():
    view = _fenced_then_busy(300).view()  # 600 EndTxn exchanges later: more than any one ring holds
    fenced = ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED")
    assert not [e for e in view["timeline"] if e["error"] in fenced], "the fence is no longer among the last RPCs"
    assert len(view["timeline"]) == 200
    pinned = view["timeline_pinned"]
    assert pinned and all(e["seq"] < view["timeline"][0]["seq"] for e in pinned)
    fences = [e for e in pinned if e["error"] in fenced]
    assert fences and fences[0]["dst"] == "zombie", fences
    inits = {e["src"] for e in pinned if e["rpc"] == "InitProducerId" and e["direction"] == "request"}
    assert inits == {"zombie", "payments", "ticker"}
    assert not [e for e in pinned if e["rpc"] in ("Produce", "AddPartitionsToTxn") and not e["error"]]
    assert len(pinned) <= 6 * 64  # a bounded view: at most PINNED_KEPT of each kind


def test_the_panel_lists_the_pinned_answers_above_the_drawing_and_links_to_them_alone(settings):
    view = _fenced_then_busy(60).view()
    live = SimpleNamespace()  # a drawing of a backend's view alone: no session to link to
    p = panels.timeline(live, view)
    fence = [r for r in p["pinned"] if r["error"] in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED")]
    assert fence and all(r["direction"] == "response" for r in p["pinned"])
    html = render_to_string("playground/panels/timeline.html", {"p": p})
    assert "pinned-rpc err" in html and fence[0]["error"] in html
    # the pinned ones alone, page by page back to the fence (a page draws TIMELINE_ROWS of them)
    pages, before = [], None
    while not pages or pages[-1]["hidden"]:
        pages.append(panels.timeline(live, view, before=before, only_pinned=True))
        before = pages[-1]["rows"][0]["seq"]
    rows = [r for page in pages for r in page["rows"]]
    assert any(r["error"] == fence[0]["error"] and r["dst"] == "zombie" for r in rows)
    assert {r["rpc"] for r in rows if not r["error"]} == {"InitProducerId", "EndTxn"}
    assert all(len(page["rows"]) <= protocolpanels.TIMELINE_ROWS and page["pinned"] == [] for page in pages)


def test_a_short_session_pins_nothing_apart_from_what_it_draws():
    view = _fenced_then_busy(1).view()
    assert view["timeline_pinned"] == []
    assert panels.timeline(SimpleNamespace(), view)["pinned"] == []
