"""The span-based techniques (sentence, fixed, markdown, parent-child, semantic, llm,
contextual), the hybrid chunker's guards, and the coverage check: every non-blank character of
every document lands in some chunk, for every technique."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

from core.chunking import (
    CHUNKING_METHODS,
    MODEL_FREE_METHODS,
    FixedChunker,
    HybridChunker,
    MarkdownChunker,
    ParentChildChunker,
    SentenceChunker,
    get_chunker,
    handed_text,
)
from core.chunking.llm import parse_topic_starts
from core.chunking.semantic import breakpoints
from core.chunking.spans import document_text, sentence_spans, split_span, uncovered
from core.errors import ConfigError, GenerationError
from tests.unit.chunking.conftest import paged_document, sectioned_document

_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _markdown_document(document_id: str):
    """A Markdown-like document: title, nested sections, a list, a table, a very long heading
    and a paragraph of 5,000 characters without a space."""
    from docling_core.types.doc import DocItemLabel, DoclingDocument, GroupLabel, TableCell, TableData

    from core.documents import LoadedDocument

    doc = DoclingDocument(name=document_id)
    doc.add_title("Benefits guide")
    doc.add_heading("Dental", level=1)
    doc.add_text(label=DocItemLabel.TEXT, text="Dental cover pays 80% of check-ups. Orthodontics are excluded! "
                                                "Claims go through the portal? Yes.")
    items = doc.add_group(label=GroupLabel.LIST)
    doc.add_list_item("Two cleanings a year.", parent=items)
    doc.add_list_item("One X-ray a year.", parent=items)
    cells = [TableCell(text=t, start_row_offset_idx=r, end_row_offset_idx=r + 1, start_col_offset_idx=c,
                       end_col_offset_idx=c + 1) for r, row in enumerate([["plan", "share"], ["basic", "80%"]])
             for c, t in enumerate(row)]
    doc.add_table(data=TableData(num_rows=2, num_cols=2, table_cells=cells))
    doc.add_heading("A heading " + "that goes on " * 60 + "and ends", level=2)
    doc.add_text(label=DocItemLabel.TEXT, text="Short body under the long heading.")
    doc.add_heading("Vision", level=1)
    doc.add_text(label=DocItemLabel.TEXT, text="x" * 5000)
    return LoadedDocument(document_id=document_id, document=doc, sha256="2" * 64)


def _documents():
    long_pages = [[f"Page {p} paragraph {i}. " + "Benefits text runs on here. " * 9 for i in range(3)]
                  for p in range(1, 4)]
    return [sectioned_document("h.md"), paged_document("p.pdf", long_pages), _markdown_document("g.md")]


def _item_texts(doc):
    """The document's text, item by item: each text item's text and each table cell's."""
    from docling_core.types.doc import TableItem, TextItem

    for item, _ in doc.iterate_items():
        if isinstance(item, TextItem):
            yield item.text
        elif isinstance(item, TableItem):
            yield from (cell.text for cell in item.data.table_cells)


def _assert_covers(chunks, documents):
    """Every non-blank character of every item of each document is in some chunk: the item's
    text (whitespace collapsed) lies inside one line of a chunk's text or one of its headings,
    or the occurrences of such lines inside the item cover all of it. Item by item, because
    docling-core writes tables as "cell, row = cell" lines and list items with a "- " marker."""
    for d in documents:
        pieces = {_norm(p) for c in chunks if c.document_id == d.document_id
                  for p in [*c.text.split("\n"), *c.headings]} - {""}
        for item in _item_texts(d.document):
            text = _norm(item)
            if not text or any(text in p for p in pieces):
                continue
            spans = []
            for p in pieces:
                at = text.find(p)
                while at != -1:  # every occurrence, overlapping ones included
                    spans.append((at, at + len(p)))
                    at = text.find(p, at + 1)
            missing = uncovered(text, spans)
            assert not missing, f"{d.document_id}: {len(missing)} characters in no chunk, from {text[missing[0]:missing[0] + 60]!r}"


class _Scripted:
    """A chat model that answers from a function of the prompt (stands in for the test server
    in the offline coverage loop; the server itself is used in the tests below)."""

    model_id = "scripted"

    def __init__(self, fn):
        self.fn = fn
        self.calls = 0

    def chat(self, messages, *, max_completion_tokens=None, temperature=None):
        self.calls += 1
        return self.fn(messages[-1]["content"])


