"""Vector-store benchmark: Milvus Lite, a Milvus server and PostgreSQL + pgvector, side by side.

One process, one corpus, the same vectors for every backend:

1. musique-mini (1,890 passages) is loaded and chunked (``recursive``, 256 tokens, overlap 32);
   every chunk and every golden question is embedded once with the local model through the
   persistent embedding cache (a file in the system's temporary folder by default, so a
   re-run embeds nothing);
2. for each backend (Milvus Lite in a temporary folder, a Milvus server, pgvector), a new
   collection is filled with the precomputed vectors and measured:

   * insert throughput in chunks/s: ``add_documents(chunks, vectors=...)`` then ``flush()``;
   * search latency p50 / p95 in ms over the golden questions, for ``vector`` and for
     ``hybrid`` with RRF (k = 60), ``k = 10``; one untimed search per backend and mode first,
     then the backends take turns question by question. Queries are looked up in memory, so
     the latency is the store's alone (no model, no cache);
   * ``recall@10`` of the vector search against exact brute-force cosine search with numpy on
     the same vectors: the fraction of the exact top 10 chunk ids the store returns, averaged
     over the questions (1.0 = exact; chunks tied with the 10th count, see
     :func:`recall_against_exact`).

It prints one table and the ratio of each backend's numbers to Milvus Lite's (insert: higher is
faster; latency: lower is faster). Collections are dropped at the end.

Services: the Milvus server is taken from ``RAGTUNE_TEST_MILVUS_URI`` and PostgreSQL from
``RAGTUNE_TEST_PG_DSN`` when they are set; otherwise ``scripts/services/milvus.sh`` and
``scripts/services/postgres.sh`` start them (PostgreSQL and pgvector must be installed:
``scripts/services/postgres.sh install``), and the ones this run started are stopped at the end.

Usage: python bench/vectorstores.py [--docs DIR] [--golden FILE] [--cache FILE]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlparse

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.chunking import get_chunker  # noqa: E402
from core.documents import load_documents  # noqa: E402
from core.golden import read_golden  # noqa: E402
from core.models import CachedEmbeddingModel, EmbeddingCache, LocalEmbeddingModel  # noqa: E402
from core.vectorstores import (  # noqa: E402
    MilvusConfig,
    MilvusLiteConfig,
    PGVectorConfig,
    get_vector_store,
    new_collection_name,
)

MUSIQUE = ROOT / "examples" / "data" / "musique-mini"
SERVICES = ROOT / "scripts" / "services"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "ragtune-bench" / "embeddings.sqlite"
#: Results per search, and the cut-off of recall against exact search.
TOP_K = 10
#: Chunking of the benchmark (method, chunk size in tokens, overlap in tokens).
CHUNKING = ("recursive", 256, 32)
#: Score difference under which a chunk counts as tied with the exact k-th (float32 rounding).
TIE_TOLERANCE = 1e-5


class LookupEmbeddingModel:
    """An embedding model that answers from precomputed vectors, so timed searches measure the
    store only.

    Args:
        model_id: the id of the model that computed the vectors.
        vectors: ``{text: float32 (dim,)}`` for every query that will be searched.

    Raises:
        KeyError: (from :meth:`embed_query` / :meth:`embed_documents`) a text with no vector.
    """

    def __init__(self, model_id: str, vectors: dict[str, np.ndarray]) -> None:
        self.model_id = model_id
        self._vectors = vectors
        self.embedding_dimension = int(next(iter(vectors.values())).shape[0])
        self.max_input_tokens = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return float32 ``(len(texts), dim)`` from the table."""
        if not texts:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        """Return float32 ``(dim,)`` from the table."""
        return self._vectors[text]


