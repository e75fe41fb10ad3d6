"""Retrieval metrics on small cases; every expected value is a hand computation shown in a comment."""

from __future__ import annotations

import json
import math

import pytest

from core.errors import ConfigError, EvaluationError
from core.metrics import (
    Judgement,
    aggregate,
    evaluate_rankings,
    first_relevant_rank,
    judge,
    retrieval_scores,
)

L2_3 = 1 / math.log2(3)  # discount at rank 2: 0.6309...
L2_4 = 1 / math.log2(4)  # discount at rank 3: 0.5


def approx(d: dict[str, float]) -> dict[str, object]:
    return {k: pytest.approx(v, abs=1e-12) for k, v in d.items()}


def scores_of(question, chunks, grain="doc", ks=(1, 3, 5, 10)):
    j = judge(question, chunks, grain)
    assert j is not None
    return j, retrieval_scores(j, ks)


# --------------------------------------------------------------------------- doc grain


def test_k_larger_than_the_number_of_results(question, chunk):
    # R = {a}; ranking [x, a] (2 chunks). Hit at rank 2 only.
    j, s = scores_of(question(["a"]), [chunk("x"), chunk("a")])
    assert s == approx({
        "recall@1": 0.0, "recall@3": 1.0, "recall@5": 1.0, "recall@10": 1.0,
        # P@k = 1 hit chunk / k, k even past the 2 results: 0/1, 1/3, 1/5, 1/10
        "precision@1": 0.0, "precision@3": 1 / 3, "precision@5": 0.2, "precision@10": 0.1,
        "found@1": 0.0, "found@3": 1.0, "found@5": 1.0, "found@10": 1.0,
        # DCG = 1/log2(2+1); IDCG = 1/log2(2) = 1 (|R| = 1)
        "ndcg@1": 0.0, "ndcg@3": L2_3, "ndcg@5": L2_3, "ndcg@10": L2_3,
        "mrr": 0.5,  # first hit at rank 2
    })
    assert first_relevant_rank(j) == 2


def test_no_expected_document_retrieved_scores_all_zero(question, chunk):
    j, s = scores_of(question(["a", "b"]), [chunk("x"), chunk("y"), chunk("z")])
    assert set(s.values()) == {0.0}
    assert first_relevant_rank(j) is None
    assert j.hits == [frozenset()] * 3


def test_empty_ranking_scores_all_zero(question):
    j, s = scores_of(question(["a"]), [])
    assert j.hits == [] and set(s.values()) == {0.0}


def test_several_relevant_documents(question, chunk):
    # R = {a, b, c}; ranking [a, x, b, y, z]: new hits at ranks 1 and 3.
    _, s = scores_of(question(["a", "b", "c"]), [chunk("a"), chunk("x"), chunk("b"), chunk("y"), chunk("z")])
    dcg = 1 + L2_4  # 1/log2(2) + 1/log2(4) = 1.5
    idcg3 = 1 + L2_3 + L2_4  # min(|R|=3, k) = 3 ideal ranks: 2.1309...
    assert s == approx({
        "recall@1": 1 / 3, "recall@3": 2 / 3, "recall@5": 2 / 3, "recall@10": 2 / 3,
        "precision@1": 1.0, "precision@3": 2 / 3, "precision@5": 2 / 5, "precision@10": 2 / 10,
        "found@1": 1.0, "found@3": 1.0, "found@5": 1.0, "found@10": 1.0,
        "ndcg@1": 1.0,  # DCG@1 = 1, IDCG@1 = 1
        "ndcg@3": dcg / idcg3, "ndcg@5": dcg / idcg3, "ndcg@10": dcg / idcg3,  # 1.5 / 2.1309 = 0.7039
        "mrr": 1.0,
    })


