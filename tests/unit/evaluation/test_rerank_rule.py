"""When a reranked setup is not run (SETTLED_RULE), on hand-made first-stage results."""

from __future__ import annotations

from core.evaluation.retrieval import (SETTLED_RULE, build_setups, default_search_setups, settled_reason,
                                      settled_reranked_setups)
from core.golden import GoldenQuestion, Target
from core.vectorstores.base import RetrievedChunk
from tests.support.vectors import chunks

C1, C2, C3, C4 = chunks()  # documents c1.txt .. c4.txt, page i + 1
QUESTIONS = [
    GoldenQuestion("1", "q1", (Target("c1.txt"),)),
    GoldenQuestion("2", "q2", (Target("c2.txt", 2),)),  # doc c2.txt, page 2 (C2's page)
    GoldenQuestion("3", "q3", ()),  # not scorable at the doc grain: it counts for nothing
]


def hits(*order):
    return [RetrievedChunk(chunk=c, score=1.0 / r, rank=r) for r, c in enumerate(order, start=1)]


def first_stage(dense_q2):
    """keyword finds q1 first and q2 only second; dense finds q1 first and q2 as given."""
    setups = build_setups(default_search_setups()[:2], ["m"], "r")
    keys = [s.key for s in setups]
    assert keys == ["keyword", "keyword+rerank", "dense", "dense+rerank"]
    out = {}
    for s in setups:
        if s.search.search_mode == "keyword":
            out[s.key] = {"1": hits(C1, C3), "2": hits(C3, C2), "3": hits(C4)}
        else:
            out[s.key] = {"1": hits(C1, C2, C3), "2": dense_q2, "3": hits(C4)}
    return setups, out


def test_a_twin_that_finds_every_scored_question_first_settles_its_reranked_setup():
    setups, found = first_stage(hits(C2, C1))
    settled = settled_reranked_setups(setups, found, QUESTIONS, "doc")
    # by hand: dense has rank 1 for q1 and q2 (q3 has no label); keyword has q2 at rank 2
    assert list(settled) == ["dense+rerank"]
    reason = settled["dense+rerank"]
    assert reason.startswith("dense already finds a right result at rank 1 for all 2 questions scored "
                             "at the doc grain")
    assert "--skip dense" in reason and "--rank-by" in reason
    # at the finest grain no finer one is offered
    assert settled_reason("dense", 2, "evidence").endswith("only add time (to run it, --skip dense)")
    assert "no setup can find more questions in the top k or find any earlier there" in SETTLED_RULE
    # the same at the page grain: only q2 is labelled with a page, found first
    assert list(settled_reranked_setups(setups, found, QUESTIONS, "page")) == ["dense+rerank"]


def test_one_question_not_found_first_runs_the_reranked_setup():
    setups, found = first_stage(hits(C1, C2))  # q2's document second
    assert settled_reranked_setups(setups, found, QUESTIONS, "doc") == {}
    # only within the top 10 counts: a right result at rank 11 is not found
    setups, found = first_stage(hits(*([C3] * 10), C2))
    assert settled_reranked_setups(setups, found, QUESTIONS, "doc") == {}


def test_without_its_twin_or_any_scored_question_it_runs():
    setups, found = first_stage(hits(C2))
    alone = [s for s in setups if s.key != "dense"]
    assert settled_reranked_setups(alone, found, QUESTIONS, "doc") == {}
    del found["dense"]  # the twin's first stage failed
    assert settled_reranked_setups(setups, found, QUESTIONS, "doc") == {}
    setups, found = first_stage(hits(C2))
    assert settled_reranked_setups(setups, found, [QUESTIONS[2]], "doc") == {}  # nothing scored: nothing known


def test_without_a_bar_the_reranking_says_how_far_it_is(monkeypatch):
    import io
    import time

    from tqdm import tqdm

    from core.evaluation import retrieval

    monkeypatch.setattr(retrieval, "RERANK_LOG_EVERY_S", 0.0)
    said: list[str] = []
    started = time.perf_counter() - 10.0  # 10 s spent on the first 4 pairs: 2.5 s a pair
    scored = retrieval._rerank_progress(tqdm(total=20, disable=True), 4, 20, said.append, started)
    scored(6)
    scored(10)  # the last: nothing left to say
    assert len(said) == 1 and said[0].startswith("reranking: 10 of 20 pairs scored, about ")
    # by hand: about 1 s a pair so far, 10 pairs left: about 10 s
    assert said[0].endswith(" s left") and 10 <= int(said[0].split("about ")[1].split(" ")[0]) <= 12
    # with a bar (a terminal), the bar shows it and nothing is said
    bar = tqdm(total=20, file=io.StringIO())
    quiet = retrieval._rerank_progress(bar, 4, 20, said.append, started)
    quiet(6)
    assert bar.n == 10 and len(said) == 1
