"""Answer metrics: lexical RAG metrics through unitxt, and an LLM judge.

Every metric's name says how it is computed: ``unitxt.<metric>`` or ``judge.<metric>``.
Scores lie in [0, 1], higher is better. A question that cannot be scored is never a 0, a 1
or NaN: it is counted as *failed* (its answer could not be generated, or the judge call
failed), *invalid* (the judge's reply held no score on the scale) or *unscorable* (the metric
needs something the question lacks, such as a reference answer), and left out of the mean.

unitxt metrics (no model; ``unitxt`` is imported on first use, see :func:`unitxt_import_s`):

- ``unitxt.faithfulness`` = ``metrics.rag.external_rag.faithfulness``: token-overlap
  *precision* of the answer against each retrieved passage, the best passage counting:
  ``max_c |tokens(answer) ∩ tokens(c)| / |tokens(answer)|`` (multiset intersection). Tokens
  come from SQuAD's normalisation: lower-case, punctuation removed, the articles ``a``, ``an``,
  ``the`` removed, split on whitespace. With no passage at all (or only blank ones) the answer
  is supported by nothing: 0.
- ``unitxt.answer_correctness`` = ``metrics.rag.external_rag.answer_correctness``:
  token-overlap *recall* of the reference answer in the answer,
  ``|tokens(answer) ∩ tokens(reference)| / |tokens(reference)|``. Unscorable without a
  reference answer.
- ``unitxt.context_correctness`` = ``metrics.rag.external_rag.context_correctness``:
  reciprocal rank of the first passage whose document is an expected document (0 when none
  is). Unscorable without expected documents (Bedrock prompt datasets name none).

LLM-judge metrics (a configurable :class:`~core.models.chat.ChatModel` reads a prompt and
replies with a score; see :func:`parse_score`):

- ``judge.answer_relevance``: does the answer address the question; 1 to 5, normalised to
  ``(s - 1) / 4``.
- ``judge.correctness``, ``judge.completeness``, ``judge.faithfulness``, ``judge.helpfulness``:
  Amazon Bedrock's RAG-evaluation metrics, 0 to 1 (correctness and completeness use the
  reference answer when there is one; faithfulness judges the answer against the passages).
  With no passage retrieved (or only blank ones) ``judge.faithfulness`` is 0, as unitxt's,
  and the judge is not asked; prompts of other metrics say "(no passages were retrieved)".

Aggregates: the mean over scored questions, and a 95 % bootstrap confidence interval
(``ci_low``, ``ci_high``): unitxt's own (BCa, 1,000 resamples) for unitxt metrics, a seeded
percentile bootstrap (1,000 resamples) for judge metrics. When every scored question has the
same score the interval is ``[v, v]``; with one scored question it is None, with the reason.

References:
    unitxt RAG metrics (``metrics.rag.external_rag.*``, ``unitxt.eval_utils.evaluate``):
    https://www.unitxt.ai/en/latest/docs/rag_support.html and
    https://github.com/IBM/unitxt ; IBM ai4rag evaluation (the same three unitxt metrics):
    https://ibm.github.io/ai4rag/ ; SQuAD answer normalisation: Rajpurkar et al. (2016),
    "SQuAD: 100,000+ Questions for Machine Comprehension of Text" ; Amazon Bedrock RAG
    evaluation metrics: https://docs.aws.amazon.com/bedrock/latest/userguide/knowledge-base-evaluation-metrics.html ;
    bootstrap intervals: Efron & Tibshirani (1993), "An Introduction to the Bootstrap".
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Sequence, runtime_checkable

import numpy as np

from core.errors import ConfigError
from core.rag.records import AnswerRecord, Context

logger = logging.getLogger(__name__)

#: unitxt metrics: short name -> unitxt catalog name.
UNITXT_METRICS: dict[str, str] = {
    "faithfulness": "metrics.rag.external_rag.faithfulness",
    "answer_correctness": "metrics.rag.external_rag.answer_correctness",
    "context_correctness": "metrics.rag.external_rag.context_correctness",
}
#: Resamples of the bootstrap intervals computed here (judge metrics).
BOOTSTRAP_RESAMPLES = 1000
#: Confidence level of every interval.
CONFIDENCE_LEVEL = 0.95
#: Seed of the bootstrap computed here, so reports are reproducible.
BOOTSTRAP_SEED = 0

Status = Literal["scored", "failed", "invalid", "unscorable"]


# ------------------------------------------------------------------------------------ judge metrics


@dataclass(frozen=True)
class JudgeMetric:
    """How one judge metric asks and what scale it expects.

    Attributes:
        name: the short name (``"correctness"``).
        low: lowest score on the judge's scale.
        high: highest score on the judge's scale.
        integer: True when only whole numbers are valid (a 1-5 rating).
        instructions: what the judge is asked, including the scale's anchors.
        uses: the parts of a question shown to the judge, from ``history``, ``question``,
            ``passages``, ``reference``, ``reference_or_passages``, ``answer``.
    """

    name: str
    low: float
    high: float
    integer: bool
    instructions: str
    uses: tuple[str, ...]

    def normalise(self, value: float) -> float:
        """Map a score on the judge's scale to [0, 1]: ``(value - low) / (high - low)``."""
        return (value - self.low) / (self.high - self.low)


