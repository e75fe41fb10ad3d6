"""The vector-store contract, run against every backend: Milvus Lite (embedded), a Milvus
server (Milvus Lite's binary on TCP, ``scripts/services/milvus.sh``) and PostgreSQL with
pgvector, both started by ``scripts/test.sh``.

Vectors come from a lookup-table embedding model (``tests/support/vectors.py``), so every
ranking below is computed by hand.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from tests.support.services import service

from core.chunking.base import Chunk, make_chunk_id
from core.errors import ConfigError, IndexingError, StoreError
from core.vectorstores import (
    MilvusConfig,
    MilvusLiteConfig,
    PGVectorConfig,
    collection_name_for,
    get_vector_store,
    new_collection_name,
)
from tests.support.vectors import TEXTS, chunks, docs, table_model

pytestmark = pytest.mark.integration

BACKENDS = ["milvus-lite", "milvus-server", "pgvector"]


def config_for(backend: str, tmp_path):
    """The configuration of ``backend`` (services come from the test script's variables)."""
    if backend == "milvus-lite":
        return MilvusLiteConfig(str(tmp_path / "m.db"))
    if backend == "milvus-server":
        return MilvusConfig(uri=service("RAGTUNE_TEST_MILVUS_URI", "milvus.sh"))
    return PGVectorConfig(dsn=service("RAGTUNE_TEST_PG_DSN", "postgres.sh"))


def _close(store) -> None:
    store.delete_collection()
    store.close()


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture()
def store(backend, tmp_path):
    s = get_vector_store(table_model(), config_for(backend, tmp_path), f"ragtune_test_{uuid.uuid4().hex[:12]}")
    yield s
    _close(s)


def test_insert_count_and_dense_order(store):
    assert not store.exists() and store.count() == 0
    assert store.add_documents(chunks()) == 4
    store.flush()
    assert store.exists() and store.count() == 4
    hits = store.search("zebra", k=3, search_mode="vector")
    # cosine with [1,0,0]: c1 1.0, c2 0.8, c3 0.6, c4 0.0
    assert docs(hits) == ["c1.txt", "c2.txt", "c3.txt"]
    assert [round(h.score, 5) for h in hits] == [1.0, 0.8, 0.6]
    assert [h.rank for h in hits] == [1, 2, 3]
    top = hits[0].chunk
    assert top.pages == [1] and top.headings == ["H"] and top.text == TEXTS["c1"]
    assert top.sequence_number == 0 and top.chunk_id == make_chunk_id("c1.txt", 0, TEXTS["c1"])


def test_keyword_search_ranks_by_term_frequency(store):
    store.add_documents(chunks())
    store.flush()
    hits = store.search("zebra", k=4, search_mode="keyword")
    assert docs(hits) == ["c3.txt", "c1.txt"]  # twice, then once; no other chunk holds the word
    assert hits[0].score > hits[1].score > 0  # one convention: non-negative, higher is better
    assert docs(store.search("markets", k=4, search_mode="keyword")) == ["c4.txt"]


def test_hybrid_fusion_hand_computed(store):
    store.add_documents(chunks())
    store.flush()
    # dense top 3 [c1, c2, c3]; keyword top 2 [c3, c1]
    rrf = store.search("zebra", k=3, search_mode="hybrid", ranker_strategy="rrf", ranker_k=60)
    # c1 = 1/61 + 1/62 = 0.032522, c3 = 1/63 + 1/61 = 0.032266, c2 = 1/62 = 0.016129
    assert docs(rrf) == ["c1.txt", "c3.txt", "c2.txt"]
    assert [h.score for h in rrf] == [
        pytest.approx(1 / 61 + 1 / 62, rel=1e-4), pytest.approx(1 / 63 + 1 / 61, rel=1e-4), pytest.approx(1 / 62, rel=1e-4)
    ]
    dense_only = store.search("zebra", k=3, search_mode="hybrid", ranker_strategy="weighted", ranker_alpha=1.0)
    assert docs(dense_only) == ["c1.txt", "c2.txt", "c3.txt"]
    assert [round(h.score, 4) for h in dense_only] == [1.0, 0.9, 0.8]  # (1 + cos) / 2
    keyword_only = store.search("zebra", k=3, search_mode="hybrid", ranker_strategy="weighted", ranker_alpha=0.0)
    assert docs(keyword_only)[:2] == ["c3.txt", "c1.txt"]


def test_hybrid_legs_fetch_more_than_k(store):
    # dense [c2, c1, c3, c4], keyword [c3, c1]. Fused over the full lists (hand computed):
    # c3 = 1/63 + 1/61 = 0.032266, c1 = 2/62 = 0.032258, c2 = 1/61 = 0.016393.
    # Legs cut at k = 2 would give dense [c2, c1], keyword [c3, c1]: c1 = 2/62 first, then
    # c2 and c3 at 1/61; the legs fetch ranker_k + 2k candidates, so c3 is first.
    store.add_documents(chunks())
    store.flush()
    rrf = store.search("zebra zebra", k=2, search_mode="hybrid", ranker_strategy="rrf", ranker_k=60)
    assert docs(rrf) == ["c3.txt", "c1.txt"]
    assert [h.score for h in rrf] == [pytest.approx(1 / 63 + 1 / 61, rel=1e-4), pytest.approx(2 / 62, rel=1e-4)]


def test_upsert_is_idempotent_and_updates(store):
    store.add_documents(chunks())
    store.add_documents(chunks())
    store.flush()
    assert store.count() == 4
    first = chunks()[0]
    changed = Chunk("a parrot on a mat", first.chunk_id, dict(first.metadata, headings=["New"]))
    store.add_documents([changed], vectors=np.asarray([[0, 1, 0]], dtype=np.float32))
    store.flush()
    assert store.count() == 4
    hits = store.search("parrot", k=1, search_mode="keyword")
    assert docs(hits) == ["c1.txt"] and hits[0].chunk.headings == ["New"]


def test_many_chunks_in_batches(store):
    n = 2500  # more than one insert batch on every backend (Milvus 2048, PostgreSQL 1024)
    rng = np.random.default_rng(0)
    many = [Chunk(f"text {i}", f"id{i:05d}", {"document_id": "big.txt", "sequence_number": i}) for i in range(n)]
    assert store.add_documents(many, vectors=rng.normal(size=(n, 3)).astype(np.float32)) == n
    store.flush()
    assert store.count() == n


def test_collection_is_reused_by_name(backend, tmp_path):
    name = f"ragtune_test_{uuid.uuid4().hex[:12]}"
    config = config_for(backend, tmp_path)
    first = get_vector_store(table_model(), config, name)
    first.add_documents(chunks())
    first.flush()
    first.close()
    again = get_vector_store(table_model(), config, name)
    try:
        assert again.exists() and again.count() == 4
        assert docs(again.search("zebra", k=1)) == ["c1.txt"]
    finally:
        _close(again)


def test_dimension_mismatch_is_refused_before_writing(store):
    store.add_documents(chunks())
    store.flush()
    new = Chunk("brand new", "new-id", {"document_id": "n.txt", "sequence_number": 0})
    with pytest.raises(IndexingError, match=f"collection {store.collection_name} holds 3-dimensional vectors; "
                                            "model table returned 2"):
        store.add_documents([new], vectors=np.ones((1, 2), dtype=np.float32))
    assert store.count() == 4


def test_delete_and_missing_collection(store):
    store.add_documents(chunks())
    store.delete_collection()
    assert store.count() == 0 and not store.exists()
    with pytest.raises(StoreError, match="does not exist"):
        store.search("zebra")
    store.delete_collection()  # no error the second time


def test_bad_settings_and_names(store, backend, tmp_path):
    store.add_documents(chunks())
    with pytest.raises(ConfigError):
        store.search("zebra", search_mode="fuzzy")
    with pytest.raises(ConfigError):
        store.search("zebra", k=0)
    for bad in ("bad-name!", 'x"; DROP TABLE y; --', "1starts_with_digit"):
        with pytest.raises(ConfigError, match="collection name"):
            get_vector_store(table_model(), config_for(backend, tmp_path), bad)


def test_collection_names():
    a = collection_name_for({"chunking": {"size": 256}, "model": "m"})
    assert a == collection_name_for({"model": "m", "chunking": {"size": 256}})  # key order irrelevant
    assert a != collection_name_for({"chunking": {"size": 512}, "model": "m"})
    assert a.startswith("ragtune_") and len(a) == len("ragtune_") + 16
    fresh = new_collection_name()
    assert fresh.startswith("ragtune_") and len(fresh) == len("ragtune_YYYYmmddHHMMSS_") + 8
    assert fresh != new_collection_name()


def test_concurrent_searches_from_threads(store):
    """Answers are generated by a pool of threads sharing one store: every search succeeds and
    returns what a lone search returns."""
    from concurrent.futures import ThreadPoolExecutor

    store.add_documents(chunks())
    store.flush()
    alone = {mode: docs(store.search("zebra", k=3, search_mode=mode)) for mode in ("vector", "keyword", "hybrid")}
    jobs = [mode for mode in ("vector", "keyword", "hybrid") for _ in range(20)]
    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(pool.map(lambda mode: (mode, docs(store.search("zebra", k=3, search_mode=mode))), jobs))
    assert all(found == alone[mode] for mode, found in results)


def test_vector_only_collection_has_no_keyword_index(backend, tmp_path):
    """keyword_index=False builds no BM25 / full-text index: the backend's own schema shows
    none, vector search ranks as with the index, keyword and hybrid searches say why they fail."""
    config = config_for(backend, tmp_path)
    name = f"ragtune_test_{uuid.uuid4().hex[:12]}"
    full = get_vector_store(table_model(), config, name + "_kw")
    bare = get_vector_store(table_model(), config, name, keyword_index=False)
    try:
        for s in (full, bare):
            assert not s.has_keyword_index()  # no collection yet
            s.add_documents(chunks())
            s.flush()
        assert full.has_keyword_index() and not bare.has_keyword_index()
        if backend == "pgvector":
            columns = {r[0] for r in bare.connection.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
                (config.schema, name)).fetchall()}
            assert "tsv" not in columns and "embedding" in columns
        else:
            described = bare.client.describe_collection(name)
            assert "sparse" not in {f["name"] for f in described["fields"]} and not described.get("functions")
        hits, expected = bare.search("zebra", k=3), full.search("zebra", k=3)
        assert docs(hits) == docs(expected) == ["c1.txt", "c2.txt", "c3.txt"]
        assert [round(h.score, 5) for h in hits] == [1.0, 0.8, 0.6]  # cosine, as in the first test
        for mode in ("keyword", "hybrid"):
            with pytest.raises(StoreError, match=f"collection {name} has no keyword index .*{mode} search needs it"):
                bare.search("zebra", search_mode=mode)
        bare.delete_collection()
        assert not bare.has_keyword_index()
    finally:
        _close(full)
        _close(bare)