@dataclass
class BackendResult:
    """What was measured on one backend.

    Attributes:
        name: ``milvus-lite``, ``milvus`` or ``pgvector``.
        insert_chunks_per_s: chunks inserted per second, ``add_documents`` plus ``flush``.
        vector_p50_ms, vector_p95_ms: vector search latency percentiles in ms.
        hybrid_p50_ms, hybrid_p95_ms: hybrid (RRF, k = 60) search latency percentiles in ms.
        recall_at_10: mean fraction of the exact top 10 found by the vector search, in [0, 1].
    """

    name: str
    insert_chunks_per_s: float
    vector_p50_ms: float
    vector_p95_ms: float
    hybrid_p50_ms: float
    hybrid_p95_ms: float
    recall_at_10: float


# ------------------------------------------------------------------------------------ services


def _run_script(script: str, action: str) -> str:
    """Run ``scripts/services/<script> <action>`` and return its stdout.

    Raises:
        SystemExit: the script failed (its stderr is shown).
    """
    proc = subprocess.run(["bash", str(SERVICES / script), action], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"scripts/services/{script} {action} failed:\n{proc.stderr.strip()}")
    return proc.stdout


def _export_value(line: str) -> str:
    """The value of an ``export NAME=value`` line printed by a service script's ``env``."""
    return line.strip().split("=", 1)[1].strip("'\"")


def _port_open(uri: str) -> bool:
    """True when the host and port of ``uri`` (``http://host:port``) accept a TCP connection."""
    parsed = urlparse(uri)
    try:
        socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 19530), timeout=0.5).close()
        return True
    except OSError:
        return False


