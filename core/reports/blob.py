"""The :class:`~core.reports.files.Files` protocol on Azure Blob Storage (or Azurite).

Keys map to blob names ``<prefix>/<key>`` in one container. azure-storage-blob (and
azure-identity, when it is needed) is imported on first use, never at import time.

Atomic writes: :meth:`BlobFiles.write_bytes` calls ``upload_blob(overwrite=True)``. A small
body goes up in one ``Put Blob`` request; a large one is staged as uncommitted blocks and made
visible by one ``Put Block List`` request. Either way the new content replaces the old in a
single step: readers see the old content or the new, and a failed or interrupted upload leaves
the old content (uncommitted blocks are invisible and discarded by the service).

References:
    Azure Storage REST API, "Put Blob" and "Put Block List".
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import unquote, urlsplit, urlunsplit

from core.errors import ConfigError, StoreError
from core.reports.keys import clean_key as _clean_key, clean_prefix as _clean_prefix

if TYPE_CHECKING:
    from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential, TokenCredential
    from azure.storage.blob import BlobServiceClient

    #: What a Blob store takes as its ``credential``, as ``BlobServiceClient`` types it: a SAS
    #: token or an account key (text), ``{"account_name", "account_key"}``, a named key, a SAS
    #: credential, or a Microsoft Entra ID ``TokenCredential`` (``DefaultAzureCredential``).
    StorageCredential: TypeAlias = (
        "str | dict[str, str] | AzureNamedKeyCredential | AzureSasCredential | TokenCredential")

logger = logging.getLogger(__name__)

_SECRET = re.compile(r"((?:^|[?&;\s])(?:sig|AccountKey|SharedAccessSignature)=)[^&;\s]*", re.IGNORECASE)


def http_options(url: str) -> dict[str, Any]:
    """Keyword arguments for an Azure Storage client of ``url`` (a blob or queue endpoint) that
    take the environment's HTTP settings once, when the client is made, rather than on every
    request: the proxy for that host as requests finds it (``HTTPS_PROXY`` / ``HTTP_PROXY`` /
    ``ALL_PROXY``, none when ``NO_PROXY`` names the host) and the CA bundle
    (``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE``).

    azure-core's default transport leaves ``trust_env`` on, so requests walks the whole
    environment twice on every storage request to find proxies, and looks for a ``.netrc``
    file: a quarter of the CPU a small blob read costs. A client talks to one host, so the
    answer is the same every time.

    Args:
        url: the endpoint the client talks to (its scheme and host decide the proxy).

    Returns:
        ``{"use_env_settings": False, "proxies": {...}}``, with ``connection_verify`` when a
        CA bundle is set.

    References:
        ``requests.Session.merge_environment_settings``; azure-core ``RequestsTransport``
        (``use_env_settings``) and ``ProxyPolicy`` (``proxies``).
    """
    import requests

    with requests.Session() as session:
        found = session.merge_environment_settings(url, {}, None, None, None)
    options: dict[str, Any] = {"use_env_settings": False, "proxies": dict(found.get("proxies") or {})}
    if found.get("verify") not in (True, None):
        options["connection_verify"] = found["verify"]
    return options


def _redact(text: str) -> str:
    """``text`` with SAS signatures and account keys replaced by ``***``."""
    return _SECRET.sub(r"\1***", text)


def _describe(exc: Exception) -> str:
    """A one-line description of an Azure error: its error code and first message line."""
    code = getattr(exc, "error_code", None)
    lines = str(getattr(exc, "message", None) or exc).strip().splitlines()
    message = lines[0] if lines else ""
    return _redact(f"{code}: {message}" if code else f"{type(exc).__name__}: {message}".rstrip(": "))


def _without_query(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, unquote(parts.path), "", ""))


@dataclass(frozen=True)
class BlobVersion:
    """Which content a blob holds, as its properties say (``Get Blob Properties``).

    Attributes:
        etag: the blob's ETag (changes with every write, even of the same bytes).
        size: its length in bytes.
        content_md5: the MD5 of its content (16 bytes) when the service keeps one (it does
            for a blob uploaded in one ``Put Blob``), else None.
    """

    etag: str | None = None
    size: int | None = None
    content_md5: bytes | None = None


class BlobFiles:
    """:class:`~core.reports.files.Files` in an Azure Blob Storage container, under an
    optional prefix.

    Give exactly one way to reach the account: ``connection_string``, ``account_url`` (with
    ``credential``, or without it for Microsoft Entra ID through
    ``azure.identity.DefaultAzureCredential``: managed identity in Azure, developer sign-in
    locally), or ``client``.

    Args:
        container: the container's name. It is created on the first write when missing (the
            way a local folder is); reading or listing a missing container finds nothing.
        prefix: folder-like prefix inside the container (``""``: the container's root).
            Leading and trailing ``/`` are ignored; ``..`` is refused.
        connection_string: a storage connection string (account key or SAS; Azurite's
            development connection string in tests).
        account_url: ``https://<account>.blob.core.windows.net`` (a SAS query string on it is
            used as the credential).
        credential: with ``account_url``: a SAS token, an account key, or a ``TokenCredential``.
        client: a ``BlobServiceClient`` to use (for example one with its own pipeline options).
        list_page_size: blob names asked for per ``List Blobs`` page (1 to 5000).

    Raises:
        ConfigError: no way or more than one way to reach the account, an empty container
            name, a prefix with ``..``, or a page size outside 1..5000.

    Errors from the service become :class:`~core.errors.StoreError` naming the blob's URL
    without any SAS token or key.
    """

    def __init__(
        self,
        container: str,
        prefix: str = "",
        *,
        connection_string: str | None = None,
        account_url: str | None = None,
        credential: StorageCredential | None = None,
        client: BlobServiceClient | None = None,
        list_page_size: int = 5000,
    ) -> None:
        if not container or "/" in container:
            raise ConfigError(f"Blob container name must be non-empty and without '/', got {container!r}")
        given = [name for name, value in (("connection_string", connection_string), ("account_url", account_url), ("client", client)) if value]
        if len(given) != 1:
            raise ConfigError(
                "BlobFiles needs exactly one of connection_string, account_url or client"
                + (f"; got {', '.join(given)}" if given else "")
            )
        if credential is not None and not account_url:
            raise ConfigError("BlobFiles: credential goes with account_url")
        if not 1 <= list_page_size <= 5000:
            raise ConfigError(f"list_page_size must be between 1 and 5000, got {list_page_size}")
        self.container = container
        self.prefix = _clean_prefix(prefix)
        self.list_page_size = list_page_size
        self._service = client
        self._connection_string = connection_string
        self._account_url = account_url
        self._credential = credential
        self._container_client: Any = None

    def __repr__(self) -> str:
        return f"BlobFiles({self.root!r})"

    @property
    def container_client(self) -> Any:
        """The ``ContainerClient`` (created on first use)."""
        if self._container_client is None:
            if self._service is None:
                from azure.storage.blob import BlobServiceClient

                if self._connection_string:
                    url = BlobServiceClient.from_connection_string(self._connection_string).url
                    self._service = BlobServiceClient.from_connection_string(self._connection_string,
                                                                             **http_options(url))
                else:
                    credential = self._credential
                    if credential is None and "sig=" not in (urlsplit(self._account_url).query or ""):
                        from azure.identity import DefaultAzureCredential

                        credential = DefaultAzureCredential()
                    self._service = BlobServiceClient(self._account_url, credential=credential,
                                                      **http_options(self._account_url))
            self._container_client = self._service.get_container_client(self.container)
        return self._container_client

    @property
    def root(self) -> str:
        """The store's URL, ``<account url>/<container>[/<prefix>]``, without credentials."""
        url = self._container_url()
        return f"{url}/{self.prefix}" if self.prefix else url

    def _container_url(self) -> str:
        try:
            return _without_query(self.container_client.url)
        except ValueError:  # an unusable connection string or URL: name the container only
            return f"<blob container {self.container}>"

    def _name(self, key: str) -> str:
        key = _clean_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _url(self, name: str) -> str:
        return f"{self._container_url()}/{name}"

    def read_bytes(self, key: str) -> bytes:
        """Return the blob's bytes.

        Raises:
            StoreError: the blob (or its container) does not exist (the message names the
                blob's URL), or the service refused or failed the request.
        """
        data = self.read_or_none(key)
        if data is None:
            raise StoreError(f"{self._url(self._name(key))} does not exist")
        return data

    def _blob(self, key: str, exact: bool) -> str:
        """The blob name of ``key``; with ``exact``, ``key`` is a blob's own name in the
        container, taken as it is (no prefix, no key rules: ``a//y`` stays apart from ``a/y``)."""
        if exact:
            if not key or key.startswith("/"):
                raise StoreError(f"invalid blob name {key[:80]!r}")
            return key
        return self._name(key)

    def read_or_none(self, key: str, *, exact: bool = False) -> bytes | None:
        """The blob's bytes, or None when it (or its container) does not exist: one request
        where ``exists`` then ``read_bytes`` make two. With ``exact``, ``key`` is the blob's
        own name (see :meth:`version`).

        Raises:
            StoreError: the service refused or failed the request for another reason.
        """
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        name = self._blob(key, exact)
        try:
            return self.container_client.get_blob_client(name).download_blob(max_concurrency=1).readall()
        except ResourceNotFoundError:
            return None
        except (AzureError, ValueError) as exc:
            raise StoreError(f"cannot read {self._url(name)}: {_describe(exc)}") from exc

    def write_bytes(self, key: str, data: bytes) -> None:
        """Write ``data`` with ``upload_blob(overwrite=True)`` (atomic: old or new content).

        Creates the container when it does not exist, then uploads again.

        Raises:
            StoreError: the service refused or failed the upload (the previous content, if
                any, is still there).
        """
        from azure.core.exceptions import AzureError, ResourceExistsError, ResourceNotFoundError

        name = self._name(key)
        body = bytes(data)
        try:
            blob = self.container_client.get_blob_client(name)
            try:
                blob.upload_blob(body, overwrite=True)
            except ResourceNotFoundError as exc:
                if getattr(exc, "error_code", None) != "ContainerNotFound":
                    raise
                logger.info("creating blob container %s", self._container_url())
                try:
                    self.container_client.create_container()
                except ResourceExistsError:
                    pass
                blob.upload_blob(body, overwrite=True)
        except (AzureError, ValueError) as exc:
            raise StoreError(f"cannot write {self._url(name)}: {_describe(exc)}") from exc

    def version(self, key: str, *, exact: bool = False) -> BlobVersion | None:
        """The blob's :class:`BlobVersion` (one ``Get Blob Properties`` request; no content is
        read), or None when it (or its container) does not exist.

        Args:
            key: a key below the store's prefix or, with ``exact``, a blob's own name in the
                container as a trigger gives it (``a//y.jsonl`` is not ``a/y.jsonl``).

        Raises:
            StoreError: the service refused or failed the request for another reason.
        """
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        name = self._blob(key, exact)
        try:
            properties = self.container_client.get_blob_client(name).get_blob_properties()
        except ResourceNotFoundError:
            return None
        except (AzureError, ValueError) as exc:
            raise StoreError(f"cannot check {self._url(name)}: {_describe(exc)}") from exc
        md5 = properties.content_settings.content_md5
        return BlobVersion(etag=properties.etag, size=properties.size, content_md5=bytes(md5) if md5 else None)

    def write_bytes_if(self, key: str, data: bytes, *, etag: str | None) -> bool:
        """Write ``data`` only if the blob is still the one seen: its ETag is ``etag``, or, for
        ``etag`` None, no blob is there (``If-Match`` / ``If-None-Match: *`` on the upload, so
        nothing written in between is replaced). Atomic as :meth:`write_bytes`.

        Returns:
            True when written; False when the blob changed (or appeared, or went) since.

        Raises:
            StoreError: the service refused or failed the upload for another reason.

        References:
            Azure Storage REST API, "Specifying conditional headers for Blob service operations".
        """
        from azure.core import MatchConditions
        from azure.core.exceptions import (AzureError, ResourceExistsError, ResourceModifiedError,
                                           ResourceNotFoundError)

        name = self._name(key)
        options: dict[str, Any] = ({"overwrite": True, "etag": etag, "match_condition": MatchConditions.IfNotModified}
                                   if etag else {"overwrite": False})
        body = bytes(data)
        try:
            blob = self.container_client.get_blob_client(name)
            try:
                blob.upload_blob(body, **options)
            except ResourceNotFoundError as exc:
                if getattr(exc, "error_code", None) != "ContainerNotFound":
                    return False  # the blob seen is gone
                try:
                    self.container_client.create_container()
                except ResourceExistsError:
                    pass
                blob.upload_blob(body, **options)
        except (ResourceExistsError, ResourceModifiedError):
            return False
        except (AzureError, ValueError) as exc:
            raise StoreError(f"cannot write {self._url(name)}: {_describe(exc)}") from exc
        return True

    def exists(self, key: str) -> bool:
        """True when the blob exists (False also when the container does not).

        Raises:
            StoreError: the service refused or failed the request for another reason.
        """
        from azure.core.exceptions import AzureError

        name = self._name(key)
        try:
            return bool(self.container_client.get_blob_client(name).exists())
        except (AzureError, ValueError) as exc:
            raise StoreError(f"cannot check {self._url(name)}: {_describe(exc)}") from exc

    def list(self, prefix: str = "") -> list[str]:
        """Keys under ``prefix`` (recursive), relative to the store's prefix, sorted.

        Only blob names are fetched (``List Blobs``, page by page); blob contents are never
        read. A missing container lists nothing. Names that are not valid keys (with ``//``,
        ``.`` or ``..`` segments, or ending in ``/``) are left out.

        Raises:
            StoreError: ``prefix`` contains ``..``, or the service refused or failed the request.
        """
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        base = self.prefix + "/" if self.prefix else ""
        search = base + _clean_key(prefix) + "/" if prefix.strip("/") else base
        keys: list[str] = []
        try:
            names = self.container_client.list_blob_names(
                name_starts_with=search or None, results_per_page=self.list_page_size
            )
            for full in names:
                key = full[len(base):]
                try:
                    valid = _clean_key(key) == key
                except StoreError:
                    valid = False
                if valid:
                    keys.append(key)
                else:
                    logger.debug("skipping blob %s: not a valid key", self._url(full))
        except ResourceNotFoundError:
            return []
        except (AzureError, ValueError) as exc:
            raise StoreError(f"cannot list {self._url(search)}: {_describe(exc)}") from exc
        return sorted(keys)

    def sizes(self, prefix: str = "") -> dict[str, int]:
        """The keys :meth:`list` gives, each with its blob's size in bytes (``List Blobs`` with
        the blobs' properties; no content is read).

        Raises:
            StoreError: as :meth:`list`.
        """
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        base = self.prefix + "/" if self.prefix else ""
        search = base + _clean_key(prefix) + "/" if prefix.strip("/") else base
        found: dict[str, int] = {}
        try:
            for blob in self.container_client.list_blobs(name_starts_with=search or None,
                                                         results_per_page=self.list_page_size):
                key = blob.name[len(base):]
                try:
                    valid = _clean_key(key) == key
                except StoreError:
                    valid = False
                if valid:
                    found[key] = int(blob.size or 0)
        except ResourceNotFoundError:
            return {}
        except (AzureError, ValueError) as exc:
            raise StoreError(f"cannot list {self._url(search)}: {_describe(exc)}") from exc
        return found

    def read_at_most(self, key: str, max_bytes: int) -> bytes:
        """The blob's first ``max_bytes + 1`` bytes at most (one ranged download): a result
        longer than ``max_bytes`` says the blob is larger, without downloading it.

        Raises:
            StoreError: the blob does not exist, or the service refused or failed the request.
        """
        from azure.core.exceptions import AzureError, HttpResponseError, ResourceNotFoundError

        name = self._name(key)
        try:
            blob = self.container_client.get_blob_client(name)
            return blob.download_blob(offset=0, length=int(max_bytes) + 1, max_concurrency=1).readall()
        except ResourceNotFoundError as exc:
            raise StoreError(f"{self._url(name)} does not exist") from exc
        except HttpResponseError as exc:
            if getattr(exc, "status_code", None) == 416:  # an empty blob has no byte 0
                return b""
            raise StoreError(f"cannot read {self._url(name)}: {_describe(exc)}") from exc
        except (AzureError, ValueError) as exc:
            raise StoreError(f"cannot read {self._url(name)}: {_describe(exc)}") from exc
