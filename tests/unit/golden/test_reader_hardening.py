"""check_golden on large, repetitive and hostile files: bounded results, grouped unknown fields,
hostile values reported on their line, page anchors and Unicode forms of document ids.

Expected counts, lines and sizes are computed by hand from the files each test writes.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest

from core.golden import (
    MAX_CHECK_BYTES,
    CheckLimits,
    Problem,
    Target,
    check_golden,
    format_check,
    read_golden,
)
from core.errors import GoldenError

OK_ROW = {"id": "ok", "question": "What is covered?", "expected": ["a.pdf"]}


def write_text(tmp_path: Path, text: str, name: str = "golden.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def rows(n: int, **extra) -> str:
    return "".join(json.dumps({"id": f"q{i}", "question": f"Question {i}?", "expected": ["a.pdf"], **extra}) + "\n"
                   for i in range(1, n + 1))


# --- unknown fields repeated on many lines -----------------------------------------------------


def test_an_unknown_field_on_100_lines_is_one_error_suggesting_metadata(tmp_path):
    check = check_golden(write_text(tmp_path, rows(100, type="factual")))
    assert check.errors == [
        Problem("error", 'is unknown on 100 lines (1, 2, 3, 4, 5, ...): put it under "metadata"', 1, "type"),
        Problem("error", "nothing ready to score: none of the 100 rows is ready (100 with errors)"),
    ]
    assert check.n_ready == 0 and check.omitted == []


def test_a_repeated_typo_keeps_its_suggestion_and_every_row_stays_an_error(tmp_path):
    text = "".join(json.dumps({"question": f"Q{i}?", "expeted": ["a.pdf"]}) + "\n" for i in range(3)) + json.dumps(OK_ROW)
    check = check_golden(write_text(tmp_path, text))
    unknown = [p for p in check.errors if p.field == "expeted"]
    assert unknown == [Problem("error", "is unknown on 3 lines (1, 2, 3): did you mean 'expected'? Else put it under "
                                        '"metadata"', 1, "expeted")]
    # each of lines 1-3 still misses "expected": the unknown field never hides a row's problem
    assert [(p.line, p.field) for p in check.errors if p.field == "expected"] == [(1, "expected"), (2, "expected"),
                                                                                  (3, "expected")]
    assert check.n_ready == 1


def test_an_unknown_field_on_two_lines_is_reported_per_line(tmp_path):
    check = check_golden(write_text(tmp_path, rows(2, level="easy")))
    assert [(p.line, p.field, p.message.split(";")[0]) for p in check.errors if p.line] == [
        (1, "level", "unknown field"), (2, "level", "unknown field")]


def test_metadata_is_a_known_field_holding_an_object(tmp_path):
    check = check_golden(write_text(tmp_path, rows(2, metadata={"type": "factual", "level": 2})))
    assert check.ok and check.n_ready == 2
    bad = check_golden(write_text(tmp_path, rows(1, metadata="factual")))
    assert [(p.line, p.field, p.message) for p in bad.errors if p.line] == [(1, "metadata", "must be an object, got string")]


def test_unbounded_grouping_names_every_line_as_ranges(tmp_path):
    text = rows(7, type="x").splitlines()
    text[3] = json.dumps({"id": "q4", "question": "Question 4?", "expected": ["a.pdf"]})
    check = check_golden(write_text(tmp_path, "\n".join(text) + "\n"), limits=CheckLimits.unbounded())
    assert check.errors[0].message == 'is unknown on 6 lines (1-3, 5-7): put it under "metadata"'


# --- bounded results ---------------------------------------------------------------------------


def test_problems_are_capped_per_kind_with_the_rest_counted_as_line_ranges(tmp_path):
    # 250 lines without "expected", then 30 lines with a question that is not a string.
    text = "".join(json.dumps({"question": f"Q{i}?"}) + "\n" for i in range(250))
    text += "".join(json.dumps({"question": i, "expected": ["a.pdf"]}) + "\n" for i in range(30))
    check = check_golden(write_text(tmp_path, text))
    missing = [p for p in check.errors if p.field == "expected"]
    typed = [p for p in check.errors if p.field == "question"]
    assert [p.line for p in missing] == list(range(1, 101))
    assert [p.line for p in typed] == list(range(251, 281))  # 30 < 100: all listed
    [rest] = check.omitted
    assert (rest.count, rest.lines) == (150, "101-250")
    assert check.n_errors == 250 + 30 + 1 and not check.ok
    text = format_check(check)
    assert text.splitlines()[0].endswith("281 errors — cannot run")
    assert "error: 150 more like this, on lines 101-250: field 'expected': missing" in text
    every = check_golden(check.path, limits=CheckLimits.unbounded())
    assert len(every.errors) == 281 and every.omitted == []


def test_omitted_lines_keep_ten_ranges_then_count():
    from core.golden.problems import ProblemLog

    log = ProblemLog(CheckLimits(per_kind=1))
    for line in range(1, 40, 2):  # lines 1, 3, ..., 39: 20 lines, none adjacent
        log.add(Problem("error", "missing", line, "expected"))
    [rest] = log.omitted()
    # line 1 is listed; 3, 5, ..., 21 are the ten ranges kept; 23..39 are 9 more lines
    assert rest.count == 19
    assert rest.lines == "3, 5, 7, 9, 11, 13, 15, 17, 19, 21 and 9 more lines"


def test_a_worst_case_file_gives_a_check_under_the_stated_size(tmp_path):
    # Every line different and long: unknown fields with long non-ASCII names (astral characters,
    # 12 bytes each as JSON escapes), documents missing from the corpus, long short-evidence quotes.
    # 1,500 such lines list far more than the byte budget of listed problems (400 KB) would hold.
    name = "\U0001f600" * 300
    lines = []
    for i in range(1500):
        lines.append(json.dumps({f"{name}{i}": 1, "question": f"Q{i}?", "expected": [f"{name}{i}.pdf"],
                                 "evidence": [name * 3 + str(i)], "id": [i]}, ensure_ascii=False))
        lines.append("{" + "x" * 100 + str(i))
    path = write_text(tmp_path, "\n".join(lines) + "\n")
    check = check_golden(path, documents=["a.pdf"])
    for ascii_only in (True, False):
        size = len(json.dumps(check.to_dict(), ensure_ascii=ascii_only).encode("utf-8"))
        assert size < MAX_CHECK_BYTES
    assert check.n_errors >= 3000 and check.omitted
    assert len(format_check(check).encode("utf-8")) < MAX_CHECK_BYTES


def test_read_golden_error_message_is_bounded(tmp_path):
    path = write_text(tmp_path, "".join(json.dumps({"question": f"Q{i}?"}) + "\n" for i in range(5000)))
    with pytest.raises(GoldenError) as info:
        read_golden(path)
    message = str(info.value)
    assert message.splitlines()[0].endswith("5001 errors — cannot run")
    assert len(message.splitlines()) == 1 + 100 + 1 + 1  # head, 100 listed, the file-level one, one omitted kind
    assert "4,900 more like this, on lines 101-5000" in message


# --- hostile but parseable lines ---------------------------------------------------------------


def test_a_lone_surrogate_is_an_error_on_its_line_and_the_result_encodes(tmp_path):
    text = json.dumps(OK_ROW) + "\n" + '{"question": "Who \\ud800?", "expected": ["a.pdf"]}\n'
    text += '{"\\udfff": 1, "question": "Q3?", "expected": ["a.pdf"]}\n'
    text += '{"question": "Pair \\ud83d\\ude00 is fine", "expected": ["a.pdf"]}\n'
    check = check_golden(write_text(tmp_path, text))
    assert [(p.line, p.field) for p in check.errors] == [(2, "question"), (3, "\\udfff")]
    assert "lone surrogate" in check.errors[0].message
    assert check.n_ready == 2
    json.dumps(check.to_dict(), ensure_ascii=False).encode("utf-8")  # raises if a surrogate is left
    format_check(check).encode("utf-8")


def test_an_integer_of_5000_digits_is_an_error_on_its_line(tmp_path):
    text = json.dumps(OK_ROW) + "\n" + '{"id": ' + "7" * 5000 + ', "question": "Q?", "expected": ["a.pdf"]}\n'
    check = check_golden(write_text(tmp_path, text))
    limit = sys.get_int_max_str_digits()
    assert check.errors == [Problem("error", f"not readable: an integer of 5,000 digits (at most {limit:,} are read); "
                                             "write it as a string", 2)]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(tmp_path, constant):
    text = json.dumps(OK_ROW) + "\n" + '{"id": ' + constant + ', "question": "Q?", "expected": ["a.pdf"]}\n'
    check = check_golden(write_text(tmp_path, text))
    assert [(p.line, p.message.split(" is not")[0]) for p in check.errors] == [(2, f"not valid JSON: {constant}")]


# --- anchors and Unicode forms -----------------------------------------------------------------


def test_page_anchor_is_case_insensitive():
    assert Target.parse("report.pdf#PAGE=2") == Target("report.pdf", 2)
    assert Target.parse("report.pdf#Page=12") == Target("report.pdf", 12)
    with pytest.raises(ValueError, match="not a positive integer"):
        Target.parse("report.pdf#PAGE=0")


def test_a_leading_dot_slash_names_the_same_document():
    assert Target.parse("./report.pdf#page=2") == Target("report.pdf", 2)
    assert Target.parse("././hr/leave.md") == Target("hr/leave.md")
    assert Target.parse(".hidden.md") == Target(".hidden.md") and Target.parse("../up.md") == Target("../up.md")
    with pytest.raises(ValueError, match="document id is empty"):
        Target.parse("./")


def test_another_anchor_is_a_line_error(tmp_path):
    text = json.dumps(OK_ROW) + "\n" + json.dumps({"question": "Q?", "expected": ["report.pdf#section=2"]}) + "\n"
    check = check_golden(write_text(tmp_path, text))
    assert [(p.line, p.field, p.message) for p in check.errors] == [
        (2, "expected[0]", "unknown anchor '#section=' in 'report.pdf#section=2': the only anchor read is '#page=N'")]


def test_document_ids_match_whatever_their_unicode_form(tmp_path):
    nfc, nfd = unicodedata.normalize("NFC", "Résumé.txt"), unicodedata.normalize("NFD", "Résumé.txt")
    assert nfc != nfd
    text = json.dumps({"question": "Q?", "expected": [nfc]}) + "\n" + json.dumps({"question": "R?", "expected": [nfd]})
    path = write_text(tmp_path, text + "\n")
    check = check_golden(path, documents=[nfd])  # the corpus saved decomposed, the file written composed
    assert check.warnings == [] and check.ok
    assert [q.expected for q in read_golden(path, documents=[nfc]).questions] == [(Target(nfc),), (Target(nfc),)]


def test_validating_a_canonical_copy_gives_the_schema_errors_of_the_line():
    # Reference: jsonschema's Draft202012Validator on the raw line, minus the two kinds of error
    # the checker reports its own way (unknown keys, and the page pattern of expected items).
    import random

    from jsonschema import Draft202012Validator

    from core.golden import FIELDS, load_schema
    from core.golden.reader import _schema_errors

    values = [None, True, 0, 3, 2.5, "", "  ", "x", "a.pdf#page=0", [], ["a.pdf"], ["a.pdf#page=0", 7],
              [["a"]], [None, {}], {}, {"type": "f"}]
    validator = Draft202012Validator(load_schema())
    rng = random.Random(0)
    for _ in range(600):
        obj = {key: rng.choice(values) for key in rng.sample(FIELDS, rng.randint(0, len(FIELDS)))}
        if rng.random() < 0.2:
            obj["extra"] = 1

        def kept(errors):
            return sorted((tuple(e.absolute_path), e.validator) for e in errors
                          if e.validator != "additionalProperties"
                          and not (e.validator == "pattern" and tuple(e.absolute_path)[:1] == ("expected",)))

        assert kept(_schema_errors(obj)) == kept(validator.iter_errors(obj)), obj


def test_a_bedrock_line_with_a_lone_surrogate_is_an_error_on_its_line(tmp_path):
    good = {"conversationTurns": [{"prompt": {"content": [{"text": "Who pays?"}]},
                                   "referenceResponses": [{"content": [{"text": "The employer."}]}]}]}
    bad = json.dumps(good).replace("Who pays?", "Who \\ud800 pays?")  # the JSON escape of a lone surrogate
    check = check_golden(write_text(tmp_path, json.dumps(good) + "\n" + bad + "\n"))
    assert check.format == "bedrock" and check.n_ready == 1
    assert [(p.line, p.field) for p in check.errors] == [(2, "conversationTurns")]
    json.dumps(check.to_dict(), ensure_ascii=False).encode("utf-8")


def test_a_page_number_of_5000_digits_is_too_large_not_python_advice(tmp_path):
    text = json.dumps(OK_ROW) + "\n" + json.dumps({"id": "p", "question": "Q?", "expected": ["a.pdf#page=" + "9" * 5000]}) + "\n"
    check = check_golden(write_text(tmp_path, text))
    # the source is also longer than GOLDEN_MAX_SOURCE_CHARS: 11 characters of "a.pdf#page=" + 5,000 digits
    assert check.errors == [
        Problem("error", "is 5,011 characters long, more than the 4,096 a document id or name may hold "
                         "(GOLDEN_MAX_SOURCE_CHARS): shorten it", 2, "expected[0]"),
        Problem("error", "page number too large in 'a.pdf': 5,000 digits (pages count from 1)", 2, "expected[0]"),
    ]
    # nine digits are read; leading zeros do not count
    assert Target.parse("a.pdf#page=999999999").page == 999_999_999
    assert Target.parse("a.pdf#page=" + "0" * 20 + "7").page == 7
