"""Multi-fidelity rungs: sizes, the seeded question order, the sign test and the promotion rule.

Expected sizes are worked by hand from the rule in ``core.optimization.fidelity``; p-values come
from scipy's exact binomial test (the reference implementation).
"""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from core.errors import ConfigError
from core.optimization.fidelity import Rungs, question_order, rung_sizes, sign_test


@pytest.mark.parametrize("n, expected", [
    (49, (16, 49)),            # 16 * 3 = 48 <= 49; 48 * 3 > 49
    (100, (16, 100)),          # 16 * 3 = 48 <= 100; 48 * 3 = 144 > 100
    (293, (16, 48, 293)),      # 144 * 3 = 432 > 293
    (40, (40,)),               # 16 * 3 = 48 > 40: one rung
    (2000, (16, 48, 144, 432, 2000)),  # 432 * 3 = 1296 <= 2000; 1296 * 3 > 2000
])
def test_rung_sizes_by_hand(n, expected):
    assert rung_sizes(n, 16, 3) == expected


def test_rung_sizes_cap_subset_rungs():
    # 4 * 2**7 = 512 is the last size allowed below the whole set; 1024 > MAX_SUBSET_QUESTIONS
    assert rung_sizes(100_000, 4, 2)[-2] == 512


@pytest.mark.parametrize("kwargs", [{"n_questions": 0}, {"min_questions": 0}, {"eta": 1}, {"eta": True}])
def test_rung_sizes_refuse_bad_settings(kwargs):
    args = {"n_questions": 10, "min_questions": 2, "eta": 2, **kwargs}
    with pytest.raises(ConfigError):
        rung_sizes(**args)


def test_question_order_is_seeded_and_rungs_are_nested():
    ids = [f"q{i}" for i in range(50)]
    assert question_order(ids, 3) == question_order(ids, 3)
    assert question_order(ids, 3) != question_order(ids, 4)
    assert sorted(question_order(ids, 3)) == sorted(ids)
    rungs = Rungs(ids, 3, min_questions=5, eta=3)
    assert rungs.sizes == (5, 15, 50)
    assert rungs.questions(1)[:5] == rungs.questions(0)
    assert rungs.questions(2) == question_order(ids, 3)
    with pytest.raises(ConfigError):
        question_order(["a", "a"], 0)


@pytest.mark.parametrize("first, second", [
    ([1, 1, 1, 1, 1, 1, 0, 0.5], [0, 0, 0, 0, 0, 0, 0, 0.5]),  # b=6, c=0
    ([1, 0.5, 0.2, 1, None, 0.3], [0.5, 1, 0.2, 0.25, 1, 0.1]),  # b=3, c=1 (a tie and a None left out)
    ([0, 0, 0], [0, 0, 0]),  # no difference
])
def test_sign_test_matches_scipy(first, second):
    b, c, p = sign_test(first, second)
    pairs = [(x, y) for x, y in zip(first, second) if x is not None and y is not None and x != y]
    assert (b, c) == (sum(x > y for x, y in pairs), sum(x < y for x, y in pairs))
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    assert p == pytest.approx(expected)


def _scored(rungs, rung, values):
    return dict(zip(rungs.questions(rung), values))


def test_decide_stops_only_when_the_sign_test_says_worse():
    ids = [f"q{i}" for i in range(48)]
    rungs = Rungs(ids, 0, min_questions=16, eta=3)
    assert rungs.sizes == (16, 48)
    best = _scored(rungs, 0, [1.0] * 16)
    # worse on 6 questions, equal on 10: p = 2 / 2**6 = 0.03125 < 0.05 -> stopped
    worse6 = _scored(rungs, 0, [0.0] * 6 + [1.0] * 10)
    # worse on 5: p = 2 / 2**5 = 0.0625 -> promoted (a tie)
    worse5 = _scored(rungs, 0, [0.0] * 5 + [1.0] * 11)
    scored = {"best": best, "w6": worse6, "w5": worse5}
    d6 = rungs.decide("w6", 0, scored)
    assert (d6.verdict, d6.best_key, d6.n_questions) == ("stop", "best", 16)
    assert d6.p_value == pytest.approx(binomtest(0, 6, 0.5).pvalue)
    d5 = rungs.decide("w5", 0, scored)
    assert (d5.verdict, d5.p_value) == ("promote", pytest.approx(0.0625))
    assert rungs.decide("best", 0, scored).verdict == "promote"
    full = {"best": dict.fromkeys(ids, 1.0)}
    assert rungs.decide("best", 1, full).verdict == "complete"
    with pytest.raises(ConfigError):
        rungs.decide("w6", 1, scored)  # not scored on rung 1's questions


def test_separated_needs_every_other_significantly_worse():
    ids = [f"q{i}" for i in range(20)]
    rungs = Rungs(ids, 0, min_questions=20, eta=3)
    best = dict.fromkeys(ids, 1.0)
    clear = {q: (0.0 if i < 8 else 1.0) for i, q in enumerate(ids)}  # 8 worse: p = 2 / 256
    close = {q: (0.0 if i < 3 else 1.0) for i, q in enumerate(ids)}  # 3 worse: p = 0.25
    assert rungs.separated("best", {"best": best, "clear": clear})[0] is True
    ok, reason = rungs.separated("best", {"best": best, "clear": clear, "close": close})
    assert ok is False and "close" in reason
    # a configuration stopped at a subset is compared on the questions it saw
    partial = {q: 0.0 for q in ids[:6]}  # 6 worse of 6: p = 2 / 64
    assert rungs.separated("best", {"best": best, "partial": partial})[0] is True
