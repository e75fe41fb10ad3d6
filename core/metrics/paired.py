"""Exact paired test for two systems scored on the same questions (found / not found).

References:
    McNemar, Q. (1947). Note on the sampling error of the difference between correlated
    proportions or percentages. Psychometrika 12(2), 153-157. The exact (binomial) form:
    under the null the ``b + c`` discordant pairs split as Binomial(b + c, 1/2); the
    two-sided p-value is ``min(1, 2 * P[X <= min(b, c)])`` (as
    ``scipy.stats.binomtest(b, b + c, 0.5)`` computes it for this symmetric case).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from core.errors import EvaluationError
from core.exact import binomial_two_sided

#: Significance level of the paired tests in reports and the CI gate.
ALPHA = 0.05


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs.

    Args:
        b: questions only the first system got right.
        c: questions only the second system got right.

    Returns:
        The p-value in [0, 1]; 1.0 when there is no discordant pair (``b == c == 0``).

    Raises:
        EvaluationError: ``b`` or ``c`` is negative or not an integer.

    References:
        McNemar (1947); see the module docstring.
    """
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in (b, c)):
        raise EvaluationError(f"mcnemar_exact needs two non-negative integers, got b={b!r}, c={c!r}")
    return binomial_two_sided(b, c)


@dataclass(frozen=True)
class PairedResult:
    """Two systems on the same questions.

    Attributes:
        n: questions both were scored on.
        only_first: ids of questions only the first got right (``b``).
        only_second: ids of questions only the second got right (``c``).
        p_value: :func:`mcnemar_exact` of ``b`` and ``c``.
    """

    n: int
    only_first: tuple[Any, ...]
    only_second: tuple[Any, ...]
    p_value: float

    @property
    def significant(self) -> bool:
        """Whether ``p_value < ALPHA``."""
        return self.p_value < ALPHA


def paired_outcomes(first: Mapping[Any, bool], second: Mapping[Any, bool]) -> PairedResult:
    """Compare two systems' right/wrong outcomes on the questions both were scored on.

    The one count of discordant questions: lists of outcomes in question order come here keyed
    by position (``core.metrics.retrieval.mcnemar_exact``, the chunking comparison).

    Args:
        first: question id (or position) -> whether the first system got it right.
        second: the same for the second system; ids missing from either side are left out.

    Returns:
        A :class:`PairedResult` (ids sorted).
    """
    common = sorted(set(first) & set(second))
    b = tuple(q for q in common if first[q] and not second[q])
    c = tuple(q for q in common if second[q] and not first[q])
    return PairedResult(len(common), b, c, mcnemar_exact(len(b), len(c)))
