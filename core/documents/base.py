"""The loaded-document type shared by loaders and chunkers, and the form of document ids."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any


def normalize_id(document_id: str) -> str:
    """Return a document id in Unicode normal form C, the form both sides of a match use.

    A file name saved decomposed (NFD, as some file systems and archives write it) and the same
    name typed composed (NFC) in a golden file are one id.

    References:
        Unicode Standard Annex #15, Unicode Normalization Forms: https://unicode.org/reports/tr15/
    """
    return document_id if document_id.isascii() else unicodedata.normalize("NFC", document_id)


@dataclass(frozen=True)
class LoadedDocument:
    """A source file turned into a ``docling_core.types.doc.DoclingDocument``.

    Attributes:
        document_id: the file's path relative to the corpus folder, with ``/`` separators
            (for example ``"Benefit_Options.pdf"`` or ``"hr/leave.md"``), NFC-normalised
            (:func:`normalize_id`). Golden files name documents by this id.
        document: the ``DoclingDocument``; text items of paged sources (PDF) carry their
            1-based page number in ``prov[0].page_no``.
        sha256: hex sha256 of the file's bytes (for corpus fingerprints and cache keys).
        n_pages: number of pages for paged sources, else 0.
    """

    document_id: str
    document: Any
    sha256: str
    n_pages: int = 0
