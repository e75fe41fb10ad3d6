"""Recursive character splitting with sizes in tokens (4 characters per token).

References:
    langchain-text-splitters ``RecursiveCharacterTextSplitter``; the 4-characters-per-token
    approximation follows IBM ai4rag's recursive chunker.
"""

from __future__ import annotations

import bisect
from typing import Any, Iterable

from core.chunking._common import check_sizes, iter_documents
from core.chunking.base import Chunk, make_chunk_id
from core.chunking.spans import document_text

#: Characters per token used to turn token sizes into character sizes.
CHARS_PER_TOKEN = 4
#: Separators tried in order; ``""`` splits between characters, so any text can be split.
SEPARATORS: tuple[str, ...] = ("\n\n", "\n", " ", "")


class RecursiveChunker:
    """Split each document's text recursively on paragraphs, lines, words, then characters.

    A document's text items, headings, titles and tables (as Markdown) are joined in reading
    order with blank lines and split with langchain's ``RecursiveCharacterTextSplitter``
    (separators ``"\\n\\n"``, ``"\\n"``, ``" "``, ``""``). Sizes are given in tokens and
    applied as characters: ``chunk_size_chars = 4 * chunk_size``,
    ``chunk_overlap_chars = 4 * chunk_overlap``. Every chunk is at most ``chunk_size_chars``
    characters long, even for text without any separator. Blank chunks are dropped.

    Each chunk's metadata: ``document_id``; ``sequence_number`` (0-based, per document);
    ``pages`` (sorted distinct 1-based pages of the items the chunk's character span
    overlaps; empty for sources without pages); ``headings`` (heading path, outermost first,
    in effect where the chunk starts; empty when none).

    Args:
        chunk_size: maximum chunk length in tokens (> 0).
        chunk_overlap: overlap between consecutive chunks in tokens (0 <= overlap < size).

    Raises:
        ConfigError: at construction, for a non-integer or non-positive size, a negative
            overlap, or an overlap not smaller than the size.
    """

    name = "recursive"

    def __init__(self, chunk_size: int = 256, chunk_overlap: int = 32) -> None:
        self.chunk_size, self.chunk_overlap = check_sizes(chunk_size, chunk_overlap)

    @property
    def chunk_size_chars(self) -> int:
        """Maximum chunk length in characters (``4 * chunk_size``)."""
        return CHARS_PER_TOKEN * self.chunk_size

    @property
    def chunk_overlap_chars(self) -> int:
        """Overlap in characters (``4 * chunk_overlap``)."""
        return CHARS_PER_TOKEN * self.chunk_overlap

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {
            "method": self.name,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "chars_per_token": CHARS_PER_TOKEN,
            "separators": list(SEPARATORS),
            "version": 1,
        }

    def chunk(self, documents: Iterable[Any]) -> list[Chunk]:
        """Split documents into chunks.

        Args:
            documents: :class:`core.documents.LoadedDocument` objects, or ``DoclingDocument``s
                whose ``name`` is the document id.

        Returns:
            The chunks, document by document in the given order, each document's in text order.
        """
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter(
            separators=list(SEPARATORS),
            chunk_size=self.chunk_size_chars,
            chunk_overlap=self.chunk_overlap_chars,
            length_function=len,
            add_start_index=True,
        )
        chunks: list[Chunk] = []
        for document_id, doc in iter_documents(documents):
            flat = document_text(doc)
            text, starts, ends, pages, headings = flat.text, flat.starts, flat.ends, flat.pages, flat.headings
            if not text:
                continue
            seq = 0
            for piece in splitter.create_documents([text]):
                chunk_text = piece.page_content
                if not chunk_text.strip():
                    continue
                start = int(piece.metadata.get("start_index", -1))
                if start < 0:  # not expected: the splitter only strips whitespace
                    start = text.find(chunk_text)
                metadata: dict[str, Any] = {"document_id": document_id, "sequence_number": seq, "pages": []}
                if start >= 0 and starts:
                    end = start + len(chunk_text)
                    first = max(bisect.bisect_right(starts, start) - 1, 0)
                    last = bisect.bisect_left(starts, end)  # items starting before the chunk's end
                    covered: set[int] = set()
                    for i in range(first, last):
                        if ends[i] > start:
                            covered |= pages[i]
                    metadata["pages"] = sorted(covered)
                    if headings[first]:
                        metadata["headings"] = list(headings[first])
                chunks.append(Chunk(text=chunk_text, chunk_id=make_chunk_id(document_id, seq, chunk_text), metadata=metadata))
                seq += 1
        return chunks
