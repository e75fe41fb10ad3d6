"""How far to trust a judge: its agreement with people's grades, and a prediction-powered
interval for a metric's mean.

A golden row may carry a person's grade for a judge metric (``"grades": {"judge.correctness":
1}``, on the judge's own scale). On the rows that have both, the judge's scores are compared
with the people's:

- :func:`weighted_kappa`: Cohen's weighted kappa with quadratic weights. With categories
  ``c_1 < ... < c_K`` (the scale's whole numbers for a whole-number scale such as 1 to 5, else
  the distinct values either rater gave), weights ``w_ij = (c_i - c_j)^2 / (c_K - c_1)^2``,
  the observed proportions ``O_ij`` and the proportions expected by chance
  ``E_ij = O_i. * O_.j``: ``kappa = 1 - sum(w * O) / sum(w * E)``. With equally spaced
  categories this is the usual quadratic kappa (``sklearn.metrics.cohen_kappa_score(...,
  weights="quadratic")``). 1 is perfect agreement, 0 chance; undefined (None) when the raters
  use one category between them.
- :func:`spearman`: Spearman's rank correlation (``scipy.stats.spearmanr``), for scores that
  are not on a few categories.
- :func:`ppi_mean_interval`: the prediction-powered estimate of the metric's mean, which uses
  the judge's scores on every row and the people's grades to correct the judge's bias:
  with ``n`` graded rows (people's ``Y``, judge's ``Yhat``) and ``N`` rows the judge scored
  that no person graded (``Yhat_u``), ``theta = mean(Yhat_u) + mean(Y - Yhat)`` and the
  interval ``theta +- z_(1-alpha/2) * sqrt(var(Yhat_u) / N + var(Y - Yhat) / n)``
  (sample variances, ``ddof=1``), clipped to ``[0, 1]``. With every row graded (``N = 0``) it
  is the classical interval of the people's mean, ``mean(Y) +- z * sd(Y) / sqrt(n)``.

References:
    Cohen (1968), "Weighted kappa: nominal scale agreement with provision for scaled
    disagreement or partial credit", Psychological Bulletin 70(4); Angelopoulos, Bates,
    Fannjiang, Jordan & Zrnic (2023), "Prediction-powered inference", Science 382(6671),
    eq. for the mean; Saad-Falcon, Khattab, Potts & Zaharia (2024), "ARES: An Automated
    Evaluation Framework for Retrieval-Augmented Generation Systems", NAACL (PPI over a judge's
    scores with a small human-annotated set).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from core.errors import EvaluationError
from core.metrics.bootstrap import CONFIDENCE_LEVEL

__all__ = ["PPIInterval", "agreement", "ppi_mean_interval", "spearman", "weighted_kappa"]


def weighted_kappa(first: Sequence[float], second: Sequence[float], categories: Sequence[float] | None = None) -> float | None:
    """Cohen's quadratic weighted kappa of two raters on the same items (see the module docstring).

    Args:
        first: one rater's grades.
        second: the other's, item by item.
        categories: the scale's categories; None: the distinct values given.

    Returns:
        Kappa in ``[-1, 1]``, or None when fewer than two items or a single category is used.

    Raises:
        EvaluationError: the two lists differ in length, or a grade is not a category.
    """
    if len(first) != len(second):
        raise EvaluationError(f"kappa needs the same items: {len(first)} and {len(second)} grades")
    if len(first) < 2:
        return None
    cats = sorted(set(categories) if categories is not None else set(first) | set(second))
    if len(cats) < 2:
        return None
    index = {c: i for i, c in enumerate(cats)}
    observed = np.zeros((len(cats), len(cats)))
    for a, b in zip(first, second):
        if a not in index or b not in index:
            raise EvaluationError(f"grade {a if a not in index else b!r} is not one of the categories {cats}")
        observed[index[a], index[b]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    values = np.asarray(cats, dtype=np.float64)
    weights = (values[:, None] - values[None, :]) ** 2 / (values[-1] - values[0]) ** 2
    chance = float((weights * expected).sum())
    if chance == 0.0:
        return None
    return 1.0 - float((weights * observed).sum()) / chance


def spearman(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Spearman's rank correlation of two raters (average ranks for ties), or None with fewer
    than two items or when either rater gives one value throughout."""
    if len(first) != len(second):
        raise EvaluationError(f"Spearman's rho needs the same items: {len(first)} and {len(second)} grades")
    if len(first) < 2 or len(set(first)) < 2 or len(set(second)) < 2:
        return None
    from scipy.stats import spearmanr

    rho = float(spearmanr(first, second).statistic)
    return rho if math.isfinite(rho) else None


