"""Settings from the environment."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.models import LocalEmbeddingModel, OpenAIEmbeddingModel
from core.settings import Settings
from core.vectorstores import MilvusConfig, MilvusLiteConfig


def test_defaults_are_local_and_milvus_lite(tmp_path):
    s = Settings.from_env({})
    assert s.out_dir == "ragtune-out" and s.embedding_provider == "local"
    assert isinstance(s.embedding_model(), LocalEmbeddingModel)
    cfg = s.vector_store_config(tmp_path)
    assert isinstance(cfg, MilvusLiteConfig) and cfg.path == str(tmp_path / "milvus.db")


def test_openai_compatible_endpoint():
    s = Settings.from_env({
        "RAGTUNE_EMBEDDING_PROVIDER": "openai", "RAGTUNE_EMBEDDING_MODEL": "nomic-embed-text",
        "RAGTUNE_EMBEDDING_BASE_URL": "http://localhost:11434/v1", "OPENAI_API_KEY": "sk-secret",
        "RAGTUNE_EMBEDDING_DIMENSIONS": "256",
    })
    model = s.embedding_model()
    assert isinstance(model, OpenAIEmbeddingModel)
    assert model.model_id == "openai:localhost:11434/nomic-embed-text@256"
    assert "sk-secret" not in repr(s)


def test_azure_needs_an_endpoint():
    with pytest.raises(ConfigError, match="AZURE_OPENAI_ENDPOINT"):
        Settings.from_env({"RAGTUNE_EMBEDDING_PROVIDER": "azure"}).embedding_model()
    s = Settings.from_env({"RAGTUNE_EMBEDDING_PROVIDER": "azure", "AZURE_OPENAI_ENDPOINT": "https://x.openai.azure.com",
                           "AZURE_OPENAI_API_KEY": "k"})
    assert s.embedding_model().azure_api_version == "2024-10-21"


def test_milvus_server_and_bad_values(tmp_path):
    s = Settings.from_env({"RAGTUNE_MILVUS_URI": "http://127.0.0.1:19530", "RAGTUNE_MILVUS_TOKEN": "root:Milvus"})
    assert s.vector_store_config(tmp_path) == MilvusConfig("http://127.0.0.1:19530", "root:Milvus", "")
    assert "root:Milvus" not in repr(s)
    with pytest.raises(ConfigError, match="RAGTUNE_EMBEDDING_PROVIDER"):
        Settings.from_env({"RAGTUNE_EMBEDDING_PROVIDER": "cohere"})
    with pytest.raises(ConfigError, match="RAGTUNE_EMBEDDING_DIMENSIONS"):
        Settings.from_env({"RAGTUNE_EMBEDDING_DIMENSIONS": "big"})
