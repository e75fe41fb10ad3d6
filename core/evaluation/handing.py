"""Handing retrieved chunks to the generator: parent-child hits hand over their parent section.

Used by ``evaluate`` (the answers of a parent-child configuration) and by the chunking
comparison alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from core.chunking import Chunk, handed_text
from core.vectorstores.base import RetrievedChunk

if TYPE_CHECKING:
    from core.vectorstores.base import VectorStore


class ParentHandingStore:
    """A vector store whose search hands over each hit's parent section instead of the hit
    (for parent-child chunks; other chunks pass unchanged), each parent once, best first.

    Wraps a store for the generator: retrieval is still scored on the small chunks, while the
    answer is generated from their parents.

    Args:
        store: the vector store searched.
        chunks: the chunks as made (``metadata["parent_text"]`` is not stored in the vector
            store, so it is looked up here by chunk id).
    """

    def __init__(self, store: VectorStore, chunks: Sequence[Any]) -> None:
        self.store = store
        self._by_id = {c.chunk_id: c for c in chunks}

    def search(self, query: str, k: int = 10, **setup: Any) -> list[Any]:
        """The store's hits for ``query``, each replaced by its parent (parents once, ranks renumbered)."""
        out: list[Any] = []
        seen: set[str] = set()
        for hit in self.store.search(query, k=k, **setup):
            chunk = self._by_id.get(hit.chunk.chunk_id, hit.chunk)
            parent = chunk.metadata.get("parent_id")
            if parent is not None:
                if parent in seen:
                    continue
                seen.add(parent)
            handed = Chunk(text=handed_text(chunk), chunk_id=chunk.chunk_id, metadata=chunk.metadata)
            out.append(RetrievedChunk(chunk=handed, score=hit.score, rank=len(out) + 1))
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


__all__ = ["ParentHandingStore"]
