"""Multi-fidelity through the experiment engine over a local Files store: rung requests carry
their questions, a rung's result is told through the stored per-question scores, a worse
configuration stops, the better one is promoted and the report says why each stopped.

Expected values are worked by hand (means over the per-question scores): 18 questions with ``min_questions=6, eta=3`` give rungs
``(6, 18)`` (6 * 3 = 18 <= 18, 18 * 3 > 18); a configuration worse on 6 of 6 questions has the
exact sign test's p = 2 / 2**6 = 0.03125 < 0.05.
"""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.experiment import EvaluationRequest, Experiment
from core.experiment.spec import ExperimentSpec
from core.experiment.types import evaluated_event
from core.optimization import RandomSampler, Study
from core.reports import LocalFiles

from tests.unit.optimization.conftest import tiny_space

IDS = [f"q{i:02d}" for i in range(18)]


def _experiment(tmp_path, max_evals=4):
    spec = ExperimentSpec(experiment_id="mf-1", golden="g.jsonl", documents="docs", objective="mrr",
                          optimizer="random", max_evals=max_evals, seed=3, n_questions=len(IDS),
                          multi_fidelity=True, min_questions=6, eta=3)
    study = Study(tiny_space(), RandomSampler(), "mrr", 3, max_evals=max_evals)
    return Experiment.create(LocalFiles(tmp_path / "store"), spec, study, IDS)


def _run(value):
    """An evaluation that scores ``value`` on every question it is asked about."""
    def run(configuration, questions=None):
        ids = IDS if questions is None else list(questions)
        return {"status": "ok", "error": None, "metrics": {"mrr": value},
                "per_question": {"ids": ids, "scores": {"mrr": [value] * len(ids)}},
                "timings": {"total_s": 0.1, "retrieve_s": 0.01 * len(ids), "index_s": 1.0},
                "collection": "c1", "cost": {}}
    return run


def test_rungs_promote_the_better_and_stop_the_worse(tmp_path):
    experiment = _experiment(tmp_path)
    halving = experiment.fidelity()
    assert halving.rungs.sizes == (6, 18)
    good, bad = experiment.ask_requests(2)
    assert (good.rung, bad.rung) == (0, 0)
    assert list(good.questions) == halving.rungs.questions(0) and len(good.questions) == 6
    assert good.event == evaluated_event(good.key) == f"evaluated-{good.key}"
    experiment.evaluate(good, _run(1.0))
    experiment.evaluate(bad, _run(0.0))
    experiment.tell([good.key, bad.key])
    decisions = experiment.fidelity().decisions
    assert decisions[bad.key].verdict == "stop" and decisions[bad.key].p_value == pytest.approx(0.03125)
    assert decisions[good.key].verdict == "promote"
    (up,) = experiment.ask_requests(2)  # a round is one rung: the promotion alone
    assert (up.key, up.rung, len(up.questions)) == (good.key, 1, 18)
    assert up.event == f"evaluated-{good.key}-r1"
    # the message carries the rung's questions; the evaluator believes only the stored ones
    forged = EvaluationRequest(up.experiment_id, up.key, up.configuration, 1, tuple(IDS[:17]))
    with pytest.raises(ConfigError, match="not the stored experiment's"):
        experiment.evaluate(forged, _run(1.0))
    assert EvaluationRequest.parse(up.to_json()) == up
    experiment.evaluate(up, _run(0.9))
    experiment.tell([up.key])
    (new,) = experiment.ask_requests(1)
    assert new.rung == 0
    experiment.evaluate(new, _run(0.5))
    experiment.tell([new.key])
    assert experiment.result(good.key)["n_questions"] == 18
    report = experiment.build_report()
    rows = {r["key"]: r for r in report["leaderboard"]}
    assert report["leaderboard"][0]["key"] == good.key  # the only one scored on every question ranks first
    assert rows[good.key]["fully_evaluated"] and rows[good.key]["n_questions"] == 18
    # the promotion scored the 12 new questions only; the mean is over all 18, computed again
    # from the per-question scores: (6 * 1.0 + 12 * 0.9) / 18
    assert rows[good.key]["score"] == pytest.approx(16.8 / 18)
    # its timings are both rungs' summed, over every question: 0.01 s x 6 + 0.01 s x 12 of retrieval
    merged = experiment.result(good.key)
    assert merged["n_questions_evaluated"] == 18
    assert merged["timings"] == {"total_s": 0.2, "retrieve_s": pytest.approx(0.18), "index_s": 2.0}
    assert not rows[bad.key]["fully_evaluated"] and rows[bad.key]["n_questions"] == 6
    assert rows[bad.key]["fidelity"]["verdict"] == "stop" and "sign test" in rows[bad.key]["fidelity"]["reason"]
    assert report["best"]["key"] == good.key
    # the new one is worse than the rung's best (0.5 against 0.9 on 6 of 6: p = 0.03125): stopped;
    # 3 of the 4 configurations of the budget evaluated, too few for separation: it goes on
    assert rows[new.key]["fidelity"]["verdict"] == "stop"
    assert report["stop"]["reason"] is None
    assert report["fidelity"]["sizes"] == [6, 18]


def test_a_failed_promotion_keeps_the_lower_rung_result(tmp_path):
    experiment = _experiment(tmp_path)
    (first,) = experiment.ask_requests(1)
    experiment.evaluate(first, _run(1.0))
    experiment.tell([first.key])
    (up,) = experiment.ask_requests(1)
    assert up.rung == 1

    def boom(configuration, questions=None):
        raise ValueError("the index went away")

    experiment.evaluate(up, boom)
    stored = experiment.result(first.key)
    assert stored["status"] == "ok" and stored["rung"] == 0
    assert stored["promotion_error"]["rung"] == 1 and "index went away" in stored["promotion_error"]["error"]
    experiment.tell([up.key])
    decision = experiment.fidelity().decisions[first.key]
    assert decision.verdict == "stop" and "rung 1 failed" in decision.reason


def test_the_summarys_best_is_scored_on_every_question(tmp_path):
    """A configuration stopped on the first rung can hold a higher mean over its 6 questions
    than the best over all 18: the progress summary (the Functions' status) names the best
    scored on every question, as the report does, not the subset's."""
    def uneven(configuration, questions=None):
        ids = IDS if questions is None else list(questions)
        values = [1.0 if IDS.index(q) < 6 else 0.5 for q in ids]  # 1.0 on rung 0, 0.5 after
        return {"status": "ok", "error": None, "metrics": {"mrr": sum(values) / len(values)},
                "per_question": {"ids": ids, "scores": {"mrr": values}}, "timings": {}, "collection": "c1",
                "cost": {}}

    experiment = _experiment(tmp_path)
    (first,) = experiment.ask_requests(1)
    experiment.evaluate(first, uneven)
    experiment.tell([first.key])
    (up,) = experiment.ask_requests(1)
    experiment.evaluate(up, uneven)
    experiment.tell([up.key])
    (second,) = experiment.ask_requests(1)
    experiment.evaluate(second, _run(0.9))
    summary = experiment.tell([second.key])
    # first: (6 x 1.0 + 12 x 0.5) / 18 over every question; second: 0.9 on 6, worse on 6 of 6, stopped
    assert experiment.study().best_trial.configuration.key == second.key  # the study alone picks the subset's
    assert (summary.best_key, summary.best_score) == (first.key, pytest.approx(12 / 18))
    assert experiment.summary().best_key == first.key == experiment.build_report()["best"]["key"]
