"""Fusing a dense ranking and a keyword ranking outside the database: RRF and weighted sums.

Every store runs both searches and calls :func:`rrf_fuse` or :func:`weighted_fuse`: PostgreSQL
cannot fuse inside the database, and Milvus Lite's own ``hybrid_search`` gets the keyword leg
wrong (see ``core.vectorstores.milvus``); the formulas and the normalisation follow Milvus's
``RRFRanker`` and ``WeightedRanker`` so a configuration scores the same way on either backend.

A ranking is a list of ``(id, score)`` pairs, best first, as a search returns it: position
``i`` (0-based) has rank ``i + 1``. Ids are any hashable values (chunk ids in practice). When an
id appears twice in one list, its first (best) occurrence counts.

Ties: fused results are ordered by fused score (descending); equal scores are ordered by the
dense rank, then the keyword rank (a candidate missing from a list comes after every candidate
in it), then by ``str(id)``. The order is therefore the same on every run and machine.

References:
    Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and individual
    Rank Learning Methods", SIGIR 2009, https://doi.org/10.1145/1571941.1572114 (RRF, k = 60).
    Milvus rerankers: https://milvus.io/docs/rrf-ranker.md and
    https://milvus.io/docs/weighted-ranker.md.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Hashable, Literal, Sequence

from core.errors import ConfigError

if TYPE_CHECKING:
    from core.vectorstores.base import SearchSetup

Metric = Literal["COSINE", "IP", "BM25", "L2"]
Ranking = Sequence[tuple[Hashable, float]]

_MISSING_RANK = math.inf


#: The RRF constant used when a fusion window is needed for weighted fusion (which has none).
DEFAULT_RRF_K = 60


def fusion_window(k: int, ranker_k: int = DEFAULT_RRF_K) -> int:
    """Candidates each leg of a hybrid search fetches before the two are fused to ``k``.

    Fusing two lists cut at ``k`` treats a chunk ranked just past ``k`` in both legs as
    absent from both, although reciprocal rank fusion would put it near the top: at
    ``ranker_k = 60``, ranks 11 and 11 give ``2 / 71``, rank 1 in one leg alone ``1 / 61``.
    With legs of ``w = ranker_k + 2 * k`` candidates, a chunk missing from both windows
    scores at most ``2 / (ranker_k + w + 1)``, less than ``1 / (ranker_k + k)``, the least the
    k-th fused chunk can score (the dense leg's top k alone reach it), so no such chunk could
    have entered the fused top ``k``; a chunk in one window only misses at most
    ``1 / (ranker_k + w + 1)`` of its score. Weighted fusion has no such bound; the same
    window (with ``ranker_k`` = :data:`DEFAULT_RRF_K`) keeps both fusions on the same
    candidates.

    Args:
        k: results the fused list keeps (>= 1).
        ranker_k: the RRF constant (>= 1).

    Returns:
        ``ranker_k + 2 * k`` (at least ``k``).

    Raises:
        ConfigError: ``k < 1`` or ``ranker_k < 1``.

    References:
        Cormack, Clarke and Buettcher, SIGIR 2009 (RRF's formula, from which the bound above
        follows).
    """
    if int(k) < 1 or int(ranker_k) < 1:
        raise ConfigError(f"k and ranker_k must be at least 1, got {k} and {ranker_k}")
    return int(ranker_k) + 2 * int(k)


def normalize_score(score: float, metric: Metric) -> float:
    """Map a raw search score to [0, 1] (higher is better) as Milvus's ``WeightedRanker`` does.

    | metric | raw score | normalised |
    | --- | --- | --- |
    | ``COSINE`` | cosine similarity in [-1, 1] | ``(1 + s) / 2`` |
    | ``IP`` | inner product in (-inf, inf) | ``0.5 + arctan(s) / pi`` |
    | ``BM25`` | BM25 (or any keyword) score >= 0 | ``2 * arctan(s) / pi`` |
    | ``L2`` | squared Euclidean distance >= 0 (lower is better) | ``1 - 2 * arctan(d) / pi`` |

    These four mappings were checked against Milvus Lite 3.2.2 (pymilvus 3.0.2,
    ``WeightedRanker(..., norm_score=True)``, the default) by comparing its fused scores with
    the raw scores of single searches, to 1e-7. Note ``BM25``: Milvus maps it with
    ``2 * arctan(s) / pi`` (0 for a score of 0), not ``0.5 + arctan(s) / pi`` as ``IP``.

    Args:
        score: the raw score (for ``L2`` the distance).
        metric: which kind of score it is.

    Returns:
        The normalised score in [0, 1]; for ``COSINE``, a similarity outside [-1, 1] (rounding)
        is clipped.

    Raises:
        ConfigError: an unknown metric.

    References:
        Milvus weighted ranker, score normalisation: https://milvus.io/docs/weighted-ranker.md
        (``arctan`` for unbounded scores); values verified on Milvus Lite as described above.
    """
    s = float(score)
    if metric == "COSINE":
        return min(1.0, max(0.0, (1.0 + s) / 2.0))
    if metric == "IP":
        return 0.5 + math.atan(s) / math.pi
    if metric == "BM25":
        return 2.0 * math.atan(s) / math.pi
    if metric == "L2":
        return 1.0 - 2.0 * math.atan(s) / math.pi
    raise ConfigError(f"metric must be 'COSINE', 'IP', 'BM25' or 'L2', got {metric!r}")


def _ranks(ranking: Ranking) -> dict[Hashable, tuple[int, float]]:
    """Return ``{id: (1-based rank, score)}`` keeping each id's first occurrence."""
    out: dict[Hashable, tuple[int, float]] = {}
    for position, (item_id, score) in enumerate(ranking, start=1):
        if item_id not in out:
            out[item_id] = (position, float(score))
    return out


def _check_limit(limit: int | None) -> None:
    if limit is not None and int(limit) < 1:
        raise ConfigError(f"limit must be at least 1, got {limit}")


def _ordered(
    fused: dict[Hashable, float],
    dense: dict[Hashable, tuple[int, float]],
    sparse: dict[Hashable, tuple[int, float]],
    limit: int | None,
) -> list[tuple[Hashable, float]]:
    def key(item_id: Hashable) -> tuple[float, float, float, str]:
        d = dense.get(item_id)
        s = sparse.get(item_id)
        return (
            -fused[item_id],
            d[0] if d else _MISSING_RANK,
            s[0] if s else _MISSING_RANK,
            str(item_id),
        )

    ordered = sorted(fused, key=key)
    if limit is not None:
        ordered = ordered[: int(limit)]
    return [(item_id, fused[item_id]) for item_id in ordered]


def rrf_fuse(
    dense: Ranking,
    sparse: Ranking,
    k: int = DEFAULT_RRF_K,
    limit: int | None = None,
) -> list[tuple[Hashable, float]]:
    """Reciprocal rank fusion of a dense and a keyword ranking.

    ``score(d) = sum over the lists holding d of 1 / (k + rank(d))``, rank from 1. Only ranks
    count: the input scores are ignored. A candidate in one list only gets that list's term.

    Args:
        dense: dense (vector) results ``[(id, score), ...]``, best first.
        sparse: keyword results ``[(id, score), ...]``, best first.
        k: RRF constant (>= 1); larger values flatten the differences between ranks.
        limit: return at most this many (>= 1); None returns every candidate.

    Returns:
        ``[(id, fused_score), ...]`` best first; fused scores lie in (0, 2 / (k + 1)]. Ties are
        broken as described in the module docstring (dense rank, keyword rank, ``str(id)``).

    Raises:
        ConfigError: ``k < 1`` or ``limit < 1``.

    Example:
        dense ``[c1, c2, c3]``, keyword ``[c3, c1]``, ``k = 60``: c1 = 1/61 + 1/62,
        c3 = 1/63 + 1/61, c2 = 1/62, so the order is ``[c1, c3, c2]``.

    References:
        Cormack, Clarke and Buettcher, SIGIR 2009, https://doi.org/10.1145/1571941.1572114;
        Milvus ``RRFRanker``: https://milvus.io/docs/rrf-ranker.md.
    """
    if int(k) < 1:
        raise ConfigError(f"k must be at least 1, got {k}")
    _check_limit(limit)
    d_ranks, s_ranks = _ranks(dense), _ranks(sparse)
    fused: dict[Hashable, float] = {}
    for ranks in (d_ranks, s_ranks):
        for item_id, (rank, _score) in ranks.items():
            fused[item_id] = fused.get(item_id, 0.0) + 1.0 / (int(k) + rank)
    return _ordered(fused, d_ranks, s_ranks, limit)


def weighted_fuse(
    dense: Ranking,
    sparse: Ranking,
    alpha: float,
    limit: int | None = None,
    *,
    dense_metric: Metric = "COSINE",
    sparse_metric: Metric = "BM25",
) -> list[tuple[Hashable, float]]:
    """Weighted sum of normalised scores: ``alpha * norm(dense) + (1 - alpha) * norm(sparse)``.

    Each list's raw scores are normalised with :func:`normalize_score` (by default ``COSINE``:
    ``(1 + s) / 2`` for the dense list and ``BM25``: ``2 * arctan(s) / pi`` for the keyword
    list), as Milvus's ``WeightedRanker(alpha, 1 - alpha)`` does. A candidate missing from a
    list gets 0 from that list.

    Args:
        dense: dense results ``[(id, score), ...]``, best first; scores are cosine similarities
            in [-1, 1] (or as ``dense_metric`` says).
        sparse: keyword results ``[(id, score), ...]``, best first; scores >= 0 (or as
            ``sparse_metric`` says).
        alpha: weight of the dense score, in [0, 1]; the keyword score gets ``1 - alpha``.
            ``alpha = 1`` orders by the dense list (keyword-only candidates follow with 0);
            ``alpha = 0`` orders by the keyword list (dense-only candidates follow with 0, in
            dense order).
        limit: return at most this many (>= 1); None returns every candidate.
        dense_metric: how to normalise the dense scores.
        sparse_metric: how to normalise the keyword scores.

    Returns:
        ``[(id, fused_score), ...]`` best first, fused scores in [0, 1]. Ties are broken as
        described in the module docstring.

    Raises:
        ConfigError: ``alpha`` outside [0, 1], ``limit < 1`` or an unknown metric.

    References:
        Milvus ``WeightedRanker``: https://milvus.io/docs/weighted-ranker.md; normalisation
        checked on Milvus Lite (see :func:`normalize_score`).
    """
    a = float(alpha)
    if not 0.0 <= a <= 1.0:
        raise ConfigError(f"alpha must be between 0 and 1, got {alpha}")
    _check_limit(limit)
    d_ranks, s_ranks = _ranks(dense), _ranks(sparse)
    fused: dict[Hashable, float] = {}
    for item_id, (_rank, score) in d_ranks.items():
        fused[item_id] = a * normalize_score(score, dense_metric)
    for item_id, (_rank, score) in s_ranks.items():
        fused[item_id] = fused.get(item_id, 0.0) + (1.0 - a) * normalize_score(score, sparse_metric)
    return _ordered(fused, d_ranks, s_ranks, limit)


def hybrid_window(k: int, setup: SearchSetup) -> int:
    """:func:`fusion_window` for a hybrid search ``setup`` (a ``SearchSetup``): its
    ``ranker_k`` with RRF, :data:`DEFAULT_RRF_K` with weighted fusion.

    Raises:
        ConfigError: as :func:`fusion_window`.
    """
    return fusion_window(k, setup.ranker_k if setup.ranker_strategy == "rrf" else DEFAULT_RRF_K)


def fuse(dense: Ranking, sparse: Ranking, setup: SearchSetup, limit: int) -> list[tuple[Hashable, float]]:
    """Fuse the two legs of a hybrid search as ``setup`` (a ``SearchSetup``) says:
    :func:`rrf_fuse` with its ``ranker_k``, or :func:`weighted_fuse` with its ``ranker_alpha``.

    Returns:
        At most ``limit`` ``(id, fused_score)`` pairs, best first.

    Raises:
        ConfigError: as :func:`rrf_fuse` and :func:`weighted_fuse`.
    """
    if setup.ranker_strategy == "rrf":
        return rrf_fuse(dense, sparse, k=setup.ranker_k, limit=limit)
    return weighted_fuse(dense, sparse, alpha=setup.ranker_alpha, limit=limit)
