"""Retrieval metrics: recall@k, precision@k, found@k, nDCG@k and MRR at three grains.

``found@k`` is 1 when a relevant item is in the top k: the measure trec_eval calls
``success_k`` and others call hit rate (hit@k). Reports written before it was named so hold
``success@k``; :func:`found_name` reads either.

A question's *relevant items* depend on the grain:

- ``"doc"``: the expected document ids. A retrieved chunk hits document ``d`` when
  ``chunk.document_id == d``. Item keys are the document ids.
- ``"page"``: the expected ``(document_id, page)`` pairs. A chunk hits one when its document
  matches and the page is in ``chunk.pages``. Item keys are ``"doc#page=N"``. A question with
  no page label has no items at this grain: it is not scorable and is counted, not scored.
- ``"evidence"``: the question's usable evidence quotes (at least
  :data:`~core.golden.types.MIN_EVIDENCE_WORDS` words). A chunk hits a quote when it comes from
  one of the expected documents (when the question names any) and :func:`evidence_matches`
  holds. Item keys are ``"evidence[i]"``, ``i`` the quote's 0-based position in
  ``GoldenQuestion.evidence``. A question without usable evidence falls back to its documents
  (the ``"doc"`` items) and its :class:`Judgement` says so (``fallback=True``).

The pipeline is :func:`judge` (which ranked chunk hits which item) -> :func:`retrieval_scores`
(one question's scores) -> :func:`aggregate` (means over the scorable questions);
:func:`evaluate_rankings` runs all three for a golden set. Every score lies in ``[0, 1]``,
higher is better, and none is ever NaN: a question that cannot be scored is ``None`` and is
counted apart.

References:
    trec_eval (NIST), measures ``recall_k``, ``P_k``, ``success_k``, ``ndcg_cut_k``,
    ``recip_rank``: https://github.com/usnistgov/trec_eval ; Järvelin & Kekäläinen (2002),
    "Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4); Voorhees (1999),
    "The TREC-8 Question Answering Track Report" (mean reciprocal rank).
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np

from core.chunking.base import Chunk
from core.errors import ConfigError, EvaluationError
from core.golden.types import MIN_EVIDENCE_WORDS, GoldenQuestion
# The bootstrap's resamples, seed and level have one home.
from core.metrics.bootstrap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE_LEVEL as CI_LEVEL
from core.metrics.paired import paired_outcomes

logger = logging.getLogger(__name__)

Grain = Literal["doc", "page", "evidence"]

#: The grains, coarsest first.
GRAINS: tuple[Grain, ...] = ("doc", "page", "evidence")

#: The rank cut-offs every report uses (the one home of this constant).
DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)
#: Results kept per search: the largest cut-off.
TOP_K: int = max(DEFAULT_KS)
#: The measures :func:`retrieval_scores` computes at each cut-off, and the one without.
MEASURES_AT_K: tuple[str, ...] = ("recall", "precision", "found", "ndcg")


def metric_names(ks: Sequence[int] = DEFAULT_KS) -> tuple[str, ...]:
    """Every metric name :func:`retrieval_scores` returns for ``ks``: ``mrr`` and
    ``<measure>@<k>`` for each measure of :data:`MEASURES_AT_K`."""
    return ("mrr", *(f"{m}@{k}" for m in MEASURES_AT_K for k in ks))


def found_name(means: Mapping[str, float], k: int) -> float | None:
    """Return ``found@k`` from a dict of means, or ``success@k`` from a report written
    before the measure was named ``found@k``; None when neither is there."""
    value = means.get(f"found@{k}")
    return means.get(f"success@{k}") if value is None else value

#: A chunk that neither contains a quote nor lies within it still hits the quote when their
#: longest common run of characters (after :func:`normalize_text`) is at least this fraction
#: of the normalised quote's length: a quote split across a chunk boundary leaves at least
#: half of itself in one of the two chunks.
EVIDENCE_MIN_OVERLAP = 0.5

_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2039\u203a\u2032"
_DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
_TRANSLATION = {
    **{ord(c): "'" for c in _SINGLE_QUOTES},
    **{ord(c): '"' for c in _DOUBLE_QUOTES},
    **{ord(c): "-" for c in _DASHES},
    **{ord(c): None for c in _INVISIBLE},
}
_WHITESPACE = re.compile(r"\s+")


# --------------------------------------------------------------------------- evidence matching


@lru_cache(maxsize=8192)
def normalize_text(text: str) -> str:
    """Normalise text for evidence matching.

    Steps, in order: Unicode NFKC (ligatures such as ``"ﬁ"`` become ``"fi"``, no-break and
    full-width characters become their plain forms), casefold, curly and angle quotes become
    ``'`` or ``"``, hyphen and dash variants (en dash, em dash, minus, ...) become ``-``, soft
    hyphens and zero-width characters are removed, and every run of whitespace becomes one
    space, stripped at both ends.

    Args:
        text: any text.

    Returns:
        The normalised text (possibly empty). Words hyphenated across a line break in the
        source (``"bene-\\nfits"``) are not rejoined.
    """
    out = unicodedata.normalize("NFKC", text).casefold().translate(_TRANSLATION)
    return _WHITESPACE.sub(" ", out).strip()


def _overlap_needed(quote_len: int) -> int:
    return max(1, math.ceil(EVIDENCE_MIN_OVERLAP * quote_len))


def _matches_normalized(quote: str, chunk: str) -> bool:
    """:func:`evidence_matches` on texts already passed through :func:`normalize_text`."""
    if not quote or not chunk:
        return False
    if quote in chunk:
        return True
    if len(chunk) < len(quote) and chunk in quote and len(chunk.split(" ")) >= MIN_EVIDENCE_WORDS:
        return True
    need = _overlap_needed(len(quote))
    return len(chunk) >= need and has_common_run(quote, chunk, need)


def _run_forward(a: str, i: int, b: str, j: int, limit: int) -> int:
    """Length of the longest common prefix of ``a[i:]`` and ``b[j:]``, at most ``limit``."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i : i + mid] == b[j : j + mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _run_backward(a: str, i: int, b: str, j: int, limit: int) -> int:
    """Length of the longest common suffix of ``a[:i]`` and ``b[:j]``, at most ``limit``."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i - mid : i] == b[j - mid : j]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def has_common_run(a: str, b: str, min_len: int) -> bool:
    """Tell whether ``a`` and ``b`` share a contiguous run of at least ``min_len`` characters.

    Exact, and equivalent to ``SequenceMatcher(None, a, b, autojunk=False)
    .find_longest_match(0, len(a), 0, len(b)).size >= min_len``, but faster on long texts:
    any common run of ``min_len`` characters contains one of ``a``'s aligned blocks of
    ``min_len // 2`` characters (pigeonhole), so each occurrence of a block in ``b`` is an
    anchor, and the run through an anchor is measured by extending it both ways with slice
    comparisons (binary search). Texts sharing no block are rejected with substring tests
    alone.

    Args:
        a: the first text (the quote).
        b: the second text (the chunk).
        min_len: the run length wanted, in characters; ``<= 0`` is always True.

    Returns:
        True when some ``a[i:i+min_len] == b[j:j+min_len]``.
    """
    if min_len <= 0:
        return True
    if min_len > min(len(a), len(b)):
        return False
    size = max(1, min_len // 2)
    for start in range(0, len(a) - size + 1, size):
        block = a[start : start + size]
        at = b.find(block)
        while at != -1:
            left = _run_backward(a, start, b, at, min(start, at))
            end_a, end_b = start + size, at + size
            right = _run_forward(a, end_a, b, end_b, min(len(a) - end_a, len(b) - end_b))
            if left + size + right >= min_len:
                return True
            at = b.find(block, at + 1)
    return False


def evidence_matches(quote: str, chunk_text: str) -> bool:
    """Tell whether a chunk's text holds an evidence quote, allowing for chunk boundaries.

    Both texts are normalised with :func:`normalize_text`; then the chunk matches the quote
    when any of these holds (checked cheapest first):

    1. the quote is a substring of the chunk;
    2. the chunk lies entirely within the quote (a long evidence passage larger than a chunk)
       and has at least :data:`~core.golden.types.MIN_EVIDENCE_WORDS` words, so a bare
       heading or a one-word chunk does not match every quote containing it;
    3. the longest common contiguous run of characters is at least
       ``ceil(EVIDENCE_MIN_OVERLAP * len(quote))`` characters long (a quote split across a
       chunk boundary), found by :func:`has_common_run`.

    Args:
        quote: an evidence quote, as written in the golden file.
        chunk_text: a retrieved chunk's text.

    Returns:
        True when the chunk holds the quote (or its larger part); False when either text is
        empty after normalisation.
    """
    return _matches_normalized(normalize_text(quote), normalize_text(chunk_text))


# --------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class Judgement:
    """Which relevant items each ranked chunk hits, for one question at one grain.

    Attributes:
        n_relevant: ``|R|``, the number of relevant items (at least 1).
        hits: one entry per retrieved chunk, in rank order (rank 1 first): the keys of the
            relevant items that chunk hits (empty when it hits none).
        fallback: True when the evidence grain had no usable quote and scored the question's
            documents instead.
        items: the relevant item keys, in golden-file order (empty when not recorded).
        grain: the grain judged, or None when not recorded.

    Raises:
        EvaluationError: ``n_relevant < 1``, more distinct items hit than ``n_relevant``, or
            a hit key not in ``items`` (when ``items`` is given).
    """

    n_relevant: int
    hits: list[frozenset[str]]
    fallback: bool = False
    items: tuple[str, ...] = ()
    grain: Grain | None = None

    def __post_init__(self) -> None:
        if self.n_relevant < 1:
            raise EvaluationError(f"a judgement needs at least one relevant item, got n_relevant={self.n_relevant}")
        if self.items and len(self.items) != self.n_relevant:
            raise EvaluationError(f"{len(self.items)} item keys given for n_relevant={self.n_relevant}")
        hit = frozenset().union(*self.hits) if self.hits else frozenset()
        if len(hit) > self.n_relevant:
            raise EvaluationError(f"{len(hit)} distinct items hit but only {self.n_relevant} are relevant")
        if self.items and not hit <= set(self.items):
            raise EvaluationError(f"hit keys {sorted(hit - set(self.items))} are not relevant items")

    def to_dict(self) -> dict[str, Any]:
        """Return ``{grain, n_relevant, items, hits, fallback}`` (JSON-serialisable; each
        rank's hits as a sorted list)."""
        return {
            "grain": self.grain,
            "n_relevant": self.n_relevant,
            "items": list(self.items),
            "hits": [sorted(h) for h in self.hits],
            "fallback": self.fallback,
        }


def _check_grain(grain: str) -> None:
    if grain not in GRAINS:
        raise ConfigError(f"unknown grain {grain!r}; expected one of {', '.join(GRAINS)}")


def _judge_docs(question: GoldenQuestion, retrieved: Sequence[Chunk], grain: Grain, fallback: bool) -> Judgement | None:
    docs = question.document_ids
    if not docs:
        return None
    wanted = set(docs)
    hits = [frozenset({c.document_id}) if c.document_id in wanted else frozenset() for c in retrieved]
    return Judgement(n_relevant=len(docs), hits=hits, fallback=fallback, items=tuple(docs), grain=grain)


def _judge_pages(question: GoldenQuestion, retrieved: Sequence[Chunk]) -> Judgement | None:
    pairs = question.pages
    if not pairs:
        return None
    keys = {pair: f"{pair[0]}#page={pair[1]}" for pair in pairs}
    hits = []
    for chunk in retrieved:
        doc = chunk.document_id
        hits.append(frozenset(keys[(doc, p)] for p in chunk.pages if (doc, p) in keys))
    return Judgement(n_relevant=len(pairs), hits=hits, items=tuple(keys.values()), grain="page")


def _evidence_items(question: GoldenQuestion) -> list[tuple[str, str]]:
    """``(key, normalised quote)`` for each usable quote, distinct after normalisation.

    A quote that contains another usable quote of the same question is a longer wording of
    the same evidence (annotators often mark "10th and 11th centuries" and "in the 10th and
    11th centuries"): only the shorter one is kept, so alternatives are one item, not two.
    """
    seen: set[str] = set()
    items = []
    for i, quote in enumerate(question.evidence):
        if len(quote.split()) < MIN_EVIDENCE_WORDS:
            continue
        norm = normalize_text(quote)
        if norm and norm not in seen:
            seen.add(norm)
            items.append((f"evidence[{i}]", norm))
    return [(key, norm) for key, norm in items if not any(o != norm and o in norm for _, o in items)]


def _judge_evidence(question: GoldenQuestion, retrieved: Sequence[Chunk]) -> Judgement | None:
    items = _evidence_items(question)
    if not items:
        return _judge_docs(question, retrieved, "evidence", fallback=True)
    docs = set(question.document_ids)
    hits = []
    for chunk in retrieved:
        if docs and chunk.document_id not in docs:
            hits.append(frozenset())
            continue
        text = normalize_text(chunk.text)
        hits.append(frozenset(key for key, quote in items if _matches_normalized(quote, text)))
    return Judgement(n_relevant=len(items), hits=hits, items=tuple(k for k, _ in items), grain="evidence")


def judge(question: GoldenQuestion, retrieved: Sequence[Chunk], grain: Grain) -> Judgement | None:
    """Judge a ranked list of chunks against a question's relevant items at one grain.

    Args:
        question: the golden question.
        retrieved: the retrieved chunks, best first (any length, possibly empty).
        grain: ``"doc"``, ``"page"`` or ``"evidence"`` (see the module docstring).

    Returns:
        A :class:`Judgement` with one ``hits`` entry per retrieved chunk, or None when the
        question has no relevant item at this grain: no expected document (``"doc"``), no
        page label (``"page"``), or neither usable evidence nor an expected document
        (``"evidence"``). A question without usable evidence is judged on its documents at
        the evidence grain, with ``fallback=True``.

    Raises:
        ConfigError: ``grain`` is not one of :data:`GRAINS`.
    """
    _check_grain(grain)
    if grain == "doc":
        return _judge_docs(question, retrieved, "doc", fallback=False)
    if grain == "page":
        return _judge_pages(question, retrieved)
    return _judge_evidence(question, retrieved)


# --------------------------------------------------------------------------- scores


def _check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    out = tuple(ks)
    if not out:
        raise ConfigError("ks is empty; give at least one rank cut-off")
    for k in out:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"rank cut-off {k!r} is not a positive integer")
    return tuple(dict.fromkeys(out))


