"""Answers for one search setup: generate them (an OpenAI-compatible chat model, or the
extractive baseline that needs none), or read them from a Bedrock bring-your-own-inference
file, then score them with unitxt and, when a judge is configured, an LLM judge."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from core.golden.reader import read_bedrock_answers
from core.metrics.answers import answer_report
from core.rag import ExtractiveGenerator, SimpleRAG, generate_answers
from core.rag.template import NUMBER_OF_CHUNKS

if TYPE_CHECKING:
    from core.golden.types import GoldenSet
    from core.models.chat import ChatModel
    from core.models.embeddings import EmbeddingModel
    from core.vectorstores.base import SearchSetup, VectorStore

logger = logging.getLogger(__name__)


def evaluate_answers(
    store: VectorStore,
    embedding_model: EmbeddingModel,
    golden: GoldenSet,
    setup: SearchSetup,
    *,
    chat_model: ChatModel | None = None,
    judge: ChatModel | None = None,
    metrics: Sequence[str] | None = None,
    templates: Mapping[str, str] | None = None,
    k: int = NUMBER_OF_CHUNKS,
    max_workers: int = 10,
    on_answer: Callable[[int, int], None] | None = None,
    judge_repeat: int = 1,
) -> dict[str, Any]:
    """Generate (or read) and score the answers to every golden question.

    Args:
        store: an open vector store holding the corpus (unused for bring-your-own-inference files).
        embedding_model: the store's embedding model; the extractive baseline ranks sentences with it.
        golden: the ``GoldenSet``; with format ``bedrock-byoi`` its answers and passages are
            read from the file and nothing is generated.
        setup: the ``SearchSetup`` retrieving the chunks answers are generated from.
        chat_model: a ``ChatModel``; None uses the extractive baseline.
        judge: a ``ChatModel`` judging the answers, or None (unitxt metrics only).
        metrics: answer metric names (None: the unitxt metrics, plus the judge's with a judge).
        templates: ``system_message_text`` / ``context_template_text`` / ``user_message_text``
            overrides for ``SimpleRAG``.
        k: chunks per question given to the generator.
        max_workers: questions answered at once.
        on_answer: progress callback ``(done, total)``.
        judge_repeat: judge calls per answer and metric.

    Returns:
        ``{generator{model_id, kind, k, setup, search}, rag{...}, metrics[...], overall_score,
        overall_metrics, n_questions, n_answered, n_failed, evaluators, timings, questions[...]}``
        (see ``core.metrics.answers.AnswerReport.to_dict``; ``timings`` holds ``generate_s``, the
        whole step's seconds, and, unless the answers were read from a file, ``answer_ms``,
        question id -> milliseconds spent answering it); ``kind`` is ``llm``,
        ``extractive`` (no language model: sentences copied from the retrieved chunks) or
        ``external`` (answers read from the file).

    Raises:
        ConfigError: bad metric or template settings. Failed questions do not raise: they are
            recorded as failed with their error.
    """
    started = time.perf_counter()
    if getattr(golden, "format", "ragtune") == "bedrock-byoi":
        answers = read_bedrock_answers(golden.path)
        generator: dict[str, Any] = {
            "model_id": answers[0].generator_id if answers else "external", "kind": "external",
            "k": None, "setup": None, "search": None,
        }
        rag_params = None
    else:
        if chat_model is None:
            chat_model = ExtractiveGenerator(embedding_model)
            kind = "extractive"
        else:
            kind = "llm"
        rag = SimpleRAG(store, chat_model, k=k, search=setup, **dict(templates or {}))
        answers = generate_answers(rag, golden.questions, max_workers=max_workers, on_answer=on_answer)
        generator = {"model_id": chat_model.model_id, "kind": kind, "k": k, "setup": setup.name,
                     "search": setup.to_dict()}
        rag_params = rag.params()
    generate_s = time.perf_counter() - started
    report = answer_report(golden.questions, answers, judge=judge, metrics=metrics, judge_repeat=judge_repeat).to_dict()
    report["generator"] = generator
    report["rag"] = rag_params
    report.setdefault("timings", {})["generate_s"] = round(generate_s, 3)
    if generator["kind"] != "external":  # each question's answering time, for the wait per question
        report["timings"]["answer_ms"] = {a.question_id: round(a.duration_s * 1000.0, 3) for a in answers}
    usage = getattr(chat_model, "usage", None)
    if usage:
        report["generator"]["usage"] = dict(usage)
    return report
