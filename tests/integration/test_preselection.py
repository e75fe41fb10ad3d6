"""Model pre-selection on squad-mini: a broken embedding endpoint and a chat model that never
answers are dropped; the local model and the extractive baseline stay."""

from __future__ import annotations

import socket

import pytest

from core.evaluation.single import Corpus, EvaluationContext
from core.golden import read_golden
from core.models import LOCAL_MODEL_ID, LocalEmbeddingModel, OpenAIEmbeddingModel
from core.models.chat import OpenAIChatModel
from core.experiment.preselection import preselect_models
from core.optimization.space import default_space
from tests.support.openai_app import OpenAITestApp

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_preselection_keeps_the_models_that_work(squad_dir, tmp_path):
    broken = OpenAIEmbeddingModel("gone", base_url=f"http://127.0.0.1:{closed_port()}/v1", embedding_dimension=384,
                                  max_attempts=1, max_input_tokens=256)
    with OpenAITestApp(lambda body: "I cannot tell.") as app:
        mute = OpenAIChatModel("mute", base_url=app.base_url, max_attempts=1)
        embedding = {LOCAL_MODEL_ID: LocalEmbeddingModel(), broken.model_id: broken}
        space = default_space({LOCAL_MODEL_ID: 256, broken.model_id: 256}, ["extractive", mute.model_id])
        context = EvaluationContext(out_dir=tmp_path, embedding_models=embedding, chat_models={mute.model_id: mute})
        result = preselect_models(space, Corpus.load(squad_dir / "docs"), read_golden(squad_dir / "golden.jsonl"),
                                  context=context, objective="unitxt.answer_correctness",
                                  keep_embedding=1, keep_foundation=1, n_questions=4, seed=1)
    assert result["ran"] is True
    assert result["embedding_models"] == [LOCAL_MODEL_ID]
    assert result["foundation_models"] == ["extractive"]
    assert len(result["pairs"]) == 4
    failed = [p for p in result["pairs"] if p["embedding_model"] == broken.model_id]
    assert all(p["status"] == "failed" and p["score"] is None for p in failed)
    # the sample: 4 questions and only the documents they reference
    assert len(result["sample"]["question_ids"]) == 4
    assert 1 <= len(result["sample"]["document_ids"]) <= 4


def test_nothing_to_narrow(squad_dir, tmp_path):
    space = default_space({LOCAL_MODEL_ID: 256}, ["extractive"])
    context = EvaluationContext(out_dir=tmp_path, embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()})
    result = preselect_models(space, Corpus.load(squad_dir / "docs"), read_golden(squad_dir / "golden.jsonl"),
                              context=context, objective="mrr")
    assert result["ran"] is False and result["pairs"] == [] and result["embedding_models"] == [LOCAL_MODEL_ID]
