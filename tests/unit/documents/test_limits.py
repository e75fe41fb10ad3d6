"""Documents over a limit (bytes on disk, bytes unpacked, compression ratio, parts, pages,
characters) are skipped with the limit named, before they are parsed where the limit can be
seen then, and the documents within their limits still load; a ZIP bomb costs no more memory
than an ordinary file.

Expected reasons are written out by hand from the files the tests make (sizes from
``zipfile``'s own directory, page counts from the PDFs written)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from core.documents import load_documents
from core.documents.limits import DocumentTooLarge, check_zip
from core.errors import ConfigError, DocumentError
from core.limits import DocumentLimits
from core.settings import Settings, document_limits
from tests.support.bombs import understate_sizes, write_docx

ROOT = Path(__file__).resolve().parents[3]
LINE = (72.0, 700.0, 12.0, "A line of text on this page.")  # 28 characters


def _reasons(result) -> dict[str, str]:
    return {s.document_id: s.reason for s in result.skipped}


def _with_a_good_document(folder: Path) -> Path:
    (folder / "good.txt").write_text("An ordinary document.\n\nIt has two paragraphs.", encoding="utf-8")
    return folder


# --- ZIP-based files ----------------------------------------------------------------------------


def test_a_docx_zip_bomb_is_skipped_by_its_compression_ratio(tmp_path):
    xml = write_docx(tmp_path / "bomb.docx", 20 * 1024 * 1024)
    with zipfile.ZipFile(tmp_path / "bomb.docx") as archive:
        packed = archive.getinfo("word/document.xml").compress_size
    result = load_documents(_with_a_good_document(tmp_path), limits=DocumentLimits())
    assert [d.document_id for d in result.documents] == ["good.txt"]
    reason = _reasons(result)["bomb.docx"]
    # hand: the part's declared sizes, and their ratio rounded, over the default of 100
    assert reason == (f"a part expands too much to be an ordinary document (a ZIP bomb?): word/document.xml unpacks "
                      f"{packed:,} bytes to {xml:,}, {xml / packed:,.0f} times, more than 100 "
                      "(limit: RAGTUNE_DOCUMENT_MAX_INFLATE_RATIO)")
    assert xml / packed > 100


def test_declared_unpacked_sizes_over_the_limit_skip_the_file(tmp_path):
    xml = write_docx(tmp_path / "big.docx", 3 * 1024 * 1024)
    declared = sum(i.file_size for i in zipfile.ZipFile(tmp_path / "big.docx").infolist())
    assert declared > xml  # the content types and relationships parts too
    limits = DocumentLimits(max_unpacked_bytes=2 * 1024 * 1024, max_inflate_ratio=1e9)
    result = load_documents(_with_a_good_document(tmp_path), limits=limits)
    assert _reasons(result)["big.docx"] == (f"over the unpacked size limit: its parts declare {declared:,} bytes unpacked, "
                                            "more than 2,097,152 (limit: RAGTUNE_DOCUMENT_MAX_UNPACKED_BYTES)")


def test_a_header_that_understates_a_part_cannot_pass_the_limit(tmp_path):
    path = tmp_path / "liar.docx"
    write_docx(path, 3 * 1024 * 1024)
    understate_sizes(path, "word/document.xml", 1000)
    assert zipfile.ZipFile(path).getinfo("word/document.xml").file_size == 1000
    limits = DocumentLimits(max_unpacked_bytes=2 * 1024 * 1024, max_inflate_ratio=1e9)
    with pytest.raises(DocumentError, match="not a readable ZIP archive: part word/document.xml .*CRC") as caught:
        check_zip(path.read_bytes(), limits)
    assert not isinstance(caught.value, DocumentTooLarge)  # stopped at its declared 1,000 bytes: its CRC fails
    result = load_documents(_with_a_good_document(tmp_path), limits=limits)
    assert _reasons(result)["liar.docx"].startswith("cannot be read as DOCX (not a readable ZIP archive: part "
                                                    "word/document.xml (BadZipFile: Bad CRC-32")


def test_parts_are_counted_as_they_are_read_and_the_reading_stops_at_the_limit(tmp_path):
    from core.documents import limits as module

    path = tmp_path / "doc.docx"
    write_docx(path, 3 * 1024 * 1024)
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        read = []
        real_open = archive.open

        def counting_open(info, *args, **kwargs):
            part = real_open(info, *args, **kwargs)
            real_read = part.read
            part.read = lambda n=-1: read.append(n) or real_read(n)
            return part

        archive.open = counting_open
        # the declared sizes are checked first; past them, the reading itself stops at the limit
        with pytest.raises(DocumentTooLarge, match="its parts unpack to more than 2,097,152 bytes"):
            module._count_parts(archive, infos, DocumentLimits(max_unpacked_bytes=2 * 1024 * 1024))
    # hand: blocks of 1 MiB: each small part in one read and one more that finds its end (4),
    # then word/document.xml's 1st and 2nd MiB, which with the small parts' bytes pass 2 MiB (2)
    assert read == [module.READ_BLOCK_BYTES] * 6


def test_a_part_whose_crc_does_not_match_is_refused_before_parsing(tmp_path):
    import struct

    path = tmp_path / "crc.docx"
    write_docx(path, 10_000)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("word/document.xml")
    at = struct.unpack_from("<I", data, data.rfind(b"PK\x05\x06") + 16)[0]  # the central directory
    while True:  # flip the CRC-32 of word/document.xml's central directory entry (offset 16)
        n_name, n_extra, n_comment = struct.unpack_from("<HHH", data, at + 28)
        if bytes(data[at + 46:at + 46 + n_name]) == b"word/document.xml":
            struct.pack_into("<I", data, at + 16, info.CRC ^ 1)
            break
        at += 46 + n_name + n_extra + n_comment
    path.write_bytes(bytes(data))
    with pytest.raises(DocumentError, match="Bad CRC-32"):
        check_zip(path.read_bytes(), DocumentLimits())


def test_too_many_parts_are_refused_from_the_end_record(tmp_path):
    write_docx(tmp_path / "many.docx", 10_000, extra_parts=40)
    limits = DocumentLimits(max_zip_entries=20)
    with pytest.raises(DocumentTooLarge, match="the archive declares 43, more than 20") as caught:
        check_zip((tmp_path / "many.docx").read_bytes(), limits)  # 40 + content types, relationships, document
    assert caught.value.limit == "max_zip_entries"


def test_an_ordinary_docx_within_the_limits_loads(tmp_path):
    import docx

    d = docx.Document()
    d.add_heading("Leave policy", level=1)
    d.add_paragraph("Employees get 25 days of paid leave.")
    d.save(tmp_path / "policy.docx")
    check_zip((tmp_path / "policy.docx").read_bytes(), DocumentLimits())
    result = load_documents(tmp_path, limits=DocumentLimits())
    assert [d.document_id for d in result.documents] == ["policy.docx"] and result.skipped == []


def test_a_corrupt_zip_is_an_unreadable_document(tmp_path):
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip archive")
    result = load_documents(_with_a_good_document(tmp_path), limits=DocumentLimits())
    assert _reasons(result)["broken.docx"].startswith("cannot be read as DOCX (not a readable ZIP archive")


_MEMORY_SCRIPT = """
import json, resource, sys
import docling_core.types.doc  # imported before the baseline: the loader's types are not a document's cost
from core.documents import load_documents
from core.limits import DocumentLimits
out = []
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for folder, limits in json.loads(sys.argv[1]):
    result = load_documents(folder, limits=DocumentLimits(**limits))
    out.append({"loaded": [d.document_id for d in result.documents],
                "skipped": {s.document_id: s.reason for s in result.skipped}})
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_growth_kib": after - before, "results": out}))
"""


@pytest.mark.slow
def test_docx_bombs_are_skipped_within_bounded_memory(tmp_path):
    # the file: 100 MiB of XML in about 357 KB; read whole by docling it took gigabytes
    bomb = tmp_path / "bomb.docx"
    write_docx(bomb, 100 * 1024 * 1024)
    assert bomb.stat().st_size < 400_000
    cases = []
    for name, limits in [
        ("ratio", {}),  # the defaults: its compression ratio
        ("unpacked", {"max_inflate_ratio": 1e9, "max_unpacked_bytes": 64 * 1024 * 1024}),  # its declared sizes
        ("liar", {"max_inflate_ratio": 1e9, "max_unpacked_bytes": 64 * 1024 * 1024}),  # a header that understates
    ]:
        folder = tmp_path / name
        folder.mkdir()
        _with_a_good_document(folder)
        shutil.copy(bomb, folder / "bomb.docx")
        if name == "liar":  # 10 MiB declared: the ratio (about 30) and the sum pass; reading stops there
            understate_sizes(folder / "bomb.docx", "word/document.xml", 10 * 1024 * 1024)
        cases.append((str(folder), limits))
    # the loads run in a fresh interpreter, whose peak resident memory (getrusage's ru_maxrss)
    # is read before and after all three
    done = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, json.dumps(cases)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    ratio, unpacked, liar = found["results"]
    assert all(r["loaded"] == ["good.txt"] for r in found["results"])
    assert "(limit: RAGTUNE_DOCUMENT_MAX_INFLATE_RATIO)" in ratio["skipped"]["bomb.docx"]
    assert "(limit: RAGTUNE_DOCUMENT_MAX_UNPACKED_BYTES)" in unpacked["skipped"]["bomb.docx"]
    assert "Bad CRC-32" in liar["skipped"]["bomb.docx"]
    # bound: the file on disk, one read block and the archive's directory, far under the XML's 100 MiB
    assert found["peak_growth_kib"] < 32 * 1024, found
    print(f"peak resident memory grew {found['peak_growth_kib']} KiB over the three loads")


# --- PDF ----------------------------------------------------------------------------------------


def test_a_pdf_over_the_page_limit_is_skipped_before_its_text_is_read(tmp_path, make_pdf, monkeypatch):
    from core.documents import pdf

    (tmp_path / "long.pdf").write_bytes(make_pdf([[LINE]] * 6))
    (tmp_path / "short.pdf").write_bytes(make_pdf([[LINE]] * 5))
    pages_read = []
    real = pdf._page_lines
    monkeypatch.setattr(pdf, "_page_lines", lambda textpage: pages_read.append(1) or real(textpage))
    result = load_documents(tmp_path, limits=DocumentLimits(max_pages=5))
    assert _reasons(result) == {"long.pdf": "over the page limit: 6 pages, more than 5 (limit: RAGTUNE_DOCUMENT_MAX_PAGES)"}
    assert [(d.document_id, d.n_pages) for d in result.documents] == [("short.pdf", 5)]
    assert len(pages_read) == 5  # the short file's pages only: none of the long one's


def test_a_pdf_over_the_character_limit_stops_being_read_at_the_page_that_passes_it(tmp_path, make_pdf, monkeypatch):
    from core.documents import pdf

    (tmp_path / "wordy.pdf").write_bytes(make_pdf([[LINE]] * 10))
    pages_read = []
    real = pdf._page_lines
    monkeypatch.setattr(pdf, "_page_lines", lambda textpage: pages_read.append(1) or real(textpage))
    result = load_documents(_with_a_good_document(tmp_path), limits=DocumentLimits(max_chars=100))
    assert _reasons(result)["wordy.pdf"] == ("over the character limit: more than 100 characters of text "
                                             "(limit: RAGTUNE_DOCUMENT_MAX_CHARS)")
    # hand: pdfium counts 28 characters a page; the 4th page brings the count to 112, past 100
    assert len(pages_read) == 3


# --- text formats -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["big.txt", "big.md", "big.html", "big.json"])
def test_a_text_file_over_the_size_limit_is_skipped_unread(tmp_path, name):
    (tmp_path / name).write_bytes(b"x" * 2049)
    result = load_documents(_with_a_good_document(tmp_path), limits=DocumentLimits(max_bytes=2048))
    assert _reasons(result) == {name: "over the size limit: 2,049 bytes on disk, more than 2,048 "
                                      "(limit: RAGTUNE_DOCUMENT_MAX_BYTES)"}


@pytest.mark.parametrize("name, content", [
    ("long.txt", "word " * 30),
    ("long.md", "# Title\n\n" + "word " * 30),
    ("long.html", "<html><body><p>" + "word " * 30 + "</p></body></html>"),
])
def test_extracted_text_over_the_character_limit_is_skipped(tmp_path, name, content):
    (tmp_path / name).write_text(content, encoding="utf-8")
    result = load_documents(_with_a_good_document(tmp_path), limits=DocumentLimits(max_chars=100))
    assert _reasons(result) == {name: "over the character limit: more than 100 characters of text "
                                      "(limit: RAGTUNE_DOCUMENT_MAX_CHARS)"}


def test_json_nested_past_parsing_is_read_as_text_not_a_traceback(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    result = load_documents(tmp_path, limits=DocumentLimits())
    assert [d.document_id for d in result.documents] == ["deep.json"]


# --- settings -----------------------------------------------------------------------------------


def test_limits_come_from_the_environment_when_not_given(tmp_path, make_pdf, monkeypatch):
    (tmp_path / "long.pdf").write_bytes(make_pdf([[LINE]] * 3))
    monkeypatch.setenv("RAGTUNE_DOCUMENT_MAX_PAGES", "2")
    result = load_documents(_with_a_good_document(tmp_path))
    assert "over the page limit: 3 pages, more than 2" in _reasons(result)["long.pdf"]


def test_document_limits_read_their_variables_and_default_to_core_limits():
    assert document_limits({}) == DocumentLimits() == Settings.from_env({}).document_limits
    env = {"RAGTUNE_DOCUMENT_MAX_BYTES": "1000", "RAGTUNE_DOCUMENT_MAX_UNPACKED_BYTES": "2_000",
           "RAGTUNE_DOCUMENT_MAX_INFLATE_RATIO": "12.5", "RAGTUNE_DOCUMENT_MAX_PAGES": " 30 ",
           "RAGTUNE_DOCUMENT_MAX_CHARS": "400"}
    assert document_limits(env) == DocumentLimits(max_bytes=1000, max_unpacked_bytes=2000, max_inflate_ratio=12.5,
                                                  max_pages=30, max_chars=400)
    assert Settings.from_env(env).document_limits == document_limits(env)
    defaults = DocumentLimits()
    assert (defaults.max_bytes, defaults.max_unpacked_bytes, defaults.max_inflate_ratio, defaults.max_pages,
            defaults.max_chars) == (64 * 2**20, 256 * 2**20, 100, 5000, 20_000_000)


@pytest.mark.parametrize("name, value", [
    ("RAGTUNE_DOCUMENT_MAX_BYTES", "0"), ("RAGTUNE_DOCUMENT_MAX_PAGES", "-3"), ("RAGTUNE_DOCUMENT_MAX_CHARS", "1e6"),
    ("RAGTUNE_DOCUMENT_MAX_INFLATE_RATIO", "nan"), ("RAGTUNE_DOCUMENT_MAX_UNPACKED_BYTES", "lots"),
])
def test_a_limit_that_is_not_a_positive_number_is_a_config_error(name, value):
    with pytest.raises(ConfigError, match=name):
        document_limits({name: value})
