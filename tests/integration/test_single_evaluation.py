"""run_single_evaluation on squad-mini with the real local model and Milvus Lite: metrics,
stored results, collection reuse and the embedding cache, measured by counters."""

from __future__ import annotations

import json

import pytest

from core.evaluation.single import Corpus, EvaluationContext, run_single_evaluation
from core.optimization import Configuration
from core.golden import read_golden
from core.models import LOCAL_MODEL_ID, LocalEmbeddingModel
from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BASE = {
    "chunking_method": "recursive", "chunk_size": 128, "chunk_overlap": 32, "embedding_model": LOCAL_MODEL_ID,
    "number_of_chunks": 3, "search_mode": "hybrid", "ranker_strategy": "rrf", "ranker_k": 60,
    "ranker_alpha": "n/a", "foundation_model": "extractive",
}


@pytest.fixture(scope="module")
def setting(squad_dir, tmp_path_factory):
    golden_path = first_questions(squad_dir / "golden.jsonl", 20, tmp_path_factory.mktemp("g"))
    corpus = Corpus.load(squad_dir / "docs")
    context = EvaluationContext(out_dir=tmp_path_factory.mktemp("out"),
                                embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()})
    return corpus, read_golden(golden_path), context


def test_one_configuration_end_to_end(setting):
    corpus, golden, context = setting
    result = run_single_evaluation(BASE, corpus, golden, context=context)
    assert result["status"] == "ok" and result["error"] is None and result["stored"] is False
    assert result["key"] == Configuration(BASE).key
    assert result["collection_reused"] is False and context.collections_built == 1
    assert result["n_embedded"] > 0
    m = result["metrics"]
    # retrieval at the ranking grain over k = number_of_chunks = 3 results: recall@5 and @10
    # see the same 3 results as recall@3
    assert m["recall@3"] == m["recall@5"] == m["recall@10"]
    assert 0.5 <= m["recall@3"] <= 1.0
    for name in ("unitxt.faithfulness", "unitxt.answer_correctness", "unitxt.context_correctness"):
        assert 0.0 <= m[name] <= 1.0
    assert result["answers"]["generator"]["kind"] == "extractive"
    json.dumps(result, allow_nan=False)


def test_stored_result_and_reused_collection(setting):
    corpus, golden, context = setting
    first = run_single_evaluation(BASE, corpus, golden, context=context)
    built, embedded = context.collections_built, context.n_embedded
    again = run_single_evaluation(BASE, corpus, golden, context=context)
    assert again["stored"] is True and again["metrics"] == first["metrics"]
    # another search setup on the same chunks: same collection, nothing embedded
    other = run_single_evaluation(dict(BASE, search_mode="vector", ranker_strategy="n/a", ranker_k="n/a",
                                       number_of_chunks=5), corpus, golden, context=context)
    assert other["status"] == "ok" and other["collection_reused"] is True and other["n_embedded"] == 0
    assert other["collection"] == first["collection"]
    assert (context.collections_built, context.n_embedded) == (built, embedded)


def test_a_failure_is_recorded_not_raised(setting):
    corpus, golden, context = setting
    bad = run_single_evaluation(dict(BASE, embedding_model="no-such-model"), corpus, golden, context=context)
    assert bad["status"] == "failed" and "no-such-model" in bad["error"] and bad["metrics"] == {}
    overlap = run_single_evaluation(dict(BASE, chunk_overlap=128), corpus, golden, context=context)
    assert overlap["status"] == "failed" and "overlap" in overlap["error"]


def test_hierarchical_chunking_takes_no_chunk_size(setting):
    """The space holds chunk_size and chunk_overlap at the placeholder for hierarchical chunking."""
    corpus, golden, context = setting
    config = dict(BASE, chunking_method="hierarchical", chunk_size=None, chunk_overlap=None)
    result = run_single_evaluation(config, corpus, golden, context=context)
    assert result["status"] == "ok", result["error"]
    assert 0.0 <= result["metrics"]["mrr"] <= 1.0


def test_a_configured_reranker_reorders_the_first_stage(setting):
    """``reranker`` and ``retrieval_depth`` as configuration values: the first stage fetches
    ``retrieval_depth`` chunks, a rerank endpoint (scripted, over HTTP: word overlap) keeps
    ``number_of_chunks``; an unconfigured reranker fails the configuration with the reason."""
    from core.models.rerank import HttpReranker
    from tests.support.rerank_server import RerankTestServer

    corpus, golden, context = setting
    with RerankTestServer() as server:
        reranker = HttpReranker("overlap", base_url=server.base_url, max_attempts=1)
        context.rerankers[reranker.model_id] = reranker
        config = dict(BASE, reranker=reranker.model_id, retrieval_depth=12)
        result = run_single_evaluation(config, corpus, golden, context=context, use_stored=False)
        assert result["status"] == "ok", result["error"]
        # every question's first stage went to the endpoint once, 12 passages each: the answers
        # are made from the chunks the retrieval metrics scored (core.vectorstores.memo)
        assert len(server.requests) == len(golden.questions)
        assert {len(r["documents"]) for r in server.requests} == {12}
        assert result["key"] != Configuration(BASE).key
    missing = run_single_evaluation(dict(BASE, reranker="nope", retrieval_depth=20), corpus, golden, context=context)
    assert missing["status"] == "failed" and "reranker 'nope' is not configured" in missing["error"]


def test_the_cost_counts_chat_tokens_from_the_replies_usage(setting, tmp_path):
    """A generator behind the OpenAI-compatible test server, answering in threads: the cost
    holds one request per question and the tokens the server reported (its own count: words of
    the messages plus words of the reply, recomputed here from the requests it logged); run
    again, every reply comes from the cache and no token is spent."""
    from core.models import OpenAIChatModel
    from tests.support.openai_app import OpenAITestApp

    corpus, golden, _ = setting
    with OpenAITestApp(lambda body: "The answer is here.") as app:
        chat = OpenAIChatModel("scripted", base_url=app.base_url, max_attempts=1)
        context = EvaluationContext(out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()},
                                    chat_models={"scripted": chat})
        configuration = {**BASE, "foundation_model": "scripted"}
        first = run_single_evaluation(configuration, corpus, golden, context=context)
        assert first["status"] == "ok", first["error"]
        expected = sum(sum(len(str(m.get("content", "")).split()) for m in body["messages"]) + 4
                       for body in app.chat_requests)
        cost = first["cost"]
        assert cost["chat_requests"] == len(app.chat_requests) == len(golden.questions)
        assert cost["tokens"] == expected == cost["prompt_tokens"] + cost["completion_tokens"]
        assert cost["completion_tokens"] == 4 * len(golden.questions) and cost["texts_embedded"] > 0
        again = run_single_evaluation(configuration, corpus, golden, context=context, use_stored=False)
        assert len(app.chat_requests) == len(golden.questions)  # nothing asked again
        assert again["cost"]["replies_from_cache"] == len(golden.questions)
        assert (again["cost"]["chat_requests"], again["cost"]["tokens"], again["cost"]["texts_embedded"]) == (0, 0, 0)
