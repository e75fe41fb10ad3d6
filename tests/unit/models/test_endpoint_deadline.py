"""Every request to an endpoint (embeddings, chat, rerank) has a total deadline: a server that
answers one byte at a time, each byte well within the read timeout, fails the request within
the deadline plus a small margin, as a transient timeout; the next request is served.

The server is a plain socket server (tests/support/trickle_server.py) over real HTTP; the
deadline is read with ``time.monotonic`` around the call."""

from __future__ import annotations

import time

import pytest

from core.errors import ConfigError, EmbeddingError, GenerationError, RerankError, is_transient
from core.models import OpenAIChatModel, OpenAIEmbeddingModel
from core.models.deadline import RequestDeadline
from core.models.rerank import HttpReranker
from core.settings import Settings, endpoint_deadline_s
from tests.support.openai_app import ChatReply, EmbeddingReply, OpenAITestApp
from tests.support.trickle_server import TrickleServer

DEADLINE_S = 1.0
#: What the request may take past its deadline: the watchdog's wake-up and the error's way up.
MARGIN_S = 0.75
USER = [{"role": "user", "content": "What is RAG?"}]


def _timed(call):
    started = time.monotonic()
    with pytest.raises(Exception) as caught:
        call()
    return time.monotonic() - started, caught.value


MODELS = {
    "embeddings": (lambda url: OpenAIEmbeddingModel("emb", base_url=url, api_key="k", embedding_dimension=4,
                                                    max_attempts=1, timeout_s=30, deadline_s=DEADLINE_S),
                   lambda m: m.embed_documents(["alpha"]), EmbeddingError),
    "chat": (lambda url: OpenAIChatModel("m", base_url=url, api_key="k", max_attempts=1, timeout_s=30,
                                         deadline_s=DEADLINE_S),
             lambda m: m.chat(USER), GenerationError),
    "rerank": (lambda url: HttpReranker("r", base_url=url, max_attempts=1, timeout_s=30, deadline_s=DEADLINE_S),
               lambda m: m.rerank("q", ["a passage"]), RerankError),
}


@pytest.mark.parametrize("phase", ["body", "headers"])
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_a_trickling_endpoint_fails_within_the_deadline_as_a_transient_timeout(kind, phase):
    make, call, error = MODELS[kind]
    # one byte every 0.2 s: each read returns long before its 30 s timeout; the whole reply
    # would take 120 s
    with TrickleServer(interval_s=0.2, phase=phase) as server:
        took, exc = _timed(lambda: call(make(server.base_url)))
        deadline = time.monotonic() + 5
        while not server.gone_after_s and time.monotonic() < deadline:
            time.sleep(0.05)  # the server notices the closed connection at its next byte
    assert isinstance(exc, error), exc
    assert DEADLINE_S <= took < DEADLINE_S + MARGIN_S, took
    assert is_transient(exc)
    assert "within the deadline of 1 s (RAGTUNE_ENDPOINT_DEADLINE_S)" in str(exc)
    assert len(server.requests) == 1 and server.gone_after_s[0] < DEADLINE_S + MARGIN_S + 0.5


def test_a_timed_out_request_is_retried_and_the_connection_is_not_reused():
    # the first reply trickles past the deadline; the retry gets a whole reply from the same server
    with OpenAITestApp(embedding_model=_Unit()) as app:
        app.reply_embeddings(EmbeddingReply(transform=lambda v: v, trickle_s=0.05))  # some 5,000 bytes: 250 s
        model = OpenAIEmbeddingModel("emb", base_url=app.base_url, api_key="k", max_attempts=2, retry_wait_s=0,
                                     timeout_s=30, deadline_s=DEADLINE_S)
        started = time.monotonic()
        vectors = model.embed_documents(["alpha"] * 40)
        took = time.monotonic() - started
    assert vectors.shape == (40, 4) and (vectors == 0.5).all()  # hand: the unit model's vector
    assert len(app.embedding_requests) == 2 and DEADLINE_S <= took < DEADLINE_S + MARGIN_S + 1.0


def test_a_slow_but_whole_reply_within_the_deadline_is_read():
    with OpenAITestApp(chat=[ChatReply("on time", delay_s=0.3)]) as app:
        model = OpenAIChatModel("m", base_url=app.base_url, api_key="k", max_attempts=1, deadline_s=DEADLINE_S)
        assert model.chat(USER) == "on time"


def test_quick_requests_leave_no_deadline_behind():
    from core.models import deadline as module

    with OpenAITestApp(embedding_model=_Unit()) as app:
        model = OpenAIEmbeddingModel("emb", base_url=app.base_url, api_key="k", deadline_s=DEADLINE_S)
        for _ in range(20):
            model.embed_documents(["alpha"])
    time.sleep(DEADLINE_S + 0.3)  # past every deadline: none expired, none kept
    watchdog = module._watchdog()
    with watchdog._wake:
        assert watchdog._live == 0 and not [e for e in watchdog._heap if not e[2].done]
    assert module.current_deadline() is None


def test_a_deadline_that_passes_marks_itself_expired():
    with RequestDeadline(0.1) as deadline:
        time.sleep(0.3)
        assert deadline.expired and deadline.remaining_s() == 0
    with RequestDeadline(5) as deadline:
        pass
    assert not deadline.expired


def test_the_deadline_comes_from_the_environment():
    assert endpoint_deadline_s({}) == 300.0 == Settings.from_env({}).endpoint_deadline_s
    env = {"RAGTUNE_ENDPOINT_DEADLINE_S": "42.5", "RAGTUNE_CHAT_PROVIDER": "openai", "RAGTUNE_CHAT_MODEL": "m",
           "RAGTUNE_EMBEDDING_PROVIDER": "openai", "RAGTUNE_RERANK_PROVIDER": "tei", "RAGTUNE_RERANK_MODEL": "r",
           "RAGTUNE_RERANK_BASE_URL": "http://127.0.0.1:9/v1"}
    settings = Settings.from_env(env)
    assert settings.endpoint_deadline_s == 42.5
    assert settings.chat_model().deadline_s == settings.embedding_model().deadline_s == 42.5
    assert settings.reranker().deadline_s == settings.judge_model("j").deadline_s == 42.5
    for bad in ("0", "-1", "soon", "inf"):
        with pytest.raises(ConfigError, match="RAGTUNE_ENDPOINT_DEADLINE_S must be a positive number"):
            endpoint_deadline_s({"RAGTUNE_ENDPOINT_DEADLINE_S": bad})


class _Unit:
    """An embedding model whose every vector is (0.5, 0.5, 0.5, 0.5) (unit length)."""

    model_id = "unit"

    def embed_documents(self, texts):
        import numpy as np

        return np.full((len(texts), 4), 0.5, dtype=np.float32)
