"""Samplers: the shared contract, reproducibility, the GAM's random phase and its fallbacks."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from core.errors import ConfigError
from core.optimization import GAMSampler, RandomSampler, Sampler, Study, Trial, default_space, sampler_from_dict
from core.optimization.trial import COMPLETE, FAILED, PENDING

from .conftest import small_space, tiny_space


def additive(config) -> float:
    """A synthetic objective, additive in the parameters; the best is unique."""
    score = 0.5
    score += {128: 0.0, 256: 0.08, None: 0.0}[config["chunk_size"]]
    score += {3: 0.0, 5: 0.05, 10: 0.02}[config["number_of_chunks"]]
    score += 0.06 if config["search_mode"] == "hybrid" else 0.0
    score += {None: 0.0, "rrf": 0.03, "weighted": 0.0}[config["ranker_strategy"]]
    score += 0.1 if config["foundation_model"] == "fm-b" else 0.0
    score += {0: 0.0, 32: 0.01, 64: 0.02, None: 0.0}[config["chunk_overlap"]]
    return round(score, 6)


def told(space, configs, scores, status=COMPLETE):
    out = []
    for c, s in zip(configs, scores):
        out.append(Trial(number=len(out), configuration=c, status=status if s is not None else FAILED,
                         score=s, error=None if s is not None else "boom"))
    return out


SAMPLERS = [lambda: RandomSampler(), lambda: GAMSampler(), lambda: GAMSampler(n_random_nodes=1, evals_per_trial=3)]


@pytest.mark.parametrize("make", SAMPLERS)
def test_contract(make):
    """Every sampler: at most n, distinct, valid, untried; deterministic per rng; round trip."""
    space = small_space()
    sampler: Sampler = make()
    assert isinstance(sampler, Sampler)
    configs = space.valid_configurations()
    trials = told(space, configs[::7], [additive(c) for c in configs[::7]])
    tried = {t.configuration.key for t in trials}
    got = sampler.propose(space, trials, 5, np.random.default_rng(1))
    assert len(got) == 5 and len({c.key for c in got}) == 5
    assert all(space.contains(c) and c.key not in tried for c in got)
    again = make().propose(space, trials, 5, np.random.default_rng(1))
    assert [c.key for c in again] == [c.key for c in got]
    assert sampler.batch_size(space, trials) >= 1
    assert sampler_from_dict(sampler.to_dict()).to_dict() == sampler.to_dict()
    # only untried configurations remain to propose; asking for more returns what is left
    rest = [c for c in configs if c.key not in tried]
    all_trials = told(space, configs, [additive(c) for c in configs])[: len(configs) - 2]
    left = make().propose(space, all_trials, 10, np.random.default_rng(0))
    assert {c.key for c in left} == {c.key for c in configs[-2:]}
    assert make().propose(space, told(space, configs, [0.5] * len(configs)), 3, np.random.default_rng(0)) == []
    assert rest  # sanity


def test_sampler_settings_are_checked():
    with pytest.raises(ConfigError, match="n_random_nodes"):
        GAMSampler(n_random_nodes=0)
    with pytest.raises(ConfigError, match="n_splines must be an integer greater than spline_order"):
        GAMSampler(n_splines=3, spline_order=3)
    with pytest.raises(ConfigError, match="max_evals"):
        RandomSampler(max_evals=0)
    with pytest.raises(ConfigError, match="unknown sampler"):
        sampler_from_dict({"name": "tpe"})


def test_random_phase_covers_every_categorical_value():
    space = small_space().with_overrides({"foundation_model": ["a", "b", "c", "d", "e"]})
    sampler = GAMSampler(n_random_nodes=1)  # the phase grows past n_random_nodes to cover
    trials: list[Trial] = []
    rng_seed = 0
    while True:
        got = sampler.propose(space, trials, 1, np.random.default_rng(rng_seed))
        rng_seed += 1
        if sampler.last_info.n_cover == 0:
            break
        trials += [Trial(len(trials), got[0], COMPLETE, additive(got[0]) if got[0]["foundation_model"] in ("a", "b")
                         else 0.4)]
    # five chat models need five configurations; greedy covering gets the rest along
    assert len(trials) == 5
    for name in ("chunking_method", "search_mode", "ranker_strategy", "foundation_model"):
        seen = {t.configuration[name] for t in trials}
        assert seen == set(space.level_codes()[0][[p.name for p in space.parameters].index(name)]), name


def values_of(space, configs):
    """Parameter name -> the set of its values among ``configs`` (parameters with one value left out)."""
    levels, _ = space.level_codes()
    return {p.name: {c[p.name] for c in configs} for p, lv in zip(space.parameters, levels) if len(lv) > 1}


def test_random_phase_spreads_over_every_value_within_n_random_nodes():
    space = small_space()  # at most 4 values per parameter (chunk_overlap: 0, 32, 64, null)
    every = values_of(space, space.valid_configurations())
    assert {name: len(v) for name, v in every.items()} == {
        "chunking_method": 2, "chunk_size": 2, "chunk_overlap": 4, "number_of_chunks": 3, "search_mode": 2,
        "ranker_strategy": 3, "ranker_k": 2, "ranker_alpha": 3, "foundation_model": 2}
    for seed in range(10):
        sampler = GAMSampler(n_random_nodes=4)
        got = sampler.propose(space, [], 4, np.random.default_rng(seed))
        assert (sampler.last_info.n_cover, sampler.last_info.n_random, sampler.last_info.n_model) == (3, 1, 0)
        # numeric values (chunk_overlap, number_of_chunks, ranker_alpha, ...) are tried too
        assert values_of(space, got) == every, seed
        # one at a time, as a study with batch 1 asks: the same coverage
        trials: list[Trial] = []
        for i in range(4):
            (one,) = sampler.propose(space, trials, 1, np.random.default_rng([seed, i]))
            trials.append(Trial(i, one, COMPLETE, additive(one)))
        assert values_of(space, [t.configuration for t in trials]) == every, seed
    again = GAMSampler(n_random_nodes=4).propose(space, [], 4, np.random.default_rng(9))
    assert again == got  # the same rng, the same design


def test_numeric_values_never_grow_the_random_phase():
    space = small_space().with_overrides({"number_of_chunks": list(range(1, 11))})
    sampler = GAMSampler(n_random_nodes=4)
    assert sampler.batch_size(space, []) == 4  # ten numbers of chunks, still four trials
    got = sampler.propose(space, [], 6, np.random.default_rng(0))
    info = sampler.last_info
    # 3 cover, 1 fills the phase, 2 more at random (no complete trial to fit a model on)
    assert (info.n_cover, info.n_random, info.n_model) == (3, 3, 0) and info.model is None
    # the four random-phase picks hold four different numbers of chunks
    assert len({c["number_of_chunks"] for c in got[:4]}) == 4
    # with more random nodes than values, every value is tried, then the picks are random
    sampler = GAMSampler(n_random_nodes=12)
    got = sampler.propose(space, [], 12, np.random.default_rng(0))
    assert {c["number_of_chunks"] for c in got[:10]} == set(range(1, 11))
    assert len({c.key for c in got}) == 12 and sampler.last_info.n_random == 9


def test_batch_size_follows_the_phases():
    space = small_space()
    sampler = GAMSampler(n_random_nodes=4, evals_per_trial=2)
    assert sampler.batch_size(space, []) == 4  # the random phase (covering needs 3: rrf, weighted, null)
    first = sampler.propose(space, [], 4, np.random.default_rng(0))
    assert sampler.last_info.n_cover == 3 and sampler.last_info.n_random == 1
    trials = told(space, first, [additive(c) for c in first])
    assert sampler.batch_size(space, trials) == 2


def test_pending_trials_count_towards_the_random_phase_and_are_never_proposed():
    space = small_space()
    sampler = GAMSampler(n_random_nodes=4)
    first = sampler.propose(space, [], 4, np.random.default_rng(0))
    pending = [Trial(i, c, PENDING) for i, c in enumerate(first)]
    more = sampler.propose(space, pending, 2, np.random.default_rng(1))
    assert not {c.key for c in more} & {c.key for c in first}
    assert sampler.last_info.n_cover == 0
    # nothing is complete yet: no model, random picks
    assert sampler.last_info.model is None and sampler.last_info.n_random == 2
    assert "too few successful trials" in sampler.last_info.reason


def history(space, n, objective=additive, seed=0):
    rng = np.random.default_rng(seed)
    configs = space.valid_configurations()
    picks = [configs[i] for i in rng.choice(len(configs), size=n, replace=False)]
    return told(space, picks, [objective(c) for c in picks])


def test_gam_with_too_few_rows_falls_back_to_random():
    space = small_space()
    sampler = GAMSampler(n_random_nodes=1)
    trials: list[Trial] = []
    while True:  # the random phase; only the first two evaluations succeed
        got = sampler.propose(space, trials, 1, np.random.default_rng(len(trials)))
        if not sampler.last_info.n_cover:
            break
        score = additive(got[0]) if len(trials) < 2 else None
        trials.append(Trial(len(trials), got[0], COMPLETE if score else FAILED, score, None if score else "boom"))
    info = sampler.last_info
    assert len(trials) >= 3 and info.model is None and info.n_rows == 2 and info.n_random == 1
    assert "too few successful trials" in info.reason


def test_gam_with_constant_scores_falls_back_to_random():
    space = small_space()
    trials = history(space, 12, objective=lambda c: 0.7)
    sampler = GAMSampler(n_random_nodes=1)
    a = sampler.propose(space, trials, 3, np.random.default_rng(0))
    assert sampler.last_info.model is None and "same score" in sampler.last_info.reason
    b = GAMSampler(n_random_nodes=1).propose(space, trials, 3, np.random.default_rng(0))
    assert a == b and len(a) == 3


def test_gam_fits_successful_rows_only_and_finds_the_best():
    space = small_space()
    trials = history(space, 20)
    best = max(space.valid_configurations(), key=additive)
    trials = [t for t in trials if t.configuration != best]
    failed = [Trial(len(trials) + i, c, FAILED, None, "timeout") for i, c in enumerate(
        [c for c in space.valid_configurations() if c not in {t.configuration for t in trials} and c != best][:5])]
    sampler = GAMSampler(n_random_nodes=1)
    got = sampler.propose(space, trials + failed, 1, np.random.default_rng(0))
    info = sampler.last_info
    assert info.model == "gam" and info.n_model == 1
    assert info.n_rows == len(trials)  # failed trials are not fed to the model
    assert got[0] == best  # an additive objective is what a GAM models exactly


def test_gam_on_collinear_history():
    """Every successful row has chunking_method=hybrid exactly when search_mode=hybrid."""
    space = small_space()
    configs = [c for c in space.valid_configurations()
               if (c["chunking_method"] == "hybrid") == (c["search_mode"] == "hybrid")]
    rng = np.random.default_rng(3)
    picks = [configs[i] for i in rng.choice(len(configs), size=10, replace=False)]
    trials = told(space, picks, [additive(c) for c in picks])
    sampler = GAMSampler(n_random_nodes=1)
    got = sampler.propose(space, trials, 4, np.random.default_rng(0))
    assert sampler.last_info.model == "gam" and len(got) == 4
    assert all(space.contains(c) for c in got)
    # an exactly duplicated column as well: number_of_chunks follows foundation_model
    dup = [c for c in space.valid_configurations()
           if (c["number_of_chunks"] == 10) == (c["foundation_model"] == "fm-b") and c["number_of_chunks"] != 5]
    picks = [dup[i] for i in rng.choice(len(dup), size=8, replace=False)]
    got = sampler.propose(space, told(space, picks, [additive(c) for c in picks]), 2, np.random.default_rng(0))
    assert sampler.last_info.model == "gam" and len(got) == 2


def test_ridge_fallback_when_pygam_fails(monkeypatch):
    space = small_space()
    trials = history(space, 15)
    best = max((c for c in space.valid_configurations() if c not in {t.configuration for t in trials}), key=additive)

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("singular")

    monkeypatch.setattr(GAMSampler, "_fit_gam", broken)
    sampler = GAMSampler(n_random_nodes=1)
    got = sampler.propose(space, trials, 1, np.random.default_rng(0))
    assert sampler.last_info.model == "ridge" and "LinAlgError" in sampler.last_info.reason
    assert additive(got[0]) >= additive(best) - 0.03  # the ridge model still points near the best


def test_ridge_fallback_when_pygam_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygam", None)  # import pygam raises ImportError
    space = small_space()
    sampler = GAMSampler(n_random_nodes=1)
    got = sampler.propose(space, history(space, 10), 2, np.random.default_rng(0))
    assert sampler.last_info.model == "ridge" and "not installed" in sampler.last_info.reason and len(got) == 2


def fitted(space, trials, sampler):
    """(number_of_chunks' fitted effect per value 3, 5, 10; the term kinds by parameter name)."""
    train = np.array([space.index_of(t.configuration) for t in trials])
    y = np.array([t.score for t in trials])
    kinds = {space.parameters[j].name: kind for j, kind, _, _ in sampler._design(space, train)}
    tables, model, _ = sampler._fit_tables(space, train, y)
    assert model == "gam"
    column = [p.name for p in space.parameters].index("number_of_chunks")
    return tables[column], kinds


def test_a_numeric_parameter_with_three_values_gets_a_line_that_reaches_untried_values():
    space = small_space()
    assert space.level_codes()[0][[p.name for p in space.parameters].index("number_of_chunks")] == (3, 5, 10)

    configs = [c for c in space.valid_configurations() if c["number_of_chunks"] != 10]
    picks = [configs[i] for i in np.random.default_rng(2).choice(len(configs), size=8, replace=False)]
    trials = told(space, picks, [rising(c) for c in picks])
    sampler = GAMSampler(n_random_nodes=1)
    effect, kinds = fitted(space, trials, sampler)
    assert kinds["number_of_chunks"] == "linear" and kinds["foundation_model"] == "factor"
    # a line in the rank: 10 (never tried) is one more step above 5
    assert effect[1] - effect[0] > 0.01
    assert effect[2] - effect[1] == pytest.approx(effect[1] - effect[0], rel=1e-6)
    sampler.EXPLORATION = 0.0  # the model alone
    got = sampler.propose(space, trials, 1, np.random.default_rng(0))[0]
    assert got["number_of_chunks"] == 10 and got["foundation_model"] == "fm-b"


def test_a_peak_in_the_middle_is_kept_once_cross_validation_can_choose():
    """From lam_search_min_rows rows the line competes with a factor on GCV; before, a line."""
    space = small_space()

    def peaked(c):  # best number_of_chunks is 5
        return 0.5 + {3: 0.0, 5: 0.05, 10: 0.0}[c["number_of_chunks"]] + (0.1 if c["foundation_model"] == "fm-b" else 0)

    many = history(space, 20, objective=peaked)
    effect, _ = fitted(space, many, GAMSampler(n_random_nodes=1))
    assert effect[1] > effect[0] + 0.03 and effect[1] > effect[2] + 0.03
    got = GAMSampler(n_random_nodes=1).propose(space, many, 1, np.random.default_rng(0))[0]
    assert got["number_of_chunks"] == 5 and got["foundation_model"] == "fm-b"
    # with fewer rows than lam_search_min_rows the term stays a line: no peak, as documented
    few = many[:8]
    effect, _ = fitted(space, few, GAMSampler(n_random_nodes=1))
    assert effect[2] - effect[1] == pytest.approx(effect[1] - effect[0], rel=1e-6, abs=1e-9)


def rising(c):
    """0.03 per step of number_of_chunks' rank (3, 5, 10), 0.1 for fm-b: a line in the rank."""
    return 0.5 + 0.03 * (3, 5, 10).index(c["number_of_chunks"]) + (0.1 if c["foundation_model"] == "fm-b" else 0)


def test_a_line_is_kept_at_twelve_rows_when_the_truth_is_a_line():
    """pygam's GCV rewards over-fitting once 1.4 * edof passes the rows: no factor wins there."""
    space = small_space()
    for seed in range(5):
        trials = history(space, 12, seed=seed)
        noise = np.random.default_rng(seed).normal(0, 0.01, size=12)
        trials = told(space, [t.configuration for t in trials], [rising(t.configuration) + e for t, e in zip(trials, noise)])
        effect, kinds = fitted(space, trials, GAMSampler(n_random_nodes=1))
        assert kinds["number_of_chunks"] == "linear"
        assert effect[2] - effect[1] == pytest.approx(effect[1] - effect[0], rel=1e-6, abs=1e-9), seed


def test_a_failed_factor_fit_keeps_the_lines(monkeypatch):
    space = small_space()
    trials = history(space, 20, objective=rising)
    real_fit = GAMSampler._fit_gam
    calls = []

    def second_fails(self, space_, terms, train, y):
        calls.append([kind for _, kind, _, _ in terms])
        if len(calls) == 2:
            raise ValueError("singular")
        return real_fit(self, space_, terms, train, y)

    monkeypatch.setattr(GAMSampler, "_fit_gam", second_fails)
    effect, _ = fitted(space, trials, GAMSampler(n_random_nodes=1))
    assert "linear" in calls[0] and "linear" not in calls[1]  # the second fit tried factors
    assert effect[2] - effect[1] == pytest.approx(effect[1] - effect[0], rel=1e-6, abs=1e-9)


def test_a_wide_numeric_parameter_seen_at_few_values_is_a_factor_not_a_line():
    space = small_space().with_overrides({"number_of_chunks": list(range(1, 11))})
    configs = [c for c in space.valid_configurations() if c["number_of_chunks"] in (1, 2)]
    picks = [configs[i] for i in np.random.default_rng(0).choice(len(configs), size=8, replace=False)]
    train = np.array([space.index_of(c) for c in picks])
    kinds = {space.parameters[j].name: kind for j, kind, _, _ in GAMSampler()._design(space, train)}
    assert kinds["number_of_chunks"] == "factor"  # no line drawn out to 10 from two values


def test_small_histories_are_fitted_with_the_small_history_lam(monkeypatch):
    import pygam

    seen: list[list[float]] = []
    real_fit = pygam.LinearGAM.fit

    def spy(self, X, y, *args, **kwargs):
        seen.append([float(np.ravel(t.lam)[0]) for t in self.terms if not t.isintercept])
        return real_fit(self, X, y, *args, **kwargs)

    monkeypatch.setattr(pygam.LinearGAM, "fit", spy)
    space = small_space()
    sampler = GAMSampler(n_random_nodes=1)
    sampler.propose(space, history(space, 8, objective=rising), 1, np.random.default_rng(0))
    assert sampler.last_info.model == "gam" and seen
    assert all(lam == GAMSampler.SMALL_HISTORY_LAM == 0.1 for lams in seen for lam in lams)


def test_failed_trials_count_as_tried_in_the_exploration_bonus(monkeypatch):
    """A chat model whose every evaluation failed is not the widest value because of it.

    Four configurations with "f" succeeded and the same four with "broken" failed; with every
    prediction equal, the untried configurations of both models are equally wide. Counting
    only complete trials, "broken" would look never tried and win every time.
    """
    space = tiny_space().with_overrides({"foundation_model": ["f", "broken"]})
    configs = space.valid_configurations()
    good = [[c for c in configs if c["foundation_model"] == "f"][i] for i in (0, 1, 3, 4)]  # every value covered
    twins = [next(d for d in configs if d["foundation_model"] == "broken"
                  and all(d[k] == c[k] for k in c if k != "foundation_model")) for c in good]
    trials = told(space, good + twins, [0.1, 0.2, 0.3, 0.4, None, None, None, None])
    monkeypatch.setattr(GAMSampler, "_fit_tables", lambda self, *a: ({0: np.zeros(2)}, "gam", None))
    chosen = set()
    for seed in range(20):
        sampler = GAMSampler(n_random_nodes=1)
        (got,) = sampler.propose(space, trials, 1, np.random.default_rng(seed))
        assert sampler.last_info.n_model == 1
        chosen.add(got["foundation_model"])
    assert chosen == {"f", "broken"}


def test_spline_terms_on_a_wide_numeric_parameter():
    space = small_space().with_overrides({"number_of_chunks": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]})

    def peaked(c):  # best number_of_chunks is 6, a smooth bump
        return 0.5 - 0.01 * (c["number_of_chunks"] - 6) ** 2 + (0.1 if c["foundation_model"] == "fm-b" else 0)

    trials = [t for t in history(space, 30, objective=peaked) if t.configuration["number_of_chunks"] != 6]
    sampler = GAMSampler(n_random_nodes=1)
    terms = sampler._design(space, np.array([space.index_of(t.configuration) for t in trials]))
    kinds = {space.parameters[j].name: kind for j, kind, _, _ in terms}
    assert kinds["number_of_chunks"] == "spline" and kinds["foundation_model"] == "factor"
    got = sampler.propose(space, trials, 1, np.random.default_rng(0))
    assert sampler.last_info.model == "gam"
    assert got[0]["number_of_chunks"] in (5, 6, 7) and got[0]["foundation_model"] == "fm-b"


