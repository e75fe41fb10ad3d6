"""The multi-fidelity loop over a study: work items, promotions, stops and the stop reason.

Every expected schedule is worked by hand from the rule in ``core.optimization.fidelity``
(rung sizes ``(2, 6)`` for 6 questions with ``min_questions=2, eta=3``) and the exact sign
test's p-values (2 / 2**n when one side wins all n discordant questions).
"""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.optimization import RandomSampler, Study
from core.optimization.fidelity import Rungs
from core.optimization.halving import Halving, per_question_scores

IDS = [f"q{i}" for i in range(6)]


def _study(tiny, max_evals=None):
    return Study(tiny, RandomSampler(), objective_metric="score", seed=1, max_evals=max_evals)


def _tell(halving, study, item, value_of):
    scores = {q: value_of(q) for q in item.questions}
    mean = sum(scores.values()) / len(scores)
    return halving.tell(study, item.configuration, item.rung, scores, {"score": mean})


def test_schedule_promotes_first_and_completes(tiny):
    study = _study(tiny)
    halving = Halving(Rungs(IDS, 0, min_questions=2, eta=3))
    assert halving.rungs.sizes == (2, 6)
    first, second = halving.ask(study, 2)
    assert (first.rung, second.rung) == (0, 0) and len(first.questions) == 2
    assert first.questions == tuple(halving.rungs.questions(0))
    d1 = _tell(halving, study, first, lambda q: 1.0)
    d2 = _tell(halving, study, second, lambda q: 0.0)
    # first is the rung's best; second is worse on 2 of 2 questions: p = 2 / 4 = 0.5 -> promoted (a tie)
    assert d1.verdict == "promote" and d2.verdict == "promote" and d2.p_value == pytest.approx(0.5)
    assert study.trial_of(first.configuration).score == 1.0
    nxt = halving.ask(study, 1)[0]
    assert (nxt.configuration.key, nxt.rung, len(nxt.questions)) == (first.configuration.key, 1, 6)
    done = _tell(halving, study, nxt, lambda q: 0.5)
    assert done.verdict == "complete"
    assert study.trial_of(first.configuration).score == 0.5  # rescored on every question
    assert halving.best_complete() == first.configuration.key


def test_a_configuration_significantly_worse_stops(tiny):
    ids = [f"q{i}" for i in range(18)]
    study = _study(tiny)
    halving = Halving(Rungs(ids, 0, min_questions=6, eta=3))
    good, bad = halving.ask(study, 2)
    _tell(halving, study, good, lambda q: 1.0)
    d = _tell(halving, study, bad, lambda q: 0.0)  # worse on 6 of 6: p = 2 / 64 = 0.03125
    assert d.verdict == "stop" and d.best_key == good.configuration.key
    assert d.p_value == pytest.approx(0.03125)
    assert halving.promotions() == [good.configuration.key]


def test_a_forgotten_configuration_is_screened_again_from_rung_0(tiny):
    """A configuration whose result was lost (``Study.reopen``, ``Halving.forget``) comes back
    at rung 0, before any new configuration."""
    study = _study(tiny)
    halving = Halving(Rungs([f"q{i}" for i in range(18)], 0, min_questions=6, eta=3))
    first, second = halving.ask(study, 2)
    _tell(halving, study, first, lambda q: 1.0)
    assert _tell(halving, study, second, lambda q: 0.0).verdict == "stop"  # no promotion waits
    key = first.configuration.key
    study.reopen(first.configuration)
    halving.forget(key)
    assert key not in halving.scores and key not in halving.decisions and key not in halving.pending
    (again,) = halving.ask(study, 1)
    assert (again.configuration.key, again.rung) == (key, 0)
    assert _tell(halving, study, again, lambda q: 1.0).verdict == "promote" and study.trial_of(again.configuration).score == 1.0


def test_failures_and_state_round_trip(tiny):
    study = _study(tiny)
    halving = Halving(Rungs(IDS, 0, min_questions=2, eta=3))
    item = halving.ask(study, 1)[0]
    assert halving.tell(study, item.configuration, 0, None, None, "boom") is None
    assert study.trial_of(item.configuration).status == "failed"
    other = halving.ask(study, 1)[0]
    _tell(halving, study, other, lambda q: 1.0)
    up = halving.ask(study, 1)[0]
    assert up.rung == 1
    halving.tell(study, up.configuration, 1, None, None, "timeout")
    assert halving.decisions[up.configuration.key].verdict == "stop"
    assert "rung 1 failed: timeout" in halving.decisions[up.configuration.key].reason
    again = Halving.from_dict(Rungs(IDS, 0, min_questions=2, eta=3), halving.to_dict())
    assert again.to_dict() == halving.to_dict()
    with pytest.raises(ConfigError):
        Halving.from_dict(Rungs(IDS, 0, min_questions=3, eta=2), halving.to_dict())
    with pytest.raises(ConfigError):  # scores must cover the rung's questions
        halving.tell(study, halving.ask(study, 1)[0].configuration, 0, {"q0": 1.0}, {"score": 1.0})


def test_stop_reason_budget_and_separated(tiny):
    ids = [f"q{i}" for i in range(8)]
    # one rung (8 < 16 * 3): every configuration sees every question
    study = Study(tiny, RandomSampler(), objective_metric="score", seed=2, max_evals=3)
    halving = Halving(Rungs(ids, 0))
    assert halving.rungs.sizes == (8,)
    values = iter([lambda q: 1.0, lambda q: 1.0, lambda q: 0.0])
    while halving.stop_reason(study) is None:
        for item in halving.ask(study, 1):
            _tell(halving, study, item, next(values))
    assert halving.stop_reason(study) == "budget"  # two are equal: not separated
    study = Study(tiny, RandomSampler(), objective_metric="score", seed=2, max_evals=7)
    halving = Halving(Rungs(ids, 0))
    values = iter([lambda q: 1.0] + [lambda q: 0.0] * 6)
    while halving.stop_reason(study) is None:
        for item in halving.ask(study, 1):
            _tell(halving, study, item, next(values))
    # 1.0 beats each 0.0 on 8 of 8 questions (p = 2 / 256): separated once more than
    # SEPARATION_MIN_EVALS = 4 were evaluated, the fifth, before the budget of 7
    assert halving.stop_reason(study) == "separated" and study.n_evaluated == 5


def test_per_question_scores_reads_the_result_block():
    result = {"per_question": {"ids": ["a", "b"], "scores": {"mrr": [0.5, None], "found@10": [1.0, 0.0]}}}
    assert per_question_scores(result, "mrr") == {"a": 0.5, "b": None}
    assert per_question_scores(result, "ndcg@10") is None
    assert per_question_scores({}, "mrr") is None
