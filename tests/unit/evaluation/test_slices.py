"""Retrieval metrics per metadata slice (``evaluate --by``), on rankings written by hand.

Expected means are computed by hand from the rankings below.
"""

from __future__ import annotations

import pytest

from core.chunking.base import Chunk
from core.errors import ConfigError
from core.evaluation.slices import MISSING, check_slice_key, format_slices, metadata_value, slice_metrics
from core.golden import GoldenQuestion, Target
from core.metrics.retrieval import evaluate_rankings


def chunk(doc: str, n: int) -> Chunk:
    return Chunk(text=f"text {doc} {n}", chunk_id=f"{doc}-{n}", metadata={"document_id": doc, "sequence_number": n})


def question(qid: str, doc: str, metadata: dict) -> GoldenQuestion:
    return GoldenQuestion(id=qid, question=f"q {qid}?", expected=(Target(doc),), metadata=metadata)


QUESTIONS = [
    question("q1", "a", {"type": "factual", "level": 1}),
    question("q2", "b", {"type": "factual", "level": 2}),
    question("q3", "c", {"type": "comparison", "src": {"kind": "x"}}),
    question("q4", "d", {}),
]
# q1 found at rank 1, q2 at rank 2, q3 at rank 3, q4 not found.
RANKINGS = {
    "q1": [chunk("a", 0), chunk("z", 0)],
    "q2": [chunk("z", 0), chunk("b", 0)],
    "q3": [chunk("z", 0), chunk("y", 0), chunk("c", 0)],
    "q4": [chunk("z", 0)],
}


def test_slices_by_value_with_counts_and_means():
    grains = evaluate_rankings(QUESTIONS, RANKINGS, grains=("doc",))
    slices = slice_metrics(QUESTIONS, grains, "metadata.type")
    assert [(s["value"], s["n_questions"]) for s in slices] == [("comparison", 1), ("factual", 2), (MISSING, 1)]
    by = {s["value"]: s["metrics"]["doc"] for s in slices}
    assert by["factual"]["means"]["mrr"] == pytest.approx((1 + 1 / 2) / 2)
    assert by["factual"]["means"]["found@1"] == pytest.approx(0.5)
    assert by["comparison"]["means"]["mrr"] == pytest.approx(1 / 3)
    assert by[MISSING]["means"]["found@10"] == 0.0
    assert sum(s["metrics"]["doc"]["n_scored"] for s in slices) == grains["doc"].aggregate.n_scored == 4


def test_values_as_text_and_nested_keys():
    assert metadata_value(QUESTIONS[0], "metadata.level") == "1"
    assert metadata_value(QUESTIONS[2], "metadata.src.kind") == "x"
    assert metadata_value(QUESTIONS[2], "metadata.src") == '{"kind": "x"}'
    assert metadata_value(QUESTIONS[0], "metadata.src.kind") == MISSING


@pytest.mark.parametrize("key", ["type", "metadata.", "metadata..a", "meta.type", ""])
def test_bad_keys_are_refused(key):
    with pytest.raises(ConfigError, match="metadata"):
        check_slice_key(key)


def test_format_slices_prints_one_row_per_setup_and_slice():
    grains = evaluate_rankings(QUESTIONS, RANKINGS, grains=("doc",))
    report = {"evaluation": {"rank_grain": "doc"},
              "setups": [{"name": "vector", "slices": {"metadata.type": slice_metrics(QUESTIONS, grains, "metadata.type")}}]}
    text = format_slices(report)
    rows = [line.split() for line in text.splitlines() if line.startswith("vector")]
    assert [r[1:4] for r in rows] == [["comparison", "1", "1"], ["factual", "2", "2"], [MISSING, "1", "1"]]
    assert rows[1][7] == "0.750"  # mrr of the factual slice
    assert format_slices({"setups": [{"name": "v", "slices": {}}]}) == ""