def test_minimize_direction():
    space = small_space()
    trials = history(space, 20)
    worst = min((c for c in space.valid_configurations() if c not in {t.configuration for t in trials}), key=additive)
    got = GAMSampler(n_random_nodes=1).propose(space, trials, 1, np.random.default_rng(0), direction="minimize")
    assert additive(got[0]) == additive(worst)  # several configurations tie for the worst


def shared_values_variance(space, train, candidates, prior_intercept=1e5):
    """Reference for GAMSampler._uncertainty, from the Gaussian-process (kernel) side.

    The linear model's prior makes two configurations' scores covary by the number of values
    they share (each value's effect has variance 1) plus the intercept's variance (flat: a
    large number here); the noise variance is 1. The posterior variance of f(x) is then
    k(x, x) - k(x, X) (K + I)^-1 k(X, x) (Rasmussen & Williams 2006, eq. 2.26), the same
    quantity as x^T (A^T A + P)^-1 x by the Woodbury identity, up to O(1 / prior_intercept).
    """
    levels, codes = space.level_codes()
    varying = [j for j, lv in enumerate(levels) if len(lv) > 1]

    def k(a, b):
        return prior_intercept + sum((codes[a, j][:, None] == codes[b, j][None, :]).astype(float) for j in varying)

    train, candidates = np.asarray(train), np.asarray(candidates)
    K = k(train, train)
    cross = k(candidates, train)
    prior = np.diag(k(candidates, candidates))
    return prior - np.einsum("ij,ji->i", cross, np.linalg.solve(K + np.eye(len(train)), cross.T))


