"""Measures of the shape of ``core/``, to compare a tree before and after a structural change.

For each tree it counts:

- lines of ``core/`` by package (``core/<package>/``, and ``core/<module>.py`` for the modules
  at the top), all lines of the ``.py`` files;
- functions (and methods, nested ones included) longer than ``--long`` lines (default 80),
  from the ``def`` line to the last line of the body, decorators excluded;
- functions whose return annotation is ``dict[str, Any]`` (``dict[str, Any] | None`` too);
- parameters annotated ``Any`` (``self`` and ``cls`` are never annotated; ``*args`` and
  ``**kwargs`` count when annotated ``Any``);
- import statements of the project's own modules (``core``, ``functions``, relative ones)
  inside function bodies, those under ``if TYPE_CHECKING:`` excluded.

Usage:
    python scripts/codestats.py [ROOT ...] [--long N] [--list]

With several roots (for example the tree before a change and after it) the counts are printed
side by side, one column per root; ``--list`` prints the long functions of each root too.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

#: The default length above which a function counts as long, in lines.
LONG_FUNCTION_LINES = 80
#: The top-level names of the project's own modules.
OWN_PACKAGES = ("core", "functions")


@dataclass
class Stats:
    """The measures of one tree.

    Attributes:
        lines: package (``core/<package>`` or ``core/<module>.py``) -> lines.
        long_functions: ``(lines, "path:line name")`` of each function longer than the limit.
        dict_returns: functions returning ``dict[str, Any]`` (or ``dict[str, Any] | None``).
        any_parameters: parameters annotated ``Any``.
        function_imports: import statements of the project's modules inside function bodies.
    """

    lines: Counter[str] = field(default_factory=Counter)
    long_functions: list[tuple[int, str]] = field(default_factory=list)
    dict_returns: int = 0
    any_parameters: int = 0
    function_imports: int = 0


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _own_import(node: ast.AST) -> bool:
    """Whether ``node`` imports one of the project's own modules."""
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] in OWN_PACKAGES
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] in OWN_PACKAGES for a in node.names)
    return False


def _annotation(node: ast.AST | None) -> str:
    return "" if node is None else ast.unparse(node).replace(" ", "").replace("'", "").replace('"', "")


def _measure_file(path: Path, shown: str, stats: Stats, long_lines: int) -> None:
    """Add what ``path`` holds to ``stats``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def visit(node: ast.AST, in_function: bool) -> None:
        if _is_type_checking(node):
            for child in node.orelse:
                visit(child, in_function)
            return
        if in_function and _own_import(node):
            stats.function_imports += 1
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > long_lines:
                stats.long_functions.append((length, f"{shown}:{node.lineno} {node.name}"))
            if _annotation(node.returns) in ("dict[str,Any]", "dict[str,Any]|None", "Optional[dict[str,Any]]"):
                stats.dict_returns += 1
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs,
                     *([args.vararg] if args.vararg else []), *([args.kwarg] if args.kwarg else [])]
            stats.any_parameters += sum(1 for a in every if _annotation(a.annotation) == "Any")
            for child in ast.iter_child_nodes(node):
                visit(child, True)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, in_function)

    visit(tree, False)


def measure(root: Path, long_lines: int = LONG_FUNCTION_LINES) -> Stats:
    """The measures of ``root/core``.

    Raises:
        SystemExit: ``root`` holds no ``core`` folder.
    """
    core = root / "core"
    if not core.is_dir():
        raise SystemExit(f"{root} holds no core/ folder")
    stats = Stats()
    for path in sorted(core.rglob("*.py")):
        relative = path.relative_to(root)
        parts = relative.parts
        package = "/".join(parts[:2]) if len(parts) > 2 else str(relative)
        stats.lines[package] += len(path.read_text(encoding="utf-8").splitlines())
        _measure_file(path, str(relative), stats, long_lines)
    stats.long_functions.sort(reverse=True)
    return stats


def render(roots: list[Path], every: list[Stats], long_lines: int, show_list: bool) -> str:
    """The counts side by side, one column per root."""
    width = max(12, *(len(str(r)) for r in roots))
    head = f"{'':<28}" + "".join(f"{str(r):>{width + 2}}" for r in roots)
    rows = [head, "-" * len(head), "lines of core/ by package:"]
    packages = sorted(set().union(*(s.lines for s in every)))
    for package in packages:
        rows.append(f"  {package:<26}" + "".join(f"{s.lines.get(package, 0):>{width + 2}}" for s in every))
    rows.append(f"  {'total':<26}" + "".join(f"{sum(s.lines.values()):>{width + 2}}" for s in every))
    for label, values in (
        (f"functions over {long_lines} lines", [len(s.long_functions) for s in every]),
        ("returning dict[str, Any]", [s.dict_returns for s in every]),
        ("parameters typed Any", [s.any_parameters for s in every]),
        ("function-level own imports", [s.function_imports for s in every]),
    ):
        rows.append(f"{label:<28}" + "".join(f"{v:>{width + 2}}" for v in values))
    if show_list:
        for root, stats in zip(roots, every):
            rows += ["", f"functions over {long_lines} lines in {root}:"]
            rows += [f"  {length:>4}  {where}" for length, where in stats.long_functions]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Print the measures of each root given (default: this repository)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", type=Path, help="trees holding a core/ folder (default: this repository)")
    parser.add_argument("--long", type=int, default=LONG_FUNCTION_LINES, help="lines above which a function is long")
    parser.add_argument("--list", action="store_true", help="list the long functions of each root")
    args = parser.parse_args(argv)
    roots = args.roots or [Path(__file__).resolve().parent.parent]
    print(render(roots, [measure(r, args.long) for r in roots], args.long, args.list))
    return 0


if __name__ == "__main__":
    sys.exit(main())
