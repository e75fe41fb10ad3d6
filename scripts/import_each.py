"""Import every module of ``core/`` and ``functions/`` first, each in a fresh interpreter.

An import inside a function hides an import cycle: the module imports fine as long as some
other module happened to be imported before it. Importing each module first, alone, in its own
``python -c "import <module>"`` shows every cycle and every missing name that only the import
order hid. Run it before committing a change that moves imports (for example one that lifts an
import out of a function body to the top of its module).

With ``--heavy`` it also lists, for each module, the heavy libraries its import loads (the ones
the import-time tests keep out of the Functions app and the ``ragtune`` command:
:data:`HEAVY`), which tells whether an import can move to a module's top.

Usage:
    python scripts/import_each.py [PREFIX ...] [--jobs N] [--heavy] [--timeout S]

``PREFIX`` narrows the modules to those whose dotted name starts with it (``core.evaluation``,
``functions``); by default every module of ``core`` and ``functions`` and ``function_app``.
The repository root is put first on ``PYTHONPATH``, so the tree checked is this one.

Exit status: 0 when every module imports, 1 when one fails (each failure is printed with the
last lines of its error), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The packages whose modules are imported, and the app module at the top.
PACKAGES = ("core", "functions")
TOP_MODULES = ("function_app",)
#: Libraries that take seconds or hundreds of megabytes to import; the union of what
#: ``tests/functions/test_app.py`` and ``tests/unit/test_cli_package.py`` keep out.
HEAVY = ("torch", "sentence_transformers", "transformers", "pymilvus", "milvus_lite", "docling", "unitxt", "pygam",
         "onnxruntime", "plotly", "pandas", "qdrant_client", "azure.search", "mlflow", "psycopg", "boto3",
         "matplotlib", "jinja2", "markupsafe", "starlette", "uvicorn")
#: Printed by the child: the heavy modules it loaded, as JSON on its last line.
_PROBE = ("import importlib, json, sys; importlib.import_module({name!r}); "
          "print(json.dumps(sorted(m for m in sys.modules)))")


@dataclass(frozen=True)
class Outcome:
    """One module's import in a fresh interpreter.

    Attributes:
        module: the dotted name.
        ok: whether the import succeeded.
        error: the last lines of the child's stderr when it failed, else "".
        heavy: the heavy libraries (:data:`HEAVY`) the import loaded, sorted.
    """

    module: str
    ok: bool
    error: str = ""
    heavy: tuple[str, ...] = ()


def module_names(root: Path = ROOT, prefixes: tuple[str, ...] = ()) -> list[str]:
    """The dotted names of every module under ``root``'s :data:`PACKAGES` (packages by their
    ``__init__``) and :data:`TOP_MODULES`, sorted; only those starting with one of
    ``prefixes`` when any is given."""
    names = [m for m in TOP_MODULES if (root / f"{m}.py").is_file()]
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            names.append(".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"))
    return sorted(n for n in names if not prefixes or any(n == p or n.startswith(p + ".") for p in prefixes))


def _heavy_of(modules: list[str]) -> tuple[str, ...]:
    found = set()
    for module in modules:
        for heavy in HEAVY:
            if module == heavy or module.startswith(heavy + "."):
                found.add(heavy)
    return tuple(sorted(found))


def import_alone(module: str, root: Path = ROOT, timeout_s: float = 300.0) -> Outcome:
    """Import ``module`` first in a fresh interpreter (this one's executable, ``root`` first on
    ``PYTHONPATH``, working folder ``root``) and say how it went."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])}
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE.format(name=module)], capture_output=True, text=True,
                              cwd=root, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return Outcome(module, False, f"no answer after {timeout_s:g} s")
    if done.returncode != 0:
        return Outcome(module, False, "\n".join(done.stderr.strip().splitlines()[-6:]))
    try:
        loaded = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return Outcome(module, True)  # the module printed on its own: the import worked
    return Outcome(module, True, heavy=_heavy_of(loaded))


def main(argv: list[str] | None = None) -> int:
    """Import each module named by the command line alone; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="dotted prefixes of the modules to import (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="interpreters at once (default 2)")
    parser.add_argument("--heavy", action="store_true", help="list the heavy libraries each module's import loads")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one import may take (default 300)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    names = module_names(ROOT, tuple(args.prefixes))
    if not names:
        print(f"error: no module starts with {', '.join(args.prefixes)}", file=sys.stderr)
        return 2
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(lambda name: import_alone(name, ROOT, args.timeout), names))
    failed = [o for o in outcomes if not o.ok]
    for outcome in failed:
        print(f"FAILED {outcome.module}:\n  " + outcome.error.replace("\n", "\n  "))
    if args.heavy:
        for outcome in outcomes:
            if outcome.heavy:
                print(f"{outcome.module}: {' '.join(outcome.heavy)}")
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} modules import first in a fresh interpreter")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
