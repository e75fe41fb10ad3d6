"""The default values of the search space, after IBM ai4rag's defaults.

Sizes are in tokens (the recursive chunker counts 4 characters per token; the hybrid chunker
counts tokenizer tokens). :func:`core.optimization.space.default_space` builds the space
from :func:`default_values`.

References:
    IBM ai4rag ``default_search_space.py``: https://github.com/IBM/ai4rag
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from core.optimization.parameters import NO_RERANKER
from core.rag.template import DEFAULT_CONTEXT_TEMPLATE, DEFAULT_SYSTEM_MESSAGE, DEFAULT_USER_MESSAGE

#: ai4rag's default chunk sizes and overlaps (tokens).
AI4RAG_CHUNK_SIZES: tuple[int, ...] = (512, 1024, 2048)
AI4RAG_CHUNK_OVERLAPS: tuple[int, ...] = (0, 128, 256)
#: The defaults when an embedding model's context is shorter than 512 tokens (all-MiniLM-L6-v2
#: reads 256): with ai4rag's sizes every configuration of that model would be removed.
SHORT_CONTEXT_CHUNK_SIZES: tuple[int, ...] = (128, 256)
SHORT_CONTEXT_CHUNK_OVERLAPS: tuple[int, ...] = (0, 32, 64)
DEFAULT_CHUNKING_METHODS: tuple[str, ...] = ("recursive", "hybrid")
DEFAULT_NUMBER_OF_CHUNKS: tuple[int, ...] = (3, 5, 10)
DEFAULT_SEARCH_MODES: tuple[str, ...] = ("vector", "hybrid")
DEFAULT_RANKER_STRATEGIES: tuple[str, ...] = ("rrf", "weighted")
DEFAULT_RANKER_K: tuple[int, ...] = (60,)
DEFAULT_RANKER_ALPHA: tuple[float, ...] = (0.5, 1.0)
#: No reranker unless a space names one (``--set reranker=none,local:ms-marco-MiniLM-L-12-v2``).
DEFAULT_RERANKERS: tuple[str, ...] = (NO_RERANKER,)
#: Results the first stage fetches before the reranker keeps ``number_of_chunks``.
DEFAULT_RETRIEVAL_DEPTH: tuple[int, ...] = (20,)


def default_values(
    embedding_models: Mapping[str, int | None],
    foundation_models: Sequence[str],
    vector_stores: Sequence[str],
) -> dict[str, tuple[Any, ...]]:
    """Return the default values of every parameter for the given models and backends.

    ``chunk_size`` and ``chunk_overlap`` are ai4rag's (512, 1024, 2048) and (0, 128, 256),
    or (128, 256) and (0, 32, 64) when the smallest known context length is below 512 tokens
    (see :func:`core.optimization.space.default_space`).

    Args:
        embedding_models: embedding model id -> context length in tokens (None: unknown).
        foundation_models: chat model ids.
        vector_stores: the vector store backends compared.

    Returns:
        Parameter name -> its tuple of values, for every parameter of the space.
    """
    lengths = embedding_models
    known = [n for n in lengths.values() if n is not None]
    short = bool(known) and min(known) < AI4RAG_CHUNK_SIZES[0]
    sizes = SHORT_CONTEXT_CHUNK_SIZES if short else AI4RAG_CHUNK_SIZES
    overlaps = SHORT_CONTEXT_CHUNK_OVERLAPS if short else AI4RAG_CHUNK_OVERLAPS
    values: dict[str, tuple[Any, ...]] = {
        "chunking_method": DEFAULT_CHUNKING_METHODS,
        "chunk_size": sizes,
        "chunk_overlap": overlaps,
        "embedding_model": tuple(lengths),
        "number_of_chunks": DEFAULT_NUMBER_OF_CHUNKS,
        "search_mode": DEFAULT_SEARCH_MODES,
        "ranker_strategy": DEFAULT_RANKER_STRATEGIES,
        "ranker_k": DEFAULT_RANKER_K,
        "ranker_alpha": DEFAULT_RANKER_ALPHA,
        "foundation_model": tuple(foundation_models),
        "vector_store": tuple(vector_stores),
        "system_message_text": (DEFAULT_SYSTEM_MESSAGE,),
        "context_template_text": (DEFAULT_CONTEXT_TEMPLATE,),
        "user_message_text": (DEFAULT_USER_MESSAGE,),
        "reranker": DEFAULT_RERANKERS,
        "retrieval_depth": DEFAULT_RETRIEVAL_DEPTH,
    }
    return values


__all__ = [
    "AI4RAG_CHUNK_OVERLAPS",
    "AI4RAG_CHUNK_SIZES",
    "DEFAULT_CHUNKING_METHODS",
    "DEFAULT_NUMBER_OF_CHUNKS",
    "DEFAULT_RANKER_ALPHA",
    "DEFAULT_RANKER_K",
    "DEFAULT_RANKER_STRATEGIES",
    "DEFAULT_RERANKERS",
    "DEFAULT_RETRIEVAL_DEPTH",
    "DEFAULT_SEARCH_MODES",
    "SHORT_CONTEXT_CHUNK_OVERLAPS",
    "SHORT_CONTEXT_CHUNK_SIZES",
    "default_values",
]
