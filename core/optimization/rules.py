"""When a parameter applies, and the rules that make a configuration valid.

Applicability (a parameter that does not apply is held at the placeholder
:data:`~core.optimization.parameters.PLACEHOLDER`, ``None``, JSON ``null``, so equivalent
configurations are one configuration):

- ``chunk_size`` applies to every chunking method but ``hierarchical`` (which makes one chunk
  per document element): ``core.chunking.SIZED_METHODS``;
- ``chunk_overlap`` applies to ``recursive``, ``fixed`` and ``contextual`` only
  (``core.chunking.OVERLAP_METHODS``; the others take no overlap);
- ``ranker_strategy`` applies to ``search_mode="hybrid"`` only;
- ``ranker_k`` applies to hybrid search with ``ranker_strategy="rrf"`` only;
- ``ranker_alpha`` applies to hybrid search with ``ranker_strategy="weighted"`` only;
- ``retrieval_depth`` applies when a reranker is set.

Rules (a configuration breaking one is removed):

- ``overlap_below_half_chunk``: ``chunk_size > 2 * chunk_overlap``;
- ``chunk_fits_embedding_model``: ``chunk_size <=`` the embedding model's context length in
  tokens, when that length is known.

The placeholder is ``None`` rather than a sentinel value (ai4rag uses ``""``, ``0`` and ``1``)
so it cannot be mistaken for a real setting and keeps each column's type (an integer or
``null``). Runners pass a neutral value where a callee needs one (for example
``chunk_overlap=0`` for the hybrid chunker).

References:
    IBM ai4rag search space rules (``AI4RAGSearchSpace``): https://github.com/IBM/ai4rag
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from core.chunking import OVERLAP_METHODS, SIZED_METHODS
from core.optimization.parameters import NO_RERANKER

APPLIES_WHEN: dict[str, str] = {
    "chunk_size": f"chunking_method is one of {', '.join(SIZED_METHODS)}",
    "chunk_overlap": f"chunking_method is one of {', '.join(OVERLAP_METHODS)}",
    "ranker_strategy": "search_mode is hybrid",
    "ranker_k": "search_mode is hybrid and ranker_strategy is rrf",
    "ranker_alpha": "search_mode is hybrid and ranker_strategy is weighted",
    "retrieval_depth": "reranker is not none",
}

UNITS: dict[str, str] = {"chunk_size": "tokens", "chunk_overlap": "tokens"}


def applies(name: str, values: Mapping[str, Any]) -> bool:
    """Return whether parameter ``name`` applies, given the values of the parameters before it.

    Args:
        name: a parameter name (see :data:`PARAMETER_NAMES`).
        values: values of (at least) the parameters ``name`` depends on.

    Returns:
        False when the parameter must be held at :data:`PLACEHOLDER`.
    """
    if name == "chunk_size":
        return values.get("chunking_method") in SIZED_METHODS
    if name == "chunk_overlap":
        return values.get("chunking_method") in OVERLAP_METHODS
    if name == "ranker_strategy":
        return values.get("search_mode") == "hybrid"
    if name == "ranker_k":
        return values.get("search_mode") == "hybrid" and values.get("ranker_strategy") == "rrf"
    if name == "ranker_alpha":
        return values.get("search_mode") == "hybrid" and values.get("ranker_strategy") == "weighted"
    if name == "retrieval_depth":
        return values.get("reranker", NO_RERANKER) != NO_RERANKER
    return True


@dataclass(frozen=True)
class Rule:
    """A validity rule over a few parameters.

    Attributes:
        name: short id (``overlap_below_half_chunk``).
        description: the rule in words, for messages.
        parameters: the parameters it reads; it is checked once all are set.
        check: ``check(values, context_lengths) -> bool``; True keeps the configuration.
            Placeholders (``None``) always pass.
    """

    name: str
    description: str
    parameters: tuple[str, ...]
    check: Callable[[Mapping[str, Any], Mapping[str, int | None]], bool]


def _overlap_below_half_chunk(values: Mapping[str, Any], _: Mapping[str, int | None]) -> bool:
    size, overlap = values.get("chunk_size"), values.get("chunk_overlap")
    return size is None or overlap is None or size > 2 * overlap


def _chunk_fits_embedding_model(values: Mapping[str, Any], lengths: Mapping[str, int | None]) -> bool:
    size = values.get("chunk_size")
    limit = lengths.get(values.get("embedding_model"))  # type: ignore[arg-type]
    return size is None or limit is None or size <= limit


RULES: tuple[Rule, ...] = (
    Rule(
        "overlap_below_half_chunk",
        "chunk_size > 2 * chunk_overlap",
        ("chunk_size", "chunk_overlap"),
        _overlap_below_half_chunk,
    ),
    Rule(
        "chunk_fits_embedding_model",
        "chunk_size <= the embedding model's context length (when known)",
        ("chunking_method", "chunk_size", "embedding_model"),
        _chunk_fits_embedding_model,
    ),
)



__all__ = ["APPLIES_WHEN", "RULES", "Rule", "UNITS", "applies"]
