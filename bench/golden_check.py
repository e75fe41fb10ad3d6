"""Golden check benchmark: a 20 MB golden file with an error on every line.

Side by side in one run, each in a fresh process (so peak memory is that check's alone):

1. ``ragtune check FILE`` (the CLI, bounded: the first 100 problems of each kind);
2. ``POST /api/golden/check`` with the file as its body (the function called directly, as the
   host would);
3. the golden blob trigger on the file as an uploaded blob (result stored in a local report
   store);
4. for comparison, ``ragtune check FILE --all --json`` (every problem in full).

It prints, for each, the seconds of the check (imports excluded), the process's peak resident
memory and the size of the result (printed output, HTTP body or stored check), and their ratios
to the goals: under 60 s, under 500 MB and under 1 MB.

Usage: python bench/golden_check.py [--mb 20] [--no-all]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_S, GOAL_MB, GOAL_BYTES = 60.0, 500.0, 1_000_000


def write_golden(path: Path, n_bytes: int) -> int:
    """Write a golden file of about ``n_bytes`` bytes, one error on each line; returns the lines.

    The errors cycle through six kinds: an unknown field, no ``expected``, a line that is not
    JSON, a page 0, a question that is not a string, and an id given before.
    """
    kinds = [
        lambda i: json.dumps({"id": f"q{i}", "question": f"What does plan {i} cover?", "expected": ["plan.pdf"],
                              "type": "factual"}),
        lambda i: json.dumps({"id": f"q{i}", "question": f"Who pays for item {i} of the plan?"}),
        lambda i: '{"id": "q%d", "question": "Is line %d valid JSON?", "expected": ["plan.pdf"]' % (i, i),
        lambda i: json.dumps({"id": f"q{i}", "question": f"Where is clause {i}?", "expected": ["plan.pdf#page=0"]}),
        lambda i: json.dumps({"id": f"q{i}", "question": i, "expected": ["plan.pdf"]}),
        lambda i: json.dumps({"id": "q0", "question": f"Which form is number {i}?", "expected": ["plan.pdf"]}),
    ]
    n = size = 0
    with path.open("w", encoding="utf-8") as fh:
        while size < n_bytes:
            line = kinds[n % len(kinds)](n + 1) + "\n"
            fh.write(line)
            size += len(line.encode("utf-8"))
            n += 1
    return n


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def child(kind: str, golden: str, work: str) -> None:
    """Run one check in this process; print ``{"seconds", "peak_mb", "result_bytes"}`` as JSON."""
    data = Path(golden).read_bytes()
    if kind in ("cli", "cli-all"):
        from core.cli import main

        args = ["check", golden] + (["--all", "--json"] if kind == "cli-all" else [])
        out = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out):
            main(args)
        seconds = time.perf_counter() - t0
        size = len(out.getvalue().encode("utf-8"))
    elif kind == "http":
        import azure.functions as func

        import function_app

        fn = {f.get_function_name(): f for f in function_app.app.get_functions()}["check_golden_http"]
        request = func.HttpRequest("POST", "/api/golden/check", body=data, params={"name": "golden.jsonl"})
        t0 = time.perf_counter()
        response = fn.get_user_function()(request)
        seconds = time.perf_counter() - t0
        size = len(response.get_body())
    elif kind == "blob":
        import azure.functions as func

        import function_app

        fn = {f.get_function_name(): f for f in function_app.app.get_functions()}["check_golden_blob"]
        stream = func.blob.InputStream(data=data, name="golden/bench/golden.jsonl", length=len(data))
        del data
        t0 = time.perf_counter()
        user = fn.get_user_function()
        user = getattr(user, "client_function", user)  # behind the Durable client middleware
        asyncio.run(user(stream, None))  # a file with errors starts nothing: no client is called
        seconds = time.perf_counter() - t0
        from core.golden.checks import check_key

        size = (Path(work) / check_key("bench/golden.jsonl")).stat().st_size
    else:
        raise SystemExit(f"unknown kind {kind!r}")
    print(json.dumps({"seconds": seconds, "peak_mb": _peak_mb(), "result_bytes": size}))


def main() -> int:
    """Run the benchmark and print its table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0, help="size of the golden file, in MB (10^6 bytes)")
    parser.add_argument("--no-all", action="store_true", help="skip the unbounded --all comparison")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "GOLDEN", "WORK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0

    runs = [("CLI check", "cli"), ("HTTP POST /api/golden/check", "http"), ("blob trigger check", "blob")]
    if not args.no_all:
        runs.append(("CLI check --all --json (comparison)", "cli-all"))
    with tempfile.TemporaryDirectory() as work:
        golden = Path(work) / "golden.jsonl"
        n_lines = write_golden(golden, int(args.mb * 1_000_000))
        size = golden.stat().st_size
        print(f"golden file: {size:,} bytes, {n_lines:,} lines, one error on each (six kinds in turn)")
        env = {**os.environ, "RAGTUNE_OUT_DIR": work, "RAGTUNE_REPORTS": work,
               "RAGTUNE_GOLDEN_MAX_BYTES": str(max(size, 20 * 1024 * 1024))}
        env.pop("RAGTUNE_STORAGE_CONNECTION", None)
        print(f"{'run':38} {'seconds':>8} {'/60 s':>6} {'peak MB':>8} {'/500 MB':>8} {'result bytes':>13} {'/1 MB':>7}")
        for label, kind in runs:
            proc = subprocess.run([sys.executable, __file__, "--child", kind, str(golden), work], env=env, cwd=ROOT,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{label:38} failed: {proc.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{label:38} {r['seconds']:8.1f} {r['seconds'] / GOAL_S:6.2f} {r['peak_mb']:8.0f} "
                  f"{r['peak_mb'] / GOAL_MB:8.2f} {r['result_bytes']:13,} {r['result_bytes'] / GOAL_BYTES:7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
