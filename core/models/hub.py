"""``hf:ORG/NAME``: embedding models and cross-encoders by Hugging Face id, run through
sentence-transformers from the local Hugging Face cache.

A name is ``hf:`` and a model id (``hf:BAAI/bge-base-en-v1.5``,
``hf:cross-encoder/ms-marco-MiniLM-L-6-v2``), optionally followed by ``@REVISION`` (a
branch, tag or commit: ``hf:BAAI/bge-base-en-v1.5@main``). The model is read from the cache
sentence-transformers and ``huggingface_hub`` share (``$HF_HUB_CACHE``, else
``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``), laid out as the Hub's clients write it::

    models--ORG--NAME/refs/main              the commit ``main`` points at
    models--ORG--NAME/snapshots/<commit>/... the files of that commit

Nothing is downloaded unless the user allows it (``RAGTUNE_ALLOW_MODEL_DOWNLOAD=1`` or
``--allow-download``): a model missing from the cache is then a ``ConfigError`` naming the
model and both ways to allow it, raised without any network request (``huggingface_hub`` is
called with ``local_files_only=True``, which reads only the cache). Allowed, the model's
snapshot is downloaded once (files of other frameworks left out, :data:`DOWNLOAD_IGNORE`) and
then loaded from the cache like any other; ``HF_HUB_OFFLINE=1`` still forbids it, and the
error says so. Loading itself never reaches the network (``local_files_only=True``, from the
snapshot's folder).

What a report records (``describe``): the snapshot's commit (the revision) and the sha256 of
every weight file in it (other frameworks' files left out).

Scores and vectors: an embedding model's vectors are what sentence-transformers'
``encode`` gives (its ``modules.json``: pooling, normalisation), float32; a query is embedded
after the model's ``query`` prompt (``config_sentence_transformers.json``) when it has one. A
cross-encoder's scores are its raw logits (no sigmoid), as the packaged cross-encoder gives,
pairs truncated to the model's window by its tokenizer (longest first).

References:
    Hugging Face cache layout: https://huggingface.co/docs/huggingface_hub/guides/manage-cache ;
    ``huggingface_hub.snapshot_download``; sentence-transformers ``SentenceTransformer`` and
    ``CrossEncoder``: https://sbert.net .
"""

from __future__ import annotations

import fnmatch
import logging
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from core.errors import ConfigError, EmbeddingError, RerankError
from core.models.describe import ModelDescription, files_sha256, hash_weight_files, weight_files
from core.models.onnx_folder import query_prompt, read_pooling
from core.text import plural

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

logger = logging.getLogger(__name__)

#: The prefix of a Hugging Face model name.
HF_PREFIX = "hf:"
#: How a user allows downloads (said in errors; read in ``core.settings``).
ALLOW_DOWNLOAD_HINT = "set RAGTUNE_ALLOW_MODEL_DOWNLOAD=1 or pass --allow-download"
#: Files of other frameworks and runtimes a download leaves out, and the weights hashed skip.
DOWNLOAD_IGNORE: tuple[str, ...] = (
    "*.h5", "*.msgpack", "*.ot", "tf_model*", "flax_model*", "rust_model*", "onnx/*", "openvino/*", "*.onnx",
    "*.onnx_data", "coreml/*", "*.mlmodel", "*.tflite", "*.gguf",
)
#: Texts per forward pass of an embedding model, pairs per pass of a cross-encoder.
BATCH_SIZE = 32
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?$")


@dataclass(frozen=True)
class HubName:
    """A parsed ``hf:`` name.

    Attributes:
        repo_id: the Hub id (``BAAI/bge-base-en-v1.5``).
        revision: the branch, tag or commit after ``@``, or None (``main``).
    """

    repo_id: str
    revision: str | None = None

    @property
    def model_id(self) -> str:
        """The id in reports and caches: ``hf:REPO_ID`` (and ``@REVISION`` when named)."""
        return f"{HF_PREFIX}{self.repo_id}" + (f"@{self.revision}" if self.revision else "")


