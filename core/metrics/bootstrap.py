"""Bootstrap confidence intervals of a mean over questions (``scipy.stats.bootstrap``).

The one home of the bootstrap's resamples, seed and confidence level; the answer metrics
(unitxt and judge) take their intervals from :func:`bootstrap_interval`, the retrieval
metrics use the same constants.

References:
    Efron & Tibshirani (1993), "An Introduction to the Bootstrap", ch. 13 (percentile) and
    ch. 14 (BCa); ``scipy.stats.bootstrap``:
    https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.bootstrap.html
"""

from __future__ import annotations

import math
import warnings
from typing import Literal, Sequence

import numpy as np

from core.errors import ConfigError

#: Resamples of every bootstrap interval.
BOOTSTRAP_RESAMPLES = 1000
#: Confidence level of every interval.
CONFIDENCE_LEVEL = 0.95
#: Seed of every bootstrap, so reports are reproducible.
BOOTSTRAP_SEED = 0

Method = Literal["percentile", "BCa"]
#: The methods :func:`bootstrap_interval` computes.
METHODS: tuple[Method, ...] = ("percentile", "BCa")


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def bootstrap_interval(
    values: Sequence[float],
    *,
    method: Method = "percentile",
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    confidence_level: float = CONFIDENCE_LEVEL,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Bootstrap interval of the mean of ``values`` (one score per question).

    ``scipy.stats.bootstrap`` with a vectorised mean: it draws ``n_resamples`` resamples of
    ``len(values)`` indices at once (``rng.integers(0, n, (n_resamples, n))`` of
    ``numpy.random.default_rng(seed)``) and averages each row. ``percentile`` returns the
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the resampled means; ``BCa``
    corrects them for bias (the share of resampled means below the mean) and skew (the
    jackknife acceleration). The same values and seed always give the same interval.

    Args:
        values: at least one finite score.
        method: ``"percentile"`` or ``"BCa"``.
        n_resamples: resamples (>= 1).
        confidence_level: in (0, 1).
        seed: seed of the resampling.

    Returns:
        ``(low, high)``, ``low <= high``; ``(v, v)`` when every value is ``v``.

    Raises:
        ConfigError: no values, a non-finite value, an unknown method, a parameter out of
            range, or a BCa interval that is undefined for these values.

    References:
        Efron & Tibshirani (1993), "An Introduction to the Bootstrap", ch. 13 and 14;
        ``scipy.stats.bootstrap``.
    """
    if len(values) == 0:
        raise ConfigError("bootstrap_interval needs at least one value")
    if method not in METHODS:
        raise ConfigError(f"unknown bootstrap method {method!r}; known: {', '.join(METHODS)}")
    if n_resamples < 1 or not 0.0 < confidence_level < 1.0:
        raise ConfigError("n_resamples must be >= 1 and confidence_level in (0, 1)")
    data = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(data)):
        raise ConfigError("bootstrap_interval needs finite values")
    if data.min() == data.max():
        return float(data[0]), float(data[0])
    from scipy.stats import bootstrap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # BCa on a degenerate jackknife; checked below
        ci = bootstrap((data,), _mean, vectorized=True, n_resamples=n_resamples, confidence_level=confidence_level,
                       method=method, rng=np.random.default_rng(seed)).confidence_interval
    low, high = float(ci.low), float(ci.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ConfigError(f"the {method} bootstrap interval is undefined for these {len(data)} values")
    return low, high


def describe(method: Method, n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> str:
    """How an interval was computed, as reports say it: ``"BCa bootstrap (1000 resamples, seed 0)"``."""
    return f"{method} bootstrap ({n_resamples} resamples, seed {seed})"


__all__ = ["BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "CONFIDENCE_LEVEL", "METHODS", "bootstrap_interval", "describe"]
