"""The ``Files`` protocol reports are stored through, and its local-folder implementation.

Paths are ``/``-separated keys relative to the store's root (for example
``retrieval/runs/<run id>/report.json``). Writes are atomic: a reader sees the old content
or the new, never a half-written file.

:func:`open_files` turns an address (a folder, ``s3://bucket/prefix`` or a Blob URL) into the
matching store: :class:`LocalFiles`, :class:`~core.reports.s3.S3Files` or
:class:`~core.reports.blob.BlobFiles`.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable
from urllib.parse import SplitResult, unquote, urlsplit

from core.addresses import file_url_path, scheme_of
from core.errors import ConfigError, DamagedFileError, StoreError
from core.reports.blob import BlobFiles
from core.reports.keys import clean_key as _clean_key
from core.reports.s3 import S3Files

if TYPE_CHECKING:
    from core.reports.blob import StorageCredential


@runtime_checkable
class Files(Protocol):
    """A small key -> bytes store (local folder; S3 and Blob follow the same contract)."""

    def read_bytes(self, key: str) -> bytes:
        """Return the bytes at ``key``. Raises StoreError when it does not exist."""
        ...

    def write_bytes(self, key: str, data: bytes) -> None:
        """Write ``data`` at ``key`` atomically (replacing what was there)."""
        ...

    def exists(self, key: str) -> bool:
        """True when ``key`` holds a file."""
        ...

    def list(self, prefix: str = "") -> list[str]:
        """Return the keys under ``prefix`` (recursive), sorted."""
        ...


def shown_key(files: Files, key: str) -> str:
    """``key`` as a person finds it: its path under a local folder's root, else the key."""
    root = getattr(files, "root", None)
    return f"{root}/{key}" if root is not None else key