def test_duplicate_chunks_of_one_document_count_once(question, chunk):
    # R = {a}; ranking [a, a, a]: recall counts a once; every chunk hits for precision; only
    # rank 1 gains for nDCG, so nDCG = 1/1 = 1 (not (1 + 0.63 + 0.5) / 1).
    _, s = scores_of(question(["a"]), [chunk("a", seq=i) for i in range(3)], ks=(3,))
    assert s == approx({"recall@3": 1.0, "precision@3": 1.0, "found@3": 1.0, "ndcg@3": 1.0, "mrr": 1.0})

    # R = {a, b}; ranking [x, a, a, b]: new hits at ranks 2 and 4; the rank-3 duplicate gains 0.
    _, s = scores_of(question(["a", "b"]), [chunk("x"), chunk("a", seq=1), chunk("a", seq=2), chunk("b")], ks=(3, 5))
    idcg = 1 + L2_3  # min(|R|=2, k) = 2 ideal ranks
    assert s == approx({
        "recall@3": 1 / 2, "recall@5": 2 / 2,
        "precision@3": 2 / 3, "precision@5": 3 / 5,  # ranks 2, 3 (and 4) hit something
        "found@3": 1.0, "found@5": 1.0,
        "ndcg@3": L2_3 / idcg,  # 0.6309 / 1.6309 = 0.3869
        "ndcg@5": (L2_3 + 1 / math.log2(5)) / idcg,  # (0.6309 + 0.4307) / 1.6309 = 0.6509
        "mrr": 0.5,
    })
    assert all(0.0 <= v <= 1.0 for v in s.values())


def test_ks_are_validated_and_deduplicated(question, chunk):
    j = judge(question(["a"]), [chunk("a")], "doc")
    assert list(retrieval_scores(j, ks=(2, 2))) == ["recall@2", "precision@2", "found@2", "ndcg@2", "mrr"]
    for bad in [(), (0,), (-1,), (1.5,), (True,)]:
        with pytest.raises(ConfigError):
            retrieval_scores(j, ks=bad)


def test_unknown_grain_is_a_config_error(question):
    with pytest.raises(ConfigError):
        judge(question(["a"]), [], "chunk")  # type: ignore[arg-type]


def test_judgement_validates_its_fields():
    with pytest.raises(EvaluationError):
        Judgement(n_relevant=0, hits=[])
    with pytest.raises(EvaluationError):
        Judgement(n_relevant=1, hits=[frozenset({"a"}), frozenset({"b"})])
    with pytest.raises(EvaluationError):
        Judgement(n_relevant=1, hits=[frozenset({"b"})], items=("a",))


def test_question_without_expected_document_is_not_scorable(question, chunk):
    q = question([])  # an unanswerable question
    assert all(judge(q, [chunk("a")], g) is None for g in ("doc", "page", "evidence"))


# --------------------------------------------------------------------------- page grain


def test_page_grain_hits_and_misses(question, chunk):
    # R = {a#page=2, a#page=5}; ranking [a p1-2 (hit page 2), b p2 (wrong document), a p5-6 (hit page 5)]
    q = question(["a#page=2", "a#page=5"])
    j, s = scores_of(q, [chunk("a", pages=[1, 2]), chunk("b", pages=[2]), chunk("a", pages=[5, 6])], "page", ks=(1, 3))
    assert j.hits == [frozenset({"a#page=2"}), frozenset(), frozenset({"a#page=5"})]
    idcg = 1 + L2_3
    assert s == approx({
        "recall@1": 1 / 2, "recall@3": 2 / 2,
        "precision@1": 1.0, "precision@3": 2 / 3,
        "found@1": 1.0, "found@3": 1.0,
        "ndcg@1": 1.0, "ndcg@3": (1 + L2_4) / idcg,  # 1.5 / 1.6309 = 0.9197
        "mrr": 1.0,
    })

    # The right document on the wrong page, and a chunk without pages, are misses.
    j, s = scores_of(q, [chunk("a", pages=[3]), chunk("a", pages=[])], "page", ks=(3,))
    assert j.hits == [frozenset(), frozenset()]
    assert set(s.values()) == {0.0}


def test_chunk_spanning_two_expected_pages(question, chunk):
    # One chunk over pages 2-3 hits both items: recall@1 = 2/2; it is one ranked chunk, so it
    # gains 1 for nDCG: 1 / (1 + 1/log2 3) = 0.6131.
    j, s = scores_of(question(["a#page=2", "a#page=3"]), [chunk("a", pages=[2, 3])], "page", ks=(1, 3))
    assert j.hits == [frozenset({"a#page=2", "a#page=3"})]
    assert s["recall@1"] == 1.0 and s["precision@3"] == pytest.approx(1 / 3)
    assert s["ndcg@3"] == pytest.approx(1 / (1 + L2_3))


def test_question_without_page_labels_is_not_scorable_at_page_grain(question, chunk):
    q = question(["a"])
    assert judge(q, [chunk("a", pages=[1])], "page") is None
    assert judge(q, [chunk("a", pages=[1])], "doc") is not None


