"""The command line on inputs a new user meets on a clean clone: a golden file that is a device,
a documents folder whose expected files do not load, and a symbolic link out of the documents
folder. Exit codes and printed lines are written out by hand from the files each test writes."""

from __future__ import annotations

import json

import pytest

from core.cli import main

pytestmark = pytest.mark.integration

LEAVE = ("Employees may carry over five days of leave into the next year, with their manager's approval. "
         "Days carried over must be taken before the end of March, or they are lost. Requests go through the "
         "portal at least two weeks ahead.")  # 41 words: over the 25 a template unit needs


def test_check_dev_zero_is_refused_at_once(capsys):
    assert main(["check", "/dev/zero"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[1] == ("/dev/zero: error: is a character device, not a golden file: ragtune reads a golden "
                                   "file only from a regular file (save it to a file and give its path)")


def test_check_docs_fails_when_the_expected_documents_do_not_load(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00")
    (docs / "b.txt").write_bytes(b"\x00\x00\x00\x00")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "q1", "question": "Who pays?", "expected": ["a.txt"]}) + "\n"
                      + json.dumps({"id": "q2", "question": "Who books?", "expected": ["b.txt"]}) + "\n")
    assert main(["check", str(golden), "--docs", str(docs)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{golden}: 3 errors — cannot run"
    assert lines[1] == (f"{golden}:1: error: field 'expected': expected document 'a.txt' is in {docs} but does not "
                        "load: binary data in a text file (NUL bytes)")
    assert lines[3].startswith(f"{golden}: error: field 'expected': no question has an expected document that loads")


def test_template_never_reads_a_link_out_of_the_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "out"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.txt").write_text(LEAVE, encoding="utf-8")
    (docs / "passwd.txt").symlink_to("/etc/passwd")
    out = tmp_path / "template.jsonl"
    assert main(["template", "--docs", str(docs), "-o", str(out)]) == 0
    printed = capsys.readouterr()
    assert "skipped passwd.txt: symbolic link out of the documents folder (to /etc/passwd): not read" in printed.err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["expected"] for r in rows] == [["leave.txt"]]
    assert "root:" not in out.read_text(encoding="utf-8")
