"""Evidence matching: normalisation and the three ways a chunk holds a quote (hand-made cases)."""

from __future__ import annotations

import pytest

from core.metrics import EVIDENCE_MIN_OVERLAP, evidence_matches, normalize_text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Hello\n\tWORLD  ", "hello world"),
        ("\ufb01nancial", "financial"),  # NFKC: the "fi" ligature
        ("Stra\u00dfe", "strasse"),  # casefold
        ("\u201cquoted\u201d \u2018single\u2019", "\"quoted\" 'single'"),
        ("a\u2013b \u2014 c\u2212d", "a-b - c-d"),  # en dash, em dash, minus
        ("co\u00adpay\u200b", "copay"),  # soft hyphen, zero-width space
        ("50\u00a0%", "50 %"),  # no-break space
        ("", ""),
    ],
)
def test_normalize_text(raw, expected):
    assert normalize_text(raw) == expected


def test_quote_inside_chunk_despite_case_quotes_dashes_and_line_breaks():
    chunk = "The plan\u2019s out\u2013of\u2013network\nrate is 60 PERCENT of the allowed amount."
    assert evidence_matches("the plan's out-of-network rate is 60 percent", chunk)


def test_chunk_inside_long_quote_needs_enough_words():
    quote = "Employees may enroll within 30 days of hire. Coverage starts on the first of the month."
    assert evidence_matches(quote, "Employees may enroll within 30 days")
    assert not evidence_matches(quote, "Coverage starts")  # 2 words: too ambiguous


def test_overlap_threshold_is_half_the_quote():
    assert EVIDENCE_MIN_OVERLAP == 0.5
    quote = "abcdefghij klmnopqrst"  # 21 characters: a run of ceil(10.5) = 11 is needed
    assert evidence_matches(quote, "xx abcdefghij k yy")  # "abcdefghij k" = 12 characters
    assert evidence_matches(quote, "xx abcdefghij  yy")  # "abcdefghij " = 11 (whitespace collapsed)
    assert not evidence_matches(quote, "xx abcdefghij")  # "abcdefghij" = 10 < 11


def test_scattered_words_do_not_match():
    quote = "coverage for physical therapy sessions is limited"
    chunk = "Therapy is limited. Coverage for dental. Physical exams. Sessions."
    assert not evidence_matches(quote, chunk)


def test_empty_texts_never_match():
    assert not evidence_matches("", "anything at all here")
    assert not evidence_matches("some quote here", "   ")
