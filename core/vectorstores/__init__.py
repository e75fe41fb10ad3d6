"""Vector stores: one ``VectorStore`` protocol; Milvus (Lite file or server)."""

from core.vectorstores.base import (
    RetrievedChunk,
    SearchSetup,
    VectorStore,
    collection_name_for,
    validate_collection_name,
)
from core.vectorstores.milvus import MilvusConfig, MilvusLiteConfig, MilvusVectorStore, open_client

__all__ = [
    "MilvusConfig", "MilvusLiteConfig", "MilvusVectorStore", "RetrievedChunk", "SearchSetup", "VectorStore",
    "collection_name_for", "open_client", "validate_collection_name",
]