def test_uncertainty_by_hand():
    """One parameter, number_of_chunks 3 or 5; two rows, both 3; penalty p.

    A^T A + P over (intercept, 3, 5) is [[2, 2, 0], [2, 2 + p, 0], [0, 0, p]], whose inverse
    has the block [[(2 + p) / 2p, -1 / p], [-1 / p, 1 / p]] and 1 / p for 5. For 5 (x = 1, 0,
    1): (2 + p) / 2p + 1 / p = (4 + p) / 2p, 2.5 at p = 1: the intercept is known only
    through 3's effect (prior variance 1, plus the mean's 1/2), and 5's own prior adds 1. For
    3 (x = 1, 1, 0): (2 + p) / 2p - 2 / p + 1 / p = 1/2 for every p, the variance of a mean of
    two observations.
    """
    space = tiny_space().with_overrides({"search_mode": ["vector"], "chunk_size": [128], "chunk_overlap": [0],
                                         "number_of_chunks": [3, 5], "chunking_method": ["recursive"]})
    assert [c["number_of_chunks"] for c in space.valid_configurations()] == [3, 5]
    for p in (1.0, 0.5, 4.0):
        got = GAMSampler._uncertainty(space, np.array([0, 0]), np.array([1, 0]), penalty=p)
        np.testing.assert_allclose(got ** 2, [(4 + p) / (2 * p), 0.5], rtol=1e-12)


