"""Retrieval metrics against the reference implementation, trec_eval (through pytrec_eval).

Random rankings and qrels come from a seeded RNG; each retrieved chunk hits one relevant item
or none, which is the setting where trec_eval's measures and ours are defined alike.

How the trec_eval inputs are built (and pytrec_eval's quirks):
- trec_eval ranks a run by score, ties broken by document id, so each chunk gets a strictly
  decreasing score and the order is ours. Relevance labels must be ``int``.
- A run cannot hold one document twice, and trec_eval counts a relevant document once. For
  recall, success, nDCG and reciprocal rank, the chunk that first hits an item is labelled with
  that item and every other chunk with a unique non-relevant id ("run A"): duplicates of an
  item already hit then gain nothing, exactly as in our definitions.
- Our precision counts every chunk that hits an item, duplicates included, so ``P_k`` is
  checked on a chunk-level run ("run B"): chunk ``i`` is document ``c<i>``, relevant when it
  hits an item. An unretrieved relevant document is added to B's qrels so every query has one
  (it cannot change ``P_k``).
- pytrec_eval returns all zeros for a query with an empty run, as we do.
"""

from __future__ import annotations

import random

import pytest

from core.metrics import judge, retrieval_scores

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 3, 5, 10)
N_CASES = 200
SEED = 20240917
MEASURES_A = {f"recall_{','.join(map(str, KS))}", f"ndcg_cut_{','.join(map(str, KS))}", f"success_{','.join(map(str, KS))}", "recip_rank"}
MEASURES_B = {f"P_{','.join(map(str, KS))}"}


def _random_cases(chunk, question, grain):
    rng = random.Random(SEED if grain == "doc" else SEED + 1)
    cases = []
    for n in range(N_CASES):
        docs = [f"d{i}" for i in range(rng.randint(1, 8))]
        if grain == "doc":
            expected = rng.sample(docs, rng.randint(1, min(4, len(docs))))
        else:
            pairs = {(rng.choice(docs), rng.randint(1, 4)) for _ in range(rng.randint(1, 4))}
            expected = [f"{d}#page={p}" for d, p in sorted(pairs)]
        chunks = [
            chunk(rng.choice(docs + ["other"]), pages=[rng.randint(1, 4)], seq=i)  # one page: one item at most
            for i in range(rng.choice([0, 1, 2, 3, 5, 8, 12, 15]))
        ]
        cases.append((f"q{n}", question(expected, qid=f"q{n}"), chunks))
    return cases


def _trec_inputs(qid, judgement):
    qrels_a = {item: 1 for item in judgement.items}
    run_a, qrels_b, run_b = {}, {"never-retrieved": 1}, {}
    seen: set[str] = set()
    n = len(judgement.hits)
    for i, hit in enumerate(judgement.hits):
        assert len(hit) <= 1  # the setting of this test
        score = float(n - i)  # strictly decreasing: trec_eval keeps our order
        new = hit - seen
        seen |= hit
        run_a[next(iter(new)) if new else f"nonrel-{qid}-{i}"] = score
        run_b[f"c{i}"] = score
        qrels_b[f"c{i}"] = int(bool(hit))
    return qrels_a, run_a, qrels_b, run_b


@pytest.mark.parametrize("grain", ["doc", "page"])
def test_scores_equal_trec_eval(grain, chunk, question):
    qrels_a, runs_a, qrels_b, runs_b, ours = {}, {}, {}, {}, {}
    for qid, q, chunks in _random_cases(chunk, question, grain):
        j = judge(q, chunks, grain)
        assert j is not None
        ours[qid] = retrieval_scores(j, KS)
        qrels_a[qid], runs_a[qid], qrels_b[qid], runs_b[qid] = _trec_inputs(qid, j)

    ref_a = pytrec_eval.RelevanceEvaluator(qrels_a, MEASURES_A).evaluate(runs_a)
    ref_b = pytrec_eval.RelevanceEvaluator(qrels_b, MEASURES_B).evaluate(runs_b)
    n_hits = 0
    for qid, s in ours.items():
        a, b = ref_a[qid], ref_b[qid]
        assert s["mrr"] == pytest.approx(a["recip_rank"], abs=1e-9), qid
        for k in KS:
            assert s[f"recall@{k}"] == pytest.approx(a[f"recall_{k}"], abs=1e-9), (qid, k)
            assert s[f"ndcg@{k}"] == pytest.approx(a[f"ndcg_cut_{k}"], abs=1e-9), (qid, k)
            assert s[f"found@{k}"] == pytest.approx(a[f"success_{k}"], abs=1e-9), (qid, k)
            assert s[f"precision@{k}"] == pytest.approx(b[f"P_{k}"], abs=1e-9), (qid, k)
        n_hits += s["mrr"] > 0
    # the random cases exercise both hits and misses
    assert 0 < n_hits < N_CASES