JUDGE_SYSTEM_MESSAGE = (
    "You are a strict and impartial evaluator of answers produced by a question-answering system "
    "that retrieves passages from documents. You follow the scoring instructions exactly and reply "
    "with the score only: no words, no explanation."
)

_ZERO_ONE_REPLY = (
    "Use any value between 0 and 1 for cases in between. Reply with one number between 0 and 1 "
    "(for example 0.75) and nothing else."
)

JUDGE_METRICS: dict[str, JudgeMetric] = {
    "answer_relevance": JudgeMetric(
        "answer_relevance", 1, 5, True,
        "Rate how relevant the ANSWER is to the QUESTION: does it address what was asked? Judge relevance "
        "only, not whether the answer is true.\n"
        "5 - addresses the question directly and stays on topic throughout.\n"
        "4 - addresses the question, with a little content that was not asked for.\n"
        "3 - partly addresses the question, or is vague.\n"
        "2 - barely addresses the question; mostly about something else.\n"
        "1 - does not address the question, or only says that it cannot answer.\n"
        "Reply with one whole number from 1 to 5 and nothing else.",
        ("history", "question", "answer"),
    ),
    "correctness": JudgeMetric(
        "correctness", 0, 1, False,
        "Judge whether the ANSWER to the QUESTION is correct. When a REFERENCE ANSWER is given, it is the "
        "ground truth: the answer is correct when it states the same facts (wording may differ). Without "
        "one, judge against the PASSAGES and well-established facts.\n"
        "1 - fully correct: every claim that answers the question is right.\n"
        "0.5 - partly correct: some of it is right, some is wrong.\n"
        "0 - incorrect: it contradicts the ground truth, or gives no answer.\n" + _ZERO_ONE_REPLY,
        ("history", "question", "reference_or_passages", "answer"),
    ),
    "completeness": JudgeMetric(
        "completeness", 0, 1, False,
        "Judge how completely the ANSWER resolves every part of the QUESTION. When a REFERENCE ANSWER is "
        "given, the answer is complete when it contains all the information of the reference that the "
        "question asks for. Without one, judge against the PASSAGES. Do not penalise extra detail here.\n"
        "1 - every part of the question is answered.\n"
        "0.5 - about half of what was asked is answered.\n"
        "0 - none of it is answered.\n" + _ZERO_ONE_REPLY,
        ("history", "question", "reference_or_passages", "answer"),
    ),
    "faithfulness": JudgeMetric(
        "faithfulness", 0, 1, False,
        "Judge whether the ANSWER is faithful to the PASSAGES: is every claim in it stated in, or directly "
        "implied by, the passages? Do not use outside knowledge: a true claim that the passages do not "
        "support is unfaithful. An answer that only says the passages do not contain the answer makes no "
        "claim and is faithful. With no passages, any factual claim is unfaithful.\n"
        "1 - every claim is supported by the passages.\n"
        "0.5 - about half of the claims are supported.\n"
        "0 - no claim is supported, or the answer contradicts the passages.\n" + _ZERO_ONE_REPLY,
        ("question", "passages", "answer"),
    ),
    "helpfulness": JudgeMetric(
        "helpfulness", 0, 1, False,
        "Judge how helpful the ANSWER is to the person who asked the QUESTION (in the conversation, when one "
        "is shown): does it meet their need, follow what they asked for, and read clearly and concisely, "
        "without being evasive, padded or off topic?\n"
        "1 - exactly what the person needed.\n"
        "0.5 - somewhat helpful, with clear shortcomings.\n"
        "0 - not helpful at all.\n" + _ZERO_ONE_REPLY,
        ("history", "question", "answer"),
    ),
}

#: Every metric name, ``<evaluator>.<metric>``.
ALL_METRICS: tuple[str, ...] = (
    *(f"unitxt.{m}" for m in UNITXT_METRICS),
    *(f"judge.{m}" for m in JUDGE_METRICS),
)
#: The metrics computed when none are named and no judge is given.
DEFAULT_METRICS: tuple[str, ...] = tuple(f"unitxt.{m}" for m in UNITXT_METRICS)


# ------------------------------------------------------------------------------------ reply parsing


@dataclass(frozen=True)
class ParsedScore:
    """A judge reply read as a score.

    Attributes:
        value: the score on the judge's scale, or None when the reply is invalid.
        reason: why the reply is invalid, else None.
    """

    value: float | None
    reason: str | None = None

    @property
    def valid(self) -> bool:
        """True when the reply held a score on the scale."""
        return self.value is not None


_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_SCORE_LINE = re.compile(
    rf"^(?:(?:final\s+)?(?:score|rating)\s*(?:[:=]|is)?\s*)?(?P<num>{_NUMBER})"
    rf"\s*(?:/\s*(?P<den>{_NUMBER})|out\s+of\s+(?P<den2>{_NUMBER}))?\s*\.?$",
    re.IGNORECASE,
)
_MARKUP = str.maketrans("", "", "*`")