def test_page_grain_ignores_whole_document_targets(question, chunk):
    # expected ["a", "b#page=4"]: only (b, 4) is an item at page grain.
    j = judge(question(["a", "b#page=4"]), [chunk("a", pages=[1]), chunk("b", pages=[4])], "page")
    assert j.n_relevant == 1 and j.items == ("b#page=4",)
    assert j.hits == [frozenset(), frozenset({"b#page=4"})]


# --------------------------------------------------------------------------- evidence grain

QUOTE = "the deductible is 500 dollars per year"


def test_evidence_quote_inside_a_chunk(question, chunk):
    text = "Plan overview. The deductible is 500 dollars per year. Copays apply after that."
    j, s = scores_of(question(["a"], [QUOTE]), [chunk("a"), chunk("a", text=text, seq=1)], "evidence", ks=(1, 3))
    assert j.items == ("evidence[0]",) and not j.fallback
    assert j.hits == [frozenset(), frozenset({"evidence[0]"})]
    # hit at rank 2: recall@3 = 1, P@3 = 1/3, nDCG@3 = 1/log2(3) / 1, RR = 1/2
    assert s == approx({
        "recall@1": 0.0, "recall@3": 1.0, "precision@1": 0.0, "precision@3": 1 / 3,
        "found@1": 0.0, "found@3": 1.0, "ndcg@1": 0.0, "ndcg@3": L2_3, "mrr": 0.5,
    })


