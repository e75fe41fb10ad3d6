"""Bootstrap intervals on retrieval means and McNemar's exact test (hand computations and
reference implementations, named in each test)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.errors import EvaluationError
from core.metrics.retrieval import BOOTSTRAP_RESAMPLES, aggregate, bootstrap_intervals, found_name, mcnemar_exact


def test_equal_scores_give_a_point_interval():
    low, high = bootstrap_intervals(np.ones((7, 2)) * [0.25, 1.0])
    assert list(low) == approx_list([0.25, 1.0]) and list(high) == approx_list([0.25, 1.0])


def approx_list(values):
    return [pytest.approx(v) for v in values]


def test_matches_an_explicit_resampling_loop():
    # reference: the same multinomial draws, each resample built question by question
    rng = np.random.default_rng(123)
    x = rng.random((15, 3))
    low, high = bootstrap_intervals(x, resamples=200, seed=7)
    draws = np.random.default_rng(7).multinomial(15, np.full(15, 1 / 15), size=200)
    means = np.array([np.repeat(x, counts, axis=0).mean(axis=0) for counts in draws])
    np.testing.assert_allclose(low, np.quantile(means, 0.025, axis=0))
    np.testing.assert_allclose(high, np.quantile(means, 0.975, axis=0))


def test_agrees_with_scipy_percentile_bootstrap():
    # reference: scipy.stats.bootstrap, percentile method (other random draws: within 0.02)
    from scipy.stats import bootstrap

    found = np.array([1.0] * 70 + [0.0] * 30)
    low, high = bootstrap_intervals(found[:, None], resamples=2000)
    ref = bootstrap((found,), np.mean, n_resamples=2000, method="percentile", random_state=0).confidence_interval
    assert low[0] == pytest.approx(ref.low, abs=0.02) and high[0] == pytest.approx(ref.high, abs=0.02)
    # and the normal approximation by hand: 0.7 +- 1.96 * sqrt(0.7 * 0.3 / 100) = 0.610 .. 0.790
    assert low[0] == pytest.approx(0.7 - 1.96 * math.sqrt(0.21 / 100), abs=0.02)


def test_aggregate_carries_intervals_and_the_method():
    per_question = [{"found@1": 1.0, "mrr": 1.0}, {"found@1": 0.0, "mrr": 0.5}, None, {"found@1": 1.0, "mrr": 1.0}]
    agg = aggregate(per_question).to_dict()
    assert agg["means"] == {"found@1": pytest.approx(2 / 3), "mrr": pytest.approx(2.5 / 3)}
    for name in ("found@1", "mrr"):
        assert agg["ci_low"][name] <= agg["means"][name] <= agg["ci_high"][name]
    assert agg["ci_low"]["found@1"] == 0.0 and agg["ci_high"]["found@1"] == 1.0  # 3 questions: any mix occurs
    assert agg["ci"] == {"method": "percentile bootstrap over questions", "level": 0.95,
                         "resamples": BOOTSTRAP_RESAMPLES, "seed": 0}
    assert aggregate(per_question).to_dict() == agg  # a fixed seed: reruns agree
    empty = aggregate([None]).to_dict()
    assert empty["ci_low"] == {} and empty["reason"] == "no scorable question"


@pytest.mark.parametrize("only_a, only_b, p", [
    (0, 0, 1.0),
    (1, 6, 2 * (1 + 7) / 2**7),  # 2 * (C(7,0) + C(7,1)) / 2^7 = 0.125
    (0, 6, 2 / 2**6),  # 0.03125
    (3, 3, 1.0),  # min(1, 2 * P(X <= 3 | 6)) = min(1, 2 * 42/64)
    (2, 10, 2 * (1 + 12 + 66) / 2**12),  # 0.0386
])
def test_mcnemar_exact_by_hand(only_a, only_b, p):
    both = 5
    a = [True] * both + [True] * only_a + [False] * only_b + [False] * 4
    b = [True] * both + [False] * only_a + [True] * only_b + [False] * 4
    result = mcnemar_exact(a, b)
    assert (result["only_a"], result["only_b"]) == (only_a, only_b)
    assert result["p_value"] == pytest.approx(p)


def test_mcnemar_needs_the_same_questions():
    with pytest.raises(EvaluationError, match="same questions"):
        mcnemar_exact([True], [True, False])


def test_found_reads_older_reports():
    assert found_name({"found@5": 0.5}, 5) == 0.5
    assert found_name({"success@5": 0.25}, 5) == 0.25
    assert found_name({}, 5) is None
