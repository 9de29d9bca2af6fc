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


def test_it_has_the_simulator_and_the_channel_layer_ready_before_the_first_request():
    """In a process of its own (this one imported everything long ago): what Daphne imports, head start included."""
    import os
    import subprocess
    from pathlib import Path

    code = (
        "import sys\n"
        "import playground.asgi\n"
        "from channels.layers import channel_layers\n"
        "print('layer', sorted(channel_layers.backends))\n"
        "print('sim', 'playground.sim.driver' in sys.modules)\n"
        "import gc\n"
        "print('frozen', gc.get_freeze_count() > 10000)\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "playground.settings", "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "layer ['default']" in out.stdout
    assert "sim True" in out.stdout
    assert "frozen True" in out.stdout  # what the process made as it started is out of the collector's sight