def first_relevant_rank(judgement: Judgement) -> int | None:
    """Return the 1-based rank of the first chunk that hits any relevant item.

    Args:
        judgement: a question's judgement.

    Returns:
        The rank (``1 <= rank <= len(judgement.hits)``), or None when no chunk hits.
    """
    for rank, hit in enumerate(judgement.hits, start=1):
        if hit:
            return rank
    return None


def retrieval_scores(judgement: Judgement, ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """Score one question's ranked chunks.

    With ``R`` the relevant items, ``hits_i`` the items the chunk at rank ``i`` hits (ranks
    from 1) and ``new_i = 1`` when ``hits_i`` holds an item no earlier chunk hit (else 0):

    - ``recall@k = |hits_1 ∪ ... ∪ hits_k| / |R|``: an item hit by several chunks counts once.
    - ``precision@k = #{i <= k : hits_i non-empty} / k``: divided by ``k`` even when fewer
      than ``k`` chunks came back (as trec_eval ``P_k``).
    - ``found@k = 1`` (trec_eval's ``success@k``, the hit rate) when some ``hits_i`` with ``i <= k`` is non-empty, else 0.
    - ``ndcg@k = DCG@k / IDCG@k`` with binary gain and a log2 discount:
      ``DCG@k = sum_{i <= k} new_i / log2(i + 1)`` and
      ``IDCG@k = sum_{i=1}^{min(|R|, k)} 1 / log2(i + 1)``. Extra chunks of an item already
      hit add no gain, so nDCG stays in ``[0, 1]``. A chunk hitting several new items at once
      (a chunk spanning two expected pages, or holding two quotes) gains 1, like one item.
    - ``mrr = 1 / first_relevant_rank`` over the whole returned list, 0 when no chunk hits
      (the per-question reciprocal rank; its mean over questions is the MRR).

    Args:
        judgement: the question's judgement (see :func:`judge`).
        ks: rank cut-offs, positive integers; duplicates are dropped.

    Returns:
        ``{"recall@k": ..., "precision@k": ..., "found@k": ..., "ndcg@k": ..., "mrr": ...}``
        for each ``k`` (measure by measure, ``k`` in the order given), each a float in
        ``[0, 1]``, higher is better. All zero when no chunk was retrieved.

    Raises:
        ConfigError: ``ks`` is empty or holds something other than a positive integer.

    References:
        trec_eval ``recall_k``, ``P_k``, ``success_k``, ``ndcg_cut_k``, ``recip_rank``;
        Järvelin & Kekäläinen (2002), ACM TOIS 20(4) for nDCG; Voorhees (1999), TREC-8 QA
        track for MRR.
    """
    ks = _check_ks(ks)
    n_rel = judgement.n_relevant
    hits = judgement.hits
    k_max = max(ks)

    seen: set[str] = set()
    covered: list[int] = []  # covered[i]: distinct items hit within the top i+1
    relevant_chunks: list[int] = []  # cumulative count of chunks hitting anything
    dcg: list[float] = []  # cumulative DCG
    n_hit_chunks, total = 0, 0.0
    for rank, hit in enumerate(hits[:k_max], start=1):
        new = bool(hit - seen)
        seen |= hit
        n_hit_chunks += bool(hit)
        if new:
            total += 1.0 / math.log2(rank + 1)
        covered.append(len(seen))
        relevant_chunks.append(n_hit_chunks)
        dcg.append(total)

    def at(series: list, k: int, empty: Any) -> Any:
        if not series:
            return empty
        return series[min(k, len(series)) - 1]

    first = first_relevant_rank(judgement)
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = at(covered, k, 0) / n_rel
    for k in ks:
        out[f"precision@{k}"] = at(relevant_chunks, k, 0) / k
    for k in ks:
        out[f"found@{k}"] = 1.0 if first is not None and first <= k else 0.0
    for k in ks:
        ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(n_rel, k) + 1))
        out[f"ndcg@{k}"] = at(dcg, k, 0.0) / ideal
    out["mrr"] = 0.0 if first is None else 1.0 / first
    return {name: float(value) for name, value in out.items()}


