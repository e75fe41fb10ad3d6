"""Evidence matching: normalisation and the three ways a chunk holds a quote (hand-made cases)."""

from __future__ import annotations

import random
from difflib import SequenceMatcher

import pytest

from core.metrics import EVIDENCE_MIN_OVERLAP, evidence_matches, has_common_run, normalize_text


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


def test_has_common_run_equals_the_longest_match_of_difflib():
    # Reference implementation: difflib's exact longest common substring (no junk heuristics).
    # A 3-letter alphabet makes repeated blocks, i.e. many anchors, common.
    rng = random.Random(7)
    for _ in range(1500):
        a = "".join(rng.choice("ab ") for _ in range(rng.randint(0, 40)))
        b = "".join(rng.choice("ab ") for _ in range(rng.randint(0, 40)))
        longest = SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size
        for min_len in (0, 1, 2, 3, 5, 8, 13, 21, 34, 41):
            assert has_common_run(a, b, min_len) is (longest >= min_len), (a, b, min_len)


def test_alternative_wordings_of_one_quote_are_one_item():
    from core.chunking.base import Chunk
    from core.golden import GoldenQuestion, Target
    from core.metrics import judge, retrieval_scores

    q = GoldenQuestion(
        "q", "When were the Normans in Normandy?", (Target("n.txt"),),
        evidence=("10th and 11th centuries", "in the 10th and 11th centuries", "gave their name to Normandy"),
    )
    chunk = Chunk("They lived there in the 10th and 11th centuries.", "c1", {"document_id": "n.txt"})
    j = judge(q, [chunk], "evidence")
    # items: "10th and 11th centuries" (the longer variant folds into it) and "gave their name ..."
    assert j.n_relevant == 2 and j.hits == [frozenset({"evidence[0]"})]
    assert retrieval_scores(j, ks=(1,))["recall@1"] == 0.5
