"""The simulator stays sans-I/O and deterministic: no Django, asyncio, sockets, wall clock, threads or global
random anywhere under playground/sim/ (checked on the syntax tree, not with grep)."""

import ast
from pathlib import Path

import playground.sim

FORBIDDEN = {"django", "asyncio", "socket", "time", "random", "threading", "uuid", "datetime", "os", "select",
             "selectors", "subprocess", "multiprocessing", "secrets"}
SIM_DIR = Path(playground.sim.__file__).parent


def imported_roots(tree: ast.AST) -> set[str]:
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            roots.add("__import__")
    return roots


def test_it_finds_every_module_of_the_simulator():
    names = {p.name for p in SIM_DIR.glob("*.py")}
    assert {"clock.py", "events.py", "errors.py", "log.py", "coordinator.py", "groups.py", "cluster.py",
            "client.py", "javaclient.py", "driver.py"} <= names


def test_it_refuses_django_asyncio_socket_time_random_and_threading_in_the_simulator():
    offenders = {}
    for path in sorted(SIM_DIR.rglob("*.py")):
        bad = imported_roots(ast.parse(path.read_text(), str(path))) & (FORBIDDEN | {"__import__"})
        if bad:
            offenders[path.name] = sorted(bad)
    assert offenders == {}


def test_it_would_notice_a_forbidden_import_hidden_in_a_function():
    tree = ast.parse("def f():\n    import time\n    from random import Random\n")
    assert imported_roots(tree) == {"time", "random"}
