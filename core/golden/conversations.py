"""The conversations of a golden file: which questions are turns of one conversation, in order.

An Amazon Bedrock prompt dataset holds one conversation per line (``conversationTurns``); its
reader (:mod:`core.golden.bedrock`) makes one question per turn, all with the line's number
and the earlier turns as ``history``. A native golden file converted from one by
``ragtune suggest`` keeps each turn's line and number under ``metadata.bedrock`` (``line``,
``turn``, 1-based). Every other question is a conversation of one turn.

A conversation is played turn by turn against a deployed app (``ragtune evaluate-app``): the
history each later turn is sent with is the app's own earlier answers, not the file's
reference answers (see :func:`core.evaluation.app.play`).

References:
    Amazon Bedrock, "Creating a prompt dataset for retrieve-and-generate RAG evaluation jobs":
    https://docs.aws.amazon.com/bedrock/latest/userguide/knowledge-base-evaluation-prompt-retrieve-generate.html
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from core.golden.types import GoldenQuestion

__all__ = ["Conversation", "conversations"]


@dataclass(frozen=True)
class Conversation:
    """The turns of one conversation, first turn first.

    Attributes:
        key: ``"line-N"`` (the golden line the conversation came from) or the question's id
            for a standalone question.
        turns: the questions, in turn order (at least one).
    """

    key: str
    turns: tuple["GoldenQuestion", ...]


def _bedrock_turn(question: GoldenQuestion) -> tuple[int, int] | None:
    """``(line, turn)`` from ``metadata.bedrock`` (as ``ragtune suggest`` writes it), or None."""
    meta = question.metadata.get("bedrock") if isinstance(question.metadata, dict) else None
    if not isinstance(meta, dict):
        return None
    line, turn = meta.get("line"), meta.get("turn")
    if isinstance(line, int) and isinstance(turn, int) and not isinstance(line, bool) and not isinstance(turn, bool):
        return line, turn
    return None


def conversations(questions: Sequence["GoldenQuestion"], golden_format: str = "ragtune") -> list[Conversation]:
    """Group ``questions`` into conversations, in the order their first turns come.

    Rules: in a Bedrock file (``golden_format`` ``bedrock`` or ``bedrock-byoi``) the questions
    of one line are one conversation, in file order; in a native file, the questions whose
    ``metadata.bedrock`` holds the same ``line`` are one conversation, ordered by its ``turn``
    (ties in file order); every other question is alone.

    Args:
        questions: the golden questions, in file order.
        golden_format: the file's format (``GoldenSet.format``).

    Returns:
        The conversations; every question is in exactly one.
    """
    groups: dict[str, list[tuple[int, int, Any]]] = {}
    for position, q in enumerate(questions):
        if golden_format.startswith("bedrock"):
            key, turn = f"line-{q.line}", position
        else:
            found = _bedrock_turn(q)
            key, turn = (f"line-{found[0]}", found[1]) if found is not None else (f"question-{q.id}", 0)
        groups.setdefault(key, []).append((turn, position, q))
    out = []
    for key, members in groups.items():
        members.sort(key=lambda m: (m[0], m[1]))
        turns = tuple(m[2] for m in members)
        out.append(Conversation(key if len(turns) > 1 or key.startswith("line-") else turns[0].id, turns))
    return out
