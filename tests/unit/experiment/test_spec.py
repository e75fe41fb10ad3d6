"""The experiment spec and the default objective."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from core.errors import ConfigError
from core.evaluation.single import check_objective
from core.experiment import ExperimentSpec, default_objective


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
    with pytest.raises(ConfigError, match="optimizer must be 'gam' or 'random'"):
        ExperimentSpec(experiment_id="e", golden="g", documents="d", objective="mrr", optimizer="tpe")
    with pytest.raises(ConfigError, match="not an experiment spec of version 1"):
        ExperimentSpec.from_dict({"version": 7})
    assert spec.sampler().name == "gam"
