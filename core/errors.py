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
    """An embedding model failed or returned something unusable."""


class GenerationError(RagtuneError):
    """A chat model failed to produce an answer."""


class EvaluationError(RagtuneError):
    """An evaluation could not be computed."""


class StoreError(RagtuneError):
    """A vector store or report store failed (connection, missing object, bad name)."""


class NotStoredError(StoreError):
    """Nothing is stored under the id asked for (a run, an experiment, a report)."""
