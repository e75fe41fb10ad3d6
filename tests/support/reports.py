"""Small retrieval and experiment reports in the stored format, with numbers simple enough
to compute by hand (see each function)."""

from __future__ import annotations

import copy
from typing import Any

#: Rank of the first right chunk per question and setup (None: not in the top 10).
RANKS = {"q1": {"A": 1, "B": 2}, "q2": {"A": 3, "B": None}, "q3": {"A": None, "B": None}, "q4": {"A": 2, "B": 1}}


def _means(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    out = {}
    for k in (1, 3, 5, 10):
        out[f"found@{k}"] = sum(1 for r in ranks if r is not None and r <= k) / n
        out[f"recall@{k}"] = out[f"found@{k}"]
    out["mrr"] = sum(1 / r for r in ranks if r is not None) / n
    return out


def retrieval_report(run_id: str = "20260101T000000Z-aaaaaa", ranks: dict[str, dict[str, Any]] | None = None,
                     sha256: str = "ab" * 32) -> dict[str, Any]:
    """Four questions, setups A and B, ranked at grain doc.

    By hand, with :data:`RANKS`: A finds q1 (rank 1), q2 (3), q4 (2): found@1 0.25, found@3
    0.75, MRR (1 + 1/3 + 1/2) / 4 = 0.4583; B finds q1 (2), q4 (1): found@1 0.25, found@3 0.5,
    MRR (1/2 + 1) / 4 = 0.375. A is faster-found but slower (median 5 ms against 2 ms).
    """
    ranks = ranks or RANKS
    ids = list(ranks)
    setups = []
    for name, median in (("A", 5.0), ("B", 2.0)):
        setups.append({
            "name": name, "setup": {"search_mode": "vector" if name == "A" else "hybrid"},
            "metrics": {
                "doc": {"means": _means([ranks[q][name] for q in ids]), "n_scored": len(ids), "n_unscorable": 0,
                        "n_fallback": 0, "reason": None},
                "page": {"means": {}, "n_scored": 0, "n_unscorable": len(ids), "reason": "no page labels"},
            },
            "timings_ms": {"median": median, "p95": median * 2, "mean": median, "n": len(ids)},
        })
    return {
        "schema_version": "1.0", "kind": "retrieval", "run_id": run_id,
        "started_at": "2026-01-01T00:00:00+00:00", "finished_at": "2026-01-01T00:01:00+00:00",
        "golden": {"path": "golden.jsonl", "sha256": sha256, "n_questions": len(ids), "warnings": []},
        "corpus": {"path": "docs", "n_documents": 2, "n_pages": 0, "n_chunks": 6, "skipped": []},
        "indexing": {"chunking": {"method": "recursive", "chunk_size": 256, "chunk_overlap": 32},
                     "embedding_model": "local:test", "vector_store": "milvus-lite", "collection": "c", "reused": False},
        "evaluation": {"top_k": 10, "ks": [1, 3, 5, 10], "grains": ["doc", "page"], "rank_grain": "doc"},
        "setups": setups,
        "picks": {"finds_the_most": "A", "best_for_balance": "B", "best_for_time": "B", "reason": None,
                  "rules": {"finds_the_most": "first in the ranking", "best_for_balance": "within 4 points",
                            "best_for_time": "within 8 points"}},
        "questions": [{"id": q, "line": i + 1, "question": f"question {q}?", "expected": ["a.txt"],
                       "first_relevant_rank": dict(ranks[q])} for i, q in enumerate(ids)],
    }


def with_answers(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with answers from setup A: q1 scored 1.0 and 0.5, q2 failed."""
    out = copy.deepcopy(report)
    out["answers"] = {
        "generator": {"model_id": "extractive:test", "kind": "extractive", "k": 5, "setup": "A"},
        "metrics": [{"name": "unitxt.faithfulness", "scores": {"mean": 0.75, "ci_low": 0.5, "ci_high": 1.0},
                     "n_scored": 2, "n_failed": 1, "n_invalid": 0, "reason": None}],
        "n_questions": 3, "n_answered": 2, "n_failed": 1, "overall_score": 0.75,
        "overall_metrics": ["unitxt.faithfulness"],
        "questions": [
            {"question_id": "q1", "question": "question q1?", "answer": "one", "error": None, "reference": "1",
             "metrics": [{"name": "unitxt.faithfulness", "score": 1.0}]},
            {"question_id": "q4", "question": "question q4?", "answer": "four", "error": None, "reference": "4",
             "metrics": [{"name": "unitxt.faithfulness", "score": 0.5, "explanation": "half supported"}]},
            {"question_id": "q2", "question": "question q2?", "answer": None, "error": "timeout", "reference": "2",
             "metrics": [{"name": "unitxt.faithfulness", "score": None}]},
        ],
    }
    return out


def experiment_report(experiment_id: str = "20260101T000000Z-eeeeee") -> dict[str, Any]:
    """Three trials: #0 0.5 (size 128), #1 0.7 (size 256), #2 failed; best 0.7."""
    def row(rank, trial, score, size, status="complete", error=None):
        return {"rank": rank, "trial": trial, "key": f"k{trial}", "status": status, "score": score,
                "ci_low": None if score is None else score - 0.1, "ci_high": None if score is None else score + 0.1,
                "parameters": {"chunking_method": "recursive", "chunk_size": size, "number_of_chunks": 5},
                "duration_s": 10.0 + trial, "error": error, "stored": False}
    return {
        "schema_version": "1.0", "kind": "experiment", "experiment_id": experiment_id,
        "objective": "mrr", "golden": {"path": "golden.jsonl", "n_questions": 4}, "corpus": {"n_documents": 2},
        "optimizer": {"name": "gam", "seed": 0, "max_evals": 3},
        "leaderboard": [row(1, 1, 0.7, 256), row(2, 0, 0.5, 128), row(None, 2, None, 512, "failed", "boom <b>")],
        "best": {"key": "k1", "score": 0.7, "configuration": {}},
        "counts": {"evaluations": 3, "failed": 1, "stored": 0, "collections_built": 3, "texts_embedded": 30},
        "timings_s": {"total_s": 33.0},
    }


def comparison_report(run_id: str = "20260103T000000Z-cccccc") -> dict[str, Any]:
    """A chunking comparison (``compare-chunking``'s report layout) over 20 questions.

    By hand: recursive-64-8-plain is the best build (found 15 of 20). sentence-64-plain finds
    13: 3 questions only the best found, 1 only sentence; exact McNemar two-sided p = 2 *
    P(X <= 1 | n 4, 1/2) = 2 * 5/16 = 0.625: a tie. fixed-64-8-plain finds 8: 7 only the
    best, 0 only fixed; p = 2 / 2**7 = 0.015625 < 0.05: worse. sentence against fixed: 6 and
    1, p = 2 * 8/128 = 0.125.
    """
    def build(method, size, overlap, counted, n_chunks):
        key = f"{method}-{size}-{overlap}-plain" if overlap is not None else f"{method}-{size}-plain"
        return {"key": key, "method": method, "chunk_size": size, "chunk_overlap": overlap, "embed_headings": False,
                "n_chunks": n_chunks, "chunk_s": 0.5, "status": "ok", "counted": counted, "n_scored": 20,
                "mean_chunk_chars": 230.5, "mean_handed_chars": 3900.0, "embed_s": 3.0, "index_s": 0.2,
                "build_s": 3.7, "median_search_ms": 4.25, "search_s": 0.1, "fetched": 34}
    builds = [build("recursive", 64, 8, 15, 300), build("recursive", 128, 16, 12, 160),
              build("sentence", 64, None, 13, 280), build("sentence", 128, None, 11, 150),
              build("fixed", 64, 8, 8, 310), build("fixed", 128, 16, 6, 155)]
    return {
        "schema_version": "1.0", "kind": "chunking-comparison", "run_id": run_id,
        "started_at": "2026-01-03T00:00:00+00:00", "finished_at": "2026-01-03T00:05:00+00:00",
        "golden": {"path": "golden.jsonl", "sha256": "ab" * 32, "n_questions": 20},
        "corpus": {"path": "docs", "n_documents": 4, "fingerprint": "f" * 16, "skipped": []},
        "settings": {"budget_chars": 4000, "sizes": [64, 128], "methods": ["recursive", "sentence", "fixed"],
                     "embed_headings": [False], "search": {"search_mode": "vector"}, "search_name": "vector",
                     "embedding_model": "local:test", "grain": "page", "counting": "found", "alpha": 0.05,
                     "overlap_share": 0.125, "rule": "results handed over best first, whole, while they fit in the "
                                                     "budget; a result that does not fit is passed over"},
        "builds": builds, "left_out": [],
        "techniques": [
            {"method": "recursive", "best_build": "recursive-64-8-plain", "counted": 15, "n_scored": 20, "tie": True,
             "vs_best": None},
            {"method": "sentence", "best_build": "sentence-64-plain", "counted": 13, "n_scored": 20, "tie": True,
             "vs_best": {"only_best": 3, "only_this": 1, "p_value": 0.625}},
            {"method": "fixed", "best_build": "fixed-64-8-plain", "counted": 8, "n_scored": 20, "tie": False,
             "vs_best": {"only_best": 7, "only_this": 0, "p_value": 0.015625}},
        ],
        "ranking": ["recursive", "sentence", "fixed"],
        "best": {"method": "recursive", "best_build": "recursive-64-8-plain", "counted": 15, "n_scored": 20,
                 "tie": True, "vs_best": None},
        "ties": ["recursive", "sentence"],
        "pairs": [{"first": "recursive", "second": "sentence", "only_first": 3, "only_second": 1, "p_value": 0.625,
                   "significant": False},
                  {"first": "recursive", "second": "fixed", "only_first": 7, "only_second": 0, "p_value": 0.015625,
                   "significant": True},
                  {"first": "sentence", "second": "fixed", "only_first": 6, "only_second": 1, "p_value": 0.125,
                   "significant": False}],
        "current": {"key": "fixed-64-8-plain", "decision": "switch", "switch_to": "recursive-64-8-plain",
                    "p_value": 0.015625, "reason": "the best beats the current significantly"},
        "failures": [{"document_id": "scan.pdf", "build": "sentence-64-plain", "reason": "no text <b>"}],
        "n_failures": 1, "answer_errors": [], "n_answer_errors": 0,
        "timings_s": {"total_s": 300.0, "embed_s": 18.0, "chunk_s": 3.0, "index_s": 1.2, "search_s": 0.6},
    }
