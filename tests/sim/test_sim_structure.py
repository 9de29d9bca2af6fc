"""The simulator's shape: the coordinators are state machines that hand effects to the cluster and never reach it
(no import of the cluster's modules, directly or through another), and no module of playground/sim imports itself
back through others. Every import counts: at the top, inside a function, or under TYPE_CHECKING."""

import ast
from pathlib import Path

SIM = Path(__file__).resolve().parents[2] / "playground" / "sim"
COORDINATORS = ("coordinator", "txnstate", "txnlog", "endtxn", "markers", "replies", "groups", "effects")
CLUSTER = {"cluster", "leaders", "brokers"}


def sim_imports() -> dict[str, set[str]]:
    """Module -> the simulator modules it imports."""
    graph = {}
    for path in SIM.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "playground.sim":
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("playground.sim."):
                imported.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                imported.update(a.name.split(".")[2] for a in node.names if a.name.startswith("playground.sim."))
        graph[path.stem] = imported
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for module in graph.get(todo.pop(), ()):
            if module not in seen:
                seen.add(module)
                todo.append(module)
    return seen


def test_it_keeps_the_coordinators_from_reaching_the_cluster():
    graph = sim_imports()
    assert {module: reachable(graph, module) & CLUSTER for module in COORDINATORS} == {m: set() for m in COORDINATORS}


def test_it_imports_no_simulator_module_back_through_others():
    graph = sim_imports()
    assert [module for module in graph if module in reachable(graph, module)] == []


def test_it_reads_imports_under_type_checking_too():
    # the guard of the two tests above: a TYPE_CHECKING import is an import
    client = sim_imports()["clientbase"]
    assert "cluster" in client and "TYPE_CHECKING" in (SIM / "clientbase.py").read_text()
