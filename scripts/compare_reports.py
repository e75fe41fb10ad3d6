"""Compare two report JSONs (``ragtune optimize --json``, ``ragtune evaluate --json``, or a
stored ``report.json``) in every value but what differs between any two runs: timings, ids,
dates and the output folder.

Used to show that a change keeps the numbers: run the same command with a fixed seed on the
tree before and after it, each into its own output folder, then::

    python scripts/compare_reports.py before.json after.json

Left out, wherever they appear: the keys in :data:`IGNORED_KEYS` (seconds, dates, run and
experiment ids, where the report was written, package versions). Each report's output
folder (``--out``, read from its ``location``, or given with ``--out-dirs``) is replaced by
``<out>`` in every string, so the paths in store bindings compare. Every other value (metrics,
picks, configurations, counts, the study's trials) must be equal; floats exactly.

Exit status: 0 when the reports agree, 1 when they differ (each difference is printed with its
path, at most ``--most``), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterator

#: Keys whose values differ between two runs of the same command (left out wherever they are).
IGNORED_KEYS = frozenset({
    "experiment_id", "run_id", "started_at", "finished_at", "location", "versions",
    "timings", "timings_s", "timings_ms", "duration_s", "duration_seconds", "seconds", "load_s",
    "score_seconds",  # the reranker cache's wall-clock seconds in the model
})


def out_dir_of(report: dict[str, Any]) -> str | None:
    """The output folder of a report, from its ``location`` (``<out>/experiments/<id>/report.json``
    or ``<out>/retrieval/runs/<id>/report.json``), or None."""
    location = report.get("location")
    if not isinstance(location, str):
        return None
    parts = location.replace("\\", "/").split("/")
    return "/".join(parts[:-3]) if len(parts) > 3 else None


def normalised(value: Any, out_dir: str | None) -> Any:
    """``value`` without :data:`IGNORED_KEYS` and with ``out_dir`` replaced by ``<out>``."""
    if isinstance(value, dict):
        return {k: normalised(v, out_dir) for k, v in value.items() if k not in IGNORED_KEYS}
    if isinstance(value, list):
        return [normalised(v, out_dir) for v in value]
    if isinstance(value, str) and out_dir:
        return value.replace(out_dir, "<out>")
    return value


def differences(a: Any, b: Any, path: str = "") -> Iterator[str]:
    """One line per value that differs between ``a`` and ``b``, with its path."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            where = f"{path}.{key}"
            if key not in a:
                yield f"{where}: only in the second"
            elif key not in b:
                yield f"{where}: only in the first"
            else:
                yield from differences(a[key], b[key], where)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield f"{path}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            yield from differences(x, y, f"{path}[{i}]")
    elif a != b or type(a) is not type(b):
        yield f"{path}: {a!r:.80} != {b!r:.80}"


def count_values(value: Any) -> int:
    """How many leaf values ``value`` holds."""
    if isinstance(value, dict):
        return sum(count_values(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_values(v) for v in value)
    return 1


def _load(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SystemExit(f"error: {path}: {exc}") from None
    if not isinstance(data, dict):
        raise SystemExit(f"error: {path} is not a report (a JSON object)")
    return data


def main(argv: list[str] | None = None) -> int:
    """Compare the two reports named on the command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--out-dirs", nargs=2, metavar=("FIRST", "SECOND"),
                        help="the output folders of the two runs (default: read from each report's location)")
    parser.add_argument("--most", type=int, default=50, help="differences printed at most (default 50)")
    args = parser.parse_args(argv)
    try:
        first, second = _load(args.first), _load(args.second)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    outs = args.out_dirs or (out_dir_of(first), out_dir_of(second))
    a, b = normalised(first, outs[0]), normalised(second, outs[1])
    found = list(differences(a, b))
    summary = {k: a.get(k) for k in ("objective",) if k in a}
    if isinstance(a.get("counts"), dict):
        summary["counts"] = a["counts"]
    if isinstance(a.get("best"), dict):
        summary["best"] = {"key": a["best"].get("key"), "score": a["best"].get("score")}
    print(f"compared {count_values(a)} values of {args.first} and {count_values(b)} of {args.second} "
          f"(left out: {', '.join(sorted(IGNORED_KEYS))})")
    if summary:
        print("first report: " + json.dumps(summary, sort_keys=True))
    if not found:
        print("identical: every metric, pick, configuration and count agrees")
        return 0
    print(f"{len(found)} differences:")
    for line in found[:args.most]:
        print(f"  {line}")
    if len(found) > args.most:
        print(f"  ... and {len(found) - args.most} more")
    return 1


if __name__ == "__main__":
    sys.exit(main())
