"""Context length detection against a local OpenAI-compatible server that refuses long inputs."""

from __future__ import annotations

import pytest

from core.models import OpenAIEmbeddingModel
from core.models.context_length import detect_context_length
from tests.support.openai_server import OpenAITestServer


@pytest.mark.parametrize("limit", [512, 100, 8191])
def test_the_binary_search_finds_the_window_within_a_few_calls(limit):
    with OpenAITestServer(max_input_tokens=limit) as server:
        model = OpenAIEmbeddingModel(f"window-{limit}", base_url=server.base_url, api_key="k", max_attempts=1)
        found = detect_context_length(model)
        # the largest accepted length, within the search's 12.5 % precision (bounds computed by hand)
        assert limit / 1.125 <= found <= limit
        assert len(server.requests) <= 9
        again = detect_context_length(model)  # cached per model: no call
        assert again == found and len(server.requests) <= 9


def test_an_endpoint_without_a_limit_gets_the_ceiling_and_one_that_refuses_everything_none():
    with OpenAITestServer() as server:
        model = OpenAIEmbeddingModel("no-window", base_url=server.base_url, api_key="k", max_attempts=1)
        assert detect_context_length(model) == 8192 and len(server.requests) == 1
    with OpenAITestServer(max_input_tokens=10) as server:
        model = OpenAIEmbeddingModel("tiny-window", base_url=server.base_url, api_key="k", max_attempts=1)
        assert detect_context_length(model) is None and len(server.requests) == 2


def test_the_space_is_bounded_by_the_detected_window():
    from core.experiment.prepare import build_space

    with OpenAITestServer(max_input_tokens=300) as server:
        model = OpenAIEmbeddingModel("window-300", base_url=server.base_url, api_key="k", max_attempts=1)
        space, _ = build_space(embedding_models={model.model_id: model}, foundation_models=["extractive"])
    # 300 tokens < 512: the short-context chunk sizes (128, 256) apply, none above the window
    assert set(space["chunk_size"].values) == {128, 256}