def test_uncertainty_matches_the_kernel_form_and_sees_confounding():
    space = small_space()
    rng = np.random.default_rng(7)
    for size in (1, 3, 12):
        train = rng.choice(space.n_valid, size=size, replace=True)  # repeats count twice
        candidates = np.arange(space.n_valid)
        np.testing.assert_allclose(GAMSampler._uncertainty(space, train, candidates) ** 2,
                                   shared_values_variance(space, train, candidates), rtol=1e-4)
    # number_of_chunks 10 tried twice, always with vector search (and vector search only with
    # 10); 5 and 3 twice each, with hybrid search. A count of trials per value (the diagonal of
    # the same model) rates 10 and 5 alike in an untried hybrid configuration; the posterior
    # knows 10's effect cannot be told apart from vector search's.
    configs = space.valid_configurations()

    def pick(**values):
        return next(i for i, c in enumerate(configs) if all(c[k] == v for k, v in values.items()))

    base = {"chunking_method": "recursive", "chunk_size": 128, "chunk_overlap": 0, "foundation_model": "fm-a"}
    hybrid = {"search_mode": "hybrid", "ranker_strategy": "rrf"}
    train = np.array([pick(**base, number_of_chunks=10, search_mode="vector")] * 2
                     + [pick(**base, number_of_chunks=5, **hybrid)] * 2
                     + [pick(**base, number_of_chunks=3, **hybrid)] * 2)
    other = {**base, "chunk_overlap": 32}  # a value neither row holds, the same in both candidates
    ten, five = pick(**other, number_of_chunks=10, **hybrid), pick(**other, number_of_chunks=5, **hybrid)
    width = GAMSampler._uncertainty(space, train, np.array([ten, five]))
    assert width[0] > width[1] * 1.05


