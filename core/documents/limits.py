"""Checking a document against its :class:`~core.limits.DocumentLimits` before it is parsed.

- :func:`check_size`: the bytes on disk (and of a text file, whose bytes are its unpacked
  size), before the bytes are read or parsed.
- :func:`check_zip`: a ZIP-based file (DOCX; also XLSX, PPTX, EPUB): the number of parts from
  the archive's end record, then the unpacked sizes its directory declares (their sum, and
  each part's compression ratio), then every part read through and counted, in blocks, with
  the reading stopped as soon as the count passes the limit. Python's ``zipfile`` stops a
  part at the size its header declares and checks the part's CRC-32, so a header that
  understates a part makes the part fail its check rather than expand past the limit, and the
  parser reads exactly the bytes counted here.
- :func:`check_chars`: the characters of the extracted text.

A check that fails raises :class:`DocumentTooLarge`, whose message names the limit and the
variable that sets it; the loader skips the file with that message as its reason.

References:
    ZIP File Format Specification (PKWARE APPNOTE.TXT 6.3.10), sections 4.3.14-4.3.16 (the end
    of central directory record, the ZIP64 record and its locator):
    https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT ;
    Apache POI ``ZipSecureFile`` (the minimum inflate ratio of 1 %).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from typing import TYPE_CHECKING

from core.errors import DocumentError
from core.limits import READ_BLOCK_BYTES, ZIP_RATIO_GRACE_BYTES

if TYPE_CHECKING:
    from core.limits import DocumentLimits

#: File extensions of the ZIP-based formats (checked with :func:`check_zip` whatever their
#: content says; any other file starting with a ZIP signature is checked too).
ZIP_EXTENSIONS: tuple[str, ...] = (".docx", ".xlsx", ".pptx", ".epub", ".odt")

_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EOCD = b"PK\x06\x06"
_ENV = {
    "max_bytes": "RAGTUNE_DOCUMENT_MAX_BYTES",
    "max_unpacked_bytes": "RAGTUNE_DOCUMENT_MAX_UNPACKED_BYTES",
    "max_inflate_ratio": "RAGTUNE_DOCUMENT_MAX_INFLATE_RATIO",
    "max_pages": "RAGTUNE_DOCUMENT_MAX_PAGES",
    "max_chars": "RAGTUNE_DOCUMENT_MAX_CHARS",
}


class DocumentTooLarge(DocumentError):
    """A document over one of its limits.

    Attributes:
        limit: the :class:`~core.limits.DocumentLimits` field it is over (``"max_pages"``, ...).
    """

    def __init__(self, message: str, *, limit: str) -> None:
        variable = _ENV.get(limit)
        super().__init__(f"{message} (limit: {variable})" if variable else message)
        self.limit = limit


def _n(value: float) -> str:
    """``value`` with thousands separators (``1,048,576``)."""
    return f"{value:,.0f}"


def check_size(n_bytes: int, limits: DocumentLimits) -> None:
    """Refuse a file of more than ``limits.max_bytes`` bytes on disk.

    Raises:
        DocumentTooLarge: over the limit.
    """
    if n_bytes > limits.max_bytes:
        raise DocumentTooLarge(f"over the size limit: {_n(n_bytes)} bytes on disk, more than "
                               f"{_n(limits.max_bytes)}", limit="max_bytes")


def is_zip(suffix: str, head: bytes) -> bool:
    """Whether a file is ZIP-based: its extension is one of :data:`ZIP_EXTENSIONS`, or its
    first bytes are a ZIP local file header (``PK\\x03\\x04``)."""
    return suffix.lower() in ZIP_EXTENSIONS or head[:4] == b"PK\x03\x04"


def _declared_entries(data: bytes) -> int | None:
    """The number of entries the archive's end record declares (the ZIP64 record's when the
    classic one holds its 0xFFFF marker), or None when no end record is found."""
    at = data.rfind(_EOCD, max(0, len(data) - 22 - 65535))
    if at < 0 or len(data) < at + 22:
        return None
    entries = struct.unpack_from("<H", data, at + 10)[0]
    if entries != 0xFFFF:
        return entries
    locator = at - 20
    if locator < 0 or data[locator:locator + 4] != _ZIP64_LOCATOR:
        return None
    offset = struct.unpack_from("<Q", data, locator + 8)[0]
    if offset + 56 > len(data) or data[offset:offset + 4] != _ZIP64_EOCD:
        return None
    return struct.unpack_from("<Q", data, offset + 32)[0]


def check_zip(data: bytes, limits: DocumentLimits) -> None:
    """Check a ZIP-based file's parts against ``limits`` without keeping them in memory.

    Args:
        data: the file's bytes.
        limits: the limits (``max_zip_entries``, ``max_unpacked_bytes``, ``max_inflate_ratio``).

    Raises:
        DocumentTooLarge: too many parts, declared or counted unpacked sizes over the limit,
            or a part that expands more than the ratio allows.
        DocumentError: not a readable ZIP archive (corrupt, a part that fails its CRC check or
            ends early, an encrypted part).
    """
    declared = _declared_entries(data)
    if declared is not None and declared > limits.max_zip_entries:
        raise DocumentTooLarge(f"too many parts: the archive declares {_n(declared)}, more than "
                               f"{_n(limits.max_zip_entries)}", limit="max_zip_entries")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as exc:
        raise DocumentError(f"not a readable ZIP archive ({exc})") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_zip_entries:
            raise DocumentTooLarge(f"too many parts: {_n(len(infos))}, more than {_n(limits.max_zip_entries)}",
                                   limit="max_zip_entries")
        total = sum(info.file_size for info in infos)
        if total > limits.max_unpacked_bytes:
            raise DocumentTooLarge(f"over the unpacked size limit: its parts declare {_n(total)} bytes unpacked, "
                                   f"more than {_n(limits.max_unpacked_bytes)}", limit="max_unpacked_bytes")
        _check_ratios(infos, limits)
        _count_parts(archive, infos, limits)


def _check_ratios(infos: list[zipfile.ZipInfo], limits: DocumentLimits) -> None:
    """Refuse a part over the grace size that expands more than ``limits.max_inflate_ratio``."""
    for info in infos:
        if info.file_size <= ZIP_RATIO_GRACE_BYTES:
            continue
        ratio = info.file_size / max(1, info.compress_size)
        if ratio > limits.max_inflate_ratio:
            raise DocumentTooLarge(
                f"a part expands too much to be an ordinary document (a ZIP bomb?): {info.filename} unpacks "
                f"{_n(info.compress_size)} bytes to {_n(info.file_size)}, {ratio:,.0f} times, more than "
                f"{limits.max_inflate_ratio:g}", limit="max_inflate_ratio")


def _count_parts(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], limits: DocumentLimits) -> None:
    """Read every part through in blocks, counting the bytes; stop past the limit."""
    total = 0
    for info in infos:
        if info.is_dir():
            continue
        try:
            with archive.open(info) as part:
                while block := part.read(READ_BLOCK_BYTES):
                    total += len(block)
                    if total > limits.max_unpacked_bytes:
                        raise DocumentTooLarge(
                            f"over the unpacked size limit: its parts unpack to more than "
                            f"{_n(limits.max_unpacked_bytes)} bytes", limit="max_unpacked_bytes")
        except DocumentTooLarge:
            raise
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError, ValueError, EOFError, OSError,
                zlib.error) as exc:  # a corrupt stream, a part that fails its CRC, an encrypted part
            raise DocumentError(f"not a readable ZIP archive: part {info.filename} "
                                f"({type(exc).__name__}: {exc})") from None


def check_chars(n_chars: int, limits: DocumentLimits) -> None:
    """Refuse extracted text of more than ``limits.max_chars`` characters.

    Raises:
        DocumentTooLarge: over the limit.
    """
    if n_chars > limits.max_chars:
        raise DocumentTooLarge(f"over the character limit: more than {_n(limits.max_chars)} characters of text",
                               limit="max_chars")


def check_pages(n_pages: int, limits: DocumentLimits) -> None:
    """Refuse a paged document of more than ``limits.max_pages`` pages.

    Raises:
        DocumentTooLarge: over the limit.
    """
    if n_pages > limits.max_pages:
        raise DocumentTooLarge(f"over the page limit: {_n(n_pages)} pages, more than {_n(limits.max_pages)}",
                               limit="max_pages")


__all__ = ["DocumentTooLarge", "READ_BLOCK_BYTES", "ZIP_EXTENSIONS", "check_chars", "check_pages", "check_size",
           "check_zip", "is_zip"]
