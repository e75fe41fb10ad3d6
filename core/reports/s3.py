"""The :class:`~core.reports.files.Files` protocol on Amazon S3 (or any S3-compatible server).

Keys map to object names ``<prefix>/<key>`` in one bucket. boto3 is imported when the first
request is made, never at import time.

Atomic writes: each :meth:`S3Files.write_bytes` is a single ``PutObject`` request. S3 stores an
object only once its whole body has arrived and been checked; a failed or interrupted request
leaves the previous version in place, and readers never see a partly written object.

References:
    Amazon S3 User Guide, "Amazon S3 data consistency model" (strong read-after-write
    consistency; a PUT is all or nothing).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from core.errors import ConfigError, StoreError
from core.reports.keys import clean_key as _clean_key, clean_prefix as _clean_prefix

if TYPE_CHECKING:
    from botocore.client import BaseClient

logger = logging.getLogger(__name__)

_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound"})


def _describe(exc: Exception) -> str:
    """A short description of a boto3 error: its code and message, never request details."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error") or {}
        code, message = error.get("Code", ""), error.get("Message", "")
        if code or message:
            return f"{code}: {message}".strip(": ")
    return f"{type(exc).__name__}: {exc}"


class S3Files:
    """:class:`~core.reports.files.Files` in an S3 bucket, under an optional prefix.

    Args:
        bucket: the bucket's name (it must exist; it is never created here).
        prefix: folder-like prefix inside the bucket (``""``: the bucket's root). Leading and
            trailing ``/`` are ignored; ``..`` is refused.
        client: a boto3 S3 client to use (for example one with its own credentials or event
            hooks). Default: ``boto3.client("s3", endpoint_url=..., region_name=...)``,
            created on first use, with credentials from boto3's usual chain (environment,
            shared config, instance or task role).
        endpoint_url: an S3-compatible server (``http://127.0.0.1:5055`` for moto, MinIO, ...);
            ignored when ``client`` is given.
        region: the AWS region; ignored when ``client`` is given.
        list_page_size: keys asked for per ``ListObjectsV2`` page (1 to 1000).

    Raises:
        ConfigError: an empty bucket name, a prefix with ``..`` or a page size outside 1..1000.

    Errors from S3 become :class:`~core.errors.StoreError` naming ``s3://bucket/key`` with the
    service's error code and message; credentials never appear in them.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        client: BaseClient | None = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        list_page_size: int = 1000,
    ) -> None:
        if not bucket or "/" in bucket:
            raise ConfigError(f"S3 bucket name must be non-empty and without '/', got {bucket!r}")
        if not 1 <= list_page_size <= 1000:
            raise ConfigError(f"list_page_size must be between 1 and 1000, got {list_page_size}")
        self.bucket = bucket
        self.prefix = _clean_prefix(prefix)
        self.list_page_size = list_page_size
        self._client = client
        self._endpoint_url = endpoint_url
        self._region = region

    def __repr__(self) -> str:
        return f"S3Files({self.root!r})"

    @property
    def root(self) -> str:
        """The store's address, ``s3://bucket[/prefix]``."""
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    @property
    def client(self) -> Any:
        """The boto3 S3 client (created on first use)."""
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "s3",
                endpoint_url=self._endpoint_url,
                region_name=self._region,
                config=Config(retries={"mode": "standard", "max_attempts": 5}),
            )
        return self._client

    def _name(self, key: str) -> str:
        key = _clean_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _url(self, name: str) -> str:
        return f"s3://{self.bucket}/{name}"

    def _fetch(self, name: str) -> bytes | str:
        """The bytes of object ``name``, or the S3 error code when it or its bucket does not
        exist.

        Raises:
            StoreError: S3 refused or failed the request for another reason.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self.client.get_object(Bucket=self.bucket, Key=name)
            return response["Body"].read()
        except ClientError as exc:
            code = (exc.response.get("Error") or {}).get("Code", "")
            if code in _NOT_FOUND or code == "NoSuchBucket":
                return code
            raise StoreError(f"cannot read {self._url(name)}: {_describe(exc)}") from exc
        except BotoCoreError as exc:
            raise StoreError(f"cannot read {self._url(name)}: {_describe(exc)}") from exc

    def read_bytes(self, key: str) -> bytes:
        """Return the object's bytes.

        Raises:
            StoreError: the object (or the bucket) does not exist (the message names
                ``s3://bucket/key``), or S3 refused or failed the request.
        """
        name = self._name(key)
        found = self._fetch(name)
        if found == "NoSuchBucket":
            raise StoreError(f"{self._url(name)} does not exist: there is no bucket {self.bucket!r}")
        if isinstance(found, str):
            raise StoreError(f"{self._url(name)} does not exist")
        return found

    def read_or_none(self, key: str) -> bytes | None:
        """The object's bytes, or None when it (or the bucket) does not exist: one request
        where ``exists`` then ``read_bytes`` make two.

        Raises:
            StoreError: S3 refused or failed the request for another reason.
        """
        found = self._fetch(self._name(key))
        return None if isinstance(found, str) else found

    def write_bytes(self, key: str, data: bytes) -> None:
        """Write ``data`` with one ``PutObject`` request (atomic: old or new content, never part).

        Raises:
            StoreError: the bucket does not exist, or S3 refused or failed the request (the
                previous content, if any, is still there).
        """
        from botocore.exceptions import BotoCoreError, ClientError

        name = self._name(key)
        try:
            self.client.put_object(Bucket=self.bucket, Key=name, Body=bytes(data))
        except (ClientError, BotoCoreError) as exc:
            raise StoreError(f"cannot write {self._url(name)}: {_describe(exc)}") from exc

    def exists(self, key: str) -> bool:
        """True when the object exists (False also when the bucket does not).

        Raises:
            StoreError: S3 refused or failed the request for another reason (for example 403).
        """
        from botocore.exceptions import BotoCoreError, ClientError

        name = self._name(key)
        try:
            self.client.head_object(Bucket=self.bucket, Key=name)
            return True
        except ClientError as exc:
            code = (exc.response.get("Error") or {}).get("Code", "")
            if code in _NOT_FOUND or code == "NoSuchBucket":
                return False
            raise StoreError(f"cannot check {self._url(name)}: {_describe(exc)}") from exc
        except BotoCoreError as exc:
            raise StoreError(f"cannot check {self._url(name)}: {_describe(exc)}") from exc

    def list(self, prefix: str = "") -> list[str]:
        """Keys under ``prefix`` (recursive), relative to the store's prefix, sorted.

        Only object names are fetched (``ListObjectsV2``, page by page); object contents are
        never read. Folder markers (names ending in ``/``) and names that are not valid keys
        (with ``//``, ``.`` or ``..`` segments) are left out.

        Raises:
            StoreError: the bucket does not exist, ``prefix`` contains ``..``, or S3 refused
                or failed the request.
        """
        return sorted(self.sizes(prefix))

    def sizes(self, prefix: str = "") -> dict[str, int]:
        """The keys :meth:`list` gives, each with its object's size in bytes (from the same
        ``ListObjectsV2`` pages; nothing is read).

        Raises:
            StoreError: as :meth:`list`.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        base = self.prefix + "/" if self.prefix else ""
        search = base + _clean_key(prefix) + "/" if prefix.strip("/") else base
        found: dict[str, int] = {}
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=search, PaginationConfig={"PageSize": self.list_page_size}
            )
            for page in pages:
                for item in page.get("Contents", ()):
                    key = item["Key"][len(base):]
                    if key.endswith("/"):
                        continue
                    try:
                        valid = _clean_key(key) == key
                    except StoreError:
                        valid = False
                    if valid:
                        found[key] = int(item.get("Size") or 0)
                    else:
                        logger.debug("skipping object %s: not a valid key", self._url(item["Key"]))
        except (ClientError, BotoCoreError) as exc:
            raise StoreError(f"cannot list {self._url(search)}: {_describe(exc)}") from exc
        return found

    def read_at_most(self, key: str, max_bytes: int) -> bytes:
        """The object's first ``max_bytes + 1`` bytes at most (one ranged ``GetObject``): a
        result longer than ``max_bytes`` says the object is larger, without downloading it.

        Raises:
            StoreError: the object does not exist, or S3 refused or failed the request.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        name = self._name(key)
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=name, Range=f"bytes=0-{int(max_bytes)}")
            return response["Body"].read(int(max_bytes) + 1)
        except ClientError as exc:
            code = (exc.response.get("Error") or {}).get("Code", "")
            if code == "InvalidRange":  # an empty object has no byte 0
                return b""
            if code in _NOT_FOUND or code == "NoSuchBucket":
                raise StoreError(f"{self._url(name)} does not exist") from exc
            raise StoreError(f"cannot read {self._url(name)}: {_describe(exc)}") from exc
        except BotoCoreError as exc:
            raise StoreError(f"cannot read {self._url(name)}: {_describe(exc)}") from exc
