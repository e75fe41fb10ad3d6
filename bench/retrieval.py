"""Retrieval benchmark: every setup of ``ragtune evaluate`` for each local embedding model,
on the bundled data, side by side in one run.

For northwind (ranked at the page grain) and squad-mini (ranked at the doc grain), and on
request musique-mini (doc grain, a check on data no default was chosen on), it runs one
evaluation with both local embedding models (bge-small-en-v1.5 and all-MiniLM-L6-v2, when
installed) and the local cross-encoder, so every setup (keyword; dense and hybrid on each
model's vectors; each also reranked) is measured on the same chunks, the same questions and
the same machine. It prints found@1/5/10, MRR and nDCG@10 at the ranking grain, and the
median time per question a user waits (query embedding + search + rerank) with its parts;
then the goals and whether they are met. Nothing is tuned here: the defaults of
``ragtune evaluate`` are used as they are.

Goals: northwind page grain, found@5 of the best setup at least 0.80; squad-mini doc grain,
found@5 of a reranked setup at least 0.99.

Usage: python bench/retrieval.py [--data northwind squad-mini musique-mini] [--questions N]
[--models ID ...] [--out DIR]
(``--questions N`` keeps the first N questions of each golden file, for a quick look; the
goals are stated on every question.)

``--cold-warm`` measures instead what a user waits for: the default ``ragtune evaluate`` (the
command, in a fresh process, as a user runs it: the default embedding model, the local
reranker, the extractive answers) on each data set, first cold (a fresh output folder, so
empty caches), then warm (the same folder again). It prints the wall time of each and the
share of each step (``timings_s`` of the report), the rerank pairs scored and read from the
cache, and whether the warm run's numbers equal the cold run's. With ``--before CHECKOUT``
the same command of another checkout of ragtune (for example the main branch) runs cold
first, side by side, and its numbers are compared with the cold run's. Goal: squad-mini cold
in at most 60 s. ``--rerank-passes`` times the local cross-encoder's ways of scoring the
same pairs side by side (one pair per pass on onnxruntime's threads, as before; one pair per
pass over two single-threaded workers; padded batches sorted by length) with each one's
largest score difference from scoring each pair alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.evaluation import EvaluateOptions, evaluate_retrieval  # noqa: E402
from core.metrics.retrieval import TOP_K, found_name  # noqa: E402
from core.vectorstores.rerank import RERANK_DEPTH  # noqa: E402
from core.models.local import installed_local_embedding_models, local_embedding_model, local_reranker  # noqa: E402

DATA = ROOT / "examples" / "data"
#: name -> (documents, golden file, ranking grain, goal on found@5 or None, whether the goal needs a reranked setup)
DATASETS = {
    "northwind": (DATA / "northwind-benefits" / "docs", DATA / "northwind-benefits" / "golden_pages.jsonl", "page", 0.80, False),
    "squad-mini": (DATA / "squad-mini" / "docs", DATA / "squad-mini" / "golden.jsonl", "doc", 0.99, True),
    # a third data set, with no goal, that no default was chosen on
    "musique-mini": (DATA / "musique-mini" / "docs", DATA / "musique-mini" / "golden.jsonl", "doc", None, False),
}


def _golden(path: Path, n: int | None, out: Path) -> Path:
    if not n:
        return path
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:n]
    short = out / f"{path.stem}-first{n}.jsonl"
    short.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return short


def run(name: str, n_questions: int | None, out: Path, model_ids: list[str]) -> dict:
    """Evaluate one dataset with the local models ``model_ids`` and the reranker; return the report."""
    docs, golden, grain, _, _ = DATASETS[name]
    models = [local_embedding_model(m) for m in model_ids]
    options = EvaluateOptions(show_progress=False, rank_grain=grain)
    t0 = time.perf_counter()
    report = evaluate_retrieval(docs, _golden(golden, n_questions, out), out_dir=out / name, embedding_models=models,
                                reranker=local_reranker(), options=options)
    report["_wall_s"] = time.perf_counter() - t0
    return report


def table(name: str, report: dict) -> list[str]:
    """The printed rows of one dataset."""
    grain = report["evaluation"]["rank_grain"]
    n = report["setups"][0]["metrics"][grain]["n_scored"] if report["setups"] else 0
    lines = [f"\n{name}: {report['corpus']['n_documents']} documents, {report['corpus']['n_chunks']} chunks, "
             f"{n} questions scored at the {grain} grain; wall {report['_wall_s']:.0f} s",
             f"{'setup':<44} {'found@1':>8} {'found@5':>8} {'found@10':>9} {'mrr':>6} {'ndcg@10':>8} "
             f"{'wait ms':>8} {'embed':>7} {'search':>7} {'rerank':>8}"]
    lines.append("-" * len(lines[-1]))
    for s in report["setups"]:
        if s["status"] != "ok":
            lines.append(f"{s['key']:<44} failed: {s['error']}")
            continue
        m = s["metrics"][grain]["means"]
        t = s["timings_ms"]
        part = lambda x: f"{x['median']:.1f}" if x else "-"  # noqa: E731
        lines.append(f"{s['key']:<44} {found_name(m, 1):>8.3f} {found_name(m, 5):>8.3f} {found_name(m, 10):>9.3f} "
                     f"{m['mrr']:>6.3f} {m['ndcg@10']:>8.3f} {t['total']['median']:>8.1f} {part(t['query_embedding']):>7} "
                     f"{part(t['search']):>7} {part(t['rerank']):>8}")
    return lines


def goal(name: str, report: dict) -> str:
    """Whether the dataset's goal is met, with the setup that meets it best."""
    _, _, grain, target, reranked = DATASETS[name]
    if target is None:
        return f"{name}: no goal (a check on data no default was chosen on)"
    rows = [s for s in report["setups"] if s["status"] == "ok" and (not reranked or s["setup"]["reranker"])]
    if not rows:
        return f"{name}: no setup to judge the goal by"
    best = max(rows, key=lambda s: found_name(s["metrics"][grain]["means"], 5))
    value = found_name(best["metrics"][grain]["means"], 5)
    which = "reranked setup" if reranked else "setup"
    return (f"{name}: best {which} found@5 {value:.3f} ({best['key']}), goal >= {target:.2f}: "
            f"{'met' if value >= target - 1e-9 else 'NOT met'}")


