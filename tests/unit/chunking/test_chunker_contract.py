"""The ``Chunker`` contract, passed by every chunking method ``get_chunker`` knows.

Each method in ``CHUNKING_METHODS`` is built with small sizes, with its default headings and with
them the other way (so ``HeadingsInText`` passes too), and run on hand-built documents
(one paged like a PDF, one with sections). What is asserted comes from ``Chunk``'s and
``Chunker``'s docstrings: ids, per-document sequence numbers from 0, pages within the
document's, repeatable output, JSON-serialisable parameters, and no text dropped.
"""

from __future__ import annotations

import json
import re

import pytest

from core.chunking import CHAT_METHODS, CHUNKING_METHODS, Chunk, Chunker, get_chunker, make_chunk_id
from tests.unit.chunking.conftest import paged_document, sectioned_document

PAGES = [
    ["Employees get 25 days of paid leave per year, booked through the portal.",
     "Unused days carry over until the end of March of the next year."],
    ["Sick leave is ten days per year; a doctor's note is needed after three days in a row. " * 3],
    [],  # a page without text
    ["Parental leave follows the law of the country of employment."],
]


class _Scripted:
    """A chat model for the chat-based methods (``CHAT_METHODS``): topic starts at sentences 1
    and 3, and a fixed contextual note. The methods' calls to a real endpoint are tested in
    ``test_techniques.py`` over the OpenAI-compatible test server."""

    model_id = "scripted"

    def chat(self, messages, *, max_completion_tokens=None, temperature=None):
        return "1, 3" if "numbered sentences" in messages[-1]["content"] else "From the policy."


def _build(method: str, embed_headings: bool | None = None) -> Chunker:
    return get_chunker(method, 32, 4, embed_headings=embed_headings,
                       chat_model=_Scripted() if method in CHAT_METHODS else None)


#: Every method at its default, and each with headings the other way (the recursive chunker with
#: headings is ``HeadingsInText`` around it; the others put them in front themselves).
VARIANTS = [(m, None) for m in CHUNKING_METHODS] + [
    (m, m not in ("hierarchical", "hybrid")) for m in CHUNKING_METHODS]


@pytest.fixture(params=VARIANTS, ids=lambda v: v[0] + ("" if v[1] is None else f"-headings-{v[1]}"))
def variant(request) -> tuple[str, bool | None]:
    return request.param


@pytest.fixture
def chunker(variant) -> Chunker:
    return _build(*variant)


@pytest.fixture(scope="module")
def documents():
    return [paged_document("policy.pdf", PAGES), sectioned_document("hr/handbook.md")]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def test_is_a_chunker_with_a_name_and_json_params(chunker, variant):
    assert isinstance(chunker, Chunker) and chunker.name in CHUNKING_METHODS
    params = chunker.params()
    assert json.loads(json.dumps(params)) == params
    assert params == _build(*variant).params()  # same settings, same parameters


def test_chunks_carry_ids_sequence_numbers_and_pages(chunker, documents):
    chunks = chunker.chunk(documents)
    assert chunks and all(isinstance(c, Chunk) for c in chunks)
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.document_id, []).append(c)
    assert set(by_doc) == {"policy.pdf", "hr/handbook.md"}
    for doc_id, own in by_doc.items():
        assert [c.sequence_number for c in own] == list(range(len(own))), doc_id
    for c in chunks:
        assert c.text.strip()
        assert c.chunk_id == make_chunk_id(c.document_id, c.sequence_number, c.text)
        assert len(c.chunk_id) <= 64 and c.chunk_id.isascii()
        assert all(isinstance(p, int) for p in c.pages)
        json.dumps(c.to_dict())
    assert {p for c in by_doc["policy.pdf"] for p in c.pages} <= {1, 2, 4}  # page 3 holds no text
    assert all(c.pages == [] for c in by_doc["hr/handbook.md"])  # no pages in the source


def test_no_text_is_dropped(chunker, documents):
    chunked = set(_words(" ".join(c.text for c in chunker.chunk(documents))))
    source = [t for page in PAGES for t in page] + [
        "Employees get 25 days of paid leave per year.", "Ten sick days per year, with a doctor's note after three days.",
        "Book flights through the travel portal."]
    missing = [w for t in source for w in _words(t) if w not in chunked]
    assert missing == []


def test_the_same_documents_give_the_same_chunks(chunker, variant, documents):
    assert chunker.chunk(documents) == _build(*variant).chunk(documents)
    assert chunker.chunk([]) == []
