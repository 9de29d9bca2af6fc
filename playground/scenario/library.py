"""The scenario library as the gallery shows it: every file in `settings.SCENARIO_DIR`, loaded once per change.

A file that does not load is shown as broken (with the loader's message naming file, line and field) instead of
taking the gallery down.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from playground.scenario.model import Scenario


@dataclass(frozen=True)
class Entry:
    path: str
    scenario: Scenario | None
    error: str = ""

    @property
    def id(self) -> str:
        return self.scenario.id if self.scenario is not None else Path(self.path).stem


_lock = threading.Lock()
_cache: dict[str, tuple[tuple[int, int], Entry]] = {}


def entries() -> list[Entry]:
    from playground.scenario import ScenarioError, load_scenario

    directory = Path(getattr(settings, "SCENARIO_DIR", "scenarios"))
    out = []
    seen: set[str] = set()
    for path in sorted(directory.glob("*.yaml")):
        try:
            stat = path.stat()
        except OSError:
            continue
        stamp = (stat.st_mtime_ns, stat.st_size)
        with _lock:
            hit = _cache.get(str(path))
        if hit is not None and hit[0] == stamp:
            entry = hit[1]
        else:
            try:
                entry = Entry(str(path), load_scenario(path))
            except ScenarioError as exc:
                entry = Entry(str(path), None, str(exc))
            except Exception as exc:
                entry = Entry(str(path), None, f"{path.name}: {exc}")
            with _lock:
                _cache[str(path)] = (stamp, entry)
        scenario = entry.scenario
        if scenario is not None:
            if scenario.id in seen:
                entry = Entry(entry.path, None, f"{path.name}: id {scenario.id!r} is used by another file")
            else:
                seen.add(scenario.id)
        out.append(entry)
    return out


def find(scenario_id: str) -> Entry | None:
    for entry in entries():
        if entry.scenario is not None and entry.scenario.id == scenario_id:
            return entry
    return None


def get(scenario_id: str) -> Scenario | None:
    """The library's scenario with this id (None: no file has it, or that file does not load)."""
    entry = find(scenario_id)
    return entry.scenario if entry is not None else None
