"""Turning source files into ``DoclingDocument``s with stable document ids.

``load_documents(folder)`` reads .md, .html/.htm, .docx (docling's format backends), .pdf
(pypdfium2, paragraphs with page provenance), .txt and .json; ``corpus_fingerprint`` hashes a
corpus by its ids and file contents.
"""

from core.documents.base import LoadedDocument, normalize_id
from core.documents.loader import (
    SUPPORTED_EXTENSIONS,
    LoadResult,
    NoDocumentLoaded,
    SkippedFile,
    corpus_fingerprint,
    list_document_ids,
    load_documents,
)

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "LoadResult",
    "LoadedDocument",
    "NoDocumentLoaded",
    "SkippedFile",
    "corpus_fingerprint",
    "list_document_ids",
    "load_documents",
    "normalize_id",
]
