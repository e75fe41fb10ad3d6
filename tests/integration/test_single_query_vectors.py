"""run_single_evaluation embeds each question once, as the query its searches and its
extractive answer use (the model's query instruction first), and its per-question results are
those of searching and answering each question on its own.

Real components: squad-mini's first 20 questions, the packaged bge-small-en-v1.5 (which has a
query instruction, so a question's query text differs from its plain text) and Milvus Lite.
The reference is computed independently here: the uncached model embeds each query by itself
(``embed_query``), the same collection is searched one question at a time, and the extractive
answer is recomputed from the chunks found.
"""

from __future__ import annotations

import pytest

from core.evaluation.single import Corpus, EvaluationContext, run_single_evaluation
from core.golden import read_golden
from core.models.embeddings import query_text, text_sha256
from core.models.local import local_embedding_model
from core.rag import ExtractiveGenerator
from core.vectorstores import MilvusLiteConfig
from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MODEL_ID = "local:bge-small-en-v1.5"
CONFIG = {
    "chunking_method": "recursive", "chunk_size": 256, "chunk_overlap": 0, "embedding_model": MODEL_ID,
    "number_of_chunks": 3, "search_mode": "hybrid", "ranker_strategy": "weighted", "ranker_k": "n/a",
    "ranker_alpha": 0.7, "foundation_model": "extractive",
}


@pytest.fixture(scope="module")
def evaluated(squad_dir, tmp_path_factory):
    golden_path = first_questions(squad_dir / "golden.jsonl", 20, tmp_path_factory.mktemp("g"))
    golden = read_golden(golden_path)
    model = local_embedding_model(MODEL_ID)
    context = EvaluationContext(out_dir=tmp_path_factory.mktemp("out"), embedding_models={MODEL_ID: model})
    result = run_single_evaluation(CONFIG, Corpus.load(squad_dir / "docs"), golden, context=context)
    assert result["status"] == "ok", result["error"]
    return model, golden, context, result


def test_each_question_is_embedded_once_as_its_query(evaluated):
    model, golden, context, result = evaluated
    assert model.query_instruction  # else a question's query text would be its plain text
    cache = context.embedding_model(MODEL_ID).cache
    queries = [text_sha256(query_text(model, q.question)) for q in golden.questions]
    plain = [text_sha256(q.question) for q in golden.questions]
    assert len(cache.get_many(MODEL_ID, queries)) == len(set(queries))
    assert cache.get_many(MODEL_ID, plain) == {}  # no vector nobody asks for
    # every text sent to the model was asked for: nothing embedded twice, nothing unused
    stats = context.embedding_model(MODEL_ID).stats()
    assert stats["texts_embedded"] == stats["texts_unique"] == cache.count(MODEL_ID)


def test_per_question_results_equal_one_question_at_a_time(evaluated):
    model, golden, context, result = evaluated
    store = context.vector_store(model, MilvusLiteConfig(str(context.out_dir / "milvus.db")), result["collection"])
    answerer = ExtractiveGenerator(model)
    records = {r["question_id"]: r for r in result["answers"]["questions"]}
    assert sorted(records) == sorted(q.id for q in golden.questions)
    for q in golden.questions:
        hits = store.search(q.question, k=3, search_mode="hybrid", ranker_strategy="weighted", ranker_alpha=0.7)
        record = records[q.id]
        assert [c["text"] for c in record["contexts"]] == [h.chunk.text for h in hits], q.id
        assert [c["document_id"] for c in record["contexts"]] == [h.chunk.document_id for h in hits], q.id
        assert record["answer"] == answerer.answer_from_passages(q.question, [h.chunk.text for h in hits]), q.id
