"""The vector-store contract, run against every backend: Milvus Lite (embedded), a Milvus
server (``milvus-lite server``, started by ``scripts/test.sh``) and PostgreSQL with pgvector.

Vectors come from a lookup-table embedding model so rankings can be computed by hand.
"""

from __future__ import annotations

import os
import uuid

import numpy as np
import pytest

from core.chunking.base import Chunk, make_chunk_id
from core.errors import ConfigError, IndexingError, StoreError
from core.vectorstores import MilvusConfig, MilvusLiteConfig, MilvusVectorStore, collection_name_for

pytestmark = pytest.mark.integration


class TableModel:
    """An embedding model whose vectors come from a dict (text -> vector)."""

    def __init__(self, table: dict[str, list[float]], model_id: str = "table") -> None:
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.model_id = model_id
        self.embedding_dimension = len(next(iter(table.values())))
        self.max_input_tokens = None

    def embed_documents(self, texts):
        return np.stack([self.table[t] for t in texts])

    def embed_query(self, text):
        return self.table[text]


TEXTS = {
    "c1": "the cat sat on the mat",
    "c2": "dogs chase cats in the yard",
    "c3": "a cat and a mat and a hat",
    "c4": "stock markets fell sharply today",
}
VECTORS = {"c1": [1.0, 0.0, 0.0], "c2": [0.8, 0.6, 0.0], "c3": [0.6, 0.0, 0.8], "c4": [0.0, 0.0, -1.0]}


def chunks():
    out = []
    for i, (name, text) in enumerate(TEXTS.items()):
        out.append(Chunk(text, make_chunk_id(f"{name}.txt", 0, text),
                         {"document_id": f"{name}.txt", "sequence_number": 0, "pages": [i + 1], "headings": ["H"]}))
    return out


BACKENDS = ["milvus-lite", "milvus-server"]


def _service(var: str, script: str) -> str:
    value = os.environ.get(var)
    if not value:
        pytest.fail(f"{var} is not set: start the service with 'bash scripts/services/{script} start' "
                    f"and 'eval \"$(bash scripts/services/{script} env)\"' (scripts/test.sh does both)")
    return value


def make_store(backend: str, model, tmp_path, name: str):
    """A store of ``backend`` holding collection ``name`` (the collection is not created yet)."""
    if backend == "milvus-lite":
        return MilvusVectorStore(model, MilvusLiteConfig(str(tmp_path / "m.db")), name)
    if backend == "milvus-server":
        return MilvusVectorStore(model, MilvusConfig(uri=_service("RAGTUNE_TEST_MILVUS_URI", "milvus.sh")), name)
    raise ValueError(backend)


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    table = {TEXTS[k]: v for k, v in VECTORS.items()}
    table["cat mat"] = [1.0, 0.0, 0.0]
    table["markets"] = [0.0, 0.0, -1.0]
    s = make_store(request.param, TableModel(table), tmp_path, f"ragtune_test_{uuid.uuid4().hex[:12]}")
    yield s
    s.delete_collection()
    close = getattr(getattr(s, "client", None), "close", None)
    if close:
        close()


def test_insert_count_and_dense_order(store):
    assert store.count() == 0
    assert store.add_documents(chunks()) == 4
    assert store.count() == 4
    hits = store.search("cat mat", k=3, search_mode="vector")
    # cosine with [1,0,0]: c1 1.0, c2 0.8, c3 0.6, c4 0.0
    assert [h.chunk.document_id for h in hits] == ["c1.txt", "c2.txt", "c3.txt"]
    assert [round(h.score, 5) for h in hits] == [1.0, 0.8, 0.6]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].chunk.pages == [1] and hits[0].chunk.headings == ["H"] and hits[0].chunk.text == TEXTS["c1"]


def test_keyword_scores_are_positive_and_ranked(store):
    store.add_documents(chunks())
    hits = store.search("markets", k=4, search_mode="keyword")
    assert [h.chunk.document_id for h in hits] == ["c4.txt"]  # the only text with the word
    assert hits[0].score > 0


def test_hybrid_rrf_and_weighted(store):
    store.add_documents(chunks())
    rrf = store.search("cat mat", k=3, search_mode="hybrid", ranker_strategy="rrf", ranker_k=60)
    # dense ranks c1, c2, c3; BM25 on "cat mat" ranks c1 first too (both words, and shorter
    # than c3, which also holds both; "cats" in c2 is another token), so c1 scores 1/61 + 1/61.
    assert rrf[0].chunk.document_id == "c1.txt"
    assert rrf[0].score == pytest.approx(2 / 61, rel=1e-4)
    dense_only = store.search("cat mat", k=3, search_mode="hybrid", ranker_strategy="weighted", ranker_alpha=1.0)
    assert [h.chunk.document_id for h in dense_only] == ["c1.txt", "c2.txt", "c3.txt"]


def test_upsert_is_idempotent(store):
    store.add_documents(chunks())
    store.add_documents(chunks())
    assert store.count() == 4


def test_dimension_mismatch_is_refused(store):
    store.add_documents(chunks())
    with pytest.raises(IndexingError, match="holds 3-dimensional vectors; model table returned 2"):
        store.add_documents(chunks()[:1], vectors=np.ones((1, 2), dtype=np.float32))


def test_delete_and_missing_collection(store):
    store.add_documents(chunks())
    store.delete_collection()
    assert store.count() == 0
    with pytest.raises(StoreError, match="does not exist"):
        store.search("cat mat")
    store.delete_collection()  # no error the second time


def test_bad_settings(store, tmp_path, request):
    store.add_documents(chunks())
    with pytest.raises(ConfigError):
        store.search("cat mat", search_mode="fuzzy")
    with pytest.raises(ConfigError):
        store.search("cat mat", k=0)
    with pytest.raises(ConfigError, match="collection name"):
        make_store(request.node.callspec.params["store"], store.embedding_model, tmp_path, "bad-name!")


def test_collection_names_follow_parameters():
    a = collection_name_for({"chunking": {"size": 256}, "model": "m"})
    assert a == collection_name_for({"model": "m", "chunking": {"size": 256}})  # key order irrelevant
    assert a != collection_name_for({"chunking": {"size": 512}, "model": "m"})
    assert a.startswith("ragtune_") and len(a) == len("ragtune_") + 16