def test_evidence_quote_spanning_two_chunks(question, chunk):
    quote = "members may visit any in-network physical therapist for up to twenty sessions each year"
    # split after 60% of the quote's characters, at a word boundary
    cut = quote.index(" ", int(len(quote) * 0.6))
    head, tail = quote[:cut], quote[cut + 1 :]
    assert len(head) >= len(quote) / 2 > len(tail)
    first = chunk("a", text="Therapy benefits. " + head.capitalize(), seq=0)
    second = chunk("a", text=tail + ". Prior approval is not needed.", seq=1)
    j = judge(question(["a"], [quote]), [second, first], "evidence")
    # the chunk holding the larger part (>= half the quote) hits; the smaller part does not
    assert j.hits == [frozenset(), frozenset({"evidence[0]"})]
    # with overlapping chunks both halves can reach half the quote
    overlap = chunk("a", text=quote[len(quote) // 3 :] + " Prior approval is not needed.", seq=2)
    assert judge(question(["a"], [quote]), [overlap], "evidence").hits == [frozenset({"evidence[0]"})]


def test_long_quote_containing_the_chunk(question, chunk):
    quote = (
        "Balance billing happens when a provider bills you for the difference between the "
        "allowed amount and the billed amount. In-network providers agree not to balance bill. "
        "Out-of-network providers may bill you for the full difference."
    )
    inside = chunk("a", text="In-network providers agree\nnot to balance bill.")
    heading = chunk("a", text="Balance billing", seq=1)  # 2 words inside the quote: too short to count
    j = judge(question(["a"], [quote]), [heading, inside], "evidence")
    assert j.hits == [frozenset(), frozenset({"evidence[0]"})]


def test_short_quote_is_ignored_and_the_question_falls_back_to_documents(question, chunk):
    # "France" has 1 word (< MIN_EVIDENCE_WORDS = 3): no usable quote, so documents are the items.
    q = question(["a"], ["France", "in France"])
    j, s = scores_of(q, [chunk("b", text="France"), chunk("a", text="Normandy is in the north.")], "evidence", ks=(1,))
    assert j.fallback and j.items == ("a",) and j.grain == "evidence"
    assert j.hits == [frozenset(), frozenset({"a"})]
    assert s["mrr"] == 0.5 and s["recall@1"] == 0.0
    # a short quote next to a usable one is simply dropped
    j = judge(question(["a"], ["France", QUOTE]), [chunk("a", text=QUOTE)], "evidence")
    assert not j.fallback and j.items == ("evidence[1]",)


def test_evidence_in_a_non_expected_document_does_not_count(question, chunk):
    q = question(["a"], [QUOTE])
    j, s = scores_of(q, [chunk("b", text=QUOTE), chunk("a", text="unrelated text about copays")], "evidence", ks=(3,))
    assert j.hits == [frozenset(), frozenset()]
    assert set(s.values()) == {0.0}


def test_evidence_without_expected_documents_matches_any_document(question, chunk):
    j = judge(question([], [QUOTE]), [chunk("zz", text="So: " + QUOTE)], "evidence")
    assert j.hits == [frozenset({"evidence[0]"})]


def test_several_quotes_and_quotes_equal_after_normalisation(question, chunk):
    q1 = "It\u2019s covered at 80 percent"
    q1_straight = "it's covered at 80 percent"  # the same quote once normalised: one item
    q2 = "Copays apply after the deductible"
    q = question(["a"], [q1, q1_straight, q2])
    j, s = scores_of(q, [chunk("a", text="Copays apply after the deductible."), chunk("a", text="It's covered at 80 percent.")], "evidence", ks=(1, 2))
    assert j.items == ("evidence[0]", "evidence[2]")
    assert j.hits == [frozenset({"evidence[2]"}), frozenset({"evidence[0]"})]
    # recall@1 = 1/2, recall@2 = 2/2; nDCG@2 = (1 + 1/log2 3) / (1 + 1/log2 3) = 1
    assert s == approx({"recall@1": 0.5, "recall@2": 1.0, "precision@1": 1.0, "precision@2": 1.0,
                        "found@1": 1.0, "found@2": 1.0, "ndcg@1": 1.0, "ndcg@2": 1.0, "mrr": 1.0})


# --------------------------------------------------------------------------- aggregation


def test_aggregate_leaves_unscorable_questions_out():
    a = {"recall@1": 1.0, "mrr": 1.0}
    b = {"recall@1": 0.0, "mrr": 0.5}
    agg = aggregate([a, None, b, None], n_fallback=1)
    # means over the 2 scored: (1 + 0) / 2, (1 + 0.5) / 2
    assert agg.means == {"recall@1": 0.5, "mrr": 0.75}
    assert (agg.n_scored, agg.n_unscorable, agg.n_fallback, agg.reason) == (2, 2, 1, None)
    assert json.loads(json.dumps(agg.to_dict())) == agg.to_dict()


def test_aggregate_with_no_scorable_question():
    for per_question in ([], [None, None]):
        agg = aggregate(per_question)
        assert agg.means == {} and agg.n_scored == 0
        assert agg.n_unscorable == len(per_question)
        assert agg.reason == "no scorable question"
        assert "NaN" not in json.dumps(agg.to_dict(), allow_nan=False)


def test_aggregate_rejects_mismatched_metrics_and_bad_fallback_counts():
    with pytest.raises(EvaluationError):
        aggregate([{"mrr": 1.0}, {"recall@1": 1.0}])
    with pytest.raises(EvaluationError):
        aggregate([{"mrr": 1.0}, None], n_fallback=2)


def test_evaluate_rankings(question, chunk):
    qs = [
        question(["a#page=1"], [QUOTE], qid="q1"),  # scorable everywhere
        question(["b"], ["too short"], qid="q2"),  # no page label; evidence falls back to b
        question([], [], qid="q3"),  # unanswerable: scorable nowhere
    ]
    rankings = {
        "q1": [chunk("x", text=QUOTE, pages=[1]), chunk("a", text=QUOTE, pages=[1])],
        "q2": [chunk("b")],
        "q3": [chunk("a")],
        "other": [],
    }
    out = evaluate_rankings(qs, rankings, ks=(1, 3))
    assert list(out) == ["doc", "page", "evidence"]
    doc, page, ev = out["doc"], out["page"], out["evidence"]
    # doc: q1 RR = 1/2, q2 RR = 1 -> mean 0.75 over 2; q3 left out
    assert doc.aggregate.means["mrr"] == 0.75
    assert (doc.aggregate.n_scored, doc.aggregate.n_unscorable) == (2, 1)
    assert page.aggregate.n_scored == 1 and page.unscorable_ids == ["q2", "q3"]
    assert page.aggregate.means["mrr"] == 0.5
    assert ev.aggregate.n_fallback == 1 and ev.fallback_ids == ["q2"]
    assert ev.aggregate.means["recall@1"] == 0.5  # q1: 0 (quote in document x), q2: 1
    assert ev.per_question["q1"].first_relevant_rank == 2
    assert ev.per_question["q3"].scores is None and not ev.per_question["q3"].scorable
    payload = {g: r.to_dict() for g, r in out.items()}
    assert json.loads(json.dumps(payload, allow_nan=False)) == payload


def test_evaluate_rankings_errors(question):
    with pytest.raises(EvaluationError, match="no ranking"):
        evaluate_rankings([question(["a"], qid="q1")], {})
    with pytest.raises(EvaluationError, match="duplicate"):
        evaluate_rankings([question(["a"], qid="q1"), question(["b"], qid="q1")], {"q1": []})
    with pytest.raises(ConfigError):
        evaluate_rankings([question(["a"])], {"q1": []}, grains=("chunk",))  # type: ignore[arg-type]
