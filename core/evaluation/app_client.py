"""Sending questions to a deployed RAG app over HTTP: auth, rate limit, retries, a reply cache.

One request per question, POSTed as JSON by :class:`core.models.endpoint.JSONEndpoint` (the
project's pooled transport: proxies, certificates, redirects, bounded replies). Around it:

- auth from the settings (``core.settings.AppSettings``): a key in a header, or a Microsoft
  Entra ID bearer token for a scope (``DefaultAzureCredential``), or none; a user and password
  in the URL (``https://user:pw@host/chat``) are sent as HTTP Basic auth (RFC 7617), never shown;
- at most ``requests_per_minute`` requests started per minute, across threads;
- retries of 429, 5xx, timeouts and lost connections with exponential backoff and jitter
  (tenacity), waiting at least what ``Retry-After`` asks; never past the run's deadline;
- every reply that came back 2xx with a JSON body kept in the reply cache (the SQLite file of
  the embedding cache, ``core.models.cache``) under the sha256 of (URL, body), with the
  latency it had, so a rerun sends nothing unless asked to (``refresh``). A reply whose
  mapping finds nothing is kept too: fix the mapping, and the rerun reads it again for free.

References:
    RFC 9110, section 15.5.30 (429) and 10.2.3 (Retry-After):
    https://www.rfc-editor.org/rfc/rfc9110 ; tenacity: https://tenacity.readthedocs.io/
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping
from urllib.parse import urlsplit

from core.errors import ConfigError
from core.evaluation.app_config import AppConfig, MappedReply, map_reply, render_request
from core.models.azure import token_provider
from core.models.endpoint import EndpointError, JSONEndpoint
from core.redaction import shown_url, url_secrets, without_credentials

if TYPE_CHECKING:
    from core.models.cache import EmbeddingCache
    from core.settings import AppSettings

__all__ = ["AppClient", "Exchange", "RateLimiter", "app_auth_headers", "failure_kind"]

#: The longest ``Retry-After`` honoured, in seconds (a longer one is waited this long).
MAX_RETRY_AFTER_S = 120.0


class RateLimiter:
    """Spaces request starts at least ``60 / requests_per_minute`` seconds apart, across threads.

    Args:
        requests_per_minute: the most starts per minute; 0 for no limit.
        clock: seconds, monotonic (default ``time.monotonic``).
        sleep: waits that many seconds (default ``time.sleep``).
    """

    def __init__(self, requests_per_minute: float, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval_s = 60.0 / requests_per_minute if requests_per_minute > 0 else 0.0
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self) -> None:
        """Return when the next request may start (at once without a limit)."""
        if not self.interval_s:
            return
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval_s
        if start > now:
            self._sleep(start - now)


@dataclass(frozen=True)
class Exchange:
    """One request to the app and what came back.

    Attributes:
        body: the reply's JSON, or None when there is none.
        text: the reply's body as text (None when no reply came).
        latency_ms: milliseconds from sending to the whole reply (of the last attempt; for a
            cached reply, the latency it had when it was asked).
        attempts: requests sent (0 for a reply from the cache).
        from_cache: the reply came from the cache.
        error: why there is no usable reply, else None.
        error_kind: ``timeout``, ``rate_limited``, ``server_error``, ``http_error``,
            ``connection``, ``auth``, ``not_json``, ``deadline``, or None.
    """

    body: Any
    text: str | None
    latency_ms: float | None
    attempts: int
    from_cache: bool = False
    error: str | None = None
    error_kind: str | None = None


def failure_kind(exc: BaseException) -> str:
    """The kind of a failed request (see :attr:`Exchange.error_kind`)."""
    status = getattr(exc, "status_code", None)
    name = getattr(exc, "name", type(exc).__name__)
    if status == 429:
        return "rate_limited"
    if isinstance(status, int) and status >= 500:
        return "server_error"
    if isinstance(status, int):
        return "http_error"
    if name == "APITimeoutError":
        return "timeout"
    if name == "AuthenticationError":
        return "auth"
    return "connection"


def app_auth_headers(settings: AppSettings, credential: Any = None) -> Callable[[], Mapping[str, str]]:
    """The auth headers of each request from ``core.settings.AppSettings``: the key in its
    header (``Authorization`` as ``Bearer <key>``), else a bearer token for the Entra ID scope
    (fetched and refreshed by ``azure.identity``'s bearer token provider, from ``credential``
    or ``DefaultAzureCredential``), else none. A credential that fails to give a token is not
    asked again: every later call raises its first error.""" 
    if settings.api_key:
        value = settings.api_key
        if settings.key_header.lower() == "authorization" and " " not in value.strip():
            value = f"Bearer {value}"
        header = {settings.key_header: value}
        return lambda: header
    if settings.scope:
        provider: list[Any] = []
        failed: list[BaseException] = []
        lock = threading.Lock()

        def bearer() -> Mapping[str, str]:
            # A credential that could not give a token is asked once: each later request fails
            # at once with the same error instead of walking the credential chain again.
            with lock:
                if failed:
                    raise failed[0]
                if not provider:
                    provider.append(token_provider(credential, scope=settings.scope))
                try:
                    return {"Authorization": f"Bearer {provider[0]()}"}
                except Exception as exc:  # noqa: BLE001 - azure-identity's errors, named by the caller
                    failed.append(exc)
                    raise

        return bearer
    return lambda: {}


class AppClient:
    """Asks one deployed app (thread-safe).

    Args:
        config: the request template and response mapping; its ``url`` is the endpoint.
        settings: ``core.settings.AppSettings`` (auth, rate, timeout, attempts).
        cache: an ``EmbeddingCache`` whose file keeps the replies, or None for no cache.
        refresh: ask the app even when the cache holds the reply (the new reply replaces it).
        deadline: ``time.monotonic()`` after which nothing more is sent, or None.
        retry_wait_s: the first backoff wait; it doubles per attempt (plus up to as much
            jitter), capped at 20 s.
        auth_headers: overrides :func:`app_auth_headers` (tests, other credentials).

    Raises:
        ConfigError: no URL, or one that is not http(s), or with a port that is not a number,
            or with a user and password as well as a key or scope in the settings.
    """

    def __init__(self, config: AppConfig, settings: AppSettings, *, cache: EmbeddingCache | None = None,
                 refresh: bool = False,
                 deadline: float | None = None, retry_wait_s: float = 0.5,
                 auth_headers: Callable[[], Mapping[str, str]] | None = None) -> None:
        url = config.url
        if not url or not url.lower().startswith(("http://", "https://")):
            raise ConfigError("the app's URL is missing or not http(s): give --url, 'url' in the config file, or "
                              f"RAGTUNE_APP_URL (got {url!r})")

        self.config = config
        self.settings = settings
        self.cache = cache
        self.refresh = refresh
        self.deadline = deadline
        self.retry_wait_s = float(retry_wait_s)
        self.url = url
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            raise ConfigError(f"the app's URL has a port that is not a number: {shown_url(url)!r}") from None
        # the cache's and the reports' name of the app: host, port and path, no credentials
        self.model_id = f"app:{parts.hostname or ''}{f':{port}' if port else ''}{parts.path}"
        self.limiter = RateLimiter(settings.requests_per_minute)
        send_to, basic = url, None
        if parts.username is not None:  # http://user:password@host/...: HTTP Basic auth, as curl and requests send it
            if settings.api_key or settings.scope:
                raise ConfigError(f"the app's URL {shown_url(url)} carries a user and password and the settings a key "
                                  "or an Entra ID scope too: give one way to authenticate")
            from base64 import b64encode
            from urllib.parse import unquote

            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            basic = {"Authorization": "Basic " + b64encode(pair.encode("utf-8")).decode("ascii")}
            host = parts.netloc.rsplit("@", 1)[1]
            send_to = parts._replace(netloc=host).geturl()
        # timeout_s bounds each request whole (a reply trickled a byte at a time too), not each read
        self.endpoint = JSONEndpoint(base_url=send_to, api_key=None, azure_api_version=None,
                                     timeout_s=settings.timeout_s, deadline_s=settings.timeout_s,
                                     auth_headers=auth_headers or ((lambda: basic) if basic else app_auth_headers(settings)),
                                     headers=config.headers)
        self._lock = threading.Lock()
        self.n_sent = 0
        self.n_from_cache = 0

    def request_body(self, *, question: str, question_id: str, turn: int, history: list[dict[str, str]],
                     session: Any) -> Any:
        """The JSON body of one question (the template filled in)."""
        messages = [*history, {"role": "user", "content": question}]
        return render_request(self.config.request, {
            "question": question, "question_id": question_id, "turn": turn, "messages": messages,
            "history": list(history), "overrides": dict(self.config.overrides), "session": session,
        })

    def key(self, body: Any) -> str:
        """The reply cache's key of ``body`` sent to this app: sha256 of canonical JSON."""
        text = json.dumps({"url": self.url, "body": body}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def cached(self, body: Any) -> Exchange | None:
        """The cached exchange of ``body``, or None (always None with ``refresh``)."""
        if self.cache is None or self.refresh:
            return None
        stored = self.cache.get_reply(self.key(body))
        if stored is None:
            return None
        kept = json.loads(stored)
        with self._lock:
            self.n_from_cache += 1
        return Exchange(json.loads(kept["text"]), kept["text"], kept.get("latency_ms"), 0, from_cache=True)

    def exchange(self, body: Any, *, use_cache: bool = True) -> Exchange:
        """The reply to ``body``: from the cache, else asked (with retries) and then cached.

        Never raises for a failed request: the :class:`Exchange` says why."""
        if use_cache:
            hit = self.cached(body)
            if hit is not None:
                return hit
        exchange = self._send(body)
        if exchange.error is None and self.cache is not None:
            kept = json.dumps({"text": exchange.text, "latency_ms": exchange.latency_ms}, ensure_ascii=False)
            self.cache.put_reply(self.key(body), self.model_id, kept)
        return exchange

    def _send(self, body: Any) -> Exchange:
        from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

        backoff = wait_exponential_jitter(multiplier=self.retry_wait_s, max=20, jitter=self.retry_wait_s)
        attempts = 0
        latency: list[float] = []

        def remaining() -> float:
            return float("inf") if self.deadline is None else self.deadline - time.monotonic()

        too_long: list[float] = []  # a Retry-After that ends past the run's deadline

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome is not None else None
            asked = getattr(exc, "retry_after_s", None)
            seconds = max(backoff(state), min(asked, MAX_RETRY_AFTER_S) if asked is not None else 0.0)
            return max(0.0, min(seconds, remaining()))

        def past_deadline(state: RetryCallState) -> bool:
            exc = state.outcome.exception() if state.outcome is not None else None
            asked = getattr(exc, "retry_after_s", None)
            if asked is not None and isinstance(exc, EndpointError) and exc.transient and asked > remaining():
                too_long.append(float(asked))  # waiting would only reach the deadline: not retried
                return True
            return remaining() <= 0

        def attempt() -> bytes:
            nonlocal attempts
            if remaining() <= 0:
                raise TimeoutError("deadline")
            self.limiter.wait()
            attempts += 1
            with self._lock:
                self.n_sent += 1
            started = time.perf_counter()
            try:
                return self.endpoint.post_bytes("", body)
            finally:
                latency.append((time.perf_counter() - started) * 1000.0)

        where = shown_url(self.url)
        try:
            raw = Retrying(retry=retry_if_exception(lambda e: isinstance(e, EndpointError) and e.transient),
                           stop=stop_after_attempt(self.settings.max_attempts) | past_deadline, wait=wait,
                           reraise=True)(attempt)
        except TimeoutError:
            return Exchange(None, None, latency[-1] if latency else None, attempts,
                            error=f"not sent: the run's deadline of {self.settings.deadline_s:g} s passed",
                            error_kind="deadline")
        except EndpointError as exc:
            tries = f" after {attempts} attempts" if attempts > 1 else ""
            detail = without_credentials(str(exc), url_secrets(self.url))
            if too_long:
                tries += (f"; not retried: it asked to wait {too_long[-1]:g} s (Retry-After), past the run's "
                          f"deadline of {self.settings.deadline_s:g} s")
            return Exchange(None, None, latency[-1] if latency else None, attempts,
                            error=f"{where}: {detail}{tries}", error_kind=failure_kind(exc))
        except ValueError as exc:  # a reply over the size limit
            return Exchange(None, None, latency[-1] if latency else None, attempts, error=f"{where}: {exc}",
                            error_kind="not_json")
        text = raw.decode("utf-8", errors="replace")
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            return Exchange(None, text, latency[-1], attempts,
                            error=f"{where} answered with a body that is not JSON: {text[:200]!r}",
                            error_kind="not_json")
        return Exchange(parsed, text, latency[-1], attempts)

    def read(self, exchange: Exchange) -> MappedReply:
        """The response mapping on ``exchange``'s reply (an error when there is none)."""
        if exchange.error is not None:
            return MappedReply(None, error=exchange.error)
        return map_reply(self.config, exchange.body)
