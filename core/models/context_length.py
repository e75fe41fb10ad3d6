"""Detecting an OpenAI-compatible embedding endpoint's context length when it is not configured.

The endpoint is asked to embed probe texts of ``n`` tokens (``n`` times ``" word"``, one token
each in the BPE vocabularies of OpenAI's models and most open ones); a 400 answer means the
text is too long. A binary search (on the logarithm of the length) between :data:`LOW_TOKENS`
and :data:`HIGH_TOKENS` finds the largest accepted length within 12.5 % in at most 9 calls.
Results are kept per model id for the process.

References:
    IBM ai4rag detects the embedding model's context length the same way before building its
    search space: https://github.com/IBM/ai4rag
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from core.errors import EmbeddingError

if TYPE_CHECKING:
    from core.models.embeddings import EmbeddingModel

logger = logging.getLogger(__name__)

#: The search's range, in tokens.
LOW_TOKENS = 64
HIGH_TOKENS = 8192

_known: dict[str, int | None] = {}
_lock = threading.Lock()


def probe_text(n_tokens: int) -> str:
    """A text of about ``n_tokens`` tokens: ``"word"`` repeated."""
    return " ".join(["word"] * n_tokens)


def _too_long(exc: BaseException) -> bool:
    """Whether ``exc`` (an ``EmbeddingError``) is the endpoint refusing a too long input: an
    HTTP 400 or 413 answer."""
    cause = exc.__cause__
    return getattr(cause, "status_code", None) in (400, 413)


def detect_context_length(model: EmbeddingModel, *, low: int = LOW_TOKENS, high: int = HIGH_TOKENS) -> int | None:
    """The largest probe length in tokens that ``model`` embeds, found by binary search.

    Args:
        model: an ``EmbeddingModel`` (``embed_documents``, ``model_id``).
        low: the shortest length tried; when even it is refused the answer is None.
        high: the longest; when it is accepted the answer is ``high``.

    Returns:
        The length (``low`` <= length <= ``high``), or None when the endpoint refuses ``low``
        tokens or fails for another reason (logged; the space is then not bounded by it).
    """
    with _lock:
        if model.model_id in _known:
            return _known[model.model_id]

    def accepted(n: int) -> bool:
        try:
            model.embed_documents([probe_text(n)])
            return True
        except EmbeddingError as exc:
            if _too_long(exc):
                return False
            raise

    try:
        if accepted(high):
            found: int | None = high
        elif not accepted(low):
            found = None
        else:
            good, bad = low, high  # accepted(good), not accepted(bad)
            while bad > good + max(1, good // 8):  # within 12.5 %: chunk sizes are powers of two apart
                middle = int(round((good * bad) ** 0.5))  # the geometric middle: as many steps at 64 as at 8192
                if accepted(middle):
                    good = middle
                else:
                    bad = middle
            found = good
    except EmbeddingError as exc:
        logger.warning("could not detect the context length of %s: %s", model.model_id, exc)
        return None
    with _lock:
        _known[model.model_id] = found
    logger.info("embedding model %s reads at most about %s tokens", model.model_id, found)
    return found


__all__ = ["HIGH_TOKENS", "LOW_TOKENS", "detect_context_length", "probe_text"]
