"""Ranking for the local Azure AI Search server: BM25 over an index's searchable fields, the
simple and full (Lucene) query syntaxes' small core, OData filters' small core, cosine vector
scores as the service reports them, and reciprocal rank fusion.

References:
    BM25 as Azure AI Search scores it (Lucene's BM25Similarity, k1 = 1.2, b = 0.75,
    idf = ln(1 + (N - n + 0.5) / (n + 0.5))):
    https://learn.microsoft.com/azure/search/index-similarity-and-scoring
    Simple syntax: https://learn.microsoft.com/azure/search/query-simple-syntax ; full syntax:
    https://learn.microsoft.com/azure/search/query-lucene-syntax
    Vector scores (cosine: ``1 / (1 + (1 - cosine similarity))``):
    https://learn.microsoft.com/azure/search/vector-search-ranking
    Hybrid ranking, RRF with k = 60: https://learn.microsoft.com/azure/search/hybrid-search-ranking
    OData ``eq`` / ``ne`` / ``search.in``: https://learn.microsoft.com/azure/search/search-query-odata-filter
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

K1 = 1.2
B = 0.75
#: Azure's hybrid ranking constant.
RRF_K = 60
_TOKEN = re.compile(r"\w+", re.UNICODE)
_LUCENE_SPECIAL = re.compile(r'\\(.)')


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (the standard analyzer's core: Unicode words, no stop words)."""
    return _TOKEN.findall(str(text).lower())


@dataclass
class Query:
    """A parsed keyword query: terms any of which may match, terms that must, terms that must
    not, each optionally restricted to a field and boosted."""

    should: list[tuple[str | None, str, float]] = field(default_factory=list)
    must: list[tuple[str | None, str, float]] = field(default_factory=list)
    must_not: list[tuple[str | None, str]] = field(default_factory=list)


def parse_simple(text: str) -> Query:
    """The simple syntax: ``+term`` must match, ``-term`` must not (after whitespace), the rest
    are words any of which may match; ``"`` ``|`` ``*`` ``(`` ``)`` are operators, not words."""
    query = Query()
    for raw in text.split():
        sign = raw[0] if raw[0] in "+-" and len(raw) > 1 else ""
        body = raw[1:] if sign else raw
        for word in tokens(body):
            if sign == "+":
                query.must.append((None, word, 1.0))
            elif sign == "-":
                query.must_not.append((None, word))
            else:
                query.should.append((None, word, 1.0))
    return query


def parse_full(text: str, fields: Sequence[str]) -> Query:
    """The full (Lucene) syntax's core: ``field:term`` (field must exist, else ValueError),
    ``term^2`` boosts, ``AND`` / ``&&`` make both sides required, ``NOT`` / ``!`` / ``-``
    exclude, ``OR`` / ``||`` are the default; backslash escapes make special characters plain;
    wildcards and fuzziness match as plain words."""
    query = Query()
    words = text.split()
    required_next = False
    i = 0
    while i < len(words):
        raw = words[i]
        i += 1
        if raw in ("AND", "&&"):
            if query.should:  # the left side becomes required too
                query.must.append(query.should.pop())
            required_next = True
            continue
        if raw in ("OR", "||"):
            continue
        negate = raw in ("NOT", "!")
        if negate:
            if i >= len(words):
                break
            raw = words[i]
            i += 1
        sign = raw[0] if raw[0] in "+-!" and len(raw) > 1 else ""
        raw = raw[1:] if sign else raw
        negate = negate or sign in ("-", "!")
        target = None
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):(.+)$", raw)
        if match:
            target, raw = match.group(1), match.group(2)
            if target not in fields:
                raise ValueError(f"Invalid expression: Unknown field '{target}' in the search query.")
        boost = 1.0
        boosted = re.match(r"^(.*)\^([0-9.]+)$", raw)
        if boosted:
            raw, boost = boosted.group(1), float(boosted.group(2))
        plain = _LUCENE_SPECIAL.sub(r"\1", re.sub(r"~[0-9.]*$", "", raw))  # fuzziness is not modelled
        for word in tokens(plain):
            if negate:
                query.must_not.append((target, word))
            elif sign == "+" or required_next:
                query.must.append((target, word, boost))
            else:
                query.should.append((target, word, boost))
        required_next = False
    return query


