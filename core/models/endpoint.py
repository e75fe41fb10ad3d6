"""One JSON request to an OpenAI-compatible or Azure OpenAI endpoint, over a pooled ``urllib3``
connection: what ``OpenAIChatModel``, ``OpenAIEmbeddingModel`` and ``HttpReranker`` send every
request through.

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
- Every request has a total deadline (``deadline_s``, default ``RAGTUNE_ENDPOINT_DEADLINE_S``):
  from sending it to the last byte of the reply, however slowly the bytes come; past it the
  connection is shut down (:mod:`core.models.deadline`) and the request fails as a timeout,
  which is transient. Each read also has its own timeout (``timeout_s``).
- A 2xx reply that is not JSON is a :class:`MalformedReplyError` quoting its first bytes
  (escaped): transient when the body was cut short (JSON that ends early, an empty body) or is
  an HTML page (a proxy's or a gateway's error page), not otherwise.
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
from typing import TYPE_CHECKING, Any, Callable, Mapping
from urllib.parse import quote, urljoin, urlsplit

from core.limits import ENDPOINT_DEADLINE_S
from core.models.azure import token_provider
from core.models.deadline import RequestDeadline, watched_pool_classes

if TYPE_CHECKING:
    import urllib3

#: Largest reply body read, in bytes (16 MiB, some thousand times a long answer); a longer one
#: is an error, not read on.
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: Bytes of an error reply (a status other than 2xx) read for its message.
MAX_ERROR_BYTES = 4096
#: Bytes of a reply that is not JSON quoted in the error (escaped).
REPLY_HEAD_BYTES = 200
#: Redirects followed (307 and 308 only, which keep the POST and its body).
MAX_REDIRECTS = 5
#: Idle connections kept per host; more requests at once open more and close them after use.
POOL_CONNECTIONS = 256
#: The error name of each HTTP status, as ``openai-python`` names its exceptions.
STATUS_ERRORS = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                 404: "NotFoundError", 409: "ConflictError", 422: "UnprocessableEntityError",
                 429: "RateLimitError"}
DEFAULT_BASE_URL = "https://api.openai.com/v1"

__all__ = ["EndpointError", "JSONEndpoint", "MAX_ERROR_BYTES", "MAX_REDIRECTS", "MAX_REPLY_BYTES",
           "MalformedReplyError", "REPLY_HEAD_BYTES", "STATUS_ERRORS", "parse_reply", "reply_head",
           "retry_after_seconds"]


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


class MalformedReplyError(EndpointError):
    """A 2xx reply whose body cannot be read as JSON (see :func:`parse_reply`).

    Attributes:
        head: the body's first :data:`REPLY_HEAD_BYTES` bytes, escaped (:func:`reply_head`).
    """

    def __init__(self, message: str, *, head: str, transient: bool) -> None:
        super().__init__("MalformedReplyError", message, transient=transient)
        self.head = head


def reply_head(raw: bytes) -> str:
    """The first :data:`REPLY_HEAD_BYTES` bytes of a reply, printable on one line: bytes that
    are not printable ASCII written ``\\xNN``, line breaks ``\\n`` (as Python writes bytes)."""
    return repr(bytes(raw[:REPLY_HEAD_BYTES]))[2:-1] + ("..." if len(raw) > REPLY_HEAD_BYTES else "")


def parse_reply(raw: bytes) -> Any:
    """Parse a 2xx reply's body as JSON.

    Raises:
        MalformedReplyError: a body over :data:`MAX_REPLY_BYTES`, or that is not JSON: transient
            when it was cut short (an empty body, JSON that ends early) or is an HTML page (a
            proxy's or gateway's error page), not when it is some other text, invalid UTF-8,
            or JSON nested too deeply to read.
    """
    head = reply_head(raw)
    if len(raw) > MAX_REPLY_BYTES:
        raise MalformedReplyError(f"the reply is longer than {MAX_REPLY_BYTES} bytes; it begins {head!r}",
                                  head=head, transient=False)
    try:
        return json.loads(raw)
    except RecursionError:
        reason, transient = "JSON nested too deeply to read", False
    except json.JSONDecodeError as exc:
        text = raw.decode("utf-8", errors="replace").rstrip()
        cut = exc.pos >= len(text) or exc.msg.startswith("Unterminated string")
        html = raw.lstrip()[:1] == b"<"
        reason = "cut short" if cut else ("an HTML page" if html else f"{exc.msg} at character {exc.pos}")
        transient = cut or html
    except ValueError as exc:  # invalid UTF-8, a number past the digit limit
        reason, transient = str(exc), False
    raise MalformedReplyError(f"the reply is not JSON ({reason}); it begins {head!r}", head=head,
                              transient=transient)


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
        deadline_s: the total time of one request, from sending it to the last byte of its
            reply, in seconds (default :data:`core.limits.ENDPOINT_DEADLINE_S`).
        anonymous_key: the bearer token sent to an OpenAI-compatible server without a key
            (``"not-needed"``, as the ``openai`` client sends); None sends no
            ``Authorization`` header then (a rerank endpoint).
    """

    def __init__(self, *, base_url: str | None, api_key: str | None, azure_api_version: str | None,
                 timeout_s: float, ad_token_provider: Callable[[], str] | None = None,
                 auth_headers: Callable[[], Mapping[str, str]] | None = None,
                 headers: Mapping[str, str] | None = None,
                 deadline_s: float = ENDPOINT_DEADLINE_S, anonymous_key: str | None = "not-needed") -> None:
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
        self.deadline_s = float(deadline_s)
        self._anonymous_key = anonymous_key
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
                        self._token_provider = token_provider()
                try:
                    token = self._token_provider()
                except Exception as exc:  # noqa: BLE001 - azure-identity's errors, named in the message
                    raise EndpointError("AuthenticationError", f"no Microsoft Entra ID token for Azure OpenAI: "
                                        f"{type(exc).__name__}: {exc}", transient=False) from exc
                headers["Authorization"] = f"Bearer {token}"
        elif self._api_key or self._anonymous_key:
            headers["Authorization"] = f"Bearer {self._api_key or self._anonymous_key}"
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
                pool = urllib3.ProxyManager(proxy, **options) if proxy else urllib3.PoolManager(**options)
                pool.pool_classes_by_scheme = watched_pool_classes()  # connections that keep the deadline
                self._pool = pool
            return self._pool

    def post(self, path: str, body: dict[str, Any], *, deployment: str | None = None) -> Any:
        """POST ``body`` as JSON and return the reply's JSON (any JSON value, whatever the
        content type says).

        Raises:
            EndpointError: no answer (``APITimeoutError``, also when the total deadline passed;
                ``APIConnectionError``, a connection cut mid-reply: transient), an HTTP status
                other than 2xx (named by status), or a 2xx reply that is not JSON
                (:class:`MalformedReplyError`, see :func:`parse_reply`).

        A 307 or 308 answer is followed (up to :data:`MAX_REDIRECTS`), as the ``openai`` client
        follows redirects; the key is not sent on to another origin (scheme and host). The
        deadline covers each request of a redirect on its own.
        """
        return self.exchange(path, body, deployment=deployment)[0]

    def exchange(self, path: str, body: Any, *, deployment: str | None = None) -> tuple[Any, bytes]:
        """As :meth:`post`, returning ``(the reply's JSON, its raw body)`` (for messages that
        quote a reply whose JSON has the wrong shape)."""
        raw = self._post_raw(path, body, deployment)
        return parse_reply(raw), raw

    def post_bytes(self, path: str, body: Any, *, deployment: str | None = None) -> bytes:
        """POST ``body`` as JSON and return the 2xx reply's body as it came (see :meth:`post`).

        Raises:
            EndpointError: as :meth:`post` (a 429 or 503 carries the ``Retry-After`` it sent).
            ValueError: a body over :data:`MAX_REPLY_BYTES`.
        """
        raw = self._post_raw(path, body, deployment)
        if len(raw) > MAX_REPLY_BYTES:
            raise ValueError(f"the reply is longer than {MAX_REPLY_BYTES} bytes")
        return raw

    def _post_raw(self, path: str, body: Any, deployment: str | None) -> bytes:
        """The 2xx reply's body to ``body`` POSTed at ``path``, redirects followed; at most one
        byte over :data:`MAX_REPLY_BYTES`."""
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
        return raw

    def _send(self, url: str, data: bytes, headers: dict[str, str]) -> tuple[int, bytes, Any]:
        """One POST: ``(status, body, the reply's headers)``; the body of a 2xx read up to one byte
        over :data:`MAX_REPLY_BYTES`, of anything else up to :data:`MAX_ERROR_BYTES`."""
        import urllib3
        from urllib3.exceptions import HTTPError, LocationValueError, NewConnectionError
        from urllib3.exceptions import TimeoutError as UrllibTimeout

        shown = url.split("?", 1)[0]
        each = min(self.timeout_s, self.deadline_s)
        timeout = urllib3.Timeout(connect=each, read=each)
        try:
            pool = self._pool_for(url)
        except ValueError as exc:  # an unusable URL or proxy (urllib3's LocationValueError): no retry helps
            raise EndpointError("APIConnectionError", f"cannot send to {shown}: {exc}", transient=False) from exc
        deadline = RequestDeadline(self.deadline_s)
        try:
            with deadline:
                status, raw, reply_headers = self._exchange_once(pool, url, data, headers, timeout, deadline)
        except LocationValueError as exc:  # a URL urllib3 cannot parse: no retry helps
            raise EndpointError("APIConnectionError", f"cannot send to {shown}: {exc}", transient=False) from exc
        except ValueError:  # a header value HTTP cannot carry (the message may hold the key)
            if deadline.expired:  # or a read of a connection the deadline shut down
                raise self._deadline_error() from None
            raise EndpointError("APIConnectionError", f"cannot send to {shown}: a header holds characters HTTP "
                                "headers cannot carry (a line break or a non-Latin-1 character in the API key?)",
                                transient=False) from None
        except (HTTPError, OSError) as exc:
            if deadline.expired:
                raise self._deadline_error() from exc
            if isinstance(exc, NewConnectionError):  # a ConnectTimeoutError too, in urllib3's classes
                raise EndpointError("APIConnectionError", f"Connection error ({exc})", transient=True) from exc
            if isinstance(exc, UrllibTimeout):
                raise EndpointError("APITimeoutError", f"Request timed out ({type(exc).__name__})",
                                    transient=True) from exc
            raise EndpointError("APIConnectionError", f"Connection error ({type(exc).__name__}: {exc})",
                                transient=True) from exc
        if deadline.expired:  # a reply without a length, cut short by the deadline
            raise self._deadline_error()
        return status, raw, reply_headers

    def _deadline_error(self) -> EndpointError:
        return EndpointError("APITimeoutError", f"Request timed out: no whole reply within the deadline of "
                             f"{self.deadline_s:g} s (RAGTUNE_ENDPOINT_DEADLINE_S)", transient=True)

    @staticmethod
    def _exchange_once(pool: urllib3.PoolManager, url: str, data: bytes, headers: dict[str, str],
                       timeout: urllib3.Timeout, deadline: RequestDeadline) -> tuple[int, bytes, Any]:
        """Send one POST and read its reply (see :meth:`_send`); the connection is closed, not
        reused, when the body is not read whole or the deadline passed."""
        response = pool.request("POST", url, body=data, headers=headers, timeout=timeout,
                                preload_content=False, redirect=False)
        whole = 200 <= response.status < 300
        try:
            raw = response.read((MAX_REPLY_BYTES if whole else MAX_ERROR_BYTES) + 1, cache_content=False)
        except BaseException:
            response.close()  # the connection may hold the rest of the body: not reused
            raise
        if whole and len(raw) <= MAX_REPLY_BYTES and not deadline.expired:
            response.release_conn()
        else:
            response.close()  # the rest of the body is not read: the connection is not reused
        return response.status, raw, response.headers
