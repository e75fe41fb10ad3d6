"""RecursiveChunker: sizes in tokens as 4 characters, pages, headings, sequence numbers."""

from __future__ import annotations

import json

import pytest

from core.chunking import RecursiveChunker, get_chunker, make_chunk_id
from core.errors import ConfigError

WORDS = "Employees may carry over up to five unused leave days into the next calendar year. "


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [
        (100, 100, "chunk_overlap .* must be smaller than chunk_size"),
        (100, 150, "must be smaller"),
        (0, 0, "chunk_size must be > 0"),
        (-5, 0, "chunk_size must be > 0"),
        (100, -1, "chunk_overlap must be >= 0"),
        (100.5, 10, "chunk_size must be an integer"),
        (True, 0, "chunk_size must be an integer"),
    ],
)
def test_invalid_sizes_raise_at_construction(size, overlap, message):
    with pytest.raises(ConfigError, match=message):
        RecursiveChunker(chunk_size=size, chunk_overlap=overlap)
    with pytest.raises(ConfigError, match=message):
        get_chunker("recursive", size, overlap)


def test_chunks_never_exceed_four_chars_per_token(make_paged):
    doc = make_paged("a.pdf", [[WORDS * 7, WORDS * 3], ["Short one.", WORDS * 12]])
    for size, overlap in [(16, 0), (32, 8), (64, 16)]:
        chunks = RecursiveChunker(chunk_size=size, chunk_overlap=overlap).chunk([doc])
        assert len(chunks) > 1
        assert max(len(c.text) for c in chunks) <= 4 * size
        assert all(c.text.strip() for c in chunks)


def test_text_without_separators_is_split_to_size(make_paged):
    text = "x" * 1000  # no blank line, newline or space anywhere
    chunks = RecursiveChunker(chunk_size=25, chunk_overlap=0).chunk([make_paged("blob.txt", [[text]])])
    # 1000 characters in pieces of at most 4 * 25 = 100 characters: exactly 10, rejoining to the text
    assert [len(c.text) for c in chunks] == [100] * 10
    assert "".join(c.text for c in chunks) == text


def test_overlap_repeats_text_between_neighbours(make_paged):
    text = " ".join(f"w{i:03d}" for i in range(300))  # 300 words of 4 characters, 1499 characters
    chunks = RecursiveChunker(chunk_size=25, chunk_overlap=5).chunk([make_paged("o.txt", [[text]])])
    for prev, cur in zip(chunks, chunks[1:]):
        first_word = cur.text.split()[0]
        assert first_word in prev.text.split()  # each chunk starts inside the previous one's tail


def test_sequence_numbers_and_ids_run_per_document(make_paged):
    docs = [make_paged("a.pdf", [[WORDS * 6]]), make_paged("b/c.pdf", [[WORDS * 4]])]
    chunks = RecursiveChunker(chunk_size=32, chunk_overlap=0).chunk(docs)
    for doc_id in ("a.pdf", "b/c.pdf"):
        mine = [c for c in chunks if c.document_id == doc_id]
        assert [c.sequence_number for c in mine] == list(range(len(mine)))
        assert len(mine) > 1
        for c in mine:
            assert c.chunk_id == make_chunk_id(doc_id, c.sequence_number, c.text)
    assert [c.document_id for c in chunks] == sorted(c.document_id for c in chunks)  # input order kept


def test_pages_are_those_of_the_items_each_chunk_overlaps(make_paged):
    # Three pages with one distinctive paragraph each; a 60-token (240-character) chunk size
    # puts page 1's and page 2's short paragraphs together and page 3's long one apart.
    p1 = "Alpha paragraph on the first page."
    p2 = "Bravo paragraph on the second page."
    p3 = "Charlie " * 60  # 480 characters
    chunks = RecursiveChunker(chunk_size=60, chunk_overlap=0).chunk([make_paged("p.pdf", [[p1], [p2], [p3]])])
    # hand computation: "p1\n\np2" is 71 characters and fits; p3 needs two chunks of its own
    assert chunks[0].text == f"{p1}\n\n{p2}"
    assert chunks[0].pages == [1, 2]
    assert all(c.pages == [3] for c in chunks[1:]) and len(chunks) == 3


