"""Study: ask / tell, failures, warm start, budget, exhaustion, stored state and resume."""

from __future__ import annotations

import json

import pytest

from core.errors import ConfigError, EvaluationError
from core.optimization import GAMSampler, RandomSampler, Study

from .conftest import small_space, tiny_space
from .test_samplers import additive


def run(study: Study, steps: int, objective=additive, n=1) -> list[str]:
    keys = []
    for _ in range(steps):
        for config in study.ask(n):
            keys.append(config.key)
            study.tell(config, objective(config))
    return keys


@pytest.mark.parametrize("make", [RandomSampler, GAMSampler])
def test_same_seed_same_sequence(make):
    a = run(Study(small_space(), make(), "recall@10", seed=11), 12)
    b = run(Study(small_space(), make(), "recall@10", seed=11), 12)
    c = run(Study(small_space(), make(), "recall@10", seed=12), 12)
    assert a == b and len(set(a)) == 12
    assert a != c


@pytest.mark.parametrize("make", [RandomSampler, GAMSampler])
def test_resume_from_json_continues_identically(make):
    whole = Study(small_space(), make(), "recall@10", seed=5, max_evals=16)
    expected = run(whole, 7) + run(whole, 1, n=2) + run(whole, 7)  # the same ask sizes, uninterrupted
    first = Study(small_space(), make(), "recall@10", seed=5, max_evals=16)
    keys = run(first, 7)
    pending = first.ask(2)  # asked, not told: stored as pending
    text = first.to_json()
    again = Study.from_json(text)
    assert [t.status for t in again.trials][-2:] == ["pending", "pending"]
    assert json.loads(again.to_json()) == json.loads(text)
    for config in pending:
        again.tell(config, additive(config))
    keys += [c.key for c in pending]
    keys += run(again, 7)
    assert keys == expected
    assert again.is_finished and again.best_trial.score == whole.best_trial.score


def test_failed_trials_are_recorded_not_fed_to_the_model_and_the_study_goes_on():
    sampler = GAMSampler(n_random_nodes=2)
    study = Study(small_space(), sampler, "recall@10", seed=0)
    outcomes = [None, EvaluationError("judge timed out"), float("nan"), {"recall@10": None, "mrr": 0.5}]
    for i in range(12):
        (config,) = study.ask()
        if i < len(outcomes):
            trial = study.tell(config, outcomes[i], error="endpoint down" if i == 0 else None)
            assert trial.status == "failed" and trial.score is None
        else:
            metrics = {"recall@10": additive(config), "n_failed": 0}
            trial = study.tell(config, metrics, metrics=metrics) if i % 2 else study.tell(config, metrics)
            assert trial.score == additive(config) and trial.metrics == metrics
    errors = [t.error for t in study.trials[:4]]
    assert errors == ["endpoint down", "EvaluationError: judge timed out", "the score is nan (not a finite number)",
                      "objective metric 'recall@10' was not computed"]
    assert study.trials[3].metrics == {"recall@10": None, "mrr": 0.5}
    assert sampler.last_info.n_rows == 7  # 11 told before the last ask, 4 failed
    assert study.best_trial.status == "complete" and study.best_trial.metrics["n_failed"] == 0
    assert len({t.configuration.key for t in study.trials}) == 12


def test_tell_errors():
    study = Study(tiny_space(), RandomSampler(), "recall@10", seed=0)
    (config,) = study.ask()
    other = [c for c in tiny_space().valid_configurations() if c != config][0]
    with pytest.raises(ConfigError, match="never asked"):
        study.tell(other, 0.5)
    with pytest.raises(ConfigError, match="both a score and an error"):
        study.tell(config, 0.5, error="x")
    with pytest.raises(ConfigError, match="must be a number"):
        study.tell(config, "0.5")
    with pytest.raises(ConfigError, match="JSON-clean"):
        study.tell(config, 0.5, metrics={"m": float("nan")})
    study.tell(config.to_dict(), 0.5)  # a plain dict works too
    with pytest.raises(ConfigError, match="already told"):
        study.tell(config, 0.6)
    with pytest.raises(ConfigError, match="ask needs n >= 1"):
        study.ask(0)


