"""run_single_evaluation against the reference path, question by question, on squad-mini with
the real local model and Milvus Lite (extractive answers: no language model).

The evaluation searches every question in one request per setup and scores answers with unitxt
metrics fetched once per process. The reference does what those replace: one
``MilvusVectorStore.search`` per question on the same collection, ranked with
``evaluate_rankings``, and unitxt's documented call ``unitxt.eval_utils.evaluate(DataFrame,
metric_names=[catalog name])`` on each question's answer, passages and reference. Retrieval
aggregates and per-question answer scores must be equal.
"""

from __future__ import annotations

import pytest

from core.evaluation.single import Corpus, EvaluationContext, run_single_evaluation
from core.golden import read_golden
from core.metrics.retrieval import DEFAULT_KS, GRAINS, evaluate_rankings
from core.metrics.unitxt_metrics import UNITXT_METRICS
from core.models import LOCAL_MODEL_ID, LocalEmbeddingModel
from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BASE = {
    "chunking_method": "recursive", "chunk_size": 256, "chunk_overlap": 0, "embedding_model": LOCAL_MODEL_ID,
    "number_of_chunks": 4, "foundation_model": "extractive", "ranker_alpha": "n/a",
}
SETUPS = {
    "vector": {"search_mode": "vector", "ranker_strategy": "n/a", "ranker_k": "n/a"},
    "hybrid": {"search_mode": "hybrid", "ranker_strategy": "rrf", "ranker_k": 60},
}


@pytest.fixture(scope="module")
def setting(squad_dir, tmp_path_factory):
    golden_path = first_questions(squad_dir / "golden.jsonl", 12, tmp_path_factory.mktemp("g"))
    context = EvaluationContext(out_dir=tmp_path_factory.mktemp("out"),
                                embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()})
    return Corpus.load(squad_dir / "docs"), read_golden(golden_path), context


def _reference_scores(questions: list[dict], metric: str) -> dict[str, float]:
    """unitxt's documented call on the questions ``metric`` applies to (all of them here)."""
    import pandas as pd
    from unitxt.eval_utils import evaluate

    if metric == "faithfulness":
        rows = [{"question": q["question"], "answer": q["answer"], "contexts": [c["text"] for c in q["contexts"]]}
                for q in questions]
    elif metric == "answer_correctness":
        rows = [{"question": q["question"], "answer": q["answer"], "ground_truths": [q["reference"]]} for q in questions]
    else:
        rows = [{"question": q["question"], "context_ids": [c["document_id"] for c in q["contexts"]],
                 "ground_truths_context_ids": q["expected"]} for q in questions]
    catalog = UNITXT_METRICS[metric]
    results, _ = evaluate(pd.DataFrame(rows), metric_names=[catalog], compute_conf_intervals=False)
    return {q["question_id"]: float(v) for q, v in zip(questions, results[catalog])}


@pytest.mark.parametrize("mode", list(SETUPS))
def test_retrieval_and_answer_scores_equal_the_reference_path(setting, mode):
    from core.evaluation.pipeline import PipelineSettings

    corpus, golden, context = setting
    configuration = {**BASE, **SETUPS[mode]}
    result = run_single_evaluation(configuration, corpus, golden, context=context, use_stored=False)
    assert result["status"] == "ok", result["error"]

    # retrieval: one search per question on the collection the evaluation built
    model = context.embedding_model(LOCAL_MODEL_ID)
    store = context.vector_store(model, context.store_config(), result["collection"])
    setup = PipelineSettings.of(configuration).search_setup().to_dict()
    rankings = {q.id: [h.chunk for h in store.search(q.question, k=4, **setup)] for q in golden.questions}
    reference = evaluate_rankings(golden.questions, rankings, grains=GRAINS, ks=DEFAULT_KS)
    assert result["retrieval"] == {g: r.aggregate.to_dict() for g, r in reference.items()}

    # answers: each question's passages are its own search's chunks, and its scores unitxt's
    questions = result["answers"]["questions"]
    expected = {q.id: list(dict.fromkeys(t.document_id for t in q.expected)) for q in golden.questions}
    for q in questions:
        assert [c["text"] for c in q["contexts"]] == [c.text for c in rankings[q["question_id"]]]
        q["expected"] = expected[q["question_id"]]
    for metric in UNITXT_METRICS:
        got = {q["question_id"]: next(m["score"] for m in q["metrics"] if m["name"] == f"unitxt.{metric}")
               for q in questions}
        want = _reference_scores(questions, metric)
        assert got == want, metric
    assert len({round(s, 6) for s in want.values()}) > 1 or len(questions) == 1  # the case tells questions apart