def test_headings_above_each_chunk(make_sectioned):
    chunks = RecursiveChunker(chunk_size=12, chunk_overlap=0).chunk([make_sectioned("h.md")])
    by_start = {c.text.split("\n")[0]: c.headings for c in chunks}
    assert by_start["Handbook"] == ["Handbook"]
    assert by_start["Sick leave"] == ["Handbook", "Leave", "Sick leave"]
    assert by_start["Travel"] == ["Handbook", "Travel"]
    assert all(c.pages == [] for c in chunks)  # no pages in the source


def test_bare_docling_document_uses_its_name(make_sectioned):
    doc = make_sectioned("hr/handbook.md").document
    chunks = RecursiveChunker(chunk_size=64, chunk_overlap=8).chunk([doc])
    assert {c.document_id for c in chunks} == {"hr/handbook.md"}


def test_params_are_json_and_reflect_sizes():
    a, b = RecursiveChunker(256, 32), RecursiveChunker(512, 32)
    assert a.name == "recursive"
    assert json.loads(json.dumps(a.params())) == a.params()
    assert a.params()["chunk_size"] == 256 and a.params()["chunk_overlap"] == 32
    assert a.params() != b.params()
    assert a.chunk_size_chars == 1024 and a.chunk_overlap_chars == 128


#: sha256 of the JSON of ``[chunk_id, text, metadata]`` of every recursive chunk of each bundled
#: corpus, as the recursive chunker made them with its own flattening of a DoclingDocument, before
#: it was built on ``core.chunking.spans.document_text`` (the reference implementation here).
#: Collections are keyed by the chunker's parameters, so these chunks may not change.
BUNDLED_CHUNKS = {
    ("northwind-benefits", 256, 32): (703, "af0ecb7fbbdf08b33640397c99184b2c0a6e7638e9a836a9474975a85ffc5ae2"),
    ("northwind-benefits", 64, 8): (3412, "2b3ea21d189f7d5c5cf0ab58189101f8bcb56830f1fda700f56fcda8d5cf73f8"),
    ("bedrock-sample", 256, 32): (278, "8994f8181ec5cd623bd04793ba994913323a3a4cbea2c5c79e13809b96162466"),
    ("bedrock-sample", 64, 8): (987, "e799e085f71a654213084850292b8c34a5beb485253a6628e58d3ca93b31e71b"),
    ("squad-mini", 256, 32): (94, "05e8045805776311668e49178ebd4fc661a5412c2c21fc000637ff17fe4cca1a"),
    ("squad-mini", 64, 8): (269, "a120587fd5bc00e1f7e184dfc2487f918a0533083dda6dabdb1a35c9c796a34a"),
    ("musique-mini", 256, 32): (2073, "49e1da9273bd9f70d7b09a30bf82751af7d424f630340c46b8c7dfa28872d925"),
    ("musique-mini", 64, 8): (6044, "91c0fd8e3ec60c05c678ea564db26105db9d12d910f5d8181e89ea0b8ddea7e6"),
}


@pytest.mark.slow
@pytest.mark.parametrize("corpus", sorted({name for name, _, _ in BUNDLED_CHUNKS}))
def test_recursive_chunks_of_the_bundled_corpora_are_unchanged(corpus):
    import hashlib
    from pathlib import Path

    from core.documents import load_documents

    docs = Path(__file__).resolve().parents[3] / "examples" / "data" / corpus / "docs"
    documents = load_documents(docs).documents
    for (name, size, overlap), (count, digest) in BUNDLED_CHUNKS.items():
        if name != corpus:
            continue
        chunks = RecursiveChunker(chunk_size=size, chunk_overlap=overlap).chunk(documents)
        rows = [[c.chunk_id, c.text, c.metadata] for c in chunks]
        got = hashlib.sha256(json.dumps(rows, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        assert (len(chunks), got) == (count, digest), (name, size, overlap)