def test_max_evals_is_capped_at_n_valid_and_exhaustion():
    study = Study(tiny_space(), GAMSampler(), "recall@10", seed=0, max_evals=10**6)
    assert study.max_evals == 8 == study.n_remaining
    first = study.ask(100)
    assert len(first) == 8 and len({c.key for c in first}) == 8
    assert study.ask() == [] and not study.is_finished  # pending trials remain
    for c in first:
        study.tell(c, additive(c))
    assert study.is_finished and study.ask(3) == []


def test_max_evals_stops_asking_and_sampler_max_evals_counts():
    study = Study(small_space(), RandomSampler(), "recall@10", seed=0, max_evals=5)
    assert len(run(study, 10, n=2)) == 5 and study.is_finished
    study = Study(small_space(), GAMSampler(max_evals=3), "recall@10", seed=0, max_evals=5)
    assert study.max_evals == 3 and len(run(study, 5)) == 3


def test_ask_none_uses_the_samplers_batches():
    study = Study(small_space(), GAMSampler(n_random_nodes=4, evals_per_trial=3), "recall@10", seed=0)
    sizes = []
    for _ in range(3):
        configs = study.ask(None)
        sizes.append(len(configs))
        for c in configs:
            study.tell(c, additive(c))
    assert sizes == [4, 3, 3]


def test_warm_start():
    space = small_space()
    configs = space.valid_configurations()
    known = [(configs[i].to_dict(), additive(configs[i])) for i in range(0, 160, 20)]
    known.append((configs[3].to_dict(), None))  # a failed evaluation; an ai4rag-style mapping below
    known.append({**configs[5].to_dict(), "score": 0.61})
    sampler = GAMSampler(n_random_nodes=4)
    study = Study(space, sampler, "recall@10", seed=1, known_observations=known)
    assert len(study.trials) == 10 and all(t.warm_start for t in study.trials)
    assert study.trials[8].status == "failed" and study.trials[9].score == 0.61
    assert study.n_asked == 0 and study.n_evaluated == 0 and study.max_evals == space.n_valid
    asked = run(study, 3)
    (pending,) = study.ask(1)  # asked, not told: neither warm starts nor pending trials count
    assert study.n_asked == 4 and study.n_evaluated == 3
    study.tell(pending, None, error="boom")
    assert study.n_evaluated == 4  # a failed evaluation counts
    assert not set(asked) & {t.configuration.key for t in study.trials[:10]}
    assert sampler.last_info.n_rows >= 9  # the known scores feed the model from the start
    assert Study.from_json(study.to_json()).trials[0].warm_start


@pytest.mark.parametrize("known, message", [
    ([({"chunk_size": 999}, 0.5)], "known observation 0: .*no value for chunking_method"),
    ([("not a pair",)], "known observation 0: expected a"),
    ([{"chunk_size": 128}], "needs a 'score' key"),
])
def test_warm_start_errors(known, message):
    with pytest.raises(ConfigError, match=message):
        Study(small_space(), GAMSampler(), "recall@10", seed=0, known_observations=known)
    config = small_space().valid_configurations()[0].to_dict()
    with pytest.raises(ConfigError, match="known observation 1: the same configuration as trial 0"):
        Study(small_space(), GAMSampler(), "recall@10", seed=0, known_observations=[(config, 0.1), (config, 0.2)])


