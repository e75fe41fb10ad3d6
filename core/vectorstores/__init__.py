"""Vector stores: one ``VectorStore`` protocol; Milvus (Lite file or server) and PostgreSQL with
pgvector; fusion of dense and keyword rankings; choosing a backend from its configuration.

Backend libraries (pymilvus, psycopg) are imported when a store is first used.
"""

from core.vectorstores.base import (
    RetrievedChunk,
    SearchSetup,
    VectorStore,
    collection_name_for,
    validate_collection_name,
)
from core.vectorstores.factory import BACKENDS, backend_name, describe_store, get_vector_store, new_collection_name
from core.vectorstores.fusion import rrf_fuse, weighted_fuse
from core.vectorstores.milvus import MilvusConfig, MilvusLiteConfig, MilvusVectorStore, open_client
from core.vectorstores.pgvector import PGVectorConfig, PGVectorStore

__all__ = [
    "BACKENDS", "MilvusConfig", "MilvusLiteConfig", "MilvusVectorStore", "PGVectorConfig", "PGVectorStore",
    "RetrievedChunk", "SearchSetup", "VectorStore", "backend_name", "describe_store", "collection_name_for", "get_vector_store",
    "new_collection_name", "open_client", "rrf_fuse", "validate_collection_name", "weighted_fuse",
]