def test_exploration_bonus_decides_between_equal_predictions(monkeypatch):
    """With every prediction equal, the most uncertain configuration comes first.

    Rows 0, 1, 3, 4 of the tiny space (every categorical value tried, so no covering pick);
    of the untried 2, 5, 6, 7, configuration 6 (hybrid chunker, weighted, alpha 0.5, values
    that no row or only one row holds) has the widest posterior, by the kernel reference.
    """
    space = tiny_space()
    configs = space.valid_configurations()
    trials = told(space, [configs[i] for i in (0, 1, 3, 4)], [0.1, 0.2, 0.3, 0.4])
    variance = shared_values_variance(space, np.array([0, 1, 3, 4]), np.array([2, 5, 6, 7]))
    assert int(np.argmax(variance)) == 2 and variance[2] > 1.1 * np.sort(variance)[-2]
    monkeypatch.setattr(GAMSampler, "_fit_tables", lambda self, *a: ({0: np.zeros(2)}, "gam", None))
    for seed in range(5):
        sampler = GAMSampler(n_random_nodes=1)
        assert sampler.propose(space, trials, 1, np.random.default_rng(seed)) == [configs[6]]
        assert sampler.last_info.model == "gam" and sampler.last_info.n_model == 1
    greedy = GAMSampler(n_random_nodes=1)
    greedy.EXPLORATION = 0.0  # plain greedy: the tie is broken at random
    firsts = {greedy.propose(space, trials, 1, np.random.default_rng(seed))[0].key for seed in range(20)}
    assert len(firsts) > 1 and firsts <= {configs[i].key for i in (2, 5, 6, 7)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_gam_batch_spreads_over_values_instead_of_near_copies(seed):
    """After the random phase, ``ask(8)`` picks one at a time, each pick a pending row of the
    exploration bonus (GP-BUCB): the first pick is the plain order's first, and the 8 hold more
    distinct parameter values than the plain top 8 of the same fit (counted over every
    parameter)."""
    from core.optimization.samplers import untried_indices

    space = default_space({"all-MiniLM-L6-v2": 256}, ["fm-a", "fm-b"])

    def score(c):  # additive and known: bigger chunks, more chunks, hybrid and fm-b are better
        return ((c["chunk_size"] or 0) / 1000 + c["number_of_chunks"] / 100
                + (0.02 if c["search_mode"] == "hybrid" else 0) + (0.01 if c["foundation_model"] == "fm-b" else 0))

    study = Study(space, GAMSampler(), "s", seed)
    while len(study.trials) < 8:
        for c in study.ask(None):
            study.tell(c, score(c))
    sampler, trials = study.sampler, study.trials
    candidates = untried_indices(space, trials)
    plain, *_ = sampler._model_order(space, trials, candidates, np.random.default_rng(1), "maximize", 1)
    batch, model, *_ = sampler._model_order(space, trials, candidates, np.random.default_rng(1), "maximize", 8)
    assert model == "gam" and batch[0] == plain[0]
    configs = space.valid_configurations()

    def distinct_values(rows):
        picked = [configs[i] for i in rows[:8]]
        return sum(len({c[p.name] for c in picked}) for p in space.parameters)

    assert distinct_values(batch) > distinct_values(plain)
    asked = study.ask(8)
    assert len(asked) == 8 and len({c.key for c in asked}) == 8
    assert not {c.key for c in asked} & {t.configuration.key for t in trials}