# --------------------------------------------------------------------------- aggregation


#: How the intervals are computed, as reports say it.
CI_METHOD = "percentile bootstrap over questions"


def bootstrap_intervals(
    scores: np.ndarray, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED, level: float = CI_LEVEL,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap intervals of column means, resampling rows (questions).

    Each resample draws ``n`` questions with replacement (multinomial counts, so the memory
    is ``resamples x n``, not ``resamples x n x metrics``); the interval is the
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the resampled means. The same
    seed and ``n`` draw the same questions, so the intervals of two setups on the same
    questions are paired.

    Args:
        scores: float array ``(n_questions, n_metrics)``, ``n_questions >= 1``.
        resamples: bootstrap resamples (>= 1).
        seed: seed of ``numpy.random.default_rng``.
        level: confidence level in (0, 1).

    Returns:
        ``(low, high)``, float arrays ``(n_metrics,)``, with ``low <= mean <= high`` up to
        the resampling (equal to the mean when every question has the same score).

    Raises:
        EvaluationError: no question, or a bad ``resamples`` / ``level``.

    References:
        Efron & Tibshirani (1993), "An Introduction to the Bootstrap", ch. 13 (percentile
        intervals).
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1:
        raise EvaluationError(f"bootstrap needs a (questions, metrics) array with a question, got shape {x.shape}")
    if resamples < 1 or not 0.0 < level < 1.0:
        raise EvaluationError(f"bootstrap needs resamples >= 1 and 0 < level < 1, got {resamples} and {level}")
    n = x.shape[0]
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples)  # (resamples, n)
    means = counts @ x / n  # (resamples, metrics)
    low, high = np.quantile(means, [(1.0 - level) / 2.0, (1.0 + level) / 2.0], axis=0)
    return low, high


