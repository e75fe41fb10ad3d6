"""Exact tests that every layer may use (no imports beyond the standard library).

References:
    Dixon, W. J. and Mood, A. M. (1946). The statistical sign test. JASA 41(236), 557-566.
    McNemar, Q. (1947). Note on the sampling error of the difference between correlated
    proportions or percentages. Psychometrika 12(2), 153-157.
"""

from __future__ import annotations

from math import comb


def binomial_two_sided(b: int, c: int) -> float:
    """Two-sided exact p-value of ``b`` against ``c`` paired differences under a fair coin.

    Under the null hypothesis the ``b + c`` non-tied pairs split as ``Binomial(b + c, 1/2)``;
    the p-value is ``min(1, 2 * P[X <= min(b, c)])`` (``scipy.stats.binomtest(b, b + c, 0.5)``
    for this symmetric case). It is the sign test's p-value and, for 0/1 outcomes, McNemar's
    exact test's (``core.metrics.paired.mcnemar_exact`` checks its inputs and calls this).

    Args:
        b: pairs where the first did better (a non-negative int).
        c: pairs where the second did better.

    Returns:
        The p-value in [0, 1]; 1.0 when ``b == c == 0``.
    """
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


__all__ = ["binomial_two_sided"]
