"""The gallery in Chromium: the scenarios in groups, a filter that hides what does not match (and empty groups),
kept in the address; opening "compare" on a card leaves the other cards of its row as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import shot

LIBRARY_SIZE = len(list((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml")))

pytestmark = pytest.mark.browser


def test_it_groups_the_scenarios_and_filters_them(page, server):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(server.url + "/")
    groups = page.locator("section.group")
    assert groups.count() == 6 and page.locator("#g-exercises").inner_text().startswith("Exercises")
    shot(page, "gallery-grouped", full_page=False)

    page.locator("#gallery-filter").fill("database")
    visible = page.locator("section.group .card[data-scenario]:visible")
    visible.first.wait_for()
    ids = sorted(visible.evaluate_all("cs => cs.map(c => c.dataset.scenario)"))
    assert ids == ["db-commit-kafka-then-database", "db-incident-in-full", "db-transactional-outbox"]
    assert page.locator("section.group:visible").evaluate_all("gs => gs.map(g => g.dataset.group)") == ["database"]
    assert page.locator("#gallery-count").inner_text() == f"3 of {LIBRARY_SIZE} scenarios"
    assert page.url.endswith("#filter=database")

    page.locator("#gallery-filter").fill("exercise fencing")  # every word must match
    both = visible.evaluate_all("cs => cs.map(c => c.dataset.scenario)")
    assert {"ex-incident-find-the-cause", "ex-incident-fix-it", "ex-who-is-fenced"} <= set(both)
    assert all(s.startswith("ex-") for s in both) and len(both) < 6
    page.locator("#gallery-filter").fill("no-such-thing")
    page.locator("#gallery-none").wait_for()
    page.locator("#gallery-filter").fill("")
    assert page.locator("section.group .card[data-scenario]:visible").count() == LIBRARY_SIZE

    # the filter in the address opens the gallery filtered; compare opened on a card does not stretch its row
    page.goto(server.url + "/#filter=kafka-4")
    page.reload()
    page.wait_for_function("() => document.getElementById('gallery-count').textContent.startsWith('2 of')")
    card = page.locator('.card[data-scenario="v2-epoch-bump-per-transaction"]')
    other = page.locator('.card[data-scenario="late-write-from-earlier-transaction"]')
    before = other.bounding_box()["height"]
    card.locator(".compare-entry > summary").click()
    assert other.bounding_box()["height"] == before
