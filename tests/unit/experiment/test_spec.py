"""The experiment spec and the default objective."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from core.errors import ConfigError
from core.evaluation.single import check_objective
from core.experiment import ExperimentSpec, default_objective
from core.experiment.spec import SCREEN


def golden(*references):
    return SimpleNamespace(questions=[SimpleNamespace(reference=r) for r in references])


def test_the_default_objective():
    assert default_objective(golden(None, None)) == "mrr"
    assert default_objective(golden(None, None), has_generator=True) == "mrr"
    assert default_objective(golden("Paris", None)) == "unitxt.answer_correctness"
    assert default_objective(golden("Paris", None), has_generator=True) == "overall_score"
    assert check_objective("overall_score") == "overall_score"


def test_the_spec_is_frozen_and_round_trips_through_json():
    spec = ExperimentSpec(experiment_id="e-1", golden="s3://b/g.jsonl", documents="s3://b/docs", objective="mrr",
                          overrides={"chunk_size": [128, 256], "system_message_text": ["Réponds."]})
    back = ExperimentSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert back == spec and back.overrides == {"chunk_size": (128, 256), "system_message_text": ("Réponds.",)}
    with pytest.raises(AttributeError):
        spec.objective = "ndcg@10"  # type: ignore[misc]
    with pytest.raises(ConfigError, match="optimizer must be one of screen, gam, random"):
        ExperimentSpec(experiment_id="e", golden="g", documents="d", objective="mrr", optimizer="tpe")
    with pytest.raises(ConfigError, match="not an experiment spec of version 1"):
        ExperimentSpec.from_dict({"version": 7})
    # the default optimizer is screen: its sampler and rungs as SCREEN says, set when the study starts
    assert spec.optimizer == "screen" and spec.sampler().name == SCREEN["sampler"]
    screened = spec.screening()
    assert (screened.multi_fidelity, screened.promotion, screened.start) == (
        SCREEN["multi_fidelity"], SCREEN["promotion"], SCREEN["start"])
    with pytest.raises(ConfigError, match="start must be one of default, reranked or None, got 'best'"):
        ExperimentSpec(experiment_id="e", golden="g", documents="d", objective="mrr", start="best")
    # a spec stored before ``start`` (start_from_default) reads as the start it asked for
    stored = {k: v for k, v in spec.to_dict().items() if k != "start"}
    assert ExperimentSpec.from_dict({**stored, "start_from_default": True}).start == "default"
    assert ExperimentSpec.from_dict({**stored, "start_from_default": False}).start is None
    gam = ExperimentSpec(experiment_id="e", golden="g", documents="d", objective="mrr", optimizer="gam")
    assert gam.sampler().name == "gam" and gam.screening() == gam and not gam.multi_fidelity
    with pytest.raises(ConfigError, match="promotion must be one of tied, incumbent"):
        ExperimentSpec(experiment_id="e", golden="g", documents="d", objective="mrr", promotion="eager")


def test_a_new_study_starts_as_its_optimizer_says():
    """screen: rungs with the incumbent rule (a retrieval objective) or every question (an answer
    objective); start "default" puts the space's default configuration first (the one
    ``default_configuration`` picks, checked in tests/unit/optimization/test_screening.py)."""
    from pathlib import Path

    from core.experiment.prepare import start_study
    from core.golden import read_golden
    from core.optimization import default_space
    from core.optimization.defaults import default_configuration

    golden = read_golden(Path(__file__).resolve().parents[3] / "examples" / "data" / "squad-mini" / "golden.jsonl")
    space = default_space({"m-a": 256, "m-b": 512}, ["extractive"])
    base = dict(experiment_id="e", golden="g", documents="d", objective="mrr")
    screen = start_study(ExperimentSpec(**base), golden, space)
    assert screen.spec.optimizer == "screen" and screen.spec.multi_fidelity == SCREEN["multi_fidelity"]
    assert screen.spec.promotion == SCREEN["promotion"] and screen.study.sampler.name == SCREEN["sampler"]
    assert len(screen.question_ids) == len(golden.questions)
    answers = start_study(ExperimentSpec(**{**base, "objective": "unitxt.answer_correctness"}), golden, space)
    assert not answers.spec.multi_fidelity and answers.notes[0] == (
        "screen scores every configuration on every question with unitxt.answer_correctness (rungs of questions "
        "need a retrieval objective's per-question scores)")
    asked = start_study(ExperimentSpec(**{**base, "objective": "unitxt.answer_correctness", "optimizer": "random",
                                          "multi_fidelity": True}), golden, space)
    assert not asked.spec.multi_fidelity and "multi-fidelity needs a retrieval objective" in asked.notes[0]
    first = start_study(ExperimentSpec(**base, optimizer="random", start="default"), golden, space,
                        default_embedding_model="m-b")
    (trial,) = first.study.pending_trials
    assert trial.configuration == default_configuration(space, "m-b") and trial.configuration["embedding_model"] == "m-b"
    assert start_study(ExperimentSpec(**base, optimizer="gam"), golden, space).study.pending_trials == []


def test_screen_starts_from_the_reranked_default_when_the_space_has_a_reranker():
    """``screen``'s start (``SCREEN["start"]``, ``reranked``): in a space with a reranker the
    first trial is the default configuration with that reranker at the deepest retrieval depth
    (30 of 10 and 30; the product's 20 alone would take 10, the smaller of a tie), said in a note; the default space has no reranker, so nothing is queued
    and the search starts from a random configuration."""
    from pathlib import Path

    from core.experiment.prepare import start_study
    from core.golden import read_golden
    from core.optimization import default_space
    from core.optimization.defaults import default_configuration

    golden = read_golden(Path(__file__).resolve().parents[3] / "examples" / "data" / "squad-mini" / "golden.jsonl")
    space = default_space({"m-a": 256, "m-b": 512}, ["extractive"])
    base = dict(experiment_id="e", golden="g", documents="d", objective="mrr")
    plain = start_study(ExperimentSpec(**base), golden, space, default_embedding_model="m-b")
    assert plain.spec.start == "reranked" and plain.study.pending_trials == []
    assert not any("reranked by" in n for n in plain.notes)
    reranked_space = space.with_overrides({"reranker": ("none", "local:ms-marco-MiniLM-L-12-v2"),
                                           "retrieval_depth": (10, 30)}, source="--set")
    new = start_study(ExperimentSpec(**base), golden, reranked_space, default_embedding_model="m-b")
    (trial,) = new.study.pending_trials
    default = default_configuration(reranked_space, "m-b")
    assert (default["reranker"], default["retrieval_depth"]) == ("none", None)  # depth applies to a reranker only
    expected = dict(default, reranker="local:ms-marco-MiniLM-L-12-v2", retrieval_depth=30)
    assert dict(trial.configuration) == expected
    assert new.notes[-1] == ("screen evaluates first the default configuration (or the nearest this space holds) reranked by "
                             "local:ms-marco-MiniLM-L-12-v2 over the first 30 results")
