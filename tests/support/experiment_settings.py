"""What the experiment engine reads from ``core.settings.Settings`` before a model runs, for
unit tests of ``prepare_request`` and ``StoredEvaluator`` that embed nothing."""

from __future__ import annotations

#: One golden question whose expected document is ``plan.md``.
GOLDEN = b'{"question": "What is the deductible?", "expected": ["plan.md"]}\n'


class FakeEmbedding:
    """An embedding model's id and window, never asked for vectors."""

    model_id = "fake-embedding"
    max_input_tokens = 256


class FakeSettings:
    """The settings methods the engine's prepare and evaluator call: one embedding model, no
    reranker, chat model or judge, Milvus Lite in ``out_dir``."""

    vector_store = "milvus-lite"

    def __init__(self, out_dir):
        self.out_dir = str(out_dir)

    def embedding_model(self):
        return FakeEmbedding()

    def embedding_models(self):
        model = FakeEmbedding()
        return {model.model_id: model}

    def reranker(self):
        return None

    def chat_model(self):
        return None

    def judge_model(self):
        return None
