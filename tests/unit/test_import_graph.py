"""No import circle in ``core`` or ``functions``, and the folders of ``core`` in one order: lazy
imports inside functions count too; imports under ``if TYPE_CHECKING:`` do not (they never run).
A module shared by two others is its own small module (for example the stores read the key rules
from ``core.reports.keys``)."""

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
    return {target for target, _ in _import_lines(name, path, modules)}


def _import_lines(name: str, path: Path, modules: dict[str, Path]) -> set[tuple[str, int]]:
    """``(module imported, line)`` of every import of a module of ``modules`` in ``path`` (see
    :func:`_imports`)."""
    found: set[tuple[str, int]] = set()
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
                    found.add((f"{base}.{alias.name}", node.lineno))
                elif base in modules:
                    found.add((base, node.lineno))
        elif isinstance(node, ast.Import):
            found.update((a.name, node.lineno) for a in node.names if a.name in modules)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {(target, line) for target, line in found if target != name}


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


#: The folders (and a few modules) of ``core``, lowest first: a module may import modules of its
#: own layer and of layers below it, never above (DESIGN.md, "The shape" and rule 13). A module
#: belongs to the layer of the longest prefix that names it (a module at the top of ``core`` not
#: named below is in the base). Read from the code where it differs from the table of DESIGN.md:
#: - the optimizer (pure) needs only the chunking methods and the RAG template's defaults;
#: - the settings build the models, vector stores and report stores a deployment configures, so
#:   they sit above those; inputs are read with the settings' storage access, documents through
#:   inputs;
#: - golden reading and checking sits below the metrics (they read golden types); a golden file's
#:   passages of documents and its stale evidence (which ``evaluate`` warns about) sit above the
#:   metrics whose matching rule they use; golden authoring (templates, suggestions, drafts,
#:   ``check --docs``) sits above evaluation; the Functions' golden requests use the experiment
#:   requests' address rules;
#: - ``core.targets`` (what is searched) sits between the vector stores and evaluation;
#: - the pages render reports and import neither evaluation nor the experiment
#:   (:data:`NEVER_IMPORTS`); the servers of pages (``core.reports.serve``, like the Functions)
#:   hand them a running experiment's report so far from the engine, so they sit above it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("core", "core.errors", "core.text", "core.addresses", "core.heap", "core.limits", "core.workspace",
              "core.exact", "core.optimizers")),
    ("report stores", ("core.reports",)),
    ("models", ("core.models",)),
    ("chunking", ("core.chunking",)),
    ("vector stores", ("core.vectorstores",)),
    ("rag", ("core.rag",)),
    ("optimization", ("core.optimization",)),
    ("settings", ("core.settings",)),
    ("inputs", ("core.inputs",)),
    ("documents", ("core.documents",)),
    ("metric scales", ("core.metrics.scales",)),
    ("golden reading", ("core.golden",)),
    ("metrics", ("core.metrics",)),
    ("golden against documents", ("core.golden.passages", "core.golden.stale")),
    ("targets", ("core.targets",)),
    ("evaluation", ("core.evaluation",)),
    ("golden authoring", ("core.golden.template", "core.golden.suggest", "core.golden.draft",
                          "core.golden.corpus_check")),
    ("experiment", ("core.experiment",)),
    ("golden requests", ("core.golden.requests",)),
    ("pages", ("core.reports.pages",)),
    ("page server", ("core.reports.serve",)),
    ("cli", ("core.cli",)),
)

#: What a layer never imports although the order would allow it: the optimizer is pure (the
#: space, samplers and study: no stores, no models); golden reading and checking reads and
#: checks a file (nothing searches); the pages read the numbers a report holds and find the
#: reports by the prefixes of ``core.reports.keys``, never through the workflows.
NEVER_IMPORTS: dict[str, tuple[str, ...]] = {
    "optimization": ("core.reports", "core.models", "core.vectorstores"),
    "golden reading": ("core.vectorstores", "core.models", "core.evaluation", "core.rag.template",
                       "core.rag.generate", "core.rag.extractive", "core.targets"),
    "pages": ("core.evaluation", "core.experiment"),
}


def _layer(module: str) -> tuple[int, str] | None:
    """``(position in LAYERS, unit prefix)`` of ``module``, by its longest matching prefix; None
    when no layer names it."""
    best: tuple[int, str] | None = None
    for position, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (position, prefix)
    return best


def _upward_arrows() -> list[str]:
    """Every import in ``core`` of a module of a higher layer, as ``file:line: a -> b (layer a <
    layer b)``, sorted."""
    modules = _module_names()
    out = []
    for name, path in modules.items():
        if not name.startswith("core"):
            continue
        mine = _layer(name)
        for target, line in _import_lines(name, path, modules):
            theirs = _layer(target)
            if mine is None or theirs is None or theirs[0] <= mine[0]:
                continue
            out.append(f"{path.relative_to(ROOT)}:{line}: {name} -> {target} "
                       f"({LAYERS[mine[0]][0]} imports {LAYERS[theirs[0]][0]}, which sits above it)")
    return sorted(out)


def test_every_module_of_core_has_a_layer():
    assert sorted(m for m in _module_names() if m.startswith("core") and _layer(m) is None) == []


def test_the_layers_are_found_by_the_longest_prefix():
    # by hand: the pages sit above the report stores of their own folder, authoring above reading
    assert LAYERS[_layer("core.reports.pages.site")[0]][0] == "pages"
    assert LAYERS[_layer("core.reports.files")[0]][0] == "report stores"
    assert LAYERS[_layer("core.golden.suggest")[0]][0] == "golden authoring"
    assert LAYERS[_layer("core.golden.reader")[0]][0] == "golden reading"
    assert LAYERS[_layer("core")[0]][0] == "base" and _layer("corex") is None


def test_no_folder_of_core_imports_one_above_it():
    arrows = _upward_arrows()
    assert not arrows, f"{len(arrows)} imports run upward:\n" + "\n".join(arrows)


def _forbidden_arrows() -> list[str]:
    """Every import :data:`NEVER_IMPORTS` forbids, as ``file:line: a -> b``, sorted."""
    modules = _module_names()
    out = []
    for name, path in modules.items():
        layer = _layer(name)
        never = NEVER_IMPORTS.get(LAYERS[layer[0]][0], ()) if layer is not None else ()
        out += [f"{path.relative_to(ROOT)}:{line}: {name} -> {target}"
                for target, line in _import_lines(name, path, modules)
                if any(target == p or target.startswith(p + ".") for p in never)]
    return sorted(out)


def test_golden_reading_imports_no_search_and_pages_no_workflow():
    arrows = _forbidden_arrows()
    assert not arrows, f"{len(arrows)} imports a layer never makes:\n" + "\n".join(arrows)
