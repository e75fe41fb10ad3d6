"""load_documents on a real mixed corpus made in a temporary folder, and corpus_fingerprint."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import pytest

from core.documents import LoadedDocument, LoadResult, SkippedFile, corpus_fingerprint, load_documents
from core.errors import DocumentError


def _texts(doc) -> list[str]:
    return [item.text for item, _ in doc.document.iterate_items() if getattr(item, "text", "")]


def _write_docx(path: Path) -> None:
    import docx

    d = docx.Document()
    d.add_heading("Leave policy", 1)
    d.add_paragraph("Employees get 25 days of paid leave.")
    d.add_heading("Sick days", 2)
    d.add_paragraph("Ten sick days per year.")
    d.save(str(path))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, perks_pdf, make_pdf) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / ".git").mkdir()
    shutil.copy(perks_pdf, root / "PerksPlus.pdf")
    _write_docx(root / "policy.docx")
    (root / "travel.html").write_text(
        "<html><head><title>Travel</title></head><body><h1>Travel</h1>"
        "<p>Book flights through the portal.</p><h2>Hotels</h2><p>Max 200 EUR per night.</p></body></html>",
        encoding="utf-8",
    )
    (root / "sub" / "x.md").write_text("# Expenses\n\nSubmit receipts within 30 days.\n", encoding="utf-8")
    (root / "sub" / "deeper" / "notes.txt").write_text(
        "First paragraph,\nsecond line.\n\n\nSecond paragraph.\n", encoding="utf-8"
    )
    (root / "faq.json").write_text(
        json.dumps({"vpn": "Use the VPN abroad.", "laptops": {"refresh_years": 3}}), encoding="utf-8"
    )
    (root / "broken.json").write_text('{"unterminated": "yes', encoding="utf-8")
    (root / "empty.txt").write_bytes(b"")
    (root / "blank.md").write_text("   \n\n", encoding="utf-8")
    (root / "corrupt.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf\n")
    (root / "scanned.pdf").write_bytes(make_pdf([[]]))  # one page, no text layer
    (root / "budget.xlsx").write_bytes(b"PK\x03\x04")
    (root / ".DS_Store").write_bytes(b"\x00\x01")
    (root / ".git" / "HEAD.md").write_text("# not a document\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def loaded(corpus) -> LoadResult:
    return load_documents(corpus)


def test_loads_every_supported_format_with_relative_ids(loaded):
    ids = [d.document_id for d in loaded.documents]
    assert ids == sorted(ids)
    assert ids == [
        "PerksPlus.pdf",
        "broken.json",
        "faq.json",
        "policy.docx",
        "sub/deeper/notes.txt",
        "sub/x.md",
        "travel.html",
    ]
    for d in loaded.documents:
        assert isinstance(d, LoadedDocument)
        assert d.document.name == d.document_id


def test_skipped_files_have_reasons_and_the_rest_loads(loaded):
    reasons = {s.document_id: s.reason for s in loaded.skipped}
    assert set(reasons) == {
        ".DS_Store",
        ".git/",
        "blank.md",
        "budget.xlsx",
        "corrupt.pdf",
        "empty.txt",
        "scanned.pdf",
    }
    assert reasons[".DS_Store"] == "hidden file"
    assert reasons[".git/"] == "hidden folder (not searched)"
    assert reasons["empty.txt"] == "empty file (0 bytes)"
    assert reasons["blank.md"].startswith("empty file (only whitespace")
    assert reasons["corrupt.pdf"].startswith("cannot be read as PDF")
    assert reasons["scanned.pdf"].startswith("no text found")
    assert "unsupported file type '.xlsx'" in reasons["budget.xlsx"] and ".pdf" in reasons["budget.xlsx"]


def test_sha256_and_pages(loaded, corpus):
    by_id = {d.document_id: d for d in loaded.documents}
    for doc_id, d in by_id.items():
        assert d.sha256 == hashlib.sha256((corpus / doc_id).read_bytes()).hexdigest()
    assert by_id["PerksPlus.pdf"].n_pages == 4
    assert by_id["policy.docx"].n_pages == 0


def test_pdf_items_carry_page_provenance(loaded):
    perks = next(d for d in loaded.documents if d.document_id == "PerksPlus.pdf")
    doc = perks.document
    assert sorted(doc.pages) == [1, 2, 3, 4]
    items = [item for item, _ in doc.iterate_items()]
    assert all(len(item.prov) == 1 for item in items)
    page = {item.text: item.prov[0].page_no for item in items}
    assert page["• Skiing and snowboarding lessons"] == 3  # see test_pdf.py for where this comes from
    assert page["• Food and supplements"] == 4
    item = items[0]
    assert item.prov[0].charspan == (0, len(item.text))
    assert item.prov[0].bbox.t > item.prov[0].bbox.b  # bottom-left origin


def test_docling_formats_keep_structure(loaded):
    by_id = {d.document_id: d for d in loaded.documents}
    docx_items = [(item.label.value, item.text) for item, _ in by_id["policy.docx"].document.iterate_items()]
    assert ("section_header", "Leave policy") in docx_items
    assert ("text", "Employees get 25 days of paid leave.") in docx_items
    assert "Max 200 EUR per night." in _texts(by_id["travel.html"])
    assert _texts(by_id["sub/x.md"]) == ["Expenses", "Submit receipts within 30 days."]


def test_txt_and_json_paragraphs(loaded):
    by_id = {d.document_id: d for d in loaded.documents}
    assert _texts(by_id["sub/deeper/notes.txt"]) == ["First paragraph,\nsecond line.", "Second paragraph."]
    # one item per top-level key, values pretty-printed with a 2-space indent
    assert _texts(by_id["faq.json"]) == ['"vpn": "Use the VPN abroad."', '"laptops": {\n  "refresh_years": 3\n}']
    # JSON that does not parse is read as plain text
    assert _texts(by_id["broken.json"]) == ['{"unterminated": "yes']


def test_skips_are_logged_and_reported(corpus, caplog):
    seen: list[SkippedFile] = []
    calls: list[tuple[int, int]] = []
    with caplog.at_level(logging.INFO, logger="core.documents.loader"):  # skips log at INFO
        result = load_documents(corpus, on_skip=seen.append, progress=lambda done, total: calls.append((done, total)))
    assert sorted(seen, key=lambda s: s.document_id) == result.skipped
    assert "corrupt.pdf" in caplog.text and "does not parse as JSON" in caplog.text
    # 12 visible files (7 loaded + 5 skipped); hidden ones are not counted
    assert calls == [(i, 12) for i in range(1, 13)]


def test_tqdm_like_progress(tmp_path):
    (tmp_path / "a.txt").write_text("alpha", encoding="utf-8")
    (tmp_path / "b.txt").write_text("beta", encoding="utf-8")

    class Bar:
        total = None
        n = 0

        def update(self, k: int) -> None:
            self.n += k

    bar = Bar()
    load_documents(tmp_path, progress=bar)
    assert (bar.total, bar.n) == (2, 2)


def test_missing_folder_raises_with_path(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(DocumentError, match="nope"):
        load_documents(missing)


def test_folder_without_loadable_documents_raises(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "data.csv").write_text("a,b\n", encoding="utf-8")
    with pytest.raises(DocumentError, match=r"no loadable document in .*empty\.txt: empty file"):
        load_documents(tmp_path)
    empty = tmp_path / "nothing"
    empty.mkdir()
    with pytest.raises(DocumentError, match="has no files"):
        load_documents(empty)


def test_corpus_fingerprint(loaded):
    docs = loaded.documents
    # hand computation: sha256 over "id\0sha\n" lines sorted by id
    expected = hashlib.sha256(
        "".join(f"{d.document_id}\0{d.sha256}\n" for d in sorted(docs, key=lambda d: d.document_id)).encode()
    ).hexdigest()
    assert corpus_fingerprint(docs) == expected
    assert corpus_fingerprint(list(reversed(docs))) == expected
    changed = [LoadedDocument(docs[0].document_id, docs[0].document, "0" * 64, docs[0].n_pages), *docs[1:]]
    assert corpus_fingerprint(changed) != expected
    assert corpus_fingerprint(docs[1:]) != expected
