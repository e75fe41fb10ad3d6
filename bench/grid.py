"""The per-question score tables the optimizer benchmark replays from.

For each data set (northwind-benefits, squad-mini's and musique-mini's first 50 questions under
``examples/data``) every
valid configuration of :func:`wide_space` is evaluated once, retrieval only (no answers), and
its per-question objective scores (``mrr`` at the rank grain by default) are written to
``<out>/grid-<data set>-<metric>-<scope>.json``:
``{version, data_set, metric, question_ids, n_valid, grid_s, configurations{key: config},
scores{key: [score or None per question] or None (failed)}, errors{key: message},
timings{key: {retrieve_s, index_s, total_s}}}``. A re-run reads the table; the per-configuration
results, the embedding and rerank caches and the Milvus Lite collections stay in ``<out>``, so
a stopped grid run continues where it stopped.

Usage: python bench/grid.py [--data-sets a,b,c] [--metric NAME] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.optimization import Parameter, SearchSpace  # noqa: E402
from core.optimization.parameters import PARAMETER_KINDS, PARAMETER_NAMES  # noqa: E402

DATA = ROOT / "examples" / "data"
#: The three data sets of the benchmark, by folder under ``examples/data``.
DATA_SETS = ("northwind-benefits", "squad-mini", "musique-mini")
DEFAULT_OUT = ROOT / ".bench-cache" / "optimizer-grid"
MINILM = "local:all-MiniLM-L6-v2"
BGE = "local:bge-small-en-v1.5"
RERANKER = "local:ms-marco-MiniLM-L-12-v2"
#: Questions kept per data set (the first N of the golden file), so the grid, every
#: configuration reranked on a shared 2-core machine, stays feasible; the others keep all.
QUESTIONS = {"squad-mini": 50, "musique-mini": 50}
#: Version of the grid table's layout.
GRID_VERSION = 1


def wide_space() -> SearchSpace:
    """The benchmark's space: recursive chunking (128 or 256 tokens, no overlap), both local
    embedding models, dense or hybrid search (RRF k=60, or weighted alpha 0.5), top_k
    (``number_of_chunks``) 3, 5, 8 or 10, no reranker or the local cross-encoder with a
    retrieval depth of 10 or 20: 4 indexes x 3 searches x 4 top_k x 3 reranking choices = 144
    configurations."""
    values: dict[str, tuple[Any, ...]] = {
        "chunking_method": ("recursive",), "chunk_size": (128, 256), "chunk_overlap": (0,),
        "embedding_model": (MINILM, BGE), "number_of_chunks": (3, 5, 8, 10), "search_mode": ("vector", "hybrid"),
        "ranker_strategy": ("rrf", "weighted"), "ranker_k": (60,), "ranker_alpha": (0.5,),
        "foundation_model": ("extractive",), "vector_store": ("milvus-lite",),
        "reranker": ("none", RERANKER), "retrieval_depth": (10, 20),
    }
    from core.rag.template import DEFAULT_CONTEXT_TEMPLATE, DEFAULT_SYSTEM_MESSAGE, DEFAULT_USER_MESSAGE

    values.update({"system_message_text": (DEFAULT_SYSTEM_MESSAGE,), "context_template_text": (DEFAULT_CONTEXT_TEMPLATE,),
                   "user_message_text": (DEFAULT_USER_MESSAGE,)})
    return SearchSpace([Parameter(n, PARAMETER_KINDS[n], values[n]) for n in PARAMETER_NAMES],
                       {MINILM: 256, BGE: 512})


def grid_path(out: Path, data_set: str, metric: str, scope: str) -> Path:
    """The table's file for ``data_set``, ``metric`` and a scope digest (corpus, questions, space)."""
    return out / f"grid-{data_set}-{metric.replace('@', '_at_')}-{hashlib.sha256(scope.encode()).hexdigest()[:12]}.json"


def evaluate_grid(data_set: str, metric: str, out: Path) -> dict[str, Any]:
    """Evaluate every configuration of :func:`wide_space` on ``data_set`` (or read its table)
    and return the table (see the module docstring)."""
    from core.evaluation.single import Corpus, EvaluationContext, run_single_evaluation
    from core.golden import read_golden
    from core.models.cache import CachedReranker, EmbeddingCache
    from core.models.local import local_embedding_model, local_reranker

    folder = DATA / data_set
    golden = read_golden(folder / "golden.jsonl")
    keep = QUESTIONS.get(data_set)
    if keep is not None and keep < len(golden.questions):
        import dataclasses

        digest = hashlib.sha256(f"{golden.sha256}\0first {keep}".encode()).hexdigest()
        golden = dataclasses.replace(golden, questions=golden.questions[:keep], sha256=digest)
    corpus = Corpus.load(folder / "docs")
    space = wide_space()
    path = grid_path(out, data_set, metric, "\0".join((corpus.fingerprint, golden.sha256, space.fingerprint())))
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    work = out / data_set
    work.mkdir(parents=True, exist_ok=True)
    models = {MINILM: local_embedding_model(MINILM), BGE: local_embedding_model(BGE)}
    # rerank scores kept by (model, query, passage) across configurations, as evaluate keeps them
    reranker = CachedReranker(local_reranker(RERANKER), EmbeddingCache(work / "cache" / "rerank.sqlite"))
    context = EvaluationContext(out_dir=work, embedding_models=models, with_answers=False,
                                rerankers={RERANKER: reranker})
    configs = space.valid_configurations()
    ids = [q.id for q in golden.questions]
    table: dict[str, Any] = {"version": GRID_VERSION, "data_set": data_set, "metric": metric, "question_ids": ids,
                             "n_valid": space.n_valid, "configurations": {}, "scores": {}, "errors": {}, "timings": {}}
    t0 = time.perf_counter()
    try:
        for i, config in enumerate(configs, start=1):
            result = run_single_evaluation(dict(config), corpus, golden, context=context)
            key = config.key
            table["configurations"][key] = config.to_dict()
            per = (result.get("per_question") or {})
            values = (per.get("scores") or {}).get(metric) if result["status"] == "ok" else None
            if values is None:
                table["errors"][key] = result.get("error") or f"no per-question {metric!r}"
            else:
                by_id = dict(zip(per["ids"], values))
                values = [by_id.get(q) for q in ids]
            table["scores"][key] = values
            table["timings"][key] = {k: (result.get("timings") or {}).get(k) for k in ("retrieve_s", "index_s", "total_s")}
            if i % 12 == 0 or i == len(configs):
                print(f"  {data_set} grid {i}/{len(configs)}: {time.perf_counter() - t0:.0f} s", file=sys.stderr,
                      flush=True)
    finally:
        context.close()
    table["grid_s"] = round(time.perf_counter() - t0, 1)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(table, allow_nan=False), encoding="utf-8")
    tmp.replace(path)
    return table


def main() -> int:
    """Evaluate (or read) the grid of every data set asked for; prints one line per data set."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-sets", default=",".join(DATA_SETS))
    parser.add_argument("--metric", default="mrr")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for data_set in args.data_sets.split(","):
        table = evaluate_grid(data_set, args.metric, out)
        ok = sum(v is not None for v in table["scores"].values())
        print(f"{data_set}: {ok} of {table['n_valid']} configurations scored on {len(table['question_ids'])} "
              f"questions in {table['grid_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
