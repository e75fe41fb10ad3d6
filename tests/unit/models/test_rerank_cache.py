"""The rerank score cache: each (model, query, passage) scored once, across threads and runs,
with the cost measured when it was scored; scores of another model file never reused."""

from __future__ import annotations

import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from core.errors import RerankError
from core.models import EmbeddingCache
from core.models.cache import RERANK_CHUNK, CachedReranker, rerank_model_key
from core.models.rerank import score_pairs


class CountingReranker:
    """Scores a passage by how many of the query's words it holds (a hand-checkable score),
    slowly, so threads overlap; records every pair it is sent; fails on a passage "boom"."""

    model_id = "counting"
    model_sha256 = "ab" * 32
    max_input_tokens = 512

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def verify(self) -> None:
        pass

    def rerank(self, query, passages):
        return self.score_pairs([(query, p) for p in passages])

    def score_pairs(self, pairs):
        time.sleep(0.01)
        if any(p == "boom" for _, p in pairs):
            raise RerankError("the model failed")
        with self.lock:
            self.sent.extend(pairs)
        return [float(len(set(q.split()) & set(p.split()))) for q, p in pairs]


def expected(query: str, passage: str) -> float:
    return float(len(set(query.split()) & set(passage.split())))


QUERIES = [f"where is city {i}" for i in range(6)]
PASSAGES = [f"city {i} is where the river is" for i in range(12)]


def test_threads_score_each_distinct_pair_once_and_a_second_run_scores_none(tmp_path):
    model = CountingReranker()
    cached = CachedReranker(model, EmbeddingCache(tmp_path / "cache.sqlite"))
    # 8 threads, each asking for the pairs of three of the six queries (overlapping)
    asks = [[(q, p) for q in QUERIES[i % 4 : i % 4 + 3] for p in PASSAGES] for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(cached.scores, asks))
    distinct = {pair for ask in asks for pair in ask}
    assert sorted(model.sent) == sorted(distinct)  # each distinct pair sent once
    for ask, out in zip(asks, outs):  # every thread got its own pairs' scores, in order
        assert [s.score for s in out] == [expected(q, p) for q, p in ask]
        assert all(s.cost_ms > 0 for s in out)
    stats = cached.stats()
    assert stats["pairs"] == sum(len(a) for a in asks) and stats["pairs_scored"] == len(distinct)
    assert stats["pairs_from_cache"] == stats["pairs"] - len(distinct)
    first = {pair: s for ask, out in zip(asks, outs) for pair, s in zip(ask, out)}

    # a second run over the same file: nothing is scored, scores and costs are the first run's
    again = CachedReranker(CountingReranker(), EmbeddingCache(tmp_path / "cache.sqlite"))
    pairs = sorted(distinct)
    out = again.scores(pairs)
    assert again.reranker.sent == [] and again.stats()["pairs_scored"] == 0
    assert [(s.score, s.cost_ms) for s in out] == [(first[p].score, first[p].cost_ms) for p in pairs]
    assert all(s.cached for s in out)
    assert again.rerank(QUERIES[0], PASSAGES[:3]) == [expected(QUERIES[0], p) for p in PASSAGES[:3]]
    assert again.missing([(QUERIES[0], PASSAGES[0]), (QUERIES[0], "never seen")]) == [False, True]


def test_scores_are_kept_per_model_file_and_window(tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    model = CountingReranker()
    CachedReranker(model, cache).scores([(QUERIES[0], PASSAGES[0])])
    other_file = CountingReranker()
    other_file.model_sha256 = "cd" * 32
    CachedReranker(other_file, cache).scores([(QUERIES[0], PASSAGES[0])])
    assert other_file.sent == [(QUERIES[0], PASSAGES[0])]  # another file's scores are not its own
    assert rerank_model_key(model) == f"counting@sha256:{'ab' * 32}@512tokens"

    class Endpoint:  # a reranker without a file: its id alone
        model_id = "cohere:api.example/rerank-v3"

    assert rerank_model_key(Endpoint()) == "cohere:api.example/rerank-v3"


def test_a_failed_chunk_stores_nothing_and_the_pairs_are_scored_again(tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    cached = CachedReranker(CountingReranker(), cache)
    # the first chunk is scored and stored; the chunk holding "boom" fails
    pairs = [(QUERIES[0], f"passage {i}") for i in range(RERANK_CHUNK)] + [(QUERIES[0], "boom")]
    with pytest.raises(RerankError, match="the model failed"):
        cached.scores(pairs)
    rows = sqlite3.connect(tmp_path / "cache.sqlite").execute("SELECT count(*) FROM rerank_scores").fetchone()[0]
    assert rows == RERANK_CHUNK
    assert cached._inflight == {}  # nothing left for other threads to wait for
    again = cached.scores(pairs[:3])
    assert all(s.cached for s in again)


def test_progress_counts_the_pairs_scored(tmp_path):
    cached = CachedReranker(CountingReranker(), EmbeddingCache(tmp_path / "cache.sqlite"))
    seen: list[int] = []
    pairs = [(q, p) for q in QUERIES for p in PASSAGES]  # 72 pairs: chunks of 32, 32, 8
    cached.scores(pairs[:10])
    cached.scores(pairs, on_scored=seen.append)
    assert seen == [32, 30]  # the 10 already cached are not scored again


def test_score_pairs_groups_by_query_for_a_reranker_without_its_own():
    class PerQuery:
        model_id = "per-query"

        def __init__(self):
            self.calls = []

        def rerank(self, query, passages):
            self.calls.append((query, list(passages)))
            return [expected(query, p) for p in passages]

    model = PerQuery()
    pairs = [(QUERIES[0], PASSAGES[0]), (QUERIES[1], PASSAGES[1]), (QUERIES[0], PASSAGES[2])]
    assert score_pairs(model, pairs) == [expected(q, p) for q, p in pairs]
    assert model.calls == [(QUERIES[0], [PASSAGES[0], PASSAGES[2]]), (QUERIES[1], [PASSAGES[1]])]
