"""One JSON request to an OpenAI-compatible or Azure OpenAI endpoint, over a pooled ``urllib3``
connection: what ``OpenAIChatModel`` sends every chat completion through.

The ``openai`` client spends about twice the CPU time of the request itself building and
reading each one (typed options, header merging, response wrapping); a chat model sends one
request per question, from many threads at once, and posts a body it has already checked, so
the request is made here: the URL and headers the ``openai`` client would send, the body as
JSON, the reply parsed as JSON whatever its content type. Retries are the caller's (this sends
each request once), as with ``openai``'s ``max_retries=0``.

- OpenAI-compatible: ``POST {base_url}/chat/completions`` with ``Authorization: Bearer <key>``
  (``base_url`` default ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``).
- Azure OpenAI: ``POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=
  {version}`` with ``api-key: <key>``, or without a key ``Authorization: Bearer <Entra ID token>``.
- Proxies from ``HTTP(S)_PROXY`` / ``ALL_PROXY`` unless ``NO_PROXY`` names the host, read once
  (as ``requests`` reads them; ``host:port`` means ``http://host:port``); certificates from
  ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set, else ``certifi``'s bundle (as ``httpx``, and so
  ``openai``, does).

References:
    OpenAI API reference, chat completions: https://platform.openai.com/docs/api-reference/chat/create ;
    Azure OpenAI REST reference: https://learn.microsoft.com/azure/ai-services/openai/reference ;
    error names as ``openai-python`` raises them (``openai/_exceptions.py``, ``_make_status_error``).
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Callable, Mapping
from urllib.parse import quote, urljoin, urlsplit

#: Largest reply body read, in bytes (16 MiB, some thousand times a long answer); a longer one
#: is an error, not read on.
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: Bytes of an error reply (a status other than 2xx) read for its message.
MAX_ERROR_BYTES = 4096
#: Redirects followed (307 and 308 only, which keep the POST and its body).
MAX_REDIRECTS = 5
#: Idle connections kept per host; more requests at once open more and close them after use.
POOL_CONNECTIONS = 256
#: The error name of each HTTP status, as ``openai-python`` names its exceptions.
STATUS_ERRORS = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                 404: "NotFoundError", 409: "ConflictError", 422: "UnprocessableEntityError",
                 429: "RateLimitError"}
DEFAULT_BASE_URL = "https://api.openai.com/v1"

__all__ = ["EndpointError", "JSONEndpoint", "retry_after_seconds", "MAX_ERROR_BYTES", "MAX_REDIRECTS", "MAX_REPLY_BYTES", "STATUS_ERRORS"]


class EndpointError(Exception):
    """A request that got no usable answer.

    Attributes:
        name: ``openai-python``'s name for it (``RateLimitError``, ``InternalServerError``,
            ``APITimeoutError``, ``APIConnectionError``, ...), so messages read as before.
        status_code: the HTTP status, or None when no answer came.
        transient: whether a retry may succeed (429, 5xx, a timeout, a lost connection);
            ``core.errors.is_transient`` reads it.
        retry_after_s: the seconds the server asked to wait before a retry (its
            ``Retry-After`` header, in seconds or as an HTTP date), or None.
    """

    def __init__(self, name: str, message: str, *, status_code: int | None = None, transient: bool,
                 retry_after_s: float | None = None) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.status_code = status_code
        self.transient = transient
        self.retry_after_s = retry_after_s


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header as seconds from now: a number of seconds, or an HTTP date (0
    when it has passed); None when absent or unreadable.

    References:
        RFC 9110, section 10.2.3 (Retry-After): https://www.rfc-editor.org/rfc/rfc9110#name-retry-after
    """
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        from datetime import datetime, timezone

        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
    return seconds if seconds >= 0 and seconds == seconds and seconds != float("inf") else None


def _status_error(status: int, body: bytes, retry_after: str | None = None) -> EndpointError:
    name = STATUS_ERRORS.get(status) or ("InternalServerError" if status >= 500 else "APIStatusError")
    text = body[:500].decode("utf-8", errors="replace").strip()
    return EndpointError(name, f"Error code: {status}" + (f" - {text}" if text else ""), status_code=status,
                         transient=status == 429 or status >= 500, retry_after_s=retry_after_seconds(retry_after))


