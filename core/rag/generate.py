"""Answer many golden questions with a RAG template, in a bounded pool of threads."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Sequence

from core.errors import ConfigError
from core.models.breaker import CircuitBreaker
from core.models.spend import carry_spend
from core.rag.records import AnswerRecord, contexts_from

if TYPE_CHECKING:
    from core.golden.types import GoldenQuestion
    from core.rag.template import SimpleRAG

logger = logging.getLogger(__name__)


def _history(question: GoldenQuestion) -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role, content in getattr(question, "history", ()) or ()]


def answer_one(rag: SimpleRAG, question: GoldenQuestion) -> AnswerRecord:
    """Answer one golden question; a failure is returned as a failed record, never raised.

    Args:
        rag: a :class:`~core.rag.template.SimpleRAG` (anything with ``generate(question,
            history=...)`` returning ``{"answer", "reference_documents"}`` and a ``model_id``).
        question: a ``core.golden.GoldenQuestion`` (its ``history``, when present, is forwarded).

    Returns:
        An :class:`AnswerRecord`: the answer and its passages, or ``error`` set to
        ``"<ErrorType>: <message>"`` (with the passages retrieved before generation failed).
    """
    started = time.perf_counter()
    generator_id = str(getattr(rag, "model_id", type(rag).__name__))
    try:
        result = rag.generate(question.question, history=_history(question))
    except Exception as exc:  # one failed question must not stop the run; it is recorded with its error
        logger.warning("question %s failed: %s: %s", question.id, type(exc).__name__, exc)
        return AnswerRecord(
            question_id=question.id, question=question.question, answer=None,
            contexts=contexts_from(getattr(exc, "reference_documents", None) or ()),
            error=f"{type(exc).__name__}: {exc}", generator_id=generator_id,
            duration_s=time.perf_counter() - started,
        )
    return AnswerRecord(
        question_id=question.id, question=question.question, answer=result["answer"],
        contexts=contexts_from(result.get("reference_documents") or ()), generator_id=generator_id,
        duration_s=time.perf_counter() - started,
    )


def generate_answers(
    rag: SimpleRAG,
    questions: Sequence[GoldenQuestion],
    *,
    max_workers: int = 10,
    on_answer: Callable[[int, int], None] | None = None,
    max_consecutive_failures: int | None = 5,
) -> list[AnswerRecord]:
    """Answer every question, at most ``max_workers`` at a time.

    A question that fails (retrieval or generation error, after the chat model's own retries)
    is recorded as failed with its error: it does not stop the others, and answer metrics
    count it as failed, not as a score of 0. After ``max_consecutive_failures`` failures in a
    row the endpoint is taken for down (:class:`~core.models.breaker.CircuitBreaker`): the
    questions not yet started are recorded as failed at once, with the reason, instead of each
    waiting through its retries.

    Args:
        rag: a :class:`~core.rag.template.SimpleRAG` (see :func:`answer_one`).
        questions: ``core.golden.GoldenQuestion`` objects (distinct ids).
        max_workers: threads answering at once (>= 1); chat endpoints are I/O-bound.
        on_answer: called as ``on_answer(done, total)`` after each question (from worker
            threads), for progress bars.
        max_consecutive_failures: failures in a row that stop further calls (None: never).

    Returns:
        One :class:`AnswerRecord` per question, in the order of ``questions``.

    Raises:
        ConfigError: ``max_workers`` below 1, ``max_consecutive_failures`` below 1, or
            duplicate question ids.
    """
    breaker = CircuitBreaker(max_consecutive_failures, f"generator {getattr(rag, 'model_id', type(rag).__name__)}")
    if int(max_workers) < 1:
        raise ConfigError(f"max_workers must be at least 1, got {max_workers}")
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise ConfigError(f"duplicate question ids: {', '.join(dupes)}")
    total = len(questions)
    if total == 0:
        return []
    done = 0
    lock = threading.Lock()

    def run(question: GoldenQuestion) -> AnswerRecord:
        nonlocal done
        reason = breaker.blocked()
        if reason is not None:
            record = AnswerRecord(question_id=question.id, question=question.question, answer=None, error=reason,
                                  generator_id=str(getattr(rag, "model_id", type(rag).__name__)), duration_s=0.0)
        else:
            record = answer_one(rag, question)
            breaker.record(record.ok, record.error or "")
        if on_answer is not None:
            with lock:
                done += 1
                count = done
            on_answer(count, total)
        return record

    with ThreadPoolExecutor(max_workers=min(int(max_workers), total), thread_name_prefix="ragtune-answer") as pool:
        records = list(pool.map(carry_spend(run), questions))
    failed = sum(1 for r in records if not r.ok)
    if breaker.skipped:
        logger.warning("%s: %d questions skipped after %d failures in a row", breaker.what, breaker.skipped,
                       max_consecutive_failures)
    if failed:
        logger.info("%d of %d questions failed", failed, total)
    return records