def parse_hf_name(name: str) -> HubName:
    """Parse ``hf:ORG/NAME[@REVISION]``.

    Raises:
        ConfigError: not an ``hf:`` name, or not a valid Hub id (names the name).
    """
    text = name.strip()
    if not text.startswith(HF_PREFIX):
        raise ConfigError(f"{name!r} is not a Hugging Face model name (hf:ORG/NAME)")
    repo_id, _, revision = text[len(HF_PREFIX):].partition("@")
    if not _REPO_ID.match(repo_id) or ".." in repo_id or "--" in repo_id or repo_id.endswith((".", "-")):
        raise ConfigError(f"{name!r}: {repo_id!r} is not a Hugging Face model id (hf:ORG/NAME, for example "
                          "hf:BAAI/bge-base-en-v1.5)")
    if "@" in text[len(HF_PREFIX):] and not revision.strip():
        raise ConfigError(f"{name!r}: nothing after '@'; name a branch, tag or commit, or leave '@' out")
    return HubName(repo_id, revision.strip() or None)


@dataclass(frozen=True)
class HubSnapshot:
    """One model's snapshot in the local cache.

    Attributes:
        name: the model's parsed name.
        path: the snapshot's folder (``.../snapshots/<commit>``).
        commit: the snapshot's commit hash: the revision a report records.
        files: ``(relative path, sha256)`` of each weight file, sorted (other frameworks'
            files, :data:`DOWNLOAD_IGNORE`, left out).
    """

    name: HubName
    path: Path
    commit: str
    files: tuple[tuple[str, str], ...]


def _cache_dir(cache_dir: str | Path | None) -> str:
    from huggingface_hub import constants

    return str(cache_dir) if cache_dir is not None else constants.HF_HUB_CACHE


def _snapshot_folder(name: HubName, allow_download: bool, cache_dir: str | Path | None) -> str:
    """The snapshot's folder from ``snapshot_download`` (reading only the cache unless allowed).

    Raises:
        ConfigError: not in the cache, or the download failed, saying what to do.
    """
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError,
    )

    offline = constants.is_offline_mode()
    where = _cache_dir(cache_dir)
    try:
        return snapshot_download(name.repo_id, revision=name.revision, cache_dir=cache_dir,
                                 local_files_only=not allow_download or offline, ignore_patterns=list(DOWNLOAD_IGNORE))
    except LocalEntryNotFoundError as exc:
        if type(exc).__name__ == "IncompleteSnapshotError":
            raise ConfigError(f"{name.model_id}: its snapshot in the Hugging Face cache ({where}) misses files: "
                              f"{exc}") from None
        revision = f" at revision {name.revision}" if name.revision else ""
        if not allow_download:
            raise ConfigError(
                f"{name.model_id} is not in the Hugging Face cache ({where}){revision}, and models are downloaded "
                f"only when allowed: {ALLOW_DOWNLOAD_HINT} to download it once, or put it in the cache yourself "
                f"(hf download {name.repo_id}) and point HF_HOME or HF_HUB_CACHE at that cache") from None
        if offline:
            raise ConfigError(
                f"{name.model_id} is not in the Hugging Face cache ({where}){revision}, and HF_HUB_OFFLINE is set, "
                f"so it cannot be downloaded: unset HF_HUB_OFFLINE to download it once") from None
        raise ConfigError(f"{name.model_id} could not be downloaded into {where}: {exc}") from None
    except RevisionNotFoundError:
        raise ConfigError(f"{name.model_id}: the Hub has no revision {name.revision!r} of {name.repo_id}") from None
    except (RepositoryNotFoundError, GatedRepoError):
        raise ConfigError(f"{name.model_id}: no such model on the Hugging Face Hub, or it is private or gated "
                          "(log in with 'hf auth login' for a model you may read)") from None
    except (HfHubHTTPError, OSError) as exc:
        raise ConfigError(f"{name.model_id} could not be downloaded into {where}: {type(exc).__name__}: {exc}") from None


def resolve_snapshot(name: HubName, *, allow_download: bool = False,
                     cache_dir: str | Path | None = None) -> HubSnapshot:
    """Find ``name``'s snapshot in the local cache (downloading it first only when
    ``allow_download``), and hash its weight files.

    Args:
        name: the model.
        allow_download: download the snapshot when the cache lacks it (never when
            ``HF_HUB_OFFLINE`` is set).
        cache_dir: the hub cache folder; None: ``huggingface_hub``'s (``$HF_HUB_CACHE``, else
            ``$HF_HOME/hub``).

    Raises:
        ConfigError: not in the cache and not allowed (or not possible) to download, saying
            how to allow it; or a snapshot without weight files.
    """
    path = Path(_snapshot_folder(name, allow_download, cache_dir))
    ignored = [p for p in weight_files(path)
               if any(fnmatch.fnmatch(p.relative_to(path).as_posix(), pattern) for pattern in DOWNLOAD_IGNORE)]
    files = tuple((p, s) for p, s in hash_weight_files(path) if path / p not in ignored)
    if not files:
        raise ConfigError(f"{name.model_id}: the snapshot {path} holds no weight files (model.safetensors, "
                          "pytorch_model.bin)")
    return HubSnapshot(name, path, path.name, files)


