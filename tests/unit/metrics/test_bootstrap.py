"""The bootstrap interval of a mean (core.metrics.bootstrap), against unitxt's own interval and
an explicit implementation of the textbook formulas (each test names its reference)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from core.errors import ConfigError
from core.metrics.bootstrap import bootstrap_interval, describe

#: Rows for unitxt's answer correctness: token recall of the reference in the answer.
ROWS = [("the cat sat", "cat sat on mat"), ("dog", "the dog barks"), ("a b c", "b c d e"), ("x y", "x y"),
        ("red blue", "green blue red"), ("one", "two"), ("sun moon", "moon")] * 4


def unitxt_correctness(compute_conf_intervals: bool):
    import pandas as pd
    from unitxt.eval_utils import evaluate

    catalog = "metrics.rag.external_rag.answer_correctness"
    frame = pd.DataFrame([{"question": f"q{i}", "answer": a, "ground_truths": [r]} for i, (a, r) in enumerate(ROWS)])
    results, scores = evaluate(frame, metric_names=[catalog], compute_conf_intervals=compute_conf_intervals)
    return list(results[catalog]), scores[catalog]


def test_bca_equals_unitxts_own_interval():
    # reference: unitxt's bootstrap (scipy BCa, 1,000 resamples, one Python mean per resample)
    # seeded as unitxt seeds it: default_rng(hash(get_seed()) & (2**32 - 1))
    from unitxt.random_utils import get_seed

    values, scores = unitxt_correctness(True)
    seed = hash(get_seed()) & (2**32 - 1)
    low, high = bootstrap_interval(values, method="BCa", seed=seed)
    assert (low, high) == pytest.approx((scores["score_ci_low"], scores["score_ci_high"]), abs=1e-12)
    assert low < float(np.mean(values)) < high


def explicit_bca(values, n_resamples, level, seed):
    """Efron & Tibshirani (1993) ch. 14: bias correction from the share of resampled means
    below the mean (ties count half), acceleration from the jackknife, one resample at a time."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    draws = np.random.default_rng(seed).integers(0, n, (n_resamples, n))
    means = np.array([sum(x[j] for j in row) / n for row in draws])
    theta = x.mean()
    z0 = ndtri(((means < theta).sum() + (means <= theta).sum()) / (2 * n_resamples))
    jack = np.array([np.delete(x, i).mean() for i in range(n)])
    d = jack.mean() - jack
    a = (d**3).sum() / (6 * ((d**2).sum()) ** 1.5)
    out = []
    for z in (ndtri((1 - level) / 2), ndtri((1 + level) / 2)):
        out.append(np.percentile(means, 100 * ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))))
    return tuple(out)


@pytest.mark.parametrize("seed", [0, 5])
def test_bca_matches_the_textbook_formula(seed):
    # eighths over 16 questions: every mean is exact in floating point, so ties compare alike
    values = [k / 8 for k in (0, 1, 1, 3, 4, 4, 5, 7, 8, 8, 2, 0, 6, 8, 3, 1)]
    got = bootstrap_interval(values, method="BCa", n_resamples=500, confidence_level=0.9, seed=seed)
    assert got == pytest.approx(explicit_bca(values, 500, 0.9, seed), abs=1e-12)


def test_percentile_matches_an_explicit_resampling_loop():
    # reference: the same draws, each resample's mean taken one at a time, then the quantiles
    values = [0.2, 0.4, 0.9, 0.0, 1.0, 0.7]
    draws = np.random.default_rng(0).integers(0, 6, (1000, 6))
    means = [np.mean([values[j] for j in row]) for row in draws]
    assert bootstrap_interval(values) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])), abs=1e-12)


def test_equal_values_give_a_point_and_bad_input_a_clear_error():
    assert bootstrap_interval([0.25, 0.25, 0.25], method="BCa") == (0.25, 0.25)
    assert bootstrap_interval([0.7]) == (0.7, 0.7)
    with pytest.raises(ConfigError, match="at least one value"):
        bootstrap_interval([])
    with pytest.raises(ConfigError, match="finite"):
        bootstrap_interval([0.1, float("nan")])
    with pytest.raises(ConfigError, match="unknown bootstrap method 'bca'"):
        bootstrap_interval([0.1, 0.2], method="bca")
    assert describe("BCa") == "BCa bootstrap (1000 resamples, seed 0)"


def test_unitxt_evaluator_interval_is_the_bca_of_its_per_question_scores():
    # the scores are unitxt's (compute_conf_intervals=False); the interval is ours over them
    from core.metrics.answer_scores import AnswerItem
    from core.metrics.unitxt_metrics import UnitxtEvaluator

    values, _ = unitxt_correctness(False)
    items = [AnswerItem(f"q{i}", f"q{i}", (), r, (), a, None) for i, (a, r) in enumerate(ROWS)]
    scores = UnitxtEvaluator().evaluate(items, ["answer_correctness"])["answer_correctness"]
    assert [s.score for s in scores.per_question] == pytest.approx(values)
    assert scores.interval == bootstrap_interval(values, method="BCa")
    assert scores.interval_method == "BCa bootstrap (1000 resamples, seed 0)"
