"""Metrics: retrieval metrics (found@k, recall@k, precision@k, nDCG@k, MRR) at the document,
page and evidence grains, re-exported here from :mod:`core.metrics.retrieval`.

Answer metrics (unitxt, the LLM judge, their aggregation) are imported from
:mod:`core.metrics.answers`, the one place that names them; importing this package does not
load them.
"""

from core.metrics.retrieval import (
    DEFAULT_KS,
    EVIDENCE_MIN_OVERLAP,
    GRAINS,
    Grain,
    GrainResult,
    Judgement,
    QuestionRetrieval,
    RetrievalAggregate,
    aggregate,
    evaluate_rankings,
    evidence_matches,
    first_relevant_rank,
    has_common_run,
    judge,
    normalize_text,
    retrieval_scores,
)

__all__ = [
    "DEFAULT_KS",
    "EVIDENCE_MIN_OVERLAP",
    "GRAINS",
    "Grain",
    "GrainResult",
    "Judgement",
    "QuestionRetrieval",
    "RetrievalAggregate",
    "aggregate",
    "evaluate_rankings",
    "evidence_matches",
    "first_relevant_rank",
    "has_common_run",
    "judge",
    "normalize_text",
    "retrieval_scores",
]
