"""Chunkers: split loaded documents into :class:`Chunk` objects.

``get_chunker(method, chunk_size, chunk_overlap)`` builds one by name:

* ``recursive`` -- :class:`RecursiveChunker`, sizes in tokens applied as 4 characters each;
* ``hierarchical`` -- :class:`HierarchicalChunker`, one chunk per document element (sizes
  ignored);
* ``hybrid`` -- :class:`HybridChunker`, elements split/merged to at most ``chunk_size`` tokens
  of the packaged all-MiniLM-L6-v2 tokenizer (overlap ignored).
"""

from __future__ import annotations

from core.chunking.base import Chunk, Chunker, make_chunk_id
from core.chunking.docling_chunkers import HierarchicalChunker, HybridChunker
from core.chunking.recursive import RecursiveChunker
from core.errors import ConfigError

#: Chunking methods ``get_chunker`` knows.
CHUNKING_METHODS: tuple[str, ...] = ("recursive", "hierarchical", "hybrid")


def get_chunker(method: str, chunk_size: int, chunk_overlap: int) -> Chunker:
    """Return the chunker for ``method``.

    Args:
        method: ``"recursive"``, ``"hierarchical"`` or ``"hybrid"``.
        chunk_size: maximum chunk size in tokens (``recursive``: 4 characters per token;
            ``hybrid``: tokens of the tokenizer; ignored by ``hierarchical``).
        chunk_overlap: overlap in tokens (``recursive`` only; ignored by the others).

    Returns:
        A :class:`Chunker` with ``name`` and ``params()``. ``params()`` only holds what
        determines the chunks, so ignored sizes do not split caches.

    Raises:
        ConfigError: unknown method (the message lists the valid ones), or invalid sizes for
            the method (see each chunker).
    """
    if method == "recursive":
        return RecursiveChunker(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    if method == "hierarchical":
        return HierarchicalChunker()
    if method == "hybrid":
        return HybridChunker(chunk_size=chunk_size)
    raise ConfigError(f"unknown chunking method {method!r}; valid methods: {', '.join(CHUNKING_METHODS)}")


__all__ = [
    "CHUNKING_METHODS",
    "Chunk",
    "Chunker",
    "HierarchicalChunker",
    "HybridChunker",
    "RecursiveChunker",
    "get_chunker",
    "make_chunk_id",
]
