"""Helpers shared by the chunkers: argument checks and reading documents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator

from core.errors import ConfigError

if TYPE_CHECKING:
    from docling_core.types.doc import DocItem

#: Chunk size in tokens when none is given.
DEFAULT_CHUNK_SIZE = 256
#: Chunk overlap in tokens when none is given, for sizes of at least 8 times as much (see
#: :func:`default_overlap`).
DEFAULT_CHUNK_OVERLAP = 32
#: When no overlap is given, it is at most this share of the chunk size.
DEFAULT_OVERLAP_SHARE = 8


def default_overlap(chunk_size: int) -> int:
    """The overlap in tokens used when none is given: ``min(DEFAULT_CHUNK_OVERLAP,
    chunk_size // DEFAULT_OVERLAP_SHARE)``, so that it always fits the size (32 at 256 tokens,
    2 at 16, 0 under 8)."""
    return max(0, min(DEFAULT_CHUNK_OVERLAP, int(chunk_size) // DEFAULT_OVERLAP_SHARE))


def check_positive_int(name: str, value: Any) -> int:
    """Return ``value`` if it is an int > 0, else raise :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer number of tokens, got {value!r}")
    if value <= 0:
        raise ConfigError(f"{name} must be > 0 tokens, got {value}")
    return value


def check_sizes(chunk_size: Any, chunk_overlap: Any) -> tuple[int, int]:
    """Check a ``(chunk_size, chunk_overlap)`` pair in tokens: size > 0, 0 <= overlap < size.

    Raises:
        ConfigError: a value is not an int, the size is not positive, the overlap is
            negative, or the overlap is not smaller than the size.
    """
    size = check_positive_int("chunk_size", chunk_size)
    if isinstance(chunk_overlap, bool) or not isinstance(chunk_overlap, int):
        raise ConfigError(f"chunk_overlap must be an integer number of tokens, got {chunk_overlap!r}")
    if chunk_overlap < 0:
        raise ConfigError(f"chunk_overlap must be >= 0 tokens, got {chunk_overlap}")
    if chunk_overlap >= size:
        raise ConfigError(
            f"chunk_overlap ({chunk_overlap} tokens) must be smaller than chunk_size ({size} tokens)"
        )
    return size, chunk_overlap


def iter_documents(documents: Iterable[Any]) -> Iterator[tuple[str, Any]]:
    """Yield ``(document_id, DoclingDocument)`` pairs.

    Accepts :class:`core.documents.LoadedDocument` objects (anything with ``document_id``
    and ``document``) or bare ``DoclingDocument``s, whose ``name`` is used as the id (the
    loader sets it to the document id).
    """
    for item in documents:
        if hasattr(item, "document_id") and hasattr(item, "document"):
            yield str(item.document_id), item.document
        else:
            yield str(item.name), item


def item_pages(item: DocItem) -> set[int]:
    """1-based page numbers of a doc item's provenance (empty when it has none)."""
    return {int(p.page_no) for p in (getattr(item, "prov", None) or [])}
