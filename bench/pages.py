"""Pages benchmark: rendering the history page over 1,000 stored runs and an evaluate page
with 1,000 questions, and ``GET /api/runs/latest`` with 1,000 runs in a local folder store,
side by side in one run with the time to read one stored report.

The data is made here with a seeded generator (runs of 3 setups over 50 questions; one run
of 1,000 questions with answers), in a temporary folder store; nothing is downloaded. Each
timed step runs ``--repeat`` times in interleaved rounds (every step once per round) so a slow
moment of the machine falls on all of them alike; one untimed round warms the caches. It
prints each step's median, p95 and fastest times and its ratio to reading one report, then
checks the goals: history page and evaluate page under 1 s (median), ``GET /api/runs/latest``
p95 under 50 ms.

It then prints each page kind's size in bytes, side by side: standalone (plotly.js inlined,
as ``report --html`` writes it and as every page was before the shared asset) and served
(``ragtune serve`` / the Functions: the page references the one shared plotly.js, fetched
once per browser and cached), with the ratio; goal: a served evaluate page of 49 questions
and 8 setups under 300 KB. The exit code is 1 when a goal is missed.

Usage: python bench/pages.py [--repeat N] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SETUPS = ("vector", "hybrid-rrf-k60", "hybrid-weighted-a0.5")
#: The default evaluate's eight setups, for the page sizes.
EIGHT_SETUPS = ("keyword", "keyword+rerank", "dense", "dense+rerank", "hybrid-rrf-k60", "hybrid-rrf-k60+rerank",
                "hybrid-weighted-a0.5", "hybrid-weighted-a0.5+rerank")
#: Largest served evaluate page of 49 questions and 8 setups, in bytes.
GOAL_PAGE_BYTES = 300_000
GOALS_S = {"history page (1,000 runs)": ("median", 1.0), "evaluate page (1,000 questions)": ("median", 1.0),
           "GET /api/runs/latest (1,000 runs)": ("p95", 0.050)}


def _top(rng: random.Random, rank: int | None) -> list[dict]:
    """Ten results as ``evaluate`` keeps them per question and setup (``top``)."""
    return [{"document": f"Benefits_Plan_{rng.randint(1, 7)}.pdf", "page": p, "pages": [p],
             "chunk_id": f"{rng.getrandbits(128):032x}", "score": round(rng.uniform(0, 20), 6),
             "relevant": i + 1 == rank}
            for i, p in enumerate(rng.randint(1, 200) for _ in range(10))]


def make_report(rng: random.Random, run_id: str, started: str, n_questions: int, answers: bool,
                setup_names: tuple[str, ...] = SETUPS, top: bool = False) -> dict:
    """A retrieval report in the stored format with random ranks and scores (with ``top``: the
    ten results of every question and setup, as ``evaluate`` keeps them)."""
    questions, ranks_by_setup = [], {s: [] for s in setup_names}
    for i in range(n_questions):
        ranks = {s: (rng.randint(1, 10) if rng.random() < 0.85 else None) for s in setup_names}
        for s in setup_names:
            ranks_by_setup[s].append(ranks[s])
        questions.append({"id": f"q{i}", "line": i + 1, "question": f"What does clause {i} of the policy say?",
                          "expected": [f"doc{i % 40}.pdf"], "first_relevant_rank": ranks})
        if top:
            questions[-1]["top"] = {s: _top(rng, ranks[s]) for s in setup_names}
    setups = []
    for s in setup_names:
        r = ranks_by_setup[s]
        means = {f"found@{k}": sum(1 for x in r if x is not None and x <= k) / len(r) for k in (1, 3, 5, 10)}
        means.update({f"recall@{k}": v for k, v in list(means.items())})
        means["mrr"] = sum(1 / x for x in r if x is not None) / len(r)
        setups.append({"name": s, "setup": {"search_mode": "vector" if s == "vector" else "hybrid"},
                       "metrics": {"doc": {"means": means, "n_scored": len(r), "n_unscorable": 0, "n_fallback": 0}},
                       "timings_ms": {"median": rng.uniform(2, 20), "p95": rng.uniform(20, 40), "n": len(r)}})
    report = {
        "schema_version": "1.0", "kind": "retrieval", "run_id": run_id, "started_at": started, "finished_at": started,
        "golden": {"path": "golden.jsonl", "sha256": "ab" * 32, "n_questions": n_questions, "warnings": []},
        "corpus": {"path": "docs", "n_documents": 40, "n_pages": 400, "n_chunks": 2000, "skipped": []},
        "indexing": {"chunking": {"method": "recursive", "chunk_size": rng.choice((128, 256)), "chunk_overlap": 32},
                     "embedding_model": "local:all-MiniLM-L6-v2", "vector_store": "milvus-lite"},
        "evaluation": {"top_k": 10, "ks": [1, 3, 5, 10], "grains": ["doc"], "rank_grain": "doc"},
        "setups": setups,
        "picks": {"finds_the_most": setup_names[1], "best_for_balance": setup_names[0], "best_for_time": setup_names[0],
                  "reason": None, "rules": {}},
        "questions": questions,
    }
    if answers:
        report["answers"] = {
            "generator": {"model_id": "extractive:local", "kind": "extractive", "k": 5, "setup": setup_names[1]},
            "metrics": [{"name": "unitxt.faithfulness", "scores": {"mean": 0.7, "ci_low": 0.68, "ci_high": 0.72},
                         "n_scored": n_questions, "n_failed": 0}],
            "n_questions": n_questions, "n_answered": n_questions, "n_failed": 0,
            "questions": [{"question_id": q["id"], "question": q["question"], "answer": "The clause says so. " * 8,
                           "reference": "so", "error": None,
                           "metrics": [{"name": "unitxt.faithfulness", "score": rng.random()}]} for q in questions],
        }
    return report


def make_experiment(rng: random.Random, n: int) -> dict:
    """An experiment report of ``n`` evaluations over two varying parameters, with intervals."""
    board = []
    for i in range(n):
        score = round(rng.uniform(0.4, 0.9), 4)
        board.append({"rank": None, "trial": i, "key": f"k{i}", "status": "complete", "score": score,
                      "ci_low": score - 0.1, "ci_high": score + 0.08, "round": 1 + i // 4,
                      "duration_s": rng.uniform(5, 60),
                      "parameters": {"chunking_method": "recursive", "chunk_size": rng.choice((128, 256, 512)),
                                     "number_of_chunks": rng.choice((3, 5, 10)), "search_mode": "hybrid"},
                      "cost": {"texts_embedded": rng.randint(0, 900), "tokens": None}})
    return {"schema_version": "1.1", "kind": "experiment", "experiment_id": "20270101T000000Z-e0e0e0",
            "objective": "mrr", "golden": {"path": "golden.jsonl", "n_questions": 49}, "corpus": {"n_documents": 7},
            "optimizer": {"name": "gam", "seed": 0, "max_evals": n}, "leaderboard": board}


def make_comparison(rng: random.Random) -> dict:
    """A chunking comparison of four techniques at three sizes, headings embedded and not."""
    methods, builds = ("recursive", "sentence", "fixed", "markdown"), []
    for m in methods:
        for size in (64, 128, 256):
            for headings in (True, False):
                builds.append({"key": f"{m}-{size}-{'headings' if headings else 'plain'}", "method": m,
                               "chunk_size": size,
                               "chunk_overlap": None, "embed_headings": headings, "status": "ok",
                               "counted": rng.randint(25, 45), "n_scored": 49, "n_chunks": rng.randint(300, 3500),
                               "mean_chunk_chars": 500.0, "mean_handed_chars": 3900.0, "median_search_ms": 3.0,
                               "build_s": 30.0})
    techniques = []
    for m in methods:
        best = max((b for b in builds if b["method"] == m), key=lambda b: b["counted"])
        techniques.append({"method": m, "best_build": best["key"], "counted": best["counted"], "n_scored": 49,
                           "tie": True, "vs_best": {"only_best": 3, "only_this": 2, "p_value": 1.0}})
    techniques.sort(key=lambda t: -t["counted"])
    techniques[0]["vs_best"] = None
    return {"kind": "chunking-comparison", "run_id": "20270101T000000Z-c0c0c0",
            "golden": {"path": "golden.jsonl", "n_questions": 49}, "corpus": {"path": "docs", "n_documents": 7},
            "settings": {"budget_chars": 4000, "search_name": "vector", "counting": "found", "grain": "page",
                         "alpha": 0.05, "embedding_model": "local:bge-small-en-v1.5", "rule": "results handed over"},
            "builds": builds, "techniques": techniques, "ranking": [t["method"] for t in techniques],
            "best": techniques[0], "ties": [t["method"] for t in techniques], "pairs": [], "left_out": [],
            "failures": [], "timings_s": {"total_s": 600.0}}


def page_sizes(store: Any, rng: random.Random, big: dict) -> bool:
    """Print each page kind's bytes, standalone (plotly.js inlined) and served (the shared
    asset referenced); True when the 49-question evaluate page meets :data:`GOAL_PAGE_BYTES`."""
    from core.reports.pages import Links, render_compare, render_experiment, render_report, render_run
    from core.reports.pages.render import plotly_asset
    from core.reports.pages.site import render_history, history_entries

    small = make_report(rng, "20270102T000000Z-4949aa", "2027-01-02T00:00:00+00:00", 49, answers=True,
                        setup_names=EIGHT_SETUPS, top=True)
    other = make_report(rng, "20270103T000000Z-4949bb", "2027-01-03T00:00:00+00:00", 49, answers=False,
                        setup_names=EIGHT_SETUPS, top=True)
    entries = history_entries(store, "ab" * 32)
    kinds: dict[str, Callable[[Links | None], str]] = {
        "evaluate (49 questions, 8 setups)": lambda links: render_run(small, links),
        "evaluate (1,000 questions, 3 setups)": lambda links: render_run(big, links),
        "experiment (24 evaluations)": lambda links: render_experiment(make_experiment(random.Random(1), 24),
                                                                       links=links),
        "chunking comparison (24 builds)": lambda links: render_report(make_comparison(random.Random(2)), links),
        f"history ({len(entries):,} runs)": lambda links: render_history(entries, "ab" * 32, links),
        "compare (49 questions, 8 setups)": lambda links: render_compare(small, other, links),
    }
    asset = len(plotly_asset().body)
    print(f"\npage sizes: standalone (plotly.js inlined) against served (one shared plotly.js of {asset:,} bytes, "
          "fetched once and cached)")
    print(f"{'page':<38} {'standalone B':>13} {'served B':>10} {'x smaller':>10}")
    print("-" * 74)
    served_sizes = {}
    for name, build in kinds.items():
        alone, served = len(build(None).encode("utf-8")), len(build(Links()).encode("utf-8"))
        served_sizes[name] = served
        print(f"{name:<38} {alone:>13,} {served:>10,} {alone / served:>9.1f}x")
    value = served_sizes["evaluate (49 questions, 8 setups)"]
    ok = value < GOAL_PAGE_BYTES
    print(f"\ngoal served evaluate page (49 questions, 8 setups): {value:,} B < {GOAL_PAGE_BYTES:,} B: "
          f"{'met' if ok else 'MISSED'}")
    return ok


def main() -> int:
    """Build the data, time each step, print the table; 1 when a goal is missed."""
    import shutil

    try:
        return _run()
    finally:
        shutil.rmtree(os.environ.get("RAGTUNE_REPORTS", ""), ignore_errors=True)


def _run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()

    os.environ["RAGTUNE_REPORTS"] = tmp = tempfile.mkdtemp(prefix="ragtune-bench-pages-")
    import azure.functions as func

    import function_app
    from core.reports import LocalFiles, ReportStore
    from core.reports.pages import history_page, render_run

    rng = random.Random(0)
    store = ReportStore(LocalFiles(tmp))
    t0 = time.perf_counter()
    for i in range(args.runs):
        day = f"2026-{i // 28 % 12 + 1:02d}-{i % 28 + 1:02d}"
        run_id = f"{day.replace('-', '')}T{i % 24:02d}{i % 60:02d}00Z-{i:06x}"
        store.save_run(run_id, make_report(rng, run_id, f"{day}T{i % 24:02d}:00:00+00:00", 50, answers=False))
    big = make_report(rng, "20270101T000000Z-b19b19", "2027-01-01T00:00:00+00:00", 1000, answers=True)
    print(f"data: {args.runs} runs of 50 questions and one of 1,000 in {tmp} "
          f"({time.perf_counter() - t0:.1f} s to write)", file=sys.stderr)
    latest = {f.get_function_name(): f for f in function_app.app.get_functions()}["latest_run"].get_user_function()
    request = func.HttpRequest("GET", "/api/runs/latest", body=b"", route_params={}, params={})
    one = store.run_ids()[-1]

    steps = {
        "read one report": lambda: store.load_run(one),
        "history page (1,000 runs)": lambda: history_page(store, "ab" * 32),
        "evaluate page (1,000 questions)": lambda: render_run(big),
        "GET /api/runs/latest (1,000 runs)": lambda: latest(request),
    }
    times: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(args.repeat + 1):
        for name, step in steps.items():
            start = time.perf_counter()
            result = step()
            elapsed = time.perf_counter() - start
            if round_:
                times[name].append(elapsed)
            if name.startswith("GET") and result.status_code != 200:
                raise SystemExit(f"GET /api/runs/latest answered {result.status_code}")
    base = statistics.median(times["read one report"])
    print(f"\n{'step':<36} {'median ms':>10} {'p95 ms':>9} {'fastest ms':>11} {'x read one':>11}")
    print("-" * 81)
    for name, values in times.items():
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
        med = statistics.median(values)
        print(f"{name:<36} {med * 1000:>10.1f} {p95 * 1000:>9.1f} {ordered[0] * 1000:>11.1f} {med / base:>10.1f}x")
    failed = False
    print()
    for name, (stat, goal) in GOALS_S.items():
        values = sorted(times[name])
        value = statistics.median(values) if stat == "median" else values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]
        ok = value < goal
        failed = failed or not ok
        print(f"goal {name}: {stat} {value * 1000:.1f} ms < {goal * 1000:.0f} ms: {'met' if ok else 'MISSED'}")
    failed = not page_sizes(store, rng, big) or failed
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
