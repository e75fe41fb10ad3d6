"""check_golden, read_golden and format_check on small files written by hand.

Expected line numbers and messages are read off the files the tests write (hand computation).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from core.errors import GoldenError
from core.golden import (
    GoldenCheck,
    Problem,
    Target,
    check_golden,
    format_check,
    read_bytes,
    read_golden,
)

OK_ROW = {"id": "ok", "question": "What is covered?", "expected": ["a.pdf"]}


def write(tmp_path: Path, *lines: str | dict, name: str = "golden.jsonl") -> Path:
    """Write lines (dicts as JSON) joined by newlines, with a final newline."""
    path = tmp_path / name
    text = "\n".join(json.dumps(x) if isinstance(x, dict) else x for x in lines) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def where(check: GoldenCheck, severity: str = "error") -> list[tuple[int | None, str | None]]:
    return [(p.line, p.field) for p in check.problems if p.severity == severity]


# --- a good file ----------------------------------------------------------------------------


def test_good_file_reads_every_field(tmp_path):
    path = write(
        tmp_path,
        {"id": 12, "question": "Who pays?", "expected": ["a.pdf#page=3", "b.md"], "reference": "HR",
         "evidence": ["the employer pays half"]},
        "",
        {"question": "Where?", "expected": ["c.txt"]},
    )
    golden = read_golden(path)
    assert golden.path == str(path)
    assert golden.raw == path.read_bytes()
    assert golden.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert golden.warnings == []
    first, second = golden.questions
    assert first.id == "12"  # an integer id becomes its string
    assert first.expected == (Target("a.pdf", 3), Target("b.md"))
    assert first.reference == "HR"
    assert first.evidence == ("the employer pays half",)
    assert first.line == 1
    assert second.id == "line-3"  # no id: line-N, the blank line 2 counted
    assert second.line == 3
    assert second.reference is None


def test_str_and_path_are_both_accepted(tmp_path):
    path = write(tmp_path, OK_ROW)
    assert check_golden(str(path)).n_ready == check_golden(path).n_ready == 1
    assert read_bytes(str(path)) == read_bytes(path) == path.read_bytes()


def test_page_parsing():
    assert Target.parse("a.pdf#page=3") == Target("a.pdf", 3)
    assert Target.parse("a.pdf") == Target("a.pdf", None)
    assert str(Target("a.pdf", 3)) == "a.pdf#page=3"


def test_bom_is_accepted_and_stripped(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(OK_ROW).encode() + b"\n")
    check = check_golden(path)
    assert check.ok and check.n_ready == 1
    assert check.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()  # of the bytes as stored


def test_crlf_line_endings(tmp_path):
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(json.dumps(OK_ROW).encode() + b"\r\n\r\n" + json.dumps({**OK_ROW, "id": "b", "question": "Q2"}).encode() + b"\r\n")
    golden = read_golden(path)
    assert [(q.id, q.line) for q in golden.questions] == [("ok", 1), ("b", 3)]


# --- each problem kind, with its line ---------------------------------------------------------


def test_not_json_names_the_column(tmp_path):
    path = write(tmp_path, OK_ROW, '{"question": "x",, }')
    check = check_golden(path)
    assert check.errors == [
        Problem("error", "not valid JSON: Expecting property name enclosed in double quotes at column 18", 2)
    ]


def test_not_an_object(tmp_path):
    check = check_golden(write(tmp_path, OK_ROW, "[1, 2]", '"text"'))
    assert [(p.line, p.message) for p in check.errors] == [
        (2, "not a JSON object (got array); each line holds one object"),
        (3, "not a JSON object (got string); each line holds one object"),
    ]


def test_typo_expeted_is_an_error_with_a_suggestion(tmp_path):
    path = write(tmp_path, OK_ROW, {"question": "Q2", "expeted": ["a.pdf"]})
    check = check_golden(path)
    assert not check.ok
    assert check.n_ready == 1  # the typo row is not ready, and not silently dropped either
    assert check.errors == [
        Problem("error", "unknown field; did you mean 'expected'?", 2, "expeted"),
        Problem(
            "error",
            "missing: give at least one document id, or one page as 'name.pdf#page=N' (is 'expeted' a typo?)",
            2,
            "expected",
        ),
    ]
    with pytest.raises(GoldenError):
        read_golden(path)


def test_unknown_field_without_a_near_name_lists_the_known_ones(tmp_path):
    check = check_golden(write(tmp_path, OK_ROW, {"question": "Q2", "expected": ["a.pdf"], "zzz": 1}))
    assert check.errors == [
        Problem("error", "unknown field; known fields: id, question, expected, reference, evidence, hint, draft, grades, metadata", 2, "zzz")
    ]


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({"expected": ["a.pdf"]}, "question",
         "missing: every row needs a question (or a hint, to mark it a template)"),
        ({"question": "", "expected": ["a.pdf"]}, "question",
         "is empty: write the question (or add a hint to mark the row a template)"),
        ({"question": " \t ", "expected": ["a.pdf"]}, "question",
         "is empty: write the question (or add a hint to mark the row a template)"),
        ({"question": "Q"}, "expected",
         "missing: give at least one document id, or one page as 'name.pdf#page=N'"),
        ({"question": "Q", "expected": []}, "expected",
         "is empty: give at least one document id, or one page as 'name.pdf#page=N'"),
    ],
)
def test_missing_or_empty(tmp_path, row, field, message):
    check = check_golden(write(tmp_path, OK_ROW, "", row))
    assert check.errors == [Problem("error", message, 3, field)]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("id", True, "must be a string or an integer, got boolean"),
        ("id", 1.5, "must be a string or an integer, got number"),
        ("question", 5, "must be a string, got integer"),
        ("expected", "a.pdf", "must be an array, got string"),
        ("reference", None, "must be a string, got null"),
        ("evidence", "quote", "must be an array, got string"),
        ("hint", ["h"], "must be a string, got array"),
        ("draft", "yes", "must be a boolean (true or false), got string"),
    ],
)
def test_wrong_types(tmp_path, field, value, message):
    check = check_golden(write(tmp_path, OK_ROW, {"id": "two", "question": "Q2", "expected": ["a.pdf"], field: value}))
    assert check.errors == [Problem("error", message, 2, field)]
    assert check.n_ready == 1


def test_wrong_item_types(tmp_path):
    check = check_golden(write(tmp_path, {"question": "Q", "expected": ["a.pdf", 3], "evidence": [None]}))
    assert [(p.line, p.field, p.message) for p in check.errors] == [
        (1, "expected[1]", "must be a string, got integer"),
        (1, "evidence[0]", "must be a string, got null"),
        (None, None, "nothing ready to score: none of the 1 row is ready (1 with errors)"),
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x.pdf#page=0", "page '0' in 'x.pdf#page=0' is not a positive integer (pages count from 1)"),
        ("x.pdf#page=abc", "page 'abc' in 'x.pdf#page=abc' is not a positive integer (pages count from 1)"),
        ("x.pdf#page=", "page '' in 'x.pdf#page=' is not a positive integer (pages count from 1)"),
        ("x.pdf#page=-2", "page '-2' in 'x.pdf#page=-2' is not a positive integer (pages count from 1)"),
        ("  ", "document id is empty"),
    ],
)
def test_bad_pages(tmp_path, value, message):
    check = check_golden(write(tmp_path, OK_ROW, {"question": "Q2", "expected": ["a.pdf", value]}))
    assert check.errors == [Problem("error", message, 2, "expected[1]")]


def test_duplicate_id_names_both_lines(tmp_path):
    check = check_golden(write(tmp_path, {"id": 7, "question": "A", "expected": ["a.pdf"]}, "",
                               {"id": "x", "question": "B", "expected": ["a.pdf"]},
                               {"id": "7", "question": "C", "expected": ["a.pdf"]}))
    assert check.errors == [Problem("error", "duplicate id '7': lines 1 and 4", 4, "id")]
    assert check.n_ready == 2


def test_duplicate_question_ignores_case_and_whitespace(tmp_path):
    check = check_golden(write(tmp_path, {"question": "What is  covered?", "expected": ["a.pdf"]},
                               {"question": " what IS covered? ", "expected": ["b.pdf"]}))
    assert check.errors == [
        Problem("error", "duplicate question: lines 1 and 2 ask the same (ignoring case and spaces)", 2, "question")
    ]


def test_field_given_twice_on_a_line(tmp_path):
    check = check_golden(write(tmp_path, OK_ROW, '{"question": "Q", "expected": ["a.pdf"], "question": "R"}'))
    assert check.errors == [Problem("error", "given more than once on this line (the last value would win)", 2, "question")]


def test_nothing_ready_to_score(tmp_path):
    check = check_golden(write(tmp_path, {"hint": "ask about leave"},
                               {"question": "Q", "expected": ["a.pdf"], "draft": True}))
    assert check.errors == [
        Problem("error", "nothing ready to score: none of the 2 rows is ready (1 template, 1 draft)")
    ]


# --- warnings ---------------------------------------------------------------------------------


def test_templates_and_drafts_are_counted_and_not_scored(tmp_path):
    path = write(
        tmp_path,
        OK_ROW,
        {"hint": "a question about parental leave"},
        {"question": "  ", "hint": "rephrase", "expected": []},
        {"id": "d", "question": "Drafted?", "expected": ["a.pdf"], "draft": True},
        {"id": "f", "question": "Checked?", "expected": ["a.pdf"], "draft": False},
    )
    check = check_golden(path)
    assert check.ok
    assert (check.n_lines, check.n_ready, check.n_templates, check.n_drafts) == (5, 2, 2, 1)
    assert [(p.line, p.field, p.message) for p in check.warnings] == [
        (2, None, "template row (a hint with an empty question): fill it in; not scored"),
        (3, None, "template row (a hint with an empty question): fill it in; not scored"),
        (4, "draft", "unchecked draft, not scored (set it to false or remove it once checked)"),
    ]
    golden = read_golden(path)
    assert [q.id for q in golden.questions] == ["ok", "f"]
    assert (golden.n_templates, golden.n_drafts) == (2, 1)
    assert golden.warnings == check.warnings


def test_documents_missing_from_the_corpus(tmp_path):
    path = write(tmp_path, {"question": "Q", "expected": ["handbok.pdf#page=2", "a.pdf", "zzz"]})
    check = check_golden(path, documents=["handbook.pdf", "a.pdf"])
    assert check.ok and check.n_ready == 1
    assert check.warnings == [
        Problem("warning", "document 'handbok.pdf' is not in the corpus; did you mean 'handbook.pdf'?", 1, "expected[0]"),
        Problem("warning", "document 'zzz' is not in the corpus", 1, "expected[2]"),
    ]
    assert check_golden(path).warnings == []  # without documents, no corpus check


def test_short_evidence_one_warning_per_line(tmp_path):
    path = write(tmp_path, {"question": "Q", "expected": ["a.pdf"], "evidence": ["France", "the tenth century", "two words"]})
    check = check_golden(path)
    assert check.warnings == [
        Problem("warning", '2 quotes under 3 words, not used for evidence matching: "France", "two words"', 1, "evidence")
    ]
    (question,) = read_golden(path).questions
    assert question.evidence == ("France", "the tenth century", "two words")
    assert question.usable_evidence == ["the tenth century"]


# --- many problems, one pass ------------------------------------------------------------------


def test_every_problem_in_one_pass(tmp_path):
    path = write(
        tmp_path,
        {"id": 1, "question": "What?", "expected": ["a.pdf"]},   # 1 ok
        "",                                                      # 2 blank
        "not json",                                              # 3
        {"id": 1, "question": "Other?", "expected": ["a.pdf"]},  # 4 duplicate id of line 1
        "   ",                                                   # 5 blank
        {"question": "WHAT?", "expected": ["b.pdf#page=0"]},     # 6 duplicate question + bad page
        {"question": "Q7", "expeted": ["a.pdf"]},                # 7 typo
        {"question": "Q8", "expected": ["a.pdf"], "draft": 1},   # 8 wrong type
    )
    check = check_golden(path)
    assert where(check) == [
        (3, None),
        (4, "id"),
        (6, "question"),
        (6, "expected[0]"),
        (7, "expeted"),
        (7, "expected"),
        (8, "draft"),
    ]
    assert check.n_lines == 6 and check.n_ready == 1
    with pytest.raises(GoldenError) as info:
        read_golden(path)
    assert info.value.problems == check.errors
    lines = str(info.value).split("\n")
    assert lines[0] == f"{path}: 7 errors — cannot run"
    assert lines[1:] == [p.format(str(path)) for p in check.errors]
    assert lines[2] == f"{path}:4: error: field 'id': duplicate id '1': lines 1 and 4"


# --- files that cannot be read ----------------------------------------------------------------


def _only_error(check: GoldenCheck) -> str:
    assert len(check.problems) == 1
    (problem,) = check.problems
    assert problem.severity == "error" and problem.line is None
    return problem.message


def test_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    check = check_golden(path)
    assert _only_error(check) == "file is empty: a golden file holds one JSON object per line"
    assert check.sha256 == hashlib.sha256(b"").hexdigest()


def test_only_blank_lines(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n  \n\t\n")
    assert _only_error(check_golden(path)) == "file holds only blank lines: a golden file holds one JSON object per line"


def test_missing_file(tmp_path):
    check = check_golden(tmp_path / "nope.jsonl")
    assert _only_error(check) == "file not found"
    assert check.sha256 is None
    with pytest.raises(GoldenError) as info:
        read_golden(tmp_path / "nope.jsonl")
    assert str(info.value) == f"{tmp_path / 'nope.jsonl'}: 1 error — cannot run\n{tmp_path / 'nope.jsonl'}: error: file not found"


def test_directory(tmp_path):
    assert _only_error(check_golden(tmp_path)) == (
        "is a directory, not a golden file (a .jsonl file, one JSON object per line)"
    )


def test_not_utf8(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(OK_ROW).encode() + b"\n" + '{"question": "café"}\n'.encode("latin-1"))
    offset = len(json.dumps(OK_ROW)) + 1 + len('{"question": "caf')
    assert _only_error(check_golden(path)) == (
        f"the file is not UTF-8: byte 0xe9 at offset {offset} (line 2) cannot be decoded; save it as UTF-8"
    )


def test_one_json_array(tmp_path):
    path = tmp_path / "array.json"
    path.write_text(json.dumps([OK_ROW]))
    assert _only_error(check_golden(path)) == (
        "the file is one JSON array; a golden file holds one JSON object per line (JSON Lines)"
    )


def test_unknown_schemes_are_refused_clearly():
    with pytest.raises(GoldenError) as info:
        read_bytes("ftp://host/golden.jsonl")
    assert str(info.value) == (
        "ftp://host/golden.jsonl: error: cannot read ftp:// addresses ('ftp://host/golden.jsonl'): give a local path, "
        "s3://<bucket>/<key> or https://<account>.blob.core.windows.net/<container>/<key>"
    )
    assert len(info.value.problems) == 1


def test_a_remote_address_without_a_key_is_a_file_level_problem():
    # Reading s3:// and Blob addresses is tested against real services in
    # tests/integration/test_remote_inputs.py; an address naming no file fails before any request.
    check = check_golden("s3://bucket/")
    assert check.sha256 is None and not check.ok
    assert _only_error(check) == "cannot read the file: 's3://bucket/' names a folder, not a file: add the file's key"


def test_file_urls_are_local_paths(tmp_path):
    path = write(tmp_path, OK_ROW)
    assert read_bytes(path.as_uri()) == path.read_bytes()
    assert check_golden(path.as_uri()).path == path.as_uri()


# --- format_check -----------------------------------------------------------------------------


def test_format_check_ok(tmp_path):
    path = write(tmp_path, OK_ROW, {"hint": "h"}, {"question": "Q", "expected": ["a.pdf"], "draft": True})
    assert format_check(check_golden(path)) == "\n".join([
        f"{path}: OK — 1 question ready to score, 2 warnings (1 template, 1 draft not scored)",
        f"{path}:2: warning: template row (a hint with an empty question): fill it in; not scored",
        f"{path}:3: warning: field 'draft': unchecked draft, not scored (set it to false or remove it once checked)",
    ])


def test_format_check_errors_sorted_by_line():
    check = GoldenCheck(
        path="golden.jsonl",
        sha256="x",
        problems=[
            Problem("error", "nothing ready to score"),
            Problem("warning", "w", 9, "evidence"),
            Problem("error", "bad", 2, "expected"),
            Problem("error", "worse", 5),
        ],
    )
    assert format_check(check) == "\n".join([
        "golden.jsonl: 3 errors, 1 warning — cannot run",
        "golden.jsonl:2: error: field 'expected': bad",
        "golden.jsonl:5: error: worse",
        "golden.jsonl:9: warning: field 'evidence': w",
        "golden.jsonl: error: nothing ready to score",
    ])


@pytest.mark.parametrize("text", ["[" * 100000, '{"question": "q", "expected": ' + "[" * 100000 + "]" * 100000 + "}\n",
                                  '{"conversationTurns": ' + "[" * 100000 + "\n"])
def test_json_nested_too_deeply_is_an_error_on_its_line(tmp_path, text):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"question": "fine?", "expected": ["a.md"]}\n' + text)
    check = check_golden(path)
    assert not check.ok
    (deep,) = [e for e in check.errors if e.line == 2]
    assert "nested too deeply" in deep.message
