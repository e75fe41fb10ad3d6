"""SearchMemo: one search per distinct (query, k, setup); the results are the store's own."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from core.errors import StoreError
from core.vectorstores.base import RetrievedChunk
from core.vectorstores.memo import SearchMemo
from tests.support.vectors import chunks


class CountingStore:
    """Returns the first ``k`` test chunks in order, counting calls; fails on "boom"."""

    collection_name = "counted"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def search(self, query, k=10, **setup):
        self.calls.append((query, k, tuple(sorted(setup.items()))))
        if query == "boom":
            raise StoreError("down")
        return [RetrievedChunk(chunk=c, score=1.0 / (i + 1), rank=i + 1) for i, c in enumerate(chunks()[:k])]


def test_the_same_search_runs_once_and_returns_the_same_chunks():
    store = CountingStore()
    memo = SearchMemo(store)
    first = memo.search("zebra", 3, search_mode="vector")
    again = memo.search("zebra", k=3, search_mode="vector")  # k by keyword: the same search
    assert again == first == store.search("zebra", 3, search_mode="vector")
    assert len(store.calls) == 2 and memo.searches == 1
    again.pop()  # a caller changing its list changes nothing remembered
    assert len(memo.search("zebra", 3, search_mode="vector")) == 3


def test_other_arguments_are_other_searches_and_failures_are_not_remembered():
    store = CountingStore()
    memo = SearchMemo(store)
    memo.search("zebra", 3, search_mode="vector")
    memo.search("zebra", 2, search_mode="vector")
    memo.search("zebra", 3, search_mode="hybrid", ranker_strategy="rrf")
    memo.search("lion", 3, search_mode="vector")
    assert memo.searches == 4 and len(store.calls) == 4
    for _ in range(2):
        with pytest.raises(StoreError, match="down"):
            memo.search("boom", 3)
    assert len(store.calls) == 6 and memo.collection_name == "counted"  # the rest is the store's


def test_threads_get_the_stores_results():
    memo = SearchMemo(CountingStore())
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda q: memo.search(q, 2), ["a", "b", "a", "c", "b"] * 10))
    assert all([h.chunk.document_id for h in r] == ["c1.txt", "c2.txt"] for r in results)
    assert memo.searches <= 3 + 8  # at most one per question, plus concurrent first asks


class BatchingStore(CountingStore):
    """A CountingStore with ``search_many``: one call for many queries."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def search_many(self, queries, k=10, **setup):
        self.batches.append(list(queries))
        return [self.search(q, k, **setup) for q in queries]


class Forwarding:
    """A wrapper that changes ``search`` and forwards everything else (as RerankingStore does)."""

    def __init__(self, store) -> None:
        self._store = store

    def __getattr__(self, name):
        return getattr(self._store, name)

    def search(self, query, k=10, **setup):
        return self._store.search(query, k, **setup)[::-1]  # its own order


def test_search_many_asks_the_store_once_for_what_it_does_not_remember():
    store = BatchingStore()
    memo = SearchMemo(store)
    memo.search("lion", 2, search_mode="vector")
    out = memo.search_many(["zebra", "lion", "zebra", "tiger"], 2, search_mode="vector")
    assert store.batches == [["zebra", "tiger"]]  # "lion" remembered, "zebra" asked once
    expected = [h.chunk.document_id for h in store.search("x", 2)]
    assert [[h.chunk.document_id for h in r] for r in out] == [expected] * 4
    assert memo.searches == 3
    assert memo.search("tiger", 2, search_mode="vector") == out[3]  # remembered for search too
    assert store.batches == [["zebra", "tiger"]]


def test_search_many_without_a_batch_search_and_through_a_forwarding_wrapper():
    plain = SearchMemo(CountingStore())
    assert [len(r) for r in plain.search_many(["a", "b"], 3)] == [3, 3]
    inner = BatchingStore()
    memo = SearchMemo(Forwarding(inner))
    out = memo.search_many(["a", "b"], 3)
    assert inner.batches == []  # the wrapper's own search ran, not the inner store's batch
    assert [h.chunk.document_id for h in out[0]] == ["c3.txt", "c2.txt", "c1.txt"]
    with pytest.raises(StoreError, match="down"):
        memo.search_many(["c", "boom"], 3)
    assert memo.searches == 2  # nothing of the failed batch is remembered
