"""The bundled JSON Schema of one golden line, checked with jsonschema's own validator."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from core.golden import FIELDS, load_schema


def _valid(row: dict) -> bool:
    return Draft202012Validator(load_schema()).is_valid(row)


def test_schema_is_valid_draft_2020_12():
    schema = load_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False


def test_every_field_has_title_and_description():
    props = load_schema()["properties"]
    assert tuple(props) == FIELDS
    for name, prop in props.items():
        assert prop.get("title") and prop.get("description"), name


def test_load_schema_returns_a_fresh_copy():
    load_schema()["properties"].clear()
    assert "question" in load_schema()["properties"]


@pytest.mark.parametrize(
    "row",
    [
        {"question": "Q?", "expected": ["a.pdf"]},
        {"id": 7, "question": "Q?", "expected": ["a.pdf#page=3", "b.md"], "reference": "r", "evidence": ["e"]},
        {"question": "Q?", "expected": ["a.pdf"], "draft": True},
        {"hint": "ask about vacation days"},  # template: no question, no expected
        {"question": "  ", "hint": "h", "expected": []},  # template with blank question
    ],
)
def test_schema_accepts(row):
    assert _valid(row)


@pytest.mark.parametrize(
    "row",
    [
        {"question": "Q?"},
        {"expected": ["a.pdf"]},
        {"question": " ", "expected": ["a.pdf"]},
        {"question": "Q?", "expected": []},
        {"question": "Q?", "expected": ["a.pdf"], "expeted": ["a.pdf"]},
        {"question": "Q?", "expected": ["a.pdf#page=0"]},
        {"question": "Q?", "expected": ["a.pdf#page=abc"]},
        {"question": "Q?", "expected": ["a.pdf#page="]},
        {"question": "Q?", "expected": [""]},
        {"question": "Q?", "expected": ["a.pdf"], "id": True},
        {"question": "Q?", "expected": ["a.pdf"], "draft": "yes"},
        {"question": 1, "expected": ["a.pdf"]},
    ],
)
def test_schema_rejects(row):
    assert not _valid(row)
