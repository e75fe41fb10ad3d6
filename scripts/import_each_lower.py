"""Import each module of the lower packages of ``core`` first, in a fresh interpreter.

A module that imports its neighbours at its top instead of inside its functions must still import
on its own, whatever was imported before it: an import circle shows up as an ``ImportError``
(a partially initialised module) only when the circle's modules are imported in one order. For
every module under the given folders (default: the packages below evaluation, see
:data:`PACKAGES`) this runs ``python -c "import <module>"`` in a fresh interpreter and reports a
failure with its last line of error; it also lists the heavy libraries (:data:`HEAVY`) each module
loads at its import, so that hoisting an import can be checked not to pull one in.

Usage:
    PYTHONPATH=. python scripts/import_each_lower.py [FOLDER ...] [--heavy] [--jobs N]

Exits 1 when a module fails to import.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The folders and top-level modules checked by default.
PACKAGES = ("core/golden", "core/reports", "core/models", "core/targets", "core/vectorstores", "core/documents",
            "core/chunking", "core/metrics", "core/rag", "core/workspace.py", "core/settings.py", "core/inputs.py",
            "core/errors.py", "core/limits.py", "core/redaction.py", "core/exact.py", "core/heap.py",
            "core/addresses.py", "core/text.py")
#: Libraries kept out of the Functions app's and the command line's import time
#: (tests/functions/test_app.py and tests/unit/test_cli_package.py list them).
HEAVY = ("torch", "sentence_transformers", "pymilvus", "milvus_lite", "docling", "unitxt", "pygam", "transformers",
         "jinja2", "markupsafe", "plotly", "pandas", "starlette", "uvicorn", "mlflow", "onnxruntime",
         "qdrant_client", "azure.search", "azure.functions", "psycopg", "boto3", "matplotlib")

PROBE = """
import json, sys
import {module}
heavy = {heavy!r}
print(json.dumps(sorted({{h for h in heavy for m in sys.modules if m == h or m.startswith(h + ".")}})))
"""


def module_names(folders: list[str]) -> list[str]:
    """The dotted names of every ``.py`` module under ``folders`` (a folder or a ``.py`` file)."""
    names = []
    for folder in folders:
        path = ROOT / folder
        files = [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
        for file in files:
            names.append(".".join(file.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"))
    return names


def import_first(module: str) -> tuple[str, str | None, list[str]]:
    """``(module, error or None, heavy libraries loaded)`` of importing ``module`` first."""
    done = subprocess.run([sys.executable, "-c", PROBE.format(module=module, heavy=HEAVY)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return module, lines[-1] if lines else f"exit {done.returncode}", []
    return module, None, json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Import every module first; print failures (and, with ``--heavy``, heavy imports)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", default=list(PACKAGES), help="folders or modules, from the root")
    parser.add_argument("--heavy", action="store_true", help="list the heavy libraries each module loads")
    parser.add_argument("--jobs", type=int, default=2, help="interpreters at once")
    args = parser.parse_args(argv)
    names = module_names(args.folders)
    failed = 0
    with ThreadPoolExecutor(args.jobs) as pool:
        for module, error, heavy in pool.map(import_first, names):
            if error is not None:
                failed += 1
                print(f"FAIL {module}: {error}")
            elif args.heavy and heavy:
                print(f"{module}: {' '.join(heavy)}")
    print(f"{len(names)} modules, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
