"""No import circle in ``core`` or ``functions``: lazy imports inside functions count too; imports
under ``if TYPE_CHECKING:`` do not (they never run). A module shared by two others is its own
small module (for example the stores read the key rules from ``core.reports.keys``)."""

import ast
from pathlib import Path

import core

ROOT = Path(core.__file__).parent.parent
PACKAGES = ("core", "functions")


def _module_names() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            out[".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")] = path
    return out


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of ``modules`` that ``path`` (module ``name``) imports, anywhere in the file:
    ``from a.b import c`` names ``a.b.c`` when that is a module, else ``a.b``."""
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def visit(node: ast.AST) -> None:
        if _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package[: len(package) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.add(f"{base}.{alias.name}")
                elif base in modules:
                    found.add(base)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found.discard(name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _module_names()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


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


def test_the_graph_sees_lazy_relative_and_package_imports():
    graph = _graph()
    # hand-checked edges: the stores take the key rules from keys.py, open_files reaches S3 and
    # Blob (lazily), the functions modules share functions.shared, the app registers blueprints
    assert "core.reports.keys" in graph["core.reports.s3"]
    assert "core.reports.keys" in graph["core.reports.blob"]
    assert {"core.reports.s3", "core.reports.blob"} <= graph["core.reports.files"]
    assert "functions.shared" in graph["functions.experiments"]
    assert "core.optimization.space" in graph["core.optimization.study"]
    # a TYPE_CHECKING import is not an edge: types.py names OmittedProblems in an annotation only
    assert "core.golden.problems" not in graph["core.golden.types"]


def test_no_import_circle_in_core_or_functions():
    assert _cycle(_graph()) is None


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
