"""Targets benchmark: the same index in three engines, evaluated in one run.

squad-mini (87 passages, 293 questions) is chunked as ``ragtune evaluate`` chunks it (recursive,
256 tokens, overlap 32, titles in front) and embedded once with the local default model through
the embedding cache; the same chunks and vectors are then written into

- a user-style PostgreSQL + pgvector table (``chunk_id`` bigserial, ``body``, ``source_path``
  as ``docs/<name>``, ``embedding`` with an HNSW cosine index, ``body_tsv`` in ``english``),
- a Qdrant collection in the client's local mode (LangChain-style payload ``page_content`` and
  ``metadata.source``, an unnamed cosine vector),
- ragtune's own Milvus Lite collection (built from ``--docs`` by ``evaluate``'s steps),

and ``core.evaluation.targets.evaluate_targets`` searches all three with the golden questions in
one run (ragtune's reranker off). Every engine's dense setup searches the same query vectors
against the same chunk vectors, so found@5 and MRR must agree; the bench says whether they do
and, where a question's first right rank differs, whether the two engines' scores at that rank
tie (an order among equal scores is each engine's own). It prints each target's search latency
per question (median, p95 and mean of the questions' searches, measured in the run, each engine
taking its turn setup by setup) and its ratio to ragtune's Milvus Lite collection.

PostgreSQL comes from ``--pg-dsn`` or ``RAGTUNE_TEST_PG_DSN`` (``scripts/services/postgres.sh``);
the table is dropped at the end.

Usage: python bench/targets.py [--docs DIR] [--golden FILE] [--pg-dsn DSN] [--cache FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.chunking import get_chunker  # noqa: E402
from core.documents import load_documents  # noqa: E402
from core.evaluation.targets import TargetsOptions, evaluate_targets  # noqa: E402
from core.models import CachedEmbeddingModel, EmbeddingCache  # noqa: E402
from core.models.local import local_embedding_model  # noqa: E402
from core.settings import Settings  # noqa: E402
from core.targets.mapping import FieldMapping  # noqa: E402
from core.targets.spec import TargetSpec  # noqa: E402

SQUAD = ROOT / "examples" / "data" / "squad-mini"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "ragtune-bench" / "embeddings.sqlite"
#: Chunking of the benchmark, as evaluate's defaults (method, size, overlap in tokens).
CHUNKING = ("recursive", 256, 32)
#: The grain and measures compared.
GRAIN = "doc"
MEASURES = ("found@5", "mrr")


def write_pgvector(dsn: str, table: str, chunks: list[Any], vectors: np.ndarray) -> None:
    """A user-style pgvector table holding ``chunks`` with ``vectors``."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (chunk_id bigserial PRIMARY KEY, body text NOT NULL, source_path text, "
                     "embedding vector(384), body_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) "
                     "STORED)")
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {table} (body, source_path, embedding) VALUES (%s, %s, %s::vector)",
                            [(c.text, f"docs/{c.document_id}", "[" + ",".join(repr(float(x)) for x in v) + "]")
                             for c, v in zip(chunks, vectors)])
        conn.execute(f"CREATE INDEX ON {table} USING hnsw (embedding vector_cosine_ops)")
        conn.execute(f"ANALYZE {table}")


def write_qdrant(folder: Path, chunks: list[Any], vectors: np.ndarray) -> None:
    """A Qdrant collection ``squad`` (local mode) holding ``chunks`` with ``vectors``."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(folder))
    client.create_collection("squad", vectors_config=models.VectorParams(size=vectors.shape[1],
                                                                          distance=models.Distance.COSINE))
    client.upsert("squad", [models.PointStruct(id=i, vector=[float(x) for x in v],
                                               payload={"page_content": c.text, "metadata": {"source": c.document_id}})
                            for i, (c, v) in enumerate(zip(chunks, vectors))])
    client.close()


def differences(report: dict[str, Any], names: list[str]) -> list[str]:
    """The questions whose first right rank differs between the dense setups ``names``, each with
    whether the scores at the ranks involved tie."""
    out = []
    for q in report["questions"]:
        ranks = {n: q["first_relevant_rank"].get(n) for n in names}
        if len(set(ranks.values())) <= 1:
            continue
        tops = {n: [round(h["score"], 5) for h in q["top"].get(n) or []] for n in names}
        shown = ", ".join(f"{n}: {r}" for n, r in ranks.items())
        tie = any(len(set(s)) < len(s) for s in tops.values())
        out.append(f"question {q['id']}: first right rank {shown}" + ("; tied scores in the top 10" if tie else
                                                                       "; no tied scores: an approximate search"))
    return out


def print_table(report: dict[str, Any]) -> list[str]:
    """Print every setup's measures and search latency per question; returns the dense setups."""
    rows = [s for s in report["setups"] if s["status"] == "ok"]
    ragtune = next((s for s in rows if s["name"] == "ragtune/dense"), None)
    base = ragtune["timings_ms"]["search"]["median"] if ragtune else None
    width = max(len(s["name"]) for s in rows) + 2
    header = (f"{'setup':<{width}}{'found@5':>9}{'mrr':>8}   {'search ms per question: median':>31}{'p95':>8}"
              f"{'mean':>8}{'x ragtune dense':>17}")
    print(header)
    print("-" * len(header))
    for s in rows:
        means = s["metrics"][GRAIN]["means"]
        t = s["timings_ms"]["search"]
        ratio = f"{t['median'] / base:.2f}" if base else "-"
        print(f"{s['name']:<{width}}{means['found@5']:>9.4f}{means['mrr']:>8.4f}   {t['median']:>31.3f}"
              f"{t['p95']:>8.3f}{t['mean']:>8.3f}{ratio:>17}")
    for s in report["setups"]:
        if s["status"] != "ok":
            print(f"{s['name']:<{width}}failed: {s.get('error')}")
    return [s["name"] for s in rows if s["name"].endswith("/dense")]


