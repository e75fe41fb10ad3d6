"""The local runner's plan (``plan_experiment``, as the Functions' prepare step makes it): the
space built from the configured models, refusing models it does not have, and the objective."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.experiment.prepare import plan_experiment
from core.experiment.runner import ExperimentOptions
from core.golden import read_golden

SQUAD_GOLDEN = Path(__file__).resolve().parents[3] / "examples" / "data" / "squad-mini" / "golden.jsonl"


class Model:
    """What the plan reads of an embedding model: its context length in tokens."""

    max_input_tokens = 256


MODELS = {"local:all-MiniLM-L6-v2": Model()}


def plan(options: ExperimentOptions, chat_models=None, objective: str | None = "mrr"):
    """The plan the runner makes for ``options`` (the runner's own arguments to plan_experiment)."""
    return plan_experiment(read_golden(SQUAD_GOLDEN), objective=objective, has_judge=False, embedding_models=MODELS,
                           chat_models=chat_models or {}, vector_stores=["milvus-lite"],
                           space_file=options.space_file, overrides=options.overrides,
                           overrides_source=options.overrides_source)


def test_a_space_file_naming_a_model_that_is_not_configured_is_refused(tmp_path):
    space_file = tmp_path / "space.json"
    space_file.write_text(json.dumps({"foundation_model": ["extractive", "gpt-x"]}), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        plan(ExperimentOptions(space_file=str(space_file)))
    assert str(caught.value) == (f"--space {space_file}: foundation_model 'gpt-x' is not configured here "
                                 "(configured: extractive)")


def test_an_override_naming_an_embedding_model_that_is_not_configured_is_refused():
    options = ExperimentOptions(overrides={"embedding_model": ("nope", "local:all-MiniLM-L6-v2")})
    with pytest.raises(ConfigError, match=r"^--set: embedding_model 'nope' is not configured here "
                                          r"\(configured: local:all-MiniLM-L6-v2\)$"):
        plan(options)


def test_configured_models_pass():
    planned = plan(ExperimentOptions(overrides={"foundation_model": ("fm-b",)}), chat_models={"fm-b": object()})
    space = planned.space
    # 7 chunkings x 4 search setups; mrr holds number_of_chunks at the longest of 3, 5 and 10
    assert space["foundation_model"].values == ("fm-b",) and space.n_valid == 28
    assert space["number_of_chunks"].values == (10,)
    assert planned.objective == "mrr" and planned.notes == (
        "number_of_chunks is held at 10 (the space holds 3,5,10): with the retrieval objective mrr a shorter list "
        "is the same ranking cut earlier and scores no higher; to search them, name the values "
        "(--set number_of_chunks=3,5,10)",)


def test_number_of_chunks_is_searched_when_named_or_the_objective_scores_answers(tmp_path):
    """The values a user names (--set or a space file) are searched; an answer objective, where
    a shorter context may answer better, keeps the default values."""
    named = plan(ExperimentOptions(overrides={"number_of_chunks": (3, 10)}))
    assert named.space["number_of_chunks"].values == (3, 10) and named.notes == ()
    space_file = tmp_path / "space.json"
    space_file.write_text(json.dumps({"chunk_size": [256]}), encoding="utf-8")
    from_file = plan(ExperimentOptions(space_file=str(space_file)))
    assert from_file.space["number_of_chunks"].values == (3, 5, 10) and from_file.notes == ()
    answers = plan(ExperimentOptions(), objective=None)
    assert answers.objective == "unitxt.answer_correctness"
    assert answers.space["number_of_chunks"].values == (3, 5, 10) and answers.notes == ()
    found = plan(ExperimentOptions(), objective="found@5")
    assert found.space["number_of_chunks"].values == (10,) and found.space.n_valid * 3 == answers.space.n_valid


def test_the_default_objective_follows_the_golden_file_and_the_models():
    # squad-mini's questions have reference answers: with a chat model the mean of the answer
    # metrics (ai4rag's default), with the extractive baseline only unitxt's answer correctness
    assert plan(ExperimentOptions(), chat_models={"fm-b": object()}, objective=None).objective == "overall_score"
    assert plan(ExperimentOptions(), objective=None).objective == "unitxt.answer_correctness"
