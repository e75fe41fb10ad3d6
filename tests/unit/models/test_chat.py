"""OpenAI-compatible chat client (core.models.endpoint) against a local HTTP server."""

from __future__ import annotations

import socket

import pytest

from core.errors import ConfigError, GenerationError
from core.models import ChatModel, EmptyReplyError, OpenAIChatModel, check_messages
from tests.support.openai_app import ChatReply

USER = [{"role": "user", "content": "What is RAG?"}]


def model(app, **kwargs) -> OpenAIChatModel:
    kwargs.setdefault("retry_wait_s", 0.01)
    return OpenAIChatModel("gpt-test", base_url=app.base_url, api_key="k", **kwargs)


def test_reply_and_request_body(app):
    app.reply("Retrieval-augmented generation.")
    chat = model(app)
    assert chat.chat(USER) == "Retrieval-augmented generation."
    body = app.chat_requests[0]
    assert body["model"] == "gpt-test"
    assert body["messages"] == USER
    assert body["max_completion_tokens"] == 1024 and body["temperature"] == 0.1
    assert chat.usage == {"requests": 1, "prompt_tokens": 3, "completion_tokens": 2}


def test_model_id_names_host_and_model(app):
    chat = model(app)
    assert chat.model_id == f"openai:{app.base_url.split('/')[2]}/gpt-test"
    assert OpenAIChatModel("gpt-4o-mini").model_id == "openai:api.openai.com/gpt-4o-mini"
    assert isinstance(chat, ChatModel)


def test_call_overrides_and_omitted_parameters(app):
    app.reply("a", "b")
    chat = model(app, temperature=None, max_completion_tokens=None)
    chat.chat(USER)
    assert "temperature" not in app.chat_requests[0] and "max_completion_tokens" not in app.chat_requests[0]
    chat.chat(USER, max_completion_tokens=7, temperature=0.0)
    assert app.chat_requests[1]["max_completion_tokens"] == 7 and app.chat_requests[1]["temperature"] == 0.0


def test_max_tokens_field_for_older_servers(app):
    app.reply("a")
    model(app, token_limit_field="max_tokens", max_completion_tokens=5).chat(USER)
    assert app.chat_requests[0]["max_tokens"] == 5 and "max_completion_tokens" not in app.chat_requests[0]


def test_429_then_success_is_retried(app):
    app.reply(ChatReply(status=429), ChatReply(status=503), "fine")
    assert model(app, max_attempts=3).chat(USER) == "fine"
    assert len(app.chat_requests) == 3


def test_5xx_gives_up_after_max_attempts(app):
    app.reply(*[ChatReply(status=500)] * 3)
    chat = model(app, max_attempts=2)
    with pytest.raises(GenerationError, match=r"gpt-test failed: InternalServerError"):
        chat.chat(USER)
    assert len(app.chat_requests) == 2


def test_client_errors_are_not_retried(app):
    app.reply(ChatReply(status=400), "never sent")
    with pytest.raises(GenerationError, match="BadRequestError"):
        model(app, max_attempts=4).chat(USER)
    assert len(app.chat_requests) == 1


def test_timeout_is_retried(app):
    app.reply(ChatReply(content="too late", delay_s=1.0), "on time")
    assert model(app, timeout_s=0.2, max_attempts=2).chat(USER) == "on time"
    assert len(app.chat_requests) == 2


def test_timeouts_give_up_with_generation_error(app):
    app.reply(ChatReply(delay_s=1.0), ChatReply(delay_s=1.0))
    with pytest.raises(GenerationError, match="APITimeoutError"):
        model(app, timeout_s=0.2, max_attempts=2).chat(USER)


def test_connection_errors_are_retried_then_fail():
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    chat = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_attempts=2, retry_wait_s=0.01)
    with pytest.raises(GenerationError, match="APIConnectionError"):
        chat.chat(USER)


@pytest.mark.parametrize("reply", [ChatReply(content=""), ChatReply(content=None), ChatReply(content="  \n ")])
def test_empty_reply_is_an_error(app, reply):
    app.reply(reply)
    with pytest.raises(EmptyReplyError, match=r"openai:.*/gpt-test returned an empty reply"):
        model(app).chat(USER)


def test_empty_reply_at_token_limit_says_so(app):
    app.reply(ChatReply(content="", finish_reason="length"))
    with pytest.raises(GenerationError, match="token limit"):
        model(app).chat(USER)


def test_azure_openai_uses_the_deployment_route(app):
    app.reply("from azure")
    chat = OpenAIChatModel("my-deployment", base_url=app.endpoint, api_key="k", azure_api_version="2024-10-21")
    assert chat.chat(USER) == "from azure"
    assert app.requests[0]["path"] == "/openai/deployments/my-deployment/chat/completions"
    assert app.requests[0]["query"]["api-version"] == "2024-10-21"
    assert chat.model_id.startswith("azure:127.0.0.1:")


class _TokenCredential:
    """An ``azure.core.credentials.TokenCredential`` handing out numbered tokens, as a managed
    identity would (no Entra ID endpoint is reachable here)."""

    def __init__(self) -> None:
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes, **kwargs):
        import time

        from azure.core.credentials import AccessToken

        self.scopes.append(scopes)
        return AccessToken(f"token-{len(self.scopes)}", int(time.time()) + 3600)


def test_azure_openai_without_a_key_sends_an_entra_id_token(app):
    from core.models.azure import AZURE_OPENAI_SCOPE, token_provider

    app.reply("from azure", "again")
    credential = _TokenCredential()
    chat = OpenAIChatModel("my-deployment", base_url=app.endpoint, azure_api_version="2024-10-21",
                           azure_ad_token_provider=token_provider(credential))
    assert chat.chat(USER) == "from azure" and chat.chat(USER) == "again"
    # one token, fetched for the Cognitive Services scope, reused while it is valid; no key sent
    assert credential.scopes == [(AZURE_OPENAI_SCOPE,)] and AZURE_OPENAI_SCOPE == "https://cognitiveservices.azure.com/.default"
    assert [(r["authorization"], r["api_key"]) for r in app.requests] == [("Bearer token-1", None)] * 2


def test_azure_openai_with_a_key_sends_the_key(app):
    app.reply("keyed")
    OpenAIChatModel("d", base_url=app.endpoint, api_key="secret-k", azure_api_version="2024-10-21").chat(USER)
    assert (app.requests[0]["api_key"], app.requests[0]["authorization"]) == ("secret-k", None)


@pytest.mark.parametrize(
    "messages",
    [[], [{"role": "robot", "content": "x"}], [{"role": "user", "content": 3}], ["hello"], "hello"],
)
def test_malformed_messages_are_refused(messages):
    with pytest.raises(ConfigError):
        check_messages(messages)


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"timeout_s": 0}, {"temperature": 3.0}, {"max_completion_tokens": 0},
     {"token_limit_field": "tokens"}, {"azure_api_version": "2024-10-21"}],
)
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ConfigError):
        OpenAIChatModel("m", **kwargs)
