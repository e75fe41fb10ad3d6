"""MilvusVectorStore.search_many on Milvus Lite: one request for many queries gives, for each,
the very results (order and scores) of one ``search`` per query, in every search mode.

The chunks and vectors are the lookup table of ``tests/support/vectors.py``; the reference is
``search`` itself, whose rankings the vector-store contract checks by hand.
"""

from __future__ import annotations

import uuid

import pytest

from core.errors import StoreError
from core.vectorstores import MilvusLiteConfig, get_vector_store
from core.vectorstores import milvus as milvus_module
from tests.support.vectors import chunks, docs, table_model

pytestmark = pytest.mark.integration

QUERIES = ["zebra", "markets", "parrot", "zebra zebra", "zebra"]
SETUPS = [
    {"search_mode": "vector"},
    {"search_mode": "keyword"},
    {"search_mode": "hybrid", "ranker_strategy": "rrf", "ranker_k": 60},
    {"search_mode": "hybrid", "ranker_strategy": "rrf", "ranker_k": 2},
    {"search_mode": "hybrid", "ranker_strategy": "weighted", "ranker_alpha": 0.3},
]


@pytest.fixture()
def store(tmp_path):
    s = get_vector_store(table_model(), MilvusLiteConfig(str(tmp_path / "m.db")), f"ragtune_test_{uuid.uuid4().hex[:12]}")
    s.add_documents(chunks())
    s.flush()
    yield s
    s.delete_collection()
    s.close()


def _plain(hits):
    return [(h.chunk.chunk_id, h.chunk.text, h.chunk.metadata, h.rank, round(h.score, 6)) for h in hits]


@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: "-".join(str(v) for v in s.values()))
@pytest.mark.parametrize("k", [1, 3])
def test_search_many_gives_each_querys_own_search(store, setup, k):
    one_by_one = [_plain(store.search(q, k=k, **setup)) for q in QUERIES]
    together = [_plain(hits) for hits in store.search_many(QUERIES, k=k, **setup)]
    assert together == one_by_one
    assert len(together) == len(QUERIES)


def test_search_many_known_rankings_and_batches(store, monkeypatch):
    # hand computed (tests/support/vectors.py): cosine for "zebra" ranks c1 (1.0), c2 (0.8),
    # c3 (0.6); for "markets" c4 (1.0) first (c1 and c2 tie at 0 after it); keyword "zebra"
    # ranks c3 (twice) before c1
    vector = store.search_many(["zebra", "markets"], k=3, search_mode="vector")
    assert docs(vector[0]) == ["c1.txt", "c2.txt", "c3.txt"] and docs(vector[1])[0] == "c4.txt"
    assert [round(h.score, 4) for h in vector[0]] == [1.0, 0.8, 0.6]
    keyword = store.search_many(["zebra"], k=2, search_mode="keyword")
    assert [docs(h) for h in keyword] == [["c3.txt", "c1.txt"]]
    assert all(h.score > 0 for h in keyword[0])  # BM25 scores turned back to >= 0
    monkeypatch.setattr(milvus_module, "SEARCH_BATCH", 2)  # 5 queries: requests of 2, 2 and 1
    assert [_plain(h) for h in store.search_many(QUERIES, k=2, search_mode="hybrid")] == \
        [_plain(store.search(q, k=2, search_mode="hybrid")) for q in QUERIES]
    assert store.search_many([], k=2) == []


def test_hybrid_search_reads_the_kept_chunks_fields_in_one_request(store, monkeypatch):
    calls = []
    real_get = store.client.get

    def get(name, ids, output_fields):
        calls.append(list(ids))
        return real_get(name, ids=ids, output_fields=output_fields)
    monkeypatch.setattr(store.client, "get", get)
    found = store.search_many(["zebra", "markets"], k=2, search_mode="hybrid")
    # the fields of the kept chunks (2 per query, each read once), not of every candidate of both legs
    assert len(calls) == 1 and sorted(calls[0]) == sorted({h.chunk.chunk_id for hits in found for h in hits})
    assert all(h.chunk.text and h.chunk.document_id for hits in found for h in hits)


def test_a_chunk_gone_between_search_and_read_is_a_store_error(store, monkeypatch):
    real_get = store.client.get
    monkeypatch.setattr(store.client, "get", lambda name, ids, output_fields: real_get(
        name, ids=ids, output_fields=output_fields)[1:])
    with pytest.raises(StoreError, match="no longer holds 1 chunk"):
        store.search("zebra", k=2, search_mode="hybrid")
