"""Helpers for RAG tests: an in-memory store and a bag-of-words embedding model."""

from __future__ import annotations

import re

import numpy as np

from core.chunking.base import Chunk, make_chunk_id
from core.vectorstores.base import RetrievedChunk


def retrieved(texts: list[tuple[str, str]]) -> list[RetrievedChunk]:
    """``(document_id, text)`` pairs as ranked chunks, scores 1.0, 0.9, ..."""
    out = []
    for rank, (doc, text) in enumerate(texts, start=1):
        chunk = Chunk(text=text, chunk_id=make_chunk_id(doc, rank, text), metadata={"document_id": doc, "sequence_number": rank})
        out.append(RetrievedChunk(chunk=chunk, score=1.0 - 0.1 * (rank - 1), rank=rank))
    return out


class FakeStore:
    """Returns the same chunks (at most k) for every query and records each search call."""

    collection_name = "fake"

    def __init__(self, texts: list[tuple[str, str]], fail_on: str | None = None) -> None:
        self.chunks = retrieved(texts)
        self.calls: list[tuple[str, int, dict]] = []
        self.fail_on = fail_on

    def search(self, query: str, k: int = 10, **setup) -> list[RetrievedChunk]:
        self.calls.append((query, k, setup))
        if self.fail_on and self.fail_on in query:
            from core.errors import StoreError

            raise StoreError("search failed on purpose")
        return self.chunks[:k]


class BagOfWords:
    """A tiny deterministic embedding model: word counts over a vocabulary grown on use."""

    model_id = "test:bag-of-words"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.vocab: dict[str, int] = {}

    @property
    def embedding_dimension(self) -> int:
        return self.dim

    @property
    def max_input_tokens(self) -> int | None:
        return None

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            index = self.vocab.setdefault(word, len(self.vocab))
            vec[index] += 1.0
        return vec

    def embed_documents(self, texts):
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text):
        return self._vector(text)