def mcnemar_exact(found_a: Sequence[bool], found_b: Sequence[bool]) -> dict[str, Any]:
    """McNemar's exact test of two setups on the same questions (two-sided).

    Only the discordant questions count: ``b`` found by ``a`` alone, ``c`` by ``b`` alone.
    Under the null hypothesis (the setups find as often) ``b ~ Binomial(b + c, 1/2)``; the
    p-value is ``min(1, 2 * P(X <= min(b, c)))``, 1 when no question is discordant.

    Args:
        found_a: per question, whether setup a found it (in the same question order as b).
        found_b: the same for setup b.

    Returns:
        ``{"only_a": b, "only_b": c, "p_value": float in [0, 1]}``.

    Raises:
        EvaluationError: the two lists differ in length.

    References:
        McNemar (1947), Psychometrika 12(2); the exact (binomial) form: Fagerland, Lydersen &
        Laake (2013), BMC Medical Research Methodology 13:91. Counted and tested by
        ``core.metrics.paired.paired_outcomes``.
    """
    if len(found_a) != len(found_b):
        raise EvaluationError(f"paired test on {len(found_a)} and {len(found_b)} questions: give the same questions")
    result = paired_outcomes(dict(enumerate(found_a)), dict(enumerate(found_b)))
    return {"only_a": len(result.only_first), "only_b": len(result.only_second), "p_value": result.p_value}