class _HubModel:
    """What both kinds share: the name, the snapshot (resolved once), the loaded model."""

    role = "embedding"

    def __init__(self, name: str, *, allow_download: bool = False, cache_dir: str | Path | None = None,
                 batch_size: int = BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        self.name = parse_hf_name(name)
        self.model_id = self.name.model_id
        self.allow_download = allow_download
        self.cache_dir = cache_dir
        self.batch_size = batch_size
        self._snapshot: HubSnapshot | None = None
        self._model: Any = None
        self._lock = threading.Lock()
        self.load_s: float | None = None  # seconds the load took (the snapshot's checks included), once loaded

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r})"

    def snapshot(self) -> HubSnapshot:
        """The model's snapshot (found, or downloaded when allowed, the first time).

        Raises:
            ConfigError: see :func:`resolve_snapshot`.
        """
        with self._lock:
            if self._snapshot is None:
                self._snapshot = resolve_snapshot(self.name, allow_download=self.allow_download,
                                                  cache_dir=self.cache_dir)
            return self._snapshot

    def verify(self) -> None:
        """Find the model's files now, before any work (downloading them only when allowed).

        Raises:
            ConfigError: not in the cache, and not allowed to download it (says how to allow it).
        """
        self.snapshot()

    def load(self) -> None:
        """Load the model now (once; later calls return at once); :attr:`load_s` says how long
        it took.

        Raises:
            ConfigError: see :meth:`verify`; or sentence-transformers cannot load the files.
        """
        self._loaded()

    def _loaded(self) -> Any:
        if self._model is not None:
            return self._model
        started = time.perf_counter()
        path = self.snapshot().path
        with self._lock:
            if self._model is None:
                logger.info("loading %s from %s", self.model_id, path)
                try:
                    self._model = self._build(path)
                except (OSError, ValueError, KeyError, TypeError, RuntimeError, ImportError) as exc:
                    raise ConfigError(f"{self.model_id}: sentence-transformers cannot load {path}: "
                                      f"{type(exc).__name__}: {exc}") from None
                self.load_s = round(time.perf_counter() - started, 3)
        return self._model

    def _build(self, path: Path) -> Any:
        raise NotImplementedError

    @staticmethod
    def _quiet() -> None:
        """No progress bars from transformers while loading (as the packaged model loads)."""
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()

    @property
    def max_input_tokens(self) -> int | None:
        """The model's window in tokens (sentence-transformers' ``max_seq_length``)."""
        length = self._loaded().max_seq_length
        return int(length) if length else None

    def _description(self, **fields: Any) -> ModelDescription:
        snap = self.snapshot()
        return ModelDescription(self.model_id, self.role, "hf", self.name.repo_id, snap.commit, snap.files,
                                str(snap.path), self.max_input_tokens, **fields)


