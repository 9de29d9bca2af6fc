"""What every panel of a session's page draws with: links at the moment shown, the producers' colours, who owns an
offset, the order actors are shown in, errors as the page words them, what an exercise's open question holds back.
Presentation only, as panels.py says."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.urls import get_script_prefix, reverse
from django.utils.translation import gettext as _

from playground.session import limits
from playground.web import cut

PALETTE = 8  # producer colours (CSS classes pc0..pc7)

LINE_CHARS = 160  # a line of words made of names (the narrative's, the slider's marks, an error's detail)


def link(live: Any, route: str, *args: Any, **query: Any) -> str:
    """The address of one of the session's list pages (`route`), at the step shown (?at=k on an earlier one)."""
    sid = getattr(live, "session_id", None)
    if sid is None:
        return ""  # a drawing of a backend's view alone (tests, tools): no session to link to
    q = {k: v for k, v in query.items() if v is not None}
    if getattr(live, "moment", None) is not None:
        q["at"] = live.moment
    return _reverse(route, (sid, *args), get_script_prefix()) + ("?" + urlencode(q) if q else "")


@functools.lru_cache(maxsize=4096)
def _reverse(route: str, args: tuple[Any, ...], _prefix: str) -> str:
    # once per session, page and script prefix, not a dozen times an update (broadcast.urls says why)
    return reverse(route, args=args)


def short(value: Any, n: int = 9) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= n else text[: n - 1] + "…"


def tp_key(tp: str) -> tuple[str, int]:
    topic, _, n = tp.rpartition("-")
    return (topic, int(n)) if n.isdigit() else (tp, 0)


def producer_colours(view: Mapping[str, Any]) -> dict[int, int]:
    """A colour per producer id, in order of first appearance (producers first, then the logs)."""
    colours: dict[int, int] = {}
    pids = [p.get("producer_id") for p in view.get("producers", {}).values()]
    for tp in sorted(view.get("partitions", {}), key=tp_key):
        pids += [e.get("producer_id") for e in view["partitions"][tp].get("log", [])]
    for pid in pids:
        if pid is not None and pid != -1 and pid not in colours:
            colours[pid] = len(colours) % PALETTE
    return colours


def owners(view: Mapping[str, Any]) -> dict[tuple[int, int], str]:
    """(producer id, epoch) -> producer name, from the producers' cards (who wrote a record, as far as we know)."""
    out: dict[tuple[int, int], str] = {}
    for name, p in view.get("producers", {}).items():
        if p.get("producer_id") is not None:
            out.setdefault((p["producer_id"], p.get("epoch")), name)
    return out


def shown_first(actors: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The actors a page draws, at most `page_actors`: the session's own first, then the applications connected to
    its listener in the order they came (the list pages have them all)."""
    own = [n for n, a in actors.items() if a.get("external") is None]
    theirs = [n for n, a in actors.items() if a.get("external") is not None]
    return (own + theirs)[: max(len(own), limits.limit("page_actors"))]


def error_card(err: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not err:
        return None
    return {k: cut.text(err.get(k), LINE_CHARS) if err.get(k) is not None else None for k in ("op", "error", "detail")}


def asked_about(live: Any) -> Any:
    """The client an exercise's open question asks about (exercise.asked): what it would tell is held back."""
    from playground.scenario.exercise import asked

    return asked(live)


def unfenced(entry: Mapping[str, Any], asked: Any) -> Mapping[str, Any]:
    """A command's entry (log.json, the time slider) while a question about `asked.actor`'s step is open: the
    producers it left fenced leave that client out, since its being fenced tells what its step will do (librdkafka
    turned a refusal into the fatal _FENCED, kafka-clients into an abortable error), and `held_back` says to answer
    first. Its outcome stays: an earlier question's step gave it, and that question has been answered."""
    fenced = entry.get("fenced") or ()
    if asked is None or asked.actor not in fenced:
        return entry
    out = {k: v for k, v in entry.items() if k != "fenced"}
    if rest := [n for n in fenced if n != asked.actor]:
        out["fenced"] = rest
    return out | {"held_back": _("answer question %(n)s to see") % {"n": asked.number}}


def held_back(card: dict[str, Any], number: int) -> dict[str, Any]:
    """A producer's card while a question about its step is open: an error state would tell what the step does
    (a fenced producer's commit), so the badge says to answer first and the last error waits."""
    if card["tone"] not in ("bad", "warn") and not card["fenced"]:
        return card
    return card | {"state": "", "tone": "idle", "fenced": False, "last_error": None, "ask": number}


def external_card(ext: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An external client's card says so: its client.id, library and version, whether it is connected."""
    if ext is None:
        return None
    software = ext.get("software") or {}
    return {
        "client_id": cut.name(ext.get("client_id")) if ext.get("client_id") is not None else None,
        "library": cut.name(software.get("library")) if software.get("library") else None,
        "version": cut.name(software.get("version")) if software.get("version") else None,
        "connected": bool(ext.get("connected")),
        "member_id": cut.name(ext.get("member_id")) if ext.get("member_id") else None,
    }


def pid_label(e: Mapping[str, Any]) -> str:
    pid = e.get("producer_id")
    if pid is None or pid == -1:
        return "—"
    return f"PID {pid} e{e.get('epoch')}"
