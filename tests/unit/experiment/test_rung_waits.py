"""A promotion's per-question waits: merged with the lower rung's, their statistics computed
again, and read by the front as a median over every question of the rung.

Expected values are worked by hand from the lists below.
"""

from __future__ import annotations

import pytest

from core.evaluation.waits import merge_waits, question_waits, wait_timings
from core.experiment.engine import merge_rung
from core.experiment.front import front


def _result(ids, mrr, waits=None, retrieve_s=1.0):
    per = {"ids": list(ids), "scores": {"mrr": list(mrr)}}
    out = {"status": "ok", "rank_grain": "document", "per_question": per, "metrics": {},
           "timings": {"retrieve_s": retrieve_s}}
    if waits is not None:
        per["wait_ms"] = waits
        out["timings_ms"] = wait_timings(waits)
    return out


def test_question_waits_sum_the_parts_per_question():
    waits = question_waits({"query_embedding": [1.0, 2.0], "search": [3.0, 4.5], "rerank": None})
    assert waits == {"query_embedding": [1.0, 2.0], "search": [3.0, 4.5], "rerank": None, "generation": None,
                     "total": [4.0, 6.5]}
    timings = wait_timings(waits)
    assert timings["n"] == 2 and timings["total"]["median"] == 5.25 and timings["rerank"] is None
    assert timings["search"]["median"] == timings["median"] == 3.75  # the search alone at the top level
    with pytest.raises(ValueError, match="differ in length"):
        question_waits({"search": [1.0], "rerank": [1.0, 2.0]})


def test_a_promotion_merges_the_waits_of_both_rungs():
    earlier = _result(["q1", "q2"], [1.0, 0.5],
                      question_waits({"query_embedding": [1.0, 1.0], "search": [9.0, 29.0]}))
    new = _result(["q3"], [0.0], question_waits({"query_embedding": [2.0], "search": [18.0]}))
    merged = merge_rung(earlier, new, ["q1", "q2", "q3"], "mrr")
    waits = merged["per_question"]["wait_ms"]
    assert waits["total"] == [10.0, 30.0, 20.0] and waits["search"] == [9.0, 29.0, 18.0]
    assert merged["timings_ms"]["total"]["median"] == 20.0 and merged["timings_ms"]["n"] == 3
    # the front reads the median over the rung's three questions, not a batched mean
    board = [{"key": "a", "score": merged["metrics"]["mrr"], "ci_low": 0.0, "ci_high": 1.0, "trial": 0,
              "fully_evaluated": True, "n_questions": 3, "parameters": {}}]
    row = front(board, {"a": merged}, 3)["rows"][0]
    assert row["wait_ms"] == 20.0 and row["wait_kind"] == "median"


def test_a_lower_rung_stored_without_waits_keeps_none():
    earlier = _result(["q1"], [1.0])  # stored before waits were measured
    new = _result(["q2"], [0.0], question_waits({"search": [5.0]}), retrieve_s=0.5)
    merged = merge_rung(earlier, new, ["q1", "q2"], "mrr")
    assert "wait_ms" not in merged["per_question"] and "timings_ms" not in merged
    # then the front falls back to the new evaluation's batched time over the questions it scored
    board = [{"key": "a", "score": 0.5, "ci_low": 0.0, "ci_high": 1.0, "trial": 0, "fully_evaluated": True,
              "n_questions": 2, "parameters": {}}]
    row = front(board, {"a": merged}, 2)["rows"][0]
    assert row["wait_kind"] == "batched mean" and row["wait_ms"] == 500.0  # 1000 * 0.5 s / 1 question


def test_merge_waits_drops_a_part_one_block_lacks():
    a = {"ids": ["q1"], "wait_ms": question_waits({"search": [1.0], "rerank": [2.0]})}
    b = {"ids": ["q2"], "wait_ms": question_waits({"search": [3.0]})}
    merged = merge_waits([a, b], ["q1", "q2"])
    assert merged["search"] == [1.0, 3.0] and merged["rerank"] is None and merged["total"] == [3.0, 3.0]
