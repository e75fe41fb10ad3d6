"""Ranking search setups and choosing the three picks (hand-computed cases)."""

from __future__ import annotations

from core.evaluation import choose_rank_grain, pick_setups
from core.golden import GoldenQuestion, Target


def row(name, found10, found1, ms, n=100):
    return {"name": name, "found_top10": found10, "found_first": found1, "n_scored": n, "median_ms": ms}


def test_ranking_found_then_first_then_speed():
    picks = pick_setups([row("a", 90, 50, 5.0), row("b", 90, 60, 9.0), row("c", 95, 40, 20.0), row("d", 90, 60, 3.0)])
    # c finds the most; b and d tie on found and first, d is faster
    assert picks["ranking"] == ["c", "d", "b", "a"]
    assert picks["finds_the_most"] == "c"


def test_balance_within_4_points_time_within_8():
    # best share 95%; within 4 points: c (95), e (92) -> fastest e; within 8: also a (88)? no, 88 < 87 is false
    rows = [row("c", 95, 40, 20.0), row("e", 92, 30, 10.0), row("a", 88, 50, 2.0), row("z", 86, 50, 1.0)]
    picks = pick_setups(rows)
    assert picks["best_for_balance"] == "e"  # 95-4 = 91 <= 92
    assert picks["best_for_time"] == "a"  # 95-8 = 87 <= 88; z (86) is out
    assert "4 percentage points" in picks["rules"]["best_for_balance"]


def test_exactly_on_the_boundary_counts():
    picks = pick_setups([row("best", 50, 0, 10.0, n=50), row("fast", 48, 0, 1.0, n=50)])  # 100% vs 96%
    assert picks["best_for_balance"] == "fast"


def test_no_scored_question_picks_nothing():
    picks = pick_setups([row("a", 0, 0, 1.0, n=0)])
    assert picks["finds_the_most"] is None and picks["best_for_time"] is None


def test_rank_grain_is_the_finest_labelled():
    plain = GoldenQuestion("1", "q", (Target("a.pdf"),))
    paged = GoldenQuestion("2", "q2", (Target("a.pdf", 3),))
    quoted = GoldenQuestion("3", "q3", (Target("a.pdf"),), evidence=("three words here",))
    short = GoldenQuestion("4", "q4", (Target("a.pdf"),), evidence=("two words",))
    assert choose_rank_grain([plain]) == "doc"
    assert choose_rank_grain([plain, paged]) == "page"
    assert choose_rank_grain([plain, paged, quoted]) == "evidence"
    assert choose_rank_grain([plain, short]) == "doc"
