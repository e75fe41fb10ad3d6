"""Chat models: the ``ChatModel`` protocol and a client for any OpenAI-compatible endpoint.

A chat model takes a list of messages, each ``{"role": "system" | "user" | "assistant",
"content": str}``, and returns the assistant's reply as a string. It generates RAG answers
(``core.rag``) and judges them (``core.metrics.answers``).

References:
    OpenAI Chat Completions API: https://platform.openai.com/docs/api-reference/chat/create ;
    Azure OpenAI chat completions: https://learn.microsoft.com/azure/ai-services/openai/reference
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Literal, Mapping, Protocol, Sequence, runtime_checkable
from urllib.parse import urlparse

from core.errors import ConfigError, GenerationError
from core.limits import ENDPOINT_DEADLINE_S
from core.models.endpoint import EndpointError, JSONEndpoint
from core.models.spend import current_spend

logger = logging.getLogger(__name__)

#: Roles a message may have.
ROLES: tuple[str, ...] = ("system", "user", "assistant")


class EmptyReplyError(GenerationError):
    """A chat model answered, but with no text (a judge's empty reply is an invalid score,
    not a failed call)."""


@runtime_checkable
class ChatModel(Protocol):
    """Answers a conversation with one assistant message.

    Attributes:
        model_id: a stable id naming the model (and endpoint host for remote models); reports
            use it to say which model produced an answer or a judgement.
    """

    model_id: str

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_completion_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        """Return the assistant's reply to ``messages``.

        Args:
            messages: the conversation, oldest first, each ``{"role", "content"}`` with role
                ``"system"``, ``"user"`` or ``"assistant"``.
            max_completion_tokens: largest reply in tokens; None uses the model's setting.
            temperature: sampling temperature (0 to 2); None uses the model's setting.

        Returns:
            The reply text (non-empty).

        Raises:
            ConfigError: the messages are malformed.
            GenerationError: the model failed or replied with nothing.
        """
        ...


def check_messages(messages: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """Validate chat messages and return them as plain dicts.

    Args:
        messages: at least one message, each a mapping with ``role`` (one of :data:`ROLES`)
            and ``content`` (a string).

    Returns:
        ``[{"role": ..., "content": ...}, ...]`` in the same order (extra keys dropped).

    Raises:
        ConfigError: no message, a message that is not a mapping, an unknown role, or content
            that is not a string.
    """
    if isinstance(messages, (str, bytes)) or not messages:
        raise ConfigError("messages must be a non-empty list of {'role', 'content'} dicts")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ConfigError(f"messages[{i}] must be a dict with 'role' and 'content', got {type(message).__name__}")
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise ConfigError(f"messages[{i}]: role must be one of {', '.join(ROLES)}, got {role!r}")
        if not isinstance(content, str):
            raise ConfigError(f"messages[{i}]: content must be a string, got {type(content).__name__}")
        out.append({"role": role, "content": content})
    return out


class OpenAIChatModel:
    """Any OpenAI-compatible chat completions endpoint: OpenAI, Azure OpenAI, Ollama, vLLM, ...

    Requests are sent by :class:`core.models.endpoint.JSONEndpoint` (the URL and headers the
    ``openai`` client would send, at a fraction of its CPU time per request), each once; rate
    limits (429), server errors (5xx), timeouts and dropped connections are retried here with
    exponential backoff and jitter (tenacity), up to ``max_attempts`` attempts. Other errors
    (400, 401, 404, ...) fail at once. Every failure, and a reply with no text, raises
    :class:`GenerationError` naming the model.

    Args:
        model: model name (for Azure OpenAI: the deployment name).
        base_url: endpoint base URL (``https://api.openai.com/v1``, ``http://localhost:11434/v1``,
            ``http://localhost:8000/v1``, or the Azure resource endpoint); None uses the client's
            default.
        api_key: the key; never logged or written to reports. Local servers accept any value.
        timeout_s: seconds to connect and to wait for each part of a reply.
        deadline_s: the total time of one request in seconds, however slowly its reply
            arrives (a request past it is a timeout, retried as one; default
            :data:`core.limits.ENDPOINT_DEADLINE_S`).
        max_attempts: attempts per request, including the first (>= 1).
        retry_wait_s: first backoff wait in seconds; it doubles per attempt (plus up to the same
            again of jitter), capped at 20 s.
        max_completion_tokens: default largest reply in tokens (>= 1), or None to leave it to
            the endpoint.
        temperature: default sampling temperature in [0, 2], or None to leave it to the
            endpoint (reasoning models accept only their default).
        azure_api_version: set it (with ``base_url`` = the Azure endpoint) for Azure OpenAI's
            deployment route; ``model`` is then the deployment name. Without ``api_key``
            it authenticates with Microsoft Entra ID tokens (see :mod:`core.models.azure`).
        azure_ad_token_provider: for Azure OpenAI without a key, where tokens come from
            (default ``DefaultAzureCredential``'s, see :func:`core.models.azure.token_provider`).
        token_limit_field: the request field that carries the token limit:
            ``"max_completion_tokens"`` (OpenAI, Azure OpenAI, vLLM) or ``"max_tokens"`` (older
            OpenAI-compatible servers).

    Attributes:
        model_id: ``"openai:<host>/<model>"`` (``"azure:<host>/<deployment>"`` for Azure).
        usage: running totals ``{"requests", "prompt_tokens", "completion_tokens"}`` over
            successful requests (thread-safe).

    Raises:
        ConfigError: a setting out of range.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_attempts: int = 6,
        retry_wait_s: float = 0.5,
        max_completion_tokens: int | None = 1024,
        temperature: float | None = 0.1,
        azure_api_version: str | None = None,
        token_limit_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens",
        azure_ad_token_provider: Callable[[], str] | None = None,
        deadline_s: float = ENDPOINT_DEADLINE_S,
    ) -> None:
        if not model or not isinstance(model, str):
            raise ConfigError("chat model name must be a non-empty string")
        if max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {max_attempts}")
        if timeout_s <= 0:
            raise ConfigError(f"timeout_s must be positive, got {timeout_s}")
        if not deadline_s > 0:
            raise ConfigError(f"deadline_s must be positive, got {deadline_s}")
        if retry_wait_s < 0:
            raise ConfigError(f"retry_wait_s must not be negative, got {retry_wait_s}")
        _check_generation_params(max_completion_tokens, temperature)
        if token_limit_field not in ("max_completion_tokens", "max_tokens"):
            raise ConfigError(f"token_limit_field must be 'max_completion_tokens' or 'max_tokens', got {token_limit_field!r}")
        if azure_api_version and not base_url:
            raise ConfigError("Azure OpenAI needs base_url (the resource endpoint) with azure_api_version")
        self.model = model
        self.base_url = base_url
        self._api_key = api_key
        self._ad_token_provider = azure_ad_token_provider
        self.timeout_s = float(timeout_s)
        self.deadline_s = float(deadline_s)
        self.max_attempts = int(max_attempts)
        self.retry_wait_s = float(retry_wait_s)
        self.max_completion_tokens = max_completion_tokens
        self.temperature = temperature
        self.azure_api_version = azure_api_version
        self.token_limit_field = token_limit_field
        try:
            host = urlparse(base_url).netloc if base_url else "api.openai.com"
        except ValueError as exc:
            raise ConfigError(f"chat model {model}: base_url {base_url!r} is not a URL ({exc})") from None
        self.model_id = f"{'azure' if azure_api_version else 'openai'}:{host}/{model}"
        self.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._lock = threading.Lock()
        self._transport: Any = None

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model_id!r})"

    def _endpoint(self) -> Any:
        with self._lock:
            if self._transport is None:
                self._transport = JSONEndpoint(base_url=self.base_url, api_key=self._api_key,
                                               azure_api_version=self.azure_api_version, timeout_s=self.timeout_s,
                                               ad_token_provider=self._ad_token_provider, deadline_s=self.deadline_s)
            return self._transport

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_completion_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        """Send ``messages`` and return the reply text.

        Args:
            messages: the conversation, oldest first (see :func:`check_messages`).
            max_completion_tokens: overrides the model's default for this call.
            temperature: overrides the model's default for this call.

        Returns:
            The first choice's text, unchanged (non-empty, not only whitespace).

        Raises:
            ConfigError: malformed messages or parameters out of range.
            GenerationError: the endpoint failed after retries (a request past its deadline is a
                timeout), refused the request, or answered a body that is not JSON; its
                subclass :class:`EmptyReplyError` when the reply holds no text (the message gives
                the model id and the finish reason).
        """
        from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

        payload = check_messages(messages)
        tokens = max_completion_tokens if max_completion_tokens is not None else self.max_completion_tokens
        temp = temperature if temperature is not None else self.temperature
        _check_generation_params(tokens, temp)
        kwargs: dict[str, Any] = {"model": self.model, "messages": payload}
        if tokens is not None:
            kwargs[self.token_limit_field] = int(tokens)
        if temp is not None:
            kwargs["temperature"] = float(temp)

        def retryable(exc: BaseException) -> bool:
            return isinstance(exc, EndpointError) and exc.transient

        try:
            for attempt in Retrying(
                retry=retry_if_exception(retryable), stop=stop_after_attempt(self.max_attempts),
                wait=wait_exponential_jitter(multiplier=self.retry_wait_s, max=20, jitter=self.retry_wait_s),
                reraise=True,
            ):
                with attempt:
                    # the body is already plain JSON (check_messages): posted as it is, and the
                    # reply read as JSON (core.models.endpoint)
                    reply = self._endpoint().post("/chat/completions", kwargs, deployment=self.model)
        except EndpointError as exc:
            raise GenerationError(f"chat model {self.model_id} failed: {exc}") from exc
        except (ValueError, RecursionError) as exc:  # a 2xx whose body is not JSON (or nested past parsing)
            raise GenerationError(f"chat model {self.model_id} answered with a body that is not JSON: {exc}") from exc
        content, reason, usage = _reply_parts(reply, self.model_id)
        if not isinstance(content, str) or not content.strip():
            hint = " (the token limit was reached before any text)" if reason == "length" else ""
            raise EmptyReplyError(f"chat model {self.model_id} returned an empty reply (finish_reason={reason!r}){hint}")
        prompt, completion = _usage_tokens(usage)
        with self._lock:
            self.usage["requests"] += 1
            self.usage["prompt_tokens"] += prompt or 0
            self.usage["completion_tokens"] += completion or 0
        spend = current_spend()
        if spend is not None:
            spend.add_request(prompt, completion)
        return content