def _ssl_context() -> Any:
    import ssl

    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context()  # OpenSSL reads both variables
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi comes with requests and httpx
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class JSONEndpoint:
    """POSTs JSON bodies to one endpoint's path and returns the parsed replies (thread-safe).

    Args:
        base_url: an OpenAI-compatible ``.../v1`` URL, or with ``azure_api_version`` the Azure
            OpenAI resource endpoint; None: ``OPENAI_BASE_URL``, else :data:`DEFAULT_BASE_URL`.
        api_key: the key (never logged); None or empty: ``"not-needed"`` for an OpenAI-compatible
            server, Entra ID tokens from ``ad_token_provider`` for Azure OpenAI.
        azure_api_version: the Azure OpenAI API version, or None.
        timeout_s: seconds to connect, and seconds to wait for each part of the reply.
        ad_token_provider: for Azure OpenAI without a key: gives a bearer token (default
            ``core.models.azure.token_provider()``, made on first use).
        auth_headers: for an endpoint of another kind (a deployed app): gives the headers that
            authenticate each request (none when it returns ``{}``), instead of the
            ``Authorization: Bearer`` an OpenAI-compatible server gets.
        headers: more headers sent with every request (not secrets: they may be shown).
    """

    def __init__(self, *, base_url: str | None, api_key: str | None, azure_api_version: str | None,
                 timeout_s: float, ad_token_provider: Callable[[], str] | None = None,
                 auth_headers: Callable[[], Mapping[str, str]] | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        self.azure_api_version = azure_api_version
        root = base_url or ("" if azure_api_version else os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        self._base = root
        self._auth_headers = auth_headers
        self._extra_headers = dict(headers or {})
        self._secret_names: set[str] = set()  # headers auth_headers gave: never sent to another origin
        self.root = root.rstrip("/")
        self._api_key = api_key or None
        self._token_provider = ad_token_provider
        self.timeout_s = float(timeout_s)
        self._lock = threading.Lock()
        self._pool: Any = None

    def url(self, path: str, deployment: str | None = None) -> str:
        """The URL of ``path`` (``"/chat/completions"``); for Azure OpenAI under the deployment's
        route, with the API version; ``""``: the base URL exactly as given."""
        if not path and not self.azure_api_version:
            return self._base
        if self.azure_api_version:
            return (f"{self.root}/openai/deployments/{quote(deployment or '', safe='')}{path}"
                    f"?api-version={quote(self.azure_api_version, safe='')}")
        return f"{self.root}{path}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "ragtune",
                   **self._extra_headers}
        if self._auth_headers is not None:
            try:
                auth = dict(self._auth_headers())
            except Exception as exc:  # noqa: BLE001 - azure-identity's errors, named in the message
                raise EndpointError("AuthenticationError", f"no credentials for {self.root.split('?', 1)[0]}: "
                                    f"{type(exc).__name__}: {exc}", transient=False) from exc
            self._secret_names.update(k.lower() for k in auth)
            headers.update(auth)
        elif self.azure_api_version:
            if self._api_key:
                headers["api-key"] = self._api_key
            else:
                with self._lock:
                    if self._token_provider is None:
                        from core.models.azure import token_provider

                        self._token_provider = token_provider()
                try:
                    token = self._token_provider()
                except Exception as exc:  # noqa: BLE001 - azure-identity's errors, named in the message
                    raise EndpointError("AuthenticationError", f"no Microsoft Entra ID token for Azure OpenAI: "
                                        f"{type(exc).__name__}: {exc}", transient=False) from exc
                headers["Authorization"] = f"Bearer {token}"
        else:
            headers["Authorization"] = f"Bearer {self._api_key or 'not-needed'}"
        return headers

    def _pool_for(self, url: str) -> Any:
        with self._lock:
            if self._pool is None:
                import urllib3
                from requests.utils import get_environ_proxies

                proxies = get_environ_proxies(url)  # {} when NO_PROXY names the host
                proxy = proxies.get(url.split(":", 1)[0].lower()) or proxies.get("all")
                if proxy and "://" not in proxy:  # "host:port", as requests and httpx read it
                    proxy = f"http://{proxy}"
                options = {"maxsize": POOL_CONNECTIONS, "block": False, "retries": False}
                if url.lower().startswith("https:"):
                    options["ssl_context"] = _ssl_context()
                self._pool = urllib3.ProxyManager(proxy, **options) if proxy else urllib3.PoolManager(**options)
            return self._pool

    def post(self, path: str, body: dict[str, Any], *, deployment: str | None = None) -> Any:
        """POST ``body`` as JSON and return the reply's JSON (any JSON value, whatever the
        content type says).

        Raises:
            EndpointError: no answer (``APITimeoutError``, ``APIConnectionError``, a connection
                cut mid-reply: transient), or an HTTP status other than 2xx (named by status).
            ValueError / RecursionError: a 2xx reply whose body is not JSON, or nested past
                parsing; ``ValueError`` too for a body over :data:`MAX_REPLY_BYTES`.

        A 307 or 308 answer is followed (up to :data:`MAX_REDIRECTS`), as the ``openai`` client
        follows redirects; the key is not sent on to another origin (scheme and host).
        """
        return json.loads(self.post_bytes(path, body, deployment=deployment))

    def post_bytes(self, path: str, body: Any, *, deployment: str | None = None) -> bytes:
        """POST ``body`` as JSON and return the 2xx reply's body as it came (see :meth:`post`).

        Raises:
            EndpointError: as :meth:`post` (a 429 or 503 carries the ``Retry-After`` it sent).
            ValueError: a body over :data:`MAX_REPLY_BYTES`.
        """
        url = self.url(path, deployment)
        data = json.dumps(body).encode("ascii")  # escaped: a lone surrogate in a text cannot fail here
        headers = self._headers()
        secret = {"authorization", "api-key", *self._secret_names}
        for _ in range(MAX_REDIRECTS + 1):
            status, raw, reply_headers = self._send(url, data, headers)
            location = reply_headers.get("Location")
            if status not in (307, 308) or not location:
                break
            target = urljoin(url, location)
            if urlsplit(target)[:2] != urlsplit(url)[:2]:  # another origin: the key stays here
                headers = {k: v for k, v in headers.items() if k.lower() not in secret}
            url = target
        if not 200 <= status < 300:
            raise _status_error(status, raw, reply_headers.get("Retry-After"))
        if len(raw) > MAX_REPLY_BYTES:
            raise ValueError(f"the reply is longer than {MAX_REPLY_BYTES} bytes")
        return raw

    def _send(self, url: str, data: bytes, headers: dict[str, str]) -> tuple[int, bytes, Any]:
        """One POST: ``(status, body, the reply's headers)``; the body of a 2xx read up to one byte
        over :data:`MAX_REPLY_BYTES`, of anything else up to :data:`MAX_ERROR_BYTES`."""
        import urllib3
        from urllib3.exceptions import HTTPError, LocationValueError, NewConnectionError
        from urllib3.exceptions import TimeoutError as UrllibTimeout

        shown = url.split("?", 1)[0]
        timeout = urllib3.Timeout(connect=self.timeout_s, read=self.timeout_s)
        try:
            pool = self._pool_for(url)
        except ValueError as exc:  # an unusable URL or proxy (urllib3's LocationValueError): no retry helps
            raise EndpointError("APIConnectionError", f"cannot send to {shown}: {exc}", transient=False) from exc
        try:
            response = pool.request("POST", url, body=data, headers=headers, timeout=timeout,
                                    preload_content=False, redirect=False)
            whole = 200 <= response.status < 300
            try:
                raw = response.read((MAX_REPLY_BYTES if whole else MAX_ERROR_BYTES) + 1, cache_content=False)
            except BaseException:
                response.close()  # the connection may hold the rest of the body: not reused
                raise
            if whole and len(raw) <= MAX_REPLY_BYTES:
                response.release_conn()
            else:
                response.close()  # the rest of the body is not read: the connection is not reused
        except LocationValueError as exc:  # a URL urllib3 cannot parse: no retry helps
            raise EndpointError("APIConnectionError", f"cannot send to {shown}: {exc}", transient=False) from exc
        except ValueError:  # a header value HTTP cannot carry (the message may hold the key)
            raise EndpointError("APIConnectionError", f"cannot send to {shown}: a header holds characters HTTP "
                                "headers cannot carry (a line break or a non-Latin-1 character in the API key?)",
                                transient=False) from None
        except NewConnectionError as exc:  # a ConnectTimeoutError too, in urllib3's classes
            raise EndpointError("APIConnectionError", f"Connection error ({exc})", transient=True) from exc
        except UrllibTimeout as exc:
            raise EndpointError("APITimeoutError", f"Request timed out ({type(exc).__name__})", transient=True) from exc
        except (HTTPError, OSError) as exc:
            raise EndpointError("APIConnectionError", f"Connection error ({type(exc).__name__}: {exc})",
                                transient=True) from exc
        return response.status, raw, response.headers