@pytest.mark.parametrize("method", CHUNKING_METHODS)
@pytest.mark.parametrize("size", [16, 64, 256])
def test_every_character_lands_in_some_chunk(method, size):
    chat = _Scripted(lambda prompt: "1, 3" if "numbered sentences" in prompt else "From the guide.")
    overlap = 4 if method in ("recursive", "fixed", "contextual") else 0
    chunker = get_chunker(method, size, overlap, chat_model=chat)
    docs = _documents()
    chunks = chunker.chunk(docs)
    _assert_covers(chunks, docs)
    for d in docs:
        seq = [c.sequence_number for c in chunks if c.document_id == d.document_id]
        assert seq == list(range(len(seq)))
    # pages survive: the paged document's chunks name pages 1-3 and only those
    pages = {p for c in chunks if c.document_id == "p.pdf" for p in c.pages}
    assert pages == {1, 2, 3}
    # headings survive: every chunk of the sectioned document sits under its title
    assert all(c.headings[:1] == ["Handbook"] for c in chunks if c.document_id == "h.md")


def test_space_offers_every_chunking_method():
    from core.optimization import default_space

    space = default_space({"m": None}, ["extractive"]).with_overrides({"chunking_method": list(CHUNKING_METHODS)})
    assert {c["chunking_method"] for c in space.valid_configurations()} == set(CHUNKING_METHODS)


def test_sentence_spans_by_hand():
    text = 'One. "Two?" Three!\n\nFour e.g. five'
    got = [text[s:e] for s, e in sentence_spans(text)]
    assert got == ["One.", '"Two?"', "Three!", "Four e.g.", "five"]


def test_sentence_chunker_packs_whole_sentences(make_paged):
    doc = make_paged("s.pdf", [["Aaa aa. Bbb bb. Ccc cc. Ddd dd."]])
    # size 4 tokens = 16 characters: "Aaa aa. Bbb bb." is 15, adding " Ccc cc." would be 23
    chunks = SentenceChunker(4).chunk([doc])
    assert [c.text for c in chunks] == ["Aaa aa. Bbb bb.", "Ccc cc. Ddd dd."]
    assert all(c.pages == [1] for c in chunks)


def test_fixed_windows_end_at_a_space():
    text = "abcd efgh ijkl mnop"
    # 8-character windows: "abcd efg" has a space at 4, so the first chunk is "abcd"
    assert [text[s:e] for s, e in split_span(text, 0, len(text), 8)] == ["abcd", "efgh", "ijkl", "mnop"]
    # no space at all: cut by characters
    assert [(s, e) for s, e in split_span("x" * 20, 0, 20, 8)] == [(0, 8), (8, 16), (16, 20)]
    # overlap of 5 characters restarts at the space inside the last 5 characters
    assert [text[s:e] for s, e in split_span(text, 0, len(text), 10, 5)] == ["abcd efgh", "efgh ijkl", "ijkl mnop"]


def test_fixed_chunker_rejects_bad_overlap():
    with pytest.raises(ConfigError, match="smaller than chunk_size"):
        FixedChunker(8, 8)


def test_markdown_chunker_cuts_at_headings(make_sectioned):
    chunks = MarkdownChunker(256).chunk([make_sectioned("h.md")])
    assert [c.text.split("\n")[0] for c in chunks] == ["Handbook", "Leave", "Sick leave", "Travel"]
    assert chunks[2].headings == ["Handbook", "Leave", "Sick leave"]
    assert chunks[2].text == "Sick leave\n\nTen sick days per year, with a doctor's note after three days."
    with_heads = MarkdownChunker(256, embed_headings=True).chunk([make_sectioned("h.md")])
    assert with_heads[2].text.startswith("Handbook\nLeave\nSick leave\n\nTen sick days")


def test_parent_child_hands_over_the_section(make_sectioned):
    chunks = ParentChildChunker(4).chunk([make_sectioned("h.md")])  # 16-character children
    leave = [c for c in chunks if c.headings[-1:] == ["Leave"]]
    assert len(leave) > 1 and len({c.metadata["parent_id"] for c in leave}) == 1
    parent = "Leave\n\nEmployees get 25 days of paid leave per year."
    assert all(handed_text(c) == parent for c in leave)
    assert all(len(c.text) <= 16 or " " not in c.text for c in chunks)


