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
    assert s.embedding_model().model_id == "local:bge-small-en-v1.5"
    assert s.reranker().model_id == "local:ms-marco-MiniLM-L-12-v2"  # no settings: the local reranker
    cfg = s.vector_store_config(tmp_path)
    assert isinstance(cfg, MilvusLiteConfig) and cfg.path == str(tmp_path / "milvus.db")


def test_local_models_by_name_and_several_reachable():
    s = Settings.from_env({"RAGTUNE_EMBEDDING_MODEL": "all-MiniLM-L6-v2"})
    assert isinstance(s.embedding_model(), LocalEmbeddingModel)
    assert list(s.embedding_models()) == ["local:all-MiniLM-L6-v2", "local:bge-small-en-v1.5"]
    with pytest.raises(ConfigError, match="^RAGTUNE_EMBEDDING_MODEL: unknown local embedding model 'nope'"):
        Settings.from_env({"RAGTUNE_EMBEDDING_MODEL": "nope"}).embedding_model()


def test_a_model_the_environment_names_that_cannot_be_built_names_the_variable(tmp_path):
    missing = tmp_path / "gone"
    with pytest.raises(ConfigError, match=f"^RAGTUNE_RERANK_MODEL: onnx:{missing}: {missing} is not a folder$"):
        Settings.from_env({"RAGTUNE_RERANK_MODEL": f"onnx:{missing}"}).reranker()
    with pytest.raises(ConfigError, match=f"^RAGTUNE_EMBEDDING_MODEL: onnx:{missing}: {missing} is not a folder$"):
        Settings.from_env({"RAGTUNE_EMBEDDING_MODEL": f"onnx:{missing}"}).embedding_model()


def test_rerank_settings():
    from core.models.rerank import HttpReranker

    s = Settings.from_env({"RAGTUNE_RERANK_PROVIDER": "jina", "RAGTUNE_RERANK_MODEL": "jina-reranker-v2",
                           "RAGTUNE_RERANK_BASE_URL": "https://api.jina.ai/v1", "RAGTUNE_RERANK_API_KEY": "k-secret"})
    model = s.reranker()
    assert isinstance(model, HttpReranker) and model.model_id == "jina:api.jina.ai/jina-reranker-v2"
    assert "k-secret" not in repr(s)
    assert Settings.from_env({"RAGTUNE_RERANK_PROVIDER": "none"}).reranker() is None
    with pytest.raises(ConfigError, match="RAGTUNE_RERANK_PROVIDER must be one of"):
        Settings.from_env({"RAGTUNE_RERANK_PROVIDER": "magic"})
    with pytest.raises(ConfigError, match="needs RAGTUNE_RERANK_MODEL"):
        Settings.from_env({"RAGTUNE_RERANK_PROVIDER": "cohere"}).reranker()
    with pytest.raises(ConfigError, match="needs RAGTUNE_RERANK_BASE_URL"):
        Settings.from_env({"RAGTUNE_RERANK_PROVIDER": "tei", "RAGTUNE_RERANK_MODEL": "m"}).reranker()


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


def test_chat_and_judge_models():
    from core.models.chat import OpenAIChatModel

    assert Settings.from_env({}).chat_model() is None  # the extractive baseline answers
    assert Settings.from_env({}).judge_model() is None
    s = Settings.from_env({
        "RAGTUNE_CHAT_PROVIDER": "openai", "RAGTUNE_CHAT_MODEL": "llama3", "RAGTUNE_CHAT_BASE_URL": "http://localhost:11434/v1",
        "RAGTUNE_CHAT_API_KEY": "chat-secret", "RAGTUNE_JUDGE_MODEL": "judge",
    })
    chat, judge = s.chat_model(), s.judge_model()
    assert isinstance(chat, OpenAIChatModel) and chat.model_id == "openai:localhost:11434/llama3"
    assert judge.model_id == "openai:localhost:11434/judge"  # the chat endpoint, another model
    assert s.judge_model("other").model_id == "openai:localhost:11434/other"
    assert "chat-secret" not in repr(s)
    with pytest.raises(ConfigError, match="RAGTUNE_CHAT_MODEL"):
        Settings.from_env({"RAGTUNE_CHAT_PROVIDER": "openai"}).chat_model()
    with pytest.raises(ConfigError, match="RAGTUNE_CHAT_PROVIDER"):
        Settings.from_env({"RAGTUNE_CHAT_PROVIDER": "anthropic"})