def main() -> int:
    """Run the benchmark and print its table; returns 0, or 1 when the dense setups disagree."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=str(SQUAD / "docs"), help="folder of documents")
    parser.add_argument("--golden", default=str(SQUAD / "golden.jsonl"), help="golden JSONL file")
    parser.add_argument("--pg-dsn", default=os.environ.get("RAGTUNE_TEST_PG_DSN"), help="PostgreSQL with pgvector")
    parser.add_argument("--cache", default=str(DEFAULT_CACHE), help=f"embedding cache file (default {DEFAULT_CACHE})")
    args = parser.parse_args()
    if not args.pg_dsn:
        parser.error("give --pg-dsn or set RAGTUNE_TEST_PG_DSN (scripts/services/postgres.sh start)")
    t0 = time.perf_counter()
    Path(args.cache).parent.mkdir(parents=True, exist_ok=True)
    model = CachedEmbeddingModel(local_embedding_model(), EmbeddingCache(args.cache))
    chunks = get_chunker(*CHUNKING).chunk(load_documents(args.docs).documents)
    vectors = np.asarray(model.embed_documents([c.text for c in chunks]), dtype=np.float32)
    prep_s = time.perf_counter() - t0
    table = f"bench_team_chunks_{uuid.uuid4().hex[:8]}"
    settings = Settings.from_env({})
    with tempfile.TemporaryDirectory(prefix="ragtune-bench-targets-") as tmp:
        write_pgvector(args.pg_dsn, table, chunks, vectors)
        try:
            write_qdrant(Path(tmp) / "qdrant", chunks, vectors)
            specs = [TargetSpec("team-pgvector", "pgvector", args.pg_dsn, table,
                                FieldMapping(document="source_path", document_prefix="docs/"), source="bench"),
                     TargetSpec("qdrant", "qdrant", str(Path(tmp) / "qdrant"), "squad", source="bench")]
            print(f"corpus {args.docs}: {len(chunks)} chunks ({'/'.join(map(str, CHUNKING))}), {vectors.shape[1]}-dim "
                  f"vectors of {model.model_id} ({prep_s:.1f} s loading, chunking and embedding; "
                  f"{model.n_cache_hits} from the cache)")
            start = time.perf_counter()
            # the same cached model builds ragtune's collection (its vectors are the ones written above)
            report = evaluate_targets(args.golden, specs, settings=settings, out_dir=Path(tmp) / "out",
                                      docs=args.docs, embedding_model=model, reranker=None,
                                      options=TargetsOptions(rank_grain=GRAIN, show_progress=False,
                                                             chunking=CHUNKING))
            run_s = time.perf_counter() - start
        finally:
            import psycopg

            with psycopg.connect(args.pg_dsn, autocommit=True) as conn:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
    print(f"{report['golden']['n_questions']} questions, ranked at the {GRAIN} grain; one run over "
          f"{len(report['targets'])} targets in {run_s:.1f} s\n")
    for t in report["targets"]:
        d = t["description"] or {}
        print(f"target {t['name']}: {d.get('engine')} {d.get('index')}: {d.get('n_chunks')} chunks, "
              f"{d.get('n_documents')} documents, fingerprint {d.get('fingerprint')}; status {t['status']}")
    print()
    dense = print_table(report)
    values = {n: tuple(next(s for s in report["setups"] if s["name"] == n)["metrics"][GRAIN]["means"][m]
                       for m in MEASURES) for n in dense}
    same = len(set(values.values())) == 1
    print(f"\ndense setups ({', '.join(dense)}): found@5 and MRR "
          f"{'equal on every engine' if same else 'differ'}")
    for line in differences(report, dense):
        print(f"  {line}")
    print(f"\ntotal {time.perf_counter() - t0:.1f} s; search latency: one search per question, after one untimed "
          "search per setup; dense query vectors embedded once per question before the searches")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
