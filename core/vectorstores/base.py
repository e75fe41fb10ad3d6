"""The ``VectorStore`` protocol, search settings and the retrieved-chunk type."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, Protocol, Sequence, runtime_checkable

import numpy as np

from core.chunking.base import Chunk
from core.errors import ConfigError

SearchMode = Literal["vector", "hybrid", "keyword"]
RankerStrategy = Literal["rrf", "weighted"]

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")


@dataclass(frozen=True)
class RetrievedChunk:
    """A chunk returned by a search, with its score.

    Attributes:
        chunk: the chunk (text, id, metadata).
        score: higher is better. ``vector``: cosine similarity in [-1, 1]; ``keyword``: BM25
            score (>= 0); ``hybrid``: the fused score (RRF: sum of 1/(k + rank); weighted: in [0, 1]).
        rank: 1-based rank in the result list.
    """

    chunk: Chunk
    score: float
    rank: int


@dataclass(frozen=True)
class SearchSetup:
    """How to search: mode, fusion and its parameters.

    Attributes:
        search_mode: ``"vector"`` (dense only), ``"hybrid"`` (dense + BM25, fused) or
            ``"keyword"`` (BM25 only).
        ranker_strategy: fusion for hybrid search, ``"rrf"`` or ``"weighted"``.
        ranker_k: RRF's k (>= 1), used with ``"rrf"``.
        ranker_alpha: weight of the dense score in [0, 1] with ``"weighted"``
            (the BM25 score gets ``1 - alpha``).

    Raises:
        ConfigError: an unknown mode or strategy, or a parameter out of range.
    """

    search_mode: SearchMode = "vector"
    ranker_strategy: RankerStrategy = "rrf"
    ranker_k: int = 60
    ranker_alpha: float = 0.5

    def __post_init__(self) -> None:
        if self.search_mode not in ("vector", "hybrid", "keyword"):
            raise ConfigError(f"search_mode must be 'vector', 'hybrid' or 'keyword', got {self.search_mode!r}")
        if self.ranker_strategy not in ("rrf", "weighted"):
            raise ConfigError(f"ranker_strategy must be 'rrf' or 'weighted', got {self.ranker_strategy!r}")
        if int(self.ranker_k) < 1:
            raise ConfigError(f"ranker_k must be at least 1, got {self.ranker_k}")
        if not 0.0 <= float(self.ranker_alpha) <= 1.0:
            raise ConfigError(f"ranker_alpha must be between 0 and 1, got {self.ranker_alpha}")

    @property
    def name(self) -> str:
        """A short readable name: ``vector``, ``keyword``, ``hybrid-rrf-k60``, ``hybrid-weighted-a0.5``."""
        if self.search_mode != "hybrid":
            return self.search_mode
        if self.ranker_strategy == "rrf":
            return f"hybrid-rrf-k{self.ranker_k}"
        return f"hybrid-weighted-a{self.ranker_alpha:g}"

    def to_dict(self) -> dict[str, Any]:
        """Return the parameters that apply to this mode (JSON-serialisable)."""
        out: dict[str, Any] = {"search_mode": self.search_mode}
        if self.search_mode == "hybrid":
            out["ranker_strategy"] = self.ranker_strategy
            if self.ranker_strategy == "rrf":
                out["ranker_k"] = self.ranker_k
            else:
                out["ranker_alpha"] = self.ranker_alpha
        return out


@runtime_checkable
class VectorStore(Protocol):
    """A collection of chunks with dense and keyword search.

    The query is embedded inside the store with the store's embedding model. A store built
    with ``keyword_index=False`` creates vector-only collections (no BM25 / full-text index;
    keyword and hybrid searches on them raise ``StoreError``). These are the eight methods
    callers use; the contract suite (``tests/integration/test_vectorstore_contract.py``)
    runs every implementation through them.
    """

    collection_name: str

    def exists(self) -> bool:
        """True when the collection exists (the first call opens the connection, so a store
        that cannot be reached fails here)."""
        ...

    def add_documents(self, chunks: Sequence[Chunk], *, vectors: np.ndarray | None = None) -> int:
        """Upsert chunks by ``chunk_id``, embedding them unless ``vectors`` (float32
        ``(len(chunks), dim)``) are given; creates the collection when missing. Returns how
        many were written."""
        ...

    def flush(self) -> None:
        """Make what was written searchable with its indexes (call once after the last add)."""
        ...

    def search(
        self,
        query: str,
        k: int = 10,
        search_mode: SearchMode = "vector",
        ranker_strategy: RankerStrategy = "rrf",
        ranker_k: int = 60,
        ranker_alpha: float = 0.5,
    ) -> list[RetrievedChunk]:
        """Return at most ``k`` chunks, best first."""
        ...

    def count(self) -> int:
        """Number of chunks in the collection (0 when it does not exist)."""
        ...

    def has_keyword_index(self) -> bool:
        """True when the collection exists with the keyword index keyword and hybrid search need."""
        ...

    def delete_collection(self) -> None:
        """Drop the collection and everything in it (no error when it does not exist)."""
        ...

    def close(self) -> None:
        """Release the connection (a client the caller passed in stays open)."""
        ...


def collection_name_for(params: dict[str, Any], prefix: str = "ragtune") -> str:
    """Return ``<prefix>_<16 hex digits>`` from a hash of the indexing parameters.

    Args:
        params: JSON-serialisable parameters that determine the collection's content
            (corpus fingerprint, chunking, embedding model).

    The same parameters always give the same name, so a collection is reused when they match.
    """
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return f"{prefix}_{hashlib.sha256(canonical.encode('utf-8')).hexdigest()[:16]}"


def validate_collection_name(name: str) -> str:
    """Return ``name`` when it is a valid collection name (letters, digits, ``_``; not starting
    with a digit; at most 255 characters).

    Raises:
        ConfigError: the name has characters vector stores refuse.
    """
    if not _NAME_RE.match(name):
        raise ConfigError(
            f"collection name {name!r} is invalid: use letters, digits and '_', start with a letter or '_', "
            "at most 255 characters"
        )
    return name