def milvus_uri(started: list[str]) -> str:
    """The Milvus server's URI: ``RAGTUNE_TEST_MILVUS_URI``, the running test server, or a test
    server started now (then ``milvus.sh`` is appended to ``started``)."""
    uri = os.environ.get("RAGTUNE_TEST_MILVUS_URI")
    if uri:
        return uri
    proc = subprocess.run(["bash", str(SERVICES / "milvus.sh"), "env"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode == 0 and _port_open(_export_value(proc.stdout)):
        return _export_value(proc.stdout)
    _run_script("milvus.sh", "start")
    started.append("milvus.sh")
    return _export_value(_run_script("milvus.sh", "env"))


def postgres_dsn(started: list[str]) -> str:
    """PostgreSQL's DSN: ``RAGTUNE_TEST_PG_DSN``, the running test cluster, or a test cluster
    started now (then ``postgres.sh`` is appended to ``started``)."""
    dsn = os.environ.get("RAGTUNE_TEST_PG_DSN")
    if dsn:
        return dsn
    proc = subprocess.run(["bash", str(SERVICES / "postgres.sh"), "env"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode == 0:
        return _export_value(proc.stdout)
    _run_script("postgres.sh", "start")
    started.append("postgres.sh")
    return _export_value(_run_script("postgres.sh", "env"))


# ---------------------------------------------------------------------------------- measuring


def _percentile_ms(latencies_s: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (linear interpolation) of latencies in seconds, in ms."""
    return float(np.percentile(np.asarray(latencies_s, dtype=np.float64), q)) * 1000.0


def exact_scores(chunk_vectors: np.ndarray, query_vectors: np.ndarray) -> np.ndarray:
    """Exact cosine similarities of every query with every chunk, by brute force.

    Args:
        chunk_vectors: float32 ``(n_chunks, dim)``.
        query_vectors: float32 ``(n_queries, dim)``.

    Returns:
        float64 ``(n_queries, n_chunks)`` in [-1, 1] (rows are L2-normalised here first; a zero
        row stays zero).
    """
    def unit(m: np.ndarray) -> np.ndarray:
        m = np.asarray(m, dtype=np.float64)
        return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)

    return unit(query_vectors) @ unit(chunk_vectors).T


def recall_against_exact(returned_ids: Sequence[str], scores: np.ndarray, index: dict[str, int], k: int) -> float:
    """Fraction of the exact top ``k`` that a search returned, in [0, 1].

    A returned chunk counts when its exact score reaches the exact ``k``-th score (less
    :data:`TIE_TOLERANCE`), so chunks tied with the ``k``-th (identical texts in several
    documents have identical vectors) count whichever of them a store returns.

    Args:
        returned_ids: the chunk ids the store returned (at most ``k``, distinct).
        scores: float ``(n_chunks,)``, the query's exact cosine similarities.
        index: chunk id -> column of ``scores``.
        k: the cut-off.

    Returns:
        ``min(k, counted) / k``; 1.0 when the search is exact.
    """
    kth = float(np.partition(scores, -k)[-k])
    counted = sum(1 for i in dict.fromkeys(returned_ids) if scores[index[i]] >= kth - TIE_TOLERANCE)
    return min(k, counted) / k


def measure(
    configs: Sequence[tuple[str, Any]],
    model: LookupEmbeddingModel,
    chunks: Sequence[Any],
    vectors: np.ndarray,
    questions: Sequence[str],
    scores: np.ndarray,
) -> list[BackendResult]:
    """Fill a new collection on each backend, time the inserts and the searches, then drop them.

    Inserts run one backend after the other. Searches are interleaved: for each mode and each
    question, every backend searches once in turn (after one untimed search per backend and
    mode), so a change of machine load during the run falls on all backends alike.

    Args:
        configs: ``(name, configuration)`` per backend (``MilvusLiteConfig``, ``MilvusConfig``,
            ``PGVectorConfig``).
        model: answers the questions' vectors.
        chunks: the chunks to insert.
        vectors: float32 ``(len(chunks), dim)``, their vectors.
        questions: the question texts searched.
        scores: float ``(len(questions), len(chunks))``, exact cosine similarities.

    Returns:
        One :class:`BackendResult` per backend, in the order of ``configs``.

    Raises:
        RuntimeError: a collection holds a different number of chunks than were inserted.
    """
    stores = []
    insert_s: list[float] = []
    latencies: dict[str, list[list[float]]] = {"vector": [], "hybrid": []}
    recalls: list[list[float]] = [[] for _ in configs]
    index = {c.chunk_id: i for i, c in enumerate(chunks)}
    try:
        for name, config in configs:
            store = get_vector_store(model, config, new_collection_name(prefix="ragtune_bench"))
            store.exists()  # connect (and start Milvus Lite) outside the timing
            stores.append(store)
            start = time.perf_counter()
            store.add_documents(chunks, vectors=vectors)
            store.flush()
            insert_s.append(time.perf_counter() - start)
            if store.count() != len(chunks):
                raise RuntimeError(f"{name}: collection holds {store.count()} chunks; {len(chunks)} were inserted")
        settings = {"vector": {"search_mode": "vector"},
                    "hybrid": {"search_mode": "hybrid", "ranker_strategy": "rrf", "ranker_k": 60}}
        for mode, kwargs in settings.items():
            latencies[mode] = [[] for _ in stores]
            for store in stores:
                store.search(questions[0], k=TOP_K, **kwargs)  # cold start, untimed
            for qi, question in enumerate(questions):
                for si, store in enumerate(stores):
                    start = time.perf_counter()
                    hits = store.search(question, k=TOP_K, **kwargs)
                    latencies[mode][si].append(time.perf_counter() - start)
                    if mode == "vector":
                        recalls[si].append(
                            recall_against_exact([h.chunk.chunk_id for h in hits], scores[qi], index, TOP_K)
                        )
    finally:
        for store in stores:  # drop every collection, even when one drop fails
            try:
                store.delete_collection()
            except Exception as exc:  # pymilvus and psycopg raise their own types
                print(f"could not drop collection {store.collection_name}: {exc}", file=sys.stderr)
            finally:
                store.close()
    return [
        BackendResult(
            name=name, insert_chunks_per_s=len(chunks) / insert_s[si],
            vector_p50_ms=_percentile_ms(latencies["vector"][si], 50),
            vector_p95_ms=_percentile_ms(latencies["vector"][si], 95),
            hybrid_p50_ms=_percentile_ms(latencies["hybrid"][si], 50),
            hybrid_p95_ms=_percentile_ms(latencies["hybrid"][si], 95),
            recall_at_10=float(np.mean(recalls[si])),
        )
        for si, (name, _config) in enumerate(configs)
    ]


# ------------------------------------------------------------------------------------- output


def print_table(results: Sequence[BackendResult]) -> None:
    """Print the measurements, then each backend's ratios to the first row (Milvus Lite)."""
    head = (f"{'backend':<12} {'insert chunks/s':>15} {'vector p50 ms':>14} {'vector p95 ms':>14} "
            f"{'hybrid p50 ms':>14} {'hybrid p95 ms':>14} {'recall@10 vs exact':>19}")
    print(head)
    for r in results:
        print(f"{r.name:<12} {r.insert_chunks_per_s:>15.0f} {r.vector_p50_ms:>14.2f} {r.vector_p95_ms:>14.2f} "
              f"{r.hybrid_p50_ms:>14.2f} {r.hybrid_p95_ms:>14.2f} {r.recall_at_10:>19.3f}")
    base = results[0]
    print()
    print(f"ratio to {base.name} (insert: > 1 is faster; latency: < 1 is faster)")
    print(head)
    for r in results:
        print(f"{r.name:<12} {r.insert_chunks_per_s / base.insert_chunks_per_s:>15.2f} "
              f"{r.vector_p50_ms / base.vector_p50_ms:>14.2f} {r.vector_p95_ms / base.vector_p95_ms:>14.2f} "
              f"{r.hybrid_p50_ms / base.hybrid_p50_ms:>14.2f} {r.hybrid_p95_ms / base.hybrid_p95_ms:>14.2f} "
              f"{r.recall_at_10 / base.recall_at_10:>19.3f}")


def main() -> int:
    """Run the benchmark and print its tables; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=str(MUSIQUE / "docs"), help="folder of documents")
    parser.add_argument("--golden", default=str(MUSIQUE / "golden.jsonl"), help="golden JSONL file (questions)")
    parser.add_argument("--cache", default=str(DEFAULT_CACHE), help=f"embedding cache file (default {DEFAULT_CACHE})")
    args = parser.parse_args()

    t0 = time.perf_counter()
    chunks = get_chunker(*CHUNKING).chunk(load_documents(args.docs).documents)
    questions = [q.question for q in read_golden(args.golden).questions]
    cache = EmbeddingCache(args.cache)
    model = CachedEmbeddingModel(LocalEmbeddingModel(), cache)
    chunk_vectors = model.embed_documents([c.text for c in chunks])
    question_vectors = model.embed_documents(questions)
    cache.close()
    prep_s = time.perf_counter() - t0
    lookup = LookupEmbeddingModel(model.model_id, dict(zip(questions, question_vectors)))
    scores = exact_scores(chunk_vectors, question_vectors)
    print(f"corpus {args.docs}: {len(chunks)} chunks ({'/'.join(map(str, CHUNKING))}), {len(questions)} questions, "
          f"{chunk_vectors.shape[1]}-dim vectors; embedded {model.n_embedded} texts, {model.n_cache_hits} from the "
          f"cache {args.cache} ({prep_s:.1f} s loading, chunking and embedding)")

    started: list[str] = []
    results: list[BackendResult] = []
    try:
        with tempfile.TemporaryDirectory(prefix="ragtune-bench-") as tmp:
            backends = [
                ("milvus-lite", MilvusLiteConfig(str(Path(tmp) / "milvus.db"))),
                ("milvus", MilvusConfig(uri=milvus_uri(started))),
                ("pgvector", PGVectorConfig(dsn=postgres_dsn(started))),
            ]
            results = measure(backends, lookup, chunks, chunk_vectors, questions, scores)
    finally:
        for script in reversed(started):
            _run_script(script, "stop")
    print()
    print_table(results)
    print(f"\ntotal {time.perf_counter() - t0:.1f} s; k = {TOP_K}; hybrid = RRF (k = 60); "
          f"services started by this run and stopped: {', '.join(started) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
