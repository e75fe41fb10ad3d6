"""The ``ChatModel`` contract, passed by every implementation.

Implementations: the OpenAI-compatible client (OpenAI route and Azure OpenAI route) against a
local test server on real HTTP, the same client behind the reply cache (``CachedChatModel``), and
the extractive baseline over the local embedding model.
What is asserted comes from the protocol's docstring: a non-empty reply, malformed messages
refused with ``ConfigError``, a backend that cannot answer raising ``GenerationError``.
"""

from __future__ import annotations

import socket

import pytest

from core.errors import ConfigError, GenerationError
from core.models import ChatModel, LocalEmbeddingModel, OpenAIChatModel, OpenAIEmbeddingModel
from core.rag import ExtractiveGenerator
from tests.support.openai_app import OpenAITestApp

MESSAGES = [
    {"role": "system", "content": "Answer from the passages."},
    {"role": "user", "content": "Employees get 25 days of paid leave per year. Sick leave is ten days."},
    {"role": "user", "content": "How many days of paid leave do employees get?"},
]
MALFORMED = [[], [{"role": "robot", "content": "x"}], [{"role": "user", "content": 3}], ["hello"], "hello"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app():
    with OpenAITestApp(lambda body: "Employees get 25 days.") as server:
        yield server


@pytest.fixture(scope="module")
def local():
    return LocalEmbeddingModel()


@pytest.fixture(params=["openai", "azure", "extractive", "cached"])
def kind(request):
    return request.param


#: the cache folders ``make`` created for the running test, removed after it
_CACHE_FOLDERS: list = []


@pytest.fixture(autouse=True)
def _remove_cache_folders():
    import shutil

    yield
    while _CACHE_FOLDERS:
        shutil.rmtree(_CACHE_FOLDERS.pop(), ignore_errors=True)


def make(kind: str, app, local, *, broken: bool = False) -> ChatModel:
    """The implementation ``kind``, reaching a closed port when ``broken``; ``cached`` is
    ``CachedChatModel`` over the OpenAI client, with a fresh cache file each time."""
    if kind == "cached":
        import tempfile
        from pathlib import Path

        from core.models import CachedChatModel, EmbeddingCache

        folder = Path(tempfile.mkdtemp(prefix="chat-cache-"))
        _CACHE_FOLDERS.append(folder)
        return CachedChatModel(make("openai", app, local, broken=broken), EmbeddingCache(folder / "cache.sqlite"))
    if kind == "extractive":
        embedder = OpenAIEmbeddingModel("e", base_url=f"http://127.0.0.1:{_closed_port()}/v1", embedding_dimension=4,
                                        max_attempts=1, timeout_s=2) if broken else local
        return ExtractiveGenerator(embedder, max_sentences=1)
    root = f"http://127.0.0.1:{_closed_port()}" if broken else app.endpoint
    if kind == "azure":
        return OpenAIChatModel("dep", base_url=root, api_key="k", azure_api_version="2024-10-21", max_attempts=1,
                               timeout_s=5)
    return OpenAIChatModel("gpt-test", base_url=f"{root}/v1", api_key="k", max_attempts=1, timeout_s=5)


def test_is_a_chat_model_with_a_stable_id(kind, app, local):
    model = make(kind, app, local)
    assert isinstance(model, ChatModel)
    assert isinstance(model.model_id, str) and model.model_id and model.model_id == make(kind, app, local).model_id


def test_replies_with_text(kind, app, local):
    model = make(kind, app, local)
    reply = model.chat(MESSAGES)
    assert isinstance(reply, str) and reply.strip()
    assert model.chat(MESSAGES, max_completion_tokens=50, temperature=0.0).strip()
    if kind == "extractive":  # hand check: the sentence of the passage that answers
        assert reply == "Employees get 25 days of paid leave per year."


@pytest.mark.parametrize("messages", MALFORMED)
def test_malformed_messages_raise_config_error(kind, app, local, messages):
    with pytest.raises(ConfigError):
        make(kind, app, local).chat(messages)


def test_a_backend_that_cannot_answer_raises_generation_error(kind, app, local):
    with pytest.raises(GenerationError):
        make(kind, app, local, broken=True).chat(MESSAGES)
