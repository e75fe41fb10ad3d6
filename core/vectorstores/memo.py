"""A vector store whose searches are answered once per query and setup.

One evaluation searches every golden question twice with the same setup: once for the
retrieval metrics, once for the passages its answers are generated from. Wrapped in
:class:`SearchMemo`, the second search returns the first one's results, so the answers are
generated from exactly the chunks the retrieval metrics scored.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from core.vectorstores.base import RetrievedChunk


class SearchMemo:
    """``store`` with ``search`` remembered by ``(query, k, setup)``.

    Everything else (``count``, ``exists``, ``close``, ...) is the wrapped store's. Results
    are kept for the wrapper's lifetime: one evaluation, at most one entry per distinct
    question and setup. Safe under threads (two threads asking the same search at once may
    both run it; the results are the same).

    Args:
        store: the ``VectorStore`` (or a wrapper such as ``RerankingStore``) searched.
    """

    def __init__(self, store: Any) -> None:
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
        key = json.dumps([query, int(k), setup], sort_keys=True, default=str, ensure_ascii=False)
        with self._lock:
            found = self._results.get(key)
        if found is not None:
            return list(found)
        hits = list(self._store.search(query, k=k, **setup))
        with self._lock:
            self._results[key] = hits
            self.searches += 1
        return list(hits)


__all__ = ["SearchMemo"]
