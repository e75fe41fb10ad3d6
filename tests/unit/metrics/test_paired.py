"""The exact McNemar test, against scipy.stats.binomtest and a hand computation."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.metrics.paired import mcnemar_exact


def test_by_hand():
    # b=0, c=5: 2 * (1/2)^5 = 0.0625
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    # b=1, c=6: 2 * (1 + 7) / 2^7 = 0.125
    assert mcnemar_exact(1, 6) == pytest.approx(0.125)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(4, 4) == 1.0  # capped at 1


@pytest.mark.parametrize("b,c", [(b, c) for b in range(0, 26, 3) for c in range(0, 31, 4)] + [(120, 80), (3, 200)])
def test_matches_scipy_binomtest(b, c):
    from scipy.stats import binomtest

    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert mcnemar_exact(b, c) == mcnemar_exact(c, b)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_rejects_non_counts(bad):
    with pytest.raises(ConfigError, match="must be a count"):
        mcnemar_exact(bad, 2)
