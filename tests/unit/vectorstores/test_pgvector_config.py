"""PGVectorConfig: reading the environment, connection strings, no password in messages."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.vectorstores.pgvector import PGVectorConfig


def test_config_from_env_and_conninfo():
    cfg = PGVectorConfig.from_env({
        "RAGTUNE_PG_HOST": "db.example", "RAGTUNE_PG_PORT": "6543", "RAGTUNE_PG_USER": "rag",
        "RAGTUNE_PG_PASSWORD": "pw", "RAGTUNE_PG_DB": "ragdb", "RAGTUNE_PG_SCHEMA": "eval",
    })
    assert (cfg.dsn, cfg.host, cfg.port, cfg.user, cfg.dbname, cfg.schema) == (None, "db.example", 6543, "rag", "ragdb", "eval")
    assert "password=pw" in cfg.conninfo() and cfg.describe() == "db.example:6543/ragdb as rag"
    dsn = PGVectorConfig.from_env({"RAGTUNE_PG_DSN": "postgresql://u@h:7/d"})
    assert dsn.conninfo() == "postgresql://u@h:7/d" and dsn.describe() == "h:7/d as u" and dsn.schema == "public"
    assert PGVectorConfig.from_env({}) == PGVectorConfig()
    with pytest.raises(ConfigError, match="RAGTUNE_PG_PORT"):
        PGVectorConfig.from_env({"RAGTUNE_PG_PORT": "abc"})
    with pytest.raises(ConfigError, match="schema"):
        PGVectorConfig.from_env({"RAGTUNE_PG_SCHEMA": "bad schema"})
