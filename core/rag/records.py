"""What answering a question produced: the answer, the passages it was given, or the error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from core.vectorstores.base import RetrievedChunk


@dataclass(frozen=True)
class Context:
    """One passage an answer was generated from.

    Attributes:
        text: the passage text.
        document_id: the document it comes from, or None when unknown (passages read from a
            Bedrock bring-your-own-inference file without a ``name``).
        score: the retrieval score (higher is better), or None when unknown.
    """

    text: str
    document_id: str | None = None
    score: float | None = None

    @classmethod
    def from_retrieved(cls, retrieved: RetrievedChunk) -> "Context":
        """Build one from a ``core.vectorstores.RetrievedChunk``."""
        return cls(text=retrieved.chunk.text, document_id=retrieved.chunk.document_id or None, score=float(retrieved.score))

    def to_dict(self) -> dict[str, Any]:
        """Return ``{text, document_id}`` (plus ``score`` when known)."""
        out: dict[str, Any] = {"text": self.text, "document_id": self.document_id}
        if self.score is not None:
            out["score"] = self.score
        return out


@dataclass(frozen=True)
class AnswerRecord:
    """The outcome of answering one question.

    Exactly one of ``answer`` and ``error`` is set: a failed question keeps its error and is
    reported as failed, never scored as 0.

    Attributes:
        question_id: the golden question's id.
        question: the question text.
        answer: the answer text, or None when answering failed.
        contexts: the passages the answer was generated from, best first (empty when
            retrieval returned nothing or failed).
        error: ``"<ErrorType>: <message>"`` when answering failed, else None.
        generator_id: the ``model_id`` of the chat model or baseline that answered (for
            example ``"openai:api.openai.com/gpt-4o-mini"`` or ``"extractive:local:..."``),
            or ``"external"`` for answers read from a file.
        duration_s: wall-clock seconds spent on the question (retrieval + generation).
    """

    question_id: str
    question: str
    answer: str | None
    contexts: tuple[Context, ...] = ()
    error: str | None = None
    generator_id: str = ""
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the question was answered."""
        return self.error is None and self.answer is not None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict of every field."""
        return {
            "question_id": self.question_id,
            "question": self.question,
            "answer": self.answer,
            "contexts": [c.to_dict() for c in self.contexts],
            "error": self.error,
            "generator_id": self.generator_id,
            "duration_s": round(self.duration_s, 6),
        }


def contexts_from(retrieved: Sequence[Any]) -> tuple[Context, ...]:
    """Turn ``RetrievedChunk`` objects into :class:`Context` objects, in order."""
    return tuple(Context.from_retrieved(r) for r in retrieved)
