"""The experiment's front: wait and cost per question, dominance, and the picks on the front.

Expected values are worked by hand: waits are ``1000 * (retrieve_s + answers_s) / n``; the
picks follow ``evaluate``'s rules (``BALANCE_POINTS`` = 4, ``TIME_POINTS`` = 8 points; waits
within 2 ms or 20 % count as equal).
"""

from __future__ import annotations

import pytest

from core.experiment.front import front
from core.models.costs import price_for  # noqa: F401 - the price lookup the front uses


def _row(key, score, trial, fully=True, model="fm"):
    return {"key": key, "score": score, "ci_low": score - 0.05, "ci_high": score + 0.05, "trial": trial,
            "fully_evaluated": fully, "n_questions": 100, "parameters": {"foundation_model": model}}


def _result(retrieve_s, collection="c1", index_s=2.0, tokens=None):
    return {"timings": {"retrieve_s": retrieve_s, "chunk_s": 1.0, "index_s": index_s}, "collection": collection,
            "n_embedded": 50, "cost": {} if tokens is None else {"tokens": tokens, "prompt_tokens": tokens,
                                                                  "completion_tokens": 0}}


def test_front_and_picks_by_hand():
    board = [_row("a", 0.90, 0), _row("b", 0.87, 1), _row("c", 0.80, 2), _row("d", 0.85, 3), _row("e", 0.95, 4, False)]
    results = {"a": _result(5.0), "b": _result(1.0, "c2", index_s=0.0), "c": _result(0.5, "c2", index_s=3.0),
               "d": _result(2.0), "e": _result(0.1)}
    out = front(board, results, 100)
    rows = {r["key"]: r for r in out["rows"]}
    # waits: 1000 * s / 100 questions
    assert rows["a"]["wait_ms"] == 50.0 and rows["b"]["wait_ms"] == 10.0 and rows["c"]["wait_ms"] == 5.0
    assert rows["a"]["wait_kind"] == "batched mean"
    assert "e" not in rows  # scored on a subset: not on the trade table
    # d (85, 20 ms) is dominated by b (87, 10 ms); a, b and c are not dominated
    assert out["front"] == ["a", "b", "c"]
    # balance: within 4 points of 90 -> a (90) and b (87); fastest is b (10 ms)
    assert out["best_for_balance"] == "b"
    # time: within 8 points of 90 -> a, b, c (80 is 10 points below: out) -> b
    assert out["best_for_time"] == "b"
    # the index build of collection c2 is the evaluation that built it: chunk 1 + index 3 s
    assert rows["b"]["index_build"] == {"seconds": 4.0, "texts_embedded": 50}


def test_waits_within_the_noise_floor_pick_the_better_quality():
    board = [_row("a", 0.90, 0), _row("b", 0.88, 1)]
    # 1.0 ms against 2.5 ms: within the 2 ms floor, so the better quality (a) is picked
    out = front(board, {"a": _result(0.25), "b": _result(0.1)}, 100)
    assert out["front"] == ["a", "b"] and out["best_for_balance"] == "a"


def test_cost_per_question_with_a_price():
    class Price:
        input_per_1m = 2.0
        output_per_1m = 8.0

    board = [_row("a", 0.9, 0, model="openai:m"), _row("b", 0.9, 1, model="openai:m")]
    results = {"a": _result(1.0, tokens=1000), "b": _result(1.0, tokens=500)}
    out = front(board, results, 100, prices={"openai:m": Price()})
    rows = {r["key"]: r for r in out["rows"]}
    # 1000 prompt tokens * 2 USD / 1e6 / 100 questions = 2e-5 USD per question
    assert rows["a"]["cost_per_question_usd"] == pytest.approx(2e-5)
    assert rows["a"]["tokens_per_question"] == 10.0
    assert out["front"] == ["b"]  # same quality and wait, cheaper
