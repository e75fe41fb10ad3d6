"""Choosing a vector store from its configuration."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timezone
from typing import TYPE_CHECKING, TypeAlias

from core.errors import ConfigError
from core.vectorstores.base import VectorStore, validate_collection_name
from core.vectorstores.milvus import MilvusConfig, MilvusLiteConfig, MilvusVectorStore
from core.vectorstores.pgvector import PGVectorConfig, PGVectorStore

if TYPE_CHECKING:
    from core.models.embeddings import EmbeddingModel

#: A vector store's configuration: one backend's (see :data:`BACKENDS`).
StoreConfig: TypeAlias = MilvusLiteConfig | MilvusConfig | PGVectorConfig

#: Names of the backends, as ``--vector-store`` and ``RAGTUNE_VECTOR_STORE`` spell them.
BACKENDS = ("milvus-lite", "milvus", "pgvector")


def new_collection_name(now: datetime | None = None, prefix: str = "ragtune") -> str:
    """Return a fresh collection name ``<prefix>_<YYYYmmddHHMMSS>_<8 hex digits>`` (UTC time,
    then a hash of 16 random bytes), valid for every backend."""
    now = now or datetime.now(timezone.utc)
    digest = hashlib.sha256(secrets.token_bytes(16)).hexdigest()[:8]
    return f"{prefix}_{now.strftime('%Y%m%d%H%M%S')}_{digest}"


def backend_name(config: StoreConfig) -> str:
    """Return ``milvus-lite``, ``milvus`` or ``pgvector`` for a store configuration.

    Raises:
        ConfigError: an object that is no known configuration.
    """
    if isinstance(config, MilvusLiteConfig):
        return "milvus-lite"
    if isinstance(config, MilvusConfig):
        return "milvus"
    if type(config).__name__ == "PGVectorConfig":
        return "pgvector"
    raise ConfigError(f"unknown vector store configuration {type(config).__name__}; expected one of {', '.join(BACKENDS)}")


def describe_store(config: StoreConfig) -> str:
    """Where a store lives, for reports and messages, never with credentials: the Milvus Lite
    path, the Milvus URI (and database), or PostgreSQL's ``host:port/db as user`` and schema."""
    backend = backend_name(config)
    if backend == "milvus-lite":
        return str(config.uri)
    if backend == "milvus":
        return config.uri + (f" (database {config.db_name})" if config.db_name else "")
    return f"{config.describe()} (schema {config.schema})"


def get_vector_store(embedding_model: EmbeddingModel, config: StoreConfig, collection_name: str | None = None, *,
                     keyword_index: bool = True) -> VectorStore:
    """Return the vector store for ``config``: ``MilvusVectorStore`` for ``MilvusLiteConfig`` or
    ``MilvusConfig``, ``PGVectorStore`` for ``PGVectorConfig``.

    Args:
        embedding_model: embeds chunks and queries.
        config: the backend's configuration.
        collection_name: the collection; None creates a new name (:func:`new_collection_name`).
        keyword_index: a collection the store creates gets the keyword (BM25 / full-text)
            index that keyword and hybrid search need; False builds it for vector search only.

    Raises:
        ConfigError: unknown configuration or invalid collection name.
    """
    name = validate_collection_name(collection_name or new_collection_name())
    backend = backend_name(config)
    if backend in ("milvus-lite", "milvus"):
        return MilvusVectorStore(embedding_model, config, name, keyword_index=keyword_index)
    return PGVectorStore(embedding_model, config, name, keyword_index=keyword_index)
