"""The error types of ragtune.

One root, :class:`RagtuneError`, and one subclass per kind of failure, so callers can catch
exactly what they can handle. Messages say what went wrong and where (file, line, field).
"""

from __future__ import annotations


class RagtuneError(Exception):
    """Root of every error ragtune raises on purpose."""


class GoldenError(RagtuneError):
    """A golden file cannot be read or has errors.

    Attributes:
        problems: the problems found (``core.golden.Problem`` objects), possibly empty.
    """

    def __init__(self, message: str, problems: list | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems or [])


class ConfigError(RagtuneError):
    """A configuration or setting is invalid (bad value, impossible combination)."""


class DocumentError(RagtuneError):
    """A source document cannot be read or holds no text."""


class IndexingError(RagtuneError):
    """Chunking, embedding or writing to a vector store failed."""


class EmbeddingError(IndexingError):
    """An embedding model failed or returned something unusable.

    Args:
        message: what failed, naming the model.
        transient: whether a retry may succeed (an endpoint's passing fault: a truncated
            reply, a proxy's error page, vectors of NaN); None leaves it to the error it was
            raised from (:func:`is_transient` reads on down the chain).
    """

    def __init__(self, message: str, *, transient: bool | None = None) -> None:
        super().__init__(message)
        if transient is not None:
            self.transient = transient


class GenerationError(RagtuneError):
    """A chat model failed to produce an answer."""


class EvaluationError(RagtuneError):
    """An evaluation could not be computed."""


class StoreError(RagtuneError):
    """A vector store or report store failed (connection, missing object, bad name)."""


#: gRPC status codes (``grpc.StatusCode`` names) a retry may get past.
GRPC_TRANSIENT = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"})


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) may go away on a retry: an
    exception's own ``transient`` flag first (a damaged stored file is not), then a storage
    failure (:class:`StoreError`), a timeout or lost connection, an HTTP 429 or 5xx from a
    model endpoint (``openai`` errors, or an exception's own ``transient`` flag), a gRPC call
    that found its server unavailable, timed out or was throttled (``UNAVAILABLE``,
    ``DEADLINE_EXCEEDED``, ``RESOURCE_EXHAUSTED``: a Milvus server or Milvus Lite gone, under
    pymilvus's ``MilvusException``), as opposed to bad data or a bad configuration.
    """
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 10:
        flag = getattr(current, "transient", None)  # core.models.endpoint.EndpointError, DamagedFileError
        if isinstance(flag, bool):
            return flag
        if isinstance(current, (StoreError, TimeoutError, ConnectionError)):
            return True
        kind = type(current)
        code = getattr(current, "code", None)
        if kind.__module__.split(".")[0] == "grpc" and callable(code):
            try:
                status = getattr(code(), "name", "")
            except Exception:  # noqa: BLE001 - a call object that cannot say is not retried
                status = ""
            if status in GRPC_TRANSIENT:
                return True
        if kind.__module__.split(".")[0] in ("openai", "httpx", "httpcore"):
            status = getattr(current, "status_code", None)
            if status is None:
                name = kind.__name__
                return "Timeout" in name or "Connection" in name or "Network" in name or "Protocol" in name
            return int(status) == 429 or int(status) >= 500
        current = current.__cause__ or current.__context__
        seen += 1
    return False
class RerankError(RagtuneError):
    """A reranker failed (a local model, or a rerank endpoint that is down or answers badly)."""


class TargetError(StoreError):
    """A target searched in place (an Azure AI Search index, a team's own collection) cannot be
    reached, refuses a request, or answers something unusable; the message names the target
    and never holds a credential."""


class NotStoredError(StoreError):
    """Nothing is stored under the id asked for (a run, an experiment, a report)."""


class DamagedFileError(StoreError):
    """A stored file cannot be read as what it holds (not JSON, not an experiment spec or a
    study): changed or cut short outside ragtune. A retry reads the same bytes, so it is not
    transient (:func:`is_transient`); the message names the file."""

    transient = False
