"""The chunker of one evaluation gets the configuration's models: ``semantic`` its embedding
model, ``llm`` and ``contextual`` its foundation model when that is a chat model, else the
first configured chat model."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.evaluation.pipeline import PipelineSettings
from core.evaluation.single import EvaluationContext
from core.evaluation.single import _chunker as _chunker_of


def _chunker(configuration, context, model):
    """The chunker of ``configuration`` read through ``PipelineSettings``, as an evaluation reads it."""
    return _chunker_of(PipelineSettings.of(configuration), context, model)


class _Chat:
    def __init__(self, model_id):
        self.model_id = model_id

    def chat(self, messages, *, max_completion_tokens=None, temperature=None):
        return "1"


class _Embedding:
    model_id = "emb"
    embedding_dimension = 3
    max_input_tokens = 512


def _context(tmp_path, chats):
    return EvaluationContext(out_dir=tmp_path, embedding_models={"emb": _Embedding()},
                             chat_models={c.model_id: c for c in chats}, cache_replies=False)


def test_semantic_measures_with_the_configurations_embedding_model(tmp_path):
    model = _Embedding()
    chunker = _chunker({"chunking_method": "semantic", "chunk_size": 128}, _context(tmp_path, []), model)
    assert chunker.embedding_model is model and chunker.params()["sentence_model"] == "emb"


@pytest.mark.parametrize("method", ["llm", "contextual"])
def test_chat_methods_ask_the_configurations_chat_model_else_the_first(tmp_path, method):
    a, b = _Chat("a"), _Chat("b")
    context = _context(tmp_path, [a, b])
    config = {"chunking_method": method, "chunk_size": 128, "chunk_overlap": 0}
    assert _chunker({**config, "foundation_model": "b"}, context, _Embedding()).chat_model is b
    assert _chunker({**config, "foundation_model": "extractive"}, context, _Embedding()).chat_model is a


def test_chat_methods_without_a_chat_model_fail_with_the_reason(tmp_path):
    with pytest.raises(ConfigError, match="needs a chat model"):
        _chunker({"chunking_method": "llm", "chunk_size": 128}, _context(tmp_path, []), _Embedding())