def _excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def parse_score(reply: str | None, low: float, high: float, *, integer: bool = False) -> ParsedScore:
    """Read a judge's reply as a score on the scale ``[low, high]``, strictly.

    Valid replies are a number alone (``"0.8"``, ``".5"``, ``"1."``), optionally labelled
    (``"Score: 1.0"``, ``"Rating = 4"``, ``"score is 3"``), optionally out of the scale's top
    (``"4/5"``, ``"4 out of 5"``), with an optional final period; markdown ``*`` and backticks
    are ignored. When the reply has several lines, only the last non-empty line is read, so a
    judge may reason first and end with the score on a line of its own.

    Invalid (the reason says which): an empty reply; a last line that is not a score in that
    form (text with no score, two numbers, a percentage); a number outside ``[low, high]``; a
    different denominator; a fraction when ``integer`` is set.

    Args:
        reply: the judge's reply (None counts as empty).
        low: lowest valid score.
        high: highest valid score.
        integer: accept whole numbers only (``4`` and ``4.0``, not ``3.5``).

    Returns:
        A :class:`ParsedScore`.
    """
    if reply is None or not reply.strip():
        return ParsedScore(None, "empty reply")
    lines = [line.translate(_MARKUP).strip() for line in reply.strip().splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return ParsedScore(None, f"no score in the reply {_excerpt(reply)!r}")
    match = _SCORE_LINE.match(lines[-1])
    if match is None:
        where = "the reply" if len(lines) == 1 else "the last line of the reply"
        return ParsedScore(None, f"no score in {where} {_excerpt(lines[-1])!r} (expected a number alone, such as '0.8')")
    value = float(match.group("num"))
    den = match.group("den") or match.group("den2")
    if den is not None and float(den) != float(high):
        return ParsedScore(None, f"score {match.group('num')}/{den} is not on the scale {low:g} to {high:g}")
    if not math.isfinite(value) or not low <= value <= high:
        return ParsedScore(None, f"score {match.group('num')} is outside the scale {low:g} to {high:g}")
    if integer and not value.is_integer():
        return ParsedScore(None, f"score {match.group('num')} is not a whole number from {low:g} to {high:g}")
    return ParsedScore(value)


# ------------------------------------------------------------------------------------ items and scores


@dataclass(frozen=True)
class AnswerItem:
    """One question joined with its answer, as the evaluators see it.

    Attributes:
        question_id: the golden question's id.
        question: the question text.
        history: earlier turns, ``(role, content)`` pairs, oldest first.
        reference: the reference answer, or None.
        expected_documents: the expected document ids (empty when the golden file names none).
        answer: the answer, or None when it could not be generated.
        error: why there is no answer, else None.
        contexts: the passages the answer was generated from, best first.
    """

    question_id: str
    question: str
    history: tuple[tuple[str, str], ...] = ()
    reference: str | None = None
    expected_documents: tuple[str, ...] = ()
    answer: str | None = None
    error: str | None = None
    contexts: tuple[Context, ...] = ()


@dataclass(frozen=True)
class QuestionScore:
    """One metric's outcome for one question.

    Attributes:
        score: in [0, 1] (higher is better) when ``status`` is ``"scored"``, else None.
        status: ``"scored"``, ``"failed"`` (no answer, or the evaluator failed),
            ``"invalid"`` (the judge's reply held no valid score) or ``"unscorable"`` (the
            metric does not apply to this question).
        reason: why there is no score, else None.
        raw: the judge's score on its own scale (1 to 5 for ``answer_relevance``), else None.
    """

    score: float | None
    status: Status = "scored"
    reason: str | None = None
    raw: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return ``{score}`` plus ``status`` and ``reason`` when not scored, ``raw_score`` when known."""
        out: dict[str, Any] = {"score": self.score}
        if self.status != "scored":
            out["status"] = self.status
            out["reason"] = self.reason
        if self.raw is not None:
            out["raw_score"] = self.raw
        return out


@dataclass(frozen=True)
class MetricScores:
    """What an evaluator returns for one metric.

    Attributes:
        per_question: one :class:`QuestionScore` per item, in item order.
        interval: the evaluator's own confidence interval ``(low, high)`` over the scored
            questions, or None (then one is computed here).
        interval_method: how ``interval`` was computed.
    """

    per_question: list[QuestionScore]
    interval: tuple[float, float] | None = None
    interval_method: str | None = None


@runtime_checkable
class AnswerEvaluator(Protocol):
    """Computes some answer metrics for a list of answered questions.

    Attributes:
        name: the evaluator's name, the prefix of its metric names (``"unitxt"``, ``"judge"``).
    """

    name: str

    @property
    def metrics(self) -> tuple[str, ...]:
        """The short names of the metrics this evaluator computes."""
        ...

    def evaluate(self, items: Sequence[AnswerItem], metrics: Sequence[str]) -> dict[str, MetricScores]:
        """Return short metric name -> :class:`MetricScores` for each of ``metrics``.

        Never raises for one bad question: it is marked failed, invalid or unscorable.
        """
        ...


def _passages(item: AnswerItem) -> tuple[Context, ...]:
    """The item's passages that hold text (blank ones support nothing and are never shown)."""
    return tuple(c for c in item.contexts if c.text and c.text.strip())


#: ``judge.faithfulness`` of an answer with no passage: nothing supports it.
_NO_PASSAGE_FAITHFULNESS = QuestionScore(0.0)


def _no_answer(item: AnswerItem) -> QuestionScore | None:
    if item.answer is None or item.error is not None:
        return QuestionScore(None, "failed", f"no answer: {item.error or 'no answer record'}")
    return None


# ------------------------------------------------------------------------------------ unitxt

_UNITXT_IMPORT_S: float | None = None
_UNITXT_LOCK = threading.Lock()


def _unitxt_evaluate() -> Any:
    """Import ``unitxt.eval_utils.evaluate`` (timed on the first import)."""
    global _UNITXT_IMPORT_S
    with _UNITXT_LOCK:
        started = time.perf_counter()
        try:
            from unitxt.eval_utils import evaluate
        except ImportError as exc:
            raise ConfigError("unitxt metrics need the unitxt package: pip install unitxt") from exc
        if _UNITXT_IMPORT_S is None:
            _UNITXT_IMPORT_S = time.perf_counter() - started
            logger.info("imported unitxt in %.2f s", _UNITXT_IMPORT_S)
        return evaluate


def unitxt_import_s() -> float | None:
    """Seconds the first import of unitxt took in this process, or None before it."""
    return _UNITXT_IMPORT_S


def unitxt_version() -> str | None:
    """The installed unitxt version, or None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version("unitxt")
    except metadata.PackageNotFoundError:
        return None


def _unitxt_row(item: AnswerItem, metric: str) -> tuple[dict[str, Any] | None, QuestionScore | None]:
    """The unitxt input row of one item for one metric, or the reason it gets none."""
    if metric == "context_correctness":
        if not item.expected_documents:
            return None, QuestionScore(None, "unscorable", "no expected documents")
        failed = _no_answer(item)
        if failed is not None:
            return None, failed
        return {
            "question": item.question,
            "context_ids": [c.document_id or "" for c in item.contexts],
            "ground_truths_context_ids": list(item.expected_documents),
        }, None
    if metric == "answer_correctness" and not (item.reference and item.reference.strip()):
        return None, QuestionScore(None, "unscorable", "no reference answer")
    failed = _no_answer(item)
    if failed is not None:
        return None, failed
    if metric == "faithfulness":
        # No passage supports nothing: unitxt needs one reference, and an empty one gives 0.
        contexts = [c.text for c in _passages(item)] or [""]
        return {"question": item.question, "answer": item.answer, "contexts": contexts}, None
    return {"question": item.question, "answer": item.answer, "ground_truths": [item.reference]}, None


def _finite(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


class UnitxtEvaluator:
    """The unitxt RAG metrics ``faithfulness``, ``answer_correctness``, ``context_correctness``.

    Each metric runs through ``unitxt.eval_utils.evaluate(df, metric_names=[...],
    compute_conf_intervals=...)`` on the questions it applies to (see the module docstring
    for the formulas and what is unscorable). unitxt is imported on first use.

    Args:
        compute_conf_intervals: ask unitxt for its bootstrap interval (BCa, 1,000 resamples).

    References:
        unitxt ``metrics.rag.external_rag``: https://www.unitxt.ai/en/latest/docs/rag_support.html
    """

    name = "unitxt"

    def __init__(self, *, compute_conf_intervals: bool = True) -> None:
        self.compute_conf_intervals = compute_conf_intervals
        self.last_run_s: float = 0.0

    @property
    def metrics(self) -> tuple[str, ...]:
        """``faithfulness``, ``answer_correctness``, ``context_correctness``."""
        return tuple(UNITXT_METRICS)

    def evaluate(self, items: Sequence[AnswerItem], metrics: Sequence[str]) -> dict[str, MetricScores]:
        """Score ``items`` with each of ``metrics`` (short names).

        Raises:
            ConfigError: an unknown metric, or unitxt is not installed.
        """
        for metric in metrics:
            if metric not in UNITXT_METRICS:
                raise ConfigError(f"unknown unitxt metric {metric!r}; known: {', '.join(UNITXT_METRICS)}")
        _unitxt_evaluate()  # imported before timing: its import time is reported apart
        started = time.perf_counter()
        out = {metric: self._one(items, metric) for metric in metrics}
        self.last_run_s = time.perf_counter() - started
        return out

    def _one(self, items: Sequence[AnswerItem], metric: str) -> MetricScores:
        scores: list[QuestionScore | None] = []
        rows: list[dict[str, Any]] = []
        positions: list[int] = []
        for i, item in enumerate(items):
            row, skipped = _unitxt_row(item, metric)
            scores.append(skipped)
            if row is not None:
                rows.append(row)
                positions.append(i)
        if not rows:
            return MetricScores([s for s in scores if s is not None])
        catalog = UNITXT_METRICS[metric]
        evaluate = _unitxt_evaluate()
        try:
            import pandas as pd

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                results, global_scores = evaluate(
                    pd.DataFrame(rows), metric_names=[catalog], compute_conf_intervals=self.compute_conf_intervals
                )
        except Exception as exc:  # unitxt raises many types; one metric failing must not stop the report
            logger.warning("unitxt %s failed: %s: %s", metric, type(exc).__name__, exc)
            reason = f"unitxt failed: {type(exc).__name__}: {_excerpt(str(exc), 200)}"
            for i in positions:
                scores[i] = QuestionScore(None, "failed", reason)
            return MetricScores([s for s in scores if s is not None])
        for j, i in enumerate(positions):
            value = _finite(results[catalog].iloc[j])
            scores[i] = (
                QuestionScore(value) if value is not None
                else QuestionScore(None, "failed", "unitxt returned no score for this question")
            )
        interval = None
        if catalog in global_scores:
            column = global_scores[catalog]
            low, high = _finite(column.get("score_ci_low")), _finite(column.get("score_ci_high"))
            if low is not None and high is not None:
                interval = (low, high)
        return MetricScores(
            [s for s in scores if s is not None], interval,
            "unitxt bootstrap (BCa, 1000 resamples)" if interval is not None else None,
        )


# ------------------------------------------------------------------------------------ judge


def judge_messages(metric: JudgeMetric, item: AnswerItem) -> list[dict[str, str]]:
    """Return the messages that ask the judge for ``metric`` on ``item``.

    The user message holds the metric's instructions, then the parts the metric uses, each
    under a heading: ``CONVERSATION SO FAR`` (earlier turns, when any), ``QUESTION``,
    ``PASSAGES`` (numbered ``[1]``, ``[2]``, ...; blank passages left out, and
    ``(no passages were retrieved)`` when none is left), ``REFERENCE ANSWER``, ``ANSWER``.
    """
    parts = [metric.instructions, ""]
    uses = set(metric.uses)
    has_reference = bool(item.reference and item.reference.strip())
    if "history" in uses and item.history:
        turns = "\n".join(f"{role}: {content}" for role, content in item.history)
        parts += ["[CONVERSATION SO FAR]", turns, ""]
    parts += ["[QUESTION]", item.question, ""]
    show_passages = "passages" in uses or ("reference_or_passages" in uses and not has_reference)
    if show_passages:
        passages = "\n".join(f"[{i}] {c.text}" for i, c in enumerate(_passages(item), start=1))
        parts += ["[PASSAGES]", passages or "(no passages were retrieved)", ""]
    if "reference_or_passages" in uses and has_reference:
        parts += ["[REFERENCE ANSWER]", item.reference or "", ""]
    parts += ["[ANSWER]", item.answer or "", "", "Score:"]
    return [{"role": "system", "content": JUDGE_SYSTEM_MESSAGE}, {"role": "user", "content": "\n".join(parts)}]


class JudgeEvaluator:
    """An LLM judge: one chat call per question and metric, replies read by :func:`parse_score`.

    Calls run in a bounded thread pool. A call that fails (after the chat model's retries)
    marks that question *failed* for that metric; a reply without a valid score marks it
    *invalid*, with the reason. Neither is averaged in.

    Args:
        judge: the judge :class:`~core.models.chat.ChatModel` (any OpenAI-compatible endpoint).
        max_workers: judge calls at once (>= 1).
        temperature: sampling temperature for judge calls (0 for repeatable judgements);
            None keeps the judge model's setting.
        max_completion_tokens: reply limit for judge calls; None keeps the judge model's
            setting (reasoning models need room to think).

    Raises:
        ConfigError: ``max_workers`` below 1.

    References:
        Amazon Bedrock RAG evaluation metrics:
        https://docs.aws.amazon.com/bedrock/latest/userguide/knowledge-base-evaluation-metrics.html ;
        Zheng et al. (2023), "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena".
    """

    name = "judge"

    def __init__(
        self,
        judge: Any,
        *,
        max_workers: int = 4,
        temperature: float | None = 0.0,
        max_completion_tokens: int | None = None,
        max_consecutive_failures: int | None = 5,
    ) -> None:
        if int(max_workers) < 1:
            raise ConfigError(f"max_workers must be at least 1, got {max_workers}")
        if max_consecutive_failures is not None and int(max_consecutive_failures) < 1:
            raise ConfigError(f"max_consecutive_failures must be at least 1, got {max_consecutive_failures}")
        self.max_consecutive_failures = max_consecutive_failures
        self.judge = judge
        self.max_workers = int(max_workers)
        self.temperature = temperature
        self.max_completion_tokens = max_completion_tokens
        self.last_run_s: float = 0.0

    @property
    def model_id(self) -> str:
        """The judge model's id."""
        return str(getattr(self.judge, "model_id", type(self.judge).__name__))

    @property
    def metrics(self) -> tuple[str, ...]:
        """``answer_relevance``, ``correctness``, ``completeness``, ``faithfulness``, ``helpfulness``."""
        return tuple(JUDGE_METRICS)

    def score_one(self, metric: JudgeMetric, item: AnswerItem) -> QuestionScore:
        """Ask the judge for one metric on one answered item and read its reply (a failed call
        is a ``failed`` score with the error; it is never raised)."""
        from core.models.chat import EmptyReplyError

        try:
            reply = self.judge.chat(
                judge_messages(metric, item),
                max_completion_tokens=self.max_completion_tokens, temperature=self.temperature,
            )
        except EmptyReplyError:
            reply = ""  # the judge answered with nothing: an invalid reply, not a failed call
        except Exception as exc:  # GenerationError after retries, or a judge of the caller's own
            return QuestionScore(None, "failed", f"judge call failed: {type(exc).__name__}: {_excerpt(str(exc), 200)}")
        parsed = parse_score(reply, metric.low, metric.high, integer=metric.integer)
        if not parsed.valid:
            return QuestionScore(None, "invalid", parsed.reason)
        value = float(parsed.value)  # type: ignore[arg-type]
        return QuestionScore(metric.normalise(value), raw=value if metric.integer else None)

    def evaluate(self, items: Sequence[AnswerItem], metrics: Sequence[str]) -> dict[str, MetricScores]:
        """Score ``items`` with each of ``metrics`` (short names).

        Raises:
            ConfigError: an unknown metric.
        """
        for metric in metrics:
            if metric not in JUDGE_METRICS:
                raise ConfigError(f"unknown judge metric {metric!r}; known: {', '.join(JUDGE_METRICS)}")
        started = time.perf_counter()
        results: dict[str, list[QuestionScore | None]] = {m: [None] * len(items) for m in metrics}
        jobs = []
        for metric in metrics:
            for i, item in enumerate(items):
                failed = _no_answer(item)
                if failed is not None:
                    results[metric][i] = failed
                elif metric == "faithfulness" and not _passages(item):
                    results[metric][i] = _NO_PASSAGE_FAITHFULNESS
                else:
                    jobs.append((metric, i))

        from core.models.breaker import CircuitBreaker

        breaker = CircuitBreaker(self.max_consecutive_failures, f"judge {self.model_id}")

        def run(job: tuple[str, int]) -> tuple[str, int, QuestionScore]:
            metric, i = job
            reason = breaker.blocked()
            if reason is not None:
                return metric, i, QuestionScore(None, "failed", reason)
            score = self.score_one(JUDGE_METRICS[metric], items[i])
            breaker.record(score.status != "failed", score.reason or "")
            return metric, i, score

        if jobs:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(jobs)), thread_name_prefix="ragtune-judge") as pool:
                for metric, i, score in pool.map(run, jobs):
                    results[metric][i] = score
        self.last_run_s = time.perf_counter() - started
        if breaker.skipped:
            logger.warning("%s: %d judge calls skipped after %d failures in a row", breaker.what, breaker.skipped,
                           self.max_consecutive_failures)
        return {m: MetricScores([s for s in scores if s is not None]) for m, scores in results.items()}


