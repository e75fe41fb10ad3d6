"""``check --docs`` on folders whose expected documents are there but do not load: errors on the
lines that expect them (with the loader's reason), and a file-level error when no question has
an expected document that loads. Expected problems are written out by hand from the files each
test writes."""

from __future__ import annotations

import json
from pathlib import Path

from core.documents import list_document_ids
from core.golden import Problem, check_golden
from core.golden.corpus_check import add_corpus_problems

LEAVE = "Employees may carry over five days of leave into the next year."
NUL = "binary data in a text file (NUL bytes)"


def _golden(tmp_path: Path, *rows: dict) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _check(golden: Path, docs: Path):
    check = check_golden(golden, documents=list_document_ids(docs))
    added = add_corpus_problems(check, golden, docs, document_ids=list_document_ids(docs))
    return check, added


def test_binary_files_named_txt_fail_the_check_on_their_lines(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00")  # the start of an executable
    (docs / "b.txt").write_bytes(b"\x00\x01\x02\x03")
    golden = _golden(tmp_path, {"id": "q1", "question": "Who pays?", "expected": ["a.txt"]},
                     {"id": "q2", "question": "Who books?", "expected": ["b.txt"]})
    check, added = _check(golden, docs)
    assert added == 3 and not check.ok
    assert check.errors == [
        Problem("error", f"expected document 'a.txt' is in {docs} but does not load: {NUL}", 1, "expected"),
        Problem("error", f"expected document 'b.txt' is in {docs} but does not load: {NUL}", 2, "expected"),
        Problem("error", f"no question has an expected document that loads from {docs} (2 documents expected; the "
                         "lines above say why each does not load): every score would be 0", None, "expected"),
    ]
    assert check.warnings == []  # "can only score 0" is not said a second time


def test_one_document_that_loads_keeps_the_file_runnable_but_the_other_line_is_an_error(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.txt").write_text(LEAVE, encoding="utf-8")
    (docs / "empty.txt").write_bytes(b"   \n")
    (docs / "other.bin.txt").write_bytes(b"\x00")  # not expected: never read, never reported
    golden = _golden(tmp_path, {"id": "q1", "question": "How many days carry over?", "expected": ["leave.txt"]},
                     {"id": "q2", "question": "What is in the empty one?", "expected": ["empty.txt", "leave.txt"]})
    check, added = _check(golden, docs)
    assert added == 1
    assert check.errors == [Problem("error", f"expected document 'empty.txt' is in {docs} but does not load: empty "
                                             "file (only whitespace, 4 bytes)", 2, "expected")]


def test_with_evidence_the_whole_folder_is_loaded_and_skips_are_still_errors(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.txt").write_text(LEAVE, encoding="utf-8")
    (docs / "bad.txt").write_bytes(b"\x00abc")
    golden = _golden(tmp_path,
                     {"id": "q1", "question": "How many days?", "expected": ["leave.txt"],
                      "evidence": ["carry over five days"]},
                     {"id": "q2", "question": "What is bad?", "expected": ["bad.txt"]})
    check, _ = _check(golden, docs)
    assert check.errors == [Problem("error", f"expected document 'bad.txt' is in {docs} but does not load: {NUL}",
                                    2, "expected")]


def test_documents_that_load_add_nothing(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.txt").write_text(LEAVE, encoding="utf-8")
    golden = _golden(tmp_path, {"id": "q1", "question": "How many days?", "expected": ["leave.txt"]})
    check, added = _check(golden, docs)
    assert added == 0 and check.ok and check.problems == []
