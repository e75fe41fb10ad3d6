"""Golden files and document folders at an address: a local path, S3 or Azure Blob Storage.

An *address* is one of:

- a local path (``data/golden.jsonl``, ``/data/docs``, ``C:\\data\\docs``) or a
  ``file://`` URL (``file:///data/docs``);
- ``s3://<bucket>/<key>`` (credentials from boto3's chain; boto3 reads ``AWS_ENDPOINT_URL``
  for an S3-compatible server unless ``endpoint_url`` is given);
- ``https://<account>.blob.core.windows.net/<container>/<key>``, optionally with a SAS query
  string (``?sv=...&sig=...``);
- a path-style Blob URL of Azurite and other emulators,
  ``http://127.0.0.1:10000/devstoreaccount1/<container>/<key>``, with a connection string.

Remote addresses are read through the :class:`~core.reports.files.Files` stores of
:func:`core.reports.open_files` (:class:`~core.reports.s3.S3Files`,
:class:`~core.reports.blob.BlobFiles`); nothing here talks to a service directly.

- :func:`read_input_bytes` returns one file's bytes (no local copy);
- :func:`fetch_file` materialises one file as a local file with the same base name;
- :func:`fetch_folder` materialises a folder (a key prefix) as a local folder mirroring the keys
  below the prefix;
- :func:`list_input_keys` lists a folder's keys without reading any content.

A local path is returned as it is (never copied). Downloads go under a cache folder
(default ``<Settings.out_dir>/inputs``)::

    <cache_dir>/<sha256 of the address>/<content digest>/<base name>
    <cache_dir>/<sha256 of the address>/<content digest>/<keys...>

(the address hashed without its query string and trailing ``/``).

The content digest is the first 16 hex digits of the file's sha256 (a folder's: sha256 over
its ``(key, file sha256)`` pairs). A file is written to a temporary file and renamed into
place; a folder is downloaded into a hidden ``.partial-*`` folder and renamed into place once
complete. Either way a half-downloaded file or folder is never returned or found. Content
already in the cache under the same digest is not written again; every call still reads the
remote content, since the ``Files`` protocol tells nothing cheaper about a change (no ETag).
Older versions stay in the cache (another process may still be reading them); delete the
cache folder to reclaim the space.

Credentials: ``connection_string`` and ``credential`` default to :class:`core.settings.Settings`
(``RAGTUNE_STORAGE_CONNECTION``, or ``RAGTUNE_STORAGE_CONNECTION__clientId`` through
``Settings.storage_credential()``); a Blob URL with a SAS query string uses that instead.
Errors, logs and results name an address without its query string (:func:`shown_address`);
account keys, SAS signatures and secret keys never appear in them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import stat
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Callable
from urllib.parse import unquote, urlsplit, urlunsplit

from core.addresses import REMOTE_SCHEMES, file_url_path, scheme_of
from core.errors import ConfigError, StoreError
from core.limits import READ_BLOCK_BYTES
from core.reports.files import _shown, open_files, write_atomic
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.reports.blob import StorageCredential
    from core.reports.files import Files, StoreAccess

logger = logging.getLogger(__name__)

__all__ = [
    "InputNotFoundError",
    "InputTooLargeError",
    "NotAFileError",
    "fetch_file",
    "fetch_folder",
    "file_kind",
    "is_remote",
    "list_input_keys",
    "local_path",
    "read_input_bytes",
    "read_local_file",
    "shown_address",
]

#: Files of a remote folder downloaded at once by :func:`fetch_folder`.
FETCH_WORKERS = 8

_HOW = "give a local path, s3://<bucket>/<key> or https://<account>.blob.core.windows.net/<container>/<key>"
_SECRET = re.compile(
    r"((?:^|[?&;\s])(?:sig|AccountKey|SharedAccessSignature|aws_secret_access_key)=)[^&;\s]*", re.IGNORECASE
)


class InputNotFoundError(StoreError):
    """Nothing exists at a remote address.

    Attributes:
        address: the address, without its query string.
        is_folder: True when a file was asked for but the address is a folder (keys exist
            below it).
        reason: what the service added, when it said more than "not found" (for example
            ``"there is no bucket 'x'"``), else None.
    """

    def __init__(self, message: str, *, address: str, is_folder: bool = False, reason: str | None = None) -> None:
        super().__init__(message)
        self.address = address
        self.is_folder = is_folder
        self.reason = reason


class NotAFileError(ConfigError):
    """A local path names something that is not a regular file: a character or block device
    (``/dev/zero``), a FIFO, a socket (``/dev/stdin`` is one of these), or a folder.

    Attributes:
        path: the path, as given.
        kind: what it is, in words (``"a character device"``).
    """

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path} is {kind}, not a regular file: ragtune reads regular files only "
                         "(save the input to a file and give its path)")
        self.path = path
        self.kind = kind


class InputTooLargeError(ConfigError):
    """A file holds more bytes than its reader's limit (only the limit and one byte are read).

    Attributes:
        path: the path or address, as shown.
        max_bytes: the limit, in bytes.
    """

    def __init__(self, path: str, max_bytes: int, what: str = "file") -> None:
        super().__init__(f"{path}: {what} larger than {max_bytes:,} bytes (the limit); not read further")
        self.path = path
        self.max_bytes = max_bytes


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe) or pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str | None:
    """What a ``st_mode`` names, in words (``"a character device"``), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((word for test, word in _KINDS if test(mode)), "not a file")


