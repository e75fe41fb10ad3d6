"""``onnx:PATH``: a local folder of ONNX files with its tokenizer, as an embedding model or a
cross-encoder reranker (run with onnxruntime, like the packaged ONNX models of
``core.models.onnx``).

The folder holds ``model.onnx`` and ``tokenizer.json`` side by side (Hugging Face's ``onnx/``
sub-folder layout: name a folder holding both). ``model.onnx``'s sha256 is taken when the
model is named and checked again before its first use, so the file a report records is the
file that ran. What else is read, all optional:

- the window in tokens: ``sentence_bert_config.json``'s ``max_seq_length``, else
  ``tokenizer_config.json``'s ``model_max_length``, else ``config.json``'s
  ``max_position_embeddings``, else :data:`DEFAULT_MAX_TOKENS`;
- an embedding model's pooling and normalisation, from the folder's sentence-transformers
  files as sentence-transformers reads them: ``modules.json`` names the pooling module's
  folder (``1_Pooling``) and whether a ``Normalize`` module follows; that folder's
  ``config.json`` gives the mode (``pooling_mode``, or the older ``pooling_mode_*_token(s)``
  flags). Without ``modules.json`` a ``1_Pooling/config.json`` is still read; without either,
  the default is mean pooling over the tokens (sentence-transformers' own default for a model
  without its files), L2-normalised (the stores search by cosine, so this moves no ranking),
  and the report's model description says so in its ``notes``;
- the embedding size: the pooling config's ``embedding_dimension`` (or
  ``word_embedding_dimension``), else ``config.json``'s ``hidden_size``, else the graph's
  output shape;
- the query prompt: ``config_sentence_transformers.json``'s ``prompts.query``, put before
  each query (not a passage), as sentence-transformers does with ``prompt_name="query"``.

A cross-encoder's graph must give ``logits`` (one per pair: the score); an embedding model's
``last_hidden_state`` or ``token_embeddings`` (pooled here) or ``sentence_embedding``
(already pooled). A folder named in the wrong role is told so at :meth:`verify`.

References:
    sentence-transformers ``Pooling`` and ``modules.json``:
    https://sbert.net/docs/package_reference/sentence_transformer/models.html ; ONNX Runtime
    ``InferenceSession``; Hugging Face ``tokenizers`` ``Tokenizer.from_file``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.errors import ConfigError, EmbeddingError
from core.models.describe import ModelDescription, hash_weight_files
from core.models.onnx import OnnxCrossEncoder, OnnxEmbeddingModel, OnnxModelFiles, _batches

logger = logging.getLogger(__name__)

#: The prefix of a folder's model name.
ONNX_PREFIX = "onnx:"
#: The window when no file of the folder gives one (BERT's).
DEFAULT_MAX_TOKENS = 512
#: Pooling when the folder has no sentence-transformers pooling config.
DEFAULT_POOLING = "mean"
#: Poolings :class:`OnnxFolderEmbeddingModel` computes.
POOLING_MODES: tuple[str, ...] = ("cls", "mean", "max", "mean_sqrt_len_tokens", "lasttoken")
#: The legacy pooling flags of a pooling config, and the mode each names.
_POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean", "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
#: Graph outputs holding one vector per token, in the order they are looked for.
_TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")


@dataclass(frozen=True)
class Pooling:
    """How token vectors become one text vector, as a model folder's sentence-transformers
    files say.

    Attributes:
        mode: one of :data:`POOLING_MODES` (or another sentence-transformers mode, which only
            sentence-transformers itself can compute).
        normalized: whether the pooled vector is L2-normalised.
        dimension: the pooled vector's length when the config gives it, else None.
        modules: the module types ``modules.json`` lists, by their class name, in order
            (empty without the file).
        notes: what was assumed rather than read.
    """

    mode: str
    normalized: bool
    dimension: int | None = None
    modules: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _read_json(path: Path) -> Any:
    """The JSON in ``path``, or None when there is no such file.

    Raises:
        ConfigError: the file is not valid JSON (names it).
    """
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read as JSON: {exc}") from None


def _pooling_mode(config: dict[str, Any], where: Path) -> str:
    raw = config.get("pooling_mode")
    modes = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, list) else \
        [mode for flag, mode in _POOLING_FLAGS.items() if config.get(flag)]
    if len(modes) != 1 or not isinstance(modes[0], str):
        raise ConfigError(f"{where} names {len(modes)} pooling modes ({modes}); one is needed")
    return modes[0]


def read_pooling(folder: Path, default_normalized: bool = True) -> Pooling:
    """The pooling a model folder's sentence-transformers files describe (see the module's
    docstring), or the default (:data:`DEFAULT_POOLING`, normalised when
    ``default_normalized``) with a note saying why.

    Raises:
        ConfigError: ``modules.json`` or the pooling config is not valid JSON, not the shape
            sentence-transformers writes, or names several pooling modes at once.
    """
    modules_file = folder / "modules.json"
    modules = _read_json(modules_file)
    if modules is not None and not (isinstance(modules, list) and all(isinstance(m, dict) for m in modules)):
        raise ConfigError(f"{modules_file} is not a list of modules")
    kinds = tuple(str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules or [])
    pooling_dir = "1_Pooling"
    for m in modules or []:
        if str(m.get("type", "")).rsplit(".", 1)[-1] == "Pooling":
            pooling_dir = str(m.get("path") or pooling_dir)
    config_file = folder / pooling_dir / "config.json"
    config = _read_json(config_file)
    if config is not None and not isinstance(config, dict):
        raise ConfigError(f"{config_file} is not a JSON object")
    notes: list[str] = []
    if config is None:
        mode = DEFAULT_POOLING
        notes.append(f"pooling: {DEFAULT_POOLING} (the default: no {pooling_dir}/config.json in {folder})")
    else:
        mode = _pooling_mode(config, config_file)
    if modules is not None:
        normalized = "Normalize" in kinds
    else:
        normalized = default_normalized
        notes.append(f"normalised: {'yes' if normalized else 'no'} (the default: no modules.json in {folder})")
    dim = (config or {}).get("embedding_dimension", (config or {}).get("word_embedding_dimension"))
    return Pooling(mode, normalized, dim if isinstance(dim, int) and dim > 0 else None, kinds, tuple(notes))


def max_tokens(folder: Path) -> tuple[int, str | None]:
    """``(window in tokens, note)``: from the folder's files (see the module's docstring), the
    note saying when :data:`DEFAULT_MAX_TOKENS` was assumed (else None).

    Raises:
        ConfigError: a file is not valid JSON.
    """
    for name, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length"),
                      ("config.json", "max_position_embeddings")):
        data = _read_json(folder / name)
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1_000_000:  # transformers' "no limit" is 1e30
            return value, None
    return DEFAULT_MAX_TOKENS, f"window: {DEFAULT_MAX_TOKENS} tokens (the default: no file of {folder} gives one)"


def query_prompt(folder: Path) -> str:
    """``config_sentence_transformers.json``'s ``prompts.query`` ("" when there is none).

    Raises:
        ConfigError: the file is not valid JSON.
    """
    data = _read_json(folder / "config_sentence_transformers.json")
    prompts = data.get("prompts") if isinstance(data, dict) else None
    query = prompts.get("query") if isinstance(prompts, dict) else None
    return query if isinstance(query, str) else ""


@dataclass(frozen=True)
class OnnxFolder:
    """One ``onnx:PATH`` folder, read when it is named.

    Attributes:
        name: the model name as given (``onnx:models/bge``): the model's id.
        path: the folder, absolute.
        files: the ``OnnxModelFiles`` the runner checks (``model.onnx``'s sha256 as read now).
        weights: ``(relative path, sha256)`` of every weight file in the folder.
        notes: what was assumed rather than read.
    """

    name: str
    path: Path
    files: OnnxModelFiles
    weights: tuple[tuple[str, str], ...]
    notes: tuple[str, ...] = ()


def read_folder(name: str) -> OnnxFolder:
    """Read the folder ``name`` (``onnx:PATH``) names: check its files, hash its weights.

    Args:
        name: ``onnx:`` and a folder path (``~`` expanded, relative to the working folder).

    Returns:
        The folder, its ``files`` without an embedding size or query prompt (a cross-encoder's).

    Raises:
        ConfigError: no such folder, ``model.onnx`` or ``tokenizer.json`` missing from it, or
            an unreadable JSON file.
    """
    given = name[len(ONNX_PREFIX):].strip() if name.startswith(ONNX_PREFIX) else name.strip()
    if not given:
        raise ConfigError(f"{name!r} names no folder: write onnx:PATH, PATH a folder holding model.onnx and "
                          "tokenizer.json")
    path = Path(given).expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"{name}: {path} is not a folder")
    missing = [f for f in ("model.onnx", "tokenizer.json") if not (path / f).is_file()]
    if missing:
        nested = " (a Hugging Face layout keeps model.onnx in onnx/: name a folder holding both files)" \
            if (path / "onnx" / "model.onnx").is_file() else ""
        raise ConfigError(f"{name}: {path} has no {' and no '.join(missing)}{nested}")
    window, note = max_tokens(path)
    weights = hash_weight_files(path)
    sha = dict(weights)["model.onnx"]
    files = OnnxModelFiles(f"{ONNX_PREFIX}{given}", str(path), sha, window)
    return OnnxFolder(files.model_id, path, files, weights, (note,) if note else ())


def _dimension(path: Path, pooling: Pooling) -> int:
    """The embedding size: the pooling config's, else ``config.json``'s ``hidden_size``, else
    the last axis of the graph's first output."""
    if pooling.dimension:
        return pooling.dimension
    config = _read_json(path / "config.json")
    hidden = config.get("hidden_size") if isinstance(config, dict) else None
    if isinstance(hidden, int) and hidden > 0:
        return hidden
    import onnxruntime as ort

    session = ort.InferenceSession(str(path / "model.onnx"), providers=["CPUExecutionProvider"])
    last = session.get_outputs()[0].shape[-1]
    if not isinstance(last, int):
        raise ConfigError(f"{path}: the embedding size is not in config.json (hidden_size) nor fixed in model.onnx")
    return last


def pool(hidden: np.ndarray, lengths: Sequence[int], mode: str) -> np.ndarray:
    """Pool token vectors into one vector per text, as sentence-transformers' ``Pooling`` does.

    Args:
        hidden: float array ``(n_texts, n_tokens, dim)``, each row right-padded.
        lengths: each text's number of real (unpadded) tokens, at least 1.
        mode: ``cls`` (the first token), ``mean`` (the mean of the real tokens),
            ``mean_sqrt_len_tokens`` (their sum over the square root of their count), ``max``
            (the largest value per dimension over the real tokens) or ``lasttoken`` (the last
            real token).

    Returns:
        float32 ``(n_texts, dim)``, not normalised.

    Raises:
        ConfigError: another mode.
    """
    n, width, _ = hidden.shape
    mask = (np.arange(width)[None, :] < np.asarray(lengths)[:, None]).astype(np.float32)[:, :, None]
    count = np.maximum(mask.sum(axis=1), 1e-9)
    if mode == "cls":
        out = hidden[:, 0, :]
    elif mode in ("mean", "mean_sqrt_len_tokens"):
        total = (hidden * mask).sum(axis=1)
        out = total / (count if mode == "mean" else np.sqrt(count))
    elif mode == "max":
        out = np.where(mask > 0, hidden, -np.inf).max(axis=1)
    elif mode == "lasttoken":
        out = hidden[np.arange(n), np.asarray(lengths) - 1, :]
    else:
        raise ConfigError(f"pooling {mode!r} is not computed here; poolings: {', '.join(POOLING_MODES)}")
    return np.asarray(out, dtype=np.float32)


class OnnxFolderEmbeddingModel(OnnxEmbeddingModel):
    """An ``onnx:PATH`` folder as an ``EmbeddingModel``: the folder's pooling (see the module's
    docstring), L2-normalised when its files say so (or by default).

    Vectors are float32 ``(n_texts, dimension)``; texts longer than the window are truncated
    (counted in ``n_truncated``). Queries are embedded after the folder's query prompt.

    Args:
        name: ``onnx:PATH``.
        batch_size: texts per forward pass; 1 by default, so a text's vector does not depend on
            its batch mates (int8 graphs quantise per batch; see ``OnnxEmbeddingModel``).

    Raises:
        ConfigError: as :func:`read_folder`; a pooling config this module cannot compute, or
            modules after the pooling other than ``Normalize`` (a ``Dense`` layer is not in
            the graph).
    """

    def __init__(self, name: str, *, batch_size: int = 1) -> None:
        folder = read_folder(name)
        pooling = read_pooling(folder.path)
        extra = [k for k in pooling.modules if k not in ("Transformer", "Pooling", "Normalize")]
        if extra:
            raise ConfigError(f"{name}: modules.json lists {', '.join(extra)} after the transformer; only the "
                              "transformer is in model.onnx, so these vectors cannot be computed here")
        if pooling.mode not in POOLING_MODES:
            raise ConfigError(f"{name}: pooling {pooling.mode!r} is not computed here; poolings: "
                              f"{', '.join(POOLING_MODES)}")
        files = replace(folder.files, dimension=_dimension(folder.path, pooling),
                        query_instruction=query_prompt(folder.path))
        super().__init__(files, model_path=folder.path, batch_size=batch_size)
        self.folder = folder
        self.pooling = pooling
        self._output: str | None = None
        if pooling.notes:
            logger.info("%s: %s", self.model_id, "; ".join(pooling.notes))

    def verify(self) -> None:
        """Check ``model.onnx``'s sha256 (as it was when named) and that its graph gives token
        or sentence vectors.

        Raises:
            ConfigError: the file changed, or the graph gives ``logits`` (a cross-encoder) or
                no output of a known name.
        """
        super().verify()
        self._output_name()

    def _output_name(self) -> str:
        if self._output is None:
            session, _ = self._runner.load()
            names = [o.name for o in session.get_outputs()]
            found = next((n for n in (*_TOKEN_OUTPUTS, "sentence_embedding") if n in names), None)
            if found is None:
                hint = ": it looks like a cross-encoder; name it as a reranker" if "logits" in names else ""
                raise ConfigError(f"{self.model_id}: model.onnx gives {', '.join(names)}, not token vectors "
                                  f"({', '.join(_TOKEN_OUTPUTS)}) or sentence_embedding{hint}")
            self._output = found
        return self._output

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; returns float32 ``(len(texts), dimension)``.

        Raises:
            ConfigError: see :meth:`verify`.
            EmbeddingError: onnxruntime failed.
        """
        texts = list(texts)
        out = np.zeros((len(texts), self.embedding_dimension), dtype=np.float32)
        if not texts:
            return out
        output = self._output_name()
        encodings, truncated = self._runner.encode(texts)
        self.n_truncated += truncated
        try:
            for batch in _batches([len(e.ids) for e in encodings], self.batch_size):
                values = self._runner.run([encodings[i] for i in batch], output)
                vectors = values if values.ndim == 2 else \
                    pool(values, [len(encodings[i].ids) for i in batch], self.pooling.mode)
                if self.pooling.normalized:
                    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
                out[batch] = vectors
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbeddingError(f"{self.model_id} failed: {type(exc).__name__}: {exc}") from exc
        return out

    def describe(self) -> ModelDescription:
        """Where the vectors come from: the folder, its weight files' sha256, the pooling."""
        f = self.folder
        return ModelDescription(
            self.model_id, "embedding", "onnx", str(f.path), None, f.weights, str(f.path), f.files.max_tokens,
            self.pooling.mode, self.pooling.normalized, self.query_instruction, f.notes + self.pooling.notes)


class OnnxFolderCrossEncoder(OnnxCrossEncoder):
    """An ``onnx:PATH`` folder as a ``Reranker``: one logit per (query, passage) pair, as the
    packaged cross-encoder (``OnnxCrossEncoder``) scores them, pairs truncated longest-first to
    the folder's window.

    Args:
        name: ``onnx:PATH``.
        batch_size: pairs per forward pass (see ``OnnxCrossEncoder``).

    Raises:
        ConfigError: as :func:`read_folder`.
    """

    def __init__(self, name: str, *, batch_size: int = 1) -> None:
        folder = read_folder(name)
        super().__init__(folder.files, model_path=folder.path, batch_size=batch_size)
        self.folder = folder

    @property
    def model_sha256(self) -> str:
        """``model.onnx``'s sha256 (checked again before the first use): what the scores come
        from, for caches of scores."""
        return self.folder.files.sha256

    def verify(self) -> None:
        """Check ``model.onnx``'s sha256 (as it was when named) and that its graph gives
        ``logits``.

        Raises:
            ConfigError: the file changed, or the graph gives no ``logits`` (an embedding model).
        """
        super().verify()
        session, _ = self._runner.load()
        names = [o.name for o in session.get_outputs()]
        if "logits" not in names:
            hint = ": it looks like an embedding model" if set(names) & {*_TOKEN_OUTPUTS, "sentence_embedding"} else ""
            raise ConfigError(f"{self.model_id}: model.onnx gives {', '.join(names)}, not the logits a "
                              f"cross-encoder gives{hint}")

    def describe(self) -> ModelDescription:
        """Where the scores come from: the folder and its weight files' sha256."""
        f = self.folder
        return ModelDescription(self.model_id, "reranker", "onnx", str(f.path), None, f.weights, str(f.path),
                                f.files.max_tokens, notes=f.notes)


__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_POOLING", "ONNX_PREFIX", "OnnxFolder", "OnnxFolderCrossEncoder",
           "OnnxFolderEmbeddingModel", "POOLING_MODES", "Pooling", "max_tokens", "pool", "query_prompt",
           "read_folder", "read_pooling"]
