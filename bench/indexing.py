"""Indexing benchmark: how close ``ragtune evaluate`` comes to the embedding floor.

One process, side by side on the same machine:

1. the floor: embedding every distinct chunk text of the corpus once with the local model,
   nothing else (no cache, no store, no search);
2. a cold run of the retrieval evaluation (empty embedding cache, new collection);
3. a warm run (same output folder): the embedding cache and the collection are reused, so
   no text is embedded.

It prints the seconds of each and the ratios run / floor. The model is loaded before any
timing, so loading counts in none of them.

Usage: python bench/indexing.py [--docs DIR] [--golden FILE]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.chunking import get_chunker  # noqa: E402
from core.documents import load_documents  # noqa: E402
from core.evaluation import EvaluateOptions, evaluate_retrieval  # noqa: E402
from core.models import LocalEmbeddingModel  # noqa: E402

NORTHWIND = ROOT / "examples" / "data" / "northwind-benefits"


def main() -> int:
    """Run the benchmark and print its table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=str(NORTHWIND / "docs"))
    parser.add_argument("--golden", default=str(NORTHWIND / "golden_pages.jsonl"))
    args = parser.parse_args()

    model = LocalEmbeddingModel()
    model.embed_documents(["warm up"])  # load the weights outside every timing

    options = EvaluateOptions(show_progress=False)
    chunks = get_chunker(options.chunking_method, options.chunk_size, options.chunk_overlap).chunk(
        load_documents(args.docs).documents
    )
    unique = list(dict.fromkeys(c.text for c in chunks))
    t0 = time.perf_counter()
    model.embed_documents(unique)
    floor_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as out:
        cold = evaluate_retrieval(args.docs, args.golden, out_dir=out, embedding_model=model, options=options)
        warm = evaluate_retrieval(args.docs, args.golden, out_dir=out, embedding_model=model, options=options)

    print(f"corpus {args.docs}: {cold['corpus']['n_documents']} documents, {len(chunks)} chunks, "
          f"{len(unique)} distinct chunk texts; {cold['golden']['n_questions']} questions, "
          f"{len(cold['setups'])} search setups")
    print(f"{'run':<34} {'seconds':>9} {'texts embedded':>15} {'ratio to floor':>15}")
    print(f"{'floor: embed distinct chunk texts':<34} {floor_s:>9.2f} {len(unique):>15} {1.0:>15.2f}")
    for name, rep in (("evaluate, cold cache", cold), ("evaluate, warm cache", warm)):
        total = rep["timings_s"]["total_s"]
        print(f"{name:<34} {total:>9.2f} {rep['indexing']['embedding']['n_embedded']:>15} {total / floor_s:>15.2f}")
    emb = cold["indexing"]["embedding"]
    print(f"cold run: {emb['embed_seconds']:.2f} s of {cold['timings_s']['total_s']:.2f} s in the model "
          f"({cold['timings_s']['search_s']:.2f} s searching); warm run embedded "
          f"{warm['indexing']['embedding']['n_embedded']} texts, collection reused: {warm['indexing']['reused']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