_SHAPES = {dict: "a JSON object", list: "a JSON array"}


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type: ``null``, ``boolean``, ``number``, ``string``,
    ``array`` or ``object`` (the Python name for anything else)."""
    for kinds, name in ((type(None), "null"), (bool, "boolean"), ((int, float), "number"), (str, "string"),
                        (list, "array"), (dict, "object")):
        if isinstance(value, kinds):
            return name
    return type(value).__name__


def parse_json(files: Files, key: str, data: bytes, expect: type | None = None) -> Any:
    """``data``, read from ``key`` of ``files``, parsed as JSON.

    Args:
        expect: ``dict`` or ``list``: the value must be a JSON object or array (None: any).

    Raises:
        DamagedFileError: not valid JSON (or not UTF-8), or not what ``expect`` says; the
            message names the file (:func:`shown_key`).
    """
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DamagedFileError(f"{shown_key(files, key)} is not valid JSON ({exc})") from None
    if expect is not None and not isinstance(value, expect):
        raise DamagedFileError(f"{shown_key(files, key)} is not {_SHAPES.get(expect, expect.__name__)} "
                               f"(it holds a JSON {json_type(value)})")
    return value


def read_json(files: Files, key: str, expect: type | None = None) -> Any:
    """The stored file ``key`` parsed as JSON (:func:`parse_json`, with ``expect``).

    Raises:
        StoreError: it is missing or cannot be read (``Files.read_bytes``).
        DamagedFileError: it is not valid JSON, or not what ``expect`` says.
    """
    return parse_json(files, key, files.read_bytes(key), expect)


def read_if_present(files: Files, key: str) -> bytes | None:
    """The bytes at ``key``, or None when nothing is there, in one request when ``files`` has
    ``read_or_none`` (every store here does), else ``exists`` then ``read_bytes``.

    Raises:
        StoreError: the store refused or failed the request for another reason.
    """
    read_or_none = getattr(files, "read_or_none", None)
    if read_or_none is not None:
        return read_or_none(key)
    return files.read_bytes(key) if files.exists(key) else None


class StoreAccess(TypedDict, total=False):
    """How :func:`open_files` reaches a remote store: the keyword arguments it takes for one
    address (none for a local folder or a Blob URL with a SAS query string)."""

    connection_string: str | None
    credential: StorageCredential | None
    endpoint_url: str | None


_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")


def is_safe_id(value: Any) -> bool:
    """Whether ``value`` can name a run or an experiment in a store key, a URL route and a
    Durable instance id: a string of 1-200 ``[A-Za-z0-9_.-]``, not made only of dots (no path
    traversal)."""
    return isinstance(value, str) and bool(_SAFE_ID.fullmatch(value)) and set(value) != {"."}


def replaceable(path: Path) -> tuple[Path, os.stat_result | None]:
    """The file :func:`write_atomic` would write for ``path`` (a symbolic link followed) and
    its ``os.stat`` (None when there is none yet), so a command can check its output before
    slow work. Nothing is created.

    Raises:
        ConfigError: something other than a regular file is at ``path`` (a folder, a FIFO, a
            device, a socket); the message names it.
    """
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target, None
    if not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        shown = f"{path} (-> {target})" if target != path else str(path)
        raise ConfigError(f"{shown} is {what}: it is never replaced; give the name of a file to write")
    return target, st


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, fsync and a
    rename, so a reader sees the old file or the whole new one, never half of it.

    Only a regular file is ever replaced. A symbolic link to a file is followed: the file it
    points to is written (atomically, beside it) and the link stays. Anything else already at
    ``path`` (a folder, a FIFO, a device such as ``/dev/full``, a socket) is refused and left
    untouched. A new file gets the permissions ``open()`` would give it (``0o666`` less the
    umask, not ``mkstemp``'s ``0o600``); a file replaced keeps its permission bits.

    Args:
        path: the file to write; its folder is created when missing.
        data: the bytes.

    Raises:
        ConfigError: something other than a regular file is at ``path`` (the message names it).
        OSError: the folder cannot be made or the file written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    target, st = replaceable(path)
    mode = 0o666 & ~_umask() if st is None else stat.S_IMODE(st.st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):  # POSIX
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask: from ``/proc/self/status`` where Linux gives it (no change to the
    process), else by setting it and setting it back (POSIX has no other way)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class LocalFiles:
    """:class:`Files` in a local folder.

    Args:
        root: the folder (created on first write).

    Writes go to a temporary file in the same folder, are flushed and fsynced, then renamed
    over the target with ``os.replace`` (atomic on POSIX and Windows).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / _clean_key(key)

    def read_bytes(self, key: str) -> bytes:
        """Return the file's bytes. Raises StoreError naming the path when it is missing."""
        path = self._path(key)
        try:
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise StoreError(f"{path} does not exist") from exc
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc}") from exc

    def read_or_none(self, key: str) -> bytes | None:
        """The file's bytes, or None when it is missing. Raises StoreError when it cannot be read."""
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc}") from exc

    def write_bytes(self, key: str, data: bytes) -> None:
        """Write atomically (temporary file + fsync + rename)."""
        path = self._path(key)
        try:
            write_atomic(path, data)
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc}") from exc

    def exists(self, key: str) -> bool:
        """True when the file exists."""
        return os.path.isfile(os.path.join(self.root, _clean_key(key)))

    def folders(self, prefix: str = "") -> list[str]:
        """Names of the folders directly under ``prefix``, sorted (one directory read: a fast
        path :class:`~core.reports.store.ReportStore` uses for run ids when a store has it)."""
        clean = _clean_key(prefix) if prefix.strip("/") else ""
        try:
            with os.scandir(self.root / clean if clean else self.root) as entries:
                return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            return []

    def list(self, prefix: str = "") -> list[str]:
        """Keys under ``prefix``, sorted; temporary files of unfinished writes are not listed."""
        clean = _clean_key(prefix) if prefix.strip("/") else ""
        base = self.root / clean if clean else self.root
        if not base.is_dir():
            return []
        keys: list[str] = []
        # one scandir per folder (the entry types come with it, no stat per file); folders that
        # are symbolic links are not followed, so a link loop cannot make the listing endless
        pending = [(str(base), clean + "/" if clean else "")]
        while pending:
            folder, head = pending.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, head + entry.name + "/"))
                elif entry.is_file() and not (entry.name.startswith(".") and entry.name.endswith(".tmp")):
                    keys.append(head + entry.name)
        return sorted(keys)


#: An Azure Storage account's Blob host in the public and sovereign clouds (anchored: a host
#: that merely contains ".blob." is not one, and never receives a credential).
_BLOB_HOST = re.compile(
    r"^([a-z0-9]{3,24})\.blob\.core\.(?:windows\.net|chinacloudapi\.cn|usgovcloudapi\.net|cloudapi\.de)$",
    re.IGNORECASE)
_HOW = "use a folder path, s3://<bucket>/<prefix> or https://<account>.blob.core.windows.net/<container>/<prefix>"


def _shown(address: str) -> str:
    """``address`` without its query string (which may hold a SAS token)."""
    return address.split("?", 1)[0] + ("?..." if "?" in address else "")


def _connection_string_fields(connection_string: str) -> dict[str, str]:
    fields = {}
    for part in connection_string.split(";"):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            fields[name.strip().lower()] = value.strip()
    return fields


