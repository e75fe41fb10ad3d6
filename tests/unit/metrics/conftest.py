"""Fixtures shared by the metrics tests: factories for chunks and golden questions."""

from __future__ import annotations

from typing import Callable, Sequence

import pytest

from core.chunking.base import Chunk, make_chunk_id
from core.golden.types import GoldenQuestion, Target


def _make_chunk(doc: str, text: str = "filler text of a chunk", pages: Sequence[int] = (), seq: int = 0) -> Chunk:
    return Chunk(
        text=text,
        chunk_id=make_chunk_id(doc, seq, text),
        metadata={"document_id": doc, "sequence_number": seq, "pages": list(pages)},
    )


def _make_question(expected: Sequence[str] = (), evidence: Sequence[str] = (), qid: str = "q1") -> GoldenQuestion:
    return GoldenQuestion(
        id=qid,
        question="a question?",
        expected=tuple(Target.parse(e) for e in expected),
        evidence=tuple(evidence),
    )


@pytest.fixture
def chunk() -> Callable[..., Chunk]:
    """``chunk(doc, text=..., pages=(...), seq=0)``: a chunk of ``doc``."""
    return _make_chunk


@pytest.fixture
def question() -> Callable[..., GoldenQuestion]:
    """``question(expected=("a", "b#page=2"), evidence=(...), qid="q1")``: a golden question."""
    return _make_question