def test_vector_store_choice(tmp_path):
    from core.vectorstores import PGVectorConfig

    assert Settings.from_env({"RAGTUNE_VECTOR_STORE": "pgvector", "RAGTUNE_PG_DSN": "postgresql://u@h/d"}) \
        .vector_store_config(tmp_path) == PGVectorConfig(dsn="postgresql://u@h/d")
    assert isinstance(Settings.from_env({}).vector_store_config(tmp_path, "milvus-lite"), MilvusLiteConfig)
    with pytest.raises(ConfigError, match="RAGTUNE_MILVUS_URI"):
        Settings.from_env({"RAGTUNE_VECTOR_STORE": "milvus"})
    with pytest.raises(ConfigError, match="RAGTUNE_VECTOR_STORE"):
        Settings.from_env({"RAGTUNE_VECTOR_STORE": "faiss"})
    assert Settings.from_env({"RAGTUNE_OUT_DIR": "  "}).out_dir == "ragtune-out"


def test_every_configurable_vector_store(tmp_path):
    configs = Settings.from_env({}).vector_store_configs(tmp_path)
    assert sorted(configs) == ["milvus-lite", "pgvector"]  # milvus only with RAGTUNE_MILVUS_URI
    with_uri = Settings.from_env({"RAGTUNE_MILVUS_URI": "http://127.0.0.1:19530"}).vector_store_configs(tmp_path)
    assert with_uri["milvus"] == MilvusConfig("http://127.0.0.1:19530", "", "")


def test_milvus_configs_from_env():
    assert MilvusLiteConfig.from_env({}, "out").path == "out/milvus.db"
    assert MilvusLiteConfig.from_env({"RAGTUNE_MILVUS_LITE_PATH": "/data/x.db"}).path == "/data/x.db"
    cfg = MilvusConfig.from_env({"RAGTUNE_MILVUS_URI": "http://h:19530", "RAGTUNE_MILVUS_TOKEN": "root:secret"})
    assert cfg == MilvusConfig("http://h:19530", "root:secret", "") and "secret" not in repr(cfg)
    with pytest.raises(ConfigError, match="RAGTUNE_MILVUS_URI"):
        MilvusConfig.from_env({})


def test_the_app_settings_and_the_price_table(tmp_path):
    from core.settings import AppSettings, ModelPrice, Settings

    s = Settings.from_env({"RAGTUNE_APP_URL": " https://app/chat ", "RAGTUNE_APP_API_KEY": "secret-key",
                           "RAGTUNE_APP_CONCURRENCY": "8", "RAGTUNE_APP_REQUESTS_PER_MINUTE": "90",
                           "RAGTUNE_APP_DEADLINE_S": "600"})
    assert s.app == AppSettings(url="https://app/chat", api_key="secret-key", concurrency=8, requests_per_minute=90.0,
                                deadline_s=600.0)
    assert "secret-key" not in repr(s)
    for name, value in (("RAGTUNE_APP_CONCURRENCY", "0"), ("RAGTUNE_APP_TIMEOUT_S", "soon"),
                        ("RAGTUNE_APP_MAX_ATTEMPTS", "2.5"), ("RAGTUNE_APP_KEY_HEADER", "Api Key")):
        with pytest.raises(ConfigError, match=name):
            Settings.from_env({name: value})
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpt-4o-mini: {input: 0.15, output: 0.6}\n", encoding="utf-8")
    assert Settings.from_env({"RAGTUNE_PRICES_FILE": str(prices)}).prices == {"gpt-4o-mini": ModelPrice(0.15, 0.6)}
    with pytest.raises(ConfigError, match="model 'gpt' needs"):
        Settings.from_env({"RAGTUNE_PRICES": '{"gpt": {"input": -1, "output": 2}}'})
    with pytest.raises(ConfigError, match="RAGTUNE_PRICES_FILE .* cannot be read"):
        Settings.from_env({"RAGTUNE_PRICES_FILE": str(tmp_path / "missing.json")})
