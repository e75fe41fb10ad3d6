"""Which collections need a keyword index (core.evaluation.keyword_index), on a real search space."""

from __future__ import annotations

from core.evaluation.keyword_index import indexing_key, keyword_indexed, keyword_indexed_space, searches_by_keyword
from core.evaluation.single import EvaluationContext
from core.optimization import default_space

VECTOR = {"chunking_method": "recursive", "chunk_size": 256, "chunk_overlap": 0, "embedding_model": "m",
          "number_of_chunks": 3, "search_mode": "vector", "ranker_strategy": None, "ranker_k": None,
          "foundation_model": "extractive", "system_message_text": "a"}


def test_search_time_parameters_do_not_change_the_collection():
    hybrid = dict(VECTOR, search_mode="hybrid", ranker_strategy="rrf", ranker_k=60, number_of_chunks=5,
                  system_message_text="b", foundation_model="gpt")
    assert indexing_key(hybrid) == indexing_key(VECTOR)
    assert indexing_key(dict(VECTOR, chunk_size=512)) != indexing_key(VECTOR)
    assert indexing_key(dict(VECTOR, embedding_model="n")) != indexing_key(VECTOR)
    # a chunker that asks the chat model: the foundation model is part of the collection
    llm = dict(VECTOR, chunking_method="contextual")
    assert indexing_key(dict(llm, foundation_model="gpt")) != indexing_key(llm)
    assert searches_by_keyword(hybrid) and searches_by_keyword(dict(VECTOR, search_mode="keyword"))
    assert not searches_by_keyword(VECTOR) and not searches_by_keyword({})


def test_a_vector_only_configuration_shares_only_with_hybrid_ones_on_its_chunks():
    hybrid = dict(VECTOR, search_mode="hybrid", ranker_strategy="rrf", ranker_k=60)
    keys = keyword_indexed([VECTOR, hybrid, dict(VECTOR, chunk_size=512)])
    assert keys == frozenset({indexing_key(VECTOR)})
    context = EvaluationContext(out_dir=".", embedding_models={}, keyword_indexes=keys)
    assert context.needs_keyword_index(VECTOR) and context.needs_keyword_index(hybrid)
    assert not context.needs_keyword_index(dict(VECTOR, chunk_size=512))
    assert EvaluationContext(out_dir=".", embedding_models={}).needs_keyword_index(VECTOR)  # space unknown


def test_over_a_search_space():
    base = default_space({"m": 512}, ["f"]).with_overrides({"chunking_method": ["recursive"], "chunk_size": [128, 256],
                                                            "chunk_overlap": [0], "number_of_chunks": [3]})
    mixed = base.with_overrides({"search_mode": ["vector", "hybrid"]})
    keys = {indexing_key(c) for c in mixed.valid_configurations()}
    assert len(keys) == 2  # one collection per chunk size, each searched by hybrid configurations too
    assert keyword_indexed_space(mixed) == frozenset(keys)
    assert keyword_indexed_space(base.with_overrides({"search_mode": ["vector"]})) == frozenset()
