"""Answer metrics through unitxt's lexical RAG metrics (no model).

``unitxt`` is imported on first use (see :func:`unitxt_import_s`); the formulas are in
:mod:`core.metrics.answers`.

References:
    unitxt RAG metrics (``metrics.rag.external_rag.*``, ``unitxt.eval_utils.evaluate``):
    https://www.unitxt.ai/en/latest/docs/rag_support.html and https://github.com/IBM/unitxt
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import threading
import time
import warnings
from collections import OrderedDict
from typing import Any, Sequence

from core.errors import ConfigError
from core.metrics.bootstrap import bootstrap_interval, describe
from core.metrics.answer_scores import (
    AnswerItem,
    MetricScores,
    QuestionScore,
    excerpt,
    missing_answer,
    passages_of,
)

logger = logging.getLogger(__name__)

#: unitxt metrics: short name -> unitxt catalog name.
UNITXT_METRICS: dict[str, str] = {
    "faithfulness": "metrics.rag.external_rag.faithfulness",
    "answer_correctness": "metrics.rag.external_rag.answer_correctness",
    "context_correctness": "metrics.rag.external_rag.context_correctness",
}

_UNITXT_IMPORT_S: float | None = None
_UNITXT_LOCK = threading.Lock()
#: catalog name -> (the fetched metric, the lock one evaluation holds while it runs it):
#: fetched from the catalog once per process (one entry per metric of ``UNITXT_METRICS``).
_METRICS: dict[str, tuple[Any, threading.Lock]] = {}
#: Rows whose unitxt score a process remembers, per metric (least recently used dropped first).
#: The three metrics score each row on its own (``InstanceMetric``: token overlap, MRR), so a
#: row met again (the same answer and passages in another configuration's evaluation) gets the
#: score unitxt gave it, without running unitxt again.
ROW_MEMO_SIZE = 100_000
_ROW_SCORES: dict[str, "OrderedDict[bytes, Any]"] = {}
_ROW_LOCK = threading.Lock()
#: Texts whose normal form (``unitxt.metrics.normalize_answer``, SQuAD's lower-case, strip
#: punctuation and articles, one space) a process remembers, least recently used dropped
#: first, and the longest text remembered (longer ones are normalised each time): the
#: faithfulness rows of one evaluation repeat the same retrieved chunks across questions, and
#: the next evaluations with the same chunking repeat them again. At most
#: 2 x ``NORMALIZED_MEMO_TEXTS`` x ``NORMALIZED_MEMO_MAX_CHARS`` characters are held.
NORMALIZED_MEMO_TEXTS = 4096
NORMALIZED_MEMO_MAX_CHARS = 8192


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
            _remember_normalized_texts()  # imports unitxt.metrics, which eval_utils does not
            _UNITXT_IMPORT_S = time.perf_counter() - started
            logger.info("imported unitxt in %.2f s", _UNITXT_IMPORT_S)
        return evaluate


def _remember_normalized_texts() -> None:
    """Put a bounded memo in front of ``unitxt.metrics.normalize_answer``, the function
    ``TokenOverlap`` (behind the faithfulness and answer-correctness metrics) normalises its
    prediction and each reference with: a pure function of one string, so its memo changes no
    score, only how often a retrieved chunk met again is normalised (character by character).
    Does nothing when the installed unitxt has no such function or it is already wrapped."""
    import unitxt.metrics as unitxt_metrics

    original = getattr(unitxt_metrics, "normalize_answer", None)
    if not callable(original) or getattr(original, "__wrapped__", None) is not None:
        return
    remembered = functools.lru_cache(maxsize=NORMALIZED_MEMO_TEXTS)(original)

    @functools.wraps(original)
    def normalize_answer(text: Any) -> Any:
        if type(text) is str and len(text) <= NORMALIZED_MEMO_MAX_CHARS:
            return remembered(text)
        return original(text)

    normalize_answer.cache_info = remembered.cache_info  # type: ignore[attr-defined]
    unitxt_metrics.normalize_answer = normalize_answer


def _unitxt_metric(catalog: str) -> tuple[Any, threading.Lock]:
    """The metric ``catalog`` names (``unitxt.artifact.fetch_artifact``, as ``evaluate`` does
    for a name), fetched once per process, and its lock: one metric object runs one dataset at
    a time (unitxt does not say its operators may run in several threads at once)."""
    with _UNITXT_LOCK:
        found = _METRICS.get(catalog)
        if found is None:
            from unitxt.artifact import fetch_artifact

            metric, _ = fetch_artifact(catalog)
            found = _METRICS[catalog] = (metric, threading.Lock())
        return found


def preload() -> None:
    """Import unitxt and fetch the metrics of :data:`UNITXT_METRICS` from its catalog, as the
    first scoring would (for a caller that does it ahead, in a thread of its own).

    Raises:
        ConfigError: unitxt is not installed.
    """
    _unitxt_evaluate()
    for catalog in UNITXT_METRICS.values():
        _unitxt_metric(catalog)


def unitxt_import_s() -> float | None:
    """Seconds the first import of unitxt took in this process, or None before it."""
    return _UNITXT_IMPORT_S


@functools.cache
def unitxt_version() -> str | None:
    """The installed unitxt version, or None when it is not installed (looked up once per
    process: the package metadata is read from disk)."""
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
        failed = missing_answer(item)
        if failed is not None:
            return None, failed
        return {
            "question": item.question,
            "context_ids": [c.document_id or "" for c in item.contexts],
            "ground_truths_context_ids": list(item.expected_documents),
        }, None
    if metric == "answer_correctness" and not (item.reference and item.reference.strip()):
        return None, QuestionScore(None, "unscorable", "no reference answer")
    failed = missing_answer(item)
    if failed is not None:
        return None, failed
    if metric == "faithfulness":
        # No passage supports nothing: unitxt needs one reference, and an empty one gives 0.
        contexts = [c.text for c in passages_of(item)] or [""]
        return {"question": item.question, "answer": item.answer, "contexts": contexts}, None
    return {"question": item.question, "answer": item.answer, "ground_truths": [item.reference]}, None


def _scored_rows(catalog: str, rows: Sequence[dict[str, Any]]) -> list[Any]:
    """unitxt's score of each of ``rows`` with the metric ``catalog`` names, in the order of
    ``rows``: rows this process scored before (by :func:`_row_key`) are taken from its memo,
    the others (each distinct row once, as a copy: unitxt writes into the rows it is given) are
    scored by :func:`_direct_scorer`'s path when the metric has that shape, else through
    ``unitxt.eval_utils.evaluate`` in one call.

    Raises:
        whatever unitxt raises (nothing new is remembered then).
    """
    keys = [_row_key(row) for row in rows]
    with _ROW_LOCK:
        memo = _ROW_SCORES.setdefault(catalog, OrderedDict())
        known = {key: memo[key] for key in keys if key in memo}
        for key in known:
            memo.move_to_end(key)
    todo = list({key: row for key, row in zip(keys, rows) if key not in known}.items())
    if todo:
        evaluate = _unitxt_evaluate()
        unitxt_metric, lock = _unitxt_metric(catalog)
        direct = _direct_scorer(unitxt_metric)
        with lock, warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if direct is not None:
                values = [direct(row) for _, row in todo]
            else:
                # the list form of evaluate with the metric object: the catalog is read once
                # per process, not once per call, and no DataFrame is built
                scored, _ = evaluate([dict(row) for _, row in todo], metric_names=[unitxt_metric],
                                     compute_conf_intervals=False)
                values = [entry[unitxt_metric] for entry in scored]
        new = {key: value for (key, _), value in zip(todo, values)}
        with _ROW_LOCK:
            for key, value in new.items():
                memo[key] = value
            while len(memo) > ROW_MEMO_SIZE:
                memo.popitem(last=False)
        known.update(new)
    return [known[key] for key in keys]


def _direct_scorer(pipeline: Any) -> Any:
    """A function scoring one row as ``unitxt.eval_utils.evaluate`` does with ``pipeline``, or
    None when ``pipeline`` is not of the shape it handles.

    The three metrics of :data:`UNITXT_METRICS` are unitxt ``MetricPipeline``s: preprocess
    steps that only ``Copy`` fields (``field_to_field``, or ``field`` to ``to_field``) or
    ``Wrap`` one inside a list, then one ``InstanceMetric`` (``TokenOverlap``, ``MRR``) that
    reads ``references`` and ``prediction``, and no postprocess steps. For one instance,
    ``evaluate`` runs those steps, then ``InstanceMetric.compute_instance_scores`` calls
    ``metric.compute(references=..., prediction=..., task_data=...)`` and the pipeline reports
    its entry ``main_score`` as the instance's score. The function returned applies the same
    steps to a copy of the row and calls the same ``compute`` with the same arguments,
    without unitxt's stream operators around each row (most of the time ``evaluate`` took on
    short rows). Any other shape (another unitxt version, another metric) gives None, and the
    rows go through ``evaluate``.
    """
    from unitxt.metric_utils import get_remote_metrics_names
    from unitxt.metrics import InstanceMetric, MetricPipeline
    from unitxt.operator import InstanceOperator

    metric = getattr(pipeline, "metric", None)
    steps = list(getattr(pipeline, "preprocess_steps", None) or [])
    if (
        type(pipeline) is not MetricPipeline
        or not isinstance(metric, InstanceMetric)
        or getattr(pipeline, "postprocess_steps", None)
        or not all(isinstance(step, InstanceOperator) for step in steps)
        or (metric.reference_field, metric.prediction_field) != ("references", "prediction")
        or get_remote_metrics_names()  # evaluate may send a metric to a remote service then
    ):
        return None
    main_score = pipeline.main_score

    def score(row: dict[str, Any]) -> Any:
        instance = dict(row)
        for step in steps:
            instance = step.process_instance(instance)
        instance = metric.verify_instance(instance)
        references, prediction = instance["references"], instance["prediction"]
        metric._validate_prediction(prediction)
        metric._validate_reference(references)
        return metric.compute(references=references, prediction=prediction,
                              task_data=instance.get("task_data", {}))[main_score]

    return score

def _row_key(row: dict[str, Any]) -> bytes:
    """What a row's score is remembered by: the sha256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8")).digest()


