"""A promotion's per-question waits: merged with the lower rung's, their statistics computed
again, and read by the front as a median over every question of the rung.

Expected values are worked by hand from the lists below.
"""

from __future__ import annotations

import pytest

from core.evaluation.waits import merge_waits, question_waits, wait_timings
from core.experiment.engine import merge_rung
from core.experiment.types import evaluation_seconds
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
    # both rungs' retrieval, summed, over both questions: 1000 * (1.0 s + 0.5 s) / 2
    assert row["wait_kind"] == "batched mean" and row["wait_ms"] == 750.0
    # a promotion merged before the sums holds the new evaluation's own time and questions
    old = dict(merged, timings={"retrieve_s": 0.5}, n_questions_evaluated=1)
    assert front(board, {"a": old}, 2)["rows"][0]["wait_ms"] == 500.0  # 1000 * 0.5 s / 1 question


def test_a_promotion_costs_the_sum_of_its_rungs():
    """The leaderboard's seconds and texts, the front's index build and tokens per question
    cover every rung: the first rung built the index (3 s, 40 texts), the promotion reused it."""
    earlier = dict(_result(["q1", "q2"], [1.0, 0.5], retrieve_s=0.2), collection="c", n_embedded=40,
                   cost={"seconds": 4.0, "texts_embedded": 40, "texts_from_cache": 5, "tokens": 100,
                         "prompt_tokens": 80, "completion_tokens": 20, "chat_requests": 2})
    earlier["timings"].update(total_s=4.0, index_s=3.0, chunk_s=0.5)
    new = dict(_result(["q3", "q4"], [0.0, 1.0], retrieve_s=0.3), collection="c", n_embedded=0,
               cost={"seconds": 0.5, "texts_embedded": 0, "texts_from_cache": 42, "tokens": 140,
                     "prompt_tokens": 100, "completion_tokens": 40, "chat_requests": None})
    new["timings"].update(total_s=0.5, index_s=0.0, chunk_s=0.0)
    merged = merge_rung(earlier, new, ["q1", "q2", "q3", "q4"], "mrr")
    assert merged["timings"] == {"retrieve_s": 0.5, "total_s": 4.5, "index_s": 3.0, "chunk_s": 0.5}
    # the 40 chunks the first rung embedded are looked up again by the second (42 = 40 + 2
    # questions): the larger count, not 47; chat_requests: one rung did not say
    assert merged["cost"] == {"seconds": 4.5, "texts_embedded": 40, "texts_from_cache": 42, "tokens": 240,
                              "prompt_tokens": 180, "completion_tokens": 60, "chat_requests": None}
    assert merged["n_embedded"] == 40 and merged["n_questions_evaluated"] == 4
    # the promotion's own seconds, for its progress line and its outcome
    assert merged["rung_s"] == 0.5 and evaluation_seconds(merged) == 0.5 and evaluation_seconds(earlier) == 4.0
    # a promotion that scored no new question adds nothing
    again = merge_rung(merged, dict(merged, per_question={}), ["q1", "q2", "q3", "q4"], "mrr")
    assert (again["timings"], again["cost"], again["rung_s"]) == (merged["timings"], merged["cost"], 0.0)
    assert merged["metrics"]["mrr"] == pytest.approx(2.5 / 4)
    board = [{"key": "a", "score": 0.625, "ci_low": 0.0, "ci_high": 1.0, "trial": 0, "fully_evaluated": True,
              "n_questions": 4, "parameters": {"foundation_model": "m"}}]
    from core.settings import ModelPrice

    row = front(board, {"a": merged}, 4, prices={"m": ModelPrice(1.0, 2.0)})["rows"][0]
    assert row["index_build"] == {"seconds": 3.5, "texts_embedded": 40}
    assert row["tokens_per_question"] == 60.0  # 240 tokens over 4 questions
    assert row["cost_per_question_usd"] == pytest.approx((180 * 1.0 + 60 * 2.0) / 1e6 / 4)


def test_merge_waits_drops_a_part_one_block_lacks():
    a = {"ids": ["q1"], "wait_ms": question_waits({"search": [1.0], "rerank": [2.0]})}
    b = {"ids": ["q2"], "wait_ms": question_waits({"search": [3.0]})}
    merged = merge_waits([a, b], ["q1", "q2"])
    assert merged["search"] == [1.0, 3.0] and merged["rerank"] is None and merged["total"] == [3.0, 3.0]
