"""Opening a target from its :class:`~core.targets.spec.TargetSpec`, with the settings that
hold what a targets file must not (keys, the default endpoint and database)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import ConfigError
from core.targets.azure_search import AzureSearchTarget
from core.targets.base import QueryVectors, Target
from core.targets.milvus_collection import MilvusCollectionTarget
from core.targets.pgvector_table import PgvectorTableTarget
from core.targets.qdrant import QdrantTarget
from core.targets.spec import TargetSpec
from core.vectorstores.pgvector import PGVectorConfig

if TYPE_CHECKING:
    from core.settings import Settings


def open_target(spec: TargetSpec, settings: Settings, vectors: QueryVectors | None) -> Target:
    """Open the target ``spec`` names: connect, read its schema and check its field mapping.

    Args:
        spec: the target.
        settings: the ``core.settings.Settings`` (the Azure AI Search endpoint and key, the
            PostgreSQL connection when the spec names none).
        vectors: ragtune's query vectors, for dense setups the engine cannot embed itself.

    Raises:
        ConfigError: a bad mapping, or a location neither the spec nor the settings give; the
            message starts with where the target was given (``targets.yaml:3 (target prod)``,
            ``--target``), then names the target and the role and field (``fields.text names
            'body', which the index lacks``).
        TargetError: the engine cannot be reached, refuses, or lacks the index.
    """
    try:
        return _open(spec, settings, vectors)
    except ConfigError as exc:
        if spec.source and not str(exc).startswith(spec.source):
            raise ConfigError(f"{spec.source}: {exc}") from None
        raise


def _open(spec: TargetSpec, settings: Settings, vectors: QueryVectors | None) -> Target:
    """:func:`open_target` without the spec's source in its errors."""
    if spec.kind == "azure-search":
        endpoint = spec.location or settings.search_endpoint
        if not endpoint:
            raise ConfigError(f"target {spec.name}: no Azure AI Search endpoint: give endpoint in the targets file, "
                              "azure-search:ENDPOINT#INDEX, or set RAGTUNE_SEARCH_ENDPOINT")
        return AzureSearchTarget(spec.name, endpoint, spec.index, settings.search_credential(spec.auth),
                                 fields=spec.fields, vectors=vectors)
    if spec.kind == "pgvector":
        config = PGVectorConfig(dsn=spec.location) if spec.location else settings.pgvector
        return PgvectorTableTarget(spec.name, config, spec.index, fields=spec.fields, vectors=vectors)
    if spec.kind == "qdrant":
        return QdrantTarget(spec.name, spec.location, spec.index, fields=spec.fields, vectors=vectors)
    if spec.kind == "milvus":
        return MilvusCollectionTarget(spec.name, spec.location, spec.index, fields=spec.fields, vectors=vectors,
                                      token=settings.milvus_token or "")
    raise ConfigError(f"target {spec.name}: unknown kind {spec.kind!r}")


__all__ = ["open_target"]
