"""The length limits of a golden line's free text (core.limits), in both formats: a value one
character over its limit is an error on its line naming its field, a value at the limit is
read. Lengths are written out by hand from the rows each test builds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import GoldenError
from core.golden import Problem, check_golden, read_golden
from core.limits import (
    GOLDEN_MAX_EVIDENCE_CHARS,
    GOLDEN_MAX_HINT_CHARS,
    GOLDEN_MAX_ID_CHARS,
    GOLDEN_MAX_QUESTION_CHARS,
    GOLDEN_MAX_REFERENCE_CHARS,
    GOLDEN_MAX_SOURCE_CHARS,
)

OK = {"id": "ok", "question": "Who books the travel?", "expected": ["travel.txt"]}


def _write(tmp_path: Path, *rows: dict) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _words(n_chars: int) -> str:
    """Text of exactly ``n_chars`` characters: "word " repeated, cut to length."""
    text = ("word " * (n_chars // 5 + 1))[:n_chars]
    return text[:-1] + "x" if text.endswith(" ") else text


def test_the_limits_are_the_documented_ones():
    assert (GOLDEN_MAX_ID_CHARS, GOLDEN_MAX_QUESTION_CHARS, GOLDEN_MAX_SOURCE_CHARS, GOLDEN_MAX_REFERENCE_CHARS,
            GOLDEN_MAX_EVIDENCE_CHARS, GOLDEN_MAX_HINT_CHARS) == (200, 4_000, 4_096, 20_000, 10_000, 10_000)
    assert len(_words(4_001)) == 4_001 and len(_words(17)) == 17


def test_a_5_mb_question_is_a_line_error_naming_the_field(tmp_path):
    big = {"id": "big", "question": "Why? " * 1_000_000, "expected": ["travel.txt"]}  # 5,000,000 characters
    check = check_golden(_write(tmp_path, OK, big))
    assert check.errors == [Problem(
        "error", "is 5,000,000 characters long, more than the 4,000 a question may hold (GOLDEN_MAX_QUESTION_CHARS): "
                 "shorten it", 2, "question")]
    assert check.n_ready == 1  # the long row is not scored
    with pytest.raises(GoldenError, match=r"golden.jsonl:2: error: field 'question': is 5,000,000 characters long"):
        read_golden(tmp_path / "golden.jsonl")


@pytest.mark.parametrize(("field", "limit", "value", "shown", "what", "name"), [
    ("id", 200, lambda n: "i" * n, "id", "an id", "GOLDEN_MAX_ID_CHARS"),
    ("question", 4_000, lambda n: _words(n), "question", "a question", "GOLDEN_MAX_QUESTION_CHARS"),
    ("expected", 4_096, lambda n: ["travel.txt", "d" * (n - 4) + ".txt"], "expected[1]", "a document id or name",
     "GOLDEN_MAX_SOURCE_CHARS"),
    ("reference", 20_000, lambda n: _words(n), "reference", "an answer or passage", "GOLDEN_MAX_REFERENCE_CHARS"),
    ("evidence", 10_000, lambda n: [_words(n)], "evidence[0]", "an evidence quote", "GOLDEN_MAX_EVIDENCE_CHARS"),
])
def test_each_field_one_character_over_its_limit_is_an_error(tmp_path, field, limit, value, shown, what, name):
    at = {**OK, "id": "at", "question": "At the limit?", field: value(limit)}
    over = {**OK, "id": "over", "question": "Over the limit?", field: value(limit + 1)}
    check = check_golden(_write(tmp_path, at, over))
    assert check.errors == [Problem(
        "error", f"is {limit + 1:,} characters long, more than the {limit:,} {what} may hold ({name}): shorten it",
        2, shown)]
    assert check.n_ready == 1


def test_an_integer_id_counts_its_digits_and_a_hint_is_held_too(tmp_path):
    digits = {"id": int("9" * 201), "question": "Digits?", "expected": ["travel.txt"]}  # 201 digits
    template = {"question": "", "hint": "h" * 10_001}
    check = check_golden(_write(tmp_path, OK, digits, template))
    assert [(p.line, p.field, p.message.split(",")[0]) for p in check.errors] == [
        (2, "id", "is 201 characters long"), (3, "hint", "is 10"),
    ]
    assert check.errors[1].message.startswith("is 10,001 characters long, more than the 10,000 a hint may hold")


def test_a_history_turn_in_metadata_is_held_to_an_answer_s_limit(tmp_path):
    row = dict(OK, metadata={"bedrock": {"history": [{"role": "user", "content": "a" * 20_001}]}})
    [problem] = check_golden(_write(tmp_path, row)).errors[:1]
    assert (problem.line, problem.field) == (1, "metadata.bedrock.history[0].content")


def _turn(prompt: str, reference: str = "Iker Casillas", **extra) -> dict:
    return {"prompt": {"content": [{"text": prompt}]},
            "referenceResponses": [{"content": [{"text": reference}]}], **extra}


def test_a_bedrock_prompt_over_the_question_limit_is_a_line_error(tmp_path):
    ok = {"conversationTurns": [_turn("Who is Spain's main goalkeeper?")]}
    at = {"conversationTurns": [_turn(_words(4_000))]}
    over = {"conversationTurns": [_turn("How many caps?"), _turn(_words(4_001))]}
    check = check_golden(_write(tmp_path, ok, at, over))
    assert check.format == "bedrock"
    assert check.errors == [Problem(
        "error", "is 4,001 characters long, more than the 4,000 a question may hold (GOLDEN_MAX_QUESTION_CHARS): "
                 "shorten it", 3, "conversationTurns[1].prompt.content[0].text")]
    assert check.n_ready == 2


def test_bedrock_references_outputs_passages_and_names_are_held_too(tmp_path):
    long_ref = {"conversationTurns": [_turn("Q1?", reference="r" * 20_001)]}
    output = {"text": "o" * 20_001, "modelIdentifier": "m" * 4_097,
              "retrievedPassages": {"retrievalResults": [{"name": "n" * 4_097, "content": {"text": "p" * 20_001}}]}}
    byoi = {"conversationTurns": [_turn("Q2?", output=output)]}
    check = check_golden(_write(tmp_path, byoi))
    assert sorted((p.line, p.field, p.message.split(" long")[0]) for p in check.errors if p.line) == [
        (1, "conversationTurns[0].output.modelIdentifier", "is 4,097 characters"),
        (1, "conversationTurns[0].output.retrievedPassages.retrievalResults[0].content.text", "is 20,001 characters"),
        (1, "conversationTurns[0].output.retrievedPassages.retrievalResults[0].name", "is 4,097 characters"),
        (1, "conversationTurns[0].output.text", "is 20,001 characters"),
    ]
    problem, nothing_ready = check_golden(_write(tmp_path, long_ref)).errors
    assert nothing_ready.line is None and nothing_ready.message.startswith("nothing ready to score")
    assert (problem.line, problem.field) == (1, "conversationTurns[0].referenceResponses[0].content[0].text")