def test_semantic_breakpoints_by_hand():
    # unit vectors: three near (1, 0), then three near (0, 1): the one large distance is between
    # sentence 2 and 3 (0-based), distances ~[0.0, 0.0, 1.0, 0.0, 0.0]; its 95th percentile
    # (linear) is 0.8 + small, and only index 2 is above it
    v = np.array([[1, 0], [1, 0.01], [1, 0.02], [0, 1], [0.01, 1], [0.02, 1]], dtype=float)
    assert breakpoints(v, 95) == [2]
    assert breakpoints(v[:2], 95) == []  # fewer than three sentences
    # percentile 0: every distance above the smallest one is a breakpoint
    d = 1 - np.sum((v[:-1] / np.linalg.norm(v[:-1], axis=1)[:, None]) * (v[1:] / np.linalg.norm(v[1:], axis=1)[:, None]), axis=1)
    assert breakpoints(v, 0) == [i for i in range(5) if d[i] > d.min()]


def test_semantic_chunker_splits_where_the_topic_changes():
    from core.documents import LoadedDocument
    from docling_core.types.doc import DocItemLabel, DoclingDocument

    class TwoTopics:
        model_id = "two-topics"

        def embed_documents(self, texts):
            return np.array([[1.0, 0.0] if "dental" in t.lower() else [0.0, 1.0] for t in texts])

    doc = DoclingDocument(name="t.txt")
    doc.add_text(label=DocItemLabel.TEXT, text="The dental plan. More dental cover. Dental claims. "
                                               "Travel by train. Travel by air. Travel claims.")
    chunks = get_chunker("semantic", 256, 0, embed_title=False, embedding_model=TwoTopics()).chunk(
        [LoadedDocument(document_id="t.txt", document=doc, sha256="3" * 64)])
    assert [c.text for c in chunks] == ["The dental plan. More dental cover. Dental claims.",
                                        "Travel by train. Travel by air. Travel claims."]


def test_llm_chunker_starts_chunks_where_the_model_says(app, make_paged):
    from core.models.chat import OpenAIChatModel

    app.reply("Sentences 1 and 3 begin topics: 1, 3")
    model = OpenAIChatModel("chunker", base_url=app.base_url, api_key="test")
    doc = make_paged("t.pdf", [["Dental one. Dental two. Travel one. Travel two."]])
    chunks = get_chunker("llm", 256, 0, embed_title=False, chat_model=model).chunk([doc])
    assert [c.text for c in chunks] == ["Dental one. Dental two.", "Travel one. Travel two."]
    prompt = app.chat_requests[0]["messages"][-1]["content"]
    assert "1. Dental one.\n2. Dental two.\n3. Travel one.\n4. Travel two." in prompt


def test_llm_reply_without_a_sentence_number_is_an_error():
    assert parse_topic_starts("start at 2, 5 and 99", 6) == [2, 5]
    with pytest.raises(GenerationError, match="names no sentence between 1 and 4"):
        parse_topic_starts("no idea", 4)


def test_contextual_puts_the_note_in_front(app, make_paged):
    from core.models.chat import OpenAIChatModel

    app.reply("From the 2026 plan, page 1.")
    model = OpenAIChatModel("noter", base_url=app.base_url, api_key="test")
    doc = make_paged("c.pdf", [["The deductible is 500 dollars."]])
    chunks = get_chunker("contextual", 256, 0, embed_title=False, chat_model=model).chunk([doc])
    assert [c.text for c in chunks] == ["From the 2026 plan, page 1.\n\nThe deductible is 500 dollars."]
    assert chunks[0].metadata["note"] == "From the 2026 plan, page 1." and chunks[0].pages == [1]
    prompt = app.chat_requests[0]["messages"][-1]["content"]
    assert "<document>\nThe deductible is 500 dollars.\n</document>" in prompt
    assert "<chunk>\nThe deductible is 500 dollars.\n</chunk>" in prompt


def test_chat_techniques_need_a_chat_model_and_late_says_why():
    for method in ("llm", "contextual"):
        with pytest.raises(ConfigError, match=f"{method} chunking needs a chat model"):
            get_chunker(method, 256, 0)
    with pytest.raises(ConfigError, match="late chunking is not offered: .*256 and 512 tokens"):
        get_chunker("late", 256, 0)
    assert "late" not in MODEL_FREE_METHODS


def test_hybrid_cuts_text_its_tokenizer_cannot_read(make_paged):
    from docling_core.types.doc import DocItemLabel, DoclingDocument

    from core.documents import LoadedDocument

    doc = DoclingDocument(name="big.txt")
    doc.add_text(label=DocItemLabel.TEXT, text="x" * 70_000)
    chunks = HybridChunker(256).chunk([LoadedDocument(document_id="big.txt", document=doc, sha256="4" * 64)])
    # 70,000 characters the tokenizer reads as a few unknown tokens: cut at 8 * 256 = 2,048
    assert [len(c.text) for c in chunks] == [2048] * 34 + [70_000 - 34 * 2048]
    assert "".join(c.text for c in chunks) == "x" * 70_000


