"""The golden ``metadata`` field: kept with each question, never scored, checked as an object.

Expected values are read off the lines the tests write (hand computation).
"""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator

from core.golden import FIELDS, check_golden, load_schema, read_golden


def write(tmp_path, *rows):
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_metadata_is_kept_with_each_question(tmp_path):
    meta = {"type": "factual", "level": 2, "source": {"tool": "x", "tags": ["a", "b"]}}
    path = write(tmp_path,
                 {"id": "a", "question": "Who?", "expected": ["a.txt"], "metadata": meta},
                 {"id": "b", "question": "What?", "expected": ["a.txt"]})
    golden = read_golden(path)
    assert [q.metadata for q in golden.questions] == [meta, {}]
    assert golden.questions[0].to_dict()["metadata"] == meta
    assert "metadata" not in golden.questions[1].to_dict()
    assert golden.warnings == []
    hash(golden.questions[0])  # a question with metadata stays hashable


def test_metadata_must_be_an_object_and_unknown_fields_stay_errors(tmp_path):
    path = write(tmp_path,
                 {"id": "a", "question": "Who?", "expected": ["a.txt"], "metadata": "factual"},
                 {"id": "b", "question": "What?", "expected": ["a.txt"], "type": "factual"},
                 {"id": "c", "question": "Where?", "expected": ["a.txt"], "metadata": {}})
    check = check_golden(path)
    errors = [(p.line, p.field, p.message) for p in check.errors]
    assert (1, "metadata", "must be an object, got string") in errors
    assert any(line == 2 and field == "type" for line, field, _ in errors)
    assert check.n_ready == 1


def test_schema_names_metadata():
    assert "metadata" in FIELDS
    validator = Draft202012Validator(load_schema())
    ok = {"question": "q", "expected": ["a"], "metadata": {"k": [1, None]}}
    assert not list(validator.iter_errors(ok))
    assert [e.validator for e in validator.iter_errors({**ok, "metadata": [1]})] == ["type"]
