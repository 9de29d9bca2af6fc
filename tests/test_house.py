"""The house stays as it is drawn (docs/architecture.md): the layers import downwards only, no import circles, the simulator is pure
(no Django, asyncio, sockets, threads, wall clock or global random), and the code is linted, formatted and typed.
`make lint` runs the same tools alone; these tests make `make test` fail on a broken contract."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_it_keeps_every_import_contract():
    out = _run(str(BIN / "lint-imports"), "--no-cache")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "BROKEN" not in out.stdout and out.stdout.count("KEPT") >= 2


def test_it_would_notice_a_pure_layer_importing_the_clock_a_lower_one_importing_a_higher_or_a_circle(tmp_path):
    """The contracts' shape on a small package of the same shape: the checker must really fail, not only pass."""
    pkg = tmp_path / "house"
    for name, body in {
        "__init__.py": "",
        "sim/__init__.py": "",
        "sim/clock.py": "def now():\n    import time\n\n    return time.time()\n",  # hidden in a function
        "sim/log.py": "from house.sim import clock\n\n\ndef roll():\n    from house.sim import segment\n",
        "sim/segment.py": "from house.sim import log\n",  # a circle, one side of it hidden in a function
        "session/__init__.py": "",
        "session/commands.py": "def publish():\n    from house.web import broadcast\n",
        "web/__init__.py": "",
        "web/broadcast.py": "from house.session import commands\n",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(body)
    (tmp_path / ".importlinter").write_text(
        textwrap.dedent("""
        [importlinter]
        root_package = house
        include_external_packages = True

        [importlinter:contract:layers]
        name = layers
        type = layers
        layers =
            house.web
            house.session
            house.sim

        [importlinter:contract:pure]
        name = pure
        type = forbidden
        source_modules = house.sim
        forbidden_modules = time

        [importlinter:contract:circles]
        name = circles
        type = acyclic_siblings
        ancestors = house
        """)
    )
    out = subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache", "--config", str(tmp_path / ".importlinter")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "house.session.commands -> house.web.broadcast" in out.stdout
    assert "house.sim.clock -> time" in out.stdout
    assert "No cycles are allowed in house.sim." in out.stdout


def test_it_is_linted_and_formatted():
    lint = _run(str(BIN / "ruff"), "check", "playground", "tests", "tools")
    assert lint.returncode == 0, lint.stdout[-4000:]
    fmt = _run(str(BIN / "ruff"), "format", "--check", "playground", "tests", "tools")
    assert fmt.returncode == 0, fmt.stdout[-4000:]


def test_it_type_checks():
    out = _run(str(BIN / "mypy"))
    assert out.returncode == 0, out.stdout[-6000:]


def test_it_places_every_part_of_playground_in_a_layer_and_the_drawing():
    """A folder or module nobody placed is in no layer: nothing would stop it importing anything, and the drawing
    would not say where it sits. The layers contract is exhaustive over playground/ (lint-imports fails on a part it
    does not name, and on a name that is gone); the drawing is checked here."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")
    assert layers["containers"] == ["playground"] and layers["exhaustive"] is True
    here = ROOT / "playground"
    parts = {p.name for p in here.iterdir() if (p / "__init__.py").exists()}
    parts |= {p.stem for p in here.glob("*.py") if p.stem != "__init__"}
    drawing = (ROOT / "docs" / "architecture.md").read_text().split("```")[1]
    assert [p for p in sorted(parts) if p not in drawing] == []