# ------------------------------------------------------------------------------------ aggregation


@dataclass
class MetricResult:
    """One metric over all questions.

    Attributes:
        name: ``<evaluator>.<metric>``, for example ``"unitxt.faithfulness"``.
        evaluator: ``"unitxt"`` or ``"judge"``.
        mean: mean score over the scored questions, in [0, 1], or None when none was scored.
        ci_low: lower end of the 95 % confidence interval of the mean, or None.
        ci_high: upper end, or None.
        n_scored: questions scored.
        n_failed: questions with no answer, or whose evaluation failed.
        n_invalid: questions whose judge reply held no valid score (judge metrics).
        n_unscorable: questions the metric does not apply to.
        ci_method: how the interval was computed, or None.
        reason: why ``mean`` or the interval is None, else None.
    """

    name: str
    evaluator: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n_scored: int
    n_failed: int
    n_invalid: int = 0
    n_unscorable: int = 0
    ci_method: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return ``{name, evaluator, scores{mean, ci_low, ci_high}, n_scored, n_failed,
        n_invalid, n_unscorable, ci_method, reason}`` (JSON-serialisable, no NaN)."""
        return {
            "name": self.name,
            "evaluator": self.evaluator,
            "scores": {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high},
            "n_scored": self.n_scored,
            "n_failed": self.n_failed,
            "n_invalid": self.n_invalid,
            "n_unscorable": self.n_unscorable,
            "ci_method": self.ci_method,
            "reason": self.reason,
        }


def bootstrap_interval(
    values: Sequence[float],
    *,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    confidence_level: float = CONFIDENCE_LEVEL,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean.

    Resamples ``values`` with replacement ``n_resamples`` times (numpy ``default_rng(seed)``),
    takes each resample's mean, and returns the ``(1 - level) / 2`` and ``(1 + level) / 2``
    quantiles of those means.

    Args:
        values: at least one finite score.
        n_resamples: resamples (>= 1).
        confidence_level: in (0, 1).
        seed: random seed (the same values always give the same interval).

    Returns:
        ``(low, high)``, ``low <= high``; ``(v, v)`` when every value is ``v``.

    Raises:
        ConfigError: no values, or a parameter out of range.
    """
    if len(values) == 0:
        raise ConfigError("bootstrap_interval needs at least one value")
    if n_resamples < 1 or not 0.0 < confidence_level < 1.0:
        raise ConfigError("n_resamples must be >= 1 and confidence_level in (0, 1)")
    data = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(n_resamples, len(data)))].mean(axis=1)
    alpha = (1.0 - confidence_level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def summarize(name: str, evaluator: str, result: MetricScores) -> MetricResult:
    """Aggregate one metric's per-question scores (see :class:`MetricResult`).

    The mean covers scored questions only. Interval: none with fewer than two scored
    questions (the reason says so); ``[v, v]`` when every scored question has score ``v``;
    else the evaluator's own interval when it gave a finite one, otherwise
    :func:`bootstrap_interval`. Never NaN.
    """
    per_question = result.per_question
    values = [s.score for s in per_question if s.status == "scored" and s.score is not None]
    counts = {status: sum(1 for s in per_question if s.status == status) for status in ("failed", "invalid", "unscorable")}
    base = dict(name=name, evaluator=evaluator, n_scored=len(values), n_failed=counts["failed"],
                n_invalid=counts["invalid"], n_unscorable=counts["unscorable"])
    if not values:
        parts = [f"{n} {status}" for status, n in counts.items() if n]
        detail = f" ({', '.join(parts)})" if parts else ""
        return MetricResult(mean=None, ci_low=None, ci_high=None, reason=f"no question scored{detail}", **base)
    mean = float(np.mean(values))
    if len(values) == 1:
        return MetricResult(mean=mean, ci_low=None, ci_high=None,
                            reason="one scored question: no confidence interval", **base)
    if max(values) == min(values):
        return MetricResult(mean=mean, ci_low=values[0], ci_high=values[0], ci_method="all scores equal", **base)
    if result.interval is not None:
        low, high = result.interval
        return MetricResult(mean=mean, ci_low=low, ci_high=high, ci_method=result.interval_method, **base)
    low, high = bootstrap_interval(values)
    return MetricResult(mean=mean, ci_low=low, ci_high=high,
                        ci_method=f"percentile bootstrap ({BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED})", **base)


# ------------------------------------------------------------------------------------ report


@dataclass
class AnswerReport:
    """Answer metrics for one set of answers.

    Attributes:
        metrics: one :class:`MetricResult` per metric, in the order asked.
        overall_score: the mean of the ``overall_metrics`` means, in [0, 1], or None.
        overall_metrics: the metrics averaged into ``overall_score``.
        overall_left_out: metrics asked for the overall score that had no mean.
        overall_reason: why ``overall_score`` is None, else None.
        questions: per-question records (see :func:`answer_report`).
        n_questions: questions in the golden set.
        n_answered: questions with an answer.
        n_failed: questions whose answer could not be generated.
        evaluators: what computed the metrics (unitxt version, judge model id).
        timings: seconds: ``unitxt_import_s`` (first import in this process), ``unitxt_s``,
            ``judge_s``, ``total_s``.
    """

    metrics: list[MetricResult]
    overall_score: float | None
    overall_metrics: list[str]
    overall_left_out: list[str]
    overall_reason: str | None
    questions: list[dict[str, Any]]
    n_questions: int
    n_answered: int
    n_failed: int
    evaluators: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float | None] = field(default_factory=dict)

    def metric(self, name: str) -> MetricResult:
        """Return the result of metric ``name``.

        Raises:
            KeyError: the metric was not computed.
        """
        for result in self.metrics:
            if result.name == name:
                return result
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON-serialisable dicts (no NaN)."""
        return {
            "metrics": [m.to_dict() for m in self.metrics],
            "overall_score": self.overall_score,
            "overall_metrics": list(self.overall_metrics),
            "overall_left_out": list(self.overall_left_out),
            "overall_reason": self.overall_reason,
            "n_questions": self.n_questions,
            "n_answered": self.n_answered,
            "n_failed": self.n_failed,
            "evaluators": dict(self.evaluators),
            "timings": dict(self.timings),
            "questions": list(self.questions),
        }


def check_metric_names(metrics: Sequence[str]) -> list[str]:
    """Validate metric names (``<evaluator>.<metric>``, see :data:`ALL_METRICS`).

    Returns:
        The names, duplicates removed, in order.

    Raises:
        ConfigError: an unknown name (with the nearest known one).
    """
    import difflib

    if isinstance(metrics, str):
        metrics = [metrics]
    out = list(dict.fromkeys(metrics))
    if not out:
        raise ConfigError("no answer metric selected")
    for name in out:
        if name not in ALL_METRICS:
            near = difflib.get_close_matches(str(name), ALL_METRICS, n=1, cutoff=0.5)
            tail = f"; did you mean '{near[0]}'?" if near else ""
            raise ConfigError(f"unknown answer metric {name!r}{tail} (known: {', '.join(ALL_METRICS)})")
    return out


def _items(questions: Sequence[Any], answers: Sequence[AnswerRecord]) -> list[AnswerItem]:
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"duplicate question ids: {', '.join(sorted({i for i in ids if ids.count(i) > 1}))}")
    by_id: dict[str, AnswerRecord] = {}
    for record in answers:
        if record.question_id in by_id:
            raise ConfigError(f"two answers for question {record.question_id!r}")
        by_id[record.question_id] = record
    unknown = [qid for qid in by_id if qid not in set(ids)]
    if unknown:
        shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise ConfigError(f"{len(unknown)} answer(s) for questions not in the golden set: {shown}")
    items = []
    for q in questions:
        record = by_id.get(q.id)
        expected = tuple(dict.fromkeys(t.document_id for t in getattr(q, "expected", ()) or ()))
        history = tuple((str(r), str(c)) for r, c in (getattr(q, "history", ()) or ()))
        if record is None:
            items.append(AnswerItem(q.id, q.question, history, q.reference, expected, None, "no answer record"))
        else:
            answer = record.answer if record.ok else None
            items.append(AnswerItem(q.id, q.question, history, q.reference, expected, answer,
                                    None if record.ok else (record.error or "no answer"), record.contexts))
    return items


def answer_report(
    questions: Sequence[Any],
    answers: Sequence[AnswerRecord],
    judge: Any = None,
    metrics: Sequence[str] | None = None,
    *,
    overall: Sequence[str] | None = None,
    judge_workers: int = 4,
    judge_temperature: float | None = 0.0,
    compute_conf_intervals: bool = True,
) -> AnswerReport:
    """Score answers produced elsewhere (by :func:`core.rag.generate_answers`, or read from a
    Bedrock bring-your-own-inference file) with unitxt and, when a judge is given, an LLM judge.

    Args:
        questions: the golden questions (``core.golden.GoldenQuestion``; distinct ids). Their
            ``reference`` feeds answer correctness and the judge, their ``expected`` document
            ids feed context correctness, their ``history`` is shown to the judge.
        answers: one :class:`~core.rag.AnswerRecord` per question (a question without one is
            counted as failed).
        judge: the judge :class:`~core.models.chat.ChatModel`, or None.
        metrics: metric names from :data:`ALL_METRICS`; None means the unitxt metrics, plus
            every judge metric when ``judge`` is given.
        overall: the metrics averaged into ``overall_score`` (equal weights, each metric's mean
            over its scored questions); None means every metric in ``metrics``. Metrics
            without a mean are left out and listed in ``overall_left_out``.
        judge_workers: judge calls at once.
        judge_temperature: temperature of judge calls (None keeps the judge's setting).
        compute_conf_intervals: compute confidence intervals (unitxt's and the bootstrap).

    Returns:
        An :class:`AnswerReport`. Its ``questions`` hold one record per question:
        ``{question_id, question, history?, answer, error, reference, contexts[{text,
        document_id}], metrics[{name, evaluator, score, status?, reason?, raw_score?}]}``.

    Raises:
        ConfigError: unknown metric names, a judge metric without a judge, ``overall`` naming
            a metric not computed, duplicate question ids, or answers for unknown questions.
    """
    started = time.perf_counter()
    if metrics is None:
        metrics = list(DEFAULT_METRICS) + ([f"judge.{m}" for m in JUDGE_METRICS] if judge is not None else [])
    names = check_metric_names(metrics)
    judge_names = [n.split(".", 1)[1] for n in names if n.startswith("judge.")]
    unitxt_names = [n.split(".", 1)[1] for n in names if n.startswith("unitxt.")]
    if judge_names and judge is None:
        raise ConfigError(f"judge metrics ({', '.join('judge.' + n for n in judge_names)}) need a judge model")
    overall_names = names if overall is None else check_metric_names(overall)
    missing = [n for n in overall_names if n not in names]
    if missing:
        raise ConfigError(f"overall names metrics that are not computed: {', '.join(missing)}")
    items = _items(questions, answers)

    per_metric: dict[str, MetricScores] = {}
    evaluators: dict[str, Any] = {}
    timings: dict[str, float | None] = {}
    if unitxt_names:
        unitxt = UnitxtEvaluator(compute_conf_intervals=compute_conf_intervals)
        for short, scores in unitxt.evaluate(items, unitxt_names).items():
            per_metric[f"unitxt.{short}"] = scores
        evaluators["unitxt"] = {"version": unitxt_version(), "metrics": {n: UNITXT_METRICS[n] for n in unitxt_names}}
        timings["unitxt_import_s"] = unitxt_import_s()
        timings["unitxt_s"] = unitxt.last_run_s
    if judge_names:
        judge_eval = JudgeEvaluator(judge, max_workers=judge_workers, temperature=judge_temperature)
        for short, scores in judge_eval.evaluate(items, judge_names).items():
            per_metric[f"judge.{short}"] = scores
        evaluators["judge"] = {"model_id": judge_eval.model_id, "temperature": judge_temperature}
        timings["judge_s"] = judge_eval.last_run_s

    results = []
    for name in names:
        evaluator = name.split(".", 1)[0]
        scores = per_metric[name]
        if not compute_conf_intervals:
            scores = MetricScores(scores.per_question)
        result = summarize(name, evaluator, scores)
        if not compute_conf_intervals and result.n_scored > 1 and result.ci_method != "all scores equal":
            result.ci_low = result.ci_high = None
            result.ci_method = None
            result.reason = result.reason or "confidence intervals not computed"
        results.append(result)

    used = [r.name for r in results if r.name in overall_names and r.mean is not None]
    left_out = [n for n in overall_names if n not in used]
    overall_score = float(np.mean([r.mean for r in results if r.name in used])) if used else None
    overall_reason = None if used else "no metric of the overall score has a mean"

    records = []
    for i, item in enumerate(items):
        record: dict[str, Any] = {"question_id": item.question_id, "question": item.question}
        if item.history:
            record["history"] = [{"role": r, "content": c} for r, c in item.history]
        record.update({
            "answer": item.answer,
            "error": item.error,
            "reference": item.reference,
            "contexts": [{"text": c.text, "document_id": c.document_id} for c in item.contexts],
            "metrics": [
                {"name": name, "evaluator": name.split(".", 1)[0], **per_metric[name].per_question[i].to_dict()}
                for name in names
            ],
        })
        records.append(record)
    n_failed = sum(1 for item in items if item.answer is None)
    timings["total_s"] = time.perf_counter() - started
    return AnswerReport(
        metrics=results, overall_score=overall_score, overall_metrics=used, overall_left_out=left_out,
        overall_reason=overall_reason, questions=records, n_questions=len(items),
        n_answered=len(items) - n_failed, n_failed=n_failed, evaluators=evaluators, timings=timings,
    )
