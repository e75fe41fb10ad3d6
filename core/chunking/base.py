"""The chunk type and the ``Chunker`` protocol shared by every chunker."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol, runtime_checkable


def make_chunk_id(document_id: str, sequence_number: int, text: str) -> str:
    """Return a stable chunk id: the first 32 hex digits of sha256(document_id, sequence, text).

    The same document, position and text always give the same id, across runs and machines.
    """
    digest = hashlib.sha256(f"{document_id}\0{sequence_number}\0{text}".encode("utf-8"))
    return digest.hexdigest()[:32]


#: The longest title :func:`document_title` gives, in characters (cut at a word).
TITLE_MAX_CHARS = 100
_NAME_SEPARATORS = re.compile(r"[_\s]+|(?<=[^\W\d_])-|-(?=[^\W\d_])")
_HEX_ID = re.compile(r"^[0-9a-f-]{8,}$", re.IGNORECASE)


def document_title(document_id: str) -> str:
    """The title a document's name gives: the file name without its folder and extension, with
    underscores, runs of spaces and hyphens beside letters made single spaces, cut at a word to
    :data:`TITLE_MAX_CHARS`. ``"plans/Northwind_Health_Plus.pdf"`` gives
    ``"Northwind Health Plus"``; ``"report-2023.pdf"`` gives ``"report 2023"``.

    Returns:
        The title, or ``""`` when the name holds no letter (``"0001.txt"``) or is a hex id
        (``"3f2a9c1e-....pdf"``): such a name says nothing about the document.
    """
    name = document_id.replace("\\", "/").rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    title = " ".join(_NAME_SEPARATORS.sub(" ", stem).split())
    if not any(ch.isalpha() for ch in title) or _HEX_ID.match(stem):
        return ""
    if len(title) > TITLE_MAX_CHARS:
        cut = title[:TITLE_MAX_CHARS + 1].rsplit(" ", 1)[0]
        title = cut if cut else title[:TITLE_MAX_CHARS]
    return title


@dataclass(frozen=True)
class Chunk:
    """A piece of a document that is embedded, indexed and retrieved.

    Attributes:
        text: the chunk's text.
        chunk_id: stable id (see :func:`make_chunk_id`), at most 64 ASCII characters.
        metadata: ``document_id`` (str, path relative to the corpus folder),
            ``sequence_number`` (int, 0-based, per document), ``pages`` (list[int], 1-based
            page numbers the chunk covers; empty when the source has no pages) and optionally
            ``headings`` (list[str], outermost first).
    """

    text: str
    chunk_id: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def document_id(self) -> str:
        """The id of the document the chunk comes from."""
        return str(self.metadata.get("document_id", ""))

    @property
    def sequence_number(self) -> int:
        """The chunk's 0-based position within its document."""
        return int(self.metadata.get("sequence_number", 0))

    @property
    def pages(self) -> list[int]:
        """1-based pages the chunk covers (empty when the document has no pages)."""
        return [int(p) for p in self.metadata.get("pages") or []]

    @property
    def headings(self) -> list[str]:
        """Headings above the chunk, outermost first (empty when unknown)."""
        return [str(h) for h in self.metadata.get("headings") or []]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict ``{text, chunk_id, metadata}``."""
        return {"text": self.text, "chunk_id": self.chunk_id, "metadata": dict(self.metadata)}


@runtime_checkable
class Chunker(Protocol):
    """Splits documents into chunks.

    Implementations are configured at construction (sizes in tokens) and are pure: the same
    documents always give the same chunks.
    """

    name: str

    def chunk(self, documents: Iterable[Any]) -> list[Chunk]:
        """Split ``DoclingDocument`` objects (each with ``document_id`` set, see
        ``core.documents``) into chunks, sequence numbers running per document."""
        ...

    def params(self) -> dict[str, Any]:
        """Return the JSON-serialisable parameters that determine the chunks (for cache keys)."""
        ...
