"""The optimizer's evaluations rerank through the working folder's rerank score cache, and
time what a user waits per question.

Real components: the Normans documents of squad-mini (p00 to p14) and its first 12
questions, the packaged all-MiniLM-L6-v2, the packaged cross-encoder ms-marco-MiniLM-L-12-v2
(int8 ONNX) and Milvus Lite. Two configurations share their first stage (the same collection,
dense search, retrieval depth 10) and differ in top_k (3 and 5).

References: the uncached numbers are the path before the cache, computed here: the first
stage searched, each question's passages reranked by the raw cross-encoder
(``core.vectorstores.rerank.RerankingStore``) and scored with
``core.metrics.retrieval.evaluate_rankings``; the pair counts are the distinct (question,
passage) pairs of the first stage, counted here.
"""

from __future__ import annotations

import shutil
import statistics

import pytest

from core.evaluation.pipeline import PipelineSettings
from core.evaluation.single import Corpus, EvaluationContext, run_single_evaluation
from core.golden import read_golden
from core.models.cache import CachedReranker
from core.models.local import local_embedding_model, local_reranker
from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MODEL_ID = "local:all-MiniLM-L6-v2"
RERANKER = "local:ms-marco-MiniLM-L-12-v2"
TOP3 = {
    "chunking_method": "recursive", "chunk_size": 128, "chunk_overlap": 0, "embedding_model": MODEL_ID,
    "number_of_chunks": 3, "search_mode": "vector", "ranker_strategy": "n/a", "ranker_k": "n/a",
    "ranker_alpha": "n/a", "foundation_model": "extractive", "reranker": RERANKER, "retrieval_depth": 10,
}
TOP5 = dict(TOP3, number_of_chunks=5)


@pytest.fixture(scope="module")
def inputs(squad_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rerank-cache")
    docs = tmp / "docs"
    docs.mkdir()
    for i in range(15):
        shutil.copy(squad_dir / "docs" / f"Normans_p{i:02d}.txt", docs)
    golden = read_golden(first_questions(squad_dir / "golden.jsonl", 12, tmp))
    return Corpus.load(docs), golden, tmp


def _context(out, reranker):
    return EvaluationContext(out_dir=out, embedding_models={MODEL_ID: local_embedding_model(MODEL_ID)},
                             with_answers=False, rerankers={RERANKER: reranker})


def _uncached(context, corpus, golden, configuration, raw):
    """Per-question MRR of ``configuration`` reranked by ``raw`` (no cache), on the collection
    the evaluations built."""
    from core.evaluation.retrieval import choose_rank_grain
    from core.metrics.retrieval import DEFAULT_KS, GRAINS, evaluate_rankings
    from core.vectorstores.rerank import RerankingStore

    settings = PipelineSettings.of(configuration)
    model = context.embedding_model(MODEL_ID)
    store = context.vector_store(model, context.store_config(), _collection(context, corpus, golden, configuration),
                                 memo=False)
    try:
        ranked = RerankingStore(store, raw, settings.retrieval_depth)
        rankings = {q.id: [h.chunk for h in ranked.search(q.question, k=settings.number_of_chunks,
                                                          **settings.search_setup().to_dict())]
                    for q in golden.questions}
    finally:
        store.close()
    grain = choose_rank_grain(golden.questions, [d.document_id for d in corpus.documents])
    result = evaluate_rankings(golden.questions, rankings, grains=GRAINS, ks=DEFAULT_KS)[grain]
    return [None if r.scores is None else r.scores["mrr"] for r in result.per_question.values()]


def _collection(context, corpus, golden, configuration):
    return run_single_evaluation(configuration, corpus, golden, context=context)["collection"]


def _first_stage_pairs(context, corpus, golden, configuration):
    """The distinct (question, passage) pairs the first stage gives (depth 10)."""
    settings = PipelineSettings.of(configuration)
    model = context.embedding_model(MODEL_ID)
    store = context.vector_store(model, context.store_config(), _collection(context, corpus, golden, configuration),
                                 memo=False)
    try:
        return {(q.question, h.chunk.text) for q in golden.questions
                for h in store.search(q.question, k=settings.retrieval_depth, **settings.search_setup().to_dict())}
    finally:
        store.close()


def test_configurations_sharing_a_first_stage_score_each_pair_once(inputs):
    corpus, golden, tmp = inputs
    raw = local_reranker(RERANKER)
    context = _context(tmp / "out", raw)
    try:
        top3 = run_single_evaluation(TOP3, corpus, golden, context=context)
        assert top3["status"] == "ok", top3["error"]
        cached = context.cached_reranker(RERANKER)
        assert isinstance(cached, CachedReranker) and cached.reranker is raw
        pairs = _first_stage_pairs(context, corpus, golden, TOP3)
        assert cached.n_scored == len(pairs)  # every pair of the first stage scored once
        top5 = run_single_evaluation(TOP5, corpus, golden, context=context)
        assert top5["status"] == "ok", top5["error"]
        assert cached.n_scored == len(pairs)  # the second configuration scored nothing new
        for result, config in ((top3, TOP3), (top5, TOP5)):
            assert result["per_question"]["scores"]["mrr"] == _uncached(context, corpus, golden, config, raw)
    finally:
        context.close()

    # a rerun on the same working folder (a new context) reads every pair from the file
    again = _context(tmp / "out", local_reranker(RERANKER))
    try:
        rerun = run_single_evaluation(TOP5, corpus, golden, context=again, use_stored=False)
        cached = again.cached_reranker(RERANKER)
        assert rerun["status"] == "ok" and cached.n_scored == 0 and cached.n_cache_hits > 0
        assert rerun["metrics"] == top5["metrics"]
    finally:
        again.close()


def test_the_wait_per_question_is_measured_per_question(inputs):
    corpus, golden, tmp = inputs
    context = _context(tmp / "waits", local_reranker(RERANKER))
    try:
        plain = run_single_evaluation(dict(TOP3, reranker="none", retrieval_depth="n/a"), corpus, golden,
                                      context=context)
        reranked = run_single_evaluation(TOP3, corpus, golden, context=context)
    finally:
        context.close()
    n = len(golden.questions)
    for result in (plain, reranked):
        assert result["status"] == "ok", result["error"]
        waits = result["per_question"]["wait_ms"]
        assert len(waits["total"]) == len(waits["search"]) == len(waits["query_embedding"]) == n
        assert waits["generation"] is None  # retrieval only
        parts = [waits[p] for p in ("query_embedding", "search", "rerank") if waits[p] is not None]
        # the total is each question's sum of its parts (hand sum), to the rounding
        assert all(abs(t - sum(p[i] for p in parts)) < 1e-2 for i, t in enumerate(waits["total"]))
        assert all(v > 0 for v in waits["search"]) and all(v > 0 for v in waits["query_embedding"])
        timings = result["timings_ms"]
        assert timings["n"] == n
        assert timings["total"]["median"] == pytest.approx(statistics.median(waits["total"]), abs=1e-3)
    assert plain["per_question"]["wait_ms"]["rerank"] is None and plain["timings_ms"]["rerank"] is None
    rerank = reranked["per_question"]["wait_ms"]["rerank"]
    assert all(v > 0 for v in rerank)  # ten pairs scored per question, each with its measured cost
    # the query embedding does not depend on the configuration: measured once per model and question
    assert plain["per_question"]["wait_ms"]["query_embedding"] == reranked["per_question"]["wait_ms"]["query_embedding"]