@dataclass(frozen=True)
class RetrievalAggregate:
    """Mean retrieval scores over the scorable questions of one grain, with intervals.

    Attributes:
        means: metric name -> mean over the scored questions, in ``[0, 1]``, higher is
            better; empty when no question was scored.
        n_scored: questions scored (the denominator of every mean).
        n_unscorable: questions left out because they have no relevant item at this grain.
        n_fallback: scored questions judged on their documents instead of evidence (evidence
            grain only; 0 elsewhere).
        reason: why ``means`` is empty (``"no scorable question"``), else None.
        ci_low: metric name -> lower end of the 95 % interval of the mean (empty when no
            question was scored).
        ci_high: metric name -> upper end.
        ci: how the intervals were computed: ``{"method", "level", "resamples", "seed"}``.
    """

    means: dict[str, float]
    n_scored: int
    n_unscorable: int
    n_fallback: int = 0
    reason: str | None = None
    ci_low: dict[str, float] = field(default_factory=dict)
    ci_high: dict[str, float] = field(default_factory=dict)
    ci: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{means, ci_low, ci_high, ci, n_scored, n_unscorable, n_fallback, reason}``
        (JSON-serialisable)."""
        return {
            "means": dict(self.means),
            "ci_low": dict(self.ci_low),
            "ci_high": dict(self.ci_high),
            "ci": dict(self.ci),
            "n_scored": self.n_scored,
            "n_unscorable": self.n_unscorable,
            "n_fallback": self.n_fallback,
            "reason": self.reason,
        }


def aggregate(per_question: Sequence[Mapping[str, float] | None], *, n_fallback: int = 0,
              resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> RetrievalAggregate:
    """Average per-question scores, leaving unscorable questions out, with bootstrap intervals.

    ``mean(m) = sum_q m(q) / n_scored`` over the questions whose scores are not None (the
    arithmetic mean, so ``mrr`` is the mean reciprocal rank). None entries are counted in
    ``n_unscorable`` and never averaged in as 0 or 1. Each mean gets a 95 % interval from
    :func:`bootstrap_intervals` over the scored questions.

    Args:
        per_question: one entry per question: the dict from :func:`retrieval_scores`, or None
            when the question could not be scored. Every dict must have the same metric names.
        n_fallback: how many of the scored questions fell back from evidence to documents.
        resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        A :class:`RetrievalAggregate`. With no scored question its ``means`` is empty and its
        ``reason`` is ``"no scorable question"`` (never NaN, never a perfect score).

    Raises:
        EvaluationError: the score dicts do not all have the same metric names, or
            ``n_fallback`` is negative or exceeds the number scored.
    """
    scored = [s for s in per_question if s is not None]
    n_unscorable = len(per_question) - len(scored)
    if not 0 <= n_fallback <= len(scored):
        raise EvaluationError(f"n_fallback={n_fallback} is outside 0..{len(scored)} (the questions scored)")
    ci = {"method": CI_METHOD, "level": CI_LEVEL, "resamples": resamples, "seed": seed}
    if not scored:
        return RetrievalAggregate({}, 0, n_unscorable, n_fallback, reason="no scorable question", ci=ci)
    names = list(scored[0])
    for s in scored[1:]:
        if set(s) != set(names):
            raise EvaluationError(f"per-question scores name different metrics: {sorted(names)} vs {sorted(s)}")
    means = {name: math.fsum(float(s[name]) for s in scored) / len(scored) for name in names}
    low, high = bootstrap_intervals(np.array([[float(s[n]) for n in names] for s in scored]),
                                    resamples=resamples, seed=seed)
    # The quantiles of resampled means can miss the mean by a rounding error when every
    # score is equal; an interval always holds its mean.
    ci_low = {n: min(float(v), means[n]) for n, v in zip(names, low)}
    ci_high = {n: max(float(v), means[n]) for n, v in zip(names, high)}
    return RetrievalAggregate(means, len(scored), n_unscorable, n_fallback, ci_low=ci_low, ci_high=ci_high, ci=ci)


# --------------------------------------------------------------------------- a golden set


@dataclass(frozen=True)
class QuestionRetrieval:
    """One question's retrieval result at one grain.

    Attributes:
        question_id: the golden question's id.
        judgement: which chunk hit which item, or None when the question is not scorable.
        scores: the :func:`retrieval_scores` dict, or None when not scorable.
    """

    question_id: str
    judgement: Judgement | None
    scores: dict[str, float] | None

    @property
    def scorable(self) -> bool:
        """True when the question has relevant items at this grain."""
        return self.judgement is not None

    @property
    def first_relevant_rank(self) -> int | None:
        """1-based rank of the first chunk hitting a relevant item; None when none does or
        the question is not scorable."""
        return None if self.judgement is None else first_relevant_rank(self.judgement)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{question_id, scorable, first_relevant_rank, scores, judgement}``."""
        return {
            "question_id": self.question_id,
            "scorable": self.scorable,
            "first_relevant_rank": self.first_relevant_rank,
            "scores": None if self.scores is None else dict(self.scores),
            "judgement": None if self.judgement is None else self.judgement.to_dict(),
        }


