"""The document's title in front of each chunk (``TitleInText``, ``document_title``)."""

from __future__ import annotations

import pytest

from core.chunking import TitleInText, get_chunker
from core.chunking.base import TITLE_MAX_CHARS, document_title, make_chunk_id
from tests.unit.chunking.conftest import paged_document


@pytest.mark.parametrize(("name", "title"), [
    ("Northwind_Health_Plus_Benefits_Details.pdf", "Northwind Health Plus Benefits Details"),
    ("plans/2024/employee-handbook.pdf", "employee handbook"),
    ("report-2023.pdf", "report 2023"),  # a hyphen beside a letter is a word break
    ("a  b\tc.txt", "a b c"),
    ("notes", "notes"),  # no extension
    ("C:\\docs\\Policy_v2.docx", "Policy v2"),
    ("0001.txt", ""),  # no letter: the name says nothing
    ("3f2a9c1e-aa11-4b3c.pdf", ""),  # a hex id says nothing
])
def test_document_title_from_its_name(name, title):
    assert document_title(name) == title


def test_a_long_name_is_cut_at_a_word():
    name = "_".join(["word"] * 40) + ".pdf"  # 40 words of 4 letters: 199 characters as a title
    title = document_title(name)
    assert len(title) <= TITLE_MAX_CHARS and title == " ".join(["word"] * 20)  # 20 words: 99 characters


def _doc(document_id: str, text: str):
    return paged_document(document_id, [[text]])


def test_each_chunk_leads_with_its_documents_title_and_keeps_it_in_the_metadata():
    docs = [_doc("Plan_Standard.md", "The deductible is 2,000 dollars a year."),
            _doc("0042.txt", "Nothing in the name of this one."),
            _doc("guide.md", "Guide to the plan. Read it first.")]
    plain = get_chunker("recursive", 256, 0, embed_title=False).chunk(docs)
    titled = get_chunker("recursive", 256, 0).chunk(docs)
    assert [c.document_id for c in titled] == [c.document_id for c in plain]
    by_doc = {c.document_id: (p, c) for p, c in zip(plain, titled)}
    p, c = by_doc["Plan_Standard.md"]
    assert c.text == "Plan Standard\n" + p.text and c.metadata["title"] == "Plan Standard"
    assert c.chunk_id == make_chunk_id("Plan_Standard.md", 0, c.text) != p.chunk_id  # ids follow the text
    assert c.pages == p.pages and c.sequence_number == p.sequence_number
    p, c = by_doc["0042.txt"]
    assert c == p  # no title in the name: the chunk is as it was
    p, c = by_doc["guide.md"]
    assert c == p  # the text already starts with the title (in any case): not repeated


def test_a_text_that_starts_with_the_titles_letters_but_not_its_word_still_gets_the_title():
    docs = [_doc("park.txt", "Parking garage B opens at six."), _doc("Park.md", "Park rules: no fires.")]
    chunks = {c.document_id: c for c in get_chunker("recursive", 256, 0).chunk(docs)}
    assert chunks["park.txt"].text == "park\nParking garage B opens at six."
    assert chunks["Park.md"].text == "Park rules: no fires."  # "Park" then ":" is the title as a word


def test_params_say_so_and_the_inner_chunker_shows_through():
    chunker = get_chunker("fixed", 64, 8)
    assert isinstance(chunker, TitleInText)
    assert chunker.params() == {**get_chunker("fixed", 64, 8, embed_title=False).params(), "embed_title": True}
    assert chunker.name == "fixed" and chunker.chunk_size_chars == 256
