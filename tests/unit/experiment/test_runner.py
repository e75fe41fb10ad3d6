"""The local runner's space: built from the configured models, refusing models it does not have."""

from __future__ import annotations

import json

import pytest

from core.errors import ConfigError
from core.experiment.runner import ExperimentOptions, build_space


class Model:
    """What build_space reads of an embedding model: its context length in tokens."""

    max_input_tokens = 256


MODELS = {"local:all-MiniLM-L6-v2": Model()}


def test_a_space_file_naming_a_model_that_is_not_configured_is_refused(tmp_path):
    space_file = tmp_path / "space.json"
    space_file.write_text(json.dumps({"foundation_model": ["extractive", "gpt-x"]}), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        build_space(ExperimentOptions(space_file=str(space_file)), MODELS, ["extractive"])
    assert str(caught.value) == (f"--space {space_file}: foundation_model 'gpt-x' is not configured here "
                                 "(configured: extractive)")


def test_an_override_naming_an_embedding_model_that_is_not_configured_is_refused():
    options = ExperimentOptions(overrides={"embedding_model": ("nope", "local:all-MiniLM-L6-v2")})
    with pytest.raises(ConfigError, match=r"^--set: embedding_model 'nope' is not configured here "
                                          r"\(configured: local:all-MiniLM-L6-v2\)$"):
        build_space(options, MODELS, ["extractive"])


def test_configured_models_pass():
    space = build_space(ExperimentOptions(overrides={"foundation_model": ("fm-b",)}), MODELS, ["extractive", "fm-b"])
    assert space["foundation_model"].values == ("fm-b",) and space.n_valid == 84  # 7 chunkings x 4 search setups x 3 numbers of chunks
