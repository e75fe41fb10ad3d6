"""A vector store whose searches are answered once per query and setup.

One evaluation searches every golden question twice with the same setup: once for the
retrieval metrics, once for the passages its answers are generated from. Wrapped in
:class:`SearchMemo`, the second search returns the first one's results, so the answers are
generated from exactly the chunks the retrieval metrics scored.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Sequence

from core.vectorstores.base import RetrievedChunk

if TYPE_CHECKING:
    from core.vectorstores.base import VectorStore
    from core.vectorstores.rerank import RerankingStore


def _key(query: str, k: int, setup: dict[str, Any]) -> str:
    """What a search is remembered by: the query, ``k`` and the setup."""
    return json.dumps([query, int(k), setup], sort_keys=True, default=str, ensure_ascii=False)


class SearchMemo:
    """``store`` with ``search`` remembered by ``(query, k, setup)``.

    Everything else (``count``, ``exists``, ``close``, ...) is the wrapped store's. Results
    are kept for the wrapper's lifetime: one evaluation, at most one entry per distinct
    question and setup. Safe under threads (two threads asking the same search at once may
    both run it; the results are the same).

    Args:
        store: the ``VectorStore`` (or a wrapper such as ``RerankingStore``) searched.
    """

    def __init__(self, store: VectorStore | RerankingStore) -> None:
        self._store = store
        self._results: dict[str, list[RetrievedChunk]] = {}
        self._lock = threading.Lock()
        self.searches = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def search(self, query: str, k: int = 10, **setup: Any) -> list[RetrievedChunk]:
        """The wrapped store's ``search(query, k, **setup)``, run once per distinct arguments.

        Raises:
            whatever the wrapped store's search raises (a failed search is not remembered).
        """
        key = _key(query, k, setup)
        with self._lock:
            found = self._results.get(key)
        if found is not None:
            return list(found)
        hits = list(self._store.search(query, k=k, **setup))
        with self._lock:
            self._results[key] = hits
            self.searches += 1
        return list(hits)

    def search_many(self, queries: Sequence[str], k: int = 10, **setup: Any) -> list[list[RetrievedChunk]]:
        """:meth:`search` for each of ``queries``; those not remembered yet are searched
        together through the wrapped store's own ``search_many`` when its class has one (one
        request instead of one per query), else one by one.

        Returns:
            One result list per query, in the order of ``queries``.

        Raises:
            whatever the wrapped store's search raises (nothing is remembered then).
        """
        queries = list(queries)
        keys = [_key(q, k, setup) for q in queries]
        with self._lock:
            todo = list(dict.fromkeys(q for q, key in zip(queries, keys) if key not in self._results))
        if todo:
            # the class, not the instance: a wrapper such as RerankingStore forwards unknown
            # attributes to its inner store, whose search_many would skip the wrapper's work
            many = getattr(type(self._store), "search_many", None)
            found = (many(self._store, todo, k=k, **setup) if many is not None
                     else [self._store.search(q, k=k, **setup) for q in todo])
            new = {_key(q, k, setup): list(hits) for q, hits in zip(todo, found)}
            with self._lock:
                self._results.update(new)
                self.searches += len(new)
        with self._lock:
            return [list(self._results[key]) for key in keys]


__all__ = ["SearchMemo"]
