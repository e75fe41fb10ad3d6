"""The exact McNemar test, against scipy.stats.binomtest and hand computations."""

import pytest
from scipy.stats import binomtest

from core.errors import EvaluationError
from core.metrics.paired import mcnemar_exact, paired_outcomes


@pytest.mark.parametrize("b,c", [(0, 1), (1, 0), (3, 0), (5, 1), (10, 3), (7, 7), (0, 12), (40, 25), (100, 130)])
def test_matches_scipy_binomtest(b, c):
    assert mcnemar_exact(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-12)


def test_hand_values():
    # b=0, c=5: 2 * (1/2)^5 = 0.0625 (by hand); b=0, c=6: 2/64 = 0.03125
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    assert mcnemar_exact(0, 6) == pytest.approx(0.03125)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(2, 2) == 1.0  # symmetric: the doubled tail is capped at 1


@pytest.mark.parametrize("b,c", [(-1, 2), (1.5, 2), (True, 1), ("3", 1)])
def test_rejects_bad_counts(b, c):
    with pytest.raises(EvaluationError):
        mcnemar_exact(b, c)


def test_paired_outcomes_counts_only_common_questions():
    first = {"a": True, "b": True, "c": False, "d": True, "only-first": True}
    second = {"a": True, "b": False, "c": True, "d": False, "only-second": False}
    result = paired_outcomes(first, second)
    assert result.n == 4
    assert result.only_first == ("b", "d") and result.only_second == ("c",)
    assert result.p_value == pytest.approx(binomtest(2, 3, 0.5).pvalue)
    assert not result.significant
