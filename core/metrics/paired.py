"""Paired exact tests on per-question outcomes of two systems.

References:
    Q. McNemar, "Note on the sampling error of the difference between correlated proportions
    or percentages", Psychometrika 12 (1947); the exact (binomial) form as in
    ``statsmodels.stats.contingency_tables.mcnemar(exact=True)``.
"""

from __future__ import annotations

from math import comb

from core.errors import ConfigError

#: Significance level of the paired tests.
ALPHA = 0.05


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar test on the discordant pairs of two systems.

    ``b``: questions only the first system got right; ``c``: only the second. Under the null
    hypothesis (the systems are equally good) ``b ~ Binomial(b + c, 1/2)``; the p-value is
    ``min(1, 2 * P[X <= min(b, c)])``, the two-sided binomial p-value of a symmetric
    distribution.

    Args:
        b: count >= 0.
        c: count >= 0.

    Returns:
        The p-value in (0, 1]; 1.0 when ``b + c == 0`` (nothing tells the systems apart).

    Raises:
        ConfigError: a count that is not a non-negative integer.

    References:
        See the module docstring; equals ``scipy.stats.binomtest(b, b + c, 0.5).pvalue``.
    """
    for name, v in (("b", b), ("c", c)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ConfigError(f"{name} must be a count (an integer >= 0), got {v!r}")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2.0 * tail)