@dataclass(frozen=True)
class PPIInterval:
    """A prediction-powered estimate of a metric's mean.

    Attributes:
        mean: the estimate, in [0, 1] (clipped).
        ci_low: the interval's lower end (clipped to 0).
        ci_high: its upper end (clipped to 1).
        n_labeled: rows with a person's grade and a judge score (``n``).
        n_unlabeled: rows the judge scored that no person graded (``N``).
        rectifier: ``mean(Y - Yhat)`` on the graded rows: how far the judge is off, on average.
        method: ``"PPI"`` or ``"classical"`` (every row graded).
        level: the confidence level.
    """

    mean: float
    ci_low: float
    ci_high: float
    n_labeled: int
    n_unlabeled: int
    rectifier: float
    method: str
    level: float = CONFIDENCE_LEVEL

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON."""
        return {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high, "n_labeled": self.n_labeled,
                "n_unlabeled": self.n_unlabeled, "rectifier": self.rectifier, "method": self.method,
                "level": self.level}


def ppi_mean_interval(human: Sequence[float], judge_labeled: Sequence[float], judge_unlabeled: Sequence[float],
                      level: float = CONFIDENCE_LEVEL) -> PPIInterval | None:
    """The prediction-powered interval of a mean (see the module docstring).

    Args:
        human: people's grades on the graded rows, in [0, 1].
        judge_labeled: the judge's scores on the same rows, in the same order.
        judge_unlabeled: the judge's scores on the rows no person graded.
        level: the confidence level, in (0, 1).

    Returns:
        A :class:`PPIInterval`, or None with fewer than two graded rows (or, with ungraded
        rows, fewer than two of those).

    Raises:
        EvaluationError: ``human`` and ``judge_labeled`` differ in length.
    """
    if len(human) != len(judge_labeled):
        raise EvaluationError(f"PPI needs a judge score for every graded row: {len(human)} grades, "
                              f"{len(judge_labeled)} scores")
    n, big_n = len(human), len(judge_unlabeled)
    if n < 2 or big_n == 1:
        return None
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2.0))
    y, yhat = np.asarray(human, dtype=np.float64), np.asarray(judge_labeled, dtype=np.float64)
    rect = y - yhat
    if big_n == 0:
        mean, se, method = float(y.mean()), float(y.std(ddof=1)) / math.sqrt(n), "classical"
    else:
        u = np.asarray(judge_unlabeled, dtype=np.float64)
        mean = float(u.mean() + rect.mean())
        se = math.sqrt(float(u.var(ddof=1)) / big_n + float(rect.var(ddof=1)) / n)
        method = "PPI"
    clip = lambda v: min(1.0, max(0.0, v))  # noqa: E731
    return PPIInterval(clip(mean), clip(mean - z * se), clip(mean + z * se), n, big_n, float(rect.mean()), method,
                       level)


def agreement(pairs: Sequence[tuple[float, float]], unlabeled: Sequence[float], *, scale: tuple[float, float],
              integer: bool) -> dict[str, Any]:
    """The judge's agreement with people on one metric, and its prediction-powered interval.

    Args:
        pairs: ``(person's grade, judge's score)`` per graded row the judge scored, on the
            judge's own scale (1 to 5 for answer relevance, 0 to 1 otherwise).
        unlabeled: the judge's scores, normalised to [0, 1], on the rows no person graded.
        scale: the scale's ``(low, high)``.
        integer: the scale has whole numbers only (its categories are then every whole number
            of the scale).

    Returns:
        ``{n, kappa, spearman, mean_difference, judge_mean, human_mean, ppi}``: ``kappa`` is
        the quadratic weighted kappa, ``spearman`` the rank correlation, ``mean_difference``
        the judge's mean minus the people's (normalised), ``ppi`` the
        :class:`PPIInterval` as a dict or None.
    """
    low, high = scale
    human = [h for h, _ in pairs]
    judged = [j for _, j in pairs]
    cats = list(range(int(low), int(high) + 1)) if integer else None
    norm = lambda v: (v - low) / (high - low)  # noqa: E731
    interval = ppi_mean_interval([norm(h) for h in human], [norm(j) for j in judged], list(unlabeled))
    return {
        "n": len(pairs),
        "kappa": weighted_kappa(human, judged, cats) if all(
            (not integer) or float(v).is_integer() for v in human + judged) else None,
        "spearman": spearman(human, judged),
        "human_mean": float(np.mean([norm(h) for h in human])) if human else None,
        "judge_mean": float(np.mean([norm(j) for j in judged])) if judged else None,
        "mean_difference": float(np.mean([norm(j) - norm(h) for h, j in pairs])) if pairs else None,
        "ppi": None if interval is None else interval.to_dict(),
    }
