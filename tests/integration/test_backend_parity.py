"""The same retrieval evaluation on every vector-store backend gives the same vector-mode recall.

squad-mini's first :data:`N_QUESTIONS` golden lines are evaluated in vector mode (one setup)
against Milvus Lite (embedded, in a temporary folder), a Milvus server (``milvus-lite
server``) and PostgreSQL with pgvector, with one local embedding model for all three. Each run
has its own output folder; the server runs start from a copy of the Milvus Lite run's
embedding cache, so every backend indexes byte-identical vectors (and the model embeds the
corpus once). Milvus indexes them with FLAT (exact search), so the doc-grain ``recall@5``
must agree within :data:`TOLERANCE`.

Reference: the Milvus Lite run (FLAT index, exact cosine ranking). pgvector searches an HNSW
index (approximate); on a collection this small its top 10 matches the exact ranking, which
the tolerance checks.

The servers come from ``RAGTUNE_TEST_MILVUS_URI`` and ``RAGTUNE_TEST_PG_DSN``
(``scripts/test.sh`` starts both); without them the tests fail, they are never skipped.
Collections created on the servers are dropped at the end of the module.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.support.services import service

from core.evaluation import EvaluateOptions, evaluate_retrieval
from core.models import LocalEmbeddingModel
from core.vectorstores import MilvusConfig, PGVectorConfig, SearchSetup, get_vector_store
from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Golden lines evaluated (the first ones of squad-mini's golden file).
N_QUESTIONS = 60
#: Largest allowed difference of doc-grain recall@5 between two backends.
TOLERANCE = 0.01
#: Backends compared with Milvus Lite.
SERVERS = ("milvus-server", "pgvector")


def _seed_cache(source_out: Path, target_out: Path) -> None:
    """Copy the embedding cache of the run in ``source_out`` into ``target_out`` (the
    ``cache/embeddings.sqlite`` of ``evaluate_retrieval``'s output folder) with SQLite's backup
    API, which also copies what is still in the write-ahead log."""
    target = target_out / "cache" / "embeddings.sqlite"
    target.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(source_out / "cache" / "embeddings.sqlite")
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


@pytest.fixture(scope="module")
def model() -> LocalEmbeddingModel:
    """One local embedding model shared by every backend's run."""
    return LocalEmbeddingModel()


@pytest.fixture(scope="module")
def squad_subset(squad_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A golden file holding the first :data:`N_QUESTIONS` lines of squad-mini's."""
    path = first_questions(squad_dir / "golden.jsonl", N_QUESTIONS, tmp_path_factory.mktemp("golden"))
    return path


@pytest.fixture(scope="module")
def server_configs() -> dict[str, Any]:
    """The server backends' configurations, from the test script's variables."""
    return {
        "milvus-server": MilvusConfig(uri=service("RAGTUNE_TEST_MILVUS_URI", "milvus.sh")),
        "pgvector": PGVectorConfig(dsn=service("RAGTUNE_TEST_PG_DSN", "postgres.sh")),
    }


@pytest.fixture(scope="module")
def reports(
    squad_dir: Path,
    squad_subset: Path,
    model: LocalEmbeddingModel,
    server_configs: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, dict[str, Any]]]:
    """The vector-mode report of each backend, keyed ``milvus-lite``, ``milvus-server``,
    ``pgvector``; each run has its own output folder, the server runs' seeded with the Milvus
    Lite run's embedding cache. The servers' collections are dropped afterwards, also when a
    run fails."""
    options = EvaluateOptions(show_progress=False, setups=[SearchSetup("vector")])
    configs: dict[str, Any] = {"milvus-lite": None, **server_configs}  # None: Lite in the out dir
    done: dict[str, dict[str, Any]] = {}
    lite_out = None
    try:
        for backend, config in configs.items():
            out = tmp_path_factory.mktemp(f"out-{backend}")
            if lite_out is None:
                lite_out = out
            else:
                _seed_cache(lite_out, out)
            done[backend] = evaluate_retrieval(
                squad_dir / "docs", squad_subset, out_dir=out,
                embedding_model=model, vector_store_config=config, options=options, reranker=None,
            )
        yield done
    finally:
        for backend in SERVERS:
            if backend in done:
                store = get_vector_store(model, server_configs[backend], done[backend]["indexing"]["collection"])
                try:
                    store.delete_collection()
                finally:
                    store.close()


def _vector_doc_metrics(report: dict[str, Any]) -> dict[str, Any]:
    """The doc-grain aggregate of the report's only setup, which must be ``dense``."""
    (setup,) = report["setups"]
    assert setup["name"] == "dense"
    return setup["metrics"]["doc"]


def test_each_backend_ran_on_the_same_index(reports):
    """Every run used its own backend, the same chunks and collection name, scored every
    question, and the server runs embedded nothing (their vectors came from the seeded cache)."""
    assert {b: r["indexing"]["vector_store"] for b, r in reports.items()} == {
        "milvus-lite": "milvus-lite", "milvus-server": "milvus", "pgvector": "pgvector",
    }
    lite = reports["milvus-lite"]
    for report in reports.values():
        assert report["golden"]["n_questions"] == N_QUESTIONS
        assert report["corpus"]["n_chunks"] == lite["corpus"]["n_chunks"]
        assert report["indexing"]["collection"] == lite["indexing"]["collection"]  # same indexing parameters
        assert _vector_doc_metrics(report)["n_scored"] == _vector_doc_metrics(lite)["n_scored"] == N_QUESTIONS
    for backend in SERVERS:  # the vectors came from the seeded cache: nothing was embedded again
        assert reports[backend]["indexing"]["embedding"]["n_embedded"] == 0


@pytest.mark.parametrize("backend", SERVERS)
def test_vector_recall_at_5_matches_milvus_lite(reports, backend):
    """Reference: Milvus Lite's exact (FLAT) vector search on the same embeddings."""
    expected = _vector_doc_metrics(reports["milvus-lite"])["means"]["recall@5"]
    actual = _vector_doc_metrics(reports[backend])["means"]["recall@5"]
    assert actual == pytest.approx(expected, abs=TOLERANCE), (
        f"{backend}: doc recall@5 {actual:.4f}, Milvus Lite {expected:.4f}"
    )
