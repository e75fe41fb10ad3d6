"""The time a user waits for one question's results, measured per question in the evaluation
of one configuration, the way ``evaluate`` measures it for its setups.

An evaluation scores its rankings from batched, memoised searches (every question in one
request, legs and chunks remembered across configurations: ``core.vectorstores.legs``), whose
times say nothing about what one user waits for. So its wait is measured apart, per question,
as ``evaluate``'s ``core.evaluation.retrieval`` does for a setup:

- ``query_embedding``: the question embedded alone by the embedding model itself (not its
  cache), one untimed call first so no model pays for loading. The time does not depend on
  the configuration, so a run (``EvaluationContext``) measures it once per model and question.
- ``search``: the question searched alone with the configuration's first stage (its search
  settings at ``PipelineSettings.first_stage_depth``), on a store that answers from the
  database, not from the run's leg memo; one untimed search first, so no configuration pays
  for a cold start. The query's vector comes from the cache, as the embedding is timed above.
- ``rerank``: with a reranker, the cost of scoring the question's first-stage passages: the
  sum of each pair's cost as measured when the model scored it
  (``core.models.rerank.PairScore.cost_ms``, kept by ``core.models.cache.CachedReranker``), so
  a pair read from the cache costs what a user waits for it.
- ``generation``: with answers, the seconds the answerer spent on the question
  (``core.rag.records.AnswerRecord.duration_s``, answered ``max_workers`` at a time).
- ``total``: the sum of the parts, per question.

Per-question lists are kept in the result's ``per_question["wait_ms"]`` (aligned with its
``ids``, so a promotion's result merges them with the lower rung's), and their statistics in
``timings_ms`` (``{median, p95, mean}`` per part and for ``total``, the shape of ``evaluate``'s
setups; ``core.reports.tables.wait_of`` reads it).
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

#: The parts of a question's wait, in the order they happen.
WAIT_PARTS = ("query_embedding", "search", "rerank", "generation")


def stats_ms(values: Sequence[float]) -> dict[str, float]:
    """``{median, p95, mean}`` of latencies in ms, rounded to the microsecond (p95: numpy's
    linear-interpolation percentile); zeros for no values."""
    if not values:
        return {"median": 0.0, "p95": 0.0, "mean": 0.0}
    p95 = float(np.percentile(np.asarray(values, dtype=np.float64), 95))
    return {"median": round(statistics.median(values), 3), "p95": round(p95, 3),
            "mean": round(statistics.fmean(values), 3)}


def time_query_embeddings(model: Any, questions: Sequence[str],
                          keep: Callable[[str, Any], None] | None = None) -> list[float]:
    """Embed each question alone with ``model``'s own model (``model.model`` for a cached
    one), as a user's query is, and return the milliseconds each took, after one untimed
    call (so no question pays for loading the model). ``keep(question, vector)`` receives
    each vector (for example to put it in the cache); without it nothing is kept.

    Raises:
        whatever the model raises.
    """
    raw = getattr(model, "model", model)
    if not questions:
        return []
    raw.embed_query(questions[0])
    out = []
    for text in questions:
        started = time.perf_counter()
        vector = raw.embed_query(text)
        out.append((time.perf_counter() - started) * 1000.0)
        if keep is not None:
            keep(text, vector)
    return out


def time_first_stage(store: Any, questions: Sequence[str], depth: int, setup: Mapping[str, Any],
                     reranker: Any = None) -> tuple[list[float], list[float] | None]:
    """Search each question alone at ``depth`` with ``setup`` (keyword arguments of the store's
    ``search``), timed, after one untimed search; with ``reranker`` also the cost of scoring
    each question's passages (see the module docstring).

    Returns:
        ``(search_ms, rerank_ms)``: one value per question, in order; ``rerank_ms`` None
        without a reranker.

    Raises:
        what the store and the reranker raise.
    """
    if not questions:
        return [], [] if reranker is not None else None
    store.search(questions[0], k=depth, **setup)
    search_ms: list[float] = []
    rerank_ms: list[float] | None = [] if reranker is not None else None
    for text in questions:
        started = time.perf_counter()
        hits = store.search(text, k=depth, **setup)
        search_ms.append((time.perf_counter() - started) * 1000.0)
        if rerank_ms is not None:
            rerank_ms.append(_rerank_cost_ms(reranker, text, [h.chunk.text for h in hits]))
    return search_ms, rerank_ms


def _rerank_cost_ms(reranker: Any, query: str, passages: list[str]) -> float:
    """The milliseconds scoring ``passages`` against ``query`` costs: the pairs' measured costs
    from a cached reranker (``scores``), else the time of the call."""
    if not passages:
        return 0.0
    scores = getattr(reranker, "scores", None)
    if scores is not None:
        return float(sum(s.cost_ms for s in scores([(query, p) for p in passages])))
    started = time.perf_counter()
    reranker.rerank(query, passages)
    return (time.perf_counter() - started) * 1000.0


def question_waits(parts: Mapping[str, Sequence[float] | None]) -> dict[str, list[float] | None]:
    """Per-question wait lists (``per_question["wait_ms"]``): each part of :data:`WAIT_PARTS`
    (None when the configuration has no such step), rounded to the microsecond, and ``total``,
    their per-question sum.

    Args:
        parts: part name -> one value per question (all the same length), or None.

    Raises:
        ValueError: the lists differ in length.
    """
    present = {name: [float(v) for v in values] for name, values in parts.items()
               if name in WAIT_PARTS and values is not None}
    lengths = {len(v) for v in present.values()}
    if len(lengths) > 1:
        raise ValueError(f"per-question wait parts differ in length: {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    out: dict[str, list[float] | None] = {name: None for name in WAIT_PARTS}
    out.update({name: [round(v, 3) for v in values] for name, values in present.items()})
    out["total"] = [round(sum(values[i] for values in present.values()), 3) for i in range(n)]
    return out


def wait_timings(waits: Mapping[str, Sequence[float] | None]) -> dict[str, Any]:
    """``timings_ms`` from per-question wait lists (:func:`question_waits`): ``n``, the
    statistics (``{median, p95, mean}``, :func:`stats_ms`) of each part (None
    when absent) and of ``total``, and the search's at the top level, as ``evaluate``'s
    setups hold them."""
    total = list(waits.get("total") or [])
    out: dict[str, Any] = {**stats_ms(list(waits.get("search") or [])), "n": len(total)}
    for name in WAIT_PARTS:
        values = waits.get(name)
        out[name] = stats_ms(list(values)) if values is not None else None
    out["total"] = stats_ms(total)
    return out


def merge_waits(blocks: Sequence[Mapping[str, Any]], questions: Sequence[str]) -> dict[str, Any] | None:
    """The per-question wait lists of ``questions``, gathered from ``per_question`` blocks
    (``{ids, wait_ms}``; a later block's question wins); None when a question has no wait
    (a result stored before waits were measured).

    A part one block has and another lacks (None) is kept as None: its questions were
    measured differently, so the part's statistics would mix two kinds.
    """
    rows: dict[str, dict[str, float | None]] = {}
    names = set(WAIT_PARTS) | {"total"}
    for block in blocks:
        waits = block.get("wait_ms")
        if not isinstance(waits, Mapping):
            continue
        for i, q in enumerate(block.get("ids") or []):
            rows[q] = {n: _at(waits.get(n), i) for n in names}
    if any(q not in rows or rows[q].get("total") is None for q in questions):
        return None
    out: dict[str, Any] = {}
    for name in [*WAIT_PARTS, "total"]:
        values = [rows[q][name] for q in questions]
        out[name] = None if any(v is None for v in values) else list(values)
    return out


def _at(values: Any, i: int) -> float | None:
    return float(values[i]) if isinstance(values, list) and i < len(values) and values[i] is not None else None


__all__ = ["WAIT_PARTS", "merge_waits", "question_waits", "stats_ms", "time_first_stage", "time_query_embeddings",
           "wait_timings"]
