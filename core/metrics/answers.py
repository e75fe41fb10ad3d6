"""Answer metrics: lexical RAG metrics through unitxt, and an LLM judge; their aggregation.

The pieces live by concern: what the metrics read and return in
:mod:`core.metrics.answer_scores`, unitxt in :mod:`core.metrics.unitxt_metrics`, the judge in
:mod:`core.metrics.llm_judge`; this module names the metrics, aggregates per-question scores
into means and intervals and builds the answer report (:func:`answer_report`).

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
(``ci_low``, ``ci_high``) from :func:`core.metrics.bootstrap.bootstrap_interval` (1,000 seeded
resamples): BCa for unitxt metrics (the method unitxt uses), percentile for judge metrics.
When every scored question has the same score the interval is ``[v, v]``; with one scored
question it is None, with the reason.

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
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from core.errors import ConfigError
from core.metrics.agreement import agreement
from core.metrics.answer_scores import AnswerItem, MetricScores, QuestionScore, Status
from core.metrics.bootstrap import bootstrap_interval, describe
from core.metrics.llm_judge import (
    JUDGE_METRICS,
    JUDGE_SYSTEM_MESSAGE,
    JudgeEvaluator,
    JudgeMetric,
    ParsedScore,
    judge_messages,
    parse_score,
)
from core.metrics.unitxt_metrics import UNITXT_METRICS, UnitxtEvaluator, unitxt_import_s, unitxt_version
from core.rag.records import AnswerRecord

if TYPE_CHECKING:
    from core.golden.types import GoldenQuestion
    from core.models.chat import ChatModel

logger = logging.getLogger(__name__)

__all__ = [
    "ALL_METRICS",
    "DEFAULT_METRICS",
    "JUDGE_METRICS",
    "JUDGE_SYSTEM_MESSAGE",
    "UNITXT_METRICS",
    "AnswerItem",
    "AnswerReport",
    "JudgeEvaluator",
    "JudgeMetric",
    "MetricResult",
    "MetricScores",
    "ParsedScore",
    "QuestionScore",
    "Status",
    "UnitxtEvaluator",
    "answer_report",
    "bootstrap_interval",
    "check_metric_names",
    "judge_messages",
    "parse_score",
    "summarize",
    "unitxt_import_s",
    "unitxt_version",
]

#: Every metric name, ``<evaluator>.<metric>``.
ALL_METRICS: tuple[str, ...] = (
    *(f"unitxt.{m}" for m in UNITXT_METRICS),
    *(f"judge.{m}" for m in JUDGE_METRICS),
)
#: The metrics computed when none are named and no judge is given.
DEFAULT_METRICS: tuple[str, ...] = tuple(f"unitxt.{m}" for m in UNITXT_METRICS)


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
        lost: judge calls that brought no score, by why (``rate_limited``, ``timed_out``,
            ``error``, ``skipped``, ``unparseable``); never averaged in, as 0 or otherwise.
        repeats: with ``--judge-repeat N``, how the N calls per item differ, else None.
        agreement: with people's grades in the golden file, the judge's agreement with them
            and the prediction-powered interval (``core.metrics.agreement.agreement``), else None.
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
    lost: dict[str, int] = field(default_factory=dict)
    repeats: dict[str, Any] | None = None
    agreement: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return ``{name, evaluator, scores{mean, ci_low, ci_high}, n_scored, n_failed,
        n_invalid, n_unscorable, ci_method, reason}`` (JSON-serialisable, no NaN), with
        ``lost``, ``repeats`` and ``agreement`` when known."""
        extra: dict[str, Any] = {}
        if self.evaluator == "judge":
            extra["lost"] = dict(self.lost)
        if self.repeats is not None:
            extra["repeats"] = dict(self.repeats)
        if self.agreement is not None:
            extra["agreement"] = dict(self.agreement)
        return {**extra,
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
                n_invalid=counts["invalid"], n_unscorable=counts["unscorable"], lost=dict(result.lost),
                repeats=result.repeats)
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
    return MetricResult(mean=mean, ci_low=low, ci_high=high, ci_method=describe("percentile"), **base)


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


def judge_agreement(questions: Sequence[Any], name: str, per_question: Sequence[QuestionScore]) -> dict[str, Any] | None:
    """The judge's agreement with people on metric ``name`` (``judge.<metric>``), from the
    grades golden rows carry (``GoldenQuestion.grades``), and the prediction-powered interval
    of the metric's mean (:func:`core.metrics.agreement.agreement`); None when no row the
    judge scored carries a grade for it.

    Args:
        questions: the golden questions, in the order of ``per_question``.
        name: the metric's name.
        per_question: the judge's scores, one per question.
    """
    metric = JUDGE_METRICS[name.split(".", 1)[1]]
    pairs, unlabeled = [], []
    for q, score in zip(questions, per_question):
        if score.status != "scored" or score.score is None:
            continue
        grade = (getattr(q, "grades", None) or {}).get(name)
        judged = metric.low + score.score * (metric.high - metric.low)  # back on the judge's scale
        if grade is None:
            unlabeled.append(score.score)
        else:
            pairs.append((float(grade), round(judged, 9)))
    if not pairs:
        return None
    return agreement(pairs, unlabeled, scale=(metric.low, metric.high), integer=metric.integer)


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
    questions: Sequence[GoldenQuestion],
    answers: Sequence[AnswerRecord],
    judge: ChatModel | None = None,
    metrics: Sequence[str] | None = None,
    *,
    overall: Sequence[str] | None = None,
    judge_workers: int = 4,
    judge_temperature: float | None = 0.0,
    compute_conf_intervals: bool = True,
    judge_repeat: int = 1,
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
        judge_repeat: judge calls per question and metric (``--judge-repeat``); each
            question's score is then the mean of its valid calls, and each metric reports how
            the calls differed (``repeats``).

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
        judge_eval = JudgeEvaluator(judge, max_workers=judge_workers, temperature=judge_temperature,
                                    repeats=judge_repeat)
        for short, scores in judge_eval.evaluate(items, judge_names).items():
            per_metric[f"judge.{short}"] = scores
        evaluators["judge"] = {"model_id": judge_eval.model_id, "temperature": judge_temperature,
                               "repeats": judge_eval.repeats}
        timings["judge_s"] = judge_eval.last_run_s

    results = []
    for name in names:
        evaluator = name.split(".", 1)[0]
        scores = per_metric[name]
        if not compute_conf_intervals:
            scores = MetricScores(scores.per_question, lost=scores.lost, repeats=scores.repeats)
        result = summarize(name, evaluator, scores)
        if evaluator == "judge":
            result.agreement = judge_agreement(questions, name, scores.per_question)
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
