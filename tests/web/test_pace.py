"""A live session on the simulator at its user's pace: the wall time between commands passes on the simulator's
clock too, recorded with each command, so the shared-id incident tells the story a real cluster tells at a
presenter's pace, and a replay tells it again the same way."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from playground import session
from playground.scenario import library
from playground.session import commands

pytestmark = pytest.mark.django_db


class WallClock:
    """The wall clock the session reads between commands: a presenter talking for 3 s before each one."""

    def __init__(self) -> None:
        self.now_s = 1_700_000_000.0

    def time(self) -> float:
        self.now_s += 3.0
        return self.now_s


def incident(monkeypatch, paced: bool) -> str:
    entry = library.find("shared-id-incident")
    assert entry is not None
    sid = session.create(entry.scenario, source=entry.scenario.source, backend="sim").id
    monkeypatch.setattr(commands, "time", SimpleNamespace(time=WallClock().time))  # the session's reads only
    if paced:
        session.set_pace(sid, True)
    return sid


def produce_outcomes(sid: str) -> dict[str, str]:
    """Step until the burst of orders 2 to 5 is sent; each produce's outcome by its value."""
    out: dict[str, str] = {}
    while len(out) < 4:
        live, outcome = session.step(sid)
        step = live.commands[-1]["step"]
        if isinstance(step, dict) and "pay.produce" in step and step["pay.produce"]["value"] != "order-1":
            out[step["pay.produce"]["value"]] = outcome
    return out


def test_it_runs_the_steps_back_to_back_without_pace(monkeypatch):
    sid = incident(monkeypatch, paced=False)
    assert produce_outcomes(sid) == dict.fromkeys(("order-2", "order-3", "order-4", "order-5"), "ok")
    assert all("elapsed_ms" not in e for e in session.load(sid).commands)


def test_it_lets_a_presenters_pace_pass_and_a_background_fence_fail_the_next_produce(monkeypatch):
    sid = incident(monkeypatch, paced=True)
    # as on the real cluster at a presenter's pace: order-2 is queued, the fence reaches librdkafka in the background
    # while the presenter talks, and the next produce() fails at once
    assert produce_outcomes(sid) == {"order-2": "ok", "order-3": "_FATAL", "order-4": "_FATAL", "order-5": "_FATAL"}
    live = session.load(sid)
    fenced_at = next(e for e in live.commands if e.get("meanwhile_fatal"))
    assert fenced_at["meanwhile_fatal"] == ["pay"] and fenced_at["elapsed_ms"] == 3000
    assert fenced_at["step"]["pay.produce"]["value"] == "order-3"
    from playground.web import panels

    header = panels.header(live, live.backend.view())
    assert header["paced"] and header["last"]["elapsed_s"] == 3.0
    assert panels.narrative(live, live.backend.view())["timing"] == "paced"
    # recorded with the commands: another process (or a restart) replays the same story
    before = live.backend.view()
    session.CACHE.clear()
    after = session.load(sid).backend.view()
    assert after["time_ms"] == before["time_ms"] and after["producers"] == before["producers"]
    assert after["partitions"] == before["partitions"]


def test_it_switches_the_pace_off_again(monkeypatch):
    sid = incident(monkeypatch, paced=True)
    session.step(sid)
    session.set_pace(sid, False)
    session.step(sid)
    live = session.load(sid)
    assert not live.paced and "elapsed_ms" not in live.commands[-1]