@dataclass(frozen=True)
class GrainResult:
    """Retrieval results of a golden set at one grain.

    Attributes:
        grain: the grain.
        aggregate: the means and counts.
        per_question: question id -> its result, in golden-file order.
    """

    grain: Grain
    aggregate: RetrievalAggregate
    per_question: dict[str, QuestionRetrieval] = field(default_factory=dict)

    @property
    def fallback_ids(self) -> list[str]:
        """Ids of the questions judged on documents instead of evidence."""
        return [q for q, r in self.per_question.items() if r.judgement is not None and r.judgement.fallback]

    @property
    def unscorable_ids(self) -> list[str]:
        """Ids of the questions left out at this grain."""
        return [q for q, r in self.per_question.items() if not r.scorable]

    def to_dict(self) -> dict[str, Any]:
        """Return ``{grain, aggregate, per_question: [...]}`` (JSON-serialisable)."""
        return {
            "grain": self.grain,
            "aggregate": self.aggregate.to_dict(),
            "per_question": [r.to_dict() for r in self.per_question.values()],
        }


def evaluate_rankings(
    questions: Sequence[GoldenQuestion],
    rankings: Mapping[str, Sequence[Chunk]],
    *,
    grains: Sequence[Grain] = GRAINS,
    ks: Sequence[int] = DEFAULT_KS,
) -> dict[str, GrainResult]:
    """Judge, score and average the retrieved chunks of every question at each grain.

    Args:
        questions: the golden questions (distinct ids).
        rankings: question id -> retrieved chunks, best first (an empty list is a retrieval
            that returned nothing and scores 0). Ids not among ``questions`` are ignored.
        grains: the grains to compute, from :data:`GRAINS`.
        ks: rank cut-offs, positive integers.

    Returns:
        grain -> :class:`GrainResult`, in the order of ``grains``. Metric names and ranges
        are those of :func:`retrieval_scores`; means cover the scorable questions only.

    Raises:
        ConfigError: an unknown grain, or a bad ``ks``.
        EvaluationError: duplicate question ids, or a question without a ranking.

    References:
        See :func:`retrieval_scores`.
    """
    ks = _check_ks(ks)
    for grain in grains:
        _check_grain(grain)
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise EvaluationError(f"duplicate question ids: {', '.join(dupes)}")
    missing = [i for i in ids if i not in rankings]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise EvaluationError(f"{len(missing)} question(s) have no ranking: {shown}")

    results: dict[str, GrainResult] = {}
    for grain in dict.fromkeys(grains):
        per_question: dict[str, QuestionRetrieval] = {}
        for question in questions:
            judgement = judge(question, rankings[question.id], grain)
            scores = None if judgement is None else retrieval_scores(judgement, ks)
            per_question[question.id] = QuestionRetrieval(question.id, judgement, scores)
        n_fallback = sum(1 for r in per_question.values() if r.judgement is not None and r.judgement.fallback)
        agg = aggregate([r.scores for r in per_question.values()], n_fallback=n_fallback)
        if agg.n_unscorable or agg.n_fallback:
            logger.info(
                "grain %s: %d scored, %d not scorable, %d fell back to documents",
                grain, agg.n_scored, agg.n_unscorable, agg.n_fallback,
            )
        results[grain] = GrainResult(grain, agg, per_question)
    return results
