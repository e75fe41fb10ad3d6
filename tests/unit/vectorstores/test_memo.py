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
