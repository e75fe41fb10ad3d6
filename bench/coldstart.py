"""Cold-start benchmark: what ``import function_app`` costs next to the libraries it must not import.

The Functions host imports ``function_app`` when an instance starts, before the first request
is served. Heavy libraries (unitxt, pygam, pymilvus, torch, sentence-transformers,
docling-core) are imported inside the functions that need them, never at module import time.
This measures, side by side in one run, the import time of:

1. ``function_app`` (the app, its blueprints and everything they import at module level);
2. each heavy library on its own (docling-core: ``docling_core.types.doc``, the document types
   core uses), and all of them together.

Each import runs in a fresh interpreter (``sys.executable -c ...``), so nothing is already in
``sys.modules``; the time is measured inside the child around the import alone (interpreter
start-up is left out). The rounds are interleaved (every import once per round, in a rotated
order) so a slow moment of the machine falls on all of them alike; one untimed round first
warms the file cache. It prints the median and fastest times and each one's ratio to
``function_app``, then which heavy modules are in ``sys.modules`` after ``import function_app``
(it should be none: the exit code is 1 otherwise).

Usage: python bench/coldstart.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Each heavy library by its top-level package (what the sys.modules check looks for) and the
# module timed: docling_core's package itself is empty, its document types are what core uses.
HEAVY = {
    "unitxt": "unitxt",
    "pygam": "pygam",
    "pymilvus": "pymilvus",
    "torch": "torch",
    "sentence_transformers": "sentence_transformers",
    "docling_core": "docling_core.types.doc",
}
APP = "function_app"
ALL_HEAVY = ",".join(HEAVY.values())

_CHILD = """
import importlib, json, sys, time
heavy = {heavy!r}
t0 = time.perf_counter()
try:
    for name in sys.argv[1].split(","):
        importlib.import_module(name)
except ImportError as exc:
    print(json.dumps({{"error": f"{{type(exc).__name__}}: {{exc}}"}}))
    raise SystemExit(0)
seconds = time.perf_counter() - t0
print(json.dumps({{"seconds": seconds, "loaded": [h for h in heavy if h in sys.modules]}}))
"""


def import_once(target: str) -> dict:
    """Import ``target`` (one module, or several joined by commas) in a fresh interpreter.

    Returns:
        ``{"seconds": float, "loaded": [heavy modules in sys.modules after the import]}``, or
        ``{"error": str}`` when a module is not installed.

    Raises:
        RuntimeError: the child failed for another reason (its stderr is in the message).
    """
    done = subprocess.run([sys.executable, "-c", _CHILD.format(heavy=tuple(HEAVY)), target], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"importing {target} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    """Run the benchmark and print its table; returns 1 when ``function_app`` loads a heavy module."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds (default 5)")
    args = parser.parse_args()

    targets = [APP, *HEAVY.values(), ALL_HEAVY]
    times: dict[str, list[float]] = {t: [] for t in targets}
    errors: dict[str, str] = {}
    loaded_by_app: set[str] = set()
    for round_no in range(args.repeat + 1):  # round 0 warms the file cache and is not counted
        shift = round_no % len(targets)
        for target in targets[shift:] + targets[:shift]:
            if target in errors:
                continue
            result = import_once(target)
            if "error" in result:
                errors[target] = result["error"]
                continue
            if target == APP:
                loaded_by_app.update(result["loaded"])
            if round_no:
                times[target].append(result["seconds"])

    if APP in errors:
        print(f"cannot import {APP}: {errors[APP]}")
        return 1
    app_median = statistics.median(times[APP])
    print(f"{args.repeat} rounds, each import in a fresh interpreter, interleaved; seconds inside the "
          f"child around the import (interpreter start-up excluded); python {sys.version.split()[0]}")
    print(f"{'import':<28} {'median s':>9} {'min s':>8} {'ratio to function_app':>22}")
    for target in targets:
        label = "all six heavy, together" if target == ALL_HEAVY else target
        if target in errors:
            print(f"{label:<28} {'not installed: ' + errors[target]}")
            continue
        median = statistics.median(times[target])
        print(f"{label:<28} {median:>9.3f} {min(times[target]):>8.3f} {median / app_median:>22.2f}")
    print(f"heavy modules in sys.modules after 'import {APP}': "
          f"{', '.join(sorted(loaded_by_app)) if loaded_by_app else 'none'}")
    return 1 if loaded_by_app else 0


if __name__ == "__main__":
    sys.exit(main())