def test_best_trial_and_direction():
    study = Study(tiny_space(), RandomSampler(), "latency_s", seed=0, direction="minimize")
    assert study.best_trial is None
    for i, c in enumerate(study.ask(4)):
        study.tell(c, [3.0, 1.0, 2.0, 1.0][i])
    assert study.best_trial.number == 1  # earliest of the tied best


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="seed"):
        Study(tiny_space(), RandomSampler(), "m", seed=-1)
    with pytest.raises(ConfigError, match="direction"):
        Study(tiny_space(), RandomSampler(), "m", seed=0, direction="up")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="objective_metric"):
        Study(tiny_space(), RandomSampler(), "", seed=0)
    with pytest.raises(ConfigError, match="Sampler"):
        Study(tiny_space(), object(), "m", seed=0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not a stored ragtune study"):
        Study.from_json("{}")
    with pytest.raises(ConfigError, match="not valid JSON"):
        Study.from_json("{")


class Stubborn:
    """A sampler that always proposes the first valid configuration (tried or not)."""

    name = "stubborn"
    max_evals = None

    def propose(self, space, trials, n, rng, direction="maximize"):
        return [space.valid_configurations()[0]] * n

    def batch_size(self, space, trials):
        return 1

    def to_dict(self):
        return {"name": self.name}


@pytest.mark.parametrize("sampler", [Stubborn(), RandomSampler(), GAMSampler(n_random_nodes=2)])
def test_ask_n_returns_n_distinct_untried_configurations_for_every_sampler(tiny, sampler):
    """tiny has 8 valid configurations: asks of 3, 3 and 3 give 3, 3 and the last 2, all distinct."""
    study = Study(tiny, sampler, "score", seed=4)
    seen = []
    for want, got in ((3, 3), (3, 3), (3, 2)):
        batch = study.ask(want)
        assert len(batch) == got
        seen += [c.key for c in batch]
        for c in batch:
            study.tell(c, (c["chunk_size"] or 0) / 1000 + (c["chunk_overlap"] or 0) / 10000 + len(seen) / 1e6)
    assert len(set(seen)) == 8 == tiny.n_valid and study.ask(3) == []


def test_each_ask_is_a_round_kept_through_tell_and_storage():
    """Rounds by hand: ask(3) -> round 1, ask(1) -> round 2, ask(2) -> round 3; warm starts
    have none; a stored study without rounds (an older one) reads as None and numbers on."""
    space = small_space()
    configs = space.valid_configurations()
    study = Study(space, RandomSampler(), "recall@10", seed=3, known_observations=[(configs[0].to_dict(), 0.1)])
    assert study.n_rounds == 0
    first = study.ask(3)
    study.tell(first[0], 0.5)
    second = study.ask(1)
    third = study.ask(2)
    assert [t.round for t in study.trials] == [None, 1, 1, 1, 2, 3, 3]
    assert study.n_rounds == 3 and study.trial_of(second[0]).round == 2 and study.trial_of(third[1]).round == 3
    again = Study.from_json(study.to_json())
    assert [t.round for t in again.trials] == [None, 1, 1, 1, 2, 3, 3]
    older = study.to_dict()
    for t in older["trials"]:
        del t["round"]
    old = Study.from_dict(older)
    assert old.n_rounds == 0 and all(t.round is None for t in old.trials)
    old.tell(third[0], 0.2)
    assert old.trials[5].round is None
    (new,) = old.ask(1)
    assert old.trial_of(new).round == 1


def test_reopen_makes_a_told_trial_pending_again():
    """A trial whose result was lost is asked again first: pending, out of n_evaluated, with its
    number and round kept; a pending trial stays as it is, an unknown one is refused."""
    study = Study(small_space(), RandomSampler(), "recall@10", seed=3, max_evals=3)
    keys = run(study, 3)
    assert study.is_finished and study.n_evaluated == 3
    told = study.trials[1]
    reopened = study.reopen(told.configuration)
    assert (reopened.number, reopened.round, reopened.status, reopened.score) == (1, told.round, "pending", None)
    assert study.n_evaluated == 2 and not study.is_finished and study.ask(3) == []  # pending first, no new one
    assert study.reopen(told) == reopened
    study.tell(told.configuration, 0.5)
    assert study.trials[1].score == 0.5 and study.is_finished and [t.configuration.key for t in study.trials] == keys
    restored = Study.from_json(study.to_json())
    with pytest.raises(ConfigError, match="never asked"):
        restored.reopen(next(c for c in small_space().valid_configurations() if c.key not in keys))
