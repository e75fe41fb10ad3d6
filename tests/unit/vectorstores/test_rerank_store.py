"""RerankingStore: first stage at its depth, reranked to k; results already reranked are
handed back as the same search would give them, without searching or reranking again."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.vectorstores.base import RetrievedChunk
from core.vectorstores.rerank import RerankingStore, rerank_hits
from tests.support.vectors import chunks


class ListStore:
    """Returns the first ``k`` test chunks in their order, counting searches."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def search(self, query, k=10, **setup):
        self.calls.append((query, k, tuple(sorted(setup.items()))))
        return [RetrievedChunk(chunk=c, score=1.0 / (i + 1), rank=i + 1) for i, c in enumerate(chunks()[:k])]


class CountingReranker:
    """Scores a passage by its length in characters (longer first), counting the pairs."""

    model_id = "length"

    def __init__(self) -> None:
        self.pairs = 0

    def rerank(self, query, passages):
        self.pairs += len(passages)
        return [float(len(p)) for p in passages]


def test_the_first_stage_fetches_depth_and_the_reranker_orders():
    store, reranker = ListStore(), CountingReranker()
    hits = RerankingStore(store, reranker, depth=4).search("zebra", 2, search_mode="vector")
    assert store.calls == [("zebra", 4, (("search_mode", "vector"),))] and reranker.pairs == 4
    # by hand: the four test chunks ordered by length, longest first, the best two kept
    by_length = sorted(chunks()[:4], key=lambda c: -len(c.text))
    assert [h.chunk for h in hits] == by_length[:2] and [h.rank for h in hits] == [1, 2]
    assert [h.score for h in hits] == [float(len(c.text)) for c in by_length[:2]]


def test_results_already_reranked_are_the_searchs_own_without_searching_again():
    setup = {"search_mode": "vector"}
    fresh = RerankingStore(ListStore(), CountingReranker(), depth=4)
    held = {"zebra": fresh.search("zebra", 3, **setup)}  # reranked and cut to keep=3, as an evaluation does
    store, reranker = ListStore(), CountingReranker()
    wrapped = RerankingStore(store, reranker, depth=4, ranked=held, ranked_setup=setup, keep=3)
    for k in (1, 2, 3):
        assert wrapped.search("zebra", k, **setup) == fresh.search("zebra", k, **setup)
    assert store.calls == [] and reranker.pairs == 0 and wrapped.n_reused == 3
    # more than kept, another query or other settings: searched and reranked as usual
    assert wrapped.search("zebra", 4, **setup) == fresh.search("zebra", 4, **setup)
    wrapped.search("lion", 2, **setup)
    wrapped.search("zebra", 2, search_mode="keyword")
    assert len(store.calls) == 3 and wrapped.n_reused == 3


def test_bad_depth_or_keep():
    with pytest.raises(ConfigError, match="at least 1"):
        RerankingStore(ListStore(), CountingReranker(), depth=0)
    with pytest.raises(ConfigError, match="at least 1"):
        RerankingStore(ListStore(), CountingReranker(), keep=0)


def test_rerank_hits_keeps_the_first_stage_order_for_equal_scores():
    class Flat:
        def rerank(self, query, passages):
            return [1.0] * len(passages)

    hits = ListStore().search("q", 3)
    assert [h.chunk for h in rerank_hits(Flat(), "q", hits, 3)] == [h.chunk for h in hits]