def _reply_parts(reply: Any, model_id: str) -> tuple[Any, Any, Any]:
    """``(content, finish_reason, usage)`` of a chat completion's JSON (``choices[0].message.
    content``, ``choices[0].finish_reason``, ``usage``; OpenAI's chat completion object).

    Raises:
        GenerationError: the reply is not a chat completion object, or has no choices.
    """
    import json

    if isinstance(reply, str):  # a JSON body sent without a JSON content type
        try:
            reply = json.loads(reply)
        except (ValueError, RecursionError):
            raise GenerationError(f"chat model {model_id} answered with a body that is not JSON") from None
    if not isinstance(reply, Mapping):
        raise GenerationError(f"chat model {model_id} answered with {type(reply).__name__}, not a chat completion object")
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices:
        raise GenerationError(f"chat model {model_id} returned no choices")
    choice = choices[0] if isinstance(choices[0], Mapping) else {}
    message = choice.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return content, choice.get("finish_reason"), reply.get("usage")


def _usage_tokens(usage: Any) -> tuple[int | None, int | None]:
    """``(prompt_tokens, completion_tokens)`` of a reply's ``usage`` object (None each when
    absent or not a whole number)."""
    if not isinstance(usage, Mapping):
        return None, None

    def count(name: str) -> int | None:
        value = usage.get(name)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    return count("prompt_tokens"), count("completion_tokens")


def _check_generation_params(max_completion_tokens: int | None, temperature: float | None) -> None:
    if max_completion_tokens is not None and int(max_completion_tokens) < 1:
        raise ConfigError(f"max_completion_tokens must be at least 1, got {max_completion_tokens}")
    if temperature is not None and not 0.0 <= float(temperature) <= 2.0:
        raise ConfigError(f"temperature must be between 0 and 2, got {temperature}")
