"""The local Azure AI Search service's ranking (test support) against hand computations: BM25
with Lucene's idf, k1 = 1.2, b = 0.75; the query syntaxes' operators; OData filters; the
cosine score transform; RRF."""

from __future__ import annotations

import math

import pytest

from tests.support.search_ranking import BM25Index, parse_filter, parse_full, parse_simple, rrf, vector_score

DOCS = [{"t": "a b"}, {"t": "a c c"}, {"t": "d"}]


def test_bm25_by_hand():
    index = BM25Index(DOCS, ["t"])
    # "c": N = 3, n = 1, idf = ln(1 + 2.5 / 1.5); doc 1: tf 2, length 3, avgdl 2
    idf = math.log(1 + 2.5 / 1.5)
    norm = 1 - 0.75 + 0.75 * 3 / 2
    assert index.scores(parse_simple("c")) == {1: pytest.approx(idf * 2 * 2.2 / (2 + 1.2 * norm))}
    # "a": n = 2, idf = ln(1 + 1.5 / 2.5); doc 0 length 2 (norm 1), doc 1 length 3
    idf_a = math.log(1 + 1.5 / 2.5)
    got = index.scores(parse_simple("a"))
    assert got[0] == pytest.approx(idf_a * 2.2 / (1 + 1.2))
    assert got[1] == pytest.approx(idf_a * 2.2 / (1 + 1.2 * norm))


def test_operators():
    index = BM25Index(DOCS, ["t"])
    assert set(index.scores(parse_simple("a -c"))) == {0}
    assert set(index.scores(parse_simple("+c a"))) == {1}
    assert set(index.scores(parse_full("a AND b", ["t"]))) == {0}
    assert set(index.scores(parse_full("a NOT b", ["t"]))) == {1}
    assert set(index.scores(parse_full("t:d", ["t"]))) == {2}
    assert set(index.scores(parse_full("d\\?", ["t"]))) == {2}
    with pytest.raises(ValueError, match="Unknown field 'x'"):
        parse_full("x:d", ["t"])
    boosted = index.scores(parse_full("a^2", ["t"]))
    assert boosted[0] == pytest.approx(2 * index.scores(parse_simple("a"))[0])


def test_filters():
    docs = [{"f": "x", "n": 1}, {"f": "y", "n": 2}, {"f": "o'k", "n": 3}]
    assert [parse_filter("f eq 'x'")(d) for d in docs] == [True, False, False]
    assert [parse_filter("f ne 'x' and n eq 2")(d) for d in docs] == [False, True, False]
    assert [parse_filter("search.in(f, 'x,o''k', ',')")(d) for d in docs] == [True, False, True]
    assert [parse_filter("f eq 'x' or n eq 3")(d) for d in docs] == [True, False, True]
    with pytest.raises(ValueError, match="supports eq, ne and search.in"):
        parse_filter("n gt 1")


def test_vector_scores_and_rrf():
    assert vector_score([1, 0], [1, 0]) == pytest.approx(1.0)
    assert vector_score([1, 0], [0, 1]) == pytest.approx(0.5)
    assert vector_score([1, 0], [-1, 0]) == pytest.approx(1 / 3)
    assert rrf([[5, 6], [6]]) == {5: pytest.approx(1 / 61), 6: pytest.approx(1 / 62 + 1 / 61)}
