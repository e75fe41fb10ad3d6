"""A first-stage search followed by a reranker, behind the store's own ``search``."""

from __future__ import annotations

from typing import Any

from core.errors import ConfigError
from core.vectorstores.base import RetrievedChunk

#: Results the first stage fetches before a reranker keeps the top k (at least 20).
RERANK_DEPTH = 20


def rerank_hits(reranker: Any, query: str, hits: list[RetrievedChunk], k: int) -> list[RetrievedChunk]:
    """Reorder ``hits`` by ``reranker``'s scores and keep the best ``k``.

    Args:
        reranker: a ``Reranker``.
        query: the question.
        hits: the first stage's results, best first.
        k: results to keep (>= 1).

    Returns:
        At most ``k`` chunks, best first, each with the reranker's score and its new rank;
        equal scores keep the first stage's order.

    Raises:
        RerankError: the reranker failed.
    """
    from core.models.rerank import rerank_order

    scores = reranker.rerank(query, [h.chunk.text for h in hits])
    order = rerank_order(scores)[:k]
    return [RetrievedChunk(chunk=hits[i].chunk, score=float(scores[i]), rank=r) for r, i in enumerate(order, start=1)]


class RerankingStore:
    """A vector store whose ``search`` fetches ``depth`` results and reranks them to ``k``.

    Everything else (``count``, ``exists``, ``close``, ...) is the wrapped store's.

    Args:
        store: the ``VectorStore`` searched first.
        reranker: the ``Reranker``.
        depth: results fetched by the first stage (at least the ``k`` asked for; default
            :data:`RERANK_DEPTH`).

    Raises:
        ConfigError: ``depth`` below 1.
    """

    def __init__(self, store: Any, reranker: Any, depth: int = RERANK_DEPTH) -> None:
        if depth < 1:
            raise ConfigError(f"retrieval depth must be at least 1, got {depth}")
        self._store = store
        self.reranker = reranker
        self.depth = depth

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def search(self, query: str, k: int = 10, **setup: Any) -> list[RetrievedChunk]:
        """Search ``max(depth, k)`` results with the wrapped store, rerank, keep ``k``.

        Raises:
            RerankError: the reranker failed.
        """
        hits = self._store.search(query, k=max(self.depth, k), **setup)
        return rerank_hits(self.reranker, query, hits, k)