class BM25Index:
    """BM25 over the searchable string fields of some documents (one bag of words per field).

    Args:
        documents: the index's documents.
        fields: the searchable fields.
    """

    def __init__(self, documents: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> None:
        self.fields = list(fields)
        self.n = len(documents)
        self.tf: list[dict[str, Counter]] = []
        self.length: list[dict[str, int]] = []
        df: dict[str, Counter] = {f: Counter() for f in self.fields}
        for doc in documents:
            per_field, lengths = {}, {}
            for f in self.fields:
                words = tokens(doc.get(f) or "")
                per_field[f] = Counter(words)
                lengths[f] = len(words)
                df[f].update(set(words))
            self.tf.append(per_field)
            self.length.append(lengths)
        self.df = df
        self.avg = {f: (sum(l[f] for l in self.length) / self.n if self.n else 0.0) for f in self.fields}

    def _term(self, i: int, f: str, word: str) -> float:
        tf = self.tf[i][f].get(word, 0)
        if not tf:
            return 0.0
        n = self.df[f][word]
        idf = math.log(1.0 + (self.n - n + 0.5) / (n + 0.5))
        norm = 1.0 - B + B * self.length[i][f] / (self.avg[f] or 1.0)
        return idf * tf * (K1 + 1.0) / (tf + K1 * norm)

    def _match(self, i: int, target: str | None, word: str, fields: Sequence[str]) -> float:
        return sum(self._term(i, f, word) for f in ([target] if target else fields))

    def scores(self, query: Query, search_fields: Sequence[str] | None = None) -> dict[int, float]:
        """Document index -> BM25 score, for the documents the query matches (a required
        term missing or an excluded term present leaves a document out)."""
        fields = list(search_fields or self.fields)
        out: dict[int, float] = {}
        for i in range(self.n):
            if any(self._match(i, t, w, fields) > 0 for t, w in query.must_not):
                continue
            must = [self._match(i, t, w, fields) * boost for t, w, boost in query.must]
            if any(s == 0 for s in must):
                continue
            should = [self._match(i, t, w, fields) * boost for t, w, boost in query.should]
            if not query.must and not any(s > 0 for s in should):
                continue
            out[i] = sum(must) + sum(should)
        return out


def vector_score(query: np.ndarray, vector: Sequence[float]) -> float:
    """The service's score for the cosine metric: ``1 / (1 + (1 - cos))``, in [1/3, 1]."""
    v = np.asarray(vector, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    denominator = float(np.linalg.norm(q) * np.linalg.norm(v)) or 1.0
    cosine = float(np.dot(q, v)) / denominator
    return 1.0 / (1.0 + (1.0 - cosine))


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> dict[int, float]:
    """Reciprocal rank fusion: document -> sum over rankings of ``1 / (k + rank)``."""
    out: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            out[doc] = out.get(doc, 0.0) + 1.0 / (k + rank)
    return out


_EQ = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_/]*)\s+(eq|ne)\s+(?:'((?:[^']|'')*)'|(-?[0-9.]+)|(true|false|null))\s*$")
_IN = re.compile(r"^\s*search\.in\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,\s*'((?:[^']|'')*)'\s*(?:,\s*'((?:[^']|'')*)'\s*)?\)\s*$")


def _clause(text: str) -> Callable[[Mapping[str, Any]], bool]:
    eq = _EQ.match(text)
    if eq:
        name, op, string, number, literal = eq.groups()
        if string is not None:
            wanted: Any = string.replace("''", "'")
        elif number is not None:
            wanted = float(number)
        else:
            wanted = {"true": True, "false": False, "null": None}[literal]

        def test(doc: Mapping[str, Any]) -> bool:
            value = doc.get(name)
            if isinstance(wanted, float) and isinstance(value, (int, float)) and not isinstance(value, bool):
                same = float(value) == wanted
            else:
                same = value == wanted
            return same if op == "eq" else not same
        return test
    found = _IN.match(text)
    if found:
        name, values, delimiters = found.groups()
        splitter = "[" + re.escape(delimiters.replace("''", "'") if delimiters else " ,") + "]"
        wanted_set = {v for v in re.split(splitter, values.replace("''", "'")) if v}
        return lambda doc: str(doc.get(name)) in wanted_set
    raise ValueError(f"Invalid expression: the local server supports eq, ne and search.in, got '{text.strip()}'")


def parse_filter(text: str) -> Callable[[Mapping[str, Any]], bool]:
    """An OData filter of ``eq`` / ``ne`` comparisons and ``search.in`` calls joined by
    ``and`` / ``or`` (``and`` binds tighter; no parentheses); ValueError for anything else."""
    alternatives = [[_clause(c) for c in re.split(r"\s+and\s+", part)] for part in re.split(r"\s+or\s+", text)]
    return lambda doc: any(all(c(doc) for c in group) for group in alternatives)


__all__ = ["BM25Index", "Query", "RRF_K", "parse_filter", "parse_full", "parse_simple", "rrf", "tokens",
           "vector_score"]