def open_files(
    address: str | os.PathLike[str],
    *,
    connection_string: str | None = None,
    endpoint_url: str | None = None,
    region: str | None = None,
    credential: StorageCredential | None = None,
) -> Files:
    """Return the :class:`Files` store at ``address``.

    Addresses:

    - a local folder: ``ragtune-out/reports``, ``/data/reports``, ``file:///data/reports``
      -> :class:`LocalFiles`;
    - ``s3://<bucket>/<prefix>`` -> :class:`~core.reports.s3.S3Files` (credentials from
      boto3's chain; ``endpoint_url`` for an S3-compatible server);
    - ``https://<account>.blob.core.windows.net/<container>/<prefix>`` (any
      ``<account>.blob.<cloud suffix>`` host) -> :class:`~core.reports.blob.BlobFiles`, with
      ``connection_string`` when given, else ``credential`` or a SAS query string on the URL,
      else ``DefaultAzureCredential`` (managed identity);
    - ``http(s)://<host>:<port>/<account>/<container>/<prefix>``, the path-style URL of
      Azurite and other emulators -> :class:`~core.reports.blob.BlobFiles`; only with
      ``connection_string`` (it says how to reach and sign in to the emulator).

    The prefix may be empty; URL-encoded characters (``%20``) are decoded. Nothing is
    contacted here: the first read or write does that.

    Args:
        address: where the store lives (see above).
        connection_string: an Azure Storage connection string, for Blob addresses.
        endpoint_url: an S3-compatible server's URL, for ``s3://`` addresses.
        region: the AWS region, for ``s3://`` addresses.
        credential: an Azure credential (SAS token, account key, ``TokenCredential``), for
            ``https://<account>.blob...`` addresses without a connection string.

    Raises:
        ConfigError: an empty address, an unknown scheme, a missing bucket or container, a
            prefix with ``..``, a path-style Blob URL without a connection string, or a
            connection string for another account. Messages never show a SAS token.
    """
    if isinstance(address, os.PathLike):
        return LocalFiles(address)
    text = str(address).strip()
    if not text:
        raise ConfigError(f"empty store address: {_HOW}")
    scheme = scheme_of(text)
    if scheme is None:  # no scheme, or a Windows drive letter
        return LocalFiles(text)
    if scheme == "file":
        return LocalFiles(file_url_path(text, "store address"))
    parts = urlsplit(text)
    if scheme == "s3":
        if parts.query or parts.fragment:
            raise ConfigError(f"s3:// store address must not have a query or fragment: {_shown(text)!r}")
        if not parts.netloc:
            raise ConfigError(f"s3:// store address needs a bucket (s3://<bucket>/<prefix>), got {_shown(text)!r}")
        return S3Files(parts.netloc, unquote(parts.path), endpoint_url=endpoint_url, region=region)
    if scheme in ("http", "https"):
        return _open_blob(text, parts, connection_string=connection_string, credential=credential)
    raise ConfigError(f"unknown store address scheme {scheme!r} in {_shown(text)!r}: {_HOW}")


def _open_blob(text: str, parts: SplitResult, *, connection_string: str | None,
               credential: StorageCredential | None) -> Files:
    segments = [s for s in unquote(parts.path).split("/") if s]
    host = parts.hostname or ""
    fields = _connection_string_fields(connection_string) if connection_string else {}
    named_account = fields.get("accountname")
    virtual_host = _BLOB_HOST.match(host)
    if virtual_host:
        account = virtual_host.group(1).lower()
    else:
        if not connection_string:
            raise ConfigError(
                f"{_shown(text)!r} is not an https://<account>.blob.core.windows.net URL; a path-style "
                "Blob URL (http://127.0.0.1:<port>/<account>/<container>/<prefix>, Azurite) needs a connection string"
            )
        if not segments:
            raise ConfigError(f"path-style Blob URL needs /<account>/<container>, got {_shown(text)!r}")
        account = segments.pop(0)
        endpoint = fields.get("blobendpoint", "").rstrip("/")
        wanted = f"{parts.scheme.lower()}://{parts.netloc.lower()}/{account}"
        if endpoint and endpoint.lower() != wanted.lower():
            raise ConfigError(
                f"Blob URL {_shown(text)!r} does not match the connection string's BlobEndpoint {endpoint!r}"
            )
    if named_account and named_account.lower() != account.lower():
        raise ConfigError(
            f"Blob URL {_shown(text)!r} is for account {account!r} but the connection string is for {named_account!r}"
        )
    if not segments:
        raise ConfigError(f"Blob URL needs a container (.../<container>/<prefix>), got {_shown(text)!r}")
    container, prefix = segments[0], "/".join(segments[1:])
    if connection_string:
        if parts.query:
            raise ConfigError(f"give either a connection string or a SAS query string, not both: {_shown(text)!r}")
        return BlobFiles(container, prefix, connection_string=connection_string)
    account_url = f"{parts.scheme.lower()}://{parts.netloc}"
    if parts.query:
        if credential is not None:
            raise ConfigError(f"give either a credential or a SAS query string, not both: {_shown(text)!r}")
        account_url += "?" + parts.query
    return BlobFiles(container, prefix, account_url=account_url, credential=credential)
