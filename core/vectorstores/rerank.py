"""A first-stage search followed by a reranker, behind the store's own ``search``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from core.errors import ConfigError
from core.models.rerank import rerank_order
from core.vectorstores.base import RetrievedChunk

if TYPE_CHECKING:
    from core.models.rerank import Reranker
    from core.vectorstores.base import VectorStore

#: Results the first stage fetches before a reranker keeps the top k (at least 20).
RERANK_DEPTH = 20


def rerank_hits(reranker: Reranker, query: str, hits: list[RetrievedChunk], k: int) -> list[RetrievedChunk]:
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
        ranked: results this store's search already gave, by query: each the best ``keep``
            of ``depth`` first-stage results reranked, as :func:`rerank_hits` returns them (an
            evaluation that scored them hands them on, so the answers to the same questions
            are generated from the same chunks without searching and reranking again).
        ranked_setup: the search settings (``SearchSetup.to_dict()``, passed to ``search`` as
            keyword arguments) the ``ranked`` results were searched with; a search with other
            settings is run.
        keep: how many results each list in ``ranked`` was cut to (a shorter list holds every
            result there was).

    Raises:
        ConfigError: ``depth`` or ``keep`` below 1.
    """

    def __init__(self, store: VectorStore, reranker: Reranker, depth: int = RERANK_DEPTH, *,
                 ranked: Mapping[str, Sequence[RetrievedChunk]] | None = None,
                 ranked_setup: Mapping[str, Any] | None = None, keep: int = 10) -> None:
        if depth < 1 or keep < 1:
            raise ConfigError(f"retrieval depth and results kept must be at least 1, got {depth} and {keep}")
        self._store = store
        self.reranker = reranker
        self.depth = depth
        self._ranked = dict(ranked or {})
        self._ranked_setup = dict(ranked_setup or {})
        self._keep = keep
        self.n_reused = 0  # searches answered from ``ranked``

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def search(self, query: str, k: int = 10, **setup: Any) -> list[RetrievedChunk]:
        """Search ``max(depth, k)`` results with the wrapped store, rerank, keep ``k``; or,
        when ``ranked`` holds ``query``, ``setup`` is ``ranked_setup`` and ``k`` is at most
        ``keep``, its first ``k``.

        The held results are what this search would return: the first stage fetches
        ``max(depth, k)`` = ``depth`` results for any ``k`` up to ``keep`` (at most ``depth``),
        and the best ``k`` of a reranked list are the first ``k`` of its best ``keep``.

        Raises:
            RerankError: the reranker failed.
        """
        held = self._ranked.get(query)
        if held is not None and setup == self._ranked_setup and k <= self._keep <= self.depth:
            self.n_reused += 1
            return list(held[:k])
        hits = self._store.search(query, k=max(self.depth, k), **setup)
        return rerank_hits(self.reranker, query, hits, k)