#: Steps of ``timings_s``, in the order they run, with the names printed.
STEPS = [("load_s", "load documents"), ("chunk_s", "chunk"), ("index_s", "embed and index chunks"),
         ("embed_questions_s", "embed questions (timed)"), ("search_s", "search and rerank"),
         ("rerank_s", "  of which rerank"), ("answers_s", "answers")]
#: The goal of --cold-warm: squad-mini's default evaluate, cold, in at most this many seconds.
COLD_GOAL_S = 60.0


def cli_evaluate(checkout: Path, docs: Path, golden: Path, out: Path) -> tuple[float, dict]:
    """Run ``ragtune evaluate`` of ``checkout`` with its defaults in a fresh process (no
    RAGTUNE_ settings from this environment); return its wall time in seconds and its report."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTUNE_")}
    env["PYTHONPATH"] = str(checkout)
    command = [sys.executable, "-m", "core.cli", "evaluate", "--docs", str(docs), "--golden", str(golden),
               "--out", str(out), "--json"]
    t0 = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=checkout, timeout=4 * 3600)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, json.loads(done.stdout)


def numbers(report: dict) -> dict:
    """What must not change between runs: every setup's metrics and counts, the per-question
    top results, and the answer metrics."""
    setups = {s["key"]: {k: s.get(k) for k in ("status", "metrics", "found_top10", "found_first", "n_scored")}
              for s in report["setups"]}
    top = {q["id"]: q["top"] for q in report["questions"]}
    answers = report.get("answers") or {}
    return {"setups": setups, "top": top, "skipped": [s["key"] for s in report.get("skipped_setups") or []],
            "answers": [(m["name"], m["scores"]) for m in answers.get("metrics") or []]}


def cold_warm(names: list[str], out: Path, before: Path | None) -> list[str]:
    """The --cold-warm runs and their printed lines."""
    lines = []
    for name in names:
        docs, golden, _, _, _ = DATASETS[name]
        runs = []
        if before is not None:
            runs.append(("before, cold",) + cli_evaluate(before, docs, golden, out / f"{name}-before"))
        runs.append(("cold",) + cli_evaluate(ROOT, docs, golden, out / name))
        runs.append(("warm",) + cli_evaluate(ROOT, docs, golden, out / name))
        report = runs[-1][2]
        lines.append(f"\n{name}, the default evaluate: {report['golden']['n_questions']} questions, "
                     f"{report['corpus']['n_chunks']} chunks, {len(report['setups'])} setups, ranked at the "
                     f"{report['evaluation']['rank_grain']} grain")
        lines.append(f"{'step':<26}" + "".join(f"{label:>22}" for label, _, _ in runs))
        for key, label in STEPS:
            cells = []
            for _, wall, r in runs:
                value = r["timings_s"].get(key)
                cells.append(f"{value:9.1f} s {100 * value / wall:5.1f} %" if value is not None else f"{'-':>17}")
            lines.append(f"{label:<26}" + "".join(f"{c:>22}" for c in cells))
        lines.append(f"{'total (wall, a process)':<26}" + "".join(f"{wall:9.1f} s {'':>7}" for _, wall, _ in runs))
        for label, _, r in runs:
            cache = (r.get("reranker") or {}).get("cache")
            if cache:
                lines.append(f"{label}: rerank pairs {cache['pairs_scored']} scored, {cache['pairs_from_cache']} from "
                             f"the cache, {cache['score_seconds']:.1f} s in the model")
        cold = next(r for label, _, r in runs if label == "cold")
        same = numbers(cold) == numbers(report)
        lines.append(f"warm numbers equal cold: {'yes' if same else 'NO'}")
        if before is not None:
            lines.append(f"cold numbers equal before: {'yes' if numbers(runs[0][2]) == numbers(cold) else 'NO'}")
            lines.append(f"cold speed-up against before: {runs[0][1] / runs[1][1]:.1f}x")
        for label, _, r in runs:
            p = r["picks"]
            lines.append(f"{label} picks: {p['finds_the_most']}, {p['best_for_balance']}, {p['best_for_time']}")
        if name == "squad-mini":
            wall = next(w for label, w, _ in runs if label == "cold")
            lines.append(f"goal: squad-mini cold in at most {COLD_GOAL_S:.0f} s: {wall:.0f} s, "
                         f"{'met' if wall <= COLD_GOAL_S else 'NOT met'}")
    return lines


def rerank_passes(names: list[str], n_pairs: int) -> list[str]:
    """Time the local cross-encoder's ways of scoring the same pairs, side by side."""
    from core.models.onnx import OnnxCrossEncoder

    docs, golden, _, _, _ = DATASETS[names[0]]
    passages = [p.read_text(encoding="utf-8") for p in sorted(docs.iterdir()) if p.is_file()]
    queries = [json.loads(line)["question"] for line in golden.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = [(queries[i % len(queries)], passages[(7 * i) % len(passages)]) for i in range(n_pairs)]
    ways = [("one pair a pass, onnxruntime's threads", dict(workers=1)),
            ("one pair a pass, two workers", dict(workers=2)),
            ("batches of 8 by length, onnxruntime's threads", dict(workers=1, batch_size=8)),
            ("batches of 8 by length, two workers", dict(workers=2, batch_size=8))]
    models = [(label, OnnxCrossEncoder(**kw)) for label, kw in ways]
    for _, model in models:
        model.score_pairs(pairs[:2])  # loads
    times: dict[str, list[float]] = {label: [] for label, _ in ways}
    scores: dict[str, list[float]] = {}
    for _ in range(3):  # in turn, three times: the fastest of each
        for label, model in models:
            t0 = time.perf_counter()
            scores[label] = model.score_pairs(pairs)
            times[label].append(time.perf_counter() - t0)
    reference = scores[ways[0][0]]
    lines = [f"\nthe local cross-encoder on {n_pairs} {names[0]} pairs (fastest of 3, in turn):",
             f"{'way':<48} {'ms/pair':>8} {'vs first':>9} {'max |score diff|':>17}"]
    first = min(times[ways[0][0]])
    for label, _ in ways:
        best = min(times[label])
        diff = max(abs(a - b) for a, b in zip(scores[label], reference))
        lines.append(f"{label:<48} {1000 * best / n_pairs:>8.1f} {first / best:>8.2f}x {diff:>17.6f}")
    return lines


def main() -> int:
    """Run the benchmark and print its tables and goals; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", choices=list(DATASETS), default=None,
                        help="data sets (default northwind squad-mini; with --cold-warm or --rerank-passes squad-mini)")
    parser.add_argument("--questions", type=int, default=None, help="keep the first N questions of each golden file")
    parser.add_argument("--out", help="output folder to keep (default: a temporary one)")
    parser.add_argument("--json", help="also write the per-setup numbers to this file")
    parser.add_argument("--models", nargs="+", help="local embedding models to run (default: every installed one)")
    parser.add_argument("--cold-warm", action="store_true",
                        help="time the default evaluate command cold, then warm (see the module's docstring)")
    parser.add_argument("--before", metavar="CHECKOUT", help="with --cold-warm: also run this checkout's evaluate, cold")
    parser.add_argument("--rerank-passes", type=int, metavar="N_PAIRS", default=None,
                        help="time the cross-encoder's ways of scoring N_PAIRS pairs side by side")
    args = parser.parse_args()
    if args.cold_warm or args.rerank_passes:
        names = args.data or ["squad-mini"]
        lines = []
        if args.rerank_passes:
            lines += rerank_passes(names, args.rerank_passes)
        if args.cold_warm:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(args.out or tmp)
                out.mkdir(parents=True, exist_ok=True)
                lines += cold_warm(names, out, Path(args.before).resolve() if args.before else None)
        print("\n".join(lines))
        return 0
    args.data = args.data or ["northwind", "squad-mini"]
    model_ids = args.models or installed_local_embedding_models()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        out.mkdir(parents=True, exist_ok=True)
        reports = {name: run(name, args.questions, out, model_ids) for name in args.data}
    lines = [f"models: {', '.join(model_ids)}; reranker {local_reranker().model_id} "
             f"(first stage {RERANK_DEPTH}, keep {TOP_K})"
             + (f"; first {args.questions} questions only" if args.questions else "")]
    for name, report in reports.items():
        lines += table(name, report)
    lines.append("")
    lines += [goal(name, report) for name, report in reports.items()]
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps({n: r["setups"] for n, r in reports.items()}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
