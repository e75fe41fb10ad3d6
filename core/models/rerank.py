"""Rerankers: the ``Reranker`` protocol and a client for rerank endpoints.

A reranker scores passages against a query, one score per passage, higher is more relevant;
the scale is the model's own (a cross-encoder's logit, an endpoint's ``relevance_score``), so
only the order within one call means anything.

The endpoint client speaks the shape Cohere, Jina and vLLM share (``POST {base}/rerank`` with
``model``, ``query``, ``documents``, ``top_n``; answer ``{"results": [{"index",
"relevance_score"}]}``) and Hugging Face TEI's (``POST {base}/rerank`` with ``query`` and
``texts``; answer ``[{"index", "score"}]``).

References:
    Cohere Rerank API v2: https://docs.cohere.com/reference/rerank ; Jina Reranker API:
    https://jina.ai/reranker/ ; vLLM's ``/rerank`` (Jina/Cohere compatible) ; Hugging Face
    text-embeddings-inference ``POST /rerank``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable
from urllib.parse import urlparse

from core.errors import ConfigError, RerankError
from core.limits import ENDPOINT_DEADLINE_S
from core.models.endpoint import EndpointError, JSONEndpoint, MalformedReplyError

logger = logging.getLogger(__name__)

#: Rerank providers: ``local`` (the packaged cross-encoder), endpoint shapes, or ``none``.
RERANK_PROVIDERS: tuple[str, ...] = ("local", "cohere", "jina", "vllm", "tei", "none")
#: Providers whose request holds ``documents`` and answer holds ``results``.
DOCUMENTS_SHAPE: tuple[str, ...] = ("cohere", "jina", "vllm")


@runtime_checkable
class Reranker(Protocol):
    """Scores passages against a query.

    A reranker may also have ``score_pairs(pairs)``, scoring ``(query, passage)`` pairs of
    many queries in one call (see :func:`score_pairs`), and ``model_sha256``, the sha256 of the
    model file its scores come from (part of the rerank cache's key, see
    ``core.models.cache.rerank_model_key``).

    Attributes:
        model_id: a stable id naming the model (and the endpoint's host for remote ones).
    """

    model_id: str

    def verify(self) -> None:
        """Check now that the reranker can run (model files, settings), before any work.

        Raises:
            ConfigError: it cannot run, and why.
        """
        ...

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """Return one score per passage, in input order, higher is more relevant.

        Raises:
            RerankError: the model or endpoint failed, or answered something unusable.
        """
        ...


class HttpReranker:
    """A rerank endpoint of the Cohere / Jina / vLLM / TEI shape.

    Every passage is sent in one request (``top_n`` = their number) and every score comes
    back; the client puts them back in input order by ``index``. Requests go through
    :class:`core.models.endpoint.JSONEndpoint` (pooled connections, a total deadline per
    request). Rate limits (429), server errors (5xx), timeouts (each read's and the total
    deadline's), dropped connections and replies cut short or replaced by an HTML page are
    retried with exponential backoff and jitter (tenacity), as the embedding and chat clients
    do; other errors fail at once.

    Args:
        model: the model name sent as ``model`` (TEI serves one model and ignores it).
        base_url: the endpoint's base (``https://api.cohere.com/v2``, ``http://localhost:8000/v1``);
            the request goes to ``{base_url}/rerank``.
        provider: ``cohere``, ``jina`` or ``vllm`` (``documents``/``results``) or ``tei``
            (``texts``, a bare list).
        api_key: sent as ``Authorization: Bearer``; never logged or reported.
        timeout_s: seconds to connect and to wait for each part of a reply.
        deadline_s: the total time of one request in seconds, however slowly its reply
            arrives (default :data:`core.limits.ENDPOINT_DEADLINE_S`).
        max_attempts: attempts per call, including the first.
        retry_wait_s: first backoff wait in seconds (doubles per attempt, capped at 20 s).

    Raises:
        ConfigError: an unknown provider, or no base URL.
    """

    def __init__(self, model: str, *, base_url: str, provider: str = "cohere", api_key: str | None = None,
                 timeout_s: float = 60.0, max_attempts: int = 6, retry_wait_s: float = 0.5,
                 deadline_s: float = ENDPOINT_DEADLINE_S) -> None:
        if provider not in DOCUMENTS_SHAPE + ("tei",):
            raise ConfigError(f"rerank provider must be one of {', '.join(DOCUMENTS_SHAPE + ('tei',))}, got {provider!r}")
        if not base_url:
            raise ConfigError(f"the {provider} reranker needs RAGTUNE_RERANK_BASE_URL")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.deadline_s = float(deadline_s)
        self.max_attempts = max_attempts
        self.retry_wait_s = retry_wait_s
        self.model_id = f"{provider}:{urlparse(self.base_url).netloc}/{model}"
        self.n_truncated = 0  # the endpoint truncates on its side and does not say
        self._lock = threading.Lock()
        self._transport: Any = None

    def __repr__(self) -> str:
        return f"HttpReranker({self.model_id!r})"

    def verify(self) -> None:
        """Nothing to check before the first call (the settings were checked at construction)."""

    def _endpoint(self) -> Any:
        with self._lock:
            if self._transport is None:
                self._transport = JSONEndpoint(base_url=self.base_url, api_key=self._api_key, azure_api_version=None,
                                               timeout_s=self.timeout_s, deadline_s=self.deadline_s,
                                               anonymous_key=None)
            return self._transport

    def _body(self, query: str, passages: list[str]) -> dict[str, Any]:
        if self.provider == "tei":
            return {"query": query, "texts": passages, "raw_scores": False}
        return {"model": self.model, "query": query, "documents": passages, "top_n": len(passages)}

    def _parse(self, data: Any, n: int) -> list[float]:
        results = data.get("results") if isinstance(data, dict) else data
        if not isinstance(results, list):
            raise RerankError(f"rerank endpoint {self.model_id} answered without a list of results")
        scores: list[float | None] = [None] * n
        for item in results:
            if not isinstance(item, dict):
                raise RerankError(f"rerank endpoint {self.model_id} answered a result that is not an object")
            index, score = item.get("index"), item.get("relevance_score", item.get("score"))
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
                raise RerankError(f"rerank endpoint {self.model_id} answered index {index!r} for {n} passages")
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise RerankError(f"rerank endpoint {self.model_id} answered score {score!r} for passage {index}")
            scores[index] = float(score)
        missing = [i for i, s in enumerate(scores) if s is None]
        if missing:
            raise RerankError(f"rerank endpoint {self.model_id} scored {n - len(missing)} of {n} passages")
        return [float(s) for s in scores]  # type: ignore[arg-type]

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """Score ``passages`` against ``query`` with one request.

        Returns:
            One score per passage, in input order (empty for no passages, without a request).

        Raises:
            RerankError: the endpoint is down, failed after retries (a request past its deadline
                is a timeout), refused the request, or answered malformed JSON, a missing or
                out-of-range index, or a non-numeric score.
        """
        from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

        passages = list(passages)
        if not passages:
            return []

        def retryable(exc: BaseException) -> bool:
            return isinstance(exc, EndpointError) and exc.transient

        try:
            for attempt in Retrying(
                retry=retry_if_exception(retryable), stop=stop_after_attempt(self.max_attempts),
                wait=wait_exponential_jitter(multiplier=self.retry_wait_s, max=20, jitter=self.retry_wait_s), reraise=True,
            ):
                with attempt:
                    data = self._endpoint().post("/rerank", self._body(query, passages))
        except MalformedReplyError as exc:
            raise RerankError(f"rerank endpoint {self.model_id} answered malformed JSON: {exc}") from exc
        except EndpointError as exc:
            if exc.status_code is not None and not exc.transient:
                raise RerankError(f"rerank endpoint {self.model_id} refused the request: HTTP {exc.status_code}: "
                                  f"{exc}") from exc
            if exc.status_code is not None or exc.name == "APITimeoutError":
                raise RerankError(f"rerank endpoint {self.model_id} failed after {self.max_attempts} attempts: "
                                  f"{exc}") from exc
            raise RerankError(f"rerank endpoint {self.model_id} is unreachable: {exc}") from exc
        return self._parse(data, len(passages))


@dataclass(frozen=True)
class PairScore:
    """A reranker's score of one (query, passage) pair, and what computing it cost.

    Attributes:
        score: the reranker's score (the model's scale; higher is more relevant).
        cost_ms: milliseconds of the reranker's time this pair took when it was scored: the
            wall time of the call (or part of a call) it was scored in, divided by the number
            of pairs scored there. A score read from a cache keeps the cost measured when it
            was computed, so a rerun reports the same time a user waits.
        cached: True when the score was read from a cache instead of computed now.
    """

    score: float
    cost_ms: float
    cached: bool = False


def score_pairs(reranker: Reranker, pairs: Sequence[tuple[str, str]]) -> list[float]:
    """Score ``(query, passage)`` pairs of any queries in one go.

    Uses the reranker's own ``score_pairs`` when it has one (the local cross-encoder scores
    pairs of many queries in one call); otherwise one :meth:`Reranker.rerank` call per
    distinct query, with that query's passages in the order given.

    Args:
        reranker: a ``Reranker``.
        pairs: ``(query, passage)`` tuples.

    Returns:
        One score per pair, in input order (empty for no pairs).

    Raises:
        RerankError: the reranker failed.
    """
    pairs = list(pairs)
    own = getattr(reranker, "score_pairs", None)
    if own is not None:
        return [float(s) for s in own(pairs)]
    by_query: dict[str, list[int]] = {}
    for i, (query, _) in enumerate(pairs):
        by_query.setdefault(query, []).append(i)
    out = [0.0] * len(pairs)
    for query, where in by_query.items():
        scores = reranker.rerank(query, [pairs[i][1] for i in where])
        if len(scores) != len(where):
            raise RerankError(f"reranker {reranker.model_id} gave {len(scores)} scores for {len(where)} passages")
        for i, score in zip(where, scores):
            out[i] = float(score)
    return out


def rerank_order(scores: Sequence[float]) -> list[int]:
    """Return passage indices best first: by score, descending, ties kept in input order.

    Args:
        scores: one score per passage (from :meth:`Reranker.rerank`).
    """
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))
