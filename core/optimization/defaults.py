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
    from core.rag.template import DEFAULT_CONTEXT_TEMPLATE, DEFAULT_SYSTEM_MESSAGE, DEFAULT_USER_MESSAGE

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


def product_defaults(embedding_model: str | None = None) -> dict[str, Any]:
    """The value of each parameter a pipeline takes when the user sets nothing: what
    ``ragtune evaluate`` builds and searches by default (recursive chunking of
    ``core.chunking``'s default size and overlap, ``core.rag.template.NUMBER_OF_CHUNKS``
    chunks, dense search, no reranker, the first stage's default depth) and the configured
    embedding model (``embedding_model``; None: none preferred).

    Parameters not named (fusion, foundation model, prompts, vector store) take the space's
    first value in :func:`default_configuration`.
    """
    # the optimizer stays pure: the defaults' homes are read when a default configuration is made
    from core.chunking._common import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
    from core.rag.template import NUMBER_OF_CHUNKS

    out: dict[str, Any] = {
        "chunking_method": DEFAULT_CHUNKING_METHODS[0], "chunk_size": DEFAULT_CHUNK_SIZE,
        "chunk_overlap": DEFAULT_CHUNK_OVERLAP, "number_of_chunks": NUMBER_OF_CHUNKS,
        "search_mode": DEFAULT_SEARCH_MODES[0], "ranker_strategy": DEFAULT_RANKER_STRATEGIES[0],
        "ranker_k": DEFAULT_RANKER_K[0], "reranker": NO_RERANKER, "retrieval_depth": DEFAULT_RETRIEVAL_DEPTH[0],
    }
    if embedding_model is not None:
        out["embedding_model"] = embedding_model
    return out


def default_configuration(space: Any, embedding_model: str | None = None) -> Any:
    """The space's configuration nearest the product's defaults (:func:`product_defaults`):
    where SMAC starts (it evaluates the default configuration first), and a user's baseline.

    Each parameter takes its default when the space holds it; a numeric default the space
    lacks takes the space's nearest value (the smaller on a tie); any other parameter the
    space's first value. When that combination breaks a rule, the valid configuration that
    agrees with it on the most parameters is taken (the first in the space's order on a tie).

    Args:
        space: the ``core.optimization.space.SearchSpace``.
        embedding_model: the configured embedding model's id (preferred when the space holds it).

    Returns:
        A valid ``Configuration`` of ``space``.

    References:
        Hutter, F., Hoos, H. H. and Leyton-Brown, K. (2011). Sequential Model-Based Optimization
        for General Algorithm Configuration (SMAC). LION 5 (the default configuration is the
        incumbent before the search starts).
    """
    return _nearest_configuration(space, product_defaults(embedding_model))


def reranked_configuration(space: Any, embedding_model: str | None = None) -> Any | None:
    """The product's default configuration with a reranker: the space's first ``reranker``
    other than ``none``, fetching the space's largest ``retrieval_depth`` for it, every other
    parameter as :func:`default_configuration` chooses (nearest valid configuration the same
    way). This is where ``screen`` starts (``core.optimizers.SCREEN``): a cross-encoder
    reranking a deeper first-stage list is the strongest known prior for ranking quality.

    Args:
        space: the ``core.optimization.space.SearchSpace``.
        embedding_model: the configured embedding model's id (preferred when the space holds it).

    Returns:
        A valid ``Configuration`` of ``space``, or None when the space holds no reranker (or
        no valid configuration uses one).

    References:
        Nogueira, R. and Cho, K. (2019). Passage Re-ranking with BERT. arXiv:1901.04085.
        Thakur, N. et al. (2021). BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of
        Information Retrieval Models. NeurIPS Datasets and Benchmarks (BM25 followed by a
        cross-encoder is the strongest zero-shot ranking across its 18 data sets).
    """
    params = {p.name: list(p.values) for p in space.parameters}
    rerankers = [v for v in params.get("reranker", []) if v != NO_RERANKER]
    if not rerankers:
        return None
    wanted = dict(product_defaults(embedding_model), reranker=rerankers[0])
    depths = [v for v in params.get("retrieval_depth", []) if isinstance(v, int) and not isinstance(v, bool)]
    if depths:
        wanted["retrieval_depth"] = max(depths)
    config = _nearest_configuration(space, wanted)
    return config if config.get("reranker") not in (None, NO_RERANKER) else None


#: How an experiment's search may start (``ExperimentSpec.start``): ``default``, the product's
#: default configuration (:func:`default_configuration`); ``reranked``, the same with a
#: reranker (:func:`reranked_configuration`; none when the space holds no reranker).
STARTS: tuple[str, ...] = ("default", "reranked")


def start_configuration(space: Any, start: str | None, embedding_model: str | None = None) -> Any | None:
    """The configuration a search evaluates first for ``start`` (one of :data:`STARTS`, or None
    for none), or None when there is none.

    Raises:
        ConfigError: an unknown ``start``.
    """
    if start is None:
        return None
    if start == "default":
        return default_configuration(space, embedding_model)
    if start == "reranked":
        return reranked_configuration(space, embedding_model)
    from core.errors import ConfigError

    raise ConfigError(f"start must be one of {', '.join(STARTS)} or none, got {start!r}")


def _nearest_configuration(space: Any, wanted: Mapping[str, Any]) -> Any:
    """The valid configuration of ``space`` nearest ``wanted`` (parameter -> value), by the rule
    :func:`default_configuration` documents."""
    values: dict[str, Any] = {}
    for p in space.parameters:
        choices = list(p.values)
        default = wanted.get(p.name)
        if default in choices:
            values[p.name] = default
        elif isinstance(default, (int, float)) and not isinstance(default, bool) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in choices):
            values[p.name] = min(choices, key=lambda v: (abs(v - default), v))
        else:
            values[p.name] = choices[0]
    target = space.configuration(values, check=False)  # parameters that do not apply: the placeholder
    if space.contains(target):
        return space.valid_configurations()[space.index_of(target)]

    def agreement(config: Any) -> int:
        return sum(1 for name, value in target.items() if config.get(name) == value)

    return max(space.valid_configurations(), key=agreement)  # the first of the most agreeing


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
    "default_configuration",
    "default_values",
    "STARTS",
    "product_defaults",
    "reranked_configuration",
    "start_configuration",
]
