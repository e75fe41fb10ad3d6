"""Embedding models (OpenAI-compatible and a local offline default) and the embedding cache."""

from core.models.cache import CachedChatModel, CachedEmbeddingModel, EmbeddingCache
from core.models.chat import ChatModel, EmptyReplyError, OpenAIChatModel, check_messages
from core.models.embeddings import (
    LOCAL_MODEL_ID,
    MINILM_SHA256,
    EmbeddingModel,
    LocalEmbeddingModel,
    OpenAIEmbeddingModel,
    local_model_path,
    text_sha256,
)

__all__ = [
    "CachedChatModel", "CachedEmbeddingModel", "EmbeddingCache", "EmbeddingModel", "LocalEmbeddingModel", "OpenAIEmbeddingModel",
    "LOCAL_MODEL_ID", "MINILM_SHA256", "local_model_path", "text_sha256",
    "ChatModel", "EmptyReplyError", "OpenAIChatModel", "check_messages",
]