def test_hybrid_shortens_a_long_heading_and_logs_instead_of_warning(caplog, recwarn):
    chunker = HybridChunker(64)
    with caplog.at_level(logging.INFO, logger="core.chunking.docling_chunkers"):
        chunks = chunker.chunk([_markdown_document("g.md")])
    under = [c for c in chunks if "Short body under the long heading." in c.text]
    assert len(under) == 1
    c = under[0]
    long_heading = "A heading " + "that goes on " * 60 + "and ends"
    assert c.headings[-1] == long_heading  # the metadata keeps it whole
    shown = [line for line in c.text.split("\n") if line.startswith("A heading")]
    assert shown and shown[0].endswith("...") and len(shown[0]) < len(long_heading)
    assert chunker.count_tokens(c.text) <= 64
    assert not [w for w in recwarn if issubclass(w.category, UserWarning) and "Headers" in str(w.message)]
    assert any("shortened" in r.getMessage() for r in caplog.records)


def test_hierarchical_cuts_an_element_too_long_to_store():
    from docling_core.types.doc import DocItemLabel, DoclingDocument

    from core.chunking import HierarchicalChunker
    from core.chunking.docling_chunkers import MAX_CHUNK_CHARS
    from core.documents import LoadedDocument

    doc = DoclingDocument(name="big.txt")
    doc.add_text(label=DocItemLabel.TEXT, text="y" * 40_000)
    chunks = HierarchicalChunker(embed_headings=False).chunk(
        [LoadedDocument(document_id="big.txt", document=doc, sha256="5" * 64)])
    # 16,000 characters at most (under Milvus's 65,535-byte limit at 4 bytes a character)
    assert [len(c.text) for c in chunks] == [MAX_CHUNK_CHARS, MAX_CHUNK_CHARS, 40_000 - 2 * MAX_CHUNK_CHARS]
    assert MAX_CHUNK_CHARS * 4 < 65_535


def test_shorten_headings_by_hand():
    from core.chunking.spans import shorten_headings, with_headings_prefix

    # fits: 5 + 1 + 3 + 1 = 10 characters with newlines
    assert shorten_headings(["Guide", "Tea"], 10) == ["Guide", "Tea"]
    # 20 characters for two: 9 each (10 less the newline); "aaaa bbbb cccc" cut at its space
    # within the 6 characters before "...", "x" * 30 by characters
    assert shorten_headings(["aaaa bbbb cccc", "x" * 30], 20) == ["aaaa...", "xxxxxx..."]
    # shares under 8 characters: the outer headings are left out, the innermost kept
    # (16 // 3 = 5 < 8; 16 // 2 = 8: two shares of 7 characters, 4 kept before "...")
    assert shorten_headings(["a" * 20, "b" * 20, "c" * 20], 16) == ["bbbb...", "cccc..."]
    assert with_headings_prefix("body", ["h" * 100], 11) == "hhhhhhh...\nbody"
    assert with_headings_prefix("body", ["h" * 100]) == "h" * 100 + "\nbody"


def _long_heading_document(document_id: str, heading: str):
    from docling_core.types.doc import DocItemLabel, DoclingDocument

    from core.documents import LoadedDocument

    doc = DoclingDocument(name=document_id)
    doc.add_heading(heading, level=1)
    doc.add_text(label=DocItemLabel.TEXT, text="Green tea is brewed at 80 degrees for two minutes.")
    return LoadedDocument(document_id=document_id, document=doc, sha256="7" * 64)


@pytest.mark.parametrize("method", ["recursive", "sentence", "fixed", "markdown", "parent-child", "hierarchical",
                                    "hybrid"])
