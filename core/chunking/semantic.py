"""Semantic chunking: a new chunk where consecutive sentences' embeddings drift apart.

Breakpoint rule (Kamradt's "percentile" method, LangChain ``SemanticChunker``'s default):
embed every sentence of a document; the distance between consecutive sentences is
``1 - cosine(e_i, e_{i+1})``; a chunk ends after sentence ``i`` when that distance is above the
``breakpoint_percentile``-th percentile (default 95, linear interpolation, numpy's default) of
the document's distances. A document with fewer than three sentences has no breakpoint. A
group longer than the chunk size is then packed sentence by sentence (see
:class:`core.chunking.techniques.SentenceChunker`), so the size is a ceiling.

References:
    G. Kamradt, "5 Levels of Text Splitting" (2024), level 4; LangChain
    ``langchain_experimental.text_splitter.SemanticChunker`` (``breakpoint_threshold_type=
    "percentile"``, ``breakpoint_threshold_amount=95``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from core.chunking._common import iter_documents
from core.chunking.spans import DocumentText, document_text, pack_spans, sentence_spans
from core.chunking.techniques import SpanChunker
from core.errors import ConfigError
from core.models import LocalEmbeddingModel

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument

    from core.documents.base import LoadedDocument
    from core.models.embeddings import EmbeddingModel

#: Percentile of a document's consecutive-sentence distances above which a chunk ends.
DEFAULT_BREAKPOINT_PERCENTILE = 95.0


def breakpoints(vectors: np.ndarray, percentile: float = DEFAULT_BREAKPOINT_PERCENTILE) -> list[int]:
    """Indexes ``i`` after which a chunk ends, by the percentile rule (module docstring).

    Args:
        vectors: ``(n_sentences, dim)`` float array of sentence embeddings (any norm).
        percentile: in [0, 100].

    Returns:
        Sorted sentence indexes (0-based; ``i`` means "between sentence i and i + 1"); empty
        for fewer than three sentences.
    """
    n = len(vectors)
    if n < 3:
        return []
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.where(norms == 0, 1.0, norms)
    distances = 1.0 - np.sum(v[:-1] * v[1:], axis=1)
    threshold = float(np.percentile(distances, percentile))
    return [int(i) for i in np.flatnonzero(distances > threshold)]


class SemanticChunker(SpanChunker):
    """Chunks end where the topic shifts (the breakpoint rule of the module docstring).

    Args:
        chunk_size: largest chunk in tokens (> 0), as 4 characters each.
        embedding_model: the ``EmbeddingModel`` embedding the sentences (best the one that
            embeds the chunks, through the embedding cache); None loads the local default on
            the first ``chunk`` call.
        breakpoint_percentile: see the module docstring (0 to 100).
        embed_headings: put the heading path in front of each chunk's text.

    Raises:
        ConfigError: a bad size or percentile.
    """

    name = "semantic"

    def __init__(self, chunk_size: int = 256, *, embedding_model: EmbeddingModel | None = None,
                 breakpoint_percentile: float = DEFAULT_BREAKPOINT_PERCENTILE, embed_headings: bool = False) -> None:
        super().__init__(chunk_size, embed_headings=embed_headings)
        if isinstance(breakpoint_percentile, bool) or not 0.0 <= float(breakpoint_percentile) <= 100.0:
            raise ConfigError(f"breakpoint_percentile must be between 0 and 100, got {breakpoint_percentile!r}")
        self.breakpoint_percentile = float(breakpoint_percentile)
        self._model = embedding_model

    @property
    def embedding_model(self) -> EmbeddingModel:
        """The model embedding the sentences (the local default, loaded once, when none was given)."""
        if self._model is None:
            self._model = LocalEmbeddingModel()
        return self._model

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {**super().params(), "breakpoint": "percentile", "breakpoint_percentile": self.breakpoint_percentile,
                "sentence_model": str(getattr(self.embedding_model, "model_id", "local"))}

    def prepare(self, documents: Iterable[LoadedDocument | DoclingDocument]) -> None:
        """Embed every sentence of ``documents`` in one call, so that chunking them one by one
        afterwards reads the sentences from the embedding cache (when the model has one)."""
        texts = []
        for _, doc in iter_documents(documents):
            text = document_text(doc).text
            texts.extend(text[s:e] for s, e in sentence_spans(text))
        if texts:
            self.embedding_model.embed_documents(texts)

    def spans(self, doc_text: DocumentText) -> tuple[list[tuple[int, int]], None]:
        """Topic groups of sentences, packed to the size."""
        text = doc_text.text
        sentences = sentence_spans(text)
        if len(sentences) < 3:
            return pack_spans(sentences, self.chunk_size_chars, text), None
        vectors = self.embedding_model.embed_documents([text[s:e] for s, e in sentences])
        out: list[tuple[int, int]] = []
        first = 0
        for cut in [*breakpoints(vectors, self.breakpoint_percentile), len(sentences) - 1]:
            out.extend(pack_spans(sentences[first:cut + 1], self.chunk_size_chars, text))
            first = cut + 1
        return out, None
