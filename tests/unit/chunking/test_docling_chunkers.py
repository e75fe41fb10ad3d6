"""Hierarchical and hybrid chunkers (docling-core), offline, and get_chunker."""

from __future__ import annotations

import json
import socket

import pytest

from core.chunking import (
    MODEL_FREE_METHODS,
    Chunker,
    HierarchicalChunker,
    HybridChunker,
    RecursiveChunker,
    get_chunker,
)
from core.chunking.docling_chunkers import default_tokenizer_path
from core.errors import ConfigError

SENTENCE = "Out-of-network providers may bill you for the difference between their charge and the allowed amount. "


@pytest.fixture()
def no_network(monkeypatch):
    """Make any attempt to open a network connection fail."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_get_chunker_by_name():
    assert isinstance(get_chunker("recursive", 256, 32, embed_title=False), RecursiveChunker)
    assert isinstance(get_chunker("hierarchical", 256, 32, embed_title=False), HierarchicalChunker)
    assert isinstance(get_chunker("hybrid", 256, 32, embed_title=False), HybridChunker)
    for method in MODEL_FREE_METHODS:  # llm and contextual need a chat model: test_techniques.py
        chunker = get_chunker(method, 128, 16)
        assert isinstance(chunker, Chunker) and chunker.name == method
        assert json.loads(json.dumps(chunker.params())) == chunker.params()


def test_unknown_method_lists_valid_ones():
    with pytest.raises(ConfigError, match="'paragraph'.*recursive, hierarchical, hybrid, sentence, fixed"):
        get_chunker("paragraph", 256, 32)


def test_hybrid_rejects_bad_size_and_missing_tokenizer(tmp_path):
    with pytest.raises(ConfigError, match="chunk_size must be > 0"):
        get_chunker("hybrid", 0, 0)
    with pytest.raises(ConfigError, match="tokenizer folder not found"):
        HybridChunker(64, tokenizer_path=tmp_path / "missing")


def test_hierarchical_keeps_headings_and_pages(make_sectioned, make_paged):
    docs = [make_sectioned("h.md"), make_paged("p.pdf", [["First page text."], ["Second page text."]])]
    chunks = HierarchicalChunker().chunk(docs)
    h = [c for c in chunks if c.document_id == "h.md"]
    sick = next(c for c in h if "Ten sick days" in c.text)
    assert sick.headings == ["Handbook", "Leave", "Sick leave"]
    # the text is contextualized: headings first, then the element's text
    assert sick.text == "Handbook\nLeave\nSick leave\nTen sick days per year, with a doctor's note after three days."
    p = [c for c in chunks if c.document_id == "p.pdf"]
    assert [(c.text, c.pages, c.sequence_number) for c in p] == [
        ("First page text.", [1], 0),
        ("Second page text.", [2], 1),
    ]


def test_hybrid_works_offline_and_respects_max_tokens(make_paged, no_network):
    from transformers import AutoTokenizer

    doc = make_paged("plan.pdf", [[SENTENCE * 12, "Short note."], [SENTENCE * 5]])
    chunker = HybridChunker(chunk_size=64)
    chunks = chunker.chunk([doc])
    # Reference count: the same tokenizer files loaded directly with transformers.
    reference = AutoTokenizer.from_pretrained(str(default_tokenizer_path()), local_files_only=True)
    counts = [len(reference.tokenize(c.text)) for c in chunks]
    assert max(counts) <= 64
    assert counts == [chunker.count_tokens(c.text) for c in chunks]
    assert len(chunks) > 3  # ~20 tokens per sentence, 17 sentences: the text had to be split
    assert [c.sequence_number for c in chunks] == list(range(len(chunks)))
    assert {tuple(c.pages) for c in chunks} <= {(1,), (2,), (1, 2)}
    assert chunks[0].pages == [1] and chunks[-1].pages == [2]
    assert chunker.params() == {
        "method": "hybrid",
        "chunk_size": 64,
        "tokenizer": "sentence-transformers/all-MiniLM-L6-v2",
        "merge_peers": True,
        "text": "contextualized",
        "heading_share": 0.5,
        "max_chars_per_token": 8,
        "version": 2,
    }
