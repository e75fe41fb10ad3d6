"""Evaluating configurations end to end: retrieval setups, merged metrics, per-question results."""

from core.evaluation.retrieval import (
    REPORT_SCHEMA_VERSION,
    EvaluateOptions,
    choose_rank_grain,
    default_search_setups,
    evaluate_retrieval,
    pick_setups,
)

__all__ = [
    "REPORT_SCHEMA_VERSION", "EvaluateOptions", "choose_rank_grain", "default_search_setups",
    "evaluate_retrieval", "pick_setups",
]
