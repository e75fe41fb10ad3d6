"""One reader of a configuration's pipeline settings (``core.evaluation.pipeline``), and the
frozen evaluation result (``core.evaluation.result``). Expected values are read off the
configurations by hand."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.evaluation.pipeline import EXTRACTIVE, PipelineSettings
from core.evaluation.result import EvaluationResult
from core.evaluation.single import leg_depth
from core.rag.template import NUMBER_OF_CHUNKS
from core.vectorstores.rerank import RERANK_DEPTH


def test_defaults_where_a_parameter_is_missing_or_does_not_apply():
    s = PipelineSettings.of({"embedding_model": "m", "chunking_method": "hierarchical", "chunk_size": "n/a",
                             "chunk_overlap": None, "ranker_strategy": "n/a", "reranker": "none",
                             "retrieval_depth": "n/a", "vector_store": "n/a"})
    assert (s.chunking_method, s.chunk_size, s.chunk_overlap) == ("hierarchical", 256, 0)
    assert (s.number_of_chunks, s.search_mode, s.ranker_strategy) == (NUMBER_OF_CHUNKS, "vector", None)
    assert (s.reranker, s.retrieval_depth, s.foundation_model, s.vector_store) == (None, RERANK_DEPTH, EXTRACTIVE, None)
    assert s.first_stage_depth == NUMBER_OF_CHUNKS and s.templates == ()
    assert s.search_setup().to_dict() == {"search_mode": "vector"}


def test_hybrid_with_a_reranker_reads_every_search_setting():
    s = PipelineSettings.of({"embedding_model": "m", "chunk_size": 512, "chunk_overlap": 64, "number_of_chunks": 3,
                             "search_mode": "hybrid", "ranker_strategy": "weighted", "ranker_alpha": 0.5,
                             "ranker_k": "n/a", "reranker": "local:x", "retrieval_depth": 30,
                             "foundation_model": "gpt", "vector_store": "pgvector",
                             "system_message_text": "be brief", "user_message_text": "n/a"})
    assert (s.chunk_size, s.chunk_overlap, s.number_of_chunks) == (512, 64, 3)
    assert (s.ranker_strategy, s.ranker_k, s.ranker_alpha) == ("weighted", None, 0.5)
    assert (s.reranker, s.retrieval_depth, s.first_stage_depth) == ("local:x", 30, 30)
    assert (s.foundation_model, s.vector_store, s.templates) == ("gpt", "pgvector", (("system_message_text", "be brief"),))
    setup = s.search_setup()
    assert (setup.search_mode, setup.ranker_strategy, setup.ranker_alpha) == ("hybrid", "weighted", 0.5)
    # hybrid with no strategy named: RRF
    assert PipelineSettings.of({"search_mode": "hybrid"}).ranker_strategy == "rrf"


def test_leg_depth_reads_the_first_stage_through_the_settings():
    # vector search without a reranker: number_of_chunks; with one: the retrieval depth when deeper
    assert leg_depth({"number_of_chunks": 3}) == 3
    assert leg_depth({"number_of_chunks": 3, "reranker": "r", "retrieval_depth": "n/a"}) == RERANK_DEPTH
    assert leg_depth({"number_of_chunks": 40, "reranker": "r", "retrieval_depth": 10}) == 40


def test_a_number_that_is_not_one_names_its_parameter():
    with pytest.raises(ConfigError, match="number_of_chunks"):
        PipelineSettings.of({"number_of_chunks": "many"})


def test_an_evaluation_result_round_trips_and_keeps_fields_it_does_not_know():
    stored = {"key": "k1", "configuration": {"chunk_size": 256}, "status": "ok", "error": None, "stored": False,
              "metrics": {"mrr": 0.5}, "retrieval": {}, "rank_grain": "doc", "answers": None, "collection": "c",
              "store_binding": {"backend": "milvus-lite", "location": "x", "collection": "c"},
              "collection_reused": True, "n_embedded": 0, "timings": {"total_s": 1.0}, "transient": False,
              "models": {}, "cost": {"seconds": 1.0}, "round": 2, "later_field": [1, 2]}
    result = EvaluationResult.from_dict(stored)
    assert result.ok and result.round == 2 and result.extra == {"later_field": [1, 2]}
    assert result.to_dict() == stored
    # a result stored by an older version: the fields it lacks take their defaults, the optional ones stay out
    old = EvaluationResult.from_dict({"key": "k2", "configuration": {}, "status": "failed", "error": "E: x", "metrics": {}})
    assert old.to_dict()["collection_reused"] is None and "cost" not in old.to_dict() and not old.ok
    with pytest.raises(ConfigError, match="status"):
        EvaluationResult.from_dict({"key": "k", "configuration": {}, "status": "maybe"})
    with pytest.raises(ConfigError, match="configuration"):
        EvaluationResult.from_dict({"key": "k"})