def _finite(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


class UnitxtEvaluator:
    """The unitxt RAG metrics ``faithfulness``, ``answer_correctness``, ``context_correctness``.

    Each metric scores the questions it applies to with the metric object fetched from
    unitxt's catalog once per process: each row through the metric's own ``compute``, as
    ``unitxt.eval_utils.evaluate(rows, metric_names=[metric], compute_conf_intervals=False)``
    would call it (see :func:`_direct_scorer`; other metric shapes run through ``evaluate``
    itself), rows met before from a memo (see the module docstring for the formulas and what
    is unscorable); the interval of the mean is the BCa bootstrap
    of :func:`core.metrics.bootstrap.bootstrap_interval` over the per-question scores (the
    method unitxt itself uses, vectorised: unitxt's own bootstrap recomputes each resample's
    mean in Python). unitxt is imported on first use.

    Args:
        compute_conf_intervals: compute the BCa bootstrap interval (1,000 resamples, seeded).

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
        try:
            values = _scored_rows(UNITXT_METRICS[metric], rows)
        except Exception as exc:  # unitxt raises many types; one metric failing must not stop the report
            logger.warning("unitxt %s failed: %s: %s", metric, type(exc).__name__, exc)
            reason = f"unitxt failed: {type(exc).__name__}: {excerpt(str(exc), 200)}"
            for i in positions:
                scores[i] = QuestionScore(None, "failed", reason)
            return MetricScores([s for s in scores if s is not None])
        for i, raw in zip(positions, values):
            value = _finite(raw)
            scores[i] = (
                QuestionScore(value) if value is not None
                else QuestionScore(None, "failed", "unitxt returned no score for this question")
            )
        interval = None
        values = [s.score for s in scores if s is not None and s.score is not None]
        if self.compute_conf_intervals and len(values) > 1 and min(values) < max(values):
            try:
                interval = bootstrap_interval(values, method="BCa")
            except ConfigError as exc:  # BCa undefined: summarize falls back to the percentile bootstrap
                logger.info("unitxt %s: %s", metric, exc)
        return MetricScores([s for s in scores if s is not None], interval,
                            describe("BCa") if interval is not None else None)

