"""What a server process's first pages would otherwise pay for, done as it starts: importing the URLconf and the views
behind it and the simulator (a session's first backend imports it: ~0.3 s of a process's first seat, where Python
compiles it from source), laying out the coordinator's state diagram of each Kafka release, compiling the pages'
templates. A room's joins arrive together, each at a process that has served nothing yet: those were a join's p95
(tools/bench/workshop.py)."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

TEMPLATES = ("playground/session.html", "playground/gallery.html", "playground/rooms/board.html")


def run() -> None:
    from django.template.loader import get_template
    from django.urls import get_resolver

    from playground.engine.spec import KAFKA_RELEASES
    from playground.scenario import engines
    from playground.web import diagrams

    try:
        get_resolver().url_patterns  # noqa: B018  (imports the URLconf and its views)
        engines.backend_class("sim")  # what a session's first backend imports
        for kafka in KAFKA_RELEASES:
            diagrams.current_state_machine(kafka=kafka)
        for name in TEMPLATES:
            get_template(name)
    except Exception:
        # a head start only: whatever failed here is done (and reported) by the first request that needs it
        log.exception("warming up failed")
