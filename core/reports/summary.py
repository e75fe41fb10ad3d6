"""A retrieval report's summary: the few numbers the history page and the index of runs
need, kept apart from the report (``retrieval/summaries/<id>.json``) so neither reads whole
reports."""

from __future__ import annotations

from typing import Any

#: Version of the summary's layout; a summary of another version is rebuilt from its report.
SUMMARY_VERSION = 1


def run_summary(report: dict[str, Any]) -> dict[str, Any]:
    """The summary of a retrieval report.

    Returns:
        ``{summary_version, run_id, started_at, finished_at, golden{path, sha256,
        n_questions}, corpus{path, n_documents}, indexing{chunking, embedding_model,
        vector_store}, rank_grain, finds_the_most, setups[{name, median_ms, error,
        metrics{grain: {n_scored, means}}}], targets[{name, status, fingerprint}] or None (a run over
        targets), answers{model_id, overall_score} or None, branch,
        gate{passed, setup, setup_key, exit_code} or None}``. ``branch`` and ``gate`` came after
        :data:`SUMMARY_VERSION` 1 without changing it: a summary without them is of a report
        without them (a run before CI gates were recorded), which no ``latest`` baseline takes.
    """
    golden = report.get("golden") or {}
    corpus = report.get("corpus") or {}
    indexing = report.get("indexing") or {}
    chunking = indexing.get("chunking")
    if isinstance(chunking, dict):
        chunking = {k: v for k, v in chunking.items() if k in ("method", "chunk_size", "chunk_overlap")}
    setups = []
    for s in report.get("setups") or []:
        if not isinstance(s, dict):
            continue
        metrics = {}
        for grain, block in (s.get("metrics") or {}).items():
            if isinstance(block, dict):
                metrics[grain] = {"n_scored": block.get("n_scored"), "means": block.get("means") or {}}
        setups.append({"name": s.get("name"), "median_ms": (s.get("timings_ms") or {}).get("median"),
                       "error": s.get("error"), "metrics": metrics})
    answers = report.get("answers")
    gate = report.get("gate")
    return {
        "summary_version": SUMMARY_VERSION,
        "run_id": report.get("run_id"),
        "started_at": report.get("started_at"),
        "finished_at": report.get("finished_at"),
        "golden": {k: golden.get(k) for k in ("path", "sha256", "n_questions")},
        "corpus": {k: corpus.get(k) for k in ("path", "n_documents")},
        "indexing": {"chunking": chunking, "embedding_model": indexing.get("embedding_model"),
                     "vector_store": indexing.get("vector_store")},
        "rank_grain": (report.get("evaluation") or {}).get("rank_grain"),
        "finds_the_most": (report.get("picks") or {}).get("finds_the_most"),
        "setups": setups,
        "targets": [{"name": t.get("name"), "status": t.get("status"),
                     "fingerprint": (t.get("description") or {}).get("fingerprint")}
                    for t in report.get("targets") or [] if isinstance(t, dict)] or None,
        "answers": None if not isinstance(answers, dict) else {
            "model_id": (answers.get("generator") or {}).get("model_id"),
            "overall_score": answers.get("overall_score")},
        "branch": report.get("branch"),
        "gate": None if not isinstance(gate, dict) else {
            "passed": gate.get("passed") is True, "setup": gate.get("setup"), "setup_key": gate.get("setup_key"),
            "exit_code": gate.get("exit_code")},
    }
