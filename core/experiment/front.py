"""The trade of an experiment: quality against the time a user waits and against cost.

:func:`front` takes the leaderboard of the configurations scored on every question and gives,
per configuration, its quality (the objective with its 95 % interval), the time a user waits
per question, tokens and cost per question where a price is configured, and the one-off cost
of building its index; then the non-dominated set and two picks on it.

- **Wait per question** (ms): the median over questions of ``timings_ms.total``
  (``core.reports.tables.wait_of``, the definition ``evaluate`` uses: query embedding +
  search + rerank, plus generation when answers are made), which every evaluation measures
  per question (``core.evaluation.waits``; a promotion's result holds the waits of every
  question of its rung, merged). Only a result stored before waits were measured falls back
  to its batched retrieval and answer time over the questions it scored,
  ``1000 * (retrieve_s + answers_s) / n`` (a mean, marked ``"batched mean"``; ``n`` is
  ``n_questions_evaluated``, the questions a promotion's timings cover, when it is recorded).
- **Tokens and cost per question**: the evaluation's ``cost.tokens`` over the questions they
  cover (``n_questions_evaluated`` when recorded: a promotion sums its rungs'); cost
  in USD from ``prompt_tokens`` and ``completion_tokens`` at the foundation model's price
  (``core.models.costs.price_for``), None without a price.
- **Index build** (once per collection, shared by every configuration that searches it): the
  chunking and indexing seconds of the evaluation that built it (the largest among those that
  name the collection) and the texts it embedded.
- **Non-dominated** (Pareto): no other configuration is at least as good on quality, wait and
  (when both know it) cost, and better on one. Quality is compared in points (x 100).
- **Picks**, on the front, with ``evaluate``'s rules and noise floors
  (``core.evaluation.retrieval``): ``best_for_balance`` is, among the front's configurations
  within ``BALANCE_POINTS`` points of the best quality, the fastest within the latency noise
  floor (``same_speed``), then the best quality, then the first in the leaderboard;
  ``best_for_time`` the same within ``TIME_POINTS``.

References:
    Deb, K. (2001). Multi-Objective Optimization Using Evolutionary Algorithms, section 2.4
    (dominance and the non-dominated set). Wiley.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from core.evaluation.retrieval import BALANCE_POINTS, NOISE_FLOOR_MS, NOISE_FRACTION, TIME_POINTS, same_speed
from core.models.costs import price_for
from core.reports.tables import wait_of


def _wait_ms(result: Mapping[str, Any], n_questions: int | None) -> tuple[float | None, str | None]:
    if isinstance(result.get("timings_ms"), dict):
        median = wait_of(result["timings_ms"])["median"]
        if median is not None:
            return median, "median"
    timings = result.get("timings") or {}
    parts = [timings.get(k) for k in ("retrieve_s", "answers_s") if isinstance(timings.get(k), (int, float))]
    n = result.get("n_questions_evaluated") or n_questions  # the questions a promotion's timings cover
    if not parts or not n:
        return None, None
    return 1000.0 * sum(parts) / n, "batched mean"


def _cost_per_question(result: Mapping[str, Any], n: int | None, prices: Mapping[str, Any] | None,
                       model_id: Any) -> tuple[float | None, float | None]:
    cost = result.get("cost") or {}
    tokens = cost.get("tokens")
    if not n or not isinstance(tokens, (int, float)):
        return None, None
    usd = None
    if prices and isinstance(model_id, str):
        price = price_for(model_id, prices)
        if price is not None:
            usd = (float(cost.get("prompt_tokens") or 0) * price.input_per_1m
                   + float(cost.get("completion_tokens") or 0) * price.output_per_1m) / 1e6 / n
    return tokens / n, usd


def _dominates(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    pairs = [(-a["quality_points"], -b["quality_points"]), (a["wait_ms"], b["wait_ms"])]
    if a["cost_per_question_usd"] is not None and b["cost_per_question_usd"] is not None:
        pairs.append((a["cost_per_question_usd"], b["cost_per_question_usd"]))
    return all(x <= y for x, y in pairs) and any(x < y for x, y in pairs)


def _pick(rows: Sequence[Mapping[str, Any]], points: float) -> str | None:
    if not rows:
        return None
    best = max(r["quality_points"] for r in rows)
    near = [r for r in rows if r["quality_points"] >= best - points - 1e-9]
    fastest = min(r["wait_ms"] for r in near)
    fast = [r for r in near if same_speed(r["wait_ms"], fastest)]
    top = max(r["quality_points"] for r in fast)
    return next(r["key"] for r in fast if r["quality_points"] == top)


def front(leaderboard: Sequence[Mapping[str, Any]], results: Mapping[str, Mapping[str, Any]],
          n_questions: int | None, prices: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The trade table, the non-dominated set and the picks (see the module docstring).

    Args:
        leaderboard: ``core.experiment.report.leaderboard`` rows, best first.
        results: stored evaluation results by configuration key.
        n_questions: questions in the golden file (a row's own ``n_questions`` wins).
        prices: model id -> price (``core.models.costs``), or None (no cost).

    Returns:
        ``{rows: [{key, quality, ci_low, ci_high, quality_points, wait_ms, wait_kind, tokens_per_question,
        cost_per_question_usd, collection, index_build{seconds, texts_embedded}, on_front}],
        front: [keys], best_for_balance, best_for_time, rules}``; only configurations scored on
        every question with a known wait are rows.
    """
    builds: dict[str, dict[str, Any]] = {}
    for res in results.values():
        name = res.get("collection")
        timings = res.get("timings") or {}
        seconds = sum(float(timings.get(k) or 0.0) for k in ("chunk_s", "index_s"))
        if name and seconds >= builds.get(name, {}).get("seconds", -1.0):
            builds[name] = {"seconds": round(seconds, 3), "texts_embedded": res.get("n_embedded")}
    rows = []
    for row in leaderboard:
        if row.get("score") is None or not row.get("fully_evaluated", True):
            continue
        res = results.get(row["key"]) or {}
        n = row.get("n_questions") or n_questions
        wait, kind = _wait_ms(res, n)
        if wait is None:
            continue
        tokens, usd = _cost_per_question(res, res.get("n_questions_evaluated") or n, prices,
                                         (row.get("parameters") or {}).get("foundation_model"))
        rows.append({"key": row["key"], "quality": row["score"], "ci_low": row.get("ci_low"),
                     "ci_high": row.get("ci_high"), "quality_points": 100.0 * float(row["score"]),
                     "wait_ms": round(wait, 3), "wait_kind": kind, "tokens_per_question": tokens,
                     "cost_per_question_usd": usd, "collection": res.get("collection"),
                     "index_build": builds.get(res.get("collection") or "", {}), "on_front": False})
    for r in rows:
        r["on_front"] = not any(_dominates(o, r) for o in rows if o is not r)
    on_front = [r for r in rows if r["on_front"]]
    floor = f"waits within {NOISE_FLOOR_MS:g} ms or {NOISE_FRACTION:.0%} count as equal, then the best quality"
    return {
        "rows": rows, "front": [r["key"] for r in on_front],
        "best_for_balance": _pick(on_front, BALANCE_POINTS), "best_for_time": _pick(on_front, TIME_POINTS),
        "rules": {
            "front": "not dominated on quality (higher), wait per question (lower) and, where both are known, "
                     "cost per question (lower)",
            "best_for_balance": f"on the front, fastest within {BALANCE_POINTS:g} points of the best quality ({floor})",
            "best_for_time": f"on the front, fastest within {TIME_POINTS:g} points of the best quality ({floor})",
        },
    }


__all__ = ["front"]
