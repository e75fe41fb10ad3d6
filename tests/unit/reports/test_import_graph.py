"""The modules of ``core.reports`` import one another without a circle (lazy imports inside
functions count too): each store reads the shared key rules from ``core.reports.keys``."""

import ast
from pathlib import Path

import core.reports

PACKAGE = Path(core.reports.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every ``core.reports.<module>`` that ``path`` imports, anywhere in the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("core.reports."):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("core.reports."))
    return names


def _graph() -> dict[str, set[str]]:
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        graph[name] = {m for m in _imports(path) if m != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_graph_sees_the_stores_imports():
    graph = _graph()
    # hand-checked edges: the stores take the key rules from keys.py, open_files reaches S3 and Blob
    assert "core.reports.keys" in graph["core.reports.s3"]
    assert "core.reports.keys" in graph["core.reports.blob"]
    assert {"core.reports.s3", "core.reports.blob"} <= graph["core.reports.files"]


def test_no_import_circle_in_core_reports():
    assert _cycle(_graph()) is None


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
