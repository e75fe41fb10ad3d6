"""Metrics: retrieval metrics (recall@k, precision@k, success@k, nDCG@k, MRR) at the document,
page and evidence grains."""

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
    "judge",
    "normalize_text",
    "retrieval_scores",
]
