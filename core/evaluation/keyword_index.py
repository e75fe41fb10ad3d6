"""Which collections need a keyword index: those a keyword or hybrid configuration searches.

A collection is shared by every configuration with the same chunking, embedding model and
vector store; the other parameters (search mode, fusion, number of chunks, reranker, prompts)
apply at search or generation time. A vector-only configuration builds its collection without
the keyword index (BM25 in Milvus, the ``tsvector`` column in PostgreSQL) unless a keyword or
hybrid configuration of the same space shares that collection.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from core.chunking import CHAT_METHODS
from core.optimization.parameters import TEXT_PARAMETERS

if TYPE_CHECKING:
    from core.optimization.space import SearchSpace

#: Parameters that never change a collection: they apply at search or generation time.
SEARCH_TIME_PARAMETERS: tuple[str, ...] = (
    "number_of_chunks", "search_mode", "ranker_strategy", "ranker_k", "ranker_alpha", "reranker",
    "retrieval_depth", *TEXT_PARAMETERS,
)


def searches_by_keyword(configuration: Mapping[str, Any]) -> bool:
    """True when ``configuration`` searches by keyword (``search_mode`` keyword or hybrid)."""
    return str(configuration.get("search_mode", "vector")) in ("keyword", "hybrid")


def indexing_key(configuration: Mapping[str, Any]) -> str:
    """The configuration's parameters that can change its collection, as canonical JSON.

    Configurations with the same key share a collection. ``foundation_model`` counts only
    for the chunking methods that ask a chat model (``core.chunking.CHAT_METHODS``).
    """
    kept = {name: value for name, value in configuration.items() if name not in SEARCH_TIME_PARAMETERS}
    if configuration.get("chunking_method", "recursive") not in CHAT_METHODS:
        kept.pop("foundation_model", None)
    return json.dumps(kept, sort_keys=True, default=str, ensure_ascii=False)


def keyword_indexed(configurations: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The indexing keys (:func:`indexing_key`) of the configurations that search by keyword:
    their collections need a keyword index, whichever configuration builds them."""
    return frozenset(indexing_key(c) for c in configurations if searches_by_keyword(c))


def keyword_indexed_space(space: SearchSpace) -> frozenset[str]:
    """:func:`keyword_indexed` over the valid configurations of ``space`` (a
    ``core.optimization.SearchSpace``)."""
    return keyword_indexed(space.valid_configurations())


__all__ = ["SEARCH_TIME_PARAMETERS", "indexing_key", "keyword_indexed", "keyword_indexed_space", "searches_by_keyword"]