def read_local_file(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes:
    """Return the bytes of the regular file at ``path``, at most ``max_bytes`` of them.

    The file is opened without blocking (a FIFO would otherwise wait for a writer) and the open
    file itself is looked at, so what is read is what was checked: anything but a regular file
    (a device such as ``/dev/zero``, a FIFO, a socket, ``/dev/stdin``, a folder) is refused
    before a byte is read. The bytes are read in blocks of :data:`core.limits.READ_BLOCK_BYTES`
    and the reading stops one byte past ``max_bytes``, whatever size the file claims (a file in
    ``/proc`` claims 0 bytes, a file may grow while it is read).

    Args:
        path: a local path (symbolic links are followed).
        max_bytes: most bytes read; None: no limit (still in blocks, still regular files only).

    Returns:
        The file's bytes.

    Raises:
        NotAFileError: ``path`` is not a regular file (``.kind`` says what it is).
        InputTooLargeError: the file holds more than ``max_bytes`` bytes.
        OSError: the file cannot be opened or read (``FileNotFoundError``, ``PermissionError``).
    """
    shown = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # a socket cannot be opened at all (ENXIO): say what it is
        try:
            kind = file_kind(os.stat(path).st_mode)
        except OSError:
            kind = None
        if kind is not None:
            raise NotAFileError(shown, kind) from None
        raise
    try:
        kind = file_kind(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if kind is not None:
        os.close(fd)
        raise NotAFileError(shown, kind)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        blocks: list[bytes] = []
        n_read = 0
        while max_bytes is None or n_read <= max_bytes:
            want = READ_BLOCK_BYTES if max_bytes is None else min(READ_BLOCK_BYTES, max_bytes + 1 - n_read)
            block = fh.read(want)
            if not block:
                break
            blocks.append(block)
            n_read += len(block)
    if max_bytes is not None and n_read > max_bytes:
        raise InputTooLargeError(shown, max_bytes)
    return b"".join(blocks)


def _scheme(address: str) -> str | None:
    """The lower-case scheme of ``address`` (blanks around it ignored), or None for a plain path."""
    return scheme_of(address.strip())


def is_remote(address: str | os.PathLike[str]) -> bool:
    """True when ``address`` is an ``s3://``, ``http://`` or ``https://`` address.

    A ``pathlib.Path``, a plain path and a ``file://`` URL are local. Other schemes are
    neither; :func:`local_path` refuses them.
    """
    if isinstance(address, os.PathLike):
        return False
    return _scheme(str(address)) in REMOTE_SCHEMES


def local_path(address: str | os.PathLike[str]) -> Path | None:
    """The local path ``address`` names, or None for a remote address.

    Args:
        address: a path, ``file://`` URL, or remote address.

    Returns:
        ``Path(address)`` for a path; the decoded path of a ``file://`` URL
        (``file:///data/my%20docs`` -> ``/data/my docs``); None for ``s3://``, ``http(s)://``.

    Raises:
        ConfigError: a ``file://`` URL on another host, or an unknown scheme (``ftp://``).
    """
    if isinstance(address, os.PathLike):
        return Path(address)
    text = str(address)
    scheme = _scheme(text)
    if scheme is None:
        return Path(text)
    if scheme in REMOTE_SCHEMES:
        return None
    if scheme == "file":
        return Path(file_url_path(text.strip()))
    raise ConfigError(f"cannot read {scheme}:// addresses ({shown_address(text)!r}): {_HOW}")


def shown_address(address: str | os.PathLike[str]) -> str:
    """``address`` as errors, logs and reports show it: without a query string or fragment.

    A local path is returned as ``str(address)``, unchanged. A remote address loses
    everything from the first ``?`` or ``#`` (a SAS token lives there).
    """
    text = str(address)
    if not is_remote(address):
        return text
    return re.split(r"[?#]", text.strip(), maxsplit=1)[0]


def _safe(text: str, address: str) -> str:
    """``text`` without ``address``'s query string and with keys and signatures as ``***``."""
    query = urlsplit(str(address).strip()).query
    if query:
        text = text.replace(query, "***")
    return _SECRET.sub(r"\1***", text)


def _access(
    address: str, connection_string: str | None, credential: StorageCredential | None, endpoint_url: str | None
) -> StoreAccess:
    """Keyword arguments for :func:`core.reports.open_files`, filled from Settings when not given."""
    if _scheme(address) == "s3":
        return {"endpoint_url": endpoint_url}
    if connection_string is not None or credential is not None:
        return {"connection_string": connection_string, "credential": credential}
    from core.settings import Settings  # the settings import the models and stores they build

    return Settings.from_env().storage_access(address)


def _split_file(address: str) -> tuple[str, str, str]:
    """``(folder address, key, base name)`` of a remote file address; the query stays on the folder."""
    parts = urlsplit(address.strip())
    folder_path, _, name = parts.path.rpartition("/")
    if not name:
        raise ConfigError(f"{shown_address(address)!r} names a folder, not a file: add the file's key")
    key = unquote(name)
    if key in (".", ".."):
        raise ConfigError(f"{shown_address(address)!r} does not name a file")
    folder = urlunsplit((parts.scheme, parts.netloc, folder_path, parts.query, ""))
    return folder, key, key


def _open(
    address: str, connection_string: str | None, credential: StorageCredential | None, endpoint_url: str | None, *,
    shown: str | None = None,
) -> Files:
    """The ``Files`` store at ``address``; its errors name ``shown`` (default: the address shown)."""
    try:
        return open_files(address, **_access(address, connection_string, credential, endpoint_url))
    except ConfigError as exc:
        message = str(exc)
        if shown is not None:  # name the file asked for, not the folder it is read through
            message = message.replace(_shown(address), shown)
        raise ConfigError(_safe(message, address)) from None


def read_input_bytes(
    address: str | os.PathLike[str],
    *,
    connection_string: str | None = None,
    credential: StorageCredential | None = None,
    endpoint_url: str | None = None,
    max_bytes: int | None = None,
) -> bytes:
    """Return the bytes of the file at ``address`` (local or remote), unchanged.

    A local file is read with :func:`read_local_file`: only a regular file is read (a device,
    FIFO or socket is refused before a byte is read), in blocks.

    Args:
        address: a file's path or address (see the module docstring).
        connection_string: an Azure Storage connection string for Blob addresses (default
            ``Settings.storage_connection``).
        credential: an Azure credential for ``https://<account>.blob...`` addresses (default
            ``Settings.storage_credential()`` when ``RAGTUNE_STORAGE_CONNECTION__clientId`` is
            set, else ``DefaultAzureCredential``).
        endpoint_url: an S3-compatible server for ``s3://`` addresses (default: boto3's
            own, which honours ``AWS_ENDPOINT_URL``).
        max_bytes: most bytes read (a remote file is read with one ranged request, where the
            store offers one, of at most one byte more); None: no limit.

    Returns:
        The file's bytes.

    Raises:
        NotAFileError: a local path that is not a regular file.
        InputTooLargeError: the file holds more than ``max_bytes`` bytes.
        InputNotFoundError: a remote address where no file exists (``.is_folder`` when keys
            exist below it).
        StoreError: the service refused or failed the request.
        ConfigError: an address that cannot be read (unknown scheme, no key, no bucket or
            container, a path-style Blob URL without a connection string).
        OSError: a local file that cannot be read (``FileNotFoundError``, ...).
    """
    local = local_path(address)
    if local is not None:
        return read_local_file(local, max_bytes)
    text = str(address)
    folder, key, _ = _split_file(text)
    shown = shown_address(text)
    files = _open(folder, connection_string, credential, endpoint_url, shown=shown)
    read_at_most = getattr(files, "read_at_most", None) if max_bytes is not None else None
    try:
        data = files.read_bytes(key) if read_at_most is None else read_at_most(key, max_bytes)
    except StoreError as exc:
        message = _safe(str(exc), text)
        try:
            found = files.exists(key)
        except StoreError:
            found = True  # cannot tell: report the read's own failure
        if found:
            raise StoreError(f"cannot read {shown}: {message}") from None
        try:
            is_folder = bool(files.list(key))
        except StoreError:  # a missing bucket, for one
            is_folder = False
        if is_folder:
            raise InputNotFoundError(f"{shown} is a folder, not a file", address=shown, is_folder=True) from None
        if read_at_most is not None:  # a ranged read says less of why: ask as a whole read does (nothing is there)
            message = _missing_message(files, key, text) or message
        told = message if message.startswith(shown) else f"{shown} does not exist ({message})"
        reason = message.split("does not exist: ", 1)[1] if "does not exist: " in message else None
        raise InputNotFoundError(told, address=shown, reason=reason) from None
    if max_bytes is not None and len(data) > max_bytes:
        raise InputTooLargeError(shown, max_bytes)
    return data


def _missing_message(files: Files, key: str, address: str) -> str | None:
    """The store's own words for a missing file (``... does not exist: there is no bucket 'b'``),
    from a whole read of a key found missing; None when that read finds the file after all."""
    try:
        files.read_bytes(key)
    except StoreError as exc:
        return _safe(str(exc), address)
    return None


def list_input_keys(
    address: str | os.PathLike[str],
    *,
    connection_string: str | None = None,
    credential: StorageCredential | None = None,
    endpoint_url: str | None = None,
) -> list[str]:
    """Return the keys below the folder ``address`` (recursive, ``/``-separated, sorted).

    No content is read. For a local folder the keys are its files' relative paths (a missing
    folder gives ``[]``).

    Args:
        address: a folder's path or address (``s3://bucket/docs``, a Blob URL ending in the
            container or a prefix).
        connection_string, credential, endpoint_url: as for :func:`read_input_bytes`.

    Returns:
        The keys, e.g. ``["a.txt", "sub/b.md"]``; ``[]`` when nothing is below the prefix.

    Raises:
        StoreError: the service refused or failed the request (for example a missing S3
            bucket).
        ConfigError: an address that cannot be read.
    """
    local = local_path(address)
    if local is not None:
        if not local.is_dir():
            return []
        return sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
    text = str(address)
    return _list(_open(text, connection_string, credential, endpoint_url), text)


def _cache_root(cache_dir: str | os.PathLike[str] | None, shown: str) -> Path:
    if cache_dir is None:
        from core.settings import Settings  # the settings import the models and stores they build

        cache_dir = Workspace.at(Settings.from_env().out_dir).inputs
    return Path(cache_dir) / hashlib.sha256(shown.rstrip("/").encode("utf-8")).hexdigest()


def fetch_file(
    address: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    connection_string: str | None = None,
    credential: StorageCredential | None = None,
    endpoint_url: str | None = None,
) -> Path:
    """Return a local file holding the file at ``address``.

    A local path (or ``file://`` URL) is returned as a ``Path``, unchecked and not copied. A
    remote file is downloaded to ``<cache_dir>/<address hash>/<content digest>/<base name>``:
    the local file has the remote key's base name (``s3://b/x/golden.jsonl`` ->
    ``.../golden.jsonl``), so readers that look at the name or extension behave as for a
    local copy. The file appears atomically (temporary file, fsync, rename).

    Args:
        address: a file's path or address (see the module docstring).
        cache_dir: where downloads go (default ``<Settings.out_dir>/inputs``).
        connection_string, credential, endpoint_url: as for :func:`read_input_bytes`.

    Returns:
        The local file's path.

    Raises:
        InputNotFoundError: no file at the remote address (``.is_folder`` when it is a folder).
        StoreError: the service refused or failed, or the cache cannot be written.
        ConfigError: an address that cannot be read.
    """
    local = local_path(address)
    if local is not None:
        return local
    text = str(address)
    shown = shown_address(text)
    _, _, name = _split_file(text)
    data = read_input_bytes(text, connection_string=connection_string, credential=credential, endpoint_url=endpoint_url)
    target = _cache_root(cache_dir, shown) / hashlib.sha256(data).hexdigest()[:16] / name
    try:
        if not (target.is_file() and target.stat().st_size == len(data)):
            write_atomic(target, data)
    except OSError as exc:
        raise StoreError(f"cannot write the local copy of {shown} at {target}: {exc.strerror or exc}") from exc
    logger.info("fetched %s to %s (%d bytes)", shown, target, len(data))
    return target


def fetch_folder(
    address: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    connection_string: str | None = None,
    credential: StorageCredential | None = None,
    endpoint_url: str | None = None,
    keep: Callable[[str], bool] | None = None,
    max_file_bytes: int | None = None,
    on_skip: Callable[[str, str], None] | None = None,
) -> Path:
    """Return a local folder holding the files below the folder (key prefix) ``address``.

    A local path (or ``file://`` URL) is returned as a ``Path``, unchecked and not copied. A
    remote folder is downloaded to ``<cache_dir>/<address hash>/<content digest>/``, one file
    per key below the prefix at the same relative path (``s3://b/docs/sub/a.md`` ->
    ``.../sub/a.md``), :data:`FETCH_WORKERS` files at a time. The files are written into a
    hidden ``.partial-*`` folder first, which is renamed into place once every file is there;
    a folder with the same content digest already in the cache is used as it is.

    Args:
        address: a folder's address (``s3://bucket/docs``, ``https://<account>.blob.core.
            windows.net/<container>/docs``; a trailing ``/`` is optional).
        cache_dir: where downloads go (default ``<Settings.out_dir>/inputs``).
        connection_string, credential, endpoint_url: as for :func:`read_input_bytes`.
        keep: ``keep(key)`` -> False leaves a key out (not downloaded). Default: every key.
        max_file_bytes: files larger than this many bytes are not downloaded: the listing's
            size is checked first, and a file is read at most one byte past it (a ranged read,
            where the store offers one), so a file that grew since it was listed is not
            downloaded whole either. None: no limit.
        on_skip: called ``on_skip(key, reason)`` for each file left out for its size (the
            reason names the limit, as the document loader's do).

    Returns:
        The local folder's path (without the files left out for their size; an empty folder
        when every file was).

    Raises:
        InputNotFoundError: nothing is below the remote prefix (or a missing container).
        StoreError: the service refused or failed, or the cache cannot be written.
        ConfigError: an address that cannot be read.
    """
    local = local_path(address)
    if local is not None:
        return local
    text = str(address)
    shown = shown_address(text)
    files = _open(text, connection_string, credential, endpoint_url)
    sizes = _sizes(files, text) if max_file_bytes is not None else {}
    keys = sorted(sizes) if sizes else _list(files, text)
    keys = [k for k in keys if keep is None or keep(k)]
    if not keys:
        raise InputNotFoundError(f"{shown} holds no files (no keys below this prefix)", address=shown)
    too_large = {k: sizes[k] for k in keys if max_file_bytes is not None and sizes.get(k, 0) > max_file_bytes}
    root = _cache_root(cache_dir, shown)
    partial = root / f".partial-{uuid.uuid4().hex}"
    digest = hashlib.sha256()
    try:
        try:
            def fetch(key: str) -> str | None:
                if key in too_large:
                    return None
                data = _read_capped(files, key, max_file_bytes, shown, text)
                if data is None:
                    too_large[key] = -1  # larger than listed: read only as far as the limit
                    return None
                write_atomic(partial / key, data)
                return hashlib.sha256(data).hexdigest()

            # downloads are network-bound: a few at once, each written as it arrives
            with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(keys)), thread_name_prefix="ragtune-fetch") as pool:
                hashes = list(pool.map(fetch, keys))
            partial.mkdir(parents=True, exist_ok=True)  # every file may have been left out
            for key, sha in zip(keys, hashes):
                if sha is not None:
                    digest.update(f"{key}\0{sha}\n".encode("utf-8"))
            final = root / digest.hexdigest()[:16]
            if final.is_dir():
                shutil.rmtree(partial, ignore_errors=True)
            else:
                try:
                    os.rename(partial, final)
                except OSError:
                    if not final.is_dir():  # not another process that finished the same content first
                        raise
                    shutil.rmtree(partial, ignore_errors=True)
        except OSError as exc:
            raise StoreError(f"cannot write the local copy of {shown} under {root}: {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    for key in sorted(too_large):
        size = too_large[key]
        stated = f"{size:,} bytes" if size >= 0 else "larger than listed"
        reason = (f"over the size limit: {stated} on disk, more than {max_file_bytes:,} (limit: "
                  f"RAGTUNE_DOCUMENT_MAX_BYTES); not downloaded")
        logger.info("not downloading %s/%s: %s", shown, key, reason)
        if on_skip is not None:
            on_skip(key, reason)
    logger.info("fetched %s to %s (%d files)", shown, final, len(keys) - len(too_large))
    return final


def _read_capped(files: Files, key: str, max_bytes: int | None, shown: str, address: str) -> bytes | None:
    """The bytes at ``key``, or None when they are more than ``max_bytes`` (read at most one
    byte past it where ``files`` offers ``read_at_most``)."""
    try:
        if max_bytes is None:
            return files.read_bytes(key)
        read_at_most = getattr(files, "read_at_most", None)
        data = read_at_most(key, max_bytes) if read_at_most is not None else files.read_bytes(key)
    except StoreError as exc:
        raise StoreError(f"cannot read {shown}/{key}: {_safe(str(exc), address)}") from None
    return None if len(data) > max_bytes else data


def _sizes(files: Files, address: str) -> dict[str, int]:
    """``files.sizes()`` (key -> bytes) where the store offers it, else ``{}`` (sizes unknown:
    each file's read is then what is capped); errors as :func:`_list`'s."""
    sizes = getattr(files, "sizes", None)
    if sizes is None:
        return {}
    try:
        return sizes()
    except StoreError as exc:
        message, shown = _safe(str(exc), address), shown_address(address)
        if shown.rstrip("/") in message:
            raise StoreError(message) from None
        raise StoreError(f"cannot list {shown}: {message}") from None


def _list(files: Files, address: str) -> list[str]:
    """``files.list()``, its errors naming ``address`` without secrets."""
    try:
        return files.list()
    except StoreError as exc:
        message, shown = _safe(str(exc), address), shown_address(address)
        if shown.rstrip("/") in message:  # the store's own message names the folder already
            raise StoreError(message) from None
        raise StoreError(f"cannot list {shown}: {message}") from None
