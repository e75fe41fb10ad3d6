"""Golden checks as the Functions app answers and stores them.

:func:`check_upload` checks the bytes of an uploaded golden file and always returns a result:
a file over the size limit, or one whose check fails unexpectedly, gets a failed check saying
why (never an exception, and never a previous ``"ok": true`` check left in place).
:func:`check_key` names the stored check of a blob: one key per blob name, however the name
is spelled. :func:`store_check` stores a check only while the blob still holds the file that
was checked (:func:`is_current`), so of two quick uploads the older one's check, finishing
last, never replaces the newer one's.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping

from core.errors import StoreError
from core.golden import reader
from core.golden.problems import DEFAULT_LIMITS, CheckLimits
from core.golden.types import GoldenCheck, Problem
from core.reports.blob import BlobVersion
from core.reports.keys import GOLDEN_CHECKS_PREFIX

if TYPE_CHECKING:
    from core.reports.files import Files

logger = logging.getLogger(__name__)

__all__ = ["CHECKS_PREFIX", "check_key", "check_upload", "delivered_version", "failed_check", "is_current",
           "store_check"]

#: Report store prefix of the stored golden checks.
CHECKS_PREFIX = GOLDEN_CHECKS_PREFIX

#: Longest blob name, in UTF-8 bytes, stored under its own name; longer ones are stored by hash.
_PLAIN_NAME_BYTES = 200
#: Longest folder or file name in a plain key, in UTF-8 bytes (file systems allow 255).
_PLAIN_SEGMENT_BYTES = 100


def check_key(name: str) -> str:
    """Return the report store key of the check of blob ``name``.

    A plain name (segments that are not empty, ``.`` or ``..``; no ``~``, backslash or control
    character; at most 200 UTF-8 bytes, 100 per segment) is kept as it is:
    ``golden_checks/hr/golden.jsonl.json``. Any other name, which a store would normalise
    (``a//y``, ``a/./y`` and ``a/y`` are one path in a folder) or could not hold (names up to
    1,024 characters), is stored by the sha256 of its UTF-8 bytes as
    ``golden_checks/~/<hex>.json``; a plain name never holds ``~``, so the two never meet.

    Args:
        name: the blob's name inside its container.

    Returns:
        A key relative to the report store's root; distinct names give distinct keys.
    """
    raw = name.encode("utf-8", "surrogatepass")
    plain = (
        0 < len(raw) <= _PLAIN_NAME_BYTES
        and not any(c in "~\\" or ord(c) < 32 or ord(c) == 127 for c in name)
        and all(part not in ("", ".", "..") and len(part.encode("utf-8", "surrogatepass")) <= _PLAIN_SEGMENT_BYTES
                for part in name.split("/"))
    )
    if plain:
        return f"{CHECKS_PREFIX}/{name}.json"
    return f"{CHECKS_PREFIX}/~/{hashlib.sha256(raw).hexdigest()}.json"


def failed_check(name: str, message: str, sha256: str | None = None) -> dict[str, Any]:
    """A failed check of file ``name`` with one file-level error, as ``GoldenCheck.to_dict()``.

    Args:
        name: the file's name, as results name it.
        message: why the file cannot be run.
        sha256: hex sha256 of the file's bytes, when they were read.
    """
    check = GoldenCheck(path=name, sha256=sha256, problems=[Problem("error", message)])
    return check.to_dict()


def check_upload(
    data: bytes, name: str, *, max_bytes: int, limits: CheckLimits = DEFAULT_LIMITS, size: int | None = None
) -> dict[str, Any]:
    """Check an uploaded golden file; returns ``GoldenCheck.to_dict()`` with ``path`` = ``name``.

    Args:
        data: the file's bytes (at most ``max_bytes + 1`` of them need be read).
        name: the file's name, as results name it.
        max_bytes: largest file checked; a larger one (by ``size`` or by ``len(data)``) gets a
            failed check naming the limit.
        limits: how many problems are kept (bounded by default).
        size: the file's size in bytes when known without reading it (a blob's length).

    Returns:
        The check as a dict: never raises for the file's content. An unexpected failure of the
        check itself is logged with its traceback and returned as a failed check naming it.
    """
    total = size if size is not None else len(data)
    if total > max_bytes or len(data) > max_bytes:
        shown = max(total, len(data))
        return failed_check(name, f"the file is {shown:,} bytes, more than the {max_bytes:,} bytes checked here "
                                  "(RAGTUNE_GOLDEN_MAX_BYTES): split it, or check it with `ragtune check`")
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        result = reader.check_golden(name, data=data, limits=limits).to_dict()
    except Exception as exc:  # the check must never leave an old result in place
        logger.exception("checking golden file %s failed", name)
        return failed_check(name, f"the file could not be checked ({type(exc).__name__}); nothing in it is "
                                  "ready to run", sha256)
    result["path"] = name
    return result


#: Tries of :func:`store_check` when other checks of the same blob keep being stored meanwhile.
STORE_CHECK_TRIES = 5


def delivered_version(data: bytes, size: int | None, properties: Mapping[str, Any] | None, *,
                      complete: bool) -> BlobVersion:
    """The ``core.reports.blob.BlobVersion`` of the file a blob trigger delivered.

    Args:
        data: the bytes read (all of them when ``complete``).
        size: the blob's length as the trigger gave it, or None.
        properties: the trigger's blob properties (the host's ``BlobProperties``: ``ETag``,
            ``ContentLength``, ...), or None; only the ETag is read.
        complete: whether ``data`` is the whole file (False when it was over the size limit).

    Returns:
        Its ETag when the host gave one, its size, and the MD5 of ``data`` when complete.
    """
    etag = next((str(v) for k, v in (properties or {}).items() if str(k).lower() == "etag" and v), None)
    if complete:
        return BlobVersion(etag=etag, size=len(data), content_md5=hashlib.md5(data).digest())
    return BlobVersion(etag=etag, size=size)


def _bare_etag(etag: str) -> str:
    return etag.strip().removeprefix("W/").strip('"')


def is_current(delivered: BlobVersion, sha256: str | None, current: BlobVersion | None, read_current: Callable[[], bytes | None]) -> bool:
    """Whether a blob still holds the file a check was made of.

    In order: no blob (None) is not current; the same ETag is; another size is not; a check
    made without reading the content (over the size limit: ``sha256`` None, its verdict
    depends on the size only) is, at the same size; the same Content-MD5 is, another is not;
    else the blob is read again (``read_current``) and its sha256 compared. A blob written
    again with the same bytes (a new ETag) is current: its check would be the same.

    Args:
        delivered: the checked file's ``BlobVersion`` (:func:`delivered_version`).
        sha256: the checked bytes' hex sha256, or None when they were not all read.
        current: the blob's ``BlobVersion`` now (``BlobFiles.version``), or None when gone.
        read_current: reads the blob's bytes now (None when gone); called only when needed.
    """
    if current is None:
        return False
    if delivered.etag and current.etag and _bare_etag(delivered.etag) == _bare_etag(current.etag):
        return True
    if delivered.size is not None and current.size is not None and delivered.size != current.size:
        return False
    if sha256 is None:
        return True
    if delivered.content_md5 and current.content_md5:
        return delivered.content_md5 == current.content_md5
    now = read_current()
    return now is not None and hashlib.sha256(now).hexdigest() == sha256


def store_check(files: Files, key: str, data: bytes, still_current: Callable[[], bool]) -> bool:
    """Write the check ``data`` at ``key`` in the report store ``files`` only while
    ``still_current()`` says its file is still the blob's content.

    Where the store allows a conditional write (``BlobFiles.write_bytes_if``), the stored
    check's version is read first, then ``still_current()`` is asked, then the check is
    written only if the stored one did not change in between: a check stored meanwhile (a
    newer upload's) makes this one look again, and find its file replaced. Elsewhere (a local
    folder, S3) the check is written right after ``still_current()`` answers.

    Returns:
        True when written; False when the file was replaced (nothing is written).

    Raises:
        StoreError: the store failed, or other checks of the blob kept being stored
            :data:`STORE_CHECK_TRIES` times in a row.
    """
    write_if = getattr(files, "write_bytes_if", None)
    version = getattr(files, "version", None)
    if write_if is None or version is None:
        if not still_current():
            return False
        files.write_bytes(key, data)
        return True
    for _ in range(STORE_CHECK_TRIES):
        stored = version(key)
        if not still_current():
            return False
        if write_if(key, data, etag=None if stored is None else stored.etag):
            return True
    raise StoreError(f"the check {key} kept being replaced while it was stored ({STORE_CHECK_TRIES} tries)")
