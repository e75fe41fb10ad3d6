"""The loaded-document type shared by loaders and chunkers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LoadedDocument:
    """A source file turned into a ``docling_core.types.doc.DoclingDocument``.

    Attributes:
        document_id: the file's path relative to the corpus folder, with ``/`` separators
            (for example ``"Benefit_Options.pdf"`` or ``"hr/leave.md"``). Golden files name
            documents by this id.
        document: the ``DoclingDocument``; text items of paged sources (PDF) carry their
            1-based page number in ``prov[0].page_no``.
        sha256: hex sha256 of the file's bytes (for corpus fingerprints and cache keys).
        n_pages: number of pages for paged sources, else 0.
    """

    document_id: str
    document: Any
    sha256: str
    n_pages: int = 0
