"""Document ids as an index holds them, in the golden file's form.

An index names a chunk's document in many ways: ``Benefit_Options.pdf``, a page reference
``Benefit_Options.pdf#page=2`` (Azure's RAG samples store this as ``sourcepage``), a Windows
path ``docs\\hr\\leave.md``, ``./hr/leave.md``, or the URL of a blob
``https://acct.blob.core.windows.net/docs/hr/leave%20policy.md``. :func:`index_document_id`
turns each into the id and page a golden file's ``expected`` uses, through the same parser the
golden file is read with (:meth:`core.golden.types.Target.parse`: Unicode NFC, ``#page=N``), so
both sides of a match are normalised alike.
"""

from __future__ import annotations

from typing import Any, Iterable
from urllib.parse import unquote, urlsplit

from core.documents.base import normalize_id
from core.golden.types import Target

#: Hosts whose URL paths start with a container (Azure Blob Storage and Data Lake).
_CONTAINER_HOSTS = (".blob.core.windows.net", ".dfs.core.windows.net")
#: Azurite, the local Blob Storage emulator: its URLs put the account before the container
#: (``http://127.0.0.1:10000/devstoreaccount1/<container>/<name>``); its default account.
_AZURITE_HOSTS = ("127.0.0.1", "localhost")
_AZURITE_ACCOUNT = "devstoreaccount1"


def _path_form(value: str) -> str:
    """A path with ``/`` separators, without a leading ``./`` or ``/``."""
    text = value.replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return text.lstrip("/")


def _url_path(value: str) -> str | None:
    """The path of a URL (percent-decoded; a blob URL without its container, an Azurite URL
    of the default account without the account and the container), or None when ``value`` is
    not a URL."""
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https", "s3", "gs", "abfs", "abfss", "file") or not (parts.netloc or parts.path):
        return None
    path = unquote(parts.path).lstrip("/")
    host = parts.hostname or ""
    segments = path.split("/")
    if host in _AZURITE_HOSTS and len(segments) > 2 and segments[0] == _AZURITE_ACCOUNT:
        path = "/".join(segments[2:])  # Azurite: the account, then the container
    elif host.endswith(_CONTAINER_HOSTS) and len(segments) > 1:
        path = "/".join(segments[1:])  # https://acct.blob.core.windows.net/<container>/<name>
    if parts.fragment:
        path += "#" + parts.fragment
    return path


def group_documents(raw_values: Iterable[Any], prefix: str, most: int) -> tuple[dict[str, set[str]], bool]:
    """The documents an index's listing names: golden-file id (:func:`index_document_id`) ->
    the raw values the index holds for it; and whether the listing was whole (at most ``most``
    values read).

    Args:
        raw_values: the mapped document field of each chunk, in any order.
        prefix: the mapping's ``document_prefix``, stripped before matching.
        most: how many chunks a whole listing may hold.
    """
    documents: dict[str, set[str]] = {}
    seen = 0
    for raw in raw_values:
        seen += 1
        documents.setdefault(index_document_id(raw, strip_prefix=prefix)[0], set()).add(str(raw))
    return documents, seen <= most


def index_document_id(value: object, *, strip_prefix: str = "") -> tuple[str, int | None]:
    """The golden-file document id and page of an index's document value.

    Steps: a URL becomes its percent-decoded path (a blob URL without its container, an
    Azurite URL without its account and container); ``\\`` becomes ``/``; a leading ``./``
    or ``/`` goes; ``strip_prefix`` (in the same form) is removed from the front when it ends
    at a folder boundary (``docs`` strips ``docs/a.pdf`` to ``a.pdf`` but leaves
    ``docsfoo/a.pdf``); then :meth:`core.golden.types.Target.parse` splits off
    ``#page=N`` and normalises to NFC. A value it cannot parse as a page reference is kept
    whole as the id.

    Args:
        value: the index's value (any type; ``None`` gives ``""``).
        strip_prefix: a folder or URL prefix the index adds before the golden file's ids
            (``https://acct.blob.core.windows.net/docs/`` or ``docs/``).

    Returns:
        ``(document_id, page)``; page is None when the value names none.
    """
    text = "" if value is None else str(value).strip()
    if not text:
        return "", None
    text = _url_path(text) or _path_form(text)
    if strip_prefix:
        prefix = _url_path(strip_prefix.strip())
        prefix = _path_form(prefix if prefix is not None else strip_prefix.strip())
        if prefix and text.startswith(prefix) and (prefix.endswith("/") or text[len(prefix):].startswith("/")):
            text = text[len(prefix):].lstrip("/")
    try:
        target = Target.parse(text)
    except ValueError:  # another anchor, or a page that is not a number: the value is the id
        return normalize_id(text), None
    return target.document_id, target.page


def page_numbers(value: object) -> tuple[int, ...]:
    """A page field's value as 1-based pages: an int, a float with no fraction, digits, a page
    reference (``Benefit_Options.pdf#page=3``, as Azure's RAG samples keep in ``sourcepage``),
    or a list of those; anything else (empty, 0, negative, other text) gives no page.

    Args:
        value: the field's value.

    Returns:
        The pages in the order given, without repeats.
    """
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[int] = []
    for item in items:
        if isinstance(item, bool) or item is None:
            continue
        try:
            number = float(str(item).strip())
        except ValueError:
            number = float(index_document_id(item)[1] or 0) if isinstance(item, str) and "#" in item else 0.0
        if number == int(number) and number >= 1 and int(number) not in out:
            out.append(int(number))
    return tuple(out)


__all__ = ["index_document_id", "page_numbers"]
