"""The server process's head start (playground/web/warmup.py, started by playground/asgi.py)."""

from __future__ import annotations

import logging
import sys

from playground.engine.spec import KAFKA_RELEASES
from playground.web import diagrams, warmup


def test_it_lays_out_every_releases_state_diagram_and_imports_the_views_before_the_first_page():
    diagrams._SM_CACHE.clear()
    warmup.run()
    laid_out = [id(d) for d in diagrams._SM_CACHE.values()]
    for kafka in KAFKA_RELEASES:
        assert id(diagrams.current_state_machine(kafka=kafka)) in laid_out, kafka
    assert "playground.web.views" in sys.modules


def test_it_logs_and_carries_on_when_warming_up_fails(monkeypatch, caplog):
    def broken(**_kwargs):
        raise RuntimeError("no layout")

    monkeypatch.setattr(diagrams, "current_state_machine", broken)
    with caplog.at_level(logging.ERROR, logger="playground.web.warmup"):
        warmup.run()
    assert "warming up failed" in caplog.text and "no layout" in caplog.text
