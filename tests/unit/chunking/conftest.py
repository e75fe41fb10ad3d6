"""Fixtures for the chunker tests: small hand-built DoclingDocuments."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing in these tests may download anything
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from typing import Any  # noqa: E402

import pytest  # noqa: E402

from core.documents import LoadedDocument  # noqa: E402


def paged_document(document_id: str, pages: list[list[str]]) -> LoadedDocument:
    """A document like the PDF loader makes: one TEXT item per paragraph, with its page."""
    from docling_core.types.doc import (
        BoundingBox,
        CoordOrigin,
        DocItemLabel,
        DoclingDocument,
        ProvenanceItem,
        Size,
    )

    doc = DoclingDocument(name=document_id)
    for page_no, paragraphs in enumerate(pages, start=1):
        doc.add_page(page_no=page_no, size=Size(width=612, height=792))
        for text in paragraphs:
            prov = ProvenanceItem(
                page_no=page_no,
                bbox=BoundingBox(l=72, t=700, r=540, b=600, coord_origin=CoordOrigin.BOTTOMLEFT),
                charspan=(0, len(text)),
            )
            doc.add_text(label=DocItemLabel.TEXT, text=text, prov=prov)
    return LoadedDocument(document_id=document_id, document=doc, sha256="0" * 64, n_pages=len(pages))


def sectioned_document(document_id: str) -> LoadedDocument:
    """A document with a title, two sections and a subsection, no pages."""
    from docling_core.types.doc import DocItemLabel, DoclingDocument

    doc = DoclingDocument(name=document_id)
    doc.add_title("Handbook")
    doc.add_heading("Leave", level=1)
    doc.add_text(label=DocItemLabel.TEXT, text="Employees get 25 days of paid leave per year.")
    doc.add_heading("Sick leave", level=2)
    doc.add_text(label=DocItemLabel.TEXT, text="Ten sick days per year, with a doctor's note after three days.")
    doc.add_heading("Travel", level=1)
    doc.add_text(label=DocItemLabel.TEXT, text="Book flights through the travel portal.")
    return LoadedDocument(document_id=document_id, document=doc, sha256="1" * 64)


@pytest.fixture()
def make_paged() -> Any:
    return paged_document


@pytest.fixture()
def make_sectioned() -> Any:
    return sectioned_document