def test_a_heading_too_long_for_a_chunk_is_shortened_in_the_text_and_kept_in_the_metadata(method):
    from core.chunking.docling_chunkers import MAX_CHUNK_CHARS

    heading = "h" * 70_000
    doc = _long_heading_document("headnospace.md", heading)
    chunker = get_chunker(method, 256, 0, embed_headings=True, embed_title=False)
    chunks = chunker.chunk([doc])
    body = [c for c in chunks if "Green tea is brewed" in c.text]
    assert len(body) == 1
    c = body[0]
    assert c.headings == [heading]  # whole in the metadata
    # 256 tokens are 1,024 characters; the heading in front takes at most half of them (512);
    # the hierarchical chunker has no size: half of its longest text, 8,000
    budget = MAX_CHUNK_CHARS // 2 if method == "hierarchical" else 512
    if method == "hybrid":  # its headings are shortened to half of 256 tokenizer tokens first
        assert chunker.count_tokens(c.text) <= 256
    else:  # the first line is the heading path in front (or the section's own text, cut)
        first = c.text.split("\n", 1)[0]
        assert first.startswith("hhh") and len(first) <= budget
        if method != "markdown":
            assert first.endswith("...")
            assert len(c.text) <= budget + 1 + (MAX_CHUNK_CHARS if method == "hierarchical" else 1024)
    assert max(len(x.text) for x in chunks) <= MAX_CHUNK_CHARS
    if method == "parent-child":
        assert len(c.metadata["parent_text"]) <= 4 * 1024 + 512


@pytest.mark.parametrize("method", ["hierarchical", "hybrid"])
def test_a_document_made_only_of_headings_keeps_its_text(method):
    from docling_core.types.doc import DoclingDocument

    from core.documents import LoadedDocument

    doc = DoclingDocument(name="heads.md")
    for i in range(300):
        doc.add_heading(f"Heading {i}", level=1 + i % 6)
    chunks = get_chunker(method, 64, 0, embed_title=False).chunk([LoadedDocument(document_id="heads.md", document=doc, sha256="8" * 64)])
    text = "\n".join(c.text for c in chunks)
    assert all(f"Heading {i}\n" in text + "\n" for i in range(300))
    if method == "hierarchical":  # one element, one chunk: here one heading each
        assert [c.text for c in chunks] == [f"Heading {i}" for i in range(300)]
    else:  # packed up to 4 * 64 = 256 characters
        assert len(chunks) > 1 and max(len(c.text) for c in chunks) <= 256
    assert chunks[1].metadata["headings"][-1] == chunks[1].text.split("\n")[0]


def test_hybrid_prints_no_transformers_warning_on_a_long_paragraph(capfd):
    from docling_core.types.doc import DocItemLabel, DoclingDocument

    from core.documents import LoadedDocument

    doc = DoclingDocument(name="long.txt")
    # 400 short sentences: far more than the tokenizer's 512 tokens in one paragraph
    doc.add_text(label=DocItemLabel.TEXT, text=" ".join(f"word{i} is here." for i in range(400)))
    chunker = HybridChunker(256)
    chunks = chunker.chunk([LoadedDocument(document_id="long.txt", document=doc, sha256="9" * 64)])
    assert chunker.count_tokens(doc.texts[0].text) > 512
    assert len(chunks) > 1 and all(chunker.count_tokens(c.text) <= 256 for c in chunks)
    err = capfd.readouterr().err
    assert "Token indices sequence length" not in err and "[transformers]" not in err


def test_hybrid_cuts_a_document_with_a_huge_table_without_docling_table_splitting(tmp_path):
    from core.chunking.docling_chunkers import MAX_TABLE_CHARS
    from core.documents import load_documents

    def table(cols, rows):
        head = ["|" + "|".join(f"c{i}" for i in range(cols)) + "|", "|" + "---|" * cols]
        return "\n".join(head + ["|" + "|".join(f"v{r}x{i}" for i in range(cols)) + "|" for r in range(rows)])

    (tmp_path / "big.md").write_text("# Big table\n\n" + table(300, 30) + "\n", encoding="utf-8")
    (tmp_path / "small.md").write_text("# Small table\n\n" + table(3, 2) + "\n", encoding="utf-8")
    docs = {d.document_id: d for d in load_documents(tmp_path).documents}
    assert len(table(300, 30)) > MAX_TABLE_CHARS > len(table(3, 2))
    chunker = HybridChunker(256)
    big = chunker.chunk([docs["big.md"]])
    # packed items of at most 4 * 256 characters, every cell kept (docling-core's table
    # splitting counts tokens of ever longer pieces: minutes on this table)
    assert all("span" in c.metadata and len(c.text) <= 1024 for c in big)
    text = " ".join(c.text for c in big)
    assert set(re.findall(r"v\d+x\d+", text)) == {f"v{r}x{i}" for r in range(30) for i in range(300)}
    small = chunker.chunk([docs["small.md"]])
    assert small and all("span" not in c.metadata for c in small)  # docling-core's own chunks