class HubEmbeddingModel(_HubModel):
    """An ``hf:`` embedding model as an ``EmbeddingModel`` (sentence-transformers ``encode``).

    Vectors are float32 ``(n_texts, embedding_dimension)``, pooled and normalised as the
    model's own ``modules.json`` says; texts past the window are truncated. Queries are
    embedded after :attr:`query_instruction`.

    Args:
        name: ``hf:ORG/NAME[@REVISION]``.
        allow_download: download the model when the cache lacks it.
        cache_dir: the hub cache; None: ``huggingface_hub``'s.
        batch_size: texts per forward pass.

    Raises:
        ConfigError: a name that is not a Hub id (at once); the model missing from the cache
            and not allowed to download (at :meth:`verify` or first use).
    """

    role = "embedding"

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._query_prompt: str | None = None

    def _build(self, path: Path) -> Any:
        from sentence_transformers import SentenceTransformer

        self._quiet()
        return SentenceTransformer(str(path), device="cpu", local_files_only=True)

    @property
    def query_instruction(self) -> str:
        """The model's ``query`` prompt (``config_sentence_transformers.json``), or "" (read
        once)."""
        if self._query_prompt is None:
            self._query_prompt = query_prompt(self.snapshot().path)
        return self._query_prompt

    @property
    def embedding_dimension(self) -> int:
        """The vectors' length (read from the loaded model)."""
        model = self._loaded()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; returns float32 ``(len(texts), embedding_dimension)``.

        Raises:
            ConfigError: see :meth:`verify`.
            EmbeddingError: the model failed.
        """
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        model = self._loaded()
        try:
            vectors = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise EmbeddingError(f"{self.model_id} failed: {type(exc).__name__}: {exc}") from exc
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape[0] != len(texts):
            raise EmbeddingError(f"model {self.model_id} returned {plural(vectors.shape[0], 'vector')} for "
                                 f"{plural(len(texts), 'text')}")
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query, after :attr:`query_instruction`; returns float32 ``(embedding_dimension,)``."""
        return self.embed_documents([self.query_instruction + text])[0]

    def describe(self) -> ModelDescription:
        """The snapshot's commit and weight files, and the pooling its files give."""
        snap = self.snapshot()
        pooling = read_pooling(snap.path, default_normalized=False)  # as sentence-transformers reads them
        return self._description(pooling=pooling.mode, normalized=pooling.normalized,
                                 query_instruction=self.query_instruction, notes=pooling.notes)


class HubCrossEncoder(_HubModel):
    """An ``hf:`` cross-encoder as a ``Reranker``: one raw logit per (query, passage) pair.

    Args:
        name: ``hf:ORG/NAME[@REVISION]``.
        allow_download: download the model when the cache lacks it.
        cache_dir: the hub cache; None: ``huggingface_hub``'s.
        batch_size: pairs per forward pass.

    Raises:
        ConfigError: as :class:`HubEmbeddingModel`.
    """

    role = "reranker"

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.n_truncated = 0
        self._count_lock = threading.Lock()

    def _build(self, path: Path) -> Any:
        import torch
        from sentence_transformers import CrossEncoder

        self._quiet()
        return CrossEncoder(str(path), device="cpu", local_files_only=True, activation_fn=torch.nn.Identity())

    @property
    def model_sha256(self) -> str:
        """One sha256 naming the weights (``core.models.describe.files_sha256``: the only weight
        file's, else that of the sorted ``path sha256`` lines): for caches of scores.

        Raises:
            ConfigError: see :meth:`verify`.
        """
        return files_sha256(self.snapshot().files)

    def _truncated(self, model: CrossEncoder, pairs: list[tuple[str, str]]) -> int:
        """How many pairs are longer than the window (the tokenizer cuts them)."""
        window, tokenizer = model.max_seq_length, getattr(model, "tokenizer", None)
        if not window or tokenizer is None:
            return 0
        lengths = tokenizer([q for q, _ in pairs], [p for _, p in pairs], truncation=False, verbose=False)["input_ids"]
        return sum(1 for ids in lengths if len(ids) > window)

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Score ``(query, passage)`` pairs of any queries in one call.

        Returns:
            One logit per pair, in input order (empty for no pairs).

        Raises:
            ConfigError: see :meth:`verify`.
            RerankError: the model failed.
        """
        pairs = [(str(q), str(p)) for q, p in pairs]
        if not pairs:
            return []
        model = self._loaded()
        try:
            truncated = self._truncated(model, pairs)
            scores = model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise RerankError(f"{self.model_id} failed: {type(exc).__name__}: {exc}") from exc
        with self._count_lock:
            self.n_truncated += truncated
        return [float(s) for s in np.asarray(scores, dtype=np.float64).reshape(len(pairs), -1)[:, 0]]

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """Score each passage against ``query``; one logit per passage, in input order.

        Raises:
            ConfigError: see :meth:`verify`.
            RerankError: the model failed.
        """
        return self.score_pairs([(query, p) for p in passages])

    def describe(self) -> ModelDescription:
        """The snapshot's commit and weight files."""
        return self._description()


__all__ = ["ALLOW_DOWNLOAD_HINT", "BATCH_SIZE", "DOWNLOAD_IGNORE", "HF_PREFIX", "HubCrossEncoder",
           "HubEmbeddingModel", "HubName", "HubSnapshot", "parse_hf_name", "resolve_snapshot"]
