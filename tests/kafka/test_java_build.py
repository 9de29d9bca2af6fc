"""`make run` serves at once; the Java client's worker is built in the background, and a Java real-cluster session
asked for meanwhile says so, then starts once the build is done."""

from __future__ import annotations

import html
import subprocess
import time
from pathlib import Path

import pytest

from playground import session
from playground.kafka import java_worker

ROOT = Path(__file__).resolve().parents[2]
BUILD_CAP_S = 300.0


def test_it_serves_before_building_the_java_worker():
    recipe = subprocess.run(
        ["make", "-n", "-s", "-o", "venv", "run"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    assert "daphne" in recipe and "java_worker" not in recipe
    test = subprocess.run(
        ["make", "-n", "-s", "-o", "venv-test", "test"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    assert "playground.kafka.java_worker build" in test  # make test still builds it first, explicitly


@pytest.mark.kafka
@pytest.mark.django_db
def test_a_java_session_asked_for_while_its_worker_is_built_says_so_then_starts(tmp_path, monkeypatch, client):
    release = "3.9.1"
    built = ROOT / "tools" / "java" / ".build" / release
    java_worker.ensure_built(release)  # what the fake build below copies, as tools/java/build.sh would make it
    # A build directory without the worker; the build (tools/java/build.sh's job) is a copy of the real one.
    monkeypatch.setenv("JAVA_WORKER_BUILD_DIR", str(tmp_path / "build"))
    fake = tmp_path / "build.sh"
    fake.write_text(
        f'#!/bin/sh\nsleep 2\nmkdir -p "$JAVA_WORKER_BUILD_DIR/$1"\ncp -r {built}/. "$JAVA_WORKER_BUILD_DIR/$1/"\n'
    )
    monkeypatch.setattr(java_worker, "BUILD_SH", fake)
    monkeypatch.setattr(java_worker, "_built", {})
    monkeypatch.setattr(java_worker, "_background", {})
    monkeypatch.setattr(java_worker, "_failed", {})

    form = {"scenario": "commit-and-abort", "backend": "kafka", "kafka": "3.9", "client": "java"}
    waiting = client.post("/new/", form)
    assert waiting.status_code == 202
    page = html.unescape(waiting.content.decode())
    assert f"The Java client's worker for kafka-clients {release} is being built on this server" in page
    assert "the session starts when it is ready" in page and "No session was started" not in page
    assert 'id="start-when-ready"' in page and 'value="java"' in page  # the page asks again by itself

    deadline = time.monotonic() + BUILD_CAP_S
    while java_worker.waiting(release) is not None:
        assert time.monotonic() < deadline, f"the background build did not finish within {BUILD_CAP_S:.0f} s"
        time.sleep(0.2)
    try:
        started = client.post("/new/", form)
        assert started.status_code == 302 and "/s/" in started["Location"], started.content.decode()[:500]
        sid = started["Location"].rstrip("/").rsplit("/", 1)[-1]
        assert session.load(sid).backend.profile.client == "java"
    finally:
        session.CACHE.clear()  # closes the backend: the session's topics are deleted
