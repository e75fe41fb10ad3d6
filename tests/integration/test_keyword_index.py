"""Vector-only configurations build no keyword index unless a keyword or hybrid configuration
of the space shares their collection: run_single_evaluation on squad-mini (20 questions,
retrieval only) with the real local model on Milvus Lite, a Milvus server and PostgreSQL with
pgvector; each store's own schema says whether the index was built."""

from __future__ import annotations

import pytest

from core.evaluation.keyword_index import keyword_indexed
from core.evaluation.single import Corpus, EvaluationContext, run_single_evaluation
from core.golden import read_golden
from core.models import LOCAL_MODEL_ID, LocalEmbeddingModel
from tests.integration.test_vectorstore_contract import BACKENDS, config_for
from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VECTOR = {
    "chunking_method": "recursive", "chunk_size": 512, "chunk_overlap": 0, "embedding_model": LOCAL_MODEL_ID,
    "number_of_chunks": 3, "search_mode": "vector", "ranker_strategy": None, "ranker_k": None,
    "ranker_alpha": None, "foundation_model": "extractive",
}
HYBRID = dict(VECTOR, search_mode="hybrid", ranker_strategy="rrf", ranker_k=60)


@pytest.fixture(scope="module")
def data(squad_dir, tmp_path_factory):
    path = first_questions(squad_dir / "golden.jsonl", 20, tmp_path_factory.mktemp("g"))
    return Corpus.load(squad_dir / "docs"), read_golden(path), LocalEmbeddingModel()


def has_keyword_index(context, config, result) -> bool:
    store = context.vector_store(context.embedding_model(LOCAL_MODEL_ID), config, result["collection"])
    try:
        return store.has_keyword_index()
    finally:
        store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_vector_only_collections_skip_the_keyword_index(backend, data, tmp_path):
    corpus, golden, model = data
    config = config_for(backend, tmp_path)

    def context(keyword_indexes):
        return EvaluationContext(out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: model}, vector_store_config=config,
                                 with_answers=False, keyword_indexes=keyword_indexes)

    alone = context(keyword_indexed([VECTOR]))  # a space without keyword or hybrid search
    assert alone.keyword_indexes == frozenset()
    first = run_single_evaluation(VECTOR, corpus, golden, context=alone, use_stored=False)
    store = alone.vector_store(alone.embedding_model(LOCAL_MODEL_ID), config, first["collection"])
    store.delete_collection()  # a server keeps collections between runs: start from none
    store.close()
    first = run_single_evaluation(VECTOR, corpus, golden, context=alone, use_stored=False)
    assert first["status"] == "ok" and first["collection_reused"] is False
    assert not has_keyword_index(alone, config, first)

    # a hybrid configuration on the same chunks needs the index: the collection is built again
    # with it, its vectors from the embedding cache
    hybrid = run_single_evaluation(HYBRID, corpus, golden, context=alone, use_stored=False)
    assert hybrid["status"] == "ok", hybrid["error"]
    assert hybrid["collection"] == first["collection"] and hybrid["collection_reused"] is False
    assert hybrid["n_embedded"] == 0 and has_keyword_index(alone, config, hybrid)
    # the vector configuration then reuses it, with the same retrieval as without the index
    again = run_single_evaluation(VECTOR, corpus, golden, context=alone, use_stored=False)
    assert again["collection_reused"] is True and again["metrics"] == first["metrics"]

    # shared with a hybrid configuration of the space: built once, with the index
    shared = context(keyword_indexed([VECTOR, HYBRID]))
    store = shared.vector_store(shared.embedding_model(LOCAL_MODEL_ID), config, first["collection"])
    store.delete_collection()
    store.close()
    built = run_single_evaluation(VECTOR, corpus, golden, context=shared, use_stored=False)
    assert built["collection_reused"] is False and has_keyword_index(shared, config, built)
    later = run_single_evaluation(HYBRID, corpus, golden, context=shared, use_stored=False)
    assert later["collection_reused"] is True and later["metrics"] == hybrid["metrics"]
    assert shared.collections_built == 1

    # the space unknown (keyword_indexes None): every collection gets the index, as before
    assert context(None).needs_keyword_index(VECTOR)
    for ctx in (alone, shared):
        ctx.close()
