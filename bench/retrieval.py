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
"""

from __future__ import annotations

import argparse
import json
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


def main() -> int:
    """Run the benchmark and print its tables and goals; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", choices=list(DATASETS), default=["northwind", "squad-mini"])
    parser.add_argument("--questions", type=int, default=None, help="keep the first N questions of each golden file")
    parser.add_argument("--out", help="output folder to keep (default: a temporary one)")
    parser.add_argument("--json", help="also write the per-setup numbers to this file")
    parser.add_argument("--models", nargs="+", help="local embedding models to run (default: every installed one)")
    args = parser.parse_args()
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
