"""One reader that turns a configuration (the optimizer's parameter name -> value) into the
settings of a RAG pipeline, with every default in one home.

A configuration comes from the search space (``core.optimization``), a stored experiment or an
evaluation message; a parameter that does not apply holds a placeholder
(:data:`NOT_APPLICABLE`). :meth:`PipelineSettings.of` reads every parameter once, with the
defaults below, so the evaluation of a configuration (``core.evaluation.single``), its search
depth and its reranker read the same values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from core.errors import ConfigError
from core.rag.template import NUMBER_OF_CHUNKS
from core.vectorstores.base import SearchSetup
from core.vectorstores.rerank import RERANK_DEPTH

#: The placeholder a parameter takes where it does not apply (see ``core.optimization``).
NOT_APPLICABLE = (None, "n/a")
#: Name of the foundation model that needs no language model (see ``core.rag.ExtractiveGenerator``).
EXTRACTIVE = "extractive"
#: The chunking method of a configuration that names none.
DEFAULT_CHUNKING_METHOD = "recursive"
#: The chunk size (tokens) handed to a chunker where the size does not apply (hierarchical).
PLACEHOLDER_CHUNK_SIZE = 256
#: The search mode of a configuration that names none.
DEFAULT_SEARCH_MODE = "vector"
#: The fusion of a hybrid configuration that names none.
DEFAULT_RANKER_STRATEGY = "rrf"
#: The prompt template parameters, in the order they are handed to the generator.
TEMPLATE_PARAMETERS = ("system_message_text", "context_template_text", "user_message_text")


def applies(value: Any) -> bool:
    """True when ``value`` is not the placeholder of a parameter that does not apply."""
    return value not in NOT_APPLICABLE


@dataclass(frozen=True)
class PipelineSettings:
    """The settings of one RAG pipeline, read from a configuration.

    Attributes:
        chunking_method: the chunker (``core.chunking``), default :data:`DEFAULT_CHUNKING_METHOD`.
        chunk_size: tokens per chunk (:data:`PLACEHOLDER_CHUNK_SIZE` where it does not apply).
        chunk_overlap: tokens of overlap (0 where it does not apply).
        embedding_model: the embedding model's id (as the space names it).
        vector_store: the backend the configuration names, or None for the run's own.
        number_of_chunks: chunks handed to the generator (``NUMBER_OF_CHUNKS`` by default).
        search_mode: ``vector``, ``keyword`` or ``hybrid``.
        ranker_strategy: ``rrf`` or ``weighted`` (hybrid only; else None).
        ranker_k: RRF's k (hybrid only, when given).
        ranker_alpha: the weighted fusion's alpha (hybrid only, when given).
        reranker: the reranker's id, or None for no reranker (``none`` or not applicable).
        retrieval_depth: what the first stage fetches before the reranker (``RERANK_DEPTH`` by
            default; read only with a reranker).
        foundation_model: the generator's id, :data:`EXTRACTIVE` by default.
        templates: the prompt templates the configuration sets, as ``(parameter, text)`` pairs.
    """

    chunking_method: str = DEFAULT_CHUNKING_METHOD
    chunk_size: int = PLACEHOLDER_CHUNK_SIZE
    chunk_overlap: int = 0
    embedding_model: str = ""
    vector_store: str | None = None
    number_of_chunks: int = NUMBER_OF_CHUNKS
    search_mode: str = DEFAULT_SEARCH_MODE
    ranker_strategy: str | None = None
    ranker_k: int | None = None
    ranker_alpha: float | None = None
    reranker: str | None = None
    retrieval_depth: int = RERANK_DEPTH
    foundation_model: str = EXTRACTIVE
    templates: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, configuration: Mapping[str, Any]) -> "PipelineSettings":
        """Read ``configuration`` (parameter name -> value; placeholders where a parameter does
        not apply).

        Raises:
            ConfigError: a number that is not a number (names the parameter).
        """
        size, overlap = configuration.get("chunk_size"), configuration.get("chunk_overlap")
        mode = configuration.get("search_mode", DEFAULT_SEARCH_MODE)
        hybrid = mode == "hybrid"
        strategy = configuration.get("ranker_strategy")
        reranker = configuration.get("reranker")
        with_reranker = applies(reranker) and reranker != "none"
        depth = configuration.get("retrieval_depth")
        store = configuration.get("vector_store")
        return cls(
            chunking_method=configuration.get("chunking_method", DEFAULT_CHUNKING_METHOD),
            chunk_size=_number(int, "chunk_size", size) if applies(size) else PLACEHOLDER_CHUNK_SIZE,
            chunk_overlap=_number(int, "chunk_overlap", overlap) if applies(overlap) else 0,
            embedding_model=str(configuration.get("embedding_model")),
            vector_store=None if store is None or not applies(store) else str(store),
            number_of_chunks=_number(int, "number_of_chunks", configuration.get("number_of_chunks", NUMBER_OF_CHUNKS)),
            search_mode=mode,
            ranker_strategy=(strategy if applies(strategy) else DEFAULT_RANKER_STRATEGY) if hybrid else None,
            ranker_k=(_number(int, "ranker_k", configuration["ranker_k"])
                      if hybrid and applies(configuration.get("ranker_k")) else None),
            ranker_alpha=(_number(float, "ranker_alpha", configuration["ranker_alpha"])
                          if hybrid and applies(configuration.get("ranker_alpha")) else None),
            reranker=str(reranker) if with_reranker else None,
            retrieval_depth=(_number(int, "retrieval_depth", depth) if with_reranker and applies(depth)
                             else RERANK_DEPTH),
            foundation_model=str(configuration.get("foundation_model", EXTRACTIVE)),
            templates=tuple((name, configuration[name]) for name in TEMPLATE_PARAMETERS
                            if applies(configuration.get(name))),
        )

    def search_setup(self) -> SearchSetup:
        """The first stage's ``SearchSetup`` (mode, and for hybrid search its fusion).

        Raises:
            ConfigError: bad search settings (as ``SearchSetup``).
        """
        kwargs: dict[str, Any] = {}
        if self.search_mode == "hybrid":
            kwargs["ranker_strategy"] = self.ranker_strategy
            if self.ranker_k is not None:
                kwargs["ranker_k"] = self.ranker_k
            if self.ranker_alpha is not None:
                kwargs["ranker_alpha"] = self.ranker_alpha
        return SearchSetup(self.search_mode, **kwargs)

    @property
    def first_stage_depth(self) -> int:
        """What the first stage fetches: ``number_of_chunks``, or with a reranker the larger of
        it and ``retrieval_depth``."""
        if self.reranker is None:
            return self.number_of_chunks
        return max(self.number_of_chunks, self.retrieval_depth)


def _number(kind: type, name: str, value: Any) -> Any:
    """``kind(value)``, or a ConfigError naming the parameter."""
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"configuration parameter {name} must be a number, got {value!r}") from None
