"""Ranking search setups and choosing the three picks (hand-computed cases)."""

from __future__ import annotations

import pytest
from pytest import approx

from core.errors import ConfigError
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


def test_rank_grain_skips_evidence_no_chunk_holds():
    from core.evaluation.retrieval import stale_question_ids
    from core.golden import Problem

    paged = GoldenQuestion("2", "q2", (Target("a.pdf", 3),), line=2)
    one_gone = GoldenQuestion("3", "q3", (Target("a.pdf"),), evidence=("first quote here", "second quote here"), line=3)
    all_gone = GoldenQuestion("4", "q4", (Target("a.pdf"),), evidence=("a stale quote", "a stale quote", "ok"),
                              line=4)
    # line 3 lost one of two quotes; line 4 lost both copies of its one usable quote ("ok" is too short)
    warnings = [Problem("warning", "stale evidence", line=3, field="evidence[0]"),
                Problem("warning", "stale evidence", line=4, field="evidence[0]"),
                Problem("warning", "stale evidence", line=4, field="evidence[1]"),
                Problem("warning", "past the last page", line=2, field="expected")]
    assert stale_question_ids([paged, one_gone, all_gone], warnings) == {"4"}
    assert choose_rank_grain([paged, all_gone], stale={"4"}) == "page"  # nothing findable by evidence
    assert choose_rank_grain([paged, one_gone, all_gone], stale={"4"}) == "evidence"


# --------------------------------------------------------------------------- robust picks and ties


def test_latency_within_the_noise_floor_is_broken_by_quality():
    # a is faster by 1 ms (under the 2 ms floor): b finds more and is picked for speed too
    picks = pick_setups([row("a", 90, 50, 10.0), row("b", 92, 50, 11.0), row("c", 95, 50, 30.0)])
    assert picks["best_for_time"] == "b"
    # 20 % of the faster counts too: 100 ms and 119 ms are the same speed, 100 and 121 are not
    assert pick_setups([row("a", 90, 50, 100.0), row("b", 92, 50, 119.0)])["best_for_time"] == "b"
    assert pick_setups([row("a", 90, 50, 100.0), row("b", 92, 50, 121.0)])["best_for_time"] == "a"


def test_equally_good_setups_within_the_noise_floor_pick_the_first_listed():
    # dense and hybrid find the same questions; their latencies (10.0 / 11.5 ms) swap between
    # reruns but stay within the 2 ms floor: dense, listed first, is the pick every time
    for dense_ms, hybrid_ms in ((10.0, 11.5), (11.5, 10.0)):
        picks = pick_setups([row("keyword", 70, 40, 1.0), row("dense", 90, 60, dense_ms),
                             row("hybrid", 90, 60, hybrid_ms)])
        assert picks["finds_the_most"] == "dense"
        assert picks["ranking"][:2] == ["dense", "hybrid"]
        assert picks["best_for_balance"] == "dense" and picks["best_for_time"] == "dense"
    # outside the floor the faster one wins whatever the order
    picks = pick_setups([row("dense", 90, 60, 20.0), row("hybrid", 90, 60, 10.0)])
    assert picks["finds_the_most"] == "hybrid"


def test_same_speed_floor():
    from core.evaluation.retrieval import same_speed

    assert same_speed(1.0, 2.9) and not same_speed(1.0, 3.1)  # 2 ms floor
    assert same_speed(100.0, 120.0) and not same_speed(100.0, 120.5)  # 20 % of 100


def test_picks_do_not_move_with_latency_jitter():
    # three reruns of the same setups whose latencies wobble by up to 5 % (as reruns do)
    import numpy as np

    base = [("keyword", 80, 40, 3.0), ("dense", 88, 50, 25.0), ("hybrid", 90, 55, 26.0), ("hybrid+rerank", 93, 70, 900.0)]
    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(3):
        rows = [row(n, f, f1, ms * (1 + rng.uniform(-0.05, 0.05))) for n, f, f1, ms in base]
        picks = pick_setups(rows)
        seen.add((picks["finds_the_most"], picks["best_for_balance"], picks["best_for_time"]))
    # balance: within 4 points of 93 are hybrid+rerank and hybrid; hybrid is far faster.
    # time: within 8 points also dense, 1 ms faster than hybrid: the same speed, so hybrid
    # (more found) every time
    assert seen == {("hybrid+rerank", "hybrid", "hybrid")}


def test_tied_with_best_by_mcnemar_exact():
    # 12 questions. best finds 10; "near" finds 7: best alone 4, near alone 1 ->
    # p = 2 * P(X <= 1 | n=5, 1/2) = 2 * (1 + 5) / 32 = 0.375: tied.
    best = [True] * 10 + [False] * 2
    near = [False] * 4 + [True] * 6 + [True, False]
    # "far" finds 3: best alone 7, far alone 0 -> p = 2 * 1 / 128 = 0.015625: not tied.
    far = [False] * 7 + [True] * 3 + [False, False]
    rows = [dict(row("best", 10, 5, 5.0, n=12), found=best), dict(row("near", 7, 5, 5.0, n=12), found=near),
            dict(row("far", 3, 1, 5.0, n=12), found=far)]
    picks = pick_setups(rows)
    assert picks["finds_the_most"] == "best"
    assert picks["tied_with_best"] == {"best": True, "near": True, "far": False}
    assert picks["mcnemar"]["near"]["p_value"] == approx(0.375)
    assert picks["mcnemar"]["far"]["p_value"] == approx(0.015625)
    assert (picks["mcnemar"]["far"]["only_a"], picks["mcnemar"]["far"]["only_b"]) == (7, 0)


def test_rank_grain_skips_labels_on_documents_that_did_not_load():
    paged_missing = GoldenQuestion("1", "q", (Target("gone.pdf", 2),))
    plain = GoldenQuestion("2", "q2", (Target("a.pdf"),))
    assert choose_rank_grain([paged_missing, plain]) == "page"  # labels alone
    assert choose_rank_grain([paged_missing, plain], loaded=["a.pdf"]) == "doc"
    assert choose_rank_grain([paged_missing, plain], loaded=["a.pdf", "gone.pdf"]) == "page"


def test_setups_and_their_keys():
    from core.evaluation.retrieval import build_setups, default_search_setups, select_setups

    one = build_setups(default_search_setups(), ["local:bge-small-en-v1.5"], "local:ce")
    assert [s.key for s in one] == ["keyword", "keyword+rerank", "dense", "dense+rerank", "hybrid-rrf-k60",
                                    "hybrid-rrf-k60+rerank", "hybrid-weighted-a0.5", "hybrid-weighted-a0.5+rerank"]
    assert {s.depth for s in one if s.reranker} == {20} and {s.depth for s in one if not s.reranker} == {10}
    assert one[0].embedding_model is None and one[2].embedding_model == "local:bge-small-en-v1.5"
    two = build_setups(default_search_setups(), ["local:a", "local:b"], None)
    assert [s.key for s in two] == ["keyword", "dense@a", "dense@b", "hybrid-rrf-k60@a", "hybrid-rrf-k60@b",
                                    "hybrid-weighted-a0.5@a", "hybrid-weighted-a0.5@b"]
    assert [s.key for s in select_setups(one, only=["hybrid*"], skip=["*+rerank"])] == [
        "hybrid-rrf-k60", "hybrid-weighted-a0.5"]
    with pytest.raises(ConfigError, match="'sparse' matches no setup; the setups are: keyword"):
        select_setups(one, only=["sparse"])
    with pytest.raises(ConfigError, match="leave no setup"):
        select_setups(one, skip=["*"])
